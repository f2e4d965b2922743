"""Consolidation: the store's periodic upkeep, deterministic and local.

``run(store, *, root, options, progress)`` (the CLI's ``living-memory consolidate`` and the
server's ``livingMemory.consolidate``) does four things, each counted in the answer:

- **levels**: fills the summary / compressed / index levels memories lack;
- **decay**: recomputes every memory's decay score from age, use and importance;
- **near duplicates**: links current memories of the same kind whose vectors are almost the
  same (cosine ≥ :data:`SIMILAR`) with a SIMILAR_TO edge — nothing is merged or archived;
- **contradictions**: opens one for current memories stating different values for the same
  ``fact_key``, and those :func:`predictive.contradictions.scan_new` finds among the memories
  added since its last run (resolving stays with the user).

With ``dryRun`` it only counts what it would do and writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from predictive.compress import backfill_levels
from predictive.contradictions import scan_new
from predictive.scoring import decay_score, refresh_decay_scores
from storage.models import EdgeType
from storage.repository import MemoryStore

SIMILAR = 0.95
"""Cosine similarity from which two memories of one kind count as near duplicates."""
MAX_PAIRING = 20_000
"""Kinds with more current memories than this are not paired (exact pairing is quadratic)."""
BLOCK = 1024


def _similar_pairs(store: MemoryStore, ids: list[int]) -> list[tuple[int, int, float]]:
    vectors = store.vectors_for(ids)
    have = [i for i in ids if i in vectors]
    if len(have) < 2:
        return []
    mat = np.stack([vectors[i] for i in have]).astype(np.float32)
    out: list[tuple[int, int, float]] = []
    for start in range(0, len(have), BLOCK):
        sims = mat[start : start + BLOCK] @ mat.T
        rows, cols = np.nonzero(sims >= SIMILAR)
        for r, c in zip(rows.tolist(), cols.tolist()):
            a, b = start + r, c
            if a < b:
                out.append((have[a], have[b], float(sims[r, c])))
    return out


def run(
    store: MemoryStore,
    *,
    root: str | Path | None = None,
    options: dict[str, Any] | None = None,
    progress: Callable[..., None] | None = None,
) -> dict[str, Any]:
    """Consolidate ``store``; answer what was (or, dry, would be) done."""
    dry = bool((options or {}).get("dry_run") or (options or {}).get("dryRun"))
    started = time.perf_counter()

    def step(n: int, message: str) -> None:
        if progress is not None:
            progress(n, 4, message)

    step(0, "levels")
    if dry:
        levels = last = 0
        while page := store.lacking_levels(after_id=last, limit=2000):
            levels += len(page)
            last = page[-1].id
    else:
        levels = backfill_levels(store)

    step(1, "decay")
    if dry:
        now = time.time()
        decay = offset = 0
        while page := store.list(limit=2000, offset=offset, order="id"):
            decay += sum(1 for m in page if abs(decay_score(m, now) - m.decay_score) > 1e-6)
            offset += len(page)
    else:
        decay = refresh_decay_scores(store)

    step(2, "near duplicates")
    similar = 0
    skipped: list[str] = []
    for kind, ids in store.current_ids_by_kind().items():
        if len(ids) > MAX_PAIRING:
            skipped.append(f"{kind}: {len(ids)} memories, more than {MAX_PAIRING} to pair")
            continue
        for a, b, sim in _similar_pairs(store, ids):
            linked = any(e.target_id == b and e.type is EdgeType.SIMILAR_TO for e in store.edges(a))
            if linked:
                continue
            similar += 1
            if not dry:
                store.add_edge(a, b, EdgeType.SIMILAR_TO, round(sim, 4), {"by": "consolidate"})

    step(3, "contradictions")
    contradictions = 0
    keyed: set[tuple[int, int]] = set()
    for a, b, key in store.fact_conflicts():
        if store.has_contradiction(a, b):
            continue
        contradictions += 1
        keyed.add((min(a, b), max(a, b)))
        if not dry:
            store.add_contradiction(a, b, reason=f"different values for {key}", confidence=0.8)
    # the local scanner (predictive.contradictions) over the memories added since its last run
    contradictions += sum(1 for c in scan_new(store, dry_run=dry) if c.pair not in keyed)
    step(4, "done")
    return {
        "dryRun": dry,
        "levelsFilled": levels,
        "decayUpdated": decay,
        "similarLinked": similar,
        "contradictionsOpened": contradictions,
        "skipped": skipped,
        "seconds": round(time.perf_counter() - started, 3),
    }
