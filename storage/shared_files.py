"""The files of the team's shared folder this store knows: one per memory lineage, under a
short stable id, with the memory it holds now and the fingerprint of its bytes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage import db as dbmod
from storage.rows import now

if TYPE_CHECKING:
    from storage.store_view import StoreConn

MAX_LINEAGE = 64  # supersedes steps followed back to find the file of an edited memory


@dataclass(frozen=True)
class SharedFile:
    sid: str
    path: str  # relative to the shared folder, with forward slashes
    memory_id: int | None
    fingerprint: str  # sha-256 of the bytes as last written or read


class SharedFiles:
    """``store.shared``: the mapping between shared files and memories."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def all(self) -> list[SharedFile]:
        return [
            SharedFile(*r)
            for r in self._store.conn.execute(
                "SELECT sid, path, memory_id, fingerprint FROM shared_files ORDER BY path"
            )
        ]

    def get(self, sid: str) -> SharedFile | None:
        row = self._store.conn.execute(
            "SELECT sid, path, memory_id, fingerprint FROM shared_files WHERE sid = ?", (sid,)
        ).fetchone()
        return SharedFile(*row) if row else None

    def of_memory(self, memory_id: int) -> SharedFile | None:
        """The file holding ``memory_id`` or, for a memory that replaced one, its
        predecessor's file (an edit of a shared memory goes to the same file)."""
        row = self._store.conn.execute(
            "WITH RECURSIVE back(id, depth) AS (SELECT ?, 0 UNION ALL "
            "SELECT m.supersedes, b.depth + 1 FROM back b JOIN memories m ON m.id = b.id "
            "WHERE m.supersedes IS NOT NULL AND b.depth < ?) "
            "SELECT f.sid, f.path, f.memory_id, f.fingerprint FROM back b "
            "JOIN shared_files f ON f.memory_id = b.id ORDER BY b.depth LIMIT 1",
            (memory_id, MAX_LINEAGE),
        ).fetchone()
        return SharedFile(*row) if row else None

    def put(self, f: SharedFile) -> None:
        """Record (or move) a file; a path another id held is taken over."""
        conn = self._store.conn
        with dbmod.immediate(conn):
            conn.execute("DELETE FROM shared_files WHERE path = ? AND sid != ?", (f.path, f.sid))
            conn.execute(
                "INSERT INTO shared_files(sid, path, memory_id, fingerprint, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(sid) DO UPDATE SET path = excluded.path, "
                "memory_id = excluded.memory_id, fingerprint = excluded.fingerprint, "
                "updated_at = excluded.updated_at",
                (f.sid, f.path, f.memory_id, f.fingerprint, now()),
            )

    def drop(self, sid: str) -> None:
        conn = self._store.conn
        with dbmod.immediate(conn):
            conn.execute("DELETE FROM shared_files WHERE sid = ?", (sid,))

    def current_ids(
        self, kinds: Sequence[str], *, review: str, exclude_sources: Sequence[str] = ()
    ) -> list[int]:
        """Ids of the project-scoped memories of ``kinds`` with ``review`` that hold now (not
        archived or superseded), oldest first."""
        return [
            r[0]
            for r in self._store.conn.execute(
                "SELECT id FROM memories WHERE review = ? AND archived = 0 "
                "AND superseded_by IS NULL AND scope = 'project' "
                "AND kind IN (SELECT value FROM json_each(?)) "
                "AND source NOT IN (SELECT value FROM json_each(?)) ORDER BY created_at, id",
                (review, json.dumps(list(kinds)), json.dumps(list(exclude_sources))),
            )
        ]

    def rejected_ids(self, kinds: Sequence[str]) -> list[int]:
        """Ids of the rejected memories of ``kinds`` (archived by the rejection), oldest first."""
        return [
            r[0]
            for r in self._store.conn.execute(
                "SELECT id FROM memories WHERE review = 'rejected' AND superseded_by IS NULL "
                "AND kind IN (SELECT value FROM json_each(?)) ORDER BY created_at, id",
                (json.dumps(list(kinds)),),
            )
        ]
