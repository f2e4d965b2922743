"""Derived categories in SQLite: the migration that adds them, and bulk synchronisation that
never touches what a user made."""

from __future__ import annotations

from pathlib import Path

import apsw

from storage import MemoryStore, NewMemory
from storage import category_sync as cs
from storage.schema import MIGRATIONS


def test_a_store_from_before_gets_origin_fingerprint_and_llm_tables(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    # a store of version 5 (before derived categories), written as that version wrote it
    conn = apsw.Connection(str(old))
    for number, script in enumerate(MIGRATIONS[:5], start=1):
        conn.execute(script)
        conn.pragma("user_version", number)
    conn.execute(
        "INSERT INTO memories(id, kind, text, content_hash, created_at, updated_at, valid_from) "
        "VALUES (1, 'fact', 'a memory in a category made by hand', 'h1', 0, 0, 0);"
        "INSERT INTO categories(id, name, created_at) VALUES (1, 'onboarding', 0);"
        "INSERT INTO category_members(category_id, memory_id, added_at) VALUES (1, 1, 0);"
    )
    conn.close()
    with MemoryStore(old) as s:
        (row,) = [r for r in cs.rows(s.conn) if r.name == "onboarding"]
        assert (row.origin, row.fingerprint, row.members) == ("manual", None, 1)
        tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master")}
        assert {"llm_cache", "llm_usage"} <= tables


def test_sync_keeps_manual_categories_and_only_moves_derived_members(
    store: MemoryStore,
) -> None:
    ids = [store.add(NewMemory(text=f"memory {i}")).id for i in range(4)]
    store.categories.assign(ids[0], "mine")
    first = cs.sync(
        store.conn,
        {
            "src/": ("area", None, "files under src/"),
            "src/a/": ("area", "src/", "a"),
            "mine": ("tag", None, "not mine to take"),
        },
        {"src/": {ids[1]}, "src/a/": {ids[2], ids[3]}, "mine": {ids[1], ids[2]}},
    )
    assert (first.created, first.added) == (2, 3)
    rows = {r.name: r for r in cs.rows(store.conn)}
    assert rows["mine"].origin == "manual" and rows["mine"].members == 1  # left alone
    assert rows["src/a/"].parent_id == rows["src/"].id
    second = cs.sync(store.conn, {"src/": ("area", None, "files under src/")}, {"src/": {ids[2]}})
    assert (second.deleted, second.added, second.removed) == (1, 1, 1)
    assert store.categories.of(ids[0]) == ["mine"]
    assert store.categories.of(ids[2]) == ["src/"]


def test_scope_statistics_count_each_current_member_once(store: MemoryStore) -> None:
    ids = [
        store.add(NewMemory(text=f"memory {i}", created_at=1_700_000_000 + i)).id for i in range(3)
    ]
    cs.sync(
        store.conn,
        {"a/": ("area", None, "a"), "b/": ("area", None, "b")},
        {"a/": {ids[0], ids[1]}, "b/": {ids[1], ids[2]}},
    )
    rows = {r.name: r.id for r in cs.rows(store.conn)}
    both = [rows["a/"], rows["b/"]]
    before = cs.scope_fingerprint(store.conn, both)
    stats = cs.scope_stats(store.conn, "m.importance", 10)
    assert stats.count == 3 and stats.kinds == {"fact": 3}
    assert (stats.first, stats.last) == (1_700_000_000, 1_700_000_002)
    store.archive(ids[1], "test")
    assert cs.scope_fingerprint(store.conn, both) != before
    assert cs.scope_stats(store.conn, "m.importance", 10).count == 2
    assert (
        cs.own_fingerprints(store.conn)[rows["a/"]] != cs.own_fingerprints(store.conn)[rows["b/"]]
    )
