"""What the contradiction scanner asks of the store: which memories are new, which pairs it
must never compare (a memory and its own source, two versions of one source), and which
pairs were already recorded."""

from __future__ import annotations

import json
from collections.abc import Sequence

from storage.repository import MemoryStore

BACKLOG = "contradictions-backlog"
"""Cursor source holding the id after which memories still wait for the scan that follows
their write (an ingest's scan that ran out of time goes on from there next time)."""


def max_memory_id(store: MemoryStore) -> int:
    """The highest memory id so far (0 in an empty store): new memories come after it."""
    row = store.conn.execute("SELECT coalesce(max(id), 0) FROM memories").fetchone()
    return int(row[0])


def scan_behind(store: MemoryStore) -> bool:
    """Whether a contradiction scan stopped before the newest memory (the next scan takes up
    what it left)."""
    kept = store.cursors.get(BACKLOG).get("after")
    return kept is not None and int(kept) < max_memory_id(store)


def ids_after(store: MemoryStore, after_id: int) -> list[int]:
    """Ids of the memories added after ``after_id`` that hold now, oldest first."""
    return [
        r[0]
        for r in store.conn.execute(
            "SELECT id FROM memories WHERE id > ? AND archived = 0 AND superseded_by IS NULL "
            "ORDER BY id",
            (after_id,),
        )
    ]


def lineage(store: MemoryStore, ids: Sequence[int]) -> set[tuple[int, int]]:
    """Pairs (lo, hi) among and around ``ids`` that are one source: a DERIVED_FROM or
    SUPERSEDES edge either way, or one memory superseding the other."""
    key = json.dumps([int(i) for i in ids])
    out: set[tuple[int, int]] = set()
    for a, b in store.conn.execute(
        "SELECT source_id, target_id FROM edges WHERE type IN ('DERIVED_FROM', 'SUPERSEDES') "
        "AND (source_id IN (SELECT value FROM json_each(?1)) "
        "OR target_id IN (SELECT value FROM json_each(?1)))",
        (key,),
    ):
        out.add((min(a, b), max(a, b)))
    for a, b in store.conn.execute(
        "SELECT id, superseded_by FROM memories WHERE superseded_by IS NOT NULL "
        "AND (id IN (SELECT value FROM json_each(?1)) "
        "OR superseded_by IN (SELECT value FROM json_each(?1)))",
        (key,),
    ):
        out.add((min(a, b), max(a, b)))
    return out


def recorded_pairs(store: MemoryStore, ids: Sequence[int]) -> set[tuple[int, int]]:
    """Pairs (lo, hi) touching ``ids`` that already have a contradiction, whatever its status
    (a dismissed pair is never opened again)."""
    key = json.dumps([int(i) for i in ids])
    return {
        (a, b)
        for a, b in store.conn.execute(
            "SELECT memory_a, memory_b FROM contradictions WHERE "
            "memory_a IN (SELECT value FROM json_each(?1)) "
            "OR memory_b IN (SELECT value FROM json_each(?1))",
            (key,),
        )
    }


def decisions_numbered(store: MemoryStore, numbers: Sequence[int]) -> dict[int, list[int]]:
    """Current decision memories by their record number (``metadata.number``)."""
    out: dict[int, list[int]] = {}
    if not numbers:
        return out
    for mid, n in store.conn.execute(
        "SELECT id, json_extract(metadata, '$.number') AS n FROM memories "
        "WHERE kind = 'decision' AND archived = 0 AND superseded_by IS NULL "
        "AND n IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted({int(x) for x in numbers})),),
    ):
        out.setdefault(int(n), []).append(mid)
    return out
