"""The chain of judges: the configured endpoint, then the editor's models, then an MCP
client's sampling, else the candidates wait. A host's model is held to the client's budgets,
cache, validation and circuit breaker, and asked about a few pairs a run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from predictive import judges, llm, llm_config
from predictive.conflicts import scan_and_record
from predictive.llm import HostUnavailable, LlmClient
from predictive.llm_config import LlmConfig
from storage import Kind, MemoryStore, NewMemory
from storage import conflict_candidates as candidates
from storage.models import ContradictionStatus
from tests.judge_verdicts import oracle_verdict
from tests.llm_server import FakeLlm

T0 = 1_700_000_000.0
POSTGRES = "We use PostgreSQL as the primary database"
MYSQL = "We moved off PostgreSQL: MySQL is the primary database now"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    """No host offered, closed breakers, no endpoint configured."""
    before = llm_config.configured()
    llm.reset()
    llm_config.configure(LlmConfig())
    for name in judges.offered():
        judges.withdraw(name)
    yield
    for name in judges.offered():
        judges.withdraw(name)
    llm_config.configure(before)
    llm.reset()


def put(store: MemoryStore, text: str, day: float) -> int:
    at = T0 + day * 86400
    mid = store.add(NewMemory(text=text, kind=Kind.DECISION, created_at=at, valid_from=at)).id
    store.embeddings.embed_pending()
    return mid


class Host:
    """A host's model that answers from labels and records what it was asked."""

    def __init__(self, conflicts: set[frozenset[str]] = frozenset()) -> None:  # type: ignore[assignment]
        self.conflicts = set(conflicts)
        self.asked: list[list[dict[str, str]]] = []
        self.decline = False

    def __call__(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        self.asked.append(messages)
        if self.decline:
            raise HostUnavailable("the user did not allow it")
        verdict = oracle_verdict(messages[-1]["content"], self.conflicts)
        return "```json\n" + json.dumps(verdict) + "\n```"


def waiting_pair(store: MemoryStore, a: str = POSTGRES, b: str = MYSQL) -> tuple[int, int]:
    old, new = put(store, a, 0), put(store, b, 1)
    scan_and_record(store, [new])
    assert [(r.older, r.newer) for r in candidates.pending(store)] == [(old, new)]
    return old, new


def test_without_any_judge_the_pair_waits(store: MemoryStore) -> None:
    waiting_pair(store)
    assert judges.choose(store) is None
    run = judges.judge_waiting_pairs(store, None)
    assert run.to_dict() == {
        "by": None,
        "opened": [],
        "conflicts": 0,
        "compatible": 0,
        "unanswered": 0,
        "left": 1,
    }


def test_the_editors_model_judges_a_pair_a_contradiction(store: MemoryStore) -> None:
    old, new = waiting_pair(store)
    host = Host({frozenset((POSTGRES, MYSQL))})
    judges.offer(judges.EDITOR, host)
    choice = judges.choose(store)
    assert choice is not None and choice.name == judges.EDITOR
    run = judges.judge_waiting_pairs(store, choice)
    assert run.by == judges.EDITOR and run.judged.conflicts == 1 and run.left == 0
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert {c.memory_a, c.memory_b} == {old, new} and run.judged.opened == [c.id]
    (messages,) = host.asked
    assert messages[0]["role"] == "system" and "JSON" in messages[0]["content"]
    assert messages[1]["content"] == f"A:\n{POSTGRES}\n\nB:\n{MYSQL}"


def test_a_compatible_verdict_dismisses_the_pair_and_the_same_texts_are_not_asked_again(
    store: MemoryStore,
) -> None:
    waiting_pair(store)
    host = Host()
    judges.offer(judges.EDITOR, host)
    run = judges.judge_waiting_pairs(store, judges.choose(store))
    assert run.judged.compatible == 1 and run.left == 0
    assert store.contradictions.query(None) == []
    # the same two texts written again: settled by content, neither proposed nor asked
    again = put(store, MYSQL, 3)
    scan_and_record(store, [again])
    assert candidates.pending(store) == []
    judges.judge_waiting_pairs(store, judges.choose(store))
    assert len(host.asked) == 1


def test_a_declining_host_leaves_the_pair_waiting_and_its_breaker_opens(
    store: MemoryStore,
) -> None:
    waiting_pair(store)
    host = Host()
    host.decline = True
    judges.offer(judges.EDITOR, host)
    failures = LlmConfig().breaker_failures
    for _ in range(failures):
        run = judges.judge_waiting_pairs(store, judges.choose(store))
        assert run.judged.unanswered == 1 and run.left == 1
    assert len(host.asked) == failures
    assert judges.choose(store) is None  # the breaker is open: nobody is asked for a while
    assert len(candidates.pending(store)) == 1


def test_an_invalid_answer_is_discarded_and_the_pair_waits(store: MemoryStore) -> None:
    waiting_pair(store)
    judges.offer(judges.EDITOR, lambda messages, n: "I think they conflict.")
    run = judges.judge_waiting_pairs(store, judges.choose(store))
    assert run.judged.unanswered == 1 and run.left == 1
    assert store.contradictions.query(None) == []


def test_a_host_is_asked_about_a_few_pairs_a_run(store: MemoryStore) -> None:
    for i in range(judges.HOST_PAIRS + 3):
        old = put(store, f"We use PostgreSQL {i} as the primary database for service {i}", 2 * i)
        new = put(
            store, f"We moved off PostgreSQL {i}: MySQL is primary for service {i}", 2 * i + 1
        )
        scan_and_record(store, [old, new])
    waiting = judges.waiting(store)
    assert len(candidates.pending(store)) > judges.HOST_PAIRS
    host = Host()
    judges.offer(judges.SAMPLING, host)
    run = judges.judge_waiting_pairs(store, judges.choose(store))
    assert run.by == judges.SAMPLING
    assert len(host.asked) == judges.HOST_PAIRS == run.judged.compatible
    assert run.left == waiting - judges.HOST_PAIRS


def test_the_chain_prefers_the_endpoint_then_the_editor_then_sampling(
    store: MemoryStore,
) -> None:
    editor, sampling = Host(), Host()
    judges.offer(judges.SAMPLING, sampling)
    choice = judges.choose(store)
    assert choice is not None and choice.name == judges.SAMPLING
    judges.offer(judges.EDITOR, editor)
    choice = judges.choose(store)
    assert choice is not None and choice.name == judges.EDITOR
    fake = FakeLlm(replies=['{"verdict": "compatible", "reason": "both hold", "confidence": 1}'])
    try:
        endpoint = LlmClient(LlmConfig(url=fake.url, model="test-model"), store=store)
        choice = judges.choose(store, llm=endpoint)
        assert choice is not None and choice.name == judges.ENDPOINT
        # a call's own sampling comes after the editor's models
        choice = judges.choose(store, hosts={judges.SAMPLING: Host()})
        assert choice is not None and choice.name == judges.EDITOR
    finally:
        fake.close()


def test_a_host_model_is_not_asked_when_the_user_left_judge_out_of_uses(
    store: MemoryStore,
) -> None:
    llm_config.configure(LlmConfig(uses=("extraction",)))
    judges.offer(judges.EDITOR, Host())
    assert judges.choose(store) is None


def test_host_verdicts_are_cached_by_content(store: MemoryStore) -> None:
    host = Host()
    client = LlmClient(LlmConfig(), store=store, send=host, host=judges.EDITOR)
    ask: Callable[..., Any] = client.ask_json
    schema = {"type": "object", "required": ["verdict"]}
    prompt = f"A:\n{POSTGRES}\n\nB:\n{MYSQL}"
    first = ask("judge", "system", prompt, schema)
    second = LlmClient(LlmConfig(), store=store, send=host, host=judges.EDITOR).ask_json(
        "judge", "system", prompt, schema
    )
    assert first == second and first["verdict"] == "compatible"
    assert len(host.asked) == 1


def test_a_host_model_needs_a_name_and_an_unknown_host_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        LlmClient(LlmConfig(), send=Host())
    with pytest.raises(ValueError, match="unknown host model"):
        judges.offer("somebody", Host())


def test_consolidation_asks_an_offered_host_when_no_endpoint_judges(store: MemoryStore) -> None:
    from predictive import consolidate

    old, new = waiting_pair(store)
    host = Host({frozenset((POSTGRES, MYSQL))})
    judges.offer(judges.EDITOR, host)
    consolidate.run(store)
    assert len(host.asked) == 1
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert {c.memory_a, c.memory_b} == {old, new}
    assert candidates.pending(store) == []


def test_a_judge_has_the_last_word_on_what_the_rules_only_suspected(store: MemoryStore) -> None:
    kept = "Never log request bodies"
    dropped = "We log request bodies at debug level"
    found = "Use tabs for indentation"
    later = "Use spaces for indentation, never tabs"
    ids = [put(store, text, day) for day, text in enumerate((kept, dropped, found, later))]
    for i in ids:
        store.contradictions.add(i, ids[(ids.index(i) + 1) % 4], reason="rules", status="suspected")
    suspected = store.contradictions.query(ContradictionStatus.SUSPECTED)
    assert len(suspected) == 4
    host = Host({frozenset((found, later))})
    judges.offer(judges.EDITOR, host)
    run = judges.judge_waiting_pairs(store, judges.choose(store), limit=10)
    assert (run.judged.conflicts, run.judged.compatible, run.left) == (1, 3, 0)
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert {c.memory_a, c.memory_b} == {ids[2], ids[3]} and run.judged.opened == [c.id]
    assert c.note is not None and c.note.startswith("confirmed")
    assert len(store.contradictions.query(ContradictionStatus.DISMISSED)) == 3
