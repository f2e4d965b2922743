"""Locked contexts: a named piece of context pinned by an agent, kept in versions.

Locking again under a name adds a version; earlier versions are never changed or removed.
Every text (name, content, preview, tags, note) is redacted before it is stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from storage import db as dbmod
from storage.errors import InvalidInput, NotFound
from storage.redact import redact

if TYPE_CHECKING:
    from storage.store_view import StoreConn

MAX_NAME_CHARS = 200
MAX_CONTENT_CHARS = 200_000
MAX_TAGS = 200
MAX_TAG_CHARS = 200
MAX_MEMORY_IDS = 200

_COLUMNS = "id, name, version, content, preview, tags, memory_ids, note, source, created_at"


@dataclass(frozen=True)
class LockedContext:
    """One version of a locked context."""

    id: int
    name: str
    version: int
    content: str
    preview: str
    tags: tuple[str, ...]
    memory_ids: tuple[int, ...]
    note: str | None
    source: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "content": self.content,
            "preview": self.preview,
            "tags": list(self.tags),
            "memory_ids": list(self.memory_ids),
            "note": self.note,
            "source": self.source,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class LockSummary:
    """A locked context in a list: its newest version's preview and how many versions exist."""

    name: str
    version: int
    versions: int
    preview: str
    tags: tuple[str, ...]
    created_at: float
    first_locked_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "versions": self.versions,
            "preview": self.preview,
            "tags": list(self.tags),
            "created_at": self.created_at,
            "first_locked_at": self.first_locked_at,
        }


def clean_name(name: str) -> str:
    """A lock name: trimmed, redacted, non-empty, at most ``MAX_NAME_CHARS`` characters (the
    same secret in a name given to a lookup is redacted the same way, so it still matches)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("the context name is empty")
    name = " ".join(name.split())
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput(f"the context name is longer than {MAX_NAME_CHARS} characters")
    return redact(name)


def clean_tags(tags: Sequence[str]) -> list[str]:
    """Trimmed, redacted, de-duplicated, sorted tags."""
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"{len(tags)} tags; the limit is {MAX_TAGS}")
    for t in tags:
        if not isinstance(t, str):
            raise InvalidInput(f"a tag must be text, not {t!r}")
        if len(t) > MAX_TAG_CHARS:
            raise InvalidInput(f"a tag is {len(t)} characters; the limit is {MAX_TAG_CHARS}")
    return sorted({redact(" ".join(t.split())) for t in tags if t and t.strip()})


def _row(r: tuple[Any, ...]) -> LockedContext:
    return LockedContext(
        id=r[0],
        name=r[1],
        version=r[2],
        content=r[3],
        preview=r[4],
        tags=tuple(json.loads(r[5])),
        memory_ids=tuple(json.loads(r[6])),
        note=r[7],
        source=r[8],
        created_at=r[9],
    )


class LockedContextStore:
    """The locked contexts of one project's store (same database file, same connection)."""

    def __init__(self, store: StoreConn) -> None:
        self.store = store

    def lock(
        self,
        name: str,
        content: str,
        *,
        preview: str,
        tags: Sequence[str] = (),
        memory_ids: Sequence[int] = (),
        note: str | None = None,
        source: str = "mcp",
    ) -> tuple[LockedContext, bool]:
        """Store a new version of ``name`` (or return the newest one when its content is the
        same); the flag says whether a version was added."""
        name = clean_name(name)
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("the context content is empty")
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(f"the context content is longer than {MAX_CONTENT_CHARS} characters")
        content = redact(content)
        tag_list = clean_tags(tags)
        ids = list(dict.fromkeys(int(i) for i in memory_ids))
        if len(ids) > MAX_MEMORY_IDS:
            raise InvalidInput(f"{len(ids)} memory ids; the limit is {MAX_MEMORY_IDS}")
        conn = self.store.conn
        with dbmod.immediate(conn):
            for mid in ids:
                if not conn.execute("SELECT 1 FROM memories WHERE id = ?", (mid,)).fetchone():
                    raise NotFound(f"no memory #{mid}")
            latest = conn.execute(
                f"SELECT {_COLUMNS} FROM locked_contexts WHERE name = ? "
                "ORDER BY version DESC LIMIT 1",
                (name,),
            ).fetchone()
            if latest is not None:
                old = _row(latest)
                same = (old.content, list(old.tags), list(old.memory_ids))
                if same == (content, tag_list, ids):
                    return old, False
            version = 1 if latest is None else latest[2] + 1
            conn.execute(
                "INSERT INTO locked_contexts(name, version, content, preview, tags, memory_ids, "
                "note, source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    version,
                    content,
                    redact(preview),
                    json.dumps(tag_list),
                    json.dumps(ids),
                    redact(note) if note else None,
                    source,
                    time.time(),
                ),
            )
            new_id = conn.last_insert_rowid()
        return self._by_id(new_id), True

    def _by_id(self, lock_id: int) -> LockedContext:
        r = self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM locked_contexts WHERE id = ?", (lock_id,)
        ).fetchone()
        if r is None:
            raise NotFound(f"no locked context #{lock_id}")
        return _row(r)

    def get(self, name: str, version: int | None = None) -> LockedContext:
        """A version of ``name`` (the newest when ``version`` is None)."""
        name = clean_name(name)
        if version is None:
            r = self.store.conn.execute(
                f"SELECT {_COLUMNS} FROM locked_contexts WHERE name = ? "
                "ORDER BY version DESC LIMIT 1",
                (name,),
            ).fetchone()
        else:
            r = self.store.conn.execute(
                f"SELECT {_COLUMNS} FROM locked_contexts WHERE name = ? AND version = ?",
                (name, version),
            ).fetchone()
        if r is None:
            known = self.versions(name)
            if known and version is not None:
                raise NotFound(
                    f"locked context {name!r} has no version {version} (versions 1-{known[-1]})"
                )
            raise NotFound(f"no locked context named {name!r}")
        return _row(r)

    def versions(self, name: str) -> list[int]:
        """The version numbers of ``name``, oldest first."""
        return [
            r[0]
            for r in self.store.conn.execute(
                "SELECT version FROM locked_contexts WHERE name = ? ORDER BY version",
                (clean_name(name),),
            )
        ]

    def list(self, *, tag: str | None = None, limit: int = 100) -> list[LockSummary]:
        """Every locked context (newest version), most recently locked first."""
        rows: list[tuple[str, int, int, str, str, float, float]] = list(
            self.store.conn.execute(
                "SELECT l.name, l.version, c.n, l.preview, l.tags, l.created_at, c.first "
                "FROM locked_contexts l JOIN ("
                "  SELECT name, max(version) AS v, count(*) AS n, min(created_at) AS first"
                "  FROM locked_contexts GROUP BY name"
                ") c ON c.name = l.name AND c.v = l.version "
                "ORDER BY l.created_at DESC, l.name"
            )
        )
        out = [
            LockSummary(
                name=r[0],
                version=r[1],
                versions=r[2],
                preview=r[3],
                tags=tuple(json.loads(r[4])),
                created_at=r[5],
                first_locked_at=r[6],
            )
            for r in rows
        ]
        if tag is not None:
            wanted = redact(" ".join(tag.split()))
            out = [s for s in out if wanted in s.tags]
        return out[:limit]
