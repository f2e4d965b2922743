"""The operations layer: typed requests checked when built, typed results, clear errors that
lose nothing. The CLI, language server and MCP server are tested through their own doors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from predictive import operations as ops
from predictive.operations import ArgumentError, Invalid
from storage import Anchor, AnchorType, ContradictionStatus, Kind, MemoryStore, NewMemory


def wire(result: Any) -> Any:
    """Results must survive JSON as they are (the front doors only rename keys)."""
    return json.loads(json.dumps(result.to_dict()))


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: ops.RememberArgs("   "), "'text' is empty"),
        (lambda: ops.RememberArgs("x", importance=2.0), "'importance' must be between"),
        (lambda: ops.RememberArgs("x", artifacts=("nocolon",)), "TYPE:REF"),
        (lambda: ops.SearchArgs("q", limit=0), "'limit' must be between"),
        (lambda: ops.ExploreArgs(), "exactly one of the arguments 'id', 'query' and 'category'"),
        (lambda: ops.ResolveArgs(1, "merged"), "needs exactly one"),
        (lambda: ops.ResolveArgs(1, "a_wins", merged_id=3), "go with resolution 'merged'"),
        (lambda: ops.ContextArgs("a.py", budget=10), "'budget' must be between"),
        (lambda: ops.RelatedArgs(1, min_strength=3.0), "'minStrength' must be between"),
        (lambda: ops.RememberArgs("x", anchors=("tag:a",) * 100_000), "'anchors' has 100000"),
        (lambda: ops.SearchArgs("q", kinds=("fact",) * 100_000), "'kinds' has 100000 items"),
        (lambda: ops.SearchArgs("q" * 100_000), "'query' is 100000 characters"),
        (lambda: ops.ContextArgs("a" * 100_000), "'path' is 100000 characters; the limit"),
        (lambda: ops.LockedContextArgs("n", level="all"), "level must be 'preview' or 'full'"),
        (lambda: ops.LockedContextArgs("n", version=0), "'version' must be a positive"),
    ],
)
def test_a_bad_request_is_refused_when_it_is_built(build: Callable[[], Any], says: str) -> None:
    with pytest.raises(Invalid, match=says):
        build()


def test_remember_answers_a_brief_and_knows_a_repeat(store: MemoryStore) -> None:
    first = ops.remember(
        store,
        ops.RememberArgs(
            "Retries use exponential backoff with jitter",
            kind="convention",
            anchors=("module:net.retry",),
            tags=("network",),
            artifacts=("commit:abc123",),
        ),
        file="src/net/retry.py",
    )
    again = ops.remember(store, ops.RememberArgs("Retries use exponential backoff with jitter"))
    assert first.created and not again.created and again.id == first.id
    assert first.memory.kind == "convention" and first.memory.label
    assert set(first.memory.anchors) == {"module:net.retry", "tag:network", "file:src/net/retry.py"}
    assert store.get(first.id).artifacts[0].ref == "abc123"
    assert wire(first)["memory"]["superseded_by"] is None


def test_remember_superseding_a_missing_memory_names_the_argument_and_stores_nothing(
    store: MemoryStore,
) -> None:
    with pytest.raises(ArgumentError) as e:
        ops.remember(store, ops.RememberArgs("New rule", supersedes=99))
    assert e.value.argument == "supersedes" and "no memory #99" in e.value.message
    assert store.count() == 0


def test_a_locked_context_keeps_its_versions_and_reads_back_at_two_levels(
    store: MemoryStore,
) -> None:
    rule = store.add(NewMemory(text="Tokens MUST expire after one hour")).id
    one = ops.lock(store, ops.LockArgs("auth", "Sessions live in Redis", tags=("auth",)))
    same = ops.lock(store, ops.LockArgs("auth", "Sessions live in Redis", tags=("auth",)))
    two = ops.lock(store, ops.LockArgs("auth", memory_ids=(rule,)))
    assert (one.created, same.created, two.created) == (True, False, True)
    assert "content" not in wire(two) and wire(two)["version"] == 2
    newest = ops.locked_context(store, ops.LockedContextArgs("auth"))
    first = ops.locked_context(store, ops.LockedContextArgs("auth", version=1, level="preview"))
    assert newest.content is not None and "Tokens MUST expire" in newest.content
    assert first.content is None and "content" not in wire(first)
    assert wire(first)["versions"] == [1, 2] and wire(first)["level"] == "preview"
    listed = wire(ops.locked_contexts(store, ops.LockedListArgs(tag="auth")))
    assert listed["count"] == 0  # the newest version has no tags
    listed = wire(ops.locked_contexts(store, ops.LockedListArgs()))
    assert [(i["name"], i["versions"]) for i in listed["items"]] == [("auth", 2)]


def test_search_serves_current_memories_unless_history_is_asked(store: MemoryStore) -> None:
    old = ops.remember(store, ops.RememberArgs("Sessions live in JWT cookies", kind="decision"))
    new = ops.remember(
        store,
        ops.RememberArgs(
            "Sessions live server-side in Redis, not JWT cookies",
            kind="decision",
            supersedes=old.id,
        ),
    )
    current = ops.search(store, ops.SearchArgs("sessions JWT cookies"))
    history = ops.search(store, ops.SearchArgs("sessions JWT cookies", history=True))
    assert [r.memory.id for r in current.results if r.memory] == [new.id]
    assert next(r.memory.id for r in history.results if r.memory) == new.id
    assert {r.memory.id for r in history.results if r.memory} == {old.id, new.id}
    out = wire(history)
    assert out["count"] == len(out["results"]) and out["results"][0]["source"]["kind"]
    assert store.get(new.id).retrieval_count == 2  # each search counts as usage


def test_recall_walks_the_levels_and_each_names_the_next(store: MemoryStore) -> None:
    text = " ".join(f"Step {i} of the release checklist is checked by hand." for i in range(40))
    mid = ops.remember(store, ops.RememberArgs(text, kind="workflow")).id
    seen = []
    level = "index"
    while level != "related":
        r = ops.recall(store, ops.RecallArgs(mid, level=level))
        assert isinstance(r, ops.Recalled)
        seen.append((r.level, len(r.text)))
        level = r.next
    assert [lv for lv, _ in seen] == ["index", "compressed", "summary", "full"]
    lengths = [n for _, n in seen]
    assert lengths == sorted(lengths) and lengths[-1] == len(text)


def test_related_links_first_and_refuses_an_unknown_edge_type(store: MemoryStore) -> None:
    a = ops.remember(store, ops.RememberArgs("Auth uses JWT access tokens")).id
    b = ops.remember(store, ops.RememberArgs("Refresh tokens rotate on every use")).id
    out = ops.related(store, ops.RelatedArgs(a, link=b, link_type="leads_to", strength=0.7))
    assert [(x.memory.id, x.via, x.depth) for x in out.related] == [(b, "LEADS_TO", 1)]
    assert wire(out)["related"][0]["from"] == a
    with pytest.raises(ArgumentError) as e:
        ops.related(store, ops.RelatedArgs(a, link=b, link_type="LIKES"))
    assert e.value.argument == "link_type"
    assert len(store.graph.edges(a)) == 1  # the refused link was not added


def test_forget_restore_and_purge_say_what_changed(store: MemoryStore) -> None:
    mid = ops.remember(store, ops.RememberArgs("Temporary note about staging")).id
    with pytest.raises(ArgumentError, match="not archived"):
        ops.forget(store, ops.ForgetArgs(mid, purge=True))
    assert ops.forget(store, ops.ForgetArgs(mid, reason="outdated")).changed
    assert not ops.forget(store, ops.ForgetArgs(mid)).changed
    assert store.get(mid).archive_reason == "outdated"
    assert ops.restore(store, ops.IdArgs(mid)).changed
    assert not ops.restore(store, ops.IdArgs(mid)).changed
    ops.forget(store, ops.ForgetArgs(mid))
    assert ops.forget(store, ops.ForgetArgs(mid, purge=True)).purged
    with pytest.raises(ArgumentError, match=f"no memory #{mid}"):
        ops.recall(store, ops.RecallArgs(mid))


def test_a_contradiction_is_listed_with_both_sides_and_settled_once(store: MemoryStore) -> None:
    a = store.add(NewMemory("Always squash merge pull requests", kind=Kind.CONVENTION)).id
    b = store.add(NewMemory("Never squash merge pull requests", kind=Kind.CONVENTION)).id
    cid = store.contradictions.add(a, b, reason="always vs never", confidence=0.9)
    listed = ops.contradictions(store, ops.ContradictionsArgs())
    assert [c.id for c in listed.contradictions] == [cid]
    view = listed.contradictions[0]
    assert view.a is not None and view.b is not None and view.reason == "always vs never"
    assert {view.a.text, view.b.text} == {store.get(a).text, store.get(b).text}
    settled = ops.resolve_contradiction(store, ops.ResolveArgs(cid, "a_wins", note="team vote"))
    assert settled.status == "resolved" and store.get(b).superseded_by == a
    with pytest.raises(ArgumentError, match="already resolved"):
        ops.resolve_contradiction(store, ops.ResolveArgs(cid, "b_wins"))
    assert store.get(a).superseded_by is None  # the refused second settlement changed nothing
    assert store.contradictions.query(ContradictionStatus.OPEN) == []


def test_resolving_by_merged_text_stores_a_memory_derived_from_both(store: MemoryStore) -> None:
    a = store.add(NewMemory("Deploys happen on Tuesdays", kind=Kind.FACT)).id
    b = store.add(NewMemory("Deploys happen on Thursdays", kind=Kind.FACT)).id
    cid = store.contradictions.add(a, b)
    out = ops.resolve_contradiction(
        store,
        ops.ResolveArgs(cid, "merged", merged_text="Deploys happen on Tuesdays and Thursdays"),
    )
    assert out.merged_id is not None
    assert store.get(a).superseded_by == out.merged_id == store.get(b).superseded_by
    assert wire(out)["merged_id"] == out.merged_id


def test_reindex_answers_what_it_rebuilt(store: MemoryStore) -> None:
    for i in range(3):
        store.add(NewMemory(f"fact number {i} about the build"))
    out = ops.reindex(store, ops.ReindexArgs())
    assert (out.keyword_rows, out.vectors) == (3, 3)
    assert wire(out) == {"embedded": 0, "keyword_rows": 3, "vectors": 3}


def test_context_for_a_file_stays_within_its_budget(store: MemoryStore, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pay.py").write_text("def charge():\n    pass\n")
    mid = store.add(
        NewMemory(
            "Payments go through the charge() wrapper; never call the provider directly",
            kind=Kind.DECISION,
            anchors=[Anchor(AnchorType.FILE, "src/pay.py")],
        )
    ).id
    out = ops.context_for_file(
        store, ops.ContextArgs(str(tmp_path / "src" / "pay.py"), budget=400), tmp_path
    )
    assert out.file.path == "src/pay.py"
    assert mid in [i.memory_id for i in out.items]
    assert out.tokens["total"] <= 400


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "file:///etc/passwd", "file:../outside/x.py", "../outside/x.py", "~/x.py"],
)
def test_a_path_outside_the_project_is_refused_however_it_is_spelled(
    store: MemoryStore, tmp_path: Path, path: str
) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    with pytest.raises(ArgumentError, match="outside the project") as e:
        ops.context_for_file(store, ops.ContextArgs(path), root)
    assert e.value.argument == "path"


def test_the_path_normaliser_reads_uris_and_plain_paths_alike(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    spellings = ["src/a b.py", "file:src/a%20b.py", (root / "src/a b.py").as_uri(), "./src/a b.py"]
    assert {ops.project_path(root, p) for p in spellings} == {"src/a b.py"}
    with pytest.raises(ArgumentError, match="not a file"):
        ops.project_path(root, "file:src")


def test_context_with_bad_diagnostics_names_the_argument(
    store: MemoryStore, tmp_path: Path
) -> None:
    with pytest.raises(ArgumentError) as e:
        ops.context_for_file(store, ops.ContextArgs("a.py", diagnostics="[{"), tmp_path)
    assert e.value.argument == "diagnostics"


def test_explore_names_the_areas_of_a_root_and_explores_a_category(store: MemoryStore) -> None:
    from predictive.categories import refresh_categories

    ids = [
        store.add(
            NewMemory(
                f"Auth note {i}: sessions are checked in the middleware",
                anchors=[Anchor(AnchorType.FILE, f"src/auth/mod{i}.py")],
            )
        ).id
        for i in range(4)
    ]
    refresh_categories(store)
    tree = ops.explore(store, ops.ExploreArgs(id=ids[0], depth=1))
    assert "src/auth/" in tree.roots[0].areas
    areas = ops.explore(store, ops.ExploreArgs(category="src/auth/"))
    assert [c.name for c in areas.categories] == ["src/auth/"]
    assert areas.categories[0].total == 4 and areas.categories[0].summary
    assert wire(areas)["categories"][0]["name"] == "src/auth/"
    everything = ops.explore(store, ops.ExploreArgs(category="", max_nodes=1))
    assert everything.nodes == 1 and len(everything.categories) == 1
    with pytest.raises(ArgumentError) as e:
        ops.explore(store, ops.ExploreArgs(category="nowhere/"))
    assert e.value.argument == "category"


def test_remembering_a_contrary_rule_suspects_a_contradiction(store: MemoryStore) -> None:
    first = ops.remember(
        store, ops.RememberArgs("Always squash merge pull requests", kind="convention")
    )
    second = ops.remember(
        store, ops.RememberArgs("Never squash merge pull requests", kind="convention")
    )
    assert first.contradictions == ()
    assert len(second.contradictions) == 1
    assert store.contradictions.query() == []  # a polarity finding: suspected, not open
    [c] = store.contradictions.query(ContradictionStatus.SUSPECTED)
    assert {c.memory_a, c.memory_b} == {first.id, second.id} and c.reason
    again = ops.remember(
        store, ops.RememberArgs("Never squash merge pull requests", kind="convention")
    )
    assert not again.created and again.contradictions == ()
