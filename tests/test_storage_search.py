"""Hybrid search: keyword (FTS5 bm25), vector, fusion, filters on both paths, bad input."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from storage import (
    Anchor,
    InvalidInput,
    Kind,
    MemoryFilter,
    MemoryStore,
    NewMemory,
    SearchHit,
    search,
)
from storage.search import RRF_K, fuse

search_mod = importlib.import_module("storage.search")  # the package re-exports search()
T0 = 1_700_000_000.0


@pytest.fixture
def docs(store: MemoryStore) -> dict[str, int]:
    spec = {
        "refresh": NewMemory(
            text="The refreshToken is rotated by rotateRefreshToken() on every login.",
            kind=Kind.DECISION,
            anchors=[Anchor.parse("file:src/auth/tokens.py"), Anchor.parse("branch:main")],
            created_at=T0,
        ),
        "pool": NewMemory(
            text="Postgres connection pool exhausted under load; raise max_connections.",
            kind=Kind.SOLUTION,
            anchors=[Anchor.parse("error:OperationalError"), Anchor.parse("database")],
            created_at=T0 + 10,
        ),
        "lint": NewMemory(
            text="Use ruff for linting and formatting with a line length of 100.",
            kind=Kind.CONVENTION,
            anchors=[Anchor.parse("file:pyproject.toml"), Anchor.parse("branch:feature/x")],
            created_at=T0 + 20,
        ),
        "cache": NewMemory(
            text="Redis cache keys expire after one hour to bound memory.",
            anchors=[Anchor.parse("module:app.cache")],
            created_at=T0 + 30,
            valid_to=T0 + 40,
        ),
        "deploy": NewMemory(
            text="The deploy script pushes docker images to the registry.",
            kind=Kind.WORKFLOW,
            anchors=[Anchor.parse("file:scripts/deploy.sh"), Anchor.parse("ops")],
            created_at=T0 + 50,
        ),
        "archived": NewMemory(
            text="Old deploy process used a registry mirror and docker compose.",
            kind=Kind.WORKFLOW,
            created_at=T0 + 60,
        ),
    }
    ids = {name: store.add(m).id for name, m in spec.items()}
    store.archive(ids["archived"])
    return ids


def _ids(hits: list[SearchHit]) -> list[int]:
    return [h.memory.id for h in hits]


# ---- keyword ---------------------------------------------------------------------------------


def test_keyword_finds_by_word(store: MemoryStore, docs: dict[str, int]) -> None:
    hits = search(store, "postgres pool", mode="keyword", fusion="rrf")
    assert _ids(hits)[0] == docs["pool"]
    h = hits[0]
    assert h.keyword_rank == 1 and h.bm25 is not None and h.bm25 > 0
    assert h.vector_rank is None and h.similarity is None
    assert set(h.components) == {"rrf_keyword"}
    assert h.score == pytest.approx(1.0)
    assert h.to_dict()["id"] == docs["pool"]
    weighted = search(store, "postgres pool", mode="keyword", fusion="weighted")
    assert set(weighted[0].components) == {"keyword"}
    assert weighted[0].score == pytest.approx(1.0)  # the best bm25 scales to 1
    assert _ids(search(store, "postgres pool", mode="keyword"))[0] == docs["pool"]  # default


def test_keyword_stems_words(store: MemoryStore, docs: dict[str, int]) -> None:
    assert _ids(search(store, "rotating tokens", mode="keyword"))[0] == docs["refresh"]


def test_keyword_splits_camel_case(store: MemoryStore, docs: dict[str, int]) -> None:
    assert _ids(search(store, "refresh token", mode="keyword")) == [docs["refresh"]]
    assert _ids(search(store, "refreshToken", mode="keyword")) == [docs["refresh"]]
    assert _ids(search(store, "max connections", mode="keyword")) == [docs["pool"]]


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("tokens.py", "refresh"),
        ("pyproject", "lint"),
        ("OperationalError", "pool"),
        ("database", "pool"),
        ("ops", "deploy"),
        ("app.cache", "cache"),
    ],
)
def test_keyword_finds_by_anchor_and_tag(
    store: MemoryStore, docs: dict[str, int], query: str, name: str
) -> None:
    assert _ids(search(store, query, mode="keyword"))[0] == docs[name]


def test_keyword_survives_fts_syntax_in_the_query(store: MemoryStore, docs: dict[str, int]) -> None:
    for q in ['"docker', "deploy AND (", "NEAR(docker registry)", "docker*", "-registry", "a:b"]:
        search(store, q, mode="keyword")
    assert docs["deploy"] in _ids(search(store, 'docker" OR "x', mode="keyword"))


def test_query_of_only_stopwords_or_punctuation(store: MemoryStore, docs: dict[str, int]) -> None:
    assert search(store, "!!! ???", mode="keyword") == []
    assert docs["refresh"] in _ids(search(store, "on every", mode="keyword"))
    assert docs["deploy"] in _ids(search(store, "the", mode="keyword"))


# ---- vector and hybrid -----------------------------------------------------------------------


def test_vector_mode(store: MemoryStore, docs: dict[str, int]) -> None:
    hits = search(store, "docker images registry deploy script", mode="vector", fusion="rrf")
    assert _ids(hits)[0] == docs["deploy"]
    h = hits[0]
    assert h.vector_rank == 1 and 0 < h.similarity <= 1.0001
    assert h.keyword_rank is None and h.bm25 is None
    assert set(h.components) == {"rrf_vector"}
    sims = [x.similarity for x in hits]
    assert sims == sorted(sims, reverse=True)
    weighted = search(
        store, "docker images registry deploy script", mode="vector", fusion="weighted"
    )
    assert set(weighted[0].components) == {"vector"}
    assert weighted[0].score == pytest.approx(weighted[0].similarity)


def test_hybrid_fuses_both_lists(store: MemoryStore, docs: dict[str, int]) -> None:
    hits = search(store, "docker registry deploy", mode="hybrid", k=3, fusion="rrf")
    top = hits[0]
    assert top.memory.id == docs["deploy"]
    assert top.keyword_rank == 1 and top.vector_rank == 1
    assert set(top.components) == {"rrf_keyword", "rrf_vector"}
    assert top.score == pytest.approx(1.0)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(hits) <= 3
    weighted = search(store, "docker registry deploy", fusion="weighted", alpha=0.3)
    top = weighted[0]
    assert top.memory.id == docs["deploy"]
    assert set(top.components) == {"keyword", "vector"}
    # (1 - alpha) × bm25 scaled by the best + alpha × cosine similarity
    assert top.score == pytest.approx(0.7 * top.components["keyword"] + 0.3 * top.similarity)
    assert all(0.0 <= h.score <= 1.0 for h in weighted)
    assert search(store, "docker registry deploy")[0].memory.id == docs["deploy"]  # default


def test_a_given_query_vector_is_used(store: MemoryStore, docs: dict[str, int]) -> None:
    qv = store.embedder.embed(["Redis cache keys expire after one hour to bound memory."])[0]
    hits = search(
        store,
        "unrelated words",
        mode="vector",
        query_vector=qv,
        filters=MemoryFilter(include_archived=True),
    )
    assert hits[0].memory.id == docs["cache"] and hits[0].similarity > 0.99


def test_a_query_vector_still_being_computed_is_waited_for(
    store: MemoryStore, docs: dict[str, int]
) -> None:
    from concurrent.futures import Future

    assert store.embedder is not None
    query = "Redis cache expiry bounds memory"
    qv = store.embedder.embed([query])[0]
    given = search(store, query, query_vector=qv)
    ready: Future[object] = Future()
    ready.set_result(qv)
    assert [(h.memory.id, h.score) for h in search(store, query, query_vector=ready)] == [
        (h.memory.id, h.score) for h in given
    ]
    empty: Future[object] = Future()  # a caller whose embedding gave nothing: embedded here
    empty.set_result(None)
    assert [h.memory.id for h in search(store, query, query_vector=empty)] == [
        h.memory.id for h in given
    ]
    assert given[0].memory.id == docs["cache"] and given[0].similarity is not None


def test_min_similarity_drops_weak_vector_candidates(
    store: MemoryStore, docs: dict[str, int]
) -> None:
    hits = search(store, "docker registry deploy script", mode="vector", min_similarity=0.99)
    assert hits == []


# ---- filters ---------------------------------------------------------------------------------

FILTER_CASES = [
    (MemoryFilter(), {"refresh", "pool", "lint", "cache", "deploy"}),
    (
        MemoryFilter(include_archived=True),
        {"refresh", "pool", "lint", "cache", "deploy", "archived"},
    ),
    (MemoryFilter(only_archived=True), {"archived"}),
    (MemoryFilter(kinds=[Kind.WORKFLOW, Kind.CONVENTION]), {"deploy", "lint"}),
    (MemoryFilter(anchors=[Anchor.parse("file:scripts/deploy.sh")]), {"deploy"}),
    (MemoryFilter(valid_at=T0 + 45), {"refresh", "pool", "lint"}),
    (MemoryFilter(branch="main"), {"refresh", "pool", "cache", "deploy"}),
    (MemoryFilter(branch="feature/x"), {"pool", "lint", "cache", "deploy"}),
]

# a query that touches every memory by keyword and by vector
EVERYTHING = (
    "refresh token postgres pool ruff linting redis cache deploy docker registry old process"
)


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
@pytest.mark.parametrize(("flt", "allowed"), FILTER_CASES)
def test_filters_apply_on_every_path(
    store: MemoryStore, docs: dict[str, int], mode: str, flt: MemoryFilter, allowed: set[str]
) -> None:
    hits = search(store, EVERYTHING, mode=mode, filters=flt, k=50)
    back = {v: k for k, v in docs.items()}
    found = {back[i] for i in _ids(hits)}
    assert found <= allowed
    if mode in ("vector", "hybrid"):
        assert found == allowed  # vector candidates cover every memory with a vector


@pytest.mark.parametrize(("flt", "allowed"), FILTER_CASES)
def test_ann_path_applies_filters_too(
    store: MemoryStore,
    docs: dict[str, int],
    monkeypatch: pytest.MonkeyPatch,
    flt: MemoryFilter,
    allowed: set[str],
) -> None:
    calls: list[int] = []
    exact = search_mod._exact
    monkeypatch.setattr(search_mod, "_exact", lambda *a, **k: calls.append(1) or exact(*a, **k))
    monkeypatch.setattr(search_mod, "EXACT_VECTOR_LIMIT", 0)
    back = {v: k for k, v in docs.items()}
    hits = search(store, EVERYTHING, mode="vector", filters=flt, k=50)
    assert {back[i] for i in _ids(hits)} == allowed
    assert calls == []  # never exact: the ANN index answered


def test_exact_path_for_small_filtered_sets(
    store: MemoryStore, docs: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    exact = search_mod._exact
    monkeypatch.setattr(search_mod, "_exact", lambda *a, **k: calls.append(1) or exact(*a, **k))
    flt = MemoryFilter(kinds=[Kind.WORKFLOW])
    ann_free = search(store, "docker registry", mode="vector", filters=flt)
    assert calls == [1]
    assert _ids(ann_free) == [docs["deploy"]]
    search(store, "docker registry", mode="vector")  # default filter: the ANN index
    assert calls == [1]
    assert search(store, "docker", mode="vector", filters=MemoryFilter(kinds=[Kind.PATTERN])) == []


def test_exact_and_ann_agree(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.add_many([NewMemory(text=f"service {i} handles topic {i % 7} events") for i in range(60)])
    flt = MemoryFilter(include_archived=True)
    exact = [
        (h.memory.id, round(h.similarity, 3))
        for h in search(store, "service handles topic 3 events", mode="vector", filters=flt, k=5)
    ]
    monkeypatch.setattr(search_mod, "EXACT_VECTOR_LIMIT", 0)
    ann = [
        (h.memory.id, round(h.similarity, 3))
        for h in search(store, "service handles topic 3 events", mode="vector", filters=flt, k=5)
    ]
    assert [s for _, s in ann] == pytest.approx([s for _, s in exact], abs=2e-3)


def test_ann_widens_its_search_when_filters_drop_candidates(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [
        r.id
        for r in store.add_many(
            [NewMemory(text=f"queue consumer number {i} acks messages") for i in range(80)]
        )
    ]
    wanted = ids[-1]
    store.update(wanted, kind="pattern")
    monkeypatch.setattr(search_mod, "EXACT_VECTOR_LIMIT", 0)
    hits = search(
        store,
        "queue consumer acks messages",
        mode="vector",
        k=1,
        filters=MemoryFilter(kinds=[Kind.PATTERN]),
        candidates=1,
    )
    assert _ids(hits) == [wanted]


def _ledger_store(
    store: MemoryStore, strong: int, weak: int, **strong_fields: object
) -> tuple[list[int], list[int]]:
    """``strong`` memories that match "ledger" best (short, the word three times, tagged) with
    ``strong_fields``, then ``weak`` decisions that mention it once in a long text; their ids."""
    strong_added = store.add_many(
        [
            NewMemory(
                text=f"Ledger {i}: ledger ledger.",
                anchors=[Anchor.parse("ledger")],
                created_at=T0,
                **strong_fields,  # type: ignore[arg-type]
            )
            for i in range(strong)
        ]
    )
    filler = " ".join(f"word{j}" for j in range(40))
    added = store.add_many(
        [
            NewMemory(
                text=f"Note {i} on the ledger among many other words {filler}.",
                kind=Kind.DECISION,
                created_at=T0,
            )
            for i in range(weak)
        ]
    )
    return [r.id for r in strong_added], [r.id for r in added]


def test_keyword_search_beyond_the_rank_cutoff_returns_the_best_matches(
    store: MemoryStore,
) -> None:
    _ledger_store(store, strong=150, weak=150, kind=Kind.FACT)
    every_kind = MemoryFilter(kinds=list(Kind))  # selective: ranks every match in one query
    ranked = _ids(search(store, "ledger", mode="keyword", k=300, filters=every_kind))
    assert len(ranked) == 300  # more matches than the rank cutoff reads
    for k in (1, 5, 10):
        assert _ids(search(store, "ledger", mode="keyword", k=k, candidates=k)) == ranked[:k]
    best = search(store, "ledger", mode="keyword", k=1)[0]
    assert best.memory.text.startswith("Ledger") and best.keyword_rank == 1


def test_when_every_word_is_common_one_in_most_memories_does_not_narrow_the_match(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_mod, "COMMON_TERM_MIN_DOCS", 2)  # more than 2 memories: common
    texts = [f"service handler code path {i}" for i in range(10)]
    texts += [f"service handler cron job {i}" for i in range(3)]
    texts += [f"cron schedule table {i}" for i in range(3)]  # no "service"
    ids = [r.id for r in store.add_many([NewMemory(text=t, created_at=T0) for t in texts])]
    # "service" is in 13 of 16 memories: it tells nothing, so the query is "cron"
    hits = search(store, "service cron", mode="keyword", k=10)
    assert sorted(h.memory.id for h in hits) == sorted(ids[10:])
    # two words that are both common and informative are still searched together
    both = search(store, "cron job", mode="keyword", k=10)
    assert sorted(h.memory.id for h in both) == sorted(ids[10:13])


def test_when_every_word_is_common_only_the_newest_matches_are_ranked(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_mod, "COMMON_TERM_MIN_DOCS", 2)  # more than 2 memories: common
    monkeypatch.setattr(search_mod, "COMMON_SCORED", 4)
    # the best bm25 matches are the oldest; the four newest mention the words once each
    best = store.add_many(
        [NewMemory(text=f"billing api billing api {i}", created_at=T0) for i in range(6)]
    )
    filler = " ".join(f"word{j}" for j in range(30))
    newest = store.add_many(
        [NewMemory(text=f"billing api note {i} {filler}", created_at=T0) for i in range(4)]
    )
    hits = search(store, "billing api", mode="keyword", k=10)
    assert sorted(_ids(hits)) == sorted(r.id for r in newest)
    # with room for every match, bm25 picks the best ones again
    monkeypatch.setattr(search_mod, "COMMON_SCORED", 100)
    hits = search(store, "billing api", mode="keyword", k=6)
    assert sorted(_ids(hits)) == sorted(r.id for r in best)


def test_archived_best_matches_leave_k_live_results(store: MemoryStore) -> None:
    strong, weak = _ledger_store(store, strong=120, weak=12, kind=Kind.FACT)
    for mid in strong:
        store.archive(mid)
    hits = search(store, "ledger", mode="keyword", k=10)
    assert len(hits) == 10
    assert set(_ids(hits)) <= set(weak)
    assert (
        len(
            search(
                store, "ledger", mode="keyword", k=10, filters=MemoryFilter(include_archived=True)
            )
        )
        == 10
    )


def test_expired_best_matches_leave_k_valid_results(store: MemoryStore) -> None:
    _, weak = _ledger_store(store, strong=120, weak=12, kind=Kind.FACT, valid_to=T0 + 5)
    now = MemoryFilter(valid_at=T0 + 10)
    hits = search(store, "ledger", mode="keyword", k=10, filters=now)
    assert len(hits) == 10 and set(_ids(hits)) <= set(weak)


def test_kind_filter_returns_k_results_below_better_matches_of_other_kinds(
    store: MemoryStore,
) -> None:
    _, weak = _ledger_store(store, strong=120, weak=12, kind=Kind.FACT)
    for mode in ("keyword", "hybrid"):
        hits = search(store, "ledger", mode=mode, k=10, filters=MemoryFilter(kinds=[Kind.DECISION]))
        assert len(hits) == 10 and set(_ids(hits)) <= set(weak), mode


# ---- fusion on hand-made lists ---------------------------------------------------------------


def test_fuse_rrf() -> None:
    kw = [(1, 9.0), (2, 5.0), (4, 1.0)]
    vec = [(2, 0.9), (3, 0.8), (1, 0.1)]
    out = fuse(kw, vec, fusion="rrf")
    assert [mid for mid, _, _ in out] == [2, 1, 3, 4]
    best = 2 / (RRF_K + 1)
    scores = {mid: s for mid, s, _ in out}
    assert scores[2] == pytest.approx((1 / (RRF_K + 2) + 1 / (RRF_K + 1)) / best)
    assert scores[3] == pytest.approx((1 / (RRF_K + 2)) / best)
    comps = {mid: c for mid, _, c in out}
    assert set(comps[4]) == {"rrf_keyword"} and set(comps[2]) == {"rrf_keyword", "rrf_vector"}
    # first in both lists is a perfect 1.0
    assert fuse([(7, 1.0)], [(7, 0.5)])[0][1] == pytest.approx(1.0)


def test_fuse_single_list_keeps_its_order() -> None:
    kw = [(5, 3.0), (1, 2.0), (9, 1.0)]
    out = fuse(kw, [])
    assert [m for m, _, _ in out] == [5, 1, 9]
    assert out[0][1] == pytest.approx(1.0)
    assert [m for m, _, _ in fuse([], [(3, 0.2), (2, 0.1)], fusion="weighted")] == [3, 2]
    assert fuse([], []) == []


def test_fuse_weighted() -> None:
    kw = [(1, 10.0), (2, 6.0)]
    vec = [(2, 0.9), (3, 0.8), (4, -0.3)]
    out = {m: s for m, s, _ in fuse(kw, vec, fusion="weighted", alpha=0.5)}
    assert out[1] == pytest.approx(0.5 * 1.0)
    assert out[2] == pytest.approx(0.5 * 0.6 + 0.5 * 0.9)
    assert out[3] == pytest.approx(0.5 * 0.8)
    assert out[4] == pytest.approx(0.0)  # negative similarity is no evidence, not a penalty
    only_vec = [m for m, _, _ in fuse(kw, vec, fusion="weighted", alpha=1.0)]
    assert only_vec[:2] == [2, 3]
    only_kw = [m for m, _, _ in fuse(kw, vec, fusion="weighted", alpha=0.0)]
    assert only_kw[:2] == [1, 2]


def test_fuse_breaks_ties_by_id() -> None:
    out = fuse([(8, 1.0)], [(3, 1.0)], fusion="rrf")
    assert [m for m, _, _ in out] == [3, 8]


# ---- bad input and degraded modes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"query": ""}, "empty"),
        ({"query": "   "}, "empty"),
        ({"query": None}, "empty"),
        ({"k": 0}, "k must be"),
        ({"k": -3}, "k must be"),
        ({"mode": "semantic"}, "unknown search mode"),
        ({"fusion": "max"}, "unknown fusion"),
        ({"k": "5"}, "k must be"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": "half"}, "alpha"),
    ],
)
def test_bad_search_input(store: MemoryStore, docs: dict[str, int], kw: dict, message: str) -> None:
    args = {"query": "docker"} | kw
    query = args.pop("query")
    with pytest.raises(InvalidInput, match=message):
        search(store, query, **args)


def test_fuse_refuses_unknown_fusion() -> None:
    with pytest.raises(InvalidInput):
        fuse([(1, 1.0)], [], fusion="max")


def test_without_an_embedder_hybrid_is_keyword_and_vector_is_refused(db_path: Path) -> None:
    with MemoryStore(db_path) as s:
        mid = s.add(NewMemory(text="sqlite busy timeout avoids database locked errors")).id
        assert s.embeddings.pending() == 0 and s.vectors() is None
        hits = search(s, "database locked")
        assert _ids(hits) == [mid]
        assert hits[0].similarity is None and hits[0].keyword_rank == 1
        with pytest.raises(InvalidInput, match="embedding model"):
            search(s, "database locked", mode="vector")
        assert s.stats().model_id is None and s.stats().index_count is None


def test_memories_added_without_an_embedder_are_embedded_later(db_path: Path) -> None:
    from storage.embeddings import HashingEmbedder

    with MemoryStore(db_path) as s:
        mid = s.add(NewMemory(text="celery beat schedules nightly cleanup")).id
    with MemoryStore(db_path, embedder=HashingEmbedder(dim=64)) as s:
        assert s.embeddings.pending() == 1
        assert search(s, "celery beat schedules nightly cleanup", mode="vector") == []
        assert s.embeddings.embed_pending() == 1
        assert _ids(search(s, "celery beat schedules nightly cleanup", mode="vector")) == [mid]


def test_lazy_embedder_factory_is_loaded_once(db_path: Path) -> None:
    from storage.embeddings import HashingEmbedder

    made: list[int] = []

    def factory() -> HashingEmbedder:
        made.append(1)
        return HashingEmbedder(dim=64)

    with MemoryStore(db_path, embedder_factory=factory) as s:
        assert s.has_embedder and made == []
        s.add(NewMemory(text="lazy models load on first use"))
        search(s, "lazy models", mode="vector")
        assert made == [1]
