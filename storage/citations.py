"""What memories cite in the code, the commit each was learned at, and the verdicts of
checking them against the current tree (``store.citations``).

Writes here never move the store's generation: citations and verdicts are derived from the
memories and the repository, and contexts cached on the generation are keyed on the verdicts
by their reader (predictive.staleness)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from storage import db as dbmod
from storage.rows import now

if TYPE_CHECKING:
    from storage.store_view import StoreConn

CITATION_TYPES = ("file", "symbol", "dependency", "command")
VERDICTS = ("current", "changed", "gone", "unknown")


@dataclass(frozen=True, order=True)
class Citation:
    """One thing a memory names in the code: a ``file`` (a path), a ``symbol`` (found in
    ``path``, or anywhere in the tree when ``path`` is empty), a ``dependency`` (a declared
    package) or a ``command`` (a script or make target)."""

    type: str
    value: str
    path: str = ""

    def to_dict(self) -> dict[str, str]:
        d = {"type": self.type, "value": self.value}
        if self.path:
            d["path"] = self.path
        return d


@dataclass(frozen=True)
class Origin:
    """What a memory cites and the commit it was learned at (None: unknown)."""

    memory_id: int
    commit: str | None
    citations: tuple[Citation, ...]


@dataclass(frozen=True)
class StoredVerdict:
    memory_id: int
    head: str
    fingerprint: str
    verdict: str
    notes: tuple[str, ...]
    checked_at: float


class Citations:
    """Citations (``citations``, ``citation_origins``) and verdicts (``staleness``)."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def unrecorded(self, version: int, *, limit: int = 1000, after: int = 0) -> list[int]:
        """Ids (ascending, above ``after``) of current memories whose citations were never
        recorded, or recorded by an older ``version`` of the extraction."""
        return [
            r[0]
            for r in self._store.conn.execute(
                "SELECT m.id FROM memories m LEFT JOIN citation_origins o ON o.memory_id = m.id "
                "WHERE m.archived = 0 AND m.id > ? AND (o.memory_id IS NULL OR o.version < ?) "
                "ORDER BY m.id LIMIT ?",
                (after, version, limit),
            )
        ]

    def record(self, origins: Sequence[Origin], version: int) -> None:
        """Replace what each memory cites (one transaction)."""
        if not origins:
            return
        conn = self._store.conn
        stamp = now()
        with dbmod.immediate(conn):
            for o in origins:
                conn.execute("DELETE FROM citations WHERE memory_id = ?", (o.memory_id,))
                conn.execute("DELETE FROM staleness WHERE memory_id = ?", (o.memory_id,))
                if not conn.execute(
                    "SELECT 1 FROM memories WHERE id = ?", (o.memory_id,)
                ).fetchone():
                    continue  # purged meanwhile
                conn.executemany(
                    "INSERT OR IGNORE INTO citations(memory_id, type, value, path) "
                    "VALUES (?, ?, ?, ?)",
                    [(o.memory_id, c.type, c.value, c.path) for c in o.citations],
                )
                conn.execute(
                    "INSERT INTO citation_origins(memory_id, commit_sha, version, recorded_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT(memory_id) DO UPDATE SET "
                    "commit_sha = excluded.commit_sha, version = excluded.version, "
                    "recorded_at = excluded.recorded_at",
                    (o.memory_id, o.commit, version, stamp),
                )

    def origins(self, ids: Sequence[int] | None = None) -> dict[int, Origin]:
        """What the memories ``ids`` (every memory that cites anything when None) cite."""
        conn = self._store.conn
        if ids is None:
            where, params = "EXISTS (SELECT 1 FROM citations c WHERE c.memory_id = o.memory_id)", []
        else:
            where, params = (
                "o.memory_id IN (SELECT value FROM json_each(?))",
                [json.dumps([int(i) for i in ids])],
            )
        commits = {
            mid: sha
            for mid, sha in conn.execute(
                f"SELECT o.memory_id, o.commit_sha FROM citation_origins o WHERE {where}", params
            )
        }
        cited: dict[int, list[Citation]] = {}
        if commits:
            for mid, t, v, p in conn.execute(
                "SELECT memory_id, type, value, path FROM citations WHERE memory_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY memory_id, type, value",
                (json.dumps(list(commits)),),
            ):
                cited.setdefault(mid, []).append(Citation(t, v, p))
        return {mid: Origin(mid, sha, tuple(cited.get(mid, ()))) for mid, sha in commits.items()}

    def cited_ids(self) -> list[int]:
        """Ids of the current memories that cite anything."""
        return [
            r[0]
            for r in self._store.conn.execute(
                "SELECT DISTINCT c.memory_id FROM citations c JOIN memories m ON "
                "m.id = c.memory_id AND m.archived = 0 ORDER BY c.memory_id"
            )
        ]

    def verdicts(self, head: str) -> dict[int, StoredVerdict]:
        """Every verdict stored for ``head``."""
        return {
            r[0]: StoredVerdict(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), r[5])
            for r in self._store.conn.execute(
                "SELECT memory_id, head, fingerprint, verdict, notes, checked_at FROM staleness "
                "WHERE head = ?",
                (head,),
            )
        }

    def save_verdicts(self, rows: Sequence[StoredVerdict]) -> None:
        if not rows:
            return
        conn = self._store.conn
        with dbmod.immediate(conn):
            conn.executemany(
                "INSERT INTO staleness(memory_id, head, fingerprint, verdict, notes, checked_at) "
                "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?) "
                "ON CONFLICT(memory_id) DO UPDATE SET head = excluded.head, "
                "fingerprint = excluded.fingerprint, verdict = excluded.verdict, "
                "notes = excluded.notes, checked_at = excluded.checked_at",
                [
                    (
                        r.memory_id,
                        r.head,
                        r.fingerprint,
                        r.verdict,
                        json.dumps(list(r.notes)),
                        r.checked_at,
                        r.memory_id,
                    )
                    for r in rows
                ],
            )

    def latest(self, ids: Sequence[int]) -> dict[int, StoredVerdict]:
        """The last verdict stored for each of ``ids``, whatever HEAD it was made at."""
        if not ids:
            return {}
        return {
            r[0]: StoredVerdict(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), r[5])
            for r in self._store.conn.execute(
                "SELECT memory_id, head, fingerprint, verdict, notes, checked_at FROM staleness "
                "WHERE memory_id IN (SELECT value FROM json_each(?))",
                (json.dumps([int(i) for i in ids]),),
            )
        }

    def stale(self, head: str | None, *, limit: int = 100) -> list[StoredVerdict]:
        """Current memories judged gone or changed at ``head`` (at their last check when
        None): gone first, newest first."""
        at = "s.head = ?" if head is not None else "?1 IS NULL"
        return [
            StoredVerdict(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), r[5])
            for r in self._store.conn.execute(
                "SELECT s.memory_id, s.head, s.fingerprint, s.verdict, s.notes, s.checked_at "
                "FROM staleness s JOIN memories m ON m.id = s.memory_id AND m.archived = 0 "
                f"AND m.superseded_by IS NULL WHERE {at} AND s.verdict IN "
                "('gone', 'changed') ORDER BY s.verdict = 'changed', m.created_at DESC LIMIT ?",
                (head, int(limit)),
            )
        ]

    def counts(self) -> dict[str, Any]:
        """How many memories cite anything, and have been recorded at all."""
        conn = self._store.conn

        def one(sql: str) -> int:
            row = conn.execute(sql).fetchone()
            return int(row[0]) if row else 0

        return {
            "recorded": one("SELECT count(*) FROM citation_origins"),
            "citing": one("SELECT count(DISTINCT memory_id) FROM citations"),
        }
