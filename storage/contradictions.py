"""Contradictions between memories: recorded, listed, resolved or dismissed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw

from storage import db as dbmod
from storage.errors import InvalidInput, NotFound
from storage.graph import insert_edge, supersede_rows
from storage.models import Contradiction, ContradictionStatus, EdgeType, Resolution
from storage.redact import redact
from storage.rows import bump, choice, now, require, unit

if TYPE_CHECKING:
    from storage.repository import MemoryStore


class Contradictions:
    """Pairs of memories that disagree, each open, resolved or dismissed."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def add(self, a: int, b: int, *, reason: str | None = None, confidence: float = 0.5) -> int:
        """Record that two memories disagree (idempotent; a resolved pair is not reopened)."""
        if a == b:
            raise InvalidInput("a memory cannot contradict itself")
        lo, hi = sorted((a, b))
        conn = self._store.conn
        with dbmod.immediate(conn):
            require(conn, lo)
            require(conn, hi)
            bump(conn)
            conn.execute(
                "INSERT INTO contradictions(memory_a, memory_b, reason, confidence, detected_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(memory_a, memory_b) DO NOTHING",
                (
                    lo,
                    hi,
                    redact(reason) if reason else None,
                    unit(confidence, "confidence"),
                    now(),
                ),
            )
            insert_edge(conn, lo, hi, EdgeType.CONTRADICTS, unit(confidence, "c"), {})
            return conn.execute(
                "SELECT id FROM contradictions WHERE memory_a = ? AND memory_b = ?", (lo, hi)
            ).fetchone()[0]

    def query(
        self,
        status: ContradictionStatus | str | None = ContradictionStatus.OPEN,
        memory_ids: Sequence[int] | None = None,
    ) -> list[Contradiction]:
        sql = (
            "SELECT id, memory_a, memory_b, status, resolution, note, reason, confidence, "
            "detected_at, resolved_at FROM contradictions WHERE 1"
        )
        params: list[Any] = []
        if status is not None:
            sql += " AND status = ?"
            params.append(choice(ContradictionStatus, status, "status").value)
        if memory_ids is not None:
            key = json.dumps([int(i) for i in memory_ids])
            sql += (
                " AND (memory_a IN (SELECT value FROM json_each(?)) OR memory_b IN "
                "(SELECT value FROM json_each(?)))"
            )
            params += [key, key]
        return [
            Contradiction(
                r[0],
                r[1],
                r[2],
                ContradictionStatus(r[3]),
                Resolution(r[4]) if r[4] else None,
                r[5],
                r[6],
                r[7],
                r[8],
                r[9],
            )
            for r in self._store.conn.execute(sql + " ORDER BY detected_at DESC", params)
        ]

    def resolve(
        self,
        contradiction_id: int,
        resolution: Resolution | str,
        note: str | None = None,
        *,
        merged_id: int | None = None,
    ) -> Contradiction:
        """Settle a contradiction. The loser of a_wins/b_wins is superseded by the winner,
        never deleted; ``merged`` needs the id of the memory that merges both."""
        res = choice(Resolution, resolution, "resolution")
        conn = self._store.conn
        row = conn.execute(
            "SELECT memory_a, memory_b FROM contradictions WHERE id = ?", (contradiction_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no contradiction #{contradiction_id}")
        a, b = row
        if res is Resolution.MERGED and merged_id is None:
            raise InvalidInput("a merged resolution needs the id of the merged memory")
        if merged_id is not None and merged_id in (a, b):
            raise InvalidInput("the merged memory must be a new memory, not one of the pair")
        stamp = now()
        with dbmod.immediate(conn):
            # settling it again (say b_wins after a_wins) would supersede both memories
            _require_open(conn, contradiction_id)
            bump(conn)
            conn.execute(
                "UPDATE contradictions SET status = 'resolved', resolution = ?, note = ?, "
                "resolved_at = ? WHERE id = ?",
                (res.value, redact(note) if note else None, stamp, contradiction_id),
            )
            if res is Resolution.A_WINS:
                supersede_rows(conn, b, a, stamp)
            elif res is Resolution.B_WINS:
                supersede_rows(conn, a, b, stamp)
            elif res is Resolution.MERGED:
                assert merged_id is not None
                supersede_rows(conn, a, merged_id, stamp)
                supersede_rows(conn, b, merged_id, stamp)
        return next(c for c in self.query(None) if c.id == contradiction_id)

    def dismiss(self, contradiction_id: int, note: str | None = None) -> Contradiction:
        """Mark an open contradiction as not one (a false detection); both memories stay as
        they are."""
        conn = self._store.conn
        with dbmod.immediate(conn):
            _require_open(conn, contradiction_id)
            bump(conn)
            conn.execute(
                "UPDATE contradictions SET status = 'dismissed', note = ?, resolved_at = ? "
                "WHERE id = ?",
                (redact(note) if note else None, now(), contradiction_id),
            )
        return next(c for c in self.query(None) if c.id == contradiction_id)

    def exists(self, a: int, b: int) -> bool:
        lo, hi = sorted((a, b))
        return (
            self._store.conn.execute(
                "SELECT 1 FROM contradictions WHERE memory_a = ? AND memory_b = ?", (lo, hi)
            ).fetchone()
            is not None
        )

    def fact_conflicts(self) -> list[tuple[int, int, str]]:
        """Pairs of current memories stating different values for the same ``fact_key``."""
        return [
            (a, b, key)
            for a, b, key in self._store.conn.execute(
                "SELECT x.id, y.id, x.fact_key FROM memories x JOIN memories y "
                "ON x.fact_key = y.fact_key AND x.id < y.id "
                "WHERE x.fact_key IS NOT NULL AND coalesce(x.fact_value, '') != "
                "coalesce(y.fact_value, '') AND x.archived = 0 AND y.archived = 0 "
                "AND x.superseded_by IS NULL AND y.superseded_by IS NULL "
                "AND (x.valid_to IS NULL OR x.valid_to > ?1) "
                "AND (y.valid_to IS NULL OR y.valid_to > ?1) ORDER BY x.id, y.id",
                (now(),),
            )
        ]


def _require_open(conn: apsw.Connection, contradiction_id: int) -> None:
    """NotFound for an unknown contradiction, InvalidInput for one already settled."""
    current = conn.execute(
        "SELECT status, resolution FROM contradictions WHERE id = ?", (contradiction_id,)
    ).fetchone()
    if current is None:
        raise NotFound(f"no contradiction #{contradiction_id}")
    if current[0] != ContradictionStatus.OPEN.value:
        raise InvalidInput(
            f"contradiction #{contradiction_id} is already {current[0]} "
            f"({current[1] or 'no resolution'})"
        )
