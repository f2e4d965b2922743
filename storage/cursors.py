"""Where each ingestion source got to (last commit, file fingerprints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from storage import db as dbmod
from storage.rows import now

if TYPE_CHECKING:
    from storage.store_view import StoreConn


class Cursors:
    """Ingestion cursors: ``source -> {key: value}``."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def get(self, source: str) -> dict[str, str]:
        """Where ingestion of ``source`` got to: ``key → value`` (last commit, fingerprints)."""
        return dict(
            self._store.conn.execute(
                "SELECT key, value FROM ingest_state WHERE source = ?", (source,)
            )
        )

    def set(self, source: str, values: dict[str, str]) -> None:
        conn = self._store.conn
        stamp = now()
        with dbmod.immediate(conn):
            conn.executemany(
                "INSERT INTO ingest_state(source, key, value, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(source, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                [(source, k, str(v), stamp) for k, v in values.items()],
            )
