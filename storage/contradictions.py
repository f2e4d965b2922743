"""Contradictions between memories: recorded (open or suspected), listed, confirmed,
resolved or dismissed."""

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
    from storage.store_view import StoreConn


PENDING = (ContradictionStatus.OPEN, ContradictionStatus.SUSPECTED)
"""The statuses of a contradiction not settled yet: the review list."""
CONFIRMED = "confirmed"
"""How the note of a contradiction the user confirmed starts."""


class Contradictions:
    """Pairs of memories that disagree, each open (shown with its memories), suspected
    (listed for review only), resolved or dismissed."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def add(
        self,
        a: int,
        b: int,
        *,
        reason: str | None = None,
        confidence: float = 0.5,
        status: ContradictionStatus | str = ContradictionStatus.OPEN,
    ) -> int:
        """Record that two memories disagree: ``open`` (strong evidence: shown with the
        memories) or ``suspected`` (a weak finding: listed for review until confirmed).
        Idempotent; a resolved or dismissed pair is not reopened, a suspected one recorded
        again as open is opened with the stronger evidence's reason."""
        if a == b:
            raise InvalidInput("a memory cannot contradict itself")
        state = choice(ContradictionStatus, status, "status")
        if state not in PENDING:
            raise InvalidInput("a contradiction is recorded open or suspected")
        lo, hi = sorted((a, b))
        conn = self._store.conn
        with dbmod.immediate(conn):
            require(conn, lo)
            require(conn, hi)
            bump(conn)
            conn.execute(
                "INSERT INTO contradictions(memory_a, memory_b, status, reason, confidence, "
                "detected_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(memory_a, memory_b) DO "
                "UPDATE SET status = 'open', reason = excluded.reason, "
                "confidence = excluded.confidence "
                "WHERE contradictions.status = 'suspected' AND excluded.status = 'open'",
                (
                    lo,
                    hi,
                    state.value,
                    redact(reason) if reason else None,
                    unit(confidence, "confidence"),
                    now(),
                ),
            )
            cid, recorded = conn.execute(
                "SELECT id, status FROM contradictions WHERE memory_a = ? AND memory_b = ?",
                (lo, hi),
            ).fetchone()
            if recorded == ContradictionStatus.OPEN.value:
                # only an open contradiction is a relation the graph shows
                insert_edge(conn, lo, hi, EdgeType.CONTRADICTS, unit(confidence, "c"), {})
            return int(cid)

    def confirm(self, contradiction_id: int, note: str | None = None) -> Contradiction:
        """The user's confirmation: a suspected contradiction becomes open (shown with its
        memories from now on). Its reason stays what was found; its note starts with
        ``confirmed`` (what a context asks of an open one's evidence), then the user's note.
        InvalidInput for one that is not suspected."""
        conn = self._store.conn
        with dbmod.immediate(conn):
            status, _ = _current(conn, contradiction_id)
            if status != ContradictionStatus.SUSPECTED.value:
                raise InvalidInput(
                    f"contradiction #{contradiction_id} is {status}, not suspected: "
                    "only a suspected one is confirmed"
                )
            bump(conn)
            said = f"{CONFIRMED}: {redact(note)}" if note and note.strip() else CONFIRMED
            conn.execute(
                "UPDATE contradictions SET status = 'open', note = ? WHERE id = ?",
                (said, contradiction_id),
            )
            a, b, confidence = conn.execute(
                "SELECT memory_a, memory_b, confidence FROM contradictions WHERE id = ?",
                (contradiction_id,),
            ).fetchone()
            insert_edge(conn, a, b, EdgeType.CONTRADICTS, unit(confidence, "c"), {})
        return self.get(contradiction_id)

    def get(self, contradiction_id: int) -> Contradiction:
        """One contradiction by id (NotFound for an unknown one)."""
        found = self._select(" AND id = ?", [contradiction_id])
        if not found:
            raise NotFound(f"no contradiction #{contradiction_id}")
        return found[0]

    def query(
        self,
        status: ContradictionStatus | str | Sequence[ContradictionStatus | str] | None = (
            ContradictionStatus.OPEN
        ),
        memory_ids: Sequence[int] | None = None,
    ) -> list[Contradiction]:
        """Contradictions of one status (or of any of several; None: every status), newest
        first; with ``memory_ids``, those touching one of them."""
        sql = ""
        params: list[Any] = []
        if status is not None:
            many = [status] if isinstance(status, (str, ContradictionStatus)) else list(status)
            values = [choice(ContradictionStatus, s, "status").value for s in many]
            sql += " AND status IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(values))
        if memory_ids is not None:
            key = json.dumps([int(i) for i in memory_ids])
            sql += (
                " AND (memory_a IN (SELECT value FROM json_each(?)) OR memory_b IN "
                "(SELECT value FROM json_each(?)))"
            )
            params += [key, key]
        return self._select(sql, params)

    def _select(self, where: str, params: Sequence[Any]) -> list[Contradiction]:
        sql = (
            "SELECT id, memory_a, memory_b, status, resolution, note, reason, confidence, "
            "detected_at, resolved_at FROM contradictions WHERE 1"
        )
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
            for r in self._store.conn.execute(sql + where + " ORDER BY detected_at DESC", params)
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
            _require_pending(conn, contradiction_id)
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
        return self.get(contradiction_id)

    def dismiss(self, contradiction_id: int, note: str | None = None) -> Contradiction:
        """Mark an open or suspected contradiction as not one (a false detection); both
        memories stay as they are."""
        conn = self._store.conn
        with dbmod.immediate(conn):
            _require_pending(conn, contradiction_id)
            bump(conn)
            conn.execute(
                "UPDATE contradictions SET status = 'dismissed', note = ?, resolved_at = ? "
                "WHERE id = ?",
                (redact(note) if note else None, now(), contradiction_id),
            )
        return self.get(contradiction_id)

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


def _current(conn: apsw.Connection, contradiction_id: int) -> tuple[str, str | None]:
    """A contradiction's status and resolution; NotFound for an unknown one."""
    current = conn.execute(
        "SELECT status, resolution FROM contradictions WHERE id = ?", (contradiction_id,)
    ).fetchone()
    if current is None:
        raise NotFound(f"no contradiction #{contradiction_id}")
    return current[0], current[1]


def _require_pending(conn: apsw.Connection, contradiction_id: int) -> None:
    """NotFound for an unknown contradiction, InvalidInput for one already settled (an open
    or a suspected one may be settled)."""
    status, resolution = _current(conn, contradiction_id)
    if status not in {s.value for s in PENDING}:
        raise InvalidInput(
            f"contradiction #{contradiction_id} is already {status} "
            f"({resolution or 'no resolution'})"
        )
