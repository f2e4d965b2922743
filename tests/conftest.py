"""Shared fixtures: real SQLite files in tmp folders, the hashing embedder, the real model."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import MemoryStore, NewMemory
from storage.embeddings import HashingEmbedder, OnnxEmbedder, load_embedder

# Real decision records written by others, vendored with their licences (tests/data/README.md).
TEST_DATA = Path(__file__).resolve().parent / "data"

# Every table the store writes; snapshots of them prove that a refused call changed nothing.
TABLES = (
    "meta",
    "memories",
    "anchors",
    "artifacts",
    "edges",
    "contradictions",
    "access_log",
    "categories",
    "category_members",
    "embeddings",
    "memories_fts",
)


@pytest.fixture(autouse=True)
def fresh_llm_endpoints() -> Iterator[None]:
    """Each test starts with no endpoint's breaker, slots or usage (as a fresh process): a local
    test server may get a port an earlier test's server had."""
    from predictive import llm

    llm.reset()
    yield
    llm.reset()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a CLI subprocess: its own database, the hashing embedder."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY")}
    e["LIVING_MEMORY_DB"] = str(tmp_path / "data" / "memory.db")
    e["LIVING_MEMORY_EMBEDDER"] = "hashing"
    e["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return e


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "memory.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(db_path, embedder=HashingEmbedder(dim=64))
    yield s
    s.close()


@pytest.fixture
def add(store: MemoryStore) -> Callable[..., int]:
    """``add("text", kind=..., anchors=[...])`` → the new memory's id."""

    def _add(text: str, **kw: Any) -> int:
        return store.add(NewMemory(text=text, **kw)).id

    return _add


def snapshot_of(store: MemoryStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, ordered, so two snapshots compare equal iff nothing changed."""
    conn = store.conn
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in TABLES:
        rowid = "rowid, " if table == "memories_fts" else ""
        out[table] = sorted(
            conn.execute(f"SELECT {rowid}* FROM {table}").fetchall(), key=lambda r: repr(r)
        )
    return out


@pytest.fixture
def snapshot(store: MemoryStore) -> Callable[[], dict[str, list[tuple[Any, ...]]]]:
    return lambda: snapshot_of(store)


@pytest.fixture(scope="session")
def real_embedder() -> OnnxEmbedder:
    """The packaged all-MiniLM-L6-v2, loaded once per test session (offline)."""
    return load_embedder()
