"""The packaged all-MiniLM-L6-v2 (int8 ONNX): offline, normalised, semantic, batch-stable."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from storage import MemoryStore, ModelUnavailable, NewMemory, search
from storage.embeddings import OnnxEmbedder, default_model_files, load_embedder

SENTENCES = [
    "The database connection pool ran out of connections under heavy traffic.",
    "Postgres refused new clients because every pooled connection was busy.",
    "My cat likes to sleep in the sun on the windowsill.",
    "We chose tabs over spaces for indentation.",
    "",
    "x",
    "A much longer sentence that keeps going with several clauses about deploying services, "
    "rolling back releases, and monitoring error rates after every change to production.",
]


def test_default_model_loads_offline(real_embedder: OnnxEmbedder) -> None:
    assert real_embedder.dim == 384
    files = default_model_files()
    assert real_embedder.files.model == files.model
    assert real_embedder.model_id.startswith(files.name + "@")
    sha_prefix = real_embedder.model_id.split("@", 1)[1]
    assert len(sha_prefix) == 16 and int(sha_prefix, 16) >= 0
    assert load_embedder() is real_embedder  # loaded once per process


def test_vectors_are_l2_normalised_float32(real_embedder: OnnxEmbedder) -> None:
    vecs = real_embedder.embed(SENTENCES)
    assert vecs.shape == (len(SENTENCES), 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert real_embedder.embed([]).shape == (0, 384)


def test_related_sentences_are_closer_than_unrelated(real_embedder: OnnxEmbedder) -> None:
    pool, postgres, cat, tabs = real_embedder.embed(SENTENCES[:4])
    assert pool @ postgres > pool @ cat + 0.2
    assert pool @ postgres > pool @ tabs + 0.2
    assert postgres @ pool > postgres @ cat


def test_batching_gives_the_same_vectors(real_embedder: OnnxEmbedder) -> None:
    batched = real_embedder.embed(SENTENCES)
    single = np.stack([real_embedder.embed([s])[0] for s in SENTENCES])
    assert np.allclose(batched, single, atol=1e-4)
    small_batches = OnnxEmbedder(default_model_files(), batch_size=2, threads=1)
    assert small_batches.model_id == real_embedder.model_id
    assert np.allclose(small_batches.embed(SENTENCES), batched, atol=1e-4)


MEMORIES = [
    "Run the linters with ruff check before every commit.",
    "The CI pipeline builds docker images and pushes them to the registry.",
    "Passwords are hashed with argon2id; never store them in plain text.",
    "The frontend uses React with TypeScript and Vite.",
    "Cron runs the nightly backup of the production database at 2am.",
    "Feature flags live in LaunchDarkly; remove them after rollout.",
    "API responses are paginated with opaque cursors, never page numbers.",
    "Timezones are stored as UTC and converted only in the user interface.",
    "We log with structlog in JSON format and ship logs to Loki.",
    "Payments go through Stripe; webhooks are verified with the signing secret.",
    "Translations are kept in gettext .po files under locale/.",
    "The mobile app talks to the backend through a GraphQL gateway.",
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how do we keep copies of our data safe each night?", 4),
        ("credit card charges and their callbacks", 9),
        ("dates and clocks across regions", 7),
        ("turning experimental toggles on and off", 5),
        ("how is the phone client wired to the server", 11),
    ],
)
def test_real_model_hybrid_search_ranks_a_paraphrase_first(
    tmp_path: Path, real_embedder: OnnxEmbedder, query: str, expected: int
) -> None:
    with MemoryStore(tmp_path / "memory.db", embedder=real_embedder) as store:
        ids = [r.id for r in store.add_many([NewMemory(text=t) for t in MEMORIES])]
        # a true paraphrase: no keyword leads to the answer
        assert ids[expected] not in {h.memory.id for h in search(store, query, mode="keyword")}
        hits = search(store, query, k=3)
        assert hits[0].memory.id == ids[expected], [h.memory.text for h in hits]
        assert hits[0].vector_rank == 1
        assert store.stats().model_id == real_embedder.model_id


def test_a_user_model_directory_loads(tmp_path: Path, real_embedder: OnnxEmbedder) -> None:
    files = default_model_files()
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    os.symlink(files.model, model_dir / "model.onnx")
    shutil.copy(files.tokenizer, model_dir / "tokenizer.json")
    emb = load_embedder(model_dir, threads=1)
    assert emb is not real_embedder
    assert emb.dim == 384
    assert emb.model_id.startswith("my-model@")
    assert emb.model_id.split("@")[1] == real_embedder.model_id.split("@")[1]  # same file
    assert np.allclose(emb.embed(SENTENCES[:2]), real_embedder.embed(SENTENCES[:2]), atol=1e-5)


@pytest.mark.parametrize("present", [[], ["model.onnx"], ["tokenizer.json"]])
def test_a_model_directory_lacking_files_raises_model_unavailable(
    tmp_path: Path, present: list[str]
) -> None:
    files = default_model_files()
    for name in present:
        shutil.copy(files.model if name == "model.onnx" else files.tokenizer, tmp_path / name)
    with pytest.raises(ModelUnavailable, match="lacks"):
        load_embedder(tmp_path)


def test_broken_model_files_raise_model_unavailable(tmp_path: Path) -> None:
    files = default_model_files()
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    shutil.copy(files.tokenizer, tmp_path / "tokenizer.json")
    with pytest.raises(ModelUnavailable, match="cannot load model"):
        load_embedder(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{broken")
    with pytest.raises(ModelUnavailable, match="cannot load tokenizer"):
        load_embedder(tmp_path)


def test_threads_can_share_the_model(real_embedder: OnnxEmbedder) -> None:
    import threading

    expected = real_embedder.embed(SENTENCES)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = real_embedder.embed(SENTENCES[i % 3 :] + SENTENCES[: i % 3])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, got in results.items():
        rolled = np.concatenate([expected[i % 3 :], expected[: i % 3]])
        assert np.allclose(got, rolled, atol=1e-4)


def test_missing_default_model_packages_raise_model_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import storage.embeddings as emb

    monkeypatch.setattr(emb, "_package_dir", lambda name: None)
    with pytest.raises(ModelUnavailable, match="pip install"):
        emb.default_model_files()
    monkeypatch.setattr(emb, "_package_dir", lambda name: Path("/nonexistent") / name)
    with pytest.raises(ModelUnavailable, match="missing"):
        emb.default_model_files()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_loading_the_model_hands_its_freed_heap_back() -> None:
    """What the model's load freed (its parsed file, the int8 weights folded into float32) is
    returned to the system at once, not kept by the allocator for the life of the process."""
    import subprocess

    code = (
        "import psutil\n"
        "from storage.embeddings import load_embedder, release_freed_heap\n"
        "def rss():\n"
        "    return psutil.Process().memory_info().rss // (1024 * 1024)\n"
        "load_embedder().embed(['hello'])\n"
        "before = rss()\n"
        "print(release_freed_heap(), before - rss())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    trimmed, released_mb = out.stdout.split()
    assert trimmed == "True"
    assert int(released_mb) < 15  # ~60 MB when the load does not release it itself
