"""Hybrid search: FTS5 bm25 and vector candidates fused, with filters and component scores."""

from __future__ import annotations

import logging
import numbers
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from storage.errors import InvalidInput
from storage.models import Memory
from storage.neighbours import with_context
from storage.repository import MemoryFilter, MemoryStore
from storage.text import fts_or, fts_phrase, fts_terms

log = logging.getLogger(__name__)

RRF_K = 60
# bm25 column weights: text, summary, compressed, index_label, anchors, tags, terms
BM25_WEIGHTS = (1.0, 1.0, 0.8, 1.5, 2.0, 2.0, 0.5)
# Below this many filtered memories, vector search is exact over their stored vectors.
EXACT_VECTOR_LIMIT = 4000
# Below this cosine similarity a MiniLM match without shared keywords is mostly noise.
MIN_SIMILARITY = 0.2
# After widening the approximate search, a filtered set up to this size is searched exactly.
EXACT_FALLBACK_LIMIT = 50_000
MODES = ("hybrid", "keyword", "vector")
# A keyword in more than max(1000, 2 % of memories) memories is too common to search by.
COMMON_TERM_MIN_DOCS = 1000
COMMON_TERM_SHARE = 0.02
COMMON_TERMS_KEPT = 4
COMMON_SCORED = 500
"""When every word of a query is common, bm25 ranks only the newest this many memories that
hold them all: each such word weighs little, so ranking thousands of rows (a file whose words
are all common in a 100k store: 2,000–6,000) buys little, and cost the file-open its tail."""
# Rank-ordered FTS matches read per match asked for, and beyond, for rows a filter drops (a
# branch filter drops ~15 %), and how many times more are read before the filter is applied
# to every match instead.
RANK_READ = 2
RANK_SLACK = 16
RANK_ROUNDS = 3
FUSIONS = ("rrf", "weighted")
# Measured on LoCoMo (bench/bench_locomo.py, real model): weighted fusion with 0.3 on the
# vector side beat keyword-only, vector-only and RRF at recall@5/10/25.
DEFAULT_FUSION = "weighted"
DEFAULT_ALPHA = 0.3


@dataclass
class SearchHit:
    """One result with every component of its score."""

    memory: Memory
    score: float  # fused relevance in [0, 1]
    keyword_rank: int | None = None
    bm25: float | None = None  # FTS5 bm25 (lower is better; negated here: higher is better)
    vector_rank: int | None = None
    similarity: float | None = None  # cosine similarity
    components: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "kind": self.memory.kind.value,
            "text": self.memory.text,
            "score": round(self.score, 6),
            "keyword_rank": self.keyword_rank,
            "bm25": None if self.bm25 is None else round(self.bm25, 6),
            "vector_rank": self.vector_rank,
            "similarity": None if self.similarity is None else round(self.similarity, 6),
            "components": {k: round(v, 6) for k, v in self.components.items()},
            "anchors": [str(a) for a in self.memory.anchors],
            "archived": self.memory.archived,
        }


@dataclass
class _TermCounts:
    """In how many memories each term is, probed up to a cap, for one store generation."""

    generation: int
    memories: int
    cap: int
    counts: dict[str, int] = field(default_factory=dict)
    wide: dict[str, int] = field(default_factory=dict)  # probed up to half the memories


def _term_counts(store: MemoryStore) -> _TermCounts:
    gen = store.generation()
    cache: _TermCounts | None = getattr(store, "_df_cache", None)
    if cache is None or cache.generation != gen:
        n = store.conn.execute("SELECT count(*) FROM memories_fts").get
        cache = _TermCounts(gen, n, max(COMMON_TERM_MIN_DOCS, int(n * COMMON_TERM_SHARE)))
        store._df_cache = cache  # type: ignore[attr-defined]
    return cache


def _probe(store: MemoryStore, term: str, cap: int) -> int:
    """In how many memories ``term`` is, counted up to ``cap + 1``."""
    return int(
        store.conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts "
            "MATCH ? LIMIT ?)",
            (fts_phrase(term), cap + 1),
        ).get
    )


def _selective_terms(store: MemoryStore, terms: list[str]) -> list[str] | None:
    """Drop terms found in so many memories that they carry little signal but make bm25
    score thousands of rows ("api", "src" in a code base). Counts are capped probes, cached
    per store generation. None when every term is that common."""
    tc = _term_counts(store)
    kept = []
    for t in terms:
        if t not in tc.counts:
            tc.counts[t] = _probe(store, t, tc.cap)
        if tc.counts[t] <= tc.cap:
            kept.append(t)
    return kept or None


