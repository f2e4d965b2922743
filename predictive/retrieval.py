"""Search as a user sees it: hybrid candidates from storage, re-ranked by the scorer."""

from __future__ import annotations

from collections.abc import Sequence

from predictive.scoring import HybridScorer, Scored
from storage import MemoryFilter, MemoryStore, search


def recall(
    store: MemoryStore,
    query: str,
    *,
    filters: MemoryFilter | None = None,
    k: int = 10,
    mode: str = "hybrid",
    seeds: Sequence[int] = (),
    scorer: HybridScorer | None = None,
    now: float | None = None,
    min_similarity: float | None = None,
) -> list[Scored]:
    """Top ``k`` memories for ``query``: a wider candidate pool, ranked by the hybrid scorer."""
    hits = search(
        store, query, filters=filters, k=max(k * 3, 30), mode=mode, min_similarity=min_similarity
    )
    ranked = (scorer or HybridScorer()).rank(hits, store=store, seeds=seeds, now=now)
    return ranked[:k]
