"""The repository API of MemoryStore on a real SQLite file."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest
from conftest import snapshot_of

from storage import (
    AccessKind,
    Anchor,
    AnchorType,
    Artifact,
    ContradictionStatus,
    EdgeType,
    InvalidInput,
    Kind,
    Level,
    MemoryFilter,
    MemoryStore,
    NewMemory,
    NotFound,
    Resolution,
    Scope,
    search,
)
from storage.text import content_hash

AddFn = Callable[..., int]


def fts_ids(store: MemoryStore, word: str) -> set[int]:
    return {
        r[0]
        for r in store.conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f'"{word}"',)
        )
    }


def count_rows(store: MemoryStore, table: str, where: str = "1", *params: object) -> int:
    return store.conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0]


# ---- add -----------------------------------------------------------------------------------


def test_add_returns_id_and_stores_every_field(store: MemoryStore) -> None:
    res = store.add(
        NewMemory(
            text="We switched auth from JWT to server sessions because tokens grew too large.",
            kind=Kind.DECISION,
            summary="auth uses server sessions",
            compressed="auth: JWT→sessions (size)",
            index_label="auth sessions",
            anchors=[Anchor.parse("file:src/auth/session.py"), Anchor.parse("auth")],
            artifacts=[Artifact("commit", "abc123", "switch to sessions")],
            scope=Scope.USER,
            source="git",
            source_id="abc123",
            importance=0.8,
            confidence=0.9,
            fact_key="auth.mechanism",
            fact_value="sessions",
            metadata={"pr": 42, "labels": ["auth"]},
        )
    )
    assert res.created is True
    m = store.get(res.id)
    assert m.id == res.id
    assert m.kind is Kind.DECISION
    assert m.scope is Scope.USER
    assert m.level(Level.FULL).startswith("We switched auth")
    assert m.level(Level.SUMMARY) == "auth uses server sessions"
    assert m.level(Level.COMPRESSED) == "auth: JWT→sessions (size)"
    assert m.level(Level.INDEX) == "auth sessions"
    assert set(m.anchors) == {
        Anchor(AnchorType.FILE, "src/auth/session.py"),
        Anchor(AnchorType.TAG, "auth"),
    }
    assert m.artifacts == [Artifact("commit", "abc123", "switch to sessions")]
    assert (m.source, m.source_id) == ("git", "abc123")
    assert (m.importance, m.confidence) == (0.8, 0.9)
    assert (m.fact_key, m.fact_value) == ("auth.mechanism", "sessions")
    assert m.metadata == {"pr": 42, "labels": ["auth"]}
    assert m.content_hash == content_hash(m.text)
    assert m.archived is False and m.valid_to is None
    assert m.valid_from == m.created_at
    assert m.to_dict()["anchors"] == [str(a) for a in m.anchors]
    # FTS and the embedding were written in the same transaction
    assert res.id in fts_ids(store, "sessions")
    assert count_rows(store, "embeddings", "memory_id = ?", res.id) == 1
    assert store.find_by_source("git", "abc123").id == res.id
    assert store.find_by_source("git", "nope") is None


def test_add_dedups_by_content_hash_ignoring_whitespace(store: MemoryStore) -> None:
    first = store.add(NewMemory(text="Use   ruff for  linting.", anchors=[Anchor.parse("lint")]))
    again = store.add(
        NewMemory(
            text="  Use ruff\nfor linting.  ",
            anchors=[Anchor.parse("file:pyproject.toml")],
            artifacts=[Artifact("adr", "docs/adr/7.md")],
        )
    )
    assert first.created is True
    assert again == type(again)(first.id, False)
    assert store.count() == 1
    m = store.get(first.id)
    assert set(m.anchors) == {Anchor.parse("lint"), Anchor.parse("file:pyproject.toml")}
    assert m.artifacts == [Artifact("adr", "docs/adr/7.md")]
    assert first.id in fts_ids(store, "pyproject")  # merged anchor is searchable
    assert count_rows(store, "embeddings") == 1


def test_re_adding_an_archived_memory_restores_it(store: MemoryStore, add: AddFn) -> None:
    mid = add("Tests run with pytest -q")
    store.archive(mid, reason="stale")
    assert store.get(mid).archived
    res = store.add(NewMemory(text="Tests run with pytest -q"))
    assert res.id == mid and res.created is False
    m = store.get(mid)
    assert not m.archived and m.archived_at is None and m.archive_reason is None


def test_add_many_is_one_transaction(store: MemoryStore) -> None:
    gen = store.generation()
    results = store.add_many(
        [NewMemory(text=f"batch memory {i}", source_id="b1") for i in range(5)]
        + [NewMemory(text="batch memory 0")]  # a duplicate inside the batch
    )
    assert [r.created for r in results] == [True] * 5 + [False]
    assert results[5].id == results[0].id
    assert store.count() == 5
    assert store.generation() == gen + 1  # one write transaction
    assert store.add_many([]) == []


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(NewMemory(text=""), id="empty"),
        pytest.param(NewMemory(text="x", importance=2.0), id="importance"),
        pytest.param(NewMemory(text="x", kind="bogus"), id="kind"),  # type: ignore[arg-type]
        pytest.param(NewMemory(text="bad\x00byte"), id="nul"),
        pytest.param(NewMemory(text="x", anchors=["file:a.py"]), id="anchor-str"),  # type: ignore[list-item]
        pytest.param(NewMemory(text="x", metadata={"when": object()}), id="metadata"),
        pytest.param(NewMemory(text="x", artifacts=[Artifact("commit", None)]), id="artifact"),  # type: ignore[arg-type]
        pytest.param(NewMemory(text="x", created_at="yesterday"), id="created-at"),  # type: ignore[arg-type]
    ],
)
def test_add_many_with_one_bad_item_stores_nothing(
    store: MemoryStore, add: AddFn, snapshot: Callable[[], object], bad: NewMemory
) -> None:
    add("already here")
    before = snapshot()
    batch = [NewMemory(text="good one"), bad, NewMemory(text="good two")]
    with pytest.raises(InvalidInput) as err:
        store.add_many(batch)
    assert str(err.value)
    assert snapshot() == before
    assert store.count() == 1


def test_get_get_many_and_not_found(store: MemoryStore, add: AddFn) -> None:
    a, b, c = add("alpha"), add("beta"), add("gamma")
    assert [m.id for m in store.get_many([c, 999, a, c])] == [c, a]
    assert store.get_many([]) == []
    assert store.exists(b) and not store.exists(999)
    with pytest.raises(NotFound, match="#999"):
        store.get(999)
    with pytest.raises(KeyError):  # NotFound is also a KeyError
        store.get(999)


# ---- update --------------------------------------------------------------------------------


def test_update_text_re_embeds_and_refreshes_fts(store: MemoryStore, add: AddFn) -> None:
    mid = add("The cache uses redis for sessions")
    old_vec = store.embeddings.of([mid])[mid].copy()
    old_hash = store.get(mid).content_hash
    m = store.update(mid, text="The cache uses memcached for sessions")
    assert m.text == "The cache uses memcached for sessions"
    assert m.content_hash != old_hash
    new_vec = store.embeddings.of([mid])[mid]
    assert not np.allclose(old_vec, new_vec)
    assert np.allclose(new_vec, store.embedder.embed([m.text])[0], atol=1e-6)
    assert mid in fts_ids(store, "memcached")
    assert mid not in fts_ids(store, "redis")
    assert count_rows(store, "memories_fts") == 1


def test_update_other_fields_and_anchors(store: MemoryStore, add: AddFn) -> None:
    mid = add("Deploys go through the staging cluster", anchors=[Anchor.parse("deploy")])
    vec = store.embeddings.of([mid])[mid].copy()
    m = store.update(
        mid,
        kind="workflow",
        importance=0.9,
        summary="deploy via staging",
        metadata={"k": 1},
        anchors=[Anchor.parse("file:deploy.sh")],
    )
    assert m.kind is Kind.WORKFLOW and m.importance == 0.9 and m.summary == "deploy via staging"
    assert m.metadata == {"k": 1}
    assert m.anchors == [Anchor(AnchorType.FILE, "deploy.sh")]
    assert np.array_equal(store.embeddings.of([mid])[mid], vec)  # text unchanged: no re-embed
    assert mid in fts_ids(store, "staging")  # summary is indexed
    assert mid in fts_ids(store, "sh") and mid not in fts_ids(store, "deploy") - fts_ids(
        store, "deploys"
    )


def test_update_to_a_duplicate_text_is_refused(
    store: MemoryStore, add: AddFn, snapshot: Callable[[], object]
) -> None:
    a = add("first text")
    b = add("second text")
    before = snapshot()
    with pytest.raises(InvalidInput, match=f"#{a}"):
        store.update(b, text="first   text")
    assert snapshot() == before
    assert store.update(b, text="second text").text == "second text"  # same text is fine


@pytest.mark.parametrize(
    "fields",
    [
        {"text": ""},
        {"text": "   \n"},
        {"text": None},
        {"text": "a\x00b"},
        {"importance": -0.1},
        {"confidence": "high"},
        {"kind": "nonsense"},
        {"scope": "galaxy"},
        {"content_hash": "x"},
        {"id": 5},
        {"archived": 1},
        {"metadata": {"x": {1, 2}}},
    ],
    ids=lambda f: next(iter(f)),
)
def test_update_bad_input_changes_nothing(
    store: MemoryStore, add: AddFn, snapshot: Callable[[], object], fields: dict
) -> None:
    mid = add("an untouchable memory")
    before = snapshot()
    with pytest.raises(InvalidInput):
        store.update(mid, **fields)
    assert snapshot() == before


def test_update_unknown_memory(store: MemoryStore) -> None:
    with pytest.raises(NotFound):
        store.update(42, importance=0.3)


def test_add_anchors_and_decay_scores(store: MemoryStore, add: AddFn) -> None:
    a, b = add("one"), add("two")
    store.add_anchors(a, [Anchor.parse("module:pkg.core")])
    assert Anchor(AnchorType.MODULE, "pkg.core") in store.get(a).anchors
    assert a in fts_ids(store, "core")
    assert store.usage.set_decay_scores({a: 0.25, b: 0.75}) == 2
    assert [store.get(a).decay_score, store.get(b).decay_score] == [0.25, 0.75]
    with pytest.raises(NotFound):
        store.add_anchors(999, [Anchor.parse("x")])


# ---- list / filters ------------------------------------------------------------------------


@pytest.fixture
def corpus(store: MemoryStore) -> dict[str, int]:
    """Memories covering every filter dimension; created_at spaced one day apart."""
    day = 86400.0
    t0 = 1_700_000_000.0
    spec = {
        "main-decision": NewMemory(
            text="Main branch decision",
            kind=Kind.DECISION,
            anchors=[Anchor.parse("branch:main"), Anchor.parse("file:a.py")],
            created_at=t0,
            source="git",
        ),
        "feature-fact": NewMemory(
            text="Feature branch fact",
            anchors=[Anchor.parse("branch:feature/x")],
            created_at=t0 + day,
            scope=Scope.USER,
        ),
        "nobranch-convention": NewMemory(
            text="Convention on no branch",
            kind=Kind.CONVENTION,
            anchors=[Anchor.parse("file:b.py")],
            created_at=t0 + 2 * day,
            importance=0.9,
        ),
        "expired": NewMemory(
            text="Expired solution",
            kind=Kind.SOLUTION,
            created_at=t0 + 3 * day,
            valid_to=t0 + 4 * day,
            source="chat",
            importance=0.1,
        ),
        "archived": NewMemory(text="Archived episode", kind=Kind.EPISODE, created_at=t0 + 4 * day),
    }
    ids = {name: store.add(m).id for name, m in spec.items()}
    store.archive(ids["archived"])
    return ids


def _names(ids: dict[str, int], mems: list) -> set[str]:
    back = {v: k for k, v in ids.items()}
    return {back[m.id] for m in mems}


def test_list_default_excludes_archived(store: MemoryStore, corpus: dict[str, int]) -> None:
    assert _names(corpus, store.list()) == set(corpus) - {"archived"}
    assert store.count() == 4
    assert _names(corpus, store.list(MemoryFilter(include_archived=True))) == set(corpus)
    assert _names(corpus, store.list(MemoryFilter(only_archived=True))) == {"archived"}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (
            MemoryFilter(kinds=[Kind.DECISION, Kind.CONVENTION]),
            {"main-decision", "nobranch-convention"},
        ),
        (MemoryFilter(kinds=["solution"]), {"expired"}),  # type: ignore[list-item]
        (MemoryFilter(scopes=[Scope.USER]), {"feature-fact"}),
        (
            MemoryFilter(anchors=[Anchor.parse("file:a.py"), Anchor.parse("file:b.py")]),
            {"main-decision", "nobranch-convention"},
        ),
        (MemoryFilter(anchors=[Anchor.parse("file:nowhere.py")]), set()),
        (MemoryFilter(branch="main"), {"main-decision", "nobranch-convention", "expired"}),
        (MemoryFilter(branch="feature/x"), {"feature-fact", "nobranch-convention", "expired"}),
        (MemoryFilter(branch="other"), {"nobranch-convention", "expired"}),
        (MemoryFilter(source="git"), {"main-decision"}),
        (MemoryFilter(source="chat"), {"expired"}),
        (
            MemoryFilter(since=1_700_000_000.0 + 86400.0),
            {"feature-fact", "nobranch-convention", "expired"},
        ),
        (MemoryFilter(until=1_700_000_000.0 + 86400.0), {"main-decision"}),
        (
            MemoryFilter(since=1_700_000_000.0 + 86400.0, until=1_700_000_000.0 + 3 * 86400.0),
            {"feature-fact", "nobranch-convention"},
        ),
        (
            MemoryFilter(valid_at=1_700_000_000.0 + 3.5 * 86400.0),
            {"main-decision", "feature-fact", "nobranch-convention", "expired"},
        ),
        (
            MemoryFilter(valid_at=1_700_000_000.0 + 5 * 86400.0),
            {"main-decision", "feature-fact", "nobranch-convention"},
        ),
        (MemoryFilter(valid_at=1_700_000_000.0 + 0.5 * 86400.0), {"main-decision"}),
        (MemoryFilter(include_archived=True, kinds=[Kind.EPISODE]), {"archived"}),
        (MemoryFilter(kinds=[Kind.EPISODE]), set()),
    ],
)
def test_list_filters(
    store: MemoryStore, corpus: dict[str, int], flt: MemoryFilter, expected: set[str]
) -> None:
    assert _names(corpus, store.list(flt)) == expected
    assert store.count(flt) == len(expected)


def test_list_ids_filter_and_ids_matching(store: MemoryStore, corpus: dict[str, int]) -> None:
    some = [corpus["main-decision"], corpus["archived"], 999]
    assert _names(corpus, store.list(MemoryFilter(ids=some))) == {"main-decision"}
    assert store.ids_matching(MemoryFilter(kinds=[Kind.DECISION]), some) == {
        corpus["main-decision"]
    }
    assert store.ids_matching(MemoryFilter(), []) == set()


def test_list_orders_limit_offset(store: MemoryStore, corpus: dict[str, int]) -> None:
    recent = [m.id for m in store.list(order="recent")]
    assert recent == [
        corpus[n] for n in ("expired", "nobranch-convention", "feature-fact", "main-decision")
    ]
    assert [m.id for m in store.list(order="oldest")] == recent[::-1]
    by_importance = [m.id for m in store.list(order="importance")]
    assert by_importance[0] == corpus["nobranch-convention"]
    assert by_importance[-1] == corpus["expired"]
    assert [m.id for m in store.list(order="id")] == sorted(recent)
    assert [m.id for m in store.list(order="recent", limit=2, offset=1)] == recent[1:3]
    with pytest.raises(InvalidInput, match="unknown order"):
        store.list(order="random")


# ---- lifecycle -----------------------------------------------------------------------------


def test_archive_and_restore(store: MemoryStore, add: AddFn) -> None:
    mid = add("forget me softly")
    m = store.archive(mid, reason="outdated")
    assert m.archived and m.archive_reason == "outdated" and m.archived_at is not None
    assert store.count() == 0 and store.count(MemoryFilter(include_archived=True)) == 1
    assert count_rows(store, "embeddings") == 1  # archiving keeps everything
    m = store.restore(mid)
    assert not m.archived and m.archived_at is None
    assert store.count() == 1
    with pytest.raises(NotFound):
        store.archive(999)
    with pytest.raises(NotFound):
        store.restore(999)


def test_purge_removes_everything_hanging_off_the_memory(store: MemoryStore, add: AddFn) -> None:
    keep = add("the keeper", anchors=[Anchor.parse("keep")])
    gone = add(
        "the purged one",
        anchors=[Anchor.parse("file:gone.py"), Anchor.parse("gone")],
        artifacts=[Artifact("commit", "deadbeef")],
    )
    store.graph.add(keep, gone, EdgeType.RELATES_TO)
    store.graph.add(gone, keep, EdgeType.LEADS_TO)
    store.contradictions.add(keep, gone)
    store.usage.record(gone, "citation")
    store.categories.assign(gone, "misc")
    store.graph.supersede(gone, keep)
    assert store.get(keep).supersedes == gone
    store.purge(gone)
    assert not store.exists(gone)
    for table, col in [
        ("anchors", "memory_id"),
        ("artifacts", "memory_id"),
        ("embeddings", "memory_id"),
        ("access_log", "memory_id"),
        ("category_members", "memory_id"),
        ("edges", "source_id"),
        ("edges", "target_id"),
        ("contradictions", "memory_a"),
        ("contradictions", "memory_b"),
    ]:
        assert count_rows(store, table, f"{col} = ?", gone) == 0, (table, col)
    assert count_rows(store, "memories_fts", "rowid = ?", gone) == 0
    assert fts_ids(store, "purged") == set()
    k = store.get(keep)
    assert k.supersedes is None  # the pointer does not dangle
    assert k.anchors == [Anchor.parse("keep")]
    assert count_rows(store, "embeddings") == 1
    with pytest.raises(NotFound):
        store.purge(gone)


@pytest.mark.parametrize(
    ("kind", "column"),
    [
        (AccessKind.RETRIEVAL, "retrieval_count"),
        ("citation", "citation_count"),
        ("ignore", "ignore_count"),
        ("view", None),
    ],
)
def test_record_access(store: MemoryStore, add: AddFn, kind: object, column: str | None) -> None:
    mid = add("used memory")
    before = time.time()
    store.usage.record(mid, kind, context="ctx")  # type: ignore[arg-type]
    store.usage.record(mid, kind)  # type: ignore[arg-type]
    m = store.get(mid)
    counts = {
        "retrieval_count": m.retrieval_count,
        "citation_count": m.citation_count,
        "ignore_count": m.ignore_count,
    }
    assert counts == {c: (2 if c == column else 0) for c in counts}
    assert m.last_accessed is not None and m.last_accessed >= before
    log = store.usage.log(mid)
    assert len(log) == 2
    assert {entry[1] for entry in log} == {AccessKind(kind).value}
    assert {entry[2] for entry in log} == {"ctx", None}


def test_record_accesses_is_all_or_nothing(
    store: MemoryStore, add: AddFn, snapshot: Callable[[], object]
) -> None:
    a = add("exists")
    before = snapshot()
    with pytest.raises(NotFound):
        store.usage.record_many([a, 999], "retrieval")
    with pytest.raises(InvalidInput):
        store.usage.record_many([a], "stare")
    assert snapshot() == before


def test_supersede(store: MemoryStore, add: AddFn) -> None:
    old = add("We deploy on Fridays")
    new = add("We never deploy on Fridays")
    when = time.time()
    store.graph.supersede(old, new, at=when)
    o, n = store.get(old), store.get(new)
    assert o.valid_to == when and o.superseded_by == new
    assert n.supersedes == old and n.valid_to is None
    assert [(e.source_id, e.target_id, e.type) for e in store.graph.edges(new)] == [
        (new, old, EdgeType.SUPERSEDES)
    ]
    assert store.graph.edges(old) == []  # SUPERSEDES has no reverse copy
    assert {m.id for m in store.list(MemoryFilter(valid_at=when + 1))} == {new}
    with pytest.raises(InvalidInput):
        store.graph.supersede(new, new)
    with pytest.raises(NotFound):
        store.graph.supersede(old, 999)


# ---- graph ---------------------------------------------------------------------------------


def test_bidirectional_edges_store_a_reverse_copy(store: MemoryStore, add: AddFn) -> None:
    a, b, c = add("a"), add("b"), add("c")
    for etype in (EdgeType.RELATES_TO, EdgeType.SIMILAR_TO, EdgeType.CONTRADICTS):
        store.graph.add(a, b, etype, 0.5)
        assert (
            count_rows(store, "edges", "source_id=? AND target_id=? AND type=?", a, b, etype.value)
            == 1
        )
        assert (
            count_rows(store, "edges", "source_id=? AND target_id=? AND type=?", b, a, etype.value)
            == 1
        )
    store.graph.add(a, c, "LEADS_TO", 0.7)
    assert count_rows(store, "edges", "source_id=? AND target_id=?", c, a) == 0
    # re-adding keeps the stronger strength
    store.graph.add(a, c, "LEADS_TO", 0.2)
    store.graph.add(a, b, "RELATES_TO", 0.9)
    strengths = {(e.target_id, e.type): e.strength for e in store.graph.edges(a)}
    assert strengths[(c, EdgeType.LEADS_TO)] == 0.7
    assert strengths[(b, EdgeType.RELATES_TO)] == 0.9
    assert store.stats().edges == 4  # three bidirectional relations + one directed edge


def test_edges_directions_show_each_relation_once(store: MemoryStore, add: AddFn) -> None:
    a, b, c = add("a"), add("b"), add("c")
    store.graph.add(a, b, EdgeType.RELATES_TO)
    store.graph.add(c, a, EdgeType.LEADS_TO)

    def pairs(mid: int, direction: str) -> set[tuple[int, int, str]]:
        return {
            (e.source_id, e.target_id, e.type.value)
            for e in store.graph.edges(mid, direction=direction)
        }

    assert pairs(a, "out") == {(a, b, "RELATES_TO")}
    assert pairs(b, "out") == {(b, a, "RELATES_TO")}
    # a symmetric relation arrives at both ends
    assert pairs(a, "in") == {(b, a, "RELATES_TO"), (c, a, "LEADS_TO")}
    assert pairs(b, "in") == {(a, b, "RELATES_TO")}
    assert pairs(c, "in") == set()
    # both: every relation touching the memory exactly once
    assert len(store.graph.edges(a, direction="both")) == 2
    assert len(store.graph.edges(b, direction="both")) == 1
    assert pairs(c, "both") == {(c, a, "LEADS_TO")}
    with pytest.raises(InvalidInput):
        store.graph.edges(a, direction="sideways")


def test_remove_edge(store: MemoryStore, add: AddFn) -> None:
    a, b = add("a"), add("b")
    store.graph.add(a, b, EdgeType.SIMILAR_TO)
    store.graph.add(a, b, EdgeType.DEPENDS_ON)
    assert store.graph.remove(b, a, EdgeType.SIMILAR_TO) is True  # either end removes both
    assert count_rows(store, "edges", "type = 'SIMILAR_TO'") == 0
    assert count_rows(store, "edges", "type = 'DEPENDS_ON'") == 1
    assert store.graph.remove(a, b, EdgeType.SIMILAR_TO) is False
    assert store.graph.remove(b, a, EdgeType.DEPENDS_ON) is False  # directed: wrong way round
    assert store.graph.remove(a, b, EdgeType.DEPENDS_ON) is True
    assert count_rows(store, "edges") == 0


def test_edge_bad_input(store: MemoryStore, add: AddFn, snapshot: Callable[[], object]) -> None:
    a, b = add("a"), add("b")
    before = snapshot()
    with pytest.raises(InvalidInput, match="two different"):
        store.graph.add(a, a, EdgeType.RELATES_TO)
    with pytest.raises(InvalidInput):
        store.graph.add(a, b, EdgeType.RELATES_TO, strength=1.5)
    with pytest.raises(InvalidInput):
        store.graph.add(a, b, "KNOWS_ABOUT")
    with pytest.raises(InvalidInput):
        store.graph.remove(a, b, "KNOWS_ABOUT")
    with pytest.raises(NotFound):
        store.graph.add(a, 999, EdgeType.RELATES_TO)
    assert snapshot() == before


@pytest.fixture
def graph(store: MemoryStore, add: AddFn) -> dict[str, int]:
    """a -LEADS_TO 0.9-> b -LEADS_TO 0.8-> c -DEPENDS_ON 0.5-> d ; a -RELATES_TO 0.3- e ;
    a -LEADS_TO 0.2-> c (a weak shortcut) ; x -SOLVES-> a ; b -PART_OF-> z (z archived)."""
    ids = {n: add(f"node {n}") for n in "abcdexz"}
    store.graph.add(ids["a"], ids["b"], "LEADS_TO", 0.9)
    store.graph.add(ids["b"], ids["c"], "LEADS_TO", 0.8)
    store.graph.add(ids["c"], ids["d"], "DEPENDS_ON", 0.5)
    store.graph.add(ids["a"], ids["e"], "RELATES_TO", 0.3)
    store.graph.add(ids["a"], ids["c"], "LEADS_TO", 0.2)
    store.graph.add(ids["x"], ids["a"], "SOLVES", 1.0)
    store.graph.add(ids["b"], ids["z"], "PART_OF", 1.0)
    store.archive(ids["z"])
    return ids


def _walk(store: MemoryStore, ids: dict[str, int], start: str, **kw: object) -> dict[str, tuple]:
    back = {v: k for k, v in ids.items()}
    return {
        back[s.memory_id]: (s.depth, round(s.strength, 6), s.via.value, back[s.parent_id])
        for s in store.graph.traverse(ids[start], **kw)  # type: ignore[arg-type]
    }


def test_traverse_depth(store: MemoryStore, graph: dict[str, int]) -> None:
    assert _walk(store, graph, "a", depth=0) == {}
    assert _walk(store, graph, "a", depth=1) == {
        "b": (1, 0.9, "LEADS_TO", "a"),
        "c": (1, 0.2, "LEADS_TO", "a"),
        "e": (1, 0.3, "RELATES_TO", "a"),
    }
    walk3 = _walk(store, graph, "a", depth=3)
    assert walk3["c"] == (1, 0.2, "LEADS_TO", "a")  # shallowest first
    assert walk3["d"] == (2, 0.1, "DEPENDS_ON", "c")
    assert "z" not in walk3  # archived memories are not reached
    assert "x" not in walk3  # x points at a: not outgoing
    steps = store.graph.traverse(graph["a"], depth=3)
    assert [s.depth for s in steps] == sorted(s.depth for s in steps)


def test_traverse_types_strength_direction(store: MemoryStore, graph: dict[str, int]) -> None:
    assert set(_walk(store, graph, "a", depth=3, types=["LEADS_TO"])) == {"b", "c"}
    assert set(_walk(store, graph, "a", depth=3, types=[EdgeType.RELATES_TO])) == {"e"}
    strong = _walk(store, graph, "a", depth=3, min_strength=0.5)
    assert strong == {
        "b": (1, 0.9, "LEADS_TO", "a"),
        "c": (2, 0.72, "LEADS_TO", "b"),
        "d": (3, 0.36, "DEPENDS_ON", "c"),
    }
    assert _walk(store, graph, "a", depth=1, direction="in") == {"x": (1, 1.0, "SOLVES", "a")} | {
        "e": (1, 0.3, "RELATES_TO", "a")
    }
    assert set(_walk(store, graph, "c", depth=1, direction="in")) == {"a", "b"}
    assert set(_walk(store, graph, "c", depth=1, direction="both")) == {"a", "b", "d"}
    assert set(_walk(store, graph, "e", depth=2, direction="out")) == {"a", "b", "c"}
    assert set(_walk(store, graph, "d", depth=2, direction="in")) == {"c", "b", "a"}
    assert set(_walk(store, graph, "d", depth=3, direction="in")) == {"c", "b", "a", "x", "e"}
    assert set(
        _walk(store, graph, "d", depth=3, direction="in", types=["LEADS_TO", "DEPENDS_ON"])
    ) == {"c", "b", "a"}
    multi = store.graph.traverse([graph["b"], graph["d"]], depth=1)
    assert {s.memory_id for s in multi} == {graph["c"]}  # d is a start, not a result
    assert len(store.graph.traverse(graph["a"], depth=3, limit=2)) == 2


def test_traverse_bad_input(store: MemoryStore, graph: dict[str, int]) -> None:
    with pytest.raises(NotFound):
        store.graph.traverse(999)
    with pytest.raises(InvalidInput):
        store.graph.traverse(graph["a"], depth=-1)
    with pytest.raises(InvalidInput):
        store.graph.traverse(graph["a"], direction="up")
    with pytest.raises(InvalidInput):
        store.graph.traverse(graph["a"], types=["FRIENDS_WITH"])


# ---- contradictions ------------------------------------------------------------------------


def test_contradictions_add_is_idempotent(store: MemoryStore, add: AddFn) -> None:
    a, b, c = add("tabs"), add("spaces"), add("unrelated")
    cid = store.contradictions.add(b, a, reason="indentation", confidence=0.8)
    assert store.contradictions.add(a, b) == cid
    assert count_rows(store, "contradictions") == 1
    assert count_rows(store, "edges", "type = 'CONTRADICTS'") == 2  # both directions
    (con,) = store.contradictions.query()
    assert (con.memory_a, con.memory_b) == (min(a, b), max(a, b))
    assert con.status is ContradictionStatus.OPEN and con.resolution is None
    assert con.reason == "indentation" and con.confidence == 0.8
    assert store.contradictions.query(memory_ids=[c]) == []
    assert [x.id for x in store.contradictions.query(memory_ids=[b])] == [cid]
    assert store.stats().contradictions_open == 1
    with pytest.raises(InvalidInput):
        store.contradictions.add(a, a)
    with pytest.raises(NotFound):
        store.contradictions.add(a, 999)
    with pytest.raises(InvalidInput):
        store.contradictions.add(a, c, confidence=7)


@pytest.mark.parametrize("resolution", ["a_wins", "b_wins", "both_valid"])
def test_resolve_contradiction(store: MemoryStore, add: AddFn, resolution: str) -> None:
    a, b = add("use tabs"), add("use spaces")
    cid = store.contradictions.add(a, b)
    con = store.contradictions.resolve(cid, resolution, note="team vote")
    assert con.status is ContradictionStatus.RESOLVED
    assert con.resolution is Resolution(resolution) and con.note == "team vote"
    assert con.resolved_at is not None
    ma, mb = store.get(a), store.get(b)
    if resolution == "a_wins":
        assert mb.superseded_by == a and mb.valid_to is not None and ma.supersedes == b
        assert ma.valid_to is None and not mb.archived  # the loser is kept, never deleted
    elif resolution == "b_wins":
        assert ma.superseded_by == b and ma.valid_to is not None and mb.supersedes == a
    else:
        assert ma.valid_to is None and mb.valid_to is None
        assert ma.superseded_by is None and mb.superseded_by is None
    assert store.contradictions.query() == []
    assert [c.id for c in store.contradictions.query(ContradictionStatus.RESOLVED)] == [cid]
    assert [c.id for c in store.contradictions.query(None)] == [cid]
    # settled once: resolving again (the other way round) is refused and changes nothing
    before = snapshot_of(store)
    with pytest.raises(InvalidInput, match="already resolved"):
        store.contradictions.resolve(cid, "b_wins" if resolution == "a_wins" else "a_wins")
    assert snapshot_of(store) == before
    assert store.contradictions.add(a, b) == cid  # and detecting it again does not reopen it
    assert store.contradictions.query() == []


def test_a_suspected_contradiction_waits_for_review_until_confirmed(
    store: MemoryStore, add: AddFn
) -> None:
    """Issue 19: a weak finding is recorded suspected: not open (no context shows it), no
    CONTRADICTS edge; the user's confirmation opens it, once."""
    a, b, c = add("tabs"), add("spaces"), add("unrelated")
    cid = store.contradictions.add(a, b, reason="polarity: x", status="suspected")
    assert store.contradictions.add(b, a, status=ContradictionStatus.SUSPECTED) == cid
    assert store.contradictions.query() == []
    assert store.contradictions.query(ContradictionStatus.OPEN, memory_ids=[a, b]) == []
    (con,) = store.contradictions.query(ContradictionStatus.SUSPECTED)
    assert con.id == cid and con.status is ContradictionStatus.SUSPECTED
    assert [x.id for x in store.contradictions.query(["open", "suspected"])] == [cid]
    assert count_rows(store, "edges", "type = 'CONTRADICTS'") == 0
    st = store.stats()
    assert (st.contradictions_open, st.contradictions_suspected) == (0, 1)
    with pytest.raises(InvalidInput, match="open or suspected"):
        store.contradictions.add(a, c, status="resolved")
    with pytest.raises(NotFound):
        store.contradictions.confirm(999)

    confirmed = store.contradictions.confirm(cid, note="they really disagree")
    assert confirmed.status is ContradictionStatus.OPEN
    assert confirmed.note == "confirmed: they really disagree"
    assert [x.id for x in store.contradictions.query(memory_ids=[a])] == [cid]
    assert count_rows(store, "edges", "type = 'CONTRADICTS'") == 2
    st = store.stats()
    assert (st.contradictions_open, st.contradictions_suspected) == (1, 0)
    with pytest.raises(InvalidInput, match="is open, not suspected"):
        store.contradictions.confirm(cid)
    # recording it again as suspected does not take it back
    assert store.contradictions.add(a, b, status="suspected") == cid
    assert store.contradictions.get(cid).status is ContradictionStatus.OPEN