def _common_terms(store: MemoryStore, terms: list[str]) -> list[str]:
    """Of terms that are all common, the first :data:`COMMON_TERMS_KEPT` but those in more
    than half the memories (bm25 gives them no weight, and FTS5 would read every row of
    theirs to intersect them), unless every one is."""
    tc = _term_counts(store)
    half = max(tc.cap, tc.memories // 2)
    first = terms[:COMMON_TERMS_KEPT]
    for t in first:
        if t not in tc.wide:
            tc.wide[t] = _probe(store, t, half)
    return [t for t in first if tc.wide[t] <= half] or first


def _all_of(store: MemoryStore, terms: list[str]) -> str:
    """An FTS5 AND of ``terms``, rarest first: the order FTS5 intersects them fastest."""
    wide = _term_counts(store).wide
    return " AND ".join(fts_phrase(t) for t in sorted(terms, key=lambda t: wide.get(t, 0)))


def keyword_candidates(
    store: MemoryStore, query: str, filters: MemoryFilter, limit: int
) -> list[tuple[int, float]]:
    """(id, bm25 score, higher is better) from FTS5, best first."""
    terms = fts_terms(query)
    if not terms:
        return []
    selective = _selective_terms(store, terms)
    if selective is not None:
        return _bm25(store, fts_or(selective), filters, limit)
    # Every word is common: memories holding them all (then most of them) are the signal.
    common = _common_terms(store, terms)
    for n in range(len(common), 0, -1):
        found = _bm25(store, _all_of(store, common[:n]), filters, limit, newest=COMMON_SCORED)
        if found or n == 1:
            return found
    return []


def _bm25(
    store: MemoryStore,
    match: str | None,
    filters: MemoryFilter,
    limit: int,
    *,
    newest: int | None = None,
) -> list[tuple[int, float]]:
    """The best ``limit`` matches by bm25 that pass ``filters``; with ``newest``, of the
    newest that many matches only (when no filter narrows the search)."""
    if match is None:
        return []
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    if not filters.is_selective:
        found = _best_ranked(
            store, match, f"bm25(memories_fts, {weights})", filters, limit, newest=newest
        )
        if found is not None:
            return found
    # A selective filter (kinds, anchors, ids, source) is part of the match itself, so a
    # filtered search returns ``limit`` results whenever that many match.
    where, params = filters.sql("m")
    return _rows(
        store,
        f"SELECT m.id, -bm25(memories_fts, {weights}) AS s FROM memories_fts "
        f"JOIN memories m ON m.id = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {where} "
        f"ORDER BY bm25(memories_fts, {weights}), m.id LIMIT ?",
        [match, *params, int(limit)],
    )


def _best_ranked(
    store: MemoryStore,
    match: str,
    rank: str,
    filters: MemoryFilter,
    limit: int,
    *,
    newest: int | None = None,
) -> list[tuple[int, float]] | None:
    """The best ``limit`` matches by FTS5's own rank that pass ``filters`` (a filter that keeps
    most memories: archive, branch, validity, dates): only the best-ranked rows are read from
    the memories table and tested, more of them while the filter drops too many. None when
    that does not settle it in a few rounds. With ``newest``, only the newest that many
    matches are ranked (FTS5 reads them newest first and stops)."""
    where, params = filters.sql("m")
    read = int(limit) * RANK_READ + RANK_SLACK
    matches = "FROM memories_fts WHERE memories_fts MATCH ?"
    if newest is not None:
        matches = (
            f"FROM (SELECT rowid, {rank} AS s {matches} ORDER BY rowid DESC LIMIT {int(newest)})"
        )
        rank = "s"
    for _ in range(RANK_ROUNDS):
        rows = list(
            store.conn.execute(
                f"SELECT f.rowid, -f.s, ({where}) FROM (SELECT rowid, {rank} AS s "
                f"{matches} ORDER BY s LIMIT ?) f "
                f"JOIN memories m INDEXED BY memories_lookup ON m.id = f.rowid "
                f"ORDER BY f.s, f.rowid",
                [*params, match, read],
            )
        )
        kept = [(int(r[0]), float(r[1])) for r in rows if r[2]]
        if len(kept) >= limit or len(rows) < read:  # enough, or every match was read
            return kept[:limit]
        # read as many more as the share the filter kept says are needed, with a margin
        read = max(read * 2, (read * limit * 3) // max(1, len(kept)))
    return None


def _rows(store: MemoryStore, sql: str, params: list[Any]) -> list[tuple[int, float]]:
    return [(int(r[0]), float(r[1])) for r in store.conn.execute(sql, params)]


def vector_candidates(
    store: MemoryStore, query_vec: np.ndarray, filters: MemoryFilter, limit: int
) -> list[tuple[int, float]]:
    """(id, cosine similarity) best first; exact for small filtered sets, ANN otherwise."""
    vi = store.vectors()
    if vi is None:
        return []
    if filters.is_selective:
        n = store.count(filters)
        if n == 0:
            return []
        if n <= EXACT_VECTOR_LIMIT:
            return _exact(store, query_vec, filters, limit)
    total = len(vi)
    want = limit
    for _ in range(4):
        hits = vi.search(query_vec, min(total, want * 4 if not filters.is_default else want + 8))
        allowed = store.ids_matching(filters, [h[0] for h in hits])
        kept = [h for h in hits if h[0] in allowed]
        if len(kept) >= limit or len(hits) >= total:
            return kept[:limit]
        want *= 4
    # The approximate graph did not surface enough filtered matches (it may return fewer
    # than asked): a filter this selective is cheap to search exactly.
    if filters.is_selective and store.count(filters) <= EXACT_FALLBACK_LIMIT:
        return _exact(store, query_vec, filters, limit)
    return kept[:limit]


def _exact(
    store: MemoryStore, query_vec: np.ndarray, filters: MemoryFilter, limit: int
) -> list[tuple[int, float]]:
    where, params = filters.sql("m")
    emb = store.embedder
    assert emb is not None
    rows: list[tuple[int, bytes]] = list(
        store.conn.execute(
            f"SELECT e.memory_id, e.vector FROM embeddings e JOIN memories m ON m.id = e.memory_id "
            f"WHERE e.model_id = ? AND {where}",
            [emb.model_id, *params],
        )
    )
    if not rows:
        return []
    ids = np.asarray([r[0] for r in rows])
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
    sims = mat @ np.asarray(query_vec, dtype=np.float32)
    top = np.argsort(-sims)[:limit]
    return [(int(ids[i]), float(sims[i])) for i in top]


def search(
    store: MemoryStore,
    query: str,
    *,
    filters: MemoryFilter | None = None,
    k: int = 10,
    mode: str = "hybrid",
    fusion: str = DEFAULT_FUSION,
    candidates: int | None = None,
    alpha: float = DEFAULT_ALPHA,
    query_vector: np.ndarray | Future[np.ndarray] | None = None,
    min_similarity: float | None = None,
    loader: Callable[[list[int]], list[Memory]] | None = None,
    context: bool = True,
) -> list[SearchHit]:
    """Search memories. ``mode``: hybrid | keyword | vector. ``fusion``: rrf | weighted.

    Without an embedder, hybrid quietly becomes keyword search (vector mode is an error).
    ``min_similarity`` drops vector candidates less similar than that (noise in small stores).
    ``query_vector`` may be a future (a caller embedding the query already): it is waited for
    after the keyword search, as the query's own embedding would be.
    ``loader`` fetches memories by id in place of the store (a caller's cache).
    ``context``: in hybrid search with weighted fusion, a message of a conversation thread is
    scored with its neighbouring messages too (:mod:`storage.neighbours`); keyword and vector
    search return what matched by themselves.
    """
    if mode not in MODES:
        raise InvalidInput(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    if fusion not in FUSIONS:
        raise InvalidInput(f"unknown fusion {fusion!r}; use one of {', '.join(FUSIONS)}")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the search query is empty")
    if not isinstance(k, numbers.Integral) or k <= 0:
        raise InvalidInput("k must be at least 1")
    if not isinstance(alpha, int | float) or not 0.0 <= alpha <= 1.0:
        raise InvalidInput(f"alpha must be between 0 and 1, not {alpha!r}")
    filters = filters or MemoryFilter()
    pool = candidates or max(50, k * 3)
    if mode == "vector" and not store.has_embedder:
        raise InvalidInput("vector search needs an embedding model")
    kw: list[tuple[int, float]] = []
    vec: list[tuple[int, float]] = []
    qv = query_vector if not isinstance(query_vector, Future) else None
    given = query_vector if isinstance(query_vector, Future) else None
    embedding: Future[np.ndarray] | None = None
    wants_vectors = mode in ("hybrid", "vector") and store.has_embedder
    if wants_vectors and qv is None and given is None:
        emb = store.embedder
        assert emb is not None
        # the query is embedded on the side (onnxruntime releases the GIL) while FTS5 ranks
        embedding = _embedding_pool().submit(emb.embed, [query])
    if mode in ("hybrid", "keyword"):
        kw = keyword_candidates(store, query, filters, pool)
    if wants_vectors:
        if given is not None:
            qv = given.result()
        if qv is None:
            if embedding is None:  # the caller's future gave no vector: embed here
                emb = store.embedder
                assert emb is not None
                embedding = _embedding_pool().submit(emb.embed, [query])
            qv = embedding.result()[0]
        assert qv is not None
        vec = vector_candidates(store, qv, filters, pool)
        if min_similarity is not None:
            vec = [(mid, sim) for mid, sim in vec if sim >= min_similarity]
    fused = fuse(kw, vec, fusion=fusion, alpha=alpha)
    if context and fusion == "weighted" and mode == "hybrid":
        fused = with_context(
            store,
            fused,
            kw,
            vec,
            alpha=alpha,
            filters=filters,
            query_vector=qv,
            min_similarity=min_similarity,
        )
    top = fused[:k]
    mems = {m.id: m for m in (loader or store.get_many)([t[0] for t in top])}
    kw_rank = {mid: r for r, (mid, _) in enumerate(kw, 1)}
    kw_score = dict(kw)
    v_rank = {mid: r for r, (mid, _) in enumerate(vec, 1)}
    v_sim = dict(vec)
    hits = []
    for mid, score, comps in top:
        if mid not in mems:  # purged meanwhile
            continue
        hits.append(
            SearchHit(
                memory=mems[mid],
                score=score,
                keyword_rank=kw_rank.get(mid),
                bm25=kw_score.get(mid),
                vector_rank=v_rank.get(mid),
                similarity=v_sim.get(mid),
                components=comps,
            )
        )
    return hits


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _embedding_pool() -> ThreadPoolExecutor:
    """The threads that embed search queries beside the keyword search (one pool a process)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(2, thread_name_prefix="lm-query-embed")
        return _POOL


def fuse(
    kw: list[tuple[int, float]],
    vec: list[tuple[int, float]],
    *,
    fusion: str = "rrf",
    alpha: float = 0.5,
) -> list[tuple[int, float, dict[str, float]]]:
    """Fuse ranked lists into (id, score in [0, 1], components), best first.

    rrf: reciprocal rank fusion, normalised by the best possible value.
    weighted: ``alpha`` × similarity + (1 − alpha) × bm25 scaled by the best bm25.
    A single list keeps its own order.
    """
    if fusion not in FUSIONS:
        raise InvalidInput(f"unknown fusion {fusion!r}; use one of {', '.join(FUSIONS)}")
    scores: dict[int, dict[str, float]] = {}
    if fusion == "rrf":
        lists = [(name, lst) for name, lst in (("keyword", kw), ("vector", vec)) if lst]
        best = sum(1.0 / (RRF_K + 1) for _ in lists) or 1.0
        for name, lst in lists:
            for rank, (mid, _) in enumerate(lst, 1):
                scores.setdefault(mid, {})[f"rrf_{name}"] = 1.0 / (RRF_K + rank)
        out = [(mid, sum(c.values()) / best, c) for mid, c in scores.items()]
    else:
        top_bm25 = max((s for _, s in kw), default=0.0)
        w_kw = 0.0 if not kw else (1.0 - alpha if vec else 1.0)
        w_vec = 0.0 if not vec else (alpha if kw else 1.0)
        for mid, s in kw:
            scores.setdefault(mid, {})["keyword"] = s / top_bm25 if top_bm25 > 0 else 0.0
        for mid, s in vec:
            scores.setdefault(mid, {})["vector"] = max(0.0, s)
        out = [
            (mid, w_kw * c.get("keyword", 0.0) + w_vec * c.get("vector", 0.0), c)
            for mid, c in scores.items()
        ]
    # Ties (several similarities clamped at 0, say) go by raw similarity, then by id.
    raw = dict(vec)
    out.sort(key=lambda t: (-t[1], -raw.get(t[0], -2.0), t[0]))
    return out
