"""Categories of memories (areas of the project) with their summaries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from storage import db as dbmod
from storage.errors import InvalidInput
from storage.redact import redact
from storage.rows import bump, now, optional_text, require

if TYPE_CHECKING:
    from storage.store_view import StoreConn


class Categories:
    """Named categories, their members and summaries."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def ensure(
        self, name: str, *, parent: str | None = None, description: str | None = None
    ) -> int:
        """The id of category ``name``, created if needed."""
        if not isinstance(name, str) or not name.strip() or "\x00" in name:
            raise InvalidInput(f"category name must be a non-empty string, not {name!r}")
        description = optional_text(description, "description")
        conn = self._store.conn
        row = conn.execute("SELECT id FROM categories WHERE name = ?", (name,)).fetchone()
        if row:
            return row[0]
        parent_id = self.ensure(parent) if parent else None
        with dbmod.immediate(conn):
            bump(conn)
            conn.execute(
                "INSERT OR IGNORE INTO categories(name, parent_id, description, created_at) "
                "VALUES (?, ?, ?, ?)",
                (name, parent_id, description, now()),
            )
        return int(conn.execute("SELECT id FROM categories WHERE name = ?", (name,)).get)

    def assign(self, memory_id: int, category: str) -> None:
        cid = self.ensure(category)
        conn = self._store.conn
        with dbmod.immediate(conn):
            require(conn, memory_id)
            bump(conn)
            conn.execute(
                "INSERT OR IGNORE INTO category_members(category_id, memory_id, added_at) "
                "VALUES (?, ?, ?)",
                (cid, memory_id, now()),
            )

    def set_summary(self, category: str, summary: str) -> None:
        cid = self.ensure(category)
        conn = self._store.conn
        with dbmod.immediate(conn):
            bump(conn)
            conn.execute(
                "UPDATE categories SET summary = ?, summary_updated_at = ? WHERE id = ?",
                (redact(summary), now(), cid),
            )

    def overview(self) -> list[dict[str, Any]]:
        return [
            {"id": r[0], "name": r[1], "parent_id": r[2], "summary": r[3], "members": r[4]}
            for r in self._store.conn.execute(
                "SELECT c.id, c.name, c.parent_id, c.summary, count(cm.memory_id) FROM "
                "categories c LEFT JOIN category_members cm ON cm.category_id = c.id "
                "GROUP BY c.id ORDER BY c.name"
            )
        ]

    def of(self, memory_id: int) -> list[str]:
        return [
            r[0]
            for r in self._store.conn.execute(
                "SELECT c.name FROM categories c JOIN category_members cm ON "
                "cm.category_id = c.id WHERE cm.memory_id = ? ORDER BY c.name",
                (memory_id,),
            )
        ]
