"""Candidate contradictions found by subject, not by wording: pending until a judge reads them
(never shown in a context while pending), then marked a conflict or compatible. The same two
texts are one pair whatever their ids: a pair judged, resolved or dismissed is not proposed
again when the same texts come back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from storage import db as dbmod
from storage.repository import MemoryStore
from storage.rows import now

PENDING = "pending"
CONFLICT = "conflict"
COMPATIBLE = "compatible"


@dataclass(frozen=True)
class CandidateRow:
    """A stored candidate pair: ``older`` may be changed by ``newer``."""

    id: int
    older: int
    newer: int
    score: float
    why: str | None
    status: str
    reason: str | None
    proposed_at: float
    judged_at: float | None


def texts_key(hash_a: str, hash_b: str) -> str:
    """The key of two texts, whatever their order."""
    return "|".join(sorted((hash_a, hash_b)))


def _hashes(store: MemoryStore, ids: Sequence[int]) -> dict[int, str]:
    key = json.dumps([int(i) for i in ids])
    return {
        r[0]: r[1]
        for r in store.conn.execute(
            "SELECT id, content_hash FROM memories WHERE id IN (SELECT value FROM json_each(?))",
            (key,),
        )
    }


def settled_texts(store: MemoryStore, ids: Sequence[int]) -> set[str]:
    """Keys of the text pairs touching the texts of ``ids`` that were settled: a
    contradiction resolved or dismissed, a candidate judged either way."""
    hashes = sorted(set(_hashes(store, ids).values()))
    if not hashes:
        return set()
    key = json.dumps(hashes)
    out = {
        texts_key(a, b)
        for a, b in store.conn.execute(
            "SELECT ma.content_hash, mb.content_hash FROM contradictions c "
            "JOIN memories ma ON ma.id = c.memory_a JOIN memories mb ON mb.id = c.memory_b "
            "WHERE c.status IN ('resolved', 'dismissed') AND (ma.content_hash IN "
            "(SELECT value FROM json_each(?1)) OR mb.content_hash IN (SELECT value FROM "
            "json_each(?1)))",
            (key,),
        )
    }
    for (texts,) in store.conn.execute(
        "SELECT texts FROM conflict_candidates WHERE status <> 'pending'"
        " AND (substr(texts, 1, instr(texts, '|') - 1) IN (SELECT value FROM json_each(?1))"
        " OR substr(texts, instr(texts, '|') + 1) IN (SELECT value FROM json_each(?1)))",
        (key,),
    ):
        out.add(texts)
    return out


def pair_key(store: MemoryStore, a: int, b: int) -> str | None:
    """The texts key of two memories (None when one is gone)."""
    hashes = _hashes(store, [a, b])
    if a not in hashes or b not in hashes:
        return None
    return texts_key(hashes[a], hashes[b])


def proposed_pairs(store: MemoryStore, ids: Sequence[int]) -> set[tuple[int, int]]:
    """Pairs (lo, hi) touching ``ids`` already proposed, whatever became of them."""
    key = json.dumps([int(i) for i in ids])
    return {
        (min(a, b), max(a, b))
        for a, b in store.conn.execute(
            "SELECT older, newer FROM conflict_candidates WHERE "
            "older IN (SELECT value FROM json_each(?1)) OR newer IN (SELECT value FROM "
            "json_each(?1))",
            (key,),
        )
    }


def propose(store: MemoryStore, older: int, newer: int, score: float, why: str) -> int | None:
    """Record a pending candidate (one short write); None when the pair or its texts are
    known already, or a memory is gone."""
    texts = pair_key(store, older, newer)
    if texts is None:
        return None
    conn = store.conn
    with dbmod.immediate(conn):
        known = conn.execute(
            "SELECT 1 FROM conflict_candidates WHERE texts = ? OR (older = ? AND newer = ?) "
            "OR (older = ? AND newer = ?)",
            (texts, older, newer, newer, older),
        ).fetchone()
        if known:
            return None
        conn.execute(
            "INSERT INTO conflict_candidates(older, newer, texts, score, why, proposed_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (older, newer, texts, float(score), why, now()),
        )
        return int(conn.last_insert_rowid())


def judged(store: MemoryStore, older: int, newer: int, conflict: bool, reason: str | None) -> None:
    """Record a judge's verdict on a pair (proposed now if it was not pending yet)."""
    texts = pair_key(store, older, newer)
    if texts is None:
        return
    status = CONFLICT if conflict else COMPATIBLE
    conn = store.conn
    with dbmod.immediate(conn):
        conn.execute(
            "INSERT INTO conflict_candidates(older, newer, texts, score, why, status, reason, "
            "proposed_at, judged_at) VALUES (?, ?, ?, 0, NULL, ?, ?, ?, ?) "
            "ON CONFLICT(older, newer) DO UPDATE SET status = excluded.status, "
            "reason = excluded.reason, judged_at = excluded.judged_at",
            (older, newer, texts, status, reason, now(), now()),
        )


def pending(store: MemoryStore, limit: int = 50) -> list[CandidateRow]:
    """Pending candidates whose memories both still hold, best first."""
    return [
        CandidateRow(*r)
        for r in store.conn.execute(
            "SELECT c.id, c.older, c.newer, c.score, c.why, c.status, c.reason, c.proposed_at, "
            "c.judged_at FROM conflict_candidates c "
            "JOIN memories a ON a.id = c.older JOIN memories b ON b.id = c.newer "
            "WHERE c.status = 'pending' AND a.archived = 0 AND b.archived = 0 "
            "AND a.superseded_by IS NULL AND b.superseded_by IS NULL "
            "ORDER BY c.score DESC, c.id LIMIT ?",
            (int(limit),),
        )
    ]


def count_pending(store: MemoryStore) -> int:
    row = store.conn.execute(
        "SELECT count(*) FROM conflict_candidates WHERE status = 'pending'"
    ).fetchone()
    return int(row[0]) if row else 0


def get(store: MemoryStore, candidate_id: int) -> CandidateRow | None:
    """One candidate pair by its id (None when there is none)."""
    row = store.conn.execute(
        "SELECT id, older, newer, score, why, status, reason, proposed_at, judged_at "
        "FROM conflict_candidates WHERE id = ?",
        (int(candidate_id),),
    ).fetchone()
    return None if row is None else CandidateRow(*row)
