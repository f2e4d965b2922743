"""The usearch vector index: a rebuildable cache of the vectors stored in SQLite.

Keys are memory row ids. A sidecar JSON records the model, dimensions, dtype, count and the
database ``vector_generation`` the file reflects. On load a missing, corrupt or foreign index
is rebuilt from SQLite; a stale one catches up from the rows written since its generation.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import apsw
import numpy as np

if TYPE_CHECKING:
    from usearch.index import Index

log = logging.getLogger(__name__)

FORMAT = 1
DEFAULT_DTYPE = "f16"

try:  # POSIX advisory lock so two processes never interleave index + sidecar writes
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class IndexState:
    """What the last load/sync did, for stats and tests."""

    action: str  # loaded | caught_up | rebuilt | created
    reason: str
    count: int
    generation: int


def _vector_generation(conn: apsw.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'vector_generation'").fetchone()
    return int(row[0]) if row else 0


class _Hnsw(TypedDict):
    """The HNSW graph's parameters, as usearch's ``Index`` takes them."""

    connectivity: int
    expansion_add: int
    expansion_search: int


def _usearch() -> type[Index]:
    """usearch's ``Index``, imported on first use (a process that never searches by meaning,
    such as an agent's hook, does not pay for it or for onnxruntime)."""
    # onnxruntime must be loaded before usearch: the other order segfaults in onnxruntime's
    # import (usearch 2.26 + onnxruntime 1.31 on Linux x86_64, seen here). storage.ort loads it
    # with its telemetry off.
    # isort: off
    import storage.ort  # noqa: F401
    from usearch.index import Index

    # isort: on
    return Index


