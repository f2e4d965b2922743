"""How memories are used: the access log, usage counters and decay scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from storage import db as dbmod
from storage.errors import InvalidInput
from storage.models import AccessKind
from storage.redact import redact
from storage.rows import bump, choice, now, require

if TYPE_CHECKING:
    from storage.store_view import StoreConn


class Usage:
    """Retrievals, citations, ignores and views of memories, and their decay scores."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def record(
        self,
        memory_id: int,
        kind: AccessKind | str = AccessKind.RETRIEVAL,
        context: str | None = None,
    ) -> None:
        self.record_many([memory_id], kind, context)

    def record_many(
        self,
        memory_ids: Sequence[int],
        kind: AccessKind | str = AccessKind.RETRIEVAL,
        context: str | None = None,
        *,
        bump_generation: bool = True,
    ) -> None:
        """Log use of memories and bump their counters (retrieval, citation, ignore, view).

        ``bump_generation=False`` keeps caches keyed on the generation valid: the context
        engine logs what it served without invalidating what it just cached."""
        kind = choice(AccessKind, kind, "access kind")
        column = {
            AccessKind.RETRIEVAL: "retrieval_count",
            AccessKind.CITATION: "citation_count",
            AccessKind.IGNORE: "ignore_count",
            AccessKind.VIEW: None,
        }[kind]
        stamp = now()
        conn = self._store.conn
        with dbmod.immediate(conn):
            for mid in memory_ids:
                require(conn, mid)
            if bump_generation:
                bump(conn)
            for mid in memory_ids:
                conn.execute(
                    "INSERT INTO access_log(memory_id, at, kind, context) VALUES (?, ?, ?, ?)",
                    (mid, stamp, kind.value, redact(context) if context else context),
                )
                counter = f", {column} = {column} + 1" if column else ""
                conn.execute(
                    f"UPDATE memories SET last_accessed = ?{counter} WHERE id = ?", (stamp, mid)
                )

    def log(self, memory_id: int, limit: int = 50) -> list[tuple[float, str, str | None]]:
        return list(
            self._store.conn.execute(
                "SELECT at, kind, context FROM access_log WHERE memory_id = ? "
                "ORDER BY at DESC LIMIT ?",
                (memory_id, limit),
            )
        )

    def set_decay_scores(self, scores: dict[int, float]) -> int:
        """Store recomputed decay scores (computed by the engine); return how many changed."""
        try:
            rows = [(float(v), int(k)) for k, v in scores.items()]
        except (TypeError, ValueError) as e:
            raise InvalidInput(f"decay scores must map ids to numbers: {e}") from e
        conn = self._store.conn
        with dbmod.immediate(conn):
            bump(conn)
            before = conn.total_changes()
            conn.executemany("UPDATE memories SET decay_score = ? WHERE id = ?", rows)
            return conn.total_changes() - before
