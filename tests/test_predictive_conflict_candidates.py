"""Contradictions by subject, with a judge when one is configured, and a scan that is
bounded in time and resumes: candidate pairs proposed without shared wording, judged through
a local OpenAI-protocol server, kept pending (and out of every context) without one, never
reopened once settled; the scan after a write stopping at its bound and going on next time."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from predictive import operations as ops
from predictive.conflicts import Bounds, scan_and_record, scan_backlog
from predictive.conflicts import scanning as scan_module
from predictive.conflicts.candidates import MAX_CANDIDATES, names, propose
from predictive.conflicts.scanning import BACKLOG, examine
from predictive.engine import ContextEngine, ContextRequest
from predictive.llm import LlmClient
from predictive.llm_config import LlmConfig
from predictive.llm_judge import scanner_judge
from storage import Anchor, AnchorType, Kind, MemoryStore, NewMemory
from storage import conflict_candidates as candidates
from storage.models import ContradictionStatus
from tests.judge_verdicts import oracle_verdict
from tests.llm_server import FakeLlm

DAY = 86400.0
T0 = 1_700_000_000.0
POSTGRES = "We use PostgreSQL as the primary database"
MYSQL = "We moved off PostgreSQL: MySQL is the primary database now"


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    server = FakeLlm()
    yield server
    server.close()


@pytest.fixture
def put(store: MemoryStore) -> Callable[..., int]:
    """``put(text, kind, day)`` → id of a memory written ``day`` days after T0, embedded."""

    def _put(text: str, kind: Kind = Kind.DECISION, day: float = 0, **kw: Any) -> int:
        at = T0 + day * DAY
        mid = store.add(NewMemory(text=text, kind=kind, created_at=at, valid_from=at, **kw)).id
        store.embeddings.embed_pending()
        return mid

    return _put


def oracle(conflicts: set[frozenset[str]]) -> Callable[[dict[str, Any]], str]:
    """A judge that answers from labels: a conflict for the pairs of texts in ``conflicts``
    (quoting the start of each side, as the judge's validation asks), else compatible."""

    def reply(body: dict[str, Any]) -> str:
        answer = oracle_verdict(body["messages"][-1]["content"], conflicts)
        return json.dumps(answer)

    return reply


def judge_at(fake: FakeLlm, store: MemoryStore) -> Any:
    return scanner_judge(LlmClient(LlmConfig(url=fake.url, model="test-model"), store=store))


def test_the_postgres_pair_is_a_candidate_the_judge_confirms(
    store: MemoryStore, put: Callable[..., int], fake: FakeLlm
) -> None:
    old = put(POSTGRES, day=0)
    put("Logs go to stderr as JSON lines", Kind.CONVENTION, day=1)
    new = put(MYSQL, day=2)
    found = propose(store, store.get(new), tuple(Kind), lambda x, y: True)
    assert old in [c.older for c in found]
    assert "postgresql" in names(MYSQL) and "mysql" in names(MYSQL)
    fake.replies = [oracle({frozenset((POSTGRES, MYSQL))})]
    opened = scan_and_record(store, [new], judge=judge_at(fake, store))
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert opened == [c.id] and {c.memory_a, c.memory_b} == {old, new}
    assert c.reason is not None and c.reason.startswith("judged:")
    assert any(POSTGRES in p and MYSQL in p for p in fake.prompts())


def test_without_a_judge_candidates_wait_pending_and_no_context_shows_them(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    where = [Anchor(AnchorType.FILE, "src/db.py")]
    old = put(POSTGRES, day=0, anchors=where)
    new = put(MYSQL, day=1, anchors=where)
    assert scan_and_record(store, [new]) == []
    assert store.contradictions.query(None) == []
    (row,) = candidates.pending(store)
    assert (row.older, row.newer) == (old, new) and row.why and "anchors" in row.why
    listed = ops.contradictions(store, ops.ContradictionsArgs(status="pending"))
    assert [(c.status, c.a.memory.id, c.b.memory.id) for c in listed.contradictions] == [
        ("pending", old, new)
    ]
    assert ops.contradictions(store, ops.ContradictionsArgs()).contradictions == ()
    result = ContextEngine(store).assemble(ContextRequest(path="src/db.py", text="import db\n"))
    assert {old, new} <= set(result.memory_ids)  # both memories are served …
    assert not any(i.key.startswith("c") and i.memory_id is None for i in result.items)
    assert "⚠" not in result.markdown  # … and no contradiction between them
    assert scan_and_record(store, [new]) == [] and len(candidates.pending(store)) == 1


def test_a_pending_pair_is_judged_once_a_judge_is_there(
    store: MemoryStore, put: Callable[..., int], fake: FakeLlm
) -> None:
    old = put(POSTGRES, day=0)
    new = put(MYSQL, day=1)
    scan_and_record(store, [new])
    assert len(candidates.pending(store)) == 1
    fake.replies = [oracle({frozenset((POSTGRES, MYSQL))})]
    scan_and_record(store, [new], judge=judge_at(fake, store))
    assert candidates.pending(store) == []
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert {c.memory_a, c.memory_b} == {old, new}


def test_a_judge_that_cannot_answer_leaves_the_pair_pending(
    store: MemoryStore, put: Callable[..., int], fake: FakeLlm
) -> None:
    put(POSTGRES, day=0)
    new = put(MYSQL, day=1)
    fake.replies = [{"status": 500}]
    assert scan_and_record(store, [new], judge=judge_at(fake, store)) == []
    assert len(candidates.pending(store)) == 1
    assert store.contradictions.query(None) == []


def test_a_settled_pair_is_never_reopened(
    store: MemoryStore, put: Callable[..., int], fake: FakeLlm
) -> None:
    # judged compatible once: a later judge saying otherwise is not asked again
    a = put("Deployments are driven by Ansible playbooks", Kind.CONVENTION, day=0)
    b = put("Terraform now provisions deployments; the playbooks are gone", Kind.FACT, day=1)
    fake.replies = [oracle(set())]
    scan_and_record(store, [b], judge=judge_at(fake, store))
    asked = len(fake.requests)
    assert asked >= 1 and store.contradictions.query(None) == []
    fake.replies = [oracle({frozenset((store.get(a).text, store.get(b).text))})]
    assert scan_and_record(store, [b], judge=judge_at(fake, store)) == []
    assert len(fake.requests) == asked and candidates.pending(store) == []
    # a contradiction dismissed by the user: neither the rules nor a judge open it again
    x = put("Always squash commits before merging.", Kind.CONVENTION, day=2)
    y = put("Never squash commits before merging.", Kind.CONVENTION, day=3)
    (cid,) = scan_and_record(store, [y])
    store.contradictions.dismiss(cid, "both fine")
    assert scan_and_record(store, [x, y]) == []
    fake.replies = [oracle({frozenset((store.get(x).text, store.get(y).text))})]
    assert scan_and_record(store, [x, y], judge=judge_at(fake, store)) == []
    assert [c.status for c in store.contradictions.query(None)] == [ContradictionStatus.DISMISSED]
    assert candidates.pending(store) == []


def test_at_most_five_candidates_per_memory(store: MemoryStore, put: Callable[..., int]) -> None:
    for i in range(9):
        put(f"The `cache_dir` setting keeps the Redis cache in folder number {i}", day=i)
    new = put("The `cache_dir` setting now keeps the cache in SQLite instead", day=20)
    found = propose(store, store.get(new), tuple(Kind), lambda x, y: True)
    assert len(found) == MAX_CANDIDATES
    outcome = examine(store, [new], bounds=Bounds(candidates=3))
    assert len(outcome.pending) == 3
    assert all(c.newer == new for c in outcome.pending)


class Clock:
    """``time`` for the scan module: real wall time, a monotonic clock that moves one second
    each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now

    def time(self) -> float:
        return time.time()


def test_the_scan_stops_at_its_time_bound_and_resumes_where_it_stopped(
    store: MemoryStore, put: Callable[..., int], monkeypatch: pytest.MonkeyPatch
) -> None:
    fillers = [
        put("Logs go to stderr as JSON lines", Kind.CONVENTION, day=0),
        put("The release branch is cut every second Tuesday", Kind.FACT, day=1),
        put("Screenshots live in docs/images", Kind.FACT, day=2),
    ]
    a = put("Always squash commits before merging.", Kind.CONVENTION, day=3)
    b = put("Never squash commits before merging.", Kind.CONVENTION, day=4)
    monkeypatch.setattr(scan_module, "time", Clock())
    # one read to start, one for the batch's time left, one for its deadline, then one per
    # memory: a bound of 4 "seconds" lets three memories through
    first = scan_backlog(store, 0, bounds=Bounds(seconds=4))
    assert (first.scanned, first.left, first.stopped) == (3, 2, True)
    assert store.cursors.get(BACKLOG) == {"after": str(fillers[-1])}
    assert store.contradictions.query(None) == []  # the conflicting pair was not reached
    # the next run (another ingest: new memories after b) starts where the last one stopped
    later = put("Screenshots are PNG files", Kind.FACT, day=5)
    second = scan_backlog(store, b, bounds=Bounds(seconds=None))
    assert (second.scanned, second.left, second.stopped) == (3, 0, False)
    (c,) = store.contradictions.query(None)
    assert {c.memory_a, c.memory_b} == {a, b} and second.opened == [c.id]
    assert store.cursors.get(BACKLOG) == {"after": str(later)}
    # nothing is left: a run with nothing new scans nothing
    assert scan_backlog(store, later, bounds=Bounds(seconds=None)).scanned == 0


def test_consolidation_judges_what_waits_once_a_model_is_configured(
    store: MemoryStore, put: Callable[..., int], fake: FakeLlm
) -> None:
    from predictive import consolidate, llm_config

    old = put(POSTGRES, day=0)
    new = put(MYSQL, day=1)
    scan_and_record(store, [new])
    assert len(candidates.pending(store)) == 1
    assert consolidate.run(store).contradictions_opened == 0  # no model: it keeps waiting
    assert len(candidates.pending(store)) == 1
    fake.replies = [oracle({frozenset((POSTGRES, MYSQL))})]
    llm_config.configure(LlmConfig(url=fake.url, model="test-model"))
    try:
        out = consolidate.run(store)
    finally:
        llm_config.configure(LlmConfig())
    assert out.contradictions_opened == 1 and candidates.pending(store) == []
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert {c.memory_a, c.memory_b} == {old, new}
