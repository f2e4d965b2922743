"""Conversations as sessions and messages: stored redacted, searchable by keyword, embedded.

A session is keyed by ``(tool, external_id)``; saving it again adds the messages that are new
and refreshes the ones whose text changed, so re-ingesting is idempotent and incremental.
Vectors are float32 BLOBs in the rows themselves, with the model that made them; vector search
over them is exact (:class:`MessageMatrix`), rebuilt from the rows whenever they changed.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from storage import db as dbmod
from storage import passages as passages_mod
from storage.errors import InvalidInput, NotFound
from storage.redact import redact, redact_value
from storage.repository import MemoryStore
from storage.sources.records import Conversation
from storage.text import identifier_terms

MAX_MESSAGE_CHARS = 100_000
"""Longer messages are stored cut to this length (the source still has them whole)."""
_MADE_KEPT = 4_096
"""Vectors an embedding run keeps by text, to give a repeated text without the model."""
MAX_SESSION_BODY = 400_000
"""At most this much of a session's text is indexed for finding the session."""


@dataclass(frozen=True)
class Session:
    id: int
    tool: str
    external_id: str
    title: str | None
    workspace: str | None
    started_at: float | None
    ended_at: float | None
    summary: str | None
    message_count: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool": self.tool,
            "externalId": self.external_id,
            "title": self.title,
            "workspace": self.workspace,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "summary": self.summary,
            "messageCount": self.message_count,
        }


@dataclass(frozen=True)
class Message:
    id: int
    session_id: int
    idx: int
    role: str
    text: str
    at: float | None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sessionId": self.session_id,
            "idx": self.idx,
            "role": self.role,
            "text": self.text,
            "at": self.at,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class SaveResult:
    session_id: int
    created: bool
    new_messages: int
    changed_messages: int


def _bump(conn: Any) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('session_generation', '1') ON CONFLICT(key) "
        "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def generation(conn: Any) -> int:
    """Moves with every write to sessions or messages."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'session_generation'").fetchone()
    return int(row[0]) if row else 0


def _message_metadata(m: Any, *, clean: bool) -> dict[str, Any]:
    """A message's metadata with its code blocks and files; code is redacted (unless
    ``clean``: redacted already) before it is cut, so no secret is cut short of its pattern."""
    meta: dict[str, Any] = dict(m.metadata or {})
    if m.code_blocks:
        meta["codeBlocks"] = [
            {
                "language": b.language,
                "filename": b.filename,
                "code": (b.code if clean else redact(b.code))[:20_000],
            }
            for b in m.code_blocks
        ]
    if m.files:
        meta["files"] = list(m.files)
    return meta


def _dumps(meta: dict[str, Any], *, clean: bool = False) -> str:
    """JSON text of a session's or message's metadata, redacted unless ``clean`` (redacted
    already)."""
    try:
        return json.dumps(meta if clean else redact_value(meta), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return "{}"


def sessions_of(store: MemoryStore) -> SessionStore:
    """The store's one SessionStore, so its vector matrices are loaded once, not per search."""
    found = getattr(store, "_session_store", None)
    if found is None:
        found = SessionStore(store)
        store._session_store = found  # type: ignore[attr-defined]
    return found


