"""The usearch index is a cache of the vectors in SQLite: saved beside the database, trusted
only when it matches, otherwise rebuilt or caught up."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from storage import MemoryStore, NewMemory, search
from storage.embeddings import HashingEmbedder
from storage.repository import default_index_path
from storage.vector_index import VectorIndex

TEXTS = [
    "postgres connection pool exhausted under load",
    "redis cache keys expire after one hour",
    "the login form validates email addresses",
    "deploy script pushes docker images to the registry",
    "flaky test in the payment webhook handler",
    "use ruff for linting and formatting",
    "session cookies are http only and secure",
    "the search page paginates with cursors",
]


def _open(db: Path, dim: int = 64) -> MemoryStore:
    return MemoryStore(db, embedder=HashingEmbedder(dim=dim))


def _seed(db: Path) -> list[int]:
    """A store with TEXTS, its index opened, saved on close."""
    with _open(db) as s:
        ids = [r.id for r in s.add_many([NewMemory(text=t) for t in TEXTS])]
        assert s.vectors() is not None
    return ids


def _embedding_rows(store: MemoryStore) -> int:
    return store.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]


def _top(store: MemoryStore, text: str) -> int:
    return search(store, text, mode="vector", k=1)[0].memory.id


def test_index_and_sidecar_are_saved_on_close(db_path: Path) -> None:
    ids = _seed(db_path)
    index = default_index_path(db_path)
    sidecar = index.with_name(index.name + ".json")
    assert index.is_file() and index.stat().st_size > 0
    meta = json.loads(sidecar.read_text())
    assert meta["model_id"] == "hashing-64" and meta["dim"] == 64
    assert meta["count"] == len(ids)
    with _open(db_path) as s:
        vi = s.vectors()
        assert vi.state.action == "loaded"
        assert len(vi) == len(ids)
        assert (
            meta["generation"]
            == s.conn.execute(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vector_generation'"
            ).fetchone()[0]
        )
        assert _top(s, TEXTS[3]) == ids[3]


def test_a_store_that_only_added_rebuilds_its_index_later(db_path: Path) -> None:
    with _open(db_path) as s:  # never searched: no index was built or saved
        ids = [s.add(NewMemory(text=t)).id for t in TEXTS]
    with _open(db_path) as s:
        vi = s.vectors()
        assert vi.state.action == "created"
        assert len(vi) == len(ids)
        assert _top(s, TEXTS[5]) == ids[5]
    assert default_index_path(db_path).is_file()


def test_missing_index_file_is_created_again(db_path: Path) -> None:
    ids = _seed(db_path)
    default_index_path(db_path).unlink()
    with _open(db_path) as s:
        vi = s.vectors()
        assert (vi.state.action, vi.state.reason) == ("created", "missing")
        assert len(vi) == len(ids)
        assert _top(s, TEXTS[1]) == ids[1]


def test_missing_sidecar_means_rebuild(db_path: Path) -> None:
    _seed(db_path)
    index = default_index_path(db_path)
    index.with_name(index.name + ".json").unlink()
    with _open(db_path) as s:
        assert s.vectors().state.action == "created"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "scrambled-body"])
def test_corrupt_index_is_rebuilt_and_search_still_works(db_path: Path, damage: str) -> None:
    ids = _seed(db_path)
    index = default_index_path(db_path)
    data = index.read_bytes()
    if damage == "garbage":
        index.write_bytes(os.urandom(len(data)))
    elif damage == "truncated":
        index.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        index.write_bytes(b"")
    else:
        index.write_bytes(data[:64] + os.urandom(len(data) - 64))
    with _open(db_path) as s:
        vi = s.vectors()
        assert vi.state.action == "rebuilt"
        assert len(vi) == len(ids)
        for i, text in enumerate(TEXTS):
            assert _top(s, text) == ids[i]
    with _open(db_path) as s:  # the rebuilt index was saved and is trusted next time
        assert s.vectors().state.action == "loaded"


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("model_id", "some-other-model", "model changed"),
        ("dim", 32, "model changed"),
        ("dtype", "f32", "dtype changed"),
        ("format", 99, "format changed"),
        ("count", 3, "count mismatch"),
    ],
)
def test_sidecar_that_does_not_match_means_rebuild(
    db_path: Path, field: str, value: object, reason: str
) -> None:
    ids = _seed(db_path)
    index = default_index_path(db_path)
    sidecar = index.with_name(index.name + ".json")
    meta = json.loads(sidecar.read_text())
    meta[field] = value
    sidecar.write_text(json.dumps(meta))
    with _open(db_path) as s:
        vi = s.vectors()
        assert (vi.state.action, vi.state.reason) == ("rebuilt", reason)
        assert len(vi) == len(ids)


@pytest.mark.parametrize(
    "sidecar",
    [
        "{not json",
        "[]",
        "null",
        '{"format": 1, "model_id": "hashing-64", "dim": 64, "dtype": "f16", "count": 8}',
        '{"format": 1, "model_id": "hashing-64", "dim": 64, "dtype": "f16", "count": 8, '
        '"generation": "soon"}',
        '{"format": 1, "model_id": "hashing-64", "dim": 64, "dtype": "f16", "count": null, '
        '"generation": 1}',
    ],
    ids=["not-json", "list", "null", "no-generation", "bad-generation", "bad-count"],
)
def test_unreadable_sidecar_means_rebuild(db_path: Path, sidecar: str) -> None:
    ids = _seed(db_path)
    index = default_index_path(db_path)
    index.with_name(index.name + ".json").write_text(sidecar)
    with _open(db_path) as s:
        state = s.vectors().state
        assert (state.action, state.reason) == ("rebuilt", "corrupt")
        assert _top(s, TEXTS[2]) == ids[2]


def test_index_newer_than_database_is_rebuilt(db_path: Path) -> None:
    _seed(db_path)
    index = default_index_path(db_path)
    sidecar = index.with_name(index.name + ".json")
    meta = json.loads(sidecar.read_text())
    meta["generation"] += 100  # e.g. the database was restored from an older backup
    sidecar.write_text(json.dumps(meta))
    with _open(db_path) as s:
        vi = s.vectors()
        assert vi.state.action == "rebuilt"
        assert vi.generation == vi.state.generation


def test_stale_index_catches_up_with_rows_written_elsewhere(db_path: Path) -> None:
    ids = _seed(db_path)
    with _open(db_path) as other:  # another process: adds without touching the index
        new_id = other.add(NewMemory(text="kubernetes ingress terminates tls")).id
        other.purge(ids[0])
        other.update(ids[1], text="memcached replaced the redis cache")
    with _open(db_path) as s:
        vi = s.vectors()
        assert vi.state.action == "caught_up"
        assert len(vi) == _embedding_rows(s) == len(ids)
        assert _top(s, "kubernetes ingress terminates tls") == new_id
        assert _top(s, "memcached replaced the redis cache") == ids[1]
        assert all(h.memory.id != ids[0] for h in search(s, TEXTS[0], mode="vector", k=20))


def test_two_live_stores_see_each_others_vectors(db_path: Path) -> None:
    _seed(db_path)
    with _open(db_path) as a, _open(db_path) as b:
        assert a.vectors().state.action == "loaded"
        new_id = b.add(NewMemory(text="grpc services use deadlines everywhere")).id
        assert a.vectors().state.action == "caught_up"
        assert _top(a, "grpc services use deadlines everywhere") == new_id
        assert a.vectors().state.action == "current"
        b.purge(new_id)
        hits = search(a, "grpc services use deadlines everywhere", mode="vector", k=20)
        assert new_id not in {h.memory.id for h in hits}
        assert len(a.vectors()) == _embedding_rows(a)


def test_purge_removes_the_vector(store: MemoryStore) -> None:
    ids = [r.id for r in store.add_many([NewMemory(text=t) for t in TEXTS])]
    vi = store.vectors()
    assert len(vi) == len(ids)
    store.purge(ids[2])
    assert len(vi) == len(ids) - 1
    assert ids[2] not in {k for k, _ in vi.search(store.embedder.embed([TEXTS[2]])[0], 20)}
    assert _embedding_rows(store) == len(ids) - 1


def test_update_replaces_the_vector(store: MemoryStore) -> None:
    ids = [r.id for r in store.add_many([NewMemory(text=t) for t in TEXTS])]
    vi = store.vectors()
    store.update(ids[4], text="graphql schema stitching across services")
    assert len(vi) == len(ids)
    hits = vi.search(store.embedder.embed(["graphql schema stitching across services"])[0], 1)
    assert hits[0][0] == ids[4] and hits[0][1] > 0.99
    old = vi.search(store.embedder.embed([TEXTS[4]])[0], 1)
    assert old[0][0] != ids[4]


def test_adds_after_the_index_is_open_go_straight_in(store: MemoryStore) -> None:
    vi = store.vectors()
    assert len(vi) == 0
    mid = store.add(NewMemory(text="celery workers retry with backoff")).id
    assert len(vi) == 1
    assert vi.search(store.embedder.embed(["celery workers retry with backoff"])[0], 1)[0][0] == mid
    assert store.vectors().state.action in ("created", "current")


def test_changing_the_embedder_re_embeds_everything(db_path: Path) -> None:
    ids = _seed(db_path)
    with _open(db_path, dim=32) as s:
        assert s.embeddings.pending() == len(ids)
        assert s.stats().pending_embeddings == len(ids)
        seen: list[tuple[int, int]] = []
        assert s.embeddings.embed_pending(
            batch=3, progress=lambda d, t: seen.append((d, t))
        ) == len(ids)
        assert seen[-1] == (len(ids), len(ids)) and len(seen) == 3
        assert s.embeddings.pending() == 0
        rows = s.conn.execute("SELECT DISTINCT model_id, dim FROM embeddings").fetchall()
        assert rows == [("hashing-32", 32)]
        vi = s.vectors()
        assert vi.state.action == "rebuilt" and vi.dim == 32
        assert len(vi) == len(ids)
        assert _top(s, TEXTS[6]) == ids[6]
        assert s.embeddings.embed_pending() == 0


def test_a_new_embedder_finds_nothing_until_re_embedded(db_path: Path) -> None:
    _seed(db_path)
    with _open(db_path, dim=32) as s:
        assert search(s, TEXTS[0], mode="vector") == []
        s.embeddings.embed_pending()
        assert search(s, TEXTS[0], mode="vector")


def test_reindex_rebuilds_fts_and_vectors(store: MemoryStore) -> None:
    ids = [r.id for r in store.add_many([NewMemory(text=t) for t in TEXTS])]
    store.conn.execute("DELETE FROM memories_fts")
    store.conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (ids[0],))
    out = store.reindex()
    assert out == {"fts_rows": len(ids), "embedded": 1, "vectors": len(ids)}
    assert search(store, "docker registry", mode="keyword")[0].memory.id == ids[3]
    assert _top(store, TEXTS[0]) == ids[0]


def test_in_memory_vector_index() -> None:
    vi = VectorIndex(None, dim=4, model_id="m")
    vi.upsert(np.array([1, 2], dtype=np.uint64), np.eye(4, dtype=np.float32)[:2])
    vi.upsert(np.array([1], dtype=np.uint64), np.eye(4, dtype=np.float32)[2:3])
    assert len(vi) == 2
    assert vi.search(np.eye(4, dtype=np.float32)[2], 1)[0][0] == 1
    vi.remove([1, 99])
    assert len(vi) == 1 and vi.search(np.zeros(4), 0) == []
    assert vi.save() is False


def test_a_text_changed_without_an_embedder_is_embedded_again(db_path: Path) -> None:
    ids = _seed(db_path)
    with MemoryStore(db_path) as s:  # e.g. a run without the model
        s.update(ids[0], text="kafka topics carry domain events")
    with _open(db_path) as s:
        assert s.embeddings.pending() == 1
        vi = s.vectors()
        assert len(vi) == len(ids) - 1  # the stale vector left the index too
        assert s.embeddings.embed_pending() == 1
        hits = search(s, "kafka topics carry domain events", mode="vector", k=1)
        assert hits[0].memory.id == ids[0] and hits[0].similarity > 0.99


def test_an_index_that_cannot_be_saved_does_not_fail_close(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    db = tmp_path / "memory.db"
    s = MemoryStore(db, embedder=HashingEmbedder(dim=64), index_path=blocker / "v.usearch")
    mid = s.add(NewMemory(text="saved in sqlite even if the cache is not")).id
    assert _top(s, "saved in sqlite even if the cache is not") == mid
    s.close()  # logs a warning, raises nothing
    assert blocker.read_text() == "x"
    with _open(db) as again:
        assert again.get(mid).text == "saved in sqlite even if the cache is not"
        assert _top(again, "saved in sqlite even if the cache is not") == mid
