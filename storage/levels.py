"""Derived levels of a memory: summary, compressed form, index label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypedDict

from storage import db as dbmod
from storage.errors import InvalidInput
from storage.models import Memory
from storage.redact import redact
from storage.rows import bump, fts_refresh, now, validate_text

if TYPE_CHECKING:
    from storage.store_view import StoreWithMemories


_LACKING = (
    "(coalesce(trim(summary), '') = '' OR coalesce(trim(compressed), '') = '' "
    "OR coalesce(trim(index_label), '') = '')"
)


LevelName = Literal["summary", "compressed", "index_label"]


class LevelTexts(TypedDict, total=False):
    """Texts for some of a memory's derived levels."""

    summary: str
    compressed: str
    index_label: str


class Levels:
    """The summary, compressed and index levels, filled by the compressor."""

    def __init__(self, store: StoreWithMemories) -> None:
        self._store = store

    def lacking(self, *, after_id: int = 0, limit: int = 500) -> list[Memory]:
        """Memories (archived included) missing a summary, compressed or index level."""
        ids = [
            r[0]
            for r in self._store.conn.execute(
                f"SELECT id FROM memories WHERE id > ? AND {_LACKING} ORDER BY id LIMIT ?",
                (int(after_id), int(limit)),
            )
        ]
        return self._store.get_many(ids)

    def count_lacking(self) -> int:
        """How many memories (archived included) miss a level."""
        sql = f"SELECT count(*) FROM memories WHERE {_LACKING}"
        row = self._store.conn.execute(sql).fetchone()
        return int(row[0]) if row else 0

    def set(self, levels: Mapping[int, LevelTexts]) -> int:
        """Store derived levels (summary, compressed, index_label) for many memories in one
        transaction; return how many memories changed. Unknown ids are skipped."""
        allowed = {"summary", "compressed", "index_label"}
        rows: list[tuple[int, dict[str, str]]] = []
        for mid, vals in levels.items():
            bad = set(vals) - allowed
            if bad:
                raise InvalidInput(f"not a level: {', '.join(sorted(bad))}")
            rows.append((int(mid), {k: redact(validate_text(v, k)) for k, v in vals.items()}))
        conn = self._store.conn
        changed = 0
        stamp = now()
        with dbmod.immediate(conn):
            bump(conn)
            for mid, texts in rows:
                if not texts:
                    continue
                sets = ", ".join(f"{k} = ?" for k in texts)
                conn.execute(
                    f"UPDATE memories SET {sets}, updated_at = ? WHERE id = ?",
                    [*texts.values(), stamp, mid],
                )
                if conn.changes():
                    changed += 1
                    fts_refresh(conn, mid)
        return changed

    def clear(self, fields: Sequence[str] = ("compressed", "index_label")) -> int:
        """Forget derived levels of every memory (a new compressor refills them); return how
        many memories had one."""
        allowed = {"summary", "compressed", "index_label"}
        bad = set(fields) - allowed
        if bad or not fields:
            raise InvalidInput(f"not a level: {', '.join(sorted(bad)) or 'none given'}")
        conn = self._store.conn
        having = " OR ".join(f"{f} IS NOT NULL" for f in fields)
        with dbmod.immediate(conn):
            ids = [r[0] for r in conn.execute(f"SELECT id FROM memories WHERE {having}")]
            if not ids:
                return 0
            bump(conn)
            sets = ", ".join(f"{f} = NULL" for f in fields)
            conn.execute(f"UPDATE memories SET {sets} WHERE {having}")
            for mid in ids:
                fts_refresh(conn, mid)
        return len(ids)
