"""Conversation context in search: a message of a thread (a threaded memory, a session's
message or passage) is scored with its neighbours."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import Kind, MemoryFilter, MemoryStore, NewMemory, search
from storage.neighbours import thread_position
from storage.session_search import search_messages, search_passages
from storage.sessions import SessionStore
from storage.sources.records import ChatMessage, Conversation

T0 = 1_700_000_000.0

TALK = [
    "Ana: How did the kids handle the car accident last week?",
    "Ben: They were scared at first but we calmed them down; they are tough.",
    "Ana: Glad to hear it. Want to get lunch on Friday?",
    "Ben: Sure, the usual place at noon.",
]
OTHER = [
    "Ben: The garden needs water before the weekend.",
    "Ana: The tomatoes are ripe already.",
]


@pytest.fixture
def words(db_path: Path) -> Iterator[MemoryStore]:
    """A store without a model: hybrid search runs on keywords alone, so what context adds
    is exactly what the neighbours' words bring."""
    s = MemoryStore(db_path)
    yield s
    s.close()


def _thread(
    store: MemoryStore, thread: str, texts: list[str], t0: float = T0, suffix: str = ""
) -> list[int]:
    """Memories keyed ``<thread>#<i>`` (then ``suffix``, with ``{i}`` filled in)."""
    return [
        store.add(
            NewMemory(
                text=text,
                kind=Kind.EPISODE,
                source="chat:test",
                source_id=f"{thread}#{i}" + suffix.format(i=i),
                created_at=t0 + i,
            )
        ).id
        for i, text in enumerate(texts)
    ]


def test_thread_position_parses_the_chat_key() -> None:
    assert thread_position("sess-1#12") == ("sess-1", 12)
    assert thread_position("sess-1#12:decision-rule") == ("sess-1", 12)
    assert thread_position("a/b#c#3") == ("a/b#c", 3)
    assert thread_position("src/app.py:12") is None
    assert thread_position("sess#x") is None
    assert thread_position(None) is None


def test_a_reply_is_found_through_the_question_before_it(words: MemoryStore) -> None:
    ids = _thread(words, "s1", TALK)
    _thread(words, "s2", OTHER, T0 + 100)
    q = "car accident kids"
    plain = [h.memory.id for h in search(words, q, context=False, k=3)]
    # the reply shares no word with the question: keyword search alone cannot find it
    assert ids[1] not in plain
    hits = search(words, q, k=3)
    got = [h.memory.id for h in hits]
    assert got[0] == ids[0]
    assert ids[1] in got
    reply = next(h for h in hits if h.memory.id == ids[1])
    assert reply.components["context"] > 0
    assert all(0.0 <= h.score <= 1.0 for h in hits)


def test_the_previous_message_counts_more_than_the_next(words: MemoryStore) -> None:
    ids = _thread(words, "s1", TALK)
    hits = search(words, "car accident kids", k=4)
    score = {h.memory.id: h.score for h in hits}
    # ids[1] follows the matching message; nothing matches before ids[0] and after ids[3]
    assert score[ids[1]] > score.get(ids[3], 0.0)


def test_neighbours_must_pass_the_filters(words: MemoryStore) -> None:
    ids = _thread(words, "s1", TALK)
    words.archive(ids[1])
    got = [h.memory.id for h in search(words, "car accident kids", k=4)]
    assert ids[1] not in got
    assert ids[0] in got


def test_other_threads_and_other_sources_are_not_neighbours(words: MemoryStore) -> None:
    a = _thread(words, "s1", TALK[:1])
    b = _thread(words, "s2", TALK[1:2])  # position 0 of another thread
    c = words.add(
        NewMemory(
            text=TALK[1], kind=Kind.EPISODE, source="chat:other", source_id="s1#1", created_at=T0
        )
    ).id
    hits = search(words, "car accident kids", k=5)
    got = [h.memory.id for h in hits]
    assert got == [a[0]]
    assert b[0] not in got and c not in got


