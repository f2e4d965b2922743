"""Sessions and messages: idempotent saving, redaction, vectors, global and session-first search,
and the v1 → v2 migration that added them to the keyword index."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import apsw
import numpy as np
import pytest

from storage import Anchor, MemoryStore, NewMemory
from storage.db import immediate
from storage.embeddings import HashingEmbedder
from storage.errors import InvalidInput, NotFound
from storage.schema import MIGRATIONS
from storage.session_search import search_messages, search_sessions, session_first
from storage.sessions import SessionStore
from storage.sources.records import ChatMessage, CodeBlock, Conversation, redacted


def conv(external_id: str, texts: list[str], title: str | None = None, **kw) -> Conversation:
    return Conversation(
        tool="claude",
        external_id=external_id,
        title=title,
        messages=tuple(
            ChatMessage(i, "user" if i % 2 == 0 else "assistant", t, at=1000.0 + i)
            for i, t in enumerate(texts)
        ),
        **kw,
    )


AUTH = [
    "the login fails with a JWT null pointer in refreshToken",
    "the refresh token is read before it is decoded; check for None first",
    "thanks, that fixed the null pointer",
    "now let's deploy the auth service",
]
DB = [
    "set up postgres migrations with alembic",
    "run alembic revision --autogenerate then alembic upgrade head",
]
COOKING = ["what should I cook tonight", "try a mushroom risotto with parmesan"]


@pytest.fixture
def sessions(store: MemoryStore) -> SessionStore:
    s = SessionStore(store)
    s.save(conv("auth", AUTH, "auth refactor"), summary="JWT null pointer in token refresh")
    s.save(conv("db", DB, "database"), summary="postgres migrations with alembic")
    s.save(conv("food", COOKING, "dinner"), summary="cooking risotto")
    s.embed_pending()
    return s


def test_saving_again_adds_nothing_and_new_messages_are_appended(store: MemoryStore) -> None:
    s = SessionStore(store)
    first = s.save(conv("a", AUTH[:2]), summary="x")
    again = s.save(conv("a", AUTH[:2]))
    grown = s.save(conv("a", AUTH))
    assert (first.created, first.new_messages) == (True, 2)
    assert (again.created, again.new_messages, again.changed_messages) == (False, 0, 0)
    assert (grown.created, grown.new_messages) == (False, 2)
    assert [m.text for m in s.messages(first.session_id)] == AUTH
    assert s.get(first.session_id).summary == "x"  # kept when not given again
    assert s.count() == (1, 4)


def test_an_edited_message_is_replaced_and_loses_its_vector(store: MemoryStore) -> None:
    s = SessionStore(store)
    sid = s.save(conv("a", AUTH), summary="x").session_id
    s.embed_pending()
    edited = [*AUTH[:3], "deploy the payment service instead"]
    r = s.save(conv("a", edited))
    assert r.changed_messages == 1 and r.new_messages == 0
    assert s.messages(sid, 3, 4)[0].text == "deploy the payment service instead"
    assert s.pending_embeddings() == 1
    assert [h.message.idx for h in search_messages(s, "payment", mode="keyword")] == [3]
    assert search_messages(s, "auth", mode="keyword") == []


def test_secrets_are_redacted_in_messages_titles_and_code(store: MemoryStore) -> None:
    s = SessionStore(store)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    c = Conversation(
        tool="cursor",
        external_id="x",
        title=f"token {secret}",
        messages=(
            ChatMessage(
                0, "user", f"my token is {secret}", code_blocks=(CodeBlock(f"T='{secret}'"),)
            ),
        ),
    )
    sid = s.save(c, summary=f"uses {secret}").session_id
    rows = store.conn.execute(
        "SELECT s.title || s.summary || m.text || m.metadata FROM sessions s "
        "JOIN messages m ON m.session_id = s.id WHERE s.id = ?",
        (sid,),
    ).fetchone()[0]
    assert secret not in rows
    assert "REDACTED" in rows.upper()


def test_a_redacted_conversation_changed_afterwards_is_redacted_where_it_is_stored(
    store: MemoryStore,
) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    clean = redacted(conv("x", ["nothing to hide here", "nor here"]))
    assert clean.is_redacted  # stored as it is: its messages were redacted once already
    raw = ChatMessage(
        2,
        "user",
        f"new turn with {secret}",
        code_blocks=(CodeBlock(f"T='{secret}'", filename=f"{secret}.py"),),
        files=(f"cfg/{secret}.txt",),
        metadata={"note": secret},
    )
    changed = replace(clean, messages=(*clean.messages, raw))
    assert not changed.is_redacted  # a copy with new messages is redacted again
    sid = SessionStore(store).save(changed).session_id
    stored = " ".join(
        text + meta
        for text, meta in store.conn.execute(
            "SELECT text, metadata FROM messages WHERE session_id = ?", (sid,)
        )
    )
    assert secret not in stored and stored.count("[REDACTED:") >= 4


def test_bad_input_is_refused_and_writes_nothing(store: MemoryStore) -> None:
    s = SessionStore(store)
    with pytest.raises(InvalidInput, match="external id"):
        s.save(conv("", AUTH))
    assert s.count() == (0, 0)
    with pytest.raises(InvalidInput, match="empty"):
        search_messages(s, "  ")
    with pytest.raises(InvalidInput, match="mode"):
        session_first(s, "x", mode="fuzzy")
    with pytest.raises(NotFound):
        s.get(99)


def test_embedding_covers_messages_and_summaries(sessions: SessionStore) -> None:
    assert sessions.pending_embeddings() == 0
    mat = sessions.matrix()
    assert mat is not None
    assert len(mat.message_ids) == len(AUTH) + len(DB) + len(COOKING)
    assert len(mat.session_ids) == 3
    assert np.allclose(np.linalg.norm(mat.messages, axis=1), 1.0, atol=1e-3)


def test_global_message_search_finds_the_message(sessions: SessionStore) -> None:
    hits = search_messages(sessions, "JWT null pointer", k=3)
    assert hits[0].message.text == AUTH[0]
    assert hits[0].session is not None and hits[0].session.title == "auth refactor"


def test_session_search_ranks_by_summary(sessions: SessionStore) -> None:
    found = search_sessions(sessions, "alembic migrations", k=2)
    assert found[0].session.title == "database"


def test_session_first_opens_the_best_sessions_and_adds_neighbours(
    sessions: SessionStore,
) -> None:
    r = session_first(sessions, "null pointer in the token refresh", k=2, neighbours=1)
    assert r.sessions[0].session.title == "auth refactor"
    top = r.hits[0]
    assert top.message.session_id == r.sessions[0].session.id
    assert top.message.text in (AUTH[0], AUTH[2])
    assert {n.idx for n in top.neighbours} <= {top.message.idx - 1, top.message.idx + 1}
    assert top.neighbours
    assert all(h.session is not None for h in r.hits)
    # every hit comes from a session the first step chose
    chosen = {s.session.id for s in r.sessions}
    assert {h.message.session_id for h in r.hits} <= chosen


def test_session_first_cross_links_similar_sessions(store: MemoryStore) -> None:
    s = SessionStore(store)
    s.save(conv("a", AUTH), summary="JWT token refresh null pointer in auth")
    s.save(conv("b", ["auth token refresh again"]), summary="JWT token refresh in auth again")
    s.save(conv("c", COOKING), summary="mushroom risotto with parmesan")
    s.embed_pending()
    r = session_first(s, "null pointer", k=1, top_sessions=1, cross_links=2)
    assert [h.session.external_id for h in r.sessions] == ["a"]
    assert [c.session.external_id for c in r.cross_links][:1] == ["b"]


def test_keyword_mode_works_without_a_model(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.db")
    s = SessionStore(store)
    s.save(conv("db", DB, "database"), summary="postgres migrations")
    assert s.pending_embeddings() == 0 and s.embed_pending() == 0
    r = session_first(s, "alembic upgrade", k=3)
    assert r.hits and "alembic" in r.hits[0].message.text
    with pytest.raises(InvalidInput, match="model"):
        search_messages(s, "x", mode="vector")
    store.close()


def test_a_version_1_database_is_upgraded_with_its_memories(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    with immediate(conn):
        conn.execute(MIGRATIONS[0])
        conn.pragma("user_version", 1)
    now = 1_700_000_000.0
    conn.execute(
        "INSERT INTO memories(kind, text, content_hash, created_at, updated_at, valid_from) "
        "VALUES ('fact', 'old memory', 'h1', ?, ?, ?)",
        (now, now, now),
    )
    conn.execute("INSERT INTO anchors(memory_id, type, value) VALUES (1, 'file', 'a.py')")
    conn.close()
    store = MemoryStore(path, embedder=HashingEmbedder(dim=32))
    assert store.conn.pragma("user_version") == len(MIGRATIONS)
    m = store.get(1)
    assert m.text == "old memory" and [str(a) for a in m.anchors] == ["file:a.py"]
    new = store.add(NewMemory("rule for the api", anchors=[Anchor.parse("glob:src/api/**")])).id
    assert store.glob_anchors() == [(new, "src/api/**")]
    store.close()


def test_the_vector_cache_follows_every_write(sessions: SessionStore) -> None:
    before = sessions.matrix()
    assert before is not None
    gen = sessions.generation()
    sessions.save(conv("late", ["a brand new topic about kites"]), summary="kites")
    assert sessions.generation() > gen
    sessions.embed_pending()
    after = sessions.matrix()
    assert after is not None and after is not before
    assert len(after.message_ids) == len(before.message_ids) + 1
    assert sessions.matrix() is after  # no write since: the same cache
    hits = search_messages(sessions, "kites", k=1, mode="vector")
    assert hits and hits[0].message.text == "a brand new topic about kites"