def test_strong_evidence_opens_a_suspected_pair(store: MemoryStore, add: AddFn) -> None:
    a, b = add("port 8080"), add("port 9090")
    cid = store.contradictions.add(a, b, reason="value: port", status="suspected")
    assert store.contradictions.add(a, b, reason="different values for port") == cid
    con = store.contradictions.get(cid)
    assert con.status is ContradictionStatus.OPEN and con.reason == "different values for port"
    assert count_rows(store, "edges", "type = 'CONTRADICTS'") == 2


@pytest.mark.parametrize("how", ["a_wins", "dismiss"])
def test_a_suspected_contradiction_is_settled_like_an_open_one(
    store: MemoryStore, add: AddFn, how: str
) -> None:
    a, b = add("use tabs"), add("use spaces")
    cid = store.contradictions.add(a, b, status="suspected")
    if how == "dismiss":
        con = store.contradictions.dismiss(cid, "not one")
        assert con.status is ContradictionStatus.DISMISSED
    else:
        con = store.contradictions.resolve(cid, how)
        assert con.status is ContradictionStatus.RESOLVED and store.get(b).superseded_by == a
    assert store.contradictions.query(["open", "suspected"]) == []
    with pytest.raises(InvalidInput, match="not suspected"):
        store.contradictions.confirm(cid)


