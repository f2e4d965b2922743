"""Ranking: the decay score (seed 002 §1.3) and the hybrid scorer (seed 002 §7)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from storage import EdgeType, Kind, Memory, MemoryStore, SearchHit

DAY = 86_400.0


@dataclass(frozen=True)
class DecayConfig:
    half_life_days: float = 60.0
    expected_accesses: float = 5.0
    recency_boost_days: float = 7.0
    recency_boost_multiplier: float = 1.5
    weight_age: float = 0.3
    weight_access: float = 0.3
    weight_importance: float = 0.4


class Usage(Protocol):
    """What the decay score reads of a memory (a :class:`Memory` or a lighter row)."""

    @property
    def created_at(self) -> float: ...
    @property
    def last_accessed(self) -> float | None: ...
    @property
    def retrieval_count(self) -> int: ...
    @property
    def citation_count(self) -> int: ...
    @property
    def ignore_count(self) -> int: ...
    @property
    def importance(self) -> float: ...


def decay_score(
    memory: Usage, now: float | None = None, config: DecayConfig = DecayConfig()
) -> float:
    """age × 0.3 + access × 0.3 + importance × 0.4, each factor in [0, 1].

    age = 1 / (1 + age_days / half_life); access = min(1, accesses / expected), × 1.5 (capped)
    when used within the last week. Citations count double, ignores subtract.
    """
    now = time.time() if now is None else now
    age_days = max(0.0, (now - memory.created_at) / DAY)
    age = 1.0 / (1.0 + age_days / config.half_life_days)
    uses = memory.retrieval_count + 2 * memory.citation_count - memory.ignore_count
    access = min(1.0, max(0.0, uses) / config.expected_accesses)
    if memory.last_accessed is not None:
        since = (now - memory.last_accessed) / DAY
        if since <= config.recency_boost_days:
            access = min(1.0, access * config.recency_boost_multiplier)
    score = (
        age * config.weight_age
        + access * config.weight_access
        + memory.importance * config.weight_importance
    )
    return max(0.0, min(1.0, score))


def refresh_decay_scores(
    store: MemoryStore,
    now: float | None = None,
    config: DecayConfig = DecayConfig(),
    batch: int = 2000,
) -> int:
    """Recompute and store every active memory's decay score; return how many were updated."""
    updated = 0
    offset = 0
    while True:
        page = store.list(limit=batch, offset=offset, order="id")
        if not page:
            return updated
        updated += store.usage.set_decay_scores({m.id: decay_score(m, now, config) for m in page})
        offset += batch


TYPE_BOOSTS: dict[Kind, float] = {
    Kind.SOLUTION: 1.2,
    Kind.PATTERN: 1.15,
    Kind.DECISION: 1.1,
    Kind.CONVENTION: 1.05,
    Kind.WORKFLOW: 1.05,
    Kind.FACT: 1.0,
    Kind.EPISODE: 1.0,
    Kind.PREFERENCE: 0.9,
    Kind.SUMMARY: 1.3,
}


@dataclass(frozen=True)
class ScoringWeights:
    similarity: float = 0.35
    decay: float = 0.20
    importance: float = 0.15
    recency: float = 0.10
    graph_boost: float = 0.10
    type_boost: float = 0.10


@dataclass(frozen=True)
class ScoringConfig:
    weights: ScoringWeights = ScoringWeights()
    type_boosts: dict[Kind, float] = field(default_factory=lambda: dict(TYPE_BOOSTS))
    recency_half_life_days: float = 7.0
    graph_depth: int = 2
    graph_min_strength: float = 0.3
    superseded_penalty: float = 0.5  # multiplies the score of memories no longer valid


@dataclass
class Scored:
    memory: Memory
    score: float
    components: dict[str, float]
    hit: SearchHit | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self.hit.to_dict() if self.hit else {"id": self.memory.id, "text": self.memory.text}
        out["final_score"] = round(self.score, 6)
        out["ranking"] = {k: round(v, 6) for k, v in self.components.items()}
        return out


class HybridScorer:
    """Re-ranks retrieved memories by relevance, decay, importance, recency, graph and kind."""

    def __init__(self, config: ScoringConfig | None = None) -> None:
        self.config = config or ScoringConfig()

    def recency(self, memory: Memory, now: float) -> float:
        if memory.last_accessed is None:
            return 0.0
        days = max(0.0, (now - memory.last_accessed) / DAY)
        return 1.0 / (1.0 + days / self.config.recency_half_life_days)

    def graph_boosts(self, store: MemoryStore, seeds: Sequence[int]) -> dict[int, float]:
        """Boost for memories near the seeds: strength × 1/(1 + depth), the best path wins."""
        boosts: dict[int, float] = {}
        for seed in seeds:
            if not store.exists(seed):
                continue
            for step in store.graph.traverse(
                seed,
                depth=self.config.graph_depth,
                min_strength=self.config.graph_min_strength,
                direction="both",
            ):
                if step.via is EdgeType.CONTRADICTS:
                    continue
                b = step.strength / (1.0 + step.depth)
                boosts[step.memory_id] = max(boosts.get(step.memory_id, 0.0), b)
        return boosts

    def score(
        self,
        memory: Memory,
        relevance: float,
        *,
        now: float | None = None,
        graph_boost: float = 0.0,
    ) -> tuple[float, dict[str, float]]:
        now = time.time() if now is None else now
        w = self.config.weights
        comps = {
            "similarity": max(0.0, min(1.0, relevance)),
            "decay": memory.decay_score,
            "importance": memory.importance,
            "recency": self.recency(memory, now),
            "graph_boost": graph_boost,
            "type_boost": self.config.type_boosts.get(memory.kind, 1.0),
        }
        total = (
            comps["similarity"] * w.similarity
            + comps["decay"] * w.decay
            + comps["importance"] * w.importance
            + comps["recency"] * w.recency
            + comps["graph_boost"] * w.graph_boost
            + (comps["type_boost"] - 1.0) * w.type_boost
        )
        if memory.valid_to is not None and memory.valid_to <= now:
            total *= self.config.superseded_penalty
            comps["superseded_penalty"] = self.config.superseded_penalty
        return total, comps

    def rank(
        self,
        hits: Iterable[SearchHit],
        *,
        store: MemoryStore | None = None,
        seeds: Sequence[int] = (),
        now: float | None = None,
    ) -> list[Scored]:
        """Score search hits and sort them best first (ties: by relevance, then id)."""
        hits = list(hits)
        boosts = self.graph_boosts(store, seeds) if store is not None and seeds else {}
        out = []
        for h in hits:
            s, comps = self.score(
                h.memory, h.score, now=now, graph_boost=boosts.get(h.memory.id, 0)
            )
            out.append(Scored(h.memory, s, comps, h))
        out.sort(key=lambda r: (-r.score, -r.components["similarity"], r.memory.id))
        return out
