"""Locked contexts: versions are kept, the same content twice adds nothing, secrets are
redacted, and wrong names or versions get a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import InvalidInput, MemoryStore, NewMemory, NotFound


def lock(store: MemoryStore, name: str, content: str, **kw: object) -> tuple[object, bool]:
    return store.locked_contexts.lock(name, content, preview=content[:20], **kw)  # type: ignore[arg-type]


def test_a_new_lock_keeps_the_old_version(store: MemoryStore) -> None:
    lock(store, "auth", "JWT sessions")
    lock(store, "auth", "Cookie sessions")
    locks = store.locked_contexts
    assert locks.get("auth").content == "Cookie sessions"
    assert locks.get("auth", 1).content == "JWT sessions"
    assert locks.versions("auth") == [1, 2]


def test_the_same_content_again_adds_no_version(store: MemoryStore) -> None:
    first, created = lock(store, "auth", "JWT sessions")
    again, created_again = lock(store, "auth", "JWT sessions")
    assert created and not created_again
    assert again == first


def test_the_list_shows_each_name_once_with_its_newest_version(store: MemoryStore) -> None:
    lock(store, "a", "one", tags=["x"])
    lock(store, "b", "two")
    lock(store, "a", "three", tags=["x"])
    listed = {s.name: s for s in store.locked_contexts.list()}
    assert set(listed) == {"a", "b"}
    assert (listed["a"].version, listed["a"].versions) == (2, 2)
    assert [s.name for s in store.locked_contexts.list(tag="x")] == ["a"]


def test_secrets_are_redacted_before_storing(store: MemoryStore) -> None:
    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    lock(store, "keys", f"the key is {key}")
    raw = store.conn.execute("SELECT content FROM locked_contexts").fetchone()[0]
    assert key not in raw and "REDACTED" in raw


def test_unknown_names_and_versions_say_what_exists(store: MemoryStore) -> None:
    lock(store, "auth", "JWT")
    with pytest.raises(NotFound, match="no locked context named 'nope'"):
        store.locked_contexts.get("nope")
    with pytest.raises(NotFound, match="no version 7"):
        store.locked_contexts.get("auth", 7)


def test_bad_input_is_refused_and_nothing_is_written(store: MemoryStore) -> None:
    for name, content in (("", "x"), ("n", "  "), ("x" * 201, "x")):
        with pytest.raises(InvalidInput):
            lock(store, name, content)
    with pytest.raises(NotFound):
        lock(store, "n", "x", memory_ids=[999])
    assert store.conn.execute("SELECT count(*) FROM locked_contexts").fetchone()[0] == 0


def test_locks_survive_reopening_the_database(db_path: Path, store: MemoryStore) -> None:
    mid = store.add(NewMemory(text="pinned fact")).id
    lock(store, "pinned", "body", memory_ids=[mid])
    store.close()
    with MemoryStore(db_path) as again:
        got = again.locked_contexts.get("pinned")
    assert got.memory_ids == (mid,)
