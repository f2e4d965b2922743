"""Searching conversations: globally over every message, or session first (seed 004).

Session first: find the best sessions by their summaries, search messages only inside them,
add each hit's neighbouring messages as context, and cross-link the sessions most like the
ones found. Both paths fuse FTS5 bm25 with exact cosine similarity the way memory search does.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from storage.errors import InvalidInput
from storage.neighbours import Key, rescore
from storage.repository import MemoryStore
from storage.search import DEFAULT_ALPHA, MIN_SIMILARITY, fuse
from storage.sessions import Message, Session, SessionStore, sessions_of
from storage.text import fts_or, fts_terms

MODES = ("hybrid", "keyword", "vector")
# bm25 weights of sessions_fts: title, summary, identifier terms, the messages themselves
SESSION_BM25 = "2.0, 1.0, 0.5, 0.5"


@dataclass
class MessageHit:
    message: Message
    score: float
    session: Session | None = None
    session_score: float | None = None
    neighbours: list[Message] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.message.to_dict(),
            "score": round(self.score, 6),
            "session": None if self.session is None else self.session.to_dict(),
            "sessionScore": None if self.session_score is None else round(self.session_score, 6),
            "neighbours": [n.to_dict() for n in self.neighbours],
        }


@dataclass
class SessionHit:
    session: Session
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.session.to_dict(), "score": round(self.score, 6)}


@dataclass
class SessionFirstResult:
    """Ranked messages from the best sessions, with those sessions and cross-links."""

    hits: list[MessageHit]
    sessions: list[SessionHit]
    cross_links: list[SessionHit]
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "hits": [h.to_dict() for h in self.hits],
            "sessions": [s.to_dict() for s in self.sessions],
            "crossLinks": [s.to_dict() for s in self.cross_links],
            "elapsedMs": round(self.elapsed_ms, 2),
        }


def _check(query: str, k: int, mode: str) -> None:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the search query is empty")
    if not isinstance(k, int) or k <= 0:
        raise InvalidInput("k must be at least 1")
    if mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")


def _keyword(
    store: MemoryStore,
    table: str,
    weights: str,
    query: str,
    k: int,
    restrict_sql: str = "",
    restrict: list[Any] | None = None,
) -> list[tuple[int, float]]:
    q = fts_or(fts_terms(query))
    if q is None:
        return []
    if not restrict_sql:
        sql = (
            f"SELECT rowid, -bm25({table}, {weights}) AS s FROM {table} WHERE {table} MATCH ? "
            f"ORDER BY bm25({table}, {weights}) LIMIT ?"
        )
        return [(r[0], r[1]) for r in store.conn.execute(sql, (q, k))]
    # Match once, then filter: a rowid restriction pushed into FTS5 re-runs the MATCH per row.
    sql = (
        f"WITH hits AS MATERIALIZED (SELECT rowid AS id, -bm25({table}, {weights}) AS s "
        f"FROM {table} WHERE {table} MATCH ?) "
        f"SELECT id, s FROM hits WHERE {restrict_sql} ORDER BY s DESC LIMIT ?"
    )
    return [(r[0], r[1]) for r in store.conn.execute(sql, (q, *(restrict or []), k))]


def _top(ids: np.ndarray, sims: np.ndarray, k: int) -> list[tuple[int, float]]:
    if len(ids) == 0:
        return []
    k = min(k, len(ids))
    part = np.argpartition(-sims, k - 1)[:k]
    order = part[np.argsort(-sims[part], kind="stable")]
    return [(int(ids[i]), float(sims[i])) for i in order if float(sims[i]) >= MIN_SIMILARITY]


def _query_vector(sessions: SessionStore, query: str, mode: str) -> np.ndarray | None:
    if mode == "keyword":
        return None
    emb = sessions.store.embedder
    if emb is None:
        if mode == "vector":
            raise InvalidInput("vector search needs an embedding model")
        return None
    return emb.embed([query])[0]


def _hybrid_candidates(
    sessions: SessionStore,
    unit: str,
    query: str,
    k: int,
    mode: str,
    qv: np.ndarray | None,
    session_ids: list[int] | None,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Keyword and vector candidates among ``unit`` rows (messages or passages), optionally of
    some sessions only."""
    kw: list[tuple[int, float]] = []
    vec: list[tuple[int, float]] = []
    if mode in ("hybrid", "keyword"):
        if session_ids is None:
            kw = _keyword(sessions.store, f"{unit}_fts", "1.0, 0.5", query, k)
        else:
            kw = _keyword(
                sessions.store,
                f"{unit}_fts",
                "1.0, 0.5",
                query,
                k,
                f"id IN (SELECT id FROM {unit} WHERE session_id IN "
                "(SELECT value FROM json_each(?)))",
                [json.dumps(session_ids)],
            )
    mat = sessions.matrix() if qv is not None else None
    if mat is not None and qv is not None:
        ids, owners, vectors = (
            (mat.message_ids, mat.message_sessions, mat.messages)
            if unit == "messages"
            else (mat.passage_ids, mat.passage_sessions, mat.passages)
        )
        if len(ids):
            if session_ids is None:
                vec = _top(ids, vectors @ qv, k)
            else:
                mask = np.isin(owners, np.asarray(session_ids, dtype=np.int64))
                vec = _top(ids[mask], vectors[mask] @ qv, k)
    return kw, vec