def test_resolve_merged(store: MemoryStore, add: AddFn, snapshot: Callable[[], object]) -> None:
    a, b = add("deploy with make"), add("deploy with just")
    cid = store.contradictions.add(a, b)
    before = snapshot()
    with pytest.raises(InvalidInput, match="merged"):
        store.contradictions.resolve(cid, Resolution.MERGED)
    with pytest.raises(InvalidInput):
        store.contradictions.resolve(cid, "merged", merged_id=a)
    with pytest.raises(InvalidInput):
        store.contradictions.resolve(cid, "coin_flip")
    with pytest.raises(NotFound):
        store.contradictions.resolve(999, "a_wins")
    with pytest.raises(NotFound):
        store.contradictions.resolve(cid, "merged", merged_id=999)
    assert snapshot() == before
    m = add("deploy with make locally and just in CI")
    con = store.contradictions.resolve(cid, "merged", merged_id=m)
    assert con.resolution is Resolution.MERGED
    assert store.get(a).superseded_by == m and store.get(b).superseded_by == m
    assert {(e.target_id, e.type) for e in store.graph.edges(m)} == {
        (a, EdgeType.SUPERSEDES),
        (b, EdgeType.SUPERSEDES),
    }


# ---- categories, stats, generation ---------------------------------------------------------