class VectorIndex:
    """Approximate cosine search over memory vectors of one model."""

    def __init__(
        self,
        path: Path | None,
        *,
        dim: int,
        model_id: str,
        dtype: str = DEFAULT_DTYPE,
        connectivity: int = 16,
        expansion_add: int = 64,
        expansion_search: int = 96,
    ) -> None:
        self.path = Path(path) if path else None
        self.dim = dim
        self.model_id = model_id
        self.dtype = dtype
        self._params = _Hnsw(
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )
        self._index = self._new()
        self.generation = -1
        self._dirty = False
        self._mut = threading.RLock()  # serialises mutations, sync and save
        self._access = threading.Lock()  # guards the live index during search/add/remove
        self.state: IndexState | None = None

    def _new(self) -> Index:
        return _usearch()(ndim=self.dim, metric="cos", dtype=self.dtype, **self._params)

    @staticmethod
    def _sidecar(path: Path) -> Path:
        """The JSON file beside the index file ``path``."""
        return path.with_name(path.name + ".json")

    def __len__(self) -> int:
        return len(self._index)

    # ---- loading ---------------------------------------------------------------------------

    def open(self, conn: apsw.Connection) -> IndexState:
        """Load the saved index if it is trustworthy, else rebuild; then catch up."""
        with self._mut:
            reason = self._try_load()
            if reason is not None:
                self.state = self._rebuild(conn, reason)
                return self.state
            return self.sync(conn, action_if_current="loaded")

    def _try_load(self) -> str | None:
        """Load from disk; return why it cannot be trusted, or None on success."""
        if self.path is None:
            return "in-memory index"
        sidecar = self._sidecar(self.path)
        if not self.path.exists() or not sidecar.exists():
            return "missing"
        with self._file_lock():
            try:
                meta = json.loads(sidecar.read_text())
                if meta.get("format") != FORMAT:
                    return "format changed"
                if meta.get("model_id") != self.model_id or meta.get("dim") != self.dim:
                    return "model changed"
                if meta.get("dtype") != self.dtype:
                    return "dtype changed"
                index = _usearch().restore(str(self.path), view=False)
                if index is None or index.ndim != self.dim:
                    return "corrupt"
                if len(index) != int(meta["count"]):
                    return "count mismatch"
                generation = int(meta["generation"])
            except Exception as e:  # any parse/restore failure means: do not trust it
                log.warning("vector index %s unreadable (%s); rebuilding", self.path, e)
                return "corrupt"
        # usearch defines this setter apart from its getter, which mypy reads as read-only
        index.expansion_search = self._params["expansion_search"]  # type: ignore[misc]
        with self._access:
            self._index = index
        self.generation = generation
        return None

    def sync(self, conn: apsw.Connection, *, action_if_current: str = "current") -> IndexState:
        """Bring the index up to the database's vector generation."""
        with self._mut:
            db_gen = _vector_generation(conn)
            if db_gen == self.generation:
                self.state = IndexState(action_if_current, "", len(self), db_gen)
                return self.state
            if db_gen < self.generation:
                self.state = self._rebuild(conn, "database older than index")
                return self.state
            rows: list[tuple[int, bytes]] = list(
                conn.execute(
                    "SELECT memory_id, vector FROM embeddings WHERE model_id = ? AND gen > ?",
                    (self.model_id, self.generation),
                )
            )
            self._upsert_rows(rows)
            db_count = conn.execute(
                "SELECT count(*) FROM embeddings WHERE model_id = ?", (self.model_id,)
            ).get
            if len(self) != db_count:
                self._reconcile_keys(conn)
            if len(self) != db_count:
                self.state = self._rebuild(conn, "count mismatch after catch-up")
                return self.state
            self.generation = db_gen
            self._dirty = True
            self.state = IndexState("caught_up", f"{len(rows)} rows", len(self), db_gen)
            return self.state

    def _reconcile_keys(self, conn: apsw.Connection) -> None:
        db_ids = np.fromiter(
            (
                r[0]
                for r in conn.execute(
                    "SELECT memory_id FROM embeddings WHERE model_id = ?", (self.model_id,)
                )
            ),
            dtype=np.uint64,
        )
        with self._access:
            have = np.asarray(self._index.keys, dtype=np.uint64)
        extra = np.setdiff1d(have, db_ids, assume_unique=True)
        missing = np.setdiff1d(db_ids, have, assume_unique=True)
        if len(extra):
            with self._access:
                self._index.remove(extra)
        if len(missing):
            rows: list[tuple[int, bytes]] = []
            for chunk in np.array_split(missing, max(1, len(missing) // 500)):
                marks = ",".join("?" * len(chunk))
                rows += conn.execute(
                    f"SELECT memory_id, vector FROM embeddings WHERE memory_id IN ({marks})",
                    [int(x) for x in chunk],
                )
            self._upsert_rows(rows)

    def _rebuild(self, conn: apsw.Connection, reason: str) -> IndexState:
        """Build a fresh index from SQLite off to the side, then swap it in."""
        gen = _vector_generation(conn)
        index = self._new()
        batch_ids: list[int] = []
        batch_vecs: list[bytes] = []

        def flush() -> None:
            if batch_ids:
                vecs = np.frombuffer(b"".join(batch_vecs), dtype="<f4").reshape(-1, self.dim)
                index.add(np.asarray(batch_ids, dtype=np.uint64), vecs)
                batch_ids.clear()
                batch_vecs.clear()

        for mid, blob in conn.execute(
            "SELECT memory_id, vector FROM embeddings WHERE model_id = ? ORDER BY memory_id",
            (self.model_id,),
        ):
            batch_ids.append(mid)
            batch_vecs.append(blob)
            if len(batch_ids) >= 4096:
                flush()
        flush()
        with self._access:
            self._index = index
        self.generation = gen
        self._dirty = True
        if reason not in ("missing", "in-memory index"):
            log.info("vector index rebuilt (%s): %d vectors", reason, len(index))
        return IndexState("rebuilt" if reason != "missing" else "created", reason, len(index), gen)

    def rebuild(self, conn: apsw.Connection, reason: str = "requested") -> IndexState:
        with self._mut:
            self.state = self._rebuild(conn, reason)
            return self.state

    # ---- mutation --------------------------------------------------------------------------

    def _upsert_rows(self, rows: list[tuple[int, bytes]]) -> None:
        if not rows:
            return
        ids = np.asarray([r[0] for r in rows], dtype=np.uint64)
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(-1, self.dim)
        self.upsert(ids, vecs)

    def upsert(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Remove-then-add, so an updated memory never keeps its old vector."""
        ids = np.asarray(ids, dtype=np.uint64)
        with self._mut, self._access:
            present = np.asarray([self._index.contains(int(i)) for i in ids], dtype=bool)
            if present.any():
                self._index.remove(ids[present])
            self._index.add(ids, np.asarray(vectors, dtype=np.float32))
            self._dirty = True

    def remove(self, ids: list[int]) -> None:
        with self._mut, self._access:
            for i in ids:
                if self._index.contains(int(i)):
                    self._index.remove(int(i))
            self._dirty = True

    def mark_generation(self, generation: int) -> None:
        """Record that in-process writes brought the index to ``generation``."""
        with self._mut:
            if generation == self.generation + 1 or self.generation < 0:
                self.generation = generation
            # else another process wrote in between: the next sync() catches up.

    # ---- search ----------------------------------------------------------------------------

    def search(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top ``k`` (memory id, cosine similarity) pairs."""
        with self._access:
            n = len(self._index)
            if n == 0 or k <= 0:
                return []
            matches = self._index.search(np.asarray(vector, dtype=np.float32), min(k, n))
        return [(int(key), float(1.0 - d)) for key, d in zip(matches.keys, matches.distances)]

    # ---- persistence -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        if self.path is None or fcntl is None:
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a+b") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def save(self, *, force: bool = False) -> bool:
        """Write index then sidecar atomically; return whether anything was written."""
        if self.path is None:
            return False
        with self._mut:
            if not (self._dirty or force):
                return False
            with self._file_lock():
                tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}")
                with self._access:
                    self._index.save(str(tmp))
                    count = len(self._index)
                os.replace(tmp, self.path)
                meta = {
                    "format": FORMAT,
                    "model_id": self.model_id,
                    "dim": self.dim,
                    "dtype": self.dtype,
                    "count": count,
                    "generation": self.generation,
                }
                sidecar = self._sidecar(self.path)
                stmp = sidecar.with_name(sidecar.name + f".tmp{os.getpid()}")
                stmp.write_text(json.dumps(meta))
                os.replace(stmp, sidecar)
            self._dirty = False
            return True
