"""Opening the database: migrations, refusing files it must not touch, WAL and busy timeout."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import apsw
import pytest

import storage.db as dbmod
from storage import (
    DatabaseCorrupt,
    DatabaseLocked,
    DatabaseTooNew,
    MemoryStore,
    NewMemory,
    StoreError,
    StoreUnavailable,
)
from storage.embeddings import HashingEmbedder
from storage.paths import ENV_DATA_DIR, ENV_DB, default_db_path, git_root, project_key
from storage.schema import MIGRATIONS


def _user_version(path: Path) -> int:
    conn = apsw.Connection(str(path))
    try:
        return conn.pragma("user_version")
    finally:
        conn.close()


def _schema(conn: apsw.Connection) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL "
        "AND name NOT LIKE 'sqlite_stat%' ORDER BY name"  # PRAGMA optimize may add statistics
    ).fetchall()


# ---- migrations ------------------------------------------------------------------------------


def test_fresh_database_is_migrated_to_the_latest_version(db_path: Path) -> None:
    assert not db_path.parent.exists()  # the data directory is created on demand
    with MemoryStore(db_path) as s:
        assert s.conn.pragma("user_version") == len(MIGRATIONS)
        tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master")}
        for t in ("memories", "anchors", "edges", "contradictions", "embeddings", "memories_fts"):
            assert t in tables
        assert dbmod.integrity_ok(s.conn)
    assert _user_version(db_path) == len(MIGRATIONS)


def test_reopening_is_a_no_op(db_path: Path) -> None:
    with MemoryStore(db_path) as s:
        mid = s.add(NewMemory(text="reopen keeps this")).id
        schema = _schema(s.conn)
        generation = s.generation()
    with MemoryStore(db_path) as s:
        assert _schema(s.conn) == schema
        assert s.generation() == generation
        assert s.get(mid).text == "reopen keeps this"
        assert dbmod.migrate(s.conn) == len(MIGRATIONS)
        assert s.generation() == generation
    assert _user_version(db_path) == len(MIGRATIONS)


def test_a_failing_migration_rolls_back_completely(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MemoryStore(db_path) as s:
        s.add(NewMemory(text="survives a broken upgrade"))
    broken = [*MIGRATIONS, "CREATE TABLE half_done(x); INSERT INTO no_such_table VALUES (1);"]
    monkeypatch.setattr(dbmod, "MIGRATIONS", broken)
    with pytest.raises(apsw.SQLError):
        MemoryStore(db_path)
    monkeypatch.undo()
    with MemoryStore(db_path) as s:
        assert s.conn.pragma("user_version") == len(MIGRATIONS)
        names = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master")}
        assert "half_done" not in names
        assert s.count() == 1


def test_database_from_a_newer_version_is_refused(db_path: Path) -> None:
    with MemoryStore(db_path) as s:
        mid = s.add(NewMemory(text="written by the future")).id
    conn = apsw.Connection(str(db_path))
    conn.pragma("user_version", len(MIGRATIONS) + 1)
    conn.pragma("journal_mode", "delete")  # as a future version might leave it
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(DatabaseTooNew, match="newer"):
        MemoryStore(db_path)
    assert db_path.read_bytes() == before  # not even switched to WAL
    assert _user_version(db_path) == len(MIGRATIONS) + 1
    conn = apsw.Connection(str(db_path))
    assert conn.execute("SELECT text FROM memories WHERE id = ?", (mid,)).fetchone() == (
        "written by the future",
    )
    conn.close()


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(os.urandom(8192), id="random-bytes"),
        pytest.param(b"just some notes\nnot a database at all\n" * 50, id="text"),
        pytest.param(b"hi", id="tiny"),
        pytest.param(b"SQLite format 3\x00" + os.urandom(8176), id="sqlite-header-garbage"),
    ],
)
def test_a_file_that_is_not_a_database_is_refused_and_untouched(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(content)
    with pytest.raises(DatabaseCorrupt, match="not a valid Living Memory database") as err:
        MemoryStore(path, embedder=HashingEmbedder(dim=64))
    assert str(path) in str(err.value)
    assert path.read_bytes() == content
    assert not Path(str(path) + "-wal").exists() or Path(str(path) + "-wal").stat().st_size == 0


def test_another_applications_sqlite_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "state.vscdb"
    conn = apsw.Connection(str(path))
    conn.execute(
        "CREATE TABLE ItemTable(key TEXT UNIQUE, value BLOB); CREATE INDEX it ON ItemTable(value);"
        "INSERT INTO ItemTable VALUES ('chat', 'hello'), ('other', 'world');"
    )
    conn.close()
    before = path.read_bytes()
    with pytest.raises(DatabaseCorrupt, match="another application"):
        MemoryStore(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.vscdb"]


def test_an_empty_file_becomes_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.touch()
    with MemoryStore(path) as s:
        assert s.conn.pragma("user_version") == len(MIGRATIONS)


def test_unwritable_location_raises_store_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a regular file where a directory should be")
    with pytest.raises(StoreUnavailable, match="cannot create data directory"):
        MemoryStore(blocker / "sub" / "memory.db")
    with pytest.raises(StoreUnavailable):
        MemoryStore(blocker / "memory.db")
    assert blocker.read_text() == "a regular file where a directory should be"


def test_a_directory_in_place_of_the_database_raises_store_unavailable(tmp_path: Path) -> None:
    (tmp_path / "memory.db").mkdir()
    with pytest.raises(StoreUnavailable):
        MemoryStore(tmp_path / "memory.db")


def test_read_only_connect_needs_an_existing_database(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="no database"):
        dbmod.connect(tmp_path / "missing.db", readonly=True)
    assert not (tmp_path / "missing.db").exists()


def test_read_only_connect_reads_without_writing(db_path: Path) -> None:
    with MemoryStore(db_path) as s:
        s.add(NewMemory(text="read me"))
    conn = dbmod.connect(db_path, readonly=True)
    try:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
        with pytest.raises(apsw.ReadOnlyError):
            conn.execute("DELETE FROM memories")
    finally:
        conn.close()


def test_errors_are_store_errors_with_one_line_messages(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(b"garbage" * 100)
    with pytest.raises(StoreError) as err:
        MemoryStore(path)
    assert "\n" not in str(err.value)


# ---- connection settings ----------------------------------------------------------------


def test_wal_journal_and_busy_timeout(store: MemoryStore, db_path: Path) -> None:
    assert store.conn.pragma("journal_mode") == "wal"
    assert store.conn.pragma("busy_timeout") >= 1000
    assert store.conn.pragma("foreign_keys") == 1
    header = db_path.read_bytes()[:20]
    assert header[18] == 2 and header[19] == 2  # file format: WAL read and write versions


def _write_pages(s: MemoryStore, batches: int) -> None:
    for b in range(batches):  # ten commits of about 200 pages each
        s.add_many([NewMemory(text=f"memory {b} {i} " + f"word{i} " * 150) for i in range(100)])


def test_writes_within_checkpoint_later_leave_the_log_to_checkpoint(db_path: Path) -> None:
    with MemoryStore(db_path, embedder=HashingEmbedder(dim=16)) as s:
        assert s.conn.pragma("wal_autocheckpoint") == 1000
        with s.checkpoint_later():
            assert s.conn.pragma("wal_autocheckpoint") == 0
            _write_pages(s, 10)
        assert s.conn.pragma("wal_autocheckpoint") == 1000  # restored after the block
        log_pages, copied = s.checkpoint()
        assert log_pages > 1500 and copied == log_pages  # nothing was copied at a commit
        assert s.count() == 1000


def test_writes_outside_checkpoint_later_copy_the_log_as_they_go(db_path: Path) -> None:
    with MemoryStore(db_path, embedder=HashingEmbedder(dim=16)) as s:
        _write_pages(s, 10)
        log_pages, copied = s.checkpoint()
        assert log_pages < 1500 and copied == log_pages  # the log restarted after a commit


def test_busy_timeout_comes_from_the_environment(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVING_MEMORY_BUSY_TIMEOUT_MS", "2500")
    with MemoryStore(db_path) as s:
        assert s.conn.pragma("busy_timeout") == 2500
    monkeypatch.setenv("LIVING_MEMORY_BUSY_TIMEOUT_MS", "not a number")
    with MemoryStore(db_path) as s:
        assert s.conn.pragma("busy_timeout") == dbmod.DEFAULT_BUSY_TIMEOUT_MS


def test_a_lock_held_while_a_new_database_is_created_raises_database_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVING_MEMORY_BUSY_TIMEOUT_MS", "50")
    path = tmp_path / "memory.db"
    other = apsw.Connection(str(path))
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(DatabaseLocked, match="locked"):
            MemoryStore(path)
    finally:
        other.execute("ROLLBACK")
        other.close()
    with MemoryStore(path) as s:  # once released it opens and migrates
        assert s.conn.pragma("user_version") == len(MIGRATIONS)
        assert s.conn.pragma("journal_mode") == "wal"


def test_closed_store_refuses_use_with_a_clear_error(db_path: Path) -> None:
    s = MemoryStore(db_path)
    mid = s.add(NewMemory(text="before close")).id
    s.close()
    s.close()  # closing twice is harmless
    with pytest.raises(StoreError, match="closed"):
        s.get(mid)
    with MemoryStore(db_path) as again:
        assert again.get(mid).text == "before close"


# ---- paths -----------------------------------------------------------------------------------


def test_default_db_path_is_keyed_by_git_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_DB, raising=False)
    monkeypatch.setenv(ENV_DATA_DIR, str(tmp_path / "data"))
    repo = tmp_path / "My Project"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    assert git_root(repo / "src" / "pkg") == repo.resolve()
    from_sub = default_db_path(repo / "src" / "pkg")
    assert from_sub == default_db_path(repo)
    assert from_sub.parent.parent == tmp_path / "data" / "projects"
    assert from_sub.name == "memory.db"
    assert from_sub.parent.name == project_key(repo)
    assert from_sub.parent.name.startswith("My-Project-")
    other = tmp_path / "other"
    other.mkdir()
    assert default_db_path(other) != from_sub


def test_env_db_overrides_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DB, str(tmp_path / "x.db"))
    assert default_db_path(tmp_path) == tmp_path / "x.db"


def test_current_branch(tmp_path: Path) -> None:
    from storage.paths import current_branch

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature/login\n")
    assert current_branch(repo) == "feature/login"
    (repo / ".git" / "HEAD").write_text("3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39\n")
    assert current_branch(repo) is None  # detached
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert current_branch(worktree) == "main"
    assert current_branch(tmp_path / "nowhere") is None


def written_before_review(monkeypatch: pytest.MonkeyPatch) -> None:
    """New memories as versions before the review column wrote them (``monkeypatch.undo()``
    brings the current store back)."""
    prepare = MemoryStore._prepare

    def without_review(self: MemoryStore, m: NewMemory) -> dict[str, Any]:
        return {k: v for k, v in prepare(self, m).items() if k != "review"}

    monkeypatch.setattr(MemoryStore, "_prepare", without_review)


def test_a_store_with_memories_is_marked_for_new_short_forms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 4: memories stored before it carry short forms of compressor format 1."""
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    monkeypatch.setattr(dbmod, "MIGRATIONS", MIGRATIONS[:2])
    written_before_review(monkeypatch)
    with MemoryStore(old) as s:
        s.add(NewMemory(text="stored by an earlier version", index_label="adr: upon"))
    monkeypatch.undo()
    with MemoryStore(old) as s, MemoryStore(new) as fresh:
        assert s.cursors.get("levels") == {"format": "1"}
        assert fresh.cursors.get("levels") == {"format": "2"}