def test_categories(store: MemoryStore, add: AddFn) -> None:
    a, b = add("one"), add("two")
    backend = store.categories.ensure("backend", description="server side")
    auth = store.categories.ensure("auth", parent="backend")
    assert store.categories.ensure("auth") == auth  # idempotent
    store.categories.assign(a, "auth")
    store.categories.assign(a, "auth")
    store.categories.assign(b, "auth")
    store.categories.assign(a, "new-one")  # created on demand
    store.categories.set_summary("auth", "how we log in")
    cats = {c["name"]: c for c in store.categories.overview()}
    assert set(cats) == {"auth", "backend", "new-one"}
    assert cats["auth"]["parent_id"] == backend
    assert cats["auth"]["members"] == 2 and cats["backend"]["members"] == 0
    assert cats["auth"]["summary"] == "how we log in"
    assert store.categories.of(a) == ["auth", "new-one"]
    with pytest.raises(NotFound):
        store.categories.assign(999, "auth")


def test_stats(store: MemoryStore, add: AddFn) -> None:
    a = add("a decision", kind=Kind.DECISION, source="git")
    b = add("a fact")
    c = add("an archived fact")
    store.archive(c)
    store.graph.supersede(b, a)
    store.graph.add(a, c, "RELATES_TO")
    st = store.stats()
    assert (st.memories, st.active, st.archived, st.superseded) == (3, 2, 1, 1)
    assert st.by_kind == {"decision": 1, "fact": 1}
    assert st.by_source == {"git": 1, "manual": 1}
    assert st.edges == 2  # RELATES_TO (once) + SUPERSEDES
    assert st.embedded == 3 and st.pending_embeddings == 0
    assert st.model_id == "hashing-64"
    assert st.db_bytes > 0 and st.db_path == str(store.db_path)
    assert st.generation == store.generation()
    assert st.to_dict()["memories"] == 3