class SessionStore:
    """Sessions and messages of one project's store (uses the store's connections)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._matrix_lock = threading.Lock()
        self._matrix: MessageMatrix | None = None

    # ---- write -----------------------------------------------------------------------------

    def save(self, conv: Conversation, *, summary: str | None = None) -> SaveResult:
        """Insert or update one conversation in one transaction (texts redacted: its messages
        are redacted here unless :func:`storage.sources.records.redacted` made it)."""
        if not conv.external_id:
            raise InvalidInput("a conversation needs an external id")
        conn = self.store.conn
        clean = conv.is_redacted
        title = redact(conv.title) if conv.title else None
        summary = redact(summary) if summary else None
        meta = dict(conv.metadata or {})
        if conv.branch:
            meta["branch"] = conv.branch
        if conv.origin:
            meta["origin"] = conv.origin
        with dbmod.immediate(conn):
            row = conn.execute(
                "SELECT id, summary FROM sessions WHERE source_tool = ? AND external_id = ?",
                (conv.tool, conv.external_id),
            ).fetchone()
            created = row is None
            if row is None:
                sid = conn.execute(
                    "INSERT INTO sessions(source_tool, external_id, workspace, title, started_at, "
                    "ended_at, summary, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (
                        conv.tool,
                        conv.external_id,
                        conv.workspace,
                        title,
                        conv.started_at,
                        conv.ended_at,
                        summary,
                        _dumps(meta),
                    ),
                ).get
            else:
                sid = row[0]
                summary_changed = summary is not None and row[1] != summary
                conn.execute(
                    "UPDATE sessions SET workspace = coalesce(?, workspace), "
                    "title = coalesce(?, title), started_at = coalesce(?, started_at), "
                    "ended_at = coalesce(?, ended_at), summary = coalesce(?, summary), "
                    "metadata = ?, "
                    "embedding = CASE WHEN ? THEN NULL ELSE embedding END, "
                    "model_id = CASE WHEN ? THEN NULL ELSE model_id END WHERE id = ?",
                    (
                        conv.workspace,
                        title,
                        conv.started_at,
                        conv.ended_at,
                        summary,
                        _dumps(meta),
                        summary_changed,
                        summary_changed,
                        sid,
                    ),
                )
            old = dict(conn.execute("SELECT idx, text FROM messages WHERE session_id = ?", (sid,)))
            new_n = changed_n = 0
            # rows first, keyword indexes after (passages.write says why)
            indexed: list[tuple[int, str, str]] = []
            pieces: list[tuple[int, str]] = []
            for m in conv.messages:
                text = (m.text if clean else redact(m.text))[:MAX_MESSAGE_CHARS].strip()
                if not text:
                    continue
                meta_json = _dumps(_message_metadata(m, clean=clean), clean=clean)
                new = m.idx not in old
                if new:
                    mid = conn.execute(
                        "INSERT INTO messages(session_id, idx, role, text, at, metadata) "
                        "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                        (sid, m.idx, m.role, text, m.at, meta_json),
                    ).get
                    new_n += 1
                elif old[m.idx] != text:
                    mid = conn.execute(
                        "UPDATE messages SET role = ?, text = ?, at = ?, metadata = ?, "
                        "embedding = NULL, model_id = NULL WHERE session_id = ? AND idx = ? "
                        "RETURNING id",
                        (m.role, text, m.at, meta_json, sid, m.idx),
                    ).get
                    conn.execute("DELETE FROM messages_fts WHERE rowid = ?", (mid,))
                    changed_n += 1
                else:
                    continue
                indexed.append((mid, text, identifier_terms(text)))
                pieces += passages_mod.write(conn, sid, mid, text, new=new)
            conn.executemany(
                "INSERT INTO messages_fts(rowid, text, terms) VALUES (?, ?, ?)", indexed
            )
            passages_mod.index(conn, pieces)
            title, summary = conn.execute(
                "SELECT title, summary FROM sessions WHERE id = ?", (sid,)
            ).get
            body = "\n".join(
                t
                for (t,) in conn.execute(
                    "SELECT text FROM messages WHERE session_id = ? ORDER BY idx", (sid,)
                )
            )[:MAX_SESSION_BODY]
            _bump(conn)
            conn.execute("DELETE FROM sessions_fts WHERE rowid = ?", (sid,))
            conn.execute(
                "INSERT INTO sessions_fts(rowid, title, summary, terms, body) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    sid,
                    title or "",
                    summary or "",
                    identifier_terms(f"{title or ''} {summary or ''}"),
                    body,
                ),
            )
        return SaveResult(sid, created, new_n, changed_n)

    def link(self, session_id: int, memory_id: int, message_idx: int | None = None) -> None:
        """Record that a memory was extracted from this session (at that message)."""
        conn = self.store.conn
        with dbmod.immediate(conn):
            conn.execute(
                "INSERT OR IGNORE INTO session_memories(session_id, memory_id, message_idx) "
                "VALUES (?, ?, ?)",
                (session_id, memory_id, message_idx),
            )

    # ---- embeddings ------------------------------------------------------------------------

    def pending_embeddings(self) -> int:
        emb = self.store.embedder
        if emb is None:
            return 0
        conn = self.store.conn
        m: int = conn.execute(
            "SELECT count(*) FROM passages WHERE model_id IS NULL OR model_id != ?",
            (emb.model_id,),
        ).get
        s: int = conn.execute(
            "SELECT count(*) FROM sessions WHERE summary IS NOT NULL AND "
            "(model_id IS NULL OR model_id != ?)",
            (emb.model_id,),
        ).get
        return m + s

    def embed_pending(
        self, *, batch: int = 64, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Embed passages and session summaries lacking a vector from the current model; a
        message takes the vector of its first passage (what the model would read of it).

        A passage that is nothing but what a program printed (:func:`passages.model_text`),
        or nothing an embedding can place, is marked done without a vector and stays
        searchable by keyword; the model reads every other passage whole. Texts
        the model would read twice (a message repeated, a retry) are embedded once."""
        emb = self.store.embedder
        if emb is None:
            return 0
        self.ensure_passages()
        conn = self.store.conn
        total = self.pending_embeddings()
        done = 0
        made: dict[str, bytes] = {}  # model text → its vector, within this run
        for table, cols in (
            ("passages", "id, text, message_id, start"),
            ("sessions", "id, coalesce(title, '') || '. ' || summary, 0, 0"),
        ):
            extra = " AND summary IS NOT NULL" if table == "sessions" else ""
            while True:
                rows: list[tuple[int, str, int, int]] = list(
                    conn.execute(
                        f"SELECT {cols} FROM {table} WHERE (model_id IS NULL OR model_id != ?)"
                        f"{extra} ORDER BY id LIMIT ?",
                        (emb.model_id, batch),
                    )
                )
                if not rows:
                    break
                if table == "passages":
                    readable = passages_mod.model_texts(conn, rows)
                else:
                    readable = {r[0]: r[1] for r in rows}
                if len(made) > _MADE_KEPT:
                    made.clear()
                todo = list(dict.fromkeys(t for t in readable.values() if t and t not in made))
                if todo:
                    vecs = emb.embed(todo).astype("<f4", copy=False)
                    made.update((t, v.tobytes()) for t, v in zip(todo, vecs))
                with dbmod.immediate(conn):
                    _bump(conn)
                    conn.executemany(
                        f"UPDATE {table} SET embedding = ?, model_id = ? WHERE id = ?",
                        [
                            (made.get(t) if t else None, emb.model_id, i)
                            for i, t in readable.items()
                        ],
                    )
                done += len(rows)
                if progress:
                    progress(done, total)
        with dbmod.immediate(conn):
            conn.execute(
                "UPDATE messages SET (embedding, model_id) = (SELECT p.embedding, p.model_id "
                "FROM passages p WHERE p.message_id = messages.id AND p.ord = 0) "
                "WHERE model_id IS NOT ? AND EXISTS (SELECT 1 FROM passages p WHERE "
                "p.message_id = messages.id AND p.ord = 0 AND p.model_id = ?)",
                (emb.model_id, emb.model_id),
            )
        return done

    def ensure_passages(self, *, batch: int = 500) -> int:
        """Cut the messages of an older store into passages (once); returns how many messages."""
        conn = self.store.conn
        done = 0
        while True:
            rows = passages_mod.missing(conn, batch)
            if not rows:
                return done
            with dbmod.immediate(conn):
                pieces: list[tuple[int, str]] = []
                for mid, sid, text in rows:
                    written = passages_mod.write(conn, sid, mid, text, new=True)
                    pieces += written
                    if not written:
                        conn.execute(
                            "INSERT INTO passages(message_id, session_id, ord, start, text) "
                            "VALUES (?, ?, 0, 0, ?)",
                            (mid, sid, text),
                        )
                passages_mod.index(conn, pieces)
                _bump(conn)
            done += len(rows)

    # ---- read ------------------------------------------------------------------------------

    _SESSION_COLS = (
        "s.id, s.source_tool, s.external_id, s.title, s.workspace, s.started_at, s.ended_at, "
        "s.summary, s.metadata, (SELECT count(*) FROM messages WHERE session_id = s.id)"
    )

    @staticmethod
    def _session(r: Sequence[Any]) -> Session:
        return Session(
            id=r[0],
            tool=r[1],
            external_id=r[2],
            title=r[3],
            workspace=r[4],
            started_at=r[5],
            ended_at=r[6],
            summary=r[7],
            metadata=json.loads(r[8] or "{}"),
            message_count=r[9],
        )

    def get(self, session_id: int) -> Session:
        found = self.get_many([session_id])
        if not found:
            raise NotFound(f"no session with id {session_id}")
        return found[0]

    def get_many(self, ids: Iterable[int]) -> list[Session]:
        ids = [int(i) for i in ids]
        rows = self.store.conn.execute(
            f"SELECT {self._SESSION_COLS} FROM sessions s WHERE s.id IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        ).fetchall()
        by_id = {r[0]: self._session(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def find(self, tool: str, external_id: str) -> Session | None:
        row = self.store.conn.execute(
            f"SELECT {self._SESSION_COLS} FROM sessions s WHERE s.source_tool = ? "
            "AND s.external_id = ?",
            (tool, external_id),
        ).fetchone()
        return None if row is None else self._session(row)

    def list(self, *, limit: int = 50, tool: str | None = None) -> list[Session]:
        where, params = ("WHERE s.source_tool = ?", [tool]) if tool else ("", [])
        rows = self.store.conn.execute(
            f"SELECT {self._SESSION_COLS} FROM sessions s {where} "
            "ORDER BY coalesce(s.ended_at, s.started_at) DESC, s.id DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [self._session(r) for r in rows]

    def count(self) -> tuple[int, int]:
        """(sessions, messages)."""
        conn = self.store.conn
        return (
            conn.execute("SELECT count(*) FROM sessions").get,
            conn.execute("SELECT count(*) FROM messages").get,
        )

    _MESSAGE_COLS = "id, session_id, idx, role, text, at, metadata"

    @staticmethod
    def _message(r: Sequence[Any]) -> Message:
        return Message(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6] or "{}"))

    def messages(
        self, session_id: int, start: int = 0, end: int | None = None
    ) -> builtins.list[Message]:
        """Messages ``start <= idx < end`` of a session, in order."""
        rows = self.store.conn.execute(
            f"SELECT {self._MESSAGE_COLS} FROM messages WHERE session_id = ? AND idx >= ? "
            "AND idx < ? ORDER BY idx",
            (session_id, start, end if end is not None else 2**62),
        ).fetchall()
        return [self._message(r) for r in rows]

    def messages_by_id(self, ids: Iterable[int]) -> dict[int, Message]:
        rows = self.store.conn.execute(
            f"SELECT {self._MESSAGE_COLS} FROM messages WHERE id IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps([int(i) for i in ids]),),
        )
        return {m.id: m for m in map(self._message, rows)}

    def indexes_of(self, message_ids: Iterable[int]) -> dict[int, int]:
        """Message id → its index in its conversation."""
        return dict(
            self.store.conn.execute(
                "SELECT id, idx FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted({int(i) for i in message_ids})),),
            )
        )

    def origins(self) -> dict[tuple[str, str], str | None]:
        """(tool, external id) → the file each conversation was read from."""
        out: dict[tuple[str, str], str | None] = {}
        for tool, ext, meta in self.store.conn.execute(
            "SELECT source_tool, external_id, metadata FROM sessions"
        ):
            try:
                out[(tool, ext)] = json.loads(meta or "{}").get("origin")
            except ValueError:
                out[(tool, ext)] = None
        return out

    def conversation_memories(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """(tool, external id) → the live memory that stands for that conversation."""
        rows: list[tuple[int, str, str]] = list(
            self.store.conn.execute(
                "SELECT id, source, source_id FROM memories WHERE archived = 0 "
                "AND superseded_by IS NULL AND (source, source_id) IN (SELECT 'chat:' || "
                "json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))",
                (json.dumps([list(k) for k in keys]),),
            )
        )
        return {(src.split(":", 1)[1], sid): mid for mid, src, sid in rows}

    def memories_of(self, session_id: int) -> builtins.list[tuple[int, int | None]]:
        """(memory id, message index) of the memories extracted from a session."""
        return list(
            self.store.conn.execute(
                "SELECT memory_id, message_idx FROM session_memories WHERE session_id = ? "
                "ORDER BY message_idx, memory_id",
                (session_id,),
            )
        )

    def generation(self) -> int:
        """Moves with every write to sessions or messages."""
        return generation(self.store.conn)

    def matrix(self) -> MessageMatrix | None:
        """Exact-search matrices of message and session vectors, rebuilt when rows changed."""
        emb = self.store.embedder
        if emb is None:
            return None
        conn = self.store.conn
        key = (emb.model_id, generation(conn))
        with self._matrix_lock:
            if self._matrix is None or self._matrix.key != key:
                self._matrix = MessageMatrix.load(conn, emb.model_id, emb.dim, key)
            return self._matrix


@dataclass
class MessageMatrix:
    """Message and session-summary vectors as dense matrices for exact cosine search."""

    key: tuple[Any, ...]
    message_ids: np.ndarray
    message_sessions: np.ndarray
    messages: np.ndarray
    session_ids: np.ndarray
    sessions: np.ndarray
    passage_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    passage_sessions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    passages: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    built_at: float = field(default_factory=time.time)

    @classmethod
    def load(cls, conn: Any, model_id: str, dim: int, key: tuple[Any, ...]) -> MessageMatrix:
        def read(sql: str) -> tuple[list[int], list[int], np.ndarray]:
            ids: list[int] = []
            extra: list[int] = []
            blobs: list[bytes] = []
            for r in conn.execute(sql, (model_id, dim * 4)):
                ids.append(r[0])
                extra.append(r[1])
                blobs.append(r[2])
            mat = (
                np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)
                if blobs
                else np.zeros((0, dim), dtype=np.float32)
            )
            return ids, extra, mat

        mids, msess, mmat = read(
            "SELECT id, session_id, embedding FROM messages WHERE model_id = ? "
            "AND length(embedding) = ? ORDER BY id"
        )
        sids, _, smat = read(
            "SELECT id, 0, embedding FROM sessions WHERE model_id = ? "
            "AND length(embedding) = ? ORDER BY id"
        )
        pids, psess, pmat = read(
            "SELECT id, session_id, embedding FROM passages WHERE model_id = ? "
            "AND length(embedding) = ? ORDER BY id"
        )
        return cls(
            key=key,
            passage_ids=np.asarray(pids, dtype=np.int64),
            passage_sessions=np.asarray(psess, dtype=np.int64),
            passages=pmat,
            message_ids=np.asarray(mids, dtype=np.int64),
            message_sessions=np.asarray(msess, dtype=np.int64),
            messages=mmat,
            session_ids=np.asarray(sids, dtype=np.int64),
            sessions=smat,
        )
