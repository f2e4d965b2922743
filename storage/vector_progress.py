"""How much of a store has its vectors: what search and context say while meaning is learned.

Text is stored and searchable by keyword at once; vectors follow in the background. An answer
given meanwhile ranks by what is embedded and says how far learning has come. The counts are
index-only and kept until the store's write generations move, so asking on every search costs
two meta reads once everything is embedded.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage.repository import MemoryStore


@dataclass(frozen=True)
class VectorProgress:
    """``embedded`` of ``total`` texts (memories and conversation passages) have a vector of
    the current model (a passage judged not worth one counts as done)."""

    embedded: int
    total: int

    @property
    def complete(self) -> bool:
        return self.embedded >= self.total

    def to_dict(self) -> dict[str, Any]:
        return {"embedded": self.embedded, "total": self.total}


_lock = threading.Lock()
_cache: weakref.WeakKeyDictionary[MemoryStore, tuple[tuple[Any, ...], VectorProgress]] = (
    weakref.WeakKeyDictionary()
)


def vector_progress(store: MemoryStore) -> VectorProgress | None:
    """The store's vector progress; None without an embedder (keyword search only)."""
    if not store.has_embedder:
        return None
    emb = store.embedder
    if emb is None:
        return None
    conn = store.conn
    key = (
        emb.model_id,
        *(
            v
            for (v,) in conn.execute(
                "SELECT value FROM meta WHERE key IN ('generation', 'session_generation') "
                "ORDER BY key"
            )
        ),
    )
    with _lock:
        hit = _cache.get(store)
    if hit is not None and hit[0] == key:
        return hit[1]
    memories: int = conn.execute("SELECT count(*) FROM memories").get
    vectors: int = conn.execute(
        "SELECT count(*) FROM embeddings WHERE model_id = ?", (emb.model_id,)
    ).get
    passages: int = conn.execute("SELECT count(*) FROM passages").get
    learned: int = conn.execute(
        "SELECT count(*) FROM passages WHERE model_id = ?", (emb.model_id,)
    ).get
    progress = VectorProgress(min(vectors, memories) + min(learned, passages), memories + passages)
    with _lock:
        _cache[store] = (key, progress)
    return progress