def test_generation_increases_on_every_write(store: MemoryStore, add: AddFn) -> None:
    a = add("a")
    b = add("b")
    writes: list[Callable[[], object]] = [
        lambda: add("c"),
        lambda: store.add(NewMemory(text="a")),  # dedup merge is still a write
        lambda: store.update(a, importance=0.1),
        lambda: store.update(a, text="a changed"),
        lambda: store.add_anchors(a, [Anchor.parse("t")]),
        lambda: store.usage.set_decay_scores({a: 0.5}),
        lambda: store.usage.record(a),
        lambda: store.graph.add(a, b, "RELATES_TO"),
        lambda: store.graph.remove(a, b, "RELATES_TO"),
        lambda: store.contradictions.add(a, b),
        lambda: store.contradictions.resolve(store.contradictions.query()[0].id, "both_valid"),
        lambda: store.categories.ensure("cat"),
        lambda: store.categories.assign(a, "cat"),
        lambda: store.categories.set_summary("cat", "s"),
        lambda: store.archive(b),
        lambda: store.restore(b),
        lambda: store.graph.supersede(a, b),
        lambda: store.purge(a),
        lambda: store.reindex(),
    ]
    for write in writes:
        before = store.generation()
        write()
        assert store.generation() > before
    reads: list[Callable[[], object]] = [
        lambda: store.get(b),
        lambda: store.list(),
        lambda: store.stats(),
        lambda: store.graph.traverse(b),
        lambda: store.contradictions.query(None),
    ]
    for read in reads:
        before = store.generation()
        read()
        assert store.generation() == before


