"""Who judges the candidate contradictions that wait: the chain of judges.

In order: the endpoint the user configured (when its ``uses`` include ``judge``); else the
editor's own language models (offered by the language server while its client says it can
answer); else an MCP client's sampling (offered for the length of one tool call); with none,
candidates wait in the review list and are never injected. A host's model is asked about a
few pairs at a time (:data:`HOST_PAIRS`), through :class:`~predictive.llm.LlmClient`'s
budgets, cache by content, validation and circuit breaker.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from predictive.conflicts import Conflict, Judged, judge_waiting, record
from predictive.llm import LlmClient, Send, client_for
from predictive.llm_config import configured
from predictive.llm_judge import PURPOSE, scanner_judge
from storage import conflict_candidates as candidates
from storage.models import ContradictionStatus
from storage.repository import MemoryStore

ENDPOINT = "endpoint"
EDITOR = "editor-models"
SAMPLING = "mcp-sampling"
ORDER = (ENDPOINT, EDITOR, SAMPLING)
"""The chain, first to last: who judges when several could."""
HOST_PAIRS = 5
"""Pairs a host's model is asked about in one run (each is a request the user may see)."""
HOST_SECONDS = 120.0
"""Wall time one run of a host's model takes at most."""

_hosts: dict[str, Send] = {}
_lock = threading.Lock()


def offer(name: str, send: Send) -> None:
    """A host's model can judge from now on (``name``: :data:`EDITOR` or :data:`SAMPLING`)."""
    if name not in ORDER or name == ENDPOINT:
        raise ValueError(f"unknown host model {name!r}")
    with _lock:
        _hosts[name] = send


def withdraw(name: str) -> None:
    """The host's model is gone (the client disconnected)."""
    with _lock:
        _hosts.pop(name, None)


def offered() -> list[str]:
    """The host models offered now, in the chain's order."""
    with _lock:
        return [n for n in ORDER if n in _hosts]


@dataclass(frozen=True)
class Choice:
    """The judge the chain chose: its name and the client that asks it."""

    name: str
    client: LlmClient


def choose(
    store: MemoryStore | None,
    *,
    llm: LlmClient | None = None,
    hosts: Mapping[str, Send] | None = None,
) -> Choice | None:
    """The first judge of the chain that can answer now: ``llm`` (else the configured
    endpoint), then the offered host models and ``hosts`` (those of one call), each unless
    its circuit breaker is open. None: the candidates wait."""
    endpoint = llm if llm is not None else client_for(store)
    if endpoint is not None and endpoint.uses(PURPOSE):
        return Choice(ENDPOINT, endpoint)
    with _lock:
        offers = {**_hosts, **(hosts or {})}
    config = configured()
    for name in ORDER:
        send = offers.get(name)
        if send is None:
            continue
        client = LlmClient(config, store=store, send=send, host=name)
        if client.uses(PURPOSE) and client.shared.breaker.state != "open":
            return Choice(name, client)
    return None


@dataclass(frozen=True)
class JudgeRun:
    """One run over the waiting pairs: who judged (None: nobody could), what it found, how
    many pairs still wait."""

    by: str | None
    judged: Judged
    left: int

    def to_dict(self) -> dict[str, object]:
        return {"by": self.by, **self.judged.to_dict(), "left": self.left}


def waiting(store: MemoryStore) -> int:
    """Pairs that wait for a judge: candidate pairs, and contradictions only suspected."""
    suspected = len(store.contradictions.query(ContradictionStatus.SUSPECTED))
    return candidates.count_pending(store) + suspected


def judge_waiting_pairs(
    store: MemoryStore,
    choice: Choice | None,
    *,
    limit: int | None = None,
    seconds: float | None = None,
) -> JudgeRun:
    """The waiting pairs, best first, put to ``choice``: every pair for the endpoint, at
    most :data:`HOST_PAIRS` (and :data:`HOST_SECONDS`) for a host's model, unless given."""
    if choice is None:
        return JudgeRun(None, Judged(), waiting(store))
    host = choice.name != ENDPOINT
    judge = scanner_judge(choice.client)
    assert judge is not None  # a client is there
    done = judge_waiting(
        store,
        judge,
        limit=limit if limit is not None else (HOST_PAIRS if host else 1000),
        seconds=seconds if seconds is not None else (HOST_SECONDS if host else None),
    )
    return JudgeRun(choice.name, done, waiting(store))


@dataclass(frozen=True)
class Settled:
    """A person's verdict on one waiting pair: the contradiction it opened, if any."""

    candidate: int
    conflict: bool
    contradiction: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "candidate": self.candidate,
            "conflict": self.conflict,
            "contradiction": self.contradiction,
        }


def settle(store: MemoryStore, candidate_id: int, conflict: bool, note: str | None) -> Settled:
    """A person judges a waiting pair: a conflict opens a contradiction (the older memory as
    A), else the pair is compatible; either way the same two texts are not proposed again.
    Raises ValueError for a pair that is unknown or no longer waiting."""
    row = candidates.get(store, candidate_id)
    if row is None:
        raise ValueError(f"no candidate pair #{candidate_id}")
    if row.status != candidates.PENDING:
        raise ValueError(f"candidate pair #{candidate_id} is already {row.status}")
    reason = "judged by the user" + (f": {note}" if note else "")
    candidates.judged(store, row.older, row.newer, conflict, reason)
    opened: list[int] = []
    if conflict:
        opened = record(store, [Conflict(row.older, row.newer, "judged", reason, 1.0)])
    return Settled(candidate_id, conflict, opened[0] if opened else None)
