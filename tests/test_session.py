"""The project session: one root discovery and one preparation for every front door."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from project_fixtures import make_git_repo

from predictive import operations as ops
from predictive.session import ProjectSession, find_root
from storage import MemoryStore, NewMemory
from storage.conflict_pairs import BACKLOG
from storage.embeddings import HashingEmbedder


def session_at(root: Path, db: Path) -> ProjectSession:
    return ProjectSession.open(root, db, embedder=lambda: HashingEmbedder(dim=64))


def test_a_folder_inside_a_repository_is_served_as_the_repository(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    inner = repo.root / "src" / "deep"
    inner.mkdir(parents=True)
    assert find_root(inner) == repo.root.resolve()
    assert find_root(start=inner) == repo.root.resolve()


def test_a_folder_outside_any_repository_is_its_own_project(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_root(plain) == plain.resolve()


def test_without_a_folder_the_working_directory_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_git_repo(tmp_path)
    monkeypatch.chdir(repo.root / "src")
    assert find_root() == repo.root.resolve()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert find_root(start=tmp_path / "missing") == outside.resolve()


def test_a_root_that_is_not_a_folder_is_refused_by_name(tmp_path: Path) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("x", encoding="utf-8")
    for bad in (afile, tmp_path / "missing"):
        with pytest.raises(ops.ArgumentError) as e:
            find_root(bad)
        assert e.value.argument == "root"
        assert str(bad) in e.value.message


def test_prepare_learns_a_new_project_then_embeds_and_fills_levels(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    session = session_at(repo.root, tmp_path / "memory.db")
    try:
        first = session.prepare()
        assert first.first_run is not None and first.first_run.added > 0
        store = session.store
        assert store.embeddings.pending() == 0
        assert store.levels.count_lacking() == 0
        assert not session.learning.active
        again = session.prepare()
        assert again.first_run is None and again.embedded == 0 and again.levels == 0
    finally:
        session.close()


def test_prepare_without_ingest_leaves_the_history_alone(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    db = tmp_path / "memory.db"
    with MemoryStore(db) as store:  # no embedder: the memory waits for its vector
        store.add(NewMemory(text="Deploys go through the canary for ten minutes"))
    session = session_at(repo.root, db)
    try:
        out = session.prepare(ingest=False)
        assert out.first_run is None and out.embedded == 1
        assert session.needs_first_run()
    finally:
        session.close()


def test_a_learned_store_is_prepared_without_loading_the_ingestion(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder=HashingEmbedder(dim=64)) as store:
        store.add(NewMemory(text="Deploys go through the canary for ten minutes"))
    probe = (
        "import sys; from pathlib import Path; from storage.embeddings import HashingEmbedder; "
        "from predictive.session import ProjectSession; "
        f"s = ProjectSession.open(Path({str(tmp_path)!r}), Path({str(db)!r}), "
        "embedder=lambda: HashingEmbedder(dim=64)); out = s.prepare(ingest=False); s.close(); "
        "print(out.embedded, out.passages, 'predictive.ingest' in sys.modules)"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["0", "0", "False"]


def test_a_contradiction_scan_left_behind_is_taken_up_by_the_preparation(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder=HashingEmbedder(dim=64)) as store:
        ids = [
            store.add(NewMemory(text=f"Service {i} retries three times before failing")).id
            for i in range(3)
        ]
        store.cursors.set(BACKLOG, {"after": str(ids[0])})  # a scan stopped after the first
    session = session_at(tmp_path, db)
    try:
        assert session.has_learning_to_do()
        session.prepare(ingest=False)
        assert session.store.cursors.get(BACKLOG) == {"after": str(ids[-1])}
        assert not session.has_learning_to_do()
    finally:
        session.close()


def test_a_cancelled_level_fill_keeps_what_it_filled(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with MemoryStore(db) as store:
        for i in range(3):
            store.add(NewMemory(text=f"Release step {i}: tag, build, upload, announce"))
        store.levels.clear(("compressed", "index_label"))
        assert store.levels.count_lacking() == 3
    session = session_at(tmp_path, db)

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    try:
        with pytest.raises(Stop):
            session.fill_levels(check=stop)
        assert session.store.levels.count_lacking() == 3  # nothing half-written
        assert session.fill_levels() == 3
        assert session.store.levels.count_lacking() == 0
    finally:
        session.close()


def test_a_context_comes_from_the_long_lived_engine(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    session = session_at(repo.root, tmp_path / "memory.db")
    try:
        session.prepare()
        engine = session.engine
        path = str(repo.root / "README.md")
        ctx = session.context(ops.ContextArgs(path=path))
        assert ctx.file.path == "README.md"
        assert session.engine is engine
        session.configure(None)
        assert session.engine is not engine
    finally:
        session.close()


def test_a_session_over_a_borrowed_store_leaves_it_open(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.db") as store:
        ProjectSession(tmp_path, store, owns_store=False).close()
        assert store.stats().memories == 0  # still usable
    assert os.path.exists(tmp_path / "memory.db")


def test_a_new_budget_keeps_the_one_citation_checker(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    session = session_at(repo.root, tmp_path / "memory.db")
    try:
        checker = session.engine.staleness
        session.configure(None)
        assert session.engine.staleness is checker
    finally:
        session.close()
