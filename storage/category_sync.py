"""Derived categories in SQLite: reading what they are built from, writing them in bulk.

The categories a user names (origin ``manual``) are never touched here; the derived ones
(origin ``area`` from paths and modules, ``tag`` from tags) are synchronised with what the
engine derives, in one transaction, and their summaries carry the fingerprint of the members
they were made from, so only changed categories are summarised again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from storage import db as dbmod
from storage.redact import redact
from storage.rows import bump

DERIVED = ("area", "tag")


@dataclass(frozen=True)
class CategoryRow:
    """A category as stored; ``members`` counts its own members (not its children's)."""

    id: int
    name: str
    origin: str
    parent_id: int | None
    description: str | None
    summary: str | None
    summary_updated_at: float | None
    fingerprint: str | None
    members: int


@dataclass(frozen=True)
class MemberFacts:
    """What a category summary needs of one member, without loading the whole memory."""

    id: int
    kind: str
    importance: float
    citations: int
    created_at: float
    label: str


@dataclass(frozen=True)
class SyncReport:
    created: int = 0
    deleted: int = 0
    added: int = 0
    removed: int = 0


def current_anchors(conn: apsw.Connection, after_id: int = 0) -> Iterator[tuple[int, str, str]]:
    """(memory id, anchor type, value) of every file, module and tag anchor of a memory that
    holds now (not archived, not superseded), of memories after ``after_id``."""
    yield from conn.execute(
        "SELECT a.memory_id, a.type, a.value FROM anchors a JOIN memories m ON m.id = a.memory_id "
        "WHERE m.id > ? AND m.archived = 0 AND m.superseded_by IS NULL "
        "AND a.type IN ('file','module','tag')",
        (after_id,),
    )


def last_memory_id(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM memories").get)


def topic_anchors(
    conn: apsw.Connection, memory_ids: Sequence[int]
) -> Iterator[tuple[int, str, str]]:
    """(memory id, type, value) of the module and tag anchors of ``memory_ids``."""
    yield from conn.execute(
        "SELECT memory_id, type, value FROM anchors WHERE type IN ('module','tag') "
        "AND memory_id IN (SELECT value FROM json_each(?))",
        (json.dumps([int(i) for i in memory_ids]),),
    )


def add_members(conn: apsw.Connection, pairs: Sequence[tuple[int, int]]) -> int:
    """Add (category id, memory id) memberships; returns how many were new."""
    if not pairs:
        return 0
    now = time.time()
    with dbmod.immediate(conn):
        before = conn.total_changes()
        conn.executemany(
            "INSERT OR IGNORE INTO category_members(category_id, memory_id, added_at) "
            "VALUES (?, ?, ?)",
            [(c, m, now) for c, m in pairs],
        )
        added = conn.total_changes() - before
        if added:
            bump(conn)
    return added


_ROW = (
    "SELECT c.id, c.name, c.origin, c.parent_id, c.description, c.summary, "
    "c.summary_updated_at, c.fingerprint, "
    "(SELECT count(*) FROM category_members cm WHERE cm.category_id = c.id) FROM categories c"
)


def rows(conn: apsw.Connection) -> list[CategoryRow]:
    return [CategoryRow(*r) for r in conn.execute(f"{_ROW} ORDER BY c.name")]


def areas_named(conn: apsw.Connection, names: Sequence[str]) -> dict[str, CategoryRow]:
    """The area categories among ``names``, by name."""
    found = conn.execute(
        f"{_ROW} WHERE c.origin = 'area' AND c.name IN (SELECT value FROM json_each(?))",
        (json.dumps(list(names)),),
    )
    return {r[1]: CategoryRow(*r) for r in found}


def memberships(
    conn: apsw.Connection, category_ids: Sequence[int] | None = None
) -> Iterator[tuple[int, int, float, int]]:
    """(category id, memory id, memory updated_at, memory current?) of every membership (of
    ``category_ids`` when given)."""
    sql = (
        "SELECT cm.category_id, m.id, m.updated_at, "
        "(m.archived = 0 AND m.superseded_by IS NULL) "
        "FROM category_members cm JOIN memories m ON m.id = cm.memory_id"
    )
    if category_ids is None:
        yield from conn.execute(sql)
        return
    for start in range(0, len(category_ids), 900):
        chunk = list(category_ids[start : start + 900])
        marks = ",".join("?" * len(chunk))
        yield from conn.execute(sql + f" WHERE cm.category_id IN ({marks})", chunk)


def sync(
    conn: apsw.Connection,
    wanted: Mapping[str, tuple[str, str | None, str]],
    members: Mapping[str, set[int]],
) -> SyncReport:
    """Make the derived categories exactly ``wanted`` (name → origin, parent name,
    description) with exactly ``members``; manual categories and their members stay."""
    now = time.time()
    existing = {r.name: r for r in rows(conn)}
    created = deleted = added = removed = 0
    with dbmod.immediate(conn):
        for name, (origin, _, description) in wanted.items():
            row = existing.get(name)
            if row is None:
                conn.execute(
                    "INSERT INTO categories(name, origin, description, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    (name, origin, description, now),
                )
                created += 1
            elif row.origin in DERIVED and (row.origin, row.description) != (origin, description):
                conn.execute(
                    "UPDATE categories SET origin = ?, description = ? WHERE id = ?",
                    (origin, description, row.id),
                )
        ids = {n: i for i, n in conn.execute("SELECT id, name FROM categories")}
        origins: dict[str, str] = dict(conn.execute("SELECT name, origin FROM categories"))
        for name, (_, parent, _) in wanted.items():
            if origins.get(name) in DERIVED:
                conn.execute(
                    "UPDATE categories SET parent_id = ? WHERE id = ? AND parent_id IS NOT ?",
                    (
                        ids.get(parent) if parent else None,
                        ids[name],
                        ids.get(parent) if parent else None,
                    ),
                )
        for name, row in existing.items():
            if row.origin in DERIVED and name not in wanted:
                conn.execute("DELETE FROM categories WHERE id = ?", (row.id,))
                deleted += 1
        have: dict[int, set[int]] = {}
        for cid, mid in conn.execute(
            "SELECT cm.category_id, cm.memory_id FROM category_members cm "
            "JOIN categories c ON c.id = cm.category_id WHERE c.origin IN ('area','tag')"
        ):
            have.setdefault(cid, set()).add(mid)
        for name, mids in members.items():
            if origins.get(name) not in DERIVED:
                continue
            cid = ids[name]
            old = have.pop(cid, set())
            new = mids - old
            gone = old - mids
            if new:
                conn.executemany(
                    "INSERT OR IGNORE INTO category_members(category_id, memory_id, added_at) "
                    "VALUES (?, ?, ?)",
                    [(cid, m, now) for m in sorted(new)],
                )
            if gone:
                conn.executemany(
                    "DELETE FROM category_members WHERE category_id = ? AND memory_id = ?",
                    [(cid, m) for m in sorted(gone)],
                )
            added += len(new)
            removed += len(gone)
        for cid, old in have.items():  # derived categories that keep no member of theirs
            conn.executemany(
                "DELETE FROM category_members WHERE category_id = ? AND memory_id = ?",
                [(cid, m) for m in old],
            )
            removed += len(old)
        if created or deleted or added or removed:
            bump(conn)
    return SyncReport(created, deleted, added, removed)


@dataclass(frozen=True)
class ScopeStats:
    """The current memories of a category and its sub-areas, as a summary needs them."""

    count: int
    kinds: dict[str, int]
    first: float | None
    last: float | None
    top: tuple[MemberFacts, ...]  # most salient first
    topics: tuple[tuple[str, str, int], ...]  # (anchor type, value, memories) of modules, tags


_SCOPE = "temp.lm_category_scope"


def fill_scope(conn: apsw.Connection, category_ids: Sequence[int]) -> None:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS lm_category_scope(id INTEGER PRIMARY KEY)")
    conn.execute(f"DELETE FROM {_SCOPE}")
    for start in range(0, len(category_ids), 900):
        chunk = list(category_ids[start : start + 900])
        marks = ",".join("?" * len(chunk))
        conn.execute(
            f"INSERT OR IGNORE INTO {_SCOPE}(id) SELECT cm.memory_id FROM category_members cm "
            "JOIN memories m ON m.id = cm.memory_id WHERE m.archived = 0 "
            f"AND m.superseded_by IS NULL AND cm.category_id IN ({marks})",
            chunk,
        )


_FINGERPRINT = (
    "count(*), total(m.id), total(m.updated_at), "
    "total((m.id * 7919 + CAST(m.updated_at * 1000 AS INTEGER)) % 1000000007)"
)


def _fp(row: Sequence[Any]) -> str:
    return f"{row[0]}:{int(row[1])}:{row[2]:.3f}:{int(row[3])}"


def own_fingerprints(
    conn: apsw.Connection, category_ids: Sequence[int] | None = None
) -> dict[int, str]:
    """:func:`scope_fingerprint` of each category's own members, in one pass."""
    sql = (
        f"SELECT cm.category_id, {_FINGERPRINT} FROM category_members cm "
        "JOIN memories m ON m.id = cm.memory_id "
        "WHERE m.archived = 0 AND m.superseded_by IS NULL"
    )
    if category_ids is None:
        return {r[0]: _fp(r[1:]) for r in conn.execute(sql + " GROUP BY cm.category_id")}
    out: dict[int, str] = {}
    for start in range(0, len(category_ids), 900):
        chunk = list(category_ids[start : start + 900])
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
            sql + f" AND cm.category_id IN ({marks}) GROUP BY cm.category_id", chunk
        ):
            out[r[0]] = _fp(r[1:])
    return out


def scope_fingerprint(conn: apsw.Connection, category_ids: Sequence[int]) -> str:
    """What the current members of ``category_ids`` are, in a few numbers: it changes when a
    member joins, leaves, is archived or superseded, or is edited."""
    fill_scope(conn, category_ids)
    return _fp(
        conn.execute(f"SELECT {_FINGERPRINT} FROM {_SCOPE} s JOIN memories m ON m.id = s.id").get
    )


def scope_stats(conn: apsw.Connection, salience_sql: str, top: int) -> ScopeStats:
    """Counts by kind, time span, the ``top`` most salient members (``salience_sql`` over
    ``m``) and shared modules/tags of the scope :func:`fill_scope` filled last."""
    kinds: dict[str, int] = {}
    first: float | None = None
    last: float | None = None
    for kind, n, lo, hi in conn.execute(
        "SELECT m.kind, count(*), min(m.created_at), max(m.created_at) "
        f"FROM {_SCOPE} s JOIN memories m ON m.id = s.id GROUP BY m.kind"
    ):
        kinds[kind] = n
        first = lo if first is None else min(first, lo)
        last = hi if last is None else max(last, hi)
    items = tuple(
        MemberFacts(r[0], r[1], r[2], r[3], r[4], " ".join(str(r[5]).split()))
        for r in conn.execute(
            "SELECT m.id, m.kind, m.importance, m.citation_count, m.created_at, "
            "coalesce(nullif(m.index_label, ''), nullif(m.compressed, ''), substr(m.text, 1, 120)) "
            f"FROM {_SCOPE} s JOIN memories m ON m.id = s.id "
            f"ORDER BY {salience_sql} DESC, m.created_at DESC, m.id LIMIT ?",
            (top,),
        )
    )
    topics = tuple(
        (t, v, n)
        for t, v, n in conn.execute(
            "SELECT a.type, a.value, count(*) FROM "
            f"{_SCOPE} s JOIN anchors a ON a.memory_id = s.id "
            "WHERE a.type IN ('module','tag') GROUP BY a.type, a.value HAVING count(*) > 1"
        )
    )
    return ScopeStats(sum(kinds.values()), kinds, first, last, items, topics)


def set_summaries(conn: apsw.Connection, summaries: Mapping[int, tuple[str, str]]) -> int:
    """Store (summary, fingerprint) per category id (redacted); returns how many."""
    if not summaries:
        return 0
    now = time.time()
    with dbmod.immediate(conn):
        conn.executemany(
            "UPDATE categories SET summary = ?, fingerprint = ?, summary_updated_at = ? "
            "WHERE id = ?",
            [(redact(s), fp, now, cid) for cid, (s, fp) in summaries.items()],
        )
        bump(conn)
    return len(summaries)


def categories_of(conn: apsw.Connection, memory_ids: Sequence[int]) -> dict[int, list[int]]:
    """memory id → the ids of the categories it belongs to."""
    return _membership(conn, "memory_id", "category_id", memory_ids)


def members_of(conn: apsw.Connection, category_ids: Sequence[int]) -> dict[int, list[int]]:
    """category id → the ids of its members (current or not)."""
    return _membership(conn, "category_id", "memory_id", category_ids)


def _membership(
    conn: apsw.Connection, key: str, value: str, ids: Sequence[int]
) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for k, v in conn.execute(
        f"SELECT {key}, {value} FROM category_members WHERE {key} IN "
        "(SELECT value FROM json_each(?))",
        (json.dumps([int(i) for i in ids]),),
    ):
        out.setdefault(k, []).append(v)
    return out