def test_reindex_lets_other_writers_in_between_batches(tmp_path: Path) -> None:
    """The keyword index is rebuilt in batches: a writer that cannot wait at all (busy timeout
    0) still gets the write lock between them, and the result is complete."""
    import apsw

    from storage import MemoryStore, NewMemory
    from storage.embeddings import HashingEmbedder

    db = tmp_path / "m.db"
    store = MemoryStore(db, embedder=HashingEmbedder(dim=16))
    store.add_many([NewMemory(f"memory number {i} about payments") for i in range(1_000)])
    other = apsw.Connection(str(db))
    other.setbusytimeout(0)
    got_in: list[int] = []

    def between(done: int, total: int) -> None:
        other.execute("BEGIN IMMEDIATE")  # raises BusyError if reindex still holds the lock
        other.execute("COMMIT")
        got_in.append(done)

    result = store.reindex(fts_progress=between, batch=100)
    other.close()
    store.close()
    assert got_in == list(range(100, 1_001, 100))
    assert result["fts_rows"] == 1_000


def test_migration_7_turns_weak_open_contradictions_into_suspected_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19: an old store's open contradictions found by a weak local rule (value,
    preference, changed, polarity: the reason's prefix) become suspected and lose their
    CONTRADICTS edge; strong ones (a record superseding another, a judge, a fact key, one
    added by hand) stay open, settled ones stay settled; ids, data and index are kept."""
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    monkeypatch.setattr(dbmod, "MIGRATIONS", MIGRATIONS[:6])
    written_before_review(monkeypatch)
    reasons = {
        "polarity": "polarity: one says not — “Never run pytest” — the other says so",
        "value": "value: port: 8080 vs 9090",
        "preference": "preference: pytest over unittest / unittest over pytest",
        "changed": "changed: later: “Replace Selenium” — earlier: “Use Selenium”",
        "superseded": "superseded: record 15 supersedes record 4",
        "amended": "amended: record 33 in part supersedes record 3",
        "judged": "judged: the model says they disagree",
        "fact": "different values for db.port",
        "by hand": None,
        "settled": "changed: later: “dropped X” — earlier: “use X”",
    }
    ids: dict[str, int] = {}
    with MemoryStore(old, embedder=HashingEmbedder(dim=16)) as s:
        assert s.conn.pragma("user_version") == 6
        for n, (name, reason) in enumerate(reasons.items()):
            a = s.add(NewMemory(text=f"memory {n} one side")).id
            b = s.add(NewMemory(text=f"memory {n} other side")).id
            ids[name] = s.contradictions.add(a, b, reason=reason, confidence=0.7)
        s.contradictions.resolve(ids["settled"], "both_valid", note="kept")
        before = {
            r[0]: r[1:]
            for r in s.conn.execute(
                "SELECT id, memory_a, memory_b, reason, confidence, detected_at, note "
                "FROM contradictions"
            )
        }
    monkeypatch.undo()
    with MemoryStore(old, embedder=HashingEmbedder(dim=16)) as s:
        assert s.conn.pragma("user_version") == len(MIGRATIONS) >= 7
        status = {c.id: c.status.value for c in s.contradictions.query(None)}
        weak = ("polarity", "value", "preference", "changed")
        assert {name: status[cid] for name, cid in ids.items()} == {
            **{name: "suspected" for name in weak},
            **{name: "open" for name in ("superseded", "amended", "judged", "fact", "by hand")},
            "settled": "resolved",
        }
        after = {
            r[0]: r[1:]
            for r in s.conn.execute(
                "SELECT id, memory_a, memory_b, reason, confidence, detected_at, note "
                "FROM contradictions"
            )
        }
        assert after == before
        # only what is not suspected keeps its CONTRADICTS edge (both directions)
        edged = {
            (min(x, y), max(x, y))
            for x, y in s.conn.execute(
                "SELECT source_id, target_id FROM edges WHERE type = 'CONTRADICTS'"
            )
        }
        pairs = {name: tuple(before[cid][:2]) for name, cid in ids.items()}
        assert edged == {pairs[name] for name in pairs if name not in weak}
        assert {c.id for c in s.contradictions.query()} == {
            ids[n] for n in ("superseded", "amended", "judged", "fact", "by hand")
        }
        with pytest.raises(apsw.ConstraintError):
            s.conn.execute("UPDATE contradictions SET status = 'bogus' WHERE id = ?", (1,))
        # the migrated table and its index are the ones a new store gets
        with MemoryStore(new, embedder=HashingEmbedder(dim=16)) as fresh:
            assert _schema(s.conn) == _schema(fresh.conn)
        assert ("contradictions_open",) in s.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'contradictions'"
        ).fetchall()


def test_the_candidate_pairs_migration_keeps_a_store_and_adds_the_waiting_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of the version before candidate pairs opens with its memories and
    contradictions as they were and an empty list of pairs waiting for a judge."""
    from storage import conflict_candidates

    old = tmp_path / "old.db"
    monkeypatch.setattr(dbmod, "MIGRATIONS", MIGRATIONS[:7])
    written_before_review(monkeypatch)
    with MemoryStore(old, embedder=HashingEmbedder(dim=16)) as s:
        a = s.add(NewMemory(text="We use PostgreSQL as the primary database")).id
        b = s.add(NewMemory(text="We moved off PostgreSQL: MySQL is the primary database")).id
        cid = s.contradictions.add(a, b, reason="judged: another database", confidence=0.9)
    monkeypatch.undo()
    with MemoryStore(old, embedder=HashingEmbedder(dim=16)) as s:
        assert s.conn.pragma("user_version") == len(MIGRATIONS)
        assert [c.id for c in s.contradictions.query()] == [cid]
        assert conflict_candidates.pending(s) == []
        assert conflict_candidates.propose(s, a, b, 0.8, "names postgresql") is not None
        assert conflict_candidates.propose(s, a, b, 0.8, "again") is None  # one pair, once
        assert [(r.older, r.newer) for r in conflict_candidates.pending(s)] == [(a, b)]
