"""ask: local rules classify a question; the matching retrieval prefers its kinds, a history
question reads oldest first, every item is cited, and what was served counts as retrieved."""

from __future__ import annotations

import pytest

from predictive.ask import QuestionKind, ask, classify_question
from predictive.locked_contexts import lock_context, preview_of
from predictive.operations import LockedContextArgs, locked_context
from storage import InvalidInput, Kind, MemoryStore, NewMemory


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Why did we choose Postgres over Mongo?", QuestionKind.DECISION),
        ("How do I run the integration tests?", QuestionKind.HOWTO),
        ("When did the auth module change to sessions?", QuestionKind.HISTORY),
        ("KeyError: 'user_id' in the login handler", QuestionKind.ERROR),
        ("the build fails on CI", QuestionKind.ERROR),
        ("payments", QuestionKind.GENERAL),
    ],
)
def test_questions_are_classified_by_local_rules(question: str, kind: QuestionKind) -> None:
    assert classify_question(question).kind is kind


def test_a_decision_question_puts_decisions_first(store: MemoryStore) -> None:
    store.add(NewMemory(text="Postgres database connection pool size is 10", kind=Kind.FACT))
    d = store.add(
        NewMemory(text="We chose Postgres over Mongo for the database: joins", kind=Kind.DECISION)
    ).id
    out = ask(store, "why did we choose the Postgres database?")
    assert out["type"] == "decision"
    assert out["items"][0]["id"] == d
    assert all({"id", "provenance", "source"} <= set(i) for i in out["items"])


def test_a_history_question_lists_oldest_first(store: MemoryStore) -> None:
    old = store.add(NewMemory(text="auth module used cookies", kind=Kind.EPISODE, valid_from=1e9))
    new = store.add(
        NewMemory(text="auth module changed to sessions", kind=Kind.EPISODE, valid_from=2e9)
    )
    out = ask(store, "when did the auth module change?")
    ids = [i["id"] for i in out["items"]]
    assert out["type"] == "history"
    assert ids.index(old.id) < ids.index(new.id)


def test_served_items_count_as_retrieved(store: MemoryStore) -> None:
    mid = store.add(NewMemory(text="deploy with make release", kind=Kind.WORKFLOW)).id
    ask(store, "how do I deploy a release?")
    assert store.get(mid).retrieval_count == 1


def test_an_empty_question_is_refused(store: MemoryStore) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        ask(store, "  ")


def test_a_lock_of_memories_holds_their_texts_and_a_preview(store: MemoryStore) -> None:
    a = store.add(NewMemory(text="API tokens MUST expire after one hour")).id
    locked, _ = lock_context(store, "auth", memory_ids=[a])
    assert "API tokens MUST expire" in locked.content
    assert locked_context(store, LockedContextArgs("auth", level="preview")).content is None


def test_a_preview_keeps_the_title_and_rule_lines() -> None:
    text = (
        "# Auth\n\nSessions are stored in Redis with a sliding expiry of 30 minutes.\n"
        + ("filler line\n" * 50)
        + "Tokens MUST never be logged.\n"
    )
    p = preview_of(text)
    assert p.startswith("Auth") and "MUST never be logged" in p
