"""Memory vectors of the current model: what lacks one, embedding it, reading them."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from storage import db as dbmod
from storage import pieces
from storage.rows import bump, write_vector

if TYPE_CHECKING:
    from storage.store_view import StoreWithVectors


class Embeddings:
    """Vectors of memories under the store's embedding model."""

    def __init__(self, store: StoreWithVectors) -> None:
        self._store = store

    def pending(self) -> int:
        emb = self._store.embedder
        if emb is None:
            return 0
        return self._store.conn.execute(
            "SELECT count(*) FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id "
            "AND e.model_id = ? WHERE e.memory_id IS NULL",
            (emb.model_id,),
        ).get

    def embed_pending(
        self, *, batch: int = 256, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Embed memories that have no vector from the current model (new model → re-embed),
        after bringing the pieces of rule sections in step with them (:mod:`storage.pieces`;
        their vectors follow the memories')."""
        conn = self._store.conn
        pieces.sync(conn)
        emb = self._store.embedder
        if emb is None:
            return 0
        total = self.pending()
        done = 0
        while True:
            rows: list[tuple[int, str]] = list(
                conn.execute(
                    "SELECT m.id, m.text FROM memories m LEFT JOIN embeddings e ON "
                    "e.memory_id = m.id AND e.model_id = ? WHERE e.memory_id IS NULL "
                    "ORDER BY m.id LIMIT ?",
                    (emb.model_id, batch),
                )
            )
            if not rows:
                break
            vecs = emb.embed([r[1] for r in rows])
            with dbmod.immediate(conn):
                vgen = bump(conn, vectors=True)
                for (mid, _), v in zip(rows, vecs):
                    write_vector(conn, self._store.embedder, mid, v, vgen)
            if self._store.vector_cache is not None:
                self._store.vector_cache.upsert(
                    np.asarray([r[0] for r in rows], dtype=np.uint64), vecs
                )
                self._store.vector_cache.mark_generation(vgen)
            done += len(rows)
            if progress:
                progress(done, total)
        pieces.embed_pending(self._store, batch=batch)
        return done

    def of(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        emb = self._store.embedder
        if emb is None or not ids:
            return {}
        return {
            mid: np.frombuffer(blob, dtype="<f4")
            for mid, blob in self._store.conn.execute(
                "SELECT memory_id, vector FROM embeddings WHERE model_id = ? AND memory_id IN "
                "(SELECT value FROM json_each(?))",
                (emb.model_id, json.dumps([int(i) for i in ids])),
            )
        }