# ---- anchor lookups --------------------------------------------------------------------------


def test_anchor_matches(store: MemoryStore, add: AddFn) -> None:
    f = Anchor.parse("file:src/auth.py")
    sym = Anchor.parse("symbol:login")
    a = add("auth one", anchors=[f, sym], created_at=1.0)
    b = add("auth two", anchors=[f], created_at=2.0)
    c = add("archived auth", anchors=[sym], created_at=3.0)
    add("unrelated", anchors=[Anchor.parse("file:src/other.py")])
    store.archive(c)
    found = store.anchor_matches([f, sym, Anchor.parse("file:nowhere.py")])
    assert list(found) == [b, a]  # most recent first, archived left out
    assert set(found[a]) == {f, sym} and found[b] == [f]
    assert list(store.anchor_matches([sym], include_archived=True)) == [c, a]
    assert list(store.anchor_matches([f, sym], limit=1)) == [b]
    # the last memory kept keeps every anchor it matched
    two = store.anchor_matches([f, sym], limit=2, include_archived=True)
    assert list(two) == [c, b] and two[b] == [f]
    three = store.anchor_matches([f, sym], limit=3, include_archived=True)
    assert list(three) == [c, b, a] and set(three[a]) == {f, sym}
    assert store.anchor_matches([]) == {}


