"""Bulk reads for consolidation: light rows of every live memory, anchors, edges and use.

One query each, so planning over 100k memories costs a few scans, not 100k lookups.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from storage.repository import MemoryStore


@dataclass(frozen=True)
class Brief:
    """What consolidation needs to know of one unarchived memory."""

    id: int
    kind: str
    text: str
    source: str
    source_id: str | None
    index_label: str | None
    importance: float
    decay_score: float
    created_at: float
    updated_at: float
    valid_from: float
    valid_to: float | None
    last_accessed: float | None
    retrieval_count: int
    citation_count: int
    ignore_count: int
    superseded_by: int | None
    fact_key: str | None


def live_briefs(store: MemoryStore) -> list[Brief]:
    """Every unarchived memory (superseded and expired ones included), by id."""
    return [
        Brief(*row)
        for row in store.conn.execute(
            "SELECT id, kind, text, source, source_id, index_label, importance, decay_score, "
            "created_at, updated_at, valid_from, valid_to, last_accessed, retrieval_count, "
            "citation_count, ignore_count, superseded_by, fact_key FROM memories "
            "WHERE archived = 0 ORDER BY id"
        )
    ]


def anchors_by_type(store: MemoryStore, anchor_type: str) -> dict[int, set[str]]:
    """memory id → its anchors of one type (unarchived memories only)."""
    out: dict[int, set[str]] = defaultdict(set)
    for mid, value in store.conn.execute(
        "SELECT a.memory_id, a.value FROM anchors a JOIN memories m ON m.id = a.memory_id "
        "WHERE a.type = ? AND m.archived = 0",
        (anchor_type,),
    ):
        out[mid].add(value)
    return dict(out)


def session_links(store: MemoryStore) -> dict[int, set[int]]:
    """memory id → the conversation sessions it was learned from."""
    out: dict[int, set[int]] = defaultdict(set)
    for sid, mid in store.conn.execute("SELECT session_id, memory_id FROM session_memories"):
        out[mid].add(sid)
    return dict(out)


def linked_pairs(store: MemoryStore) -> set[tuple[int, int]]:
    """Unordered pairs (low, high) joined by an edge of any type."""
    return {
        (min(a, b), max(a, b))
        for a, b in store.conn.execute("SELECT source_id, target_id FROM edges")
    }


def open_contradiction_ids(store: MemoryStore) -> set[int]:
    """Memories on either side of an open contradiction."""
    out: set[int] = set()
    for a, b in store.conn.execute(
        "SELECT memory_a, memory_b FROM contradictions WHERE status = 'open'"
    ):
        out.update((a, b))
    return out


CONTEXT_PREFIX = "context "
"""How the context engine names what it served: ``context <path>``."""


def servings(store: MemoryStore) -> dict[str, list[float]]:
    """When memories were served (one batch of retrievals logged together is one serving),
    sorted: per file the context engine served them for, and under ``""`` all of them."""
    out: dict[str, list[float]] = defaultdict(list)
    for at, context in store.conn.execute(
        "SELECT DISTINCT at, context FROM access_log WHERE kind = 'retrieval' ORDER BY at"
    ):
        out[""].append(at)
        if isinstance(context, str) and context.startswith(CONTEXT_PREFIX):
            out[context[len(CONTEXT_PREFIX) :]].append(at)
    return dict(out)


@dataclass(frozen=True)
class CoAccess:
    """How often memories were used in one context (rows logged together for one context)."""

    contexts: int  # contexts counted
    single: dict[int, int]  # memory → contexts it was used in
    pairs: dict[tuple[int, int], int]  # (low, high) → contexts both were used in


def co_accessed(store: MemoryStore, *, since: float, max_group: int) -> CoAccess:
    """Use of unarchived memories in contexts since ``since``; contexts with more than
    ``max_group`` memories count for nothing."""
    groups: dict[tuple[str, float], set[int]] = defaultdict(set)
    for ctx, at, mid in store.conn.execute(
        "SELECT l.context, l.at, l.memory_id FROM access_log l JOIN memories m "
        "ON m.id = l.memory_id WHERE l.context IS NOT NULL AND l.at >= ? AND m.archived = 0",
        (since,),
    ):
        groups[(ctx, at)].add(mid)
    single: dict[int, int] = defaultdict(int)
    pairs: dict[tuple[int, int], int] = defaultdict(int)
    contexts = 0
    for ids in groups.values():
        if not 2 <= len(ids) <= max_group:
            continue
        contexts += 1
        ordered = sorted(ids)
        for i, a in enumerate(ordered):
            single[a] += 1
            for b in ordered[i + 1 :]:
                pairs[(a, b)] += 1
    return CoAccess(contexts, dict(single), dict(pairs))
