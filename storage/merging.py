"""Folding memories into one and archiving many at once, keeping every trace (consolidation).

A merge moves the absorbed memories' anchors, artifacts, conversation links, usage counts and
edges onto the survivor, records where they came from in its metadata, links the survivor to
each of them (``DERIVED_FROM``) and archives them with the reason ``merged into #N``; restoring
one (``MemoryStore.restore``) brings it back as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from storage import db as dbmod
from storage.errors import InvalidInput
from storage.graph import insert_edge
from storage.models import EdgeType
from storage.redact import redact
from storage.repository import MemoryStore
from storage.rows import bump, fts_refresh, require

MERGE_EDGE = EdgeType.DERIVED_FROM
"""The edge from a survivor to each memory folded into it."""


def merge_memories(
    store: MemoryStore, survivor: int, absorbed: Sequence[int], *, at: float, reason: str = ""
) -> None:
    """Fold ``absorbed`` into ``survivor`` in one transaction (see the module docstring)."""
    others = [int(i) for i in dict.fromkeys(absorbed) if int(i) != survivor]
    if not others:
        raise InvalidInput("a merge needs at least one other memory")
    conn = store.conn
    with dbmod.immediate(conn):
        for mid in (survivor, *others):
            require(conn, mid)
        bump(conn)
        marks = ",".join("?" * len(others))
        conn.execute(
            "INSERT OR IGNORE INTO anchors(memory_id, type, value) "
            f"SELECT ?, type, value FROM anchors WHERE memory_id IN ({marks})",
            (survivor, *others),
        )
        conn.execute(
            "INSERT OR IGNORE INTO artifacts(memory_id, type, ref, title) "
            f"SELECT ?, type, ref, title FROM artifacts WHERE memory_id IN ({marks})",
            (survivor, *others),
        )
        conn.execute(
            "INSERT OR IGNORE INTO session_memories(session_id, memory_id, message_idx) "
            f"SELECT session_id, ?, message_idx FROM session_memories WHERE memory_id IN ({marks})",
            (survivor, *others),
        )
        conn.execute(
            "INSERT OR IGNORE INTO category_members(category_id, memory_id, added_at) "
            f"SELECT category_id, ?, ? FROM category_members WHERE memory_id IN ({marks})",
            (survivor, at, *others),
        )
        group = {survivor, *others}
        for src, dst, etype, strength, rev, meta in conn.execute(
            "SELECT source_id, target_id, type, strength, reverse, metadata FROM edges "
            f"WHERE source_id IN ({marks}) OR target_id IN ({marks})",
            (*others, *others),
        ).fetchall():
            a = survivor if src in group else src
            b = survivor if dst in group else dst
            if a != b:
                conn.execute(
                    "INSERT OR IGNORE INTO edges(source_id, target_id, type, strength, "
                    "reverse, created_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (a, b, etype, strength, rev, at, meta),
                )
        rows: list[tuple[int, str, str, int, int, int, float | None, float]] = list(
            conn.execute(
                "SELECT id, source, source_id, retrieval_count, citation_count, ignore_count, "
                f"last_accessed, importance FROM memories WHERE id IN ({marks})",
                others,
            )
        )
        meta_row: tuple[str | None, float | None, float] = conn.execute(
            "SELECT metadata, last_accessed, importance FROM memories WHERE id = ?", (survivor,)
        ).get
        metadata = json.loads(meta_row[0] or "{}")
        merged = list(metadata.get("merged", []))
        merged += [{"id": r[0], "source": r[1], "source_id": r[2]} for r in rows]
        metadata["merged"] = merged
        last = max((x for x in [meta_row[1], *(r[6] for r in rows)] if x is not None), default=None)
        conn.execute(
            "UPDATE memories SET retrieval_count = retrieval_count + ?, "
            "citation_count = citation_count + ?, ignore_count = ignore_count + ?, "
            "last_accessed = ?, importance = ?, metadata = ?, updated_at = ? WHERE id = ?",
            (
                sum(r[3] for r in rows),
                sum(r[4] for r in rows),
                sum(r[5] for r in rows),
                last,
                max([meta_row[2], *(r[7] for r in rows)]),
                json.dumps(metadata),
                at,
                survivor,
            ),
        )
        why = redact(f"merged into #{survivor}" + (f": {reason}" if reason else ""))
        for mid in others:
            conn.execute(
                "INSERT OR IGNORE INTO edges(source_id, target_id, type, strength, created_at, "
                "metadata) VALUES (?, ?, ?, 1.0, ?, ?)",
                (survivor, mid, MERGE_EDGE.value, at, json.dumps({"by": "consolidate"})),
            )
            conn.execute(
                "UPDATE memories SET archived = 1, archived_at = ?, archive_reason = ?, "
                "updated_at = ? WHERE id = ?",
                (at, why, at, mid),
            )
        fts_refresh(conn, survivor)


def archive_many(store: MemoryStore, reasons: Mapping[int, str], *, at: float) -> int:
    """Archive every memory in ``reasons`` (id → why) in one transaction; return how many
    were current. Unknown ids are refused before anything changes."""
    if not reasons:
        return 0
    conn = store.conn
    with dbmod.immediate(conn):
        for mid in reasons:
            require(conn, int(mid))
        bump(conn)
        changed = 0
        for mid, why in reasons.items():
            conn.execute(
                "UPDATE memories SET archived = 1, archived_at = ?, archive_reason = ?, "
                "updated_at = ? WHERE id = ? AND archived = 0",
                (at, redact(why), at, int(mid)),
            )
            changed += conn.changes()
    return changed


def add_edges(
    store: MemoryStore, edges: Sequence[tuple[int, int, EdgeType, float, dict[str, Any]]]
) -> int:
    """Add many typed edges (source, target, type, strength, metadata) in one transaction;
    bidirectional types get their reverse too. Return how many were asked for."""
    if not edges:
        return 0
    conn = store.conn
    with dbmod.immediate(conn):
        for s, t, _, _, _ in edges:
            require(conn, s)
            require(conn, t)
        bump(conn)
        for s, t, etype, strength, meta in edges:
            insert_edge(conn, s, t, etype, max(0.0, min(1.0, strength)), meta)
    return len(edges)