def test_memories_outside_threads_rank_as_without_context(store: MemoryStore) -> None:
    for i, text in enumerate(TALK + OTHER):
        store.add(NewMemory(text=text, kind=Kind.FACT, created_at=T0 + i))
    for q in ("car accident kids", "tomatoes garden", "lunch Friday"):
        with_ctx = search(store, q, k=5)
        without = search(store, q, k=5, context=False)
        assert [(h.memory.id, h.score) for h in with_ctx] == [
            (h.memory.id, h.score) for h in without
        ]
        assert all("context" not in h.components for h in with_ctx)


def test_hybrid_with_a_model_keeps_scores_in_range(store: MemoryStore) -> None:
    ids = _thread(store, "s1", TALK)
    hits = search(store, "car accident kids", k=4)
    assert {h.memory.id for h in hits} == set(ids)
    assert any("context" in h.components for h in hits)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("mode", ["keyword", "vector"])
def test_single_list_modes_return_what_matched_by_itself(store: MemoryStore, mode: str) -> None:
    _thread(store, "s1", TALK)
    for q in ("car accident kids", "lunch Friday"):
        got = search(store, q, mode=mode, k=4)
        bare = search(store, q, mode=mode, k=4, context=False)
        assert [(h.memory.id, h.score) for h in got] == [(h.memory.id, h.score) for h in bare]


def test_rrf_fusion_has_no_context(store: MemoryStore) -> None:
    _thread(store, "s1", TALK)
    hits = search(store, "car accident kids", fusion="rrf", k=4)
    assert all("context" not in h.components for h in hits)


def test_a_kind_filter_applies_to_neighbours(words: MemoryStore) -> None:
    ids = _thread(words, "s1", TALK)
    got = [
        h.memory.id
        for h in search(
            words,
            "car accident kids",
            filters=MemoryFilter(kinds=[Kind.EPISODE]),
            k=4,
        )
    ]
    assert ids[1] in got
    got = [
        h.memory.id
        for h in search(
            words,
            "car accident kids",
            filters=MemoryFilter(kinds=[Kind.FACT]),
            k=4,
        )
    ]
    assert got == []


# ---- conversations: messages and passages in a session -------------------------------------


def _chat(store: MemoryStore) -> SessionStore:
    s = SessionStore(store)
    for ext, texts in (("talk", TALK), ("garden", OTHER)):
        s.save(
            Conversation(
                tool="claude",
                external_id=ext,
                title=None,
                messages=tuple(
                    ChatMessage(i, "user" if i % 2 == 0 else "assistant", t, at=1000.0 + i)
                    for i, t in enumerate(texts)
                ),
            ),
            summary=ext,
        )
    s.embed_pending()
    return s


def test_a_reply_message_is_found_through_the_question_before_it(words: MemoryStore) -> None:
    s = _chat(words)
    q = "car accident kids"
    plain = [h.message.text for h in search_messages(s, q, k=2, context=False)]
    assert TALK[1] not in plain
    got = [h.message.text for h in search_messages(s, q, k=2)]
    assert got[0] == TALK[0]
    assert TALK[1] in got
    # keyword search alone returns what holds the words
    assert [h.message.text for h in search_messages(s, q, k=2, mode="keyword")] == plain


def test_a_reply_passage_is_found_through_the_question_before_it(words: MemoryStore) -> None:
    s = _chat(words)
    q = "car accident kids"
    plain = [p.text for p in search_passages(s, q, k=2)]  # no context by default
    assert TALK[1] not in plain
    got = search_passages(s, q, k=2, context=True)
    assert got[0].text == TALK[0]
    assert TALK[1] in [p.text for p in got]
    assert all(0.0 <= p.score <= 1.0 for p in got)


def test_message_context_with_a_model(store: MemoryStore) -> None:
    s = _chat(store)
    hits = search_messages(s, "car accident kids", k=4)
    assert hits[0].message.text == TALK[0]
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_chat_memories_with_a_suffix_are_neighbours(words: MemoryStore) -> None:
    ids = _thread(words, "s1", TALK, suffix=":rule-{i}")
    got = [h.memory.id for h in search(words, "car accident kids", k=2)]
    assert got == [ids[0], ids[1]]