def test_topic_counts(store: MemoryStore, add: AddFn) -> None:
    auth, ops = Anchor.parse("auth"), Anchor.parse("ops")
    ids = [add(f"auth note {i}", anchors=[auth], importance=i / 10) for i in range(4)]
    add("ops note", anchors=[ops, Anchor.parse("module:app.ops")])
    gone = add("archived auth note", anchors=[auth])
    store.archive(gone)
    topics = store.topic_counts(ids_per_topic=2)
    assert topics[0] == ("auth", 4, [ids[3], ids[2]])
    assert {(label, n) for label, n, _ in topics[1:]} == {("app.ops", 1), ("ops", 1)}
    assert [t[0] for t in store.topic_counts(types=[AnchorType.MODULE])] == ["app.ops"]
    assert len(store.topic_counts(limit=1)) == 1


def test_set_levels_and_lacking_levels(store: MemoryStore) -> None:
    a = store.add(NewMemory("Use cents for money amounts in the ledger")).id
    b = store.add(
        NewMemory("Cache invoices for ten minutes", summary="s", compressed="c", index_label="i")
    ).id
    assert [m.id for m in store.levels.lacking()] == [a]
    gen = store.generation()
    assert (
        store.levels.set(
            {
                a: {
                    "summary": "money: cents",
                    "compressed": "cents",
                    "index_label": "ledger money",
                },
                999: {"summary": "x"},
            }
        )
        == 1
    )
    assert store.generation() > gen
    assert store.levels.lacking() == []
    m = store.get(a)
    assert (m.summary, m.compressed, m.index_label) == ("money: cents", "cents", "ledger money")
    assert [h.memory.id for h in search(store, "ledger", mode="keyword")] == [a]
    with pytest.raises(InvalidInput, match="not a level"):
        store.levels.set({b: {"text": "x"}})
    with pytest.raises(InvalidInput):
        store.levels.set({b: {"summary": "  "}})
    assert store.get(b).summary == "s"