_UNIT_POSITION = {
    # id, session, message index of a message or a passage
    "messages": "SELECT m.id, m.session_id, m.idx FROM messages m",
    "passages": "SELECT p.id, m.session_id, m.idx FROM passages p "
    "JOIN messages m ON m.id = p.message_id",
}


def _with_context(
    sessions: SessionStore,
    unit: str,
    fused: list[tuple[int, float, dict[str, float]]],
    kw: list[tuple[int, float]],
    vec: list[tuple[int, float]],
    alpha: float,
    qv: np.ndarray | None,
) -> list[tuple[int, float, dict[str, float]]]:
    """A message (or passage) scored with the messages just before and after it in its
    session (:mod:`storage.neighbours`): a reply is found through the question it answers."""
    conn = sessions.store.conn
    head = _UNIT_POSITION[unit]
    alias = "m" if unit == "messages" else "p"

    def positions(ids: list[int]) -> dict[int, Key]:
        rows = conn.execute(
            f"{head} WHERE {alias}.id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def neighbours(keys: list[Key]) -> dict[int, Key]:
        rows = conn.execute(
            f"{head} JOIN json_each(?) j ON m.session_id = j.value ->> 0 AND m.idx = j.value ->> 1",
            (json.dumps([list(k) for k in keys]),),
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def similarity(ids: list[int]) -> dict[int, float]:
        mat = sessions.matrix() if qv is not None else None
        if mat is None or qv is None:
            return {}
        if unit == "messages":
            all_ids, vectors = mat.message_ids, mat.messages
        else:
            all_ids, vectors = mat.passage_ids, mat.passages
        mask = np.isin(all_ids, np.asarray(ids, dtype=np.int64))
        sims = vectors[mask] @ qv
        return {int(i): float(s) for i, s in zip(all_ids[mask], sims) if float(s) >= MIN_SIMILARITY}

    return rescore(
        fused,
        kw,
        vec,
        alpha=alpha,
        positions=positions,
        neighbours=neighbours,
        similarity=similarity,
    )


def search_messages(
    store: MemoryStore | SessionStore,
    query: str,
    *,
    k: int = 10,
    mode: str = "hybrid",
    alpha: float = DEFAULT_ALPHA,
    session_ids: list[int] | None = None,
    query_vector: np.ndarray | None = None,
    context: bool = True,
) -> list[MessageHit]:
    """Global message search (or within ``session_ids``), best first. ``context``: score a
    message with its neighbours in the session too (hybrid search only)."""
    _check(query, k, mode)
    sessions = store if isinstance(store, SessionStore) else sessions_of(store)
    qv = query_vector if query_vector is not None else _query_vector(sessions, query, mode)
    pool = max(50, 3 * k)
    kw, vec = _hybrid_candidates(sessions, "messages", query, pool, mode, qv, session_ids)
    fused = fuse(kw, vec, fusion="weighted", alpha=alpha)
    if context and mode == "hybrid":
        fused = _with_context(sessions, "messages", fused, kw, vec, alpha, qv)
    fused = fused[:k]
    msgs = sessions.messages_by_id([f[0] for f in fused])
    by_session = {s.id: s for s in sessions.get_many({m.session_id for m in msgs.values()})}
    return [
        MessageHit(msgs[mid], score, by_session.get(msgs[mid].session_id))
        for mid, score, _ in fused
        if mid in msgs
    ]


def search_sessions(
    store: MemoryStore | SessionStore,
    query: str,
    *,
    k: int = 5,
    mode: str = "hybrid",
    alpha: float = DEFAULT_ALPHA,
    query_vector: np.ndarray | None = None,
) -> list[SessionHit]:
    """Sessions whose title and summary match the query, best first."""
    _check(query, k, mode)
    sessions = store if isinstance(store, SessionStore) else sessions_of(store)
    qv = query_vector if query_vector is not None else _query_vector(sessions, query, mode)
    pool = max(20, 3 * k)
    kw = (
        _keyword(sessions.store, "sessions_fts", SESSION_BM25, query, pool)
        if mode in ("hybrid", "keyword")
        else []
    )
    vec: list[tuple[int, float]] = []
    if qv is not None:
        mat = sessions.matrix()
        if mat is not None and len(mat.session_ids):
            vec = _top(mat.session_ids, mat.sessions @ qv, pool)
    fused = fuse(kw, vec, fusion="weighted", alpha=alpha)[:k]
    found = {s.id: s for s in sessions.get_many([f[0] for f in fused])}
    return [SessionHit(found[sid], score) for sid, score, _ in fused if sid in found]


def _cross_links(sessions: SessionStore, chosen: list[int], limit: int) -> list[tuple[int, float]]:
    """Sessions whose summaries are closest to the centroid of the chosen ones."""
    mat = sessions.matrix()
    if limit <= 0 or mat is None or not len(mat.session_ids) or not chosen:
        return []
    mask = np.isin(mat.session_ids, np.asarray(chosen, dtype=np.int64))
    if not mask.any():
        return []
    centroid = mat.sessions[mask].mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    if norm == 0.0:
        return []
    sims = mat.sessions[~mask] @ (centroid / norm)
    return _top(mat.session_ids[~mask], sims, limit)


def session_first(
    store: MemoryStore | SessionStore,
    query: str,
    *,
    k: int = 10,
    top_sessions: int = 5,
    per_session: int = 5,
    neighbours: int = 1,
    cross_links: int = 3,
    mode: str = "hybrid",
    alpha: float = DEFAULT_ALPHA,
    session_weight: float = 0.3,
    query_vector: np.ndarray | None = None,
) -> SessionFirstResult:
    """Seed 004's contextual retrieval: sessions by summary → messages inside them →
    neighbouring messages → related sessions. Enough sessions are opened to fill ``k``."""
    _check(query, k, mode)
    if not 0.0 <= session_weight <= 1.0:
        raise InvalidInput("session_weight must be between 0 and 1")
    started = time.perf_counter()
    sessions = store if isinstance(store, SessionStore) else sessions_of(store)
    qv = query_vector if query_vector is not None else _query_vector(sessions, query, mode)
    per_session = max(1, per_session)
    n_sessions = max(top_sessions, math.ceil(k / per_session))
    found = search_sessions(sessions, query, k=n_sessions, mode=mode, alpha=alpha, query_vector=qv)
    hits: list[MessageHit] = []
    if found:
        best = found[0].score or 1.0
        s_score = {h.session.id: h.score / best for h in found}
        s_of = {h.session.id: h.session for h in found}
        ids = list(s_score)
        kw, vec = _hybrid_candidates(
            sessions, "messages", query, max(50, per_session * len(ids) * 3), mode, qv, ids
        )
        fused = fuse(kw, vec, fusion="weighted", alpha=alpha)
        msgs = sessions.messages_by_id([f[0] for f in fused])
        taken: dict[int, int] = {}
        for mid, score, _ in fused:
            m = msgs.get(mid)
            if m is None or taken.get(m.session_id, 0) >= per_session:
                continue
            taken[m.session_id] = taken.get(m.session_id, 0) + 1
            ss = s_score[m.session_id]
            hits.append(
                MessageHit(
                    m,
                    (1 - session_weight) * score + session_weight * ss,
                    s_of[m.session_id],
                    ss,
                )
            )
        hits.sort(key=lambda h: (-h.score, h.message.id))
        hits = hits[:k]
        if neighbours > 0:
            for h in hits:
                m = h.message
                h.neighbours = [
                    n
                    for n in sessions.messages(
                        m.session_id, m.idx - neighbours, m.idx + neighbours + 1
                    )
                    if n.idx != m.idx
                ]
    links = _cross_links(sessions, [h.session.id for h in found], cross_links)
    linked = {s.id: s for s in sessions.get_many([sid for sid, _ in links])}
    return SessionFirstResult(
        hits=hits,
        sessions=found,
        cross_links=[SessionHit(linked[sid], sc) for sid, sc in links if sid in linked],
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


def summary_ranking(
    store: MemoryStore | SessionStore,
    query_vector: np.ndarray,
    *,
    k: int = 50,
    before: float | None = None,
) -> list[tuple[Session, float]]:
    """Sessions by the cosine similarity of their title and summary to the query, best first.
    ``before``: only sessions over before that instant (a summary speaks of the whole
    conversation, so one still going on would tell what was said later)."""
    sessions = store if isinstance(store, SessionStore) else sessions_of(store)
    mat = sessions.matrix()
    if mat is None or not len(mat.session_ids) or k <= 0:
        return []
    ids, vectors = mat.session_ids, mat.sessions
    if before is not None:
        done = [
            r[0]
            for r in sessions.store.conn.execute(
                "SELECT s.id FROM sessions s WHERE coalesce(s.started_at, 0) < ? AND coalesce("
                "s.ended_at, (SELECT max(m.at) FROM messages m WHERE m.session_id = s.id), "
                "s.started_at, 0) < ?",
                (before, before),
            )
        ]
        mask = np.isin(ids, np.asarray(done, dtype=np.int64))
        ids, vectors = ids[mask], vectors[mask]
    top = _top(ids, vectors @ query_vector, k)
    found = {s.id: s for s in sessions.get_many([sid for sid, _ in top])}
    return [(found[sid], sim) for sid, sim in top if sid in found]


@dataclass
class PassageHit:
    """A passage of a message, with the session it belongs to."""

    passage_id: int
    message_id: int
    session_id: int
    ord: int
    start: int
    text: str
    score: float
    keyword: float = 0.0
    similarity: float | None = None


def _said_later(sessions: SessionStore, session_ids: list[int], at: float) -> set[int]:
    """Passages of messages said at or after ``at`` in sessions that started before it: a
    conversation going on at that instant is known only up to it."""
    return {
        r[0]
        for r in sessions.store.conn.execute(
            "SELECT p.id FROM passages p JOIN messages m ON m.id = p.message_id "
            "JOIN sessions s ON s.id = m.session_id "
            "WHERE s.id IN (SELECT value FROM json_each(?)) "
            "AND coalesce(s.ended_at, m.at) >= ? AND m.at >= ?",
            (json.dumps(session_ids), at, at),
        )
    }


@dataclass
class PassageLists:
    """What a passage search ranked: the fused list and each of its sources on its own (bm25
    over passages, cosine similarity), every one best first and as long as asked."""

    fused: list[PassageHit] = field(default_factory=list)
    keyword: list[PassageHit] = field(default_factory=list)
    vector: list[PassageHit] = field(default_factory=list)


def search_passages(
    store: MemoryStore | SessionStore,
    query: str,
    *,
    k: int = 50,
    mode: str = "hybrid",
    alpha: float = DEFAULT_ALPHA,
    query_vector: np.ndarray | None = None,
    before: float | None = None,
    context: bool = False,
) -> list[PassageHit]:
    """Passages of every conversation, best first: bm25 over ``passages_fts`` fused with exact
    cosine similarity. ``before``: only sessions that started before that instant, and only
    what was said in them before it. ``context``: score a passage with the messages before
    and after its own too (hybrid search only). Off by default: in
    :func:`predictive.retrieval.find` it raised the dev set's recall@5 (0.925 → 0.950) but
    lowered its MRR (0.794 → 0.722; bench/README.md, issue 10)."""
    return passage_lists(
        store,
        query,
        k=k,
        mode=mode,
        alpha=alpha,
        query_vector=query_vector,
        before=before,
        context=context,
    ).fused


def passage_lists(
    store: MemoryStore | SessionStore,
    query: str,
    *,
    k: int = 50,
    mode: str = "hybrid",
    alpha: float = DEFAULT_ALPHA,
    query_vector: np.ndarray | None = None,
    before: float | None = None,
    context: bool = False,
) -> PassageLists:
    """:func:`search_passages`, with the keyword and vector rankings it fused kept apart."""
    _check(query, k, mode)
    sessions = store if isinstance(store, SessionStore) else sessions_of(store)
    qv = query_vector if query_vector is not None else _query_vector(sessions, query, mode)
    allowed: list[int] | None = None
    if before is not None:
        allowed = [
            r[0]
            for r in sessions.store.conn.execute(
                "SELECT id FROM sessions WHERE coalesce(started_at, 0) < ?", (before,)
            )
        ]
        if not allowed:
            return PassageLists()
    kw, vec = _hybrid_candidates(sessions, "passages", query, k, mode, qv, allowed)
    if before is not None and allowed is not None:
        later = _said_later(sessions, allowed, before)
        kw = [h for h in kw if h[0] not in later]
        vec = [h for h in vec if h[0] not in later]
    fused = fuse(kw, vec, fusion="weighted", alpha=alpha)
    if context and mode == "hybrid":
        fused = _with_context(sessions, "passages", fused, kw, vec, alpha, qv)
    fused = fused[:k]
    if not fused:
        return PassageLists()
    wanted = {f[0] for f in fused} | {h[0] for h in kw} | {h[0] for h in vec}
    rows: dict[int, tuple[int, int, int, int, int, str]] = {
        r[0]: r
        for r in sessions.store.conn.execute(
            "SELECT id, message_id, session_id, ord, start, text FROM passages WHERE id IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(sorted(wanted)),),
        )
    }
    sims = dict(vec)
    top_bm25 = max((s for _, s in kw), default=0.0) or 1.0
    return PassageLists(
        fused=[
            PassageHit(
                *rows[pid], score=score, keyword=comps.get("keyword", 0.0), similarity=sims.get(pid)
            )
            for pid, score, comps in fused
            if pid in rows
        ],
        keyword=[
            PassageHit(
                *rows[pid], score=s / top_bm25, keyword=s / top_bm25, similarity=sims.get(pid)
            )
            for pid, s in kw
            if pid in rows
        ],
        vector=[PassageHit(*rows[pid], score=s, similarity=s) for pid, s in vec if pid in rows],
    )
