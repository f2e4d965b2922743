"""The graph of typed edges between memories, and supersession."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw

from storage import db as dbmod
from storage.errors import InvalidInput
from storage.models import Edge, EdgeType, TraversalStep
from storage.rows import bump, choice, metadata_json, now, require, unit

if TYPE_CHECKING:
    from storage.store_view import StoreConn


class Graph:
    """Typed edges: add, remove, list, walk; one memory superseding another."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def supersede(self, old_id: int, new_id: int, *, at: float | None = None) -> None:
        """``new_id`` replaces ``old_id``: old stops being valid, a SUPERSEDES edge links them."""
        if old_id == new_id:
            raise InvalidInput("a memory cannot supersede itself")
        conn = self._store.conn
        with dbmod.immediate(conn):
            bump(conn)
            supersede_rows(conn, old_id, new_id, at if at is not None else now())

    def add(
        self,
        source_id: int,
        target_id: int,
        type: EdgeType | str,
        strength: float = 1.0,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Add (or strengthen) a typed edge; bidirectional types get their reverse edge too."""
        etype = choice(EdgeType, type, "edge type")
        strength = unit(strength, "strength")
        if source_id == target_id:
            raise InvalidInput("an edge needs two different memories")
        conn = self._store.conn
        with dbmod.immediate(conn):
            require(conn, source_id)
            require(conn, target_id)
            bump(conn)
            insert_edge(conn, source_id, target_id, etype, strength, metadata or {})

    def remove(self, source_id: int, target_id: int, type: EdgeType | str) -> bool:
        etype = choice(EdgeType, type, "edge type")
        conn = self._store.conn
        with dbmod.immediate(conn):
            bump(conn)
            conn.execute(
                "DELETE FROM edges WHERE source_id = ? AND target_id = ? AND type = ?",
                (source_id, target_id, etype.value),
            )
            removed = conn.changes()
            if etype.bidirectional:
                conn.execute(
                    "DELETE FROM edges WHERE source_id = ? AND target_id = ? AND type = ?",
                    (target_id, source_id, etype.value),
                )
        return removed > 0

    def edges(self, memory_id: int, *, direction: str = "out") -> list[Edge]:
        """Edges leaving (out), arriving (in) or both (each relation once).

        A bidirectional relation (RELATES_TO, SIMILAR_TO, CONTRADICTS) leaves and arrives
        at both of its memories."""
        q = {
            "out": "source_id = ?",
            "in": "target_id = ?",
            # a bidirectional relation is stored twice; its reverse copy is not repeated
            "both": "(source_id = ? OR target_id = ?) AND reverse = 0",
        }
        if direction not in q:
            raise InvalidInput("direction must be out, in or both")
        params = [memory_id] * (2 if direction == "both" else 1)
        return [
            Edge(s, t, EdgeType(ty), st, c)
            for s, t, ty, st, c in self._store.conn.execute(
                f"SELECT source_id, target_id, type, strength, created_at FROM edges "
                f"WHERE {q[direction]} ORDER BY strength DESC, id",
                params,
            )
        ]

    def traverse(
        self,
        start: int | Sequence[int],
        *,
        depth: int = 2,
        types: Sequence[EdgeType | str] | None = None,
        min_strength: float = 0.0,
        direction: str = "out",
        limit: int = 500,
    ) -> list[TraversalStep]:
        """Breadth-first walk; each reached memory once, at its shallowest, strongest path."""
        if depth < 0:
            raise InvalidInput("depth must be 0 or more")
        if direction not in ("out", "in", "both"):
            raise InvalidInput("direction must be out, in or both")
        starts = [start] if isinstance(start, int) else list(start)
        conn = self._store.conn
        for s in starts:
            require(conn, s)
        type_vals = [choice(EdgeType, t, "edge type").value for t in types] if types else None
        seen: set[int] = set(starts)
        frontier: dict[int, float] = {s: 1.0 for s in starts}
        out: list[TraversalStep] = []
        for level in range(1, depth + 1):
            if not frontier or len(out) >= limit:
                break
            key = json.dumps(list(frontier))
            clauses, params = [], []
            type_sql = ""
            if type_vals:
                type_sql = f" AND type IN ({','.join('?' * len(type_vals))})"
            if direction in ("out", "both"):
                clauses.append(
                    "SELECT source_id, target_id, type, strength FROM edges WHERE source_id IN "
                    f"(SELECT value FROM json_each(?)) AND strength >= ?{type_sql}"
                )
                params += [key, min_strength, *(type_vals or [])]
            if direction in ("in", "both"):
                clauses.append(
                    "SELECT target_id, source_id, type, strength FROM edges WHERE target_id IN "
                    f"(SELECT value FROM json_each(?)) AND strength >= ?{type_sql}"
                )
                params += [key, min_strength, *(type_vals or [])]
            best: dict[int, TraversalStep] = {}
            for parent, child, ty, st in conn.execute(" UNION ALL ".join(clauses), params):
                if child in seen:
                    continue
                path = frontier[parent] * st
                cur = best.get(child)
                if cur is None or path > cur.strength:
                    best[child] = TraversalStep(child, level, path, EdgeType(ty), parent)
            archived = self._archived_among(list(best))
            steps = sorted(
                (s for s in best.values() if s.memory_id not in archived),
                key=lambda s: -s.strength,
            )
            out.extend(steps)
            seen.update(best)
            frontier = {s.memory_id: s.strength for s in steps}
        return out[:limit]

    def _archived_among(self, ids: list[int]) -> set[int]:
        if not ids:
            return set()
        return {
            r[0]
            for r in self._store.conn.execute(
                "SELECT id FROM memories WHERE archived = 1 AND id IN "
                "(SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            )
        }


def insert_edge(
    conn: apsw.Connection,
    s: int,
    t: int,
    etype: EdgeType,
    strength: float,
    metadata: dict[str, Any],
) -> None:
    pairs = [(s, t, 0)] + ([(t, s, 1)] if etype.bidirectional else [])
    for a, b, rev in pairs:
        conn.execute(
            "INSERT INTO edges(source_id, target_id, type, strength, reverse, created_at, "
            "metadata) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(source_id, target_id, type) "
            "DO UPDATE SET strength = max(strength, excluded.strength)",
            (a, b, etype.value, strength, rev, now(), metadata_json(metadata)),
        )


def supersede_rows(conn: apsw.Connection, old_id: int, new_id: int, at: float) -> None:
    require(conn, old_id)
    require(conn, new_id)
    conn.execute(
        "UPDATE memories SET superseded_by = ?, valid_to = COALESCE(valid_to, ?), "
        "updated_at = ? WHERE id = ?",
        (new_id, at, now(), old_id),
    )
    conn.execute(
        "UPDATE memories SET supersedes = ?, updated_at = ? WHERE id = ?",
        (old_id, now(), new_id),
    )
    insert_edge(conn, new_id, old_id, EdgeType.SUPERSEDES, 1.0, {})
