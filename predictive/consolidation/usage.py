"""Rankings from use: every decay score is recomputed (citations count double, ignores
subtract, :func:`predictive.scoring.decay_score`); those that use moved are listed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from predictive.consolidation.plan import Change
from predictive.scoring import decay_score
from storage.upkeep import Brief

LISTED_DELTA = 0.01
"""A use-driven change of at least this much is listed as a ``rerank``."""


def plan_reranking(
    live: Sequence[Brief], *, now: float, label: Callable[[Brief], str]
) -> tuple[dict[int, float], list[Change]]:
    """New decay scores of every memory whose score moved, and the use-driven changes."""
    scores: dict[int, float] = {}
    changes: list[Change] = []
    for b in live:
        new = decay_score(b, now)
        if abs(new - b.decay_score) <= 1e-6:
            continue
        scores[b.id] = new
        used = b.citation_count or b.ignore_count
        if used and abs(new - b.decay_score) >= LISTED_DELTA:
            direction = "up" if new > b.decay_score else "down"
            changes.append(
                Change(
                    "rerank",
                    (b.id,),
                    (label(b),),
                    f"{direction}: cited {b.citation_count}×, ignored {b.ignore_count}×, "
                    f"served {b.retrieval_count}× (score {b.decay_score:.2f} → {new:.2f})",
                    {"score": round(new, 6)},
                )
            )
    return scores, changes
