"""Consolidation: a plan of typed changes (merge, compress, link, forget, rerank,
contradiction) computed first and applied after; a dry run that lists it and writes nothing."""

from __future__ import annotations

import time
from typing import Any

import pytest

from predictive.consolidate import run
from predictive.consolidation.forget import PASSED_OVER
from predictive.consolidation.links import MAX_DEGREE
from predictive.consolidation.merge import template_key
from predictive.consolidation.serving import serving_level
from predictive.engine import ContextEngine, ContextRequest
from predictive.upkeep_results import Consolidated
from storage import Anchor, AnchorType, Artifact, MemoryFilter, MemoryStore, NewMemory
from storage.models import AccessKind, EdgeType, Kind, Level
from tests.conftest import snapshot_of

DAY = 86_400.0
NOW = time.time()


def mem(store: MemoryStore, text: str, **kw: object) -> int:
    return store.add(NewMemory(text, **kw)).id  # type: ignore[arg-type]


def files(*paths: str) -> list[Anchor]:
    return [Anchor(AnchorType.FILE, p) for p in paths]


def changes(out: Consolidated, action: str) -> list[dict[str, Any]]:
    return [c.to_dict() for c in out.changes if c.action == action]


def serve(store: MemoryStore, ids: list[int], times: int, at: float, path: str = "") -> None:
    """Contexts served for ``path`` (else other files) from ``at`` on, as the engine logs."""
    for n in range(times):
        mid = ids[n % len(ids)]
        store.conn.execute(
            "INSERT INTO access_log(memory_id, at, kind, context) VALUES (?, ?, 'retrieval', ?)",
            (mid, at + n, f"context {path or f'f{n}.py'}"),
        )
        store.conn.execute("UPDATE memories SET last_accessed = ? WHERE id = ?", (at + n, mid))


def untouched_since(store: MemoryStore, at: float) -> None:
    """Levels filled (a first run) and nothing changed since ``at``."""
    run(store, now=at)
    store.conn.execute("UPDATE memories SET updated_at = ?", (at,))


def test_a_dry_run_lists_every_change_and_writes_nothing(store: MemoryStore) -> None:
    a = mem(store, "Deploys run from the release branch every Tuesday.", kind=Kind.CONVENTION)
    b = mem(store, "deploys run from the release branch, every Tuesday!", kind=Kind.CONVENTION)
    p1 = mem(store, "API port is 8080", fact_key="api.port", fact_value="8080")
    p2 = mem(store, "API port is 9090", fact_key="api.port", fact_value="9090")
    before = snapshot_of(store)
    out = run(store, options={"dryRun": True}, now=NOW)
    assert snapshot_of(store) == before
    assert out.dry_run is True and out.levels_filled == 4
    (merge,) = changes(out, "merge")
    assert merge["ids"] == [b, a] or merge["ids"] == [a, b]
    assert "Tuesday" in merge["labels"][0] and "case" in merge["reason"]
    (contra,) = changes(out, "contradiction")
    assert contra["ids"] == [p1, p2] and "api.port" in contra["reason"]
    assert (out.merged, out.contradictions_opened) == (1, 1)


def test_merge_keeps_all_provenance_and_is_restorable(store: MemoryStore) -> None:
    other = mem(store, "Payments retry with exponential backoff.", kind=Kind.DECISION)
    a = mem(
        store,
        "Use uv for every install.",
        kind=Kind.CONVENTION,
        source="rules",
        source_id=".cursor/rules/a.mdc",
        anchors=files("pyproject.toml"),
    )
    b = mem(
        store,
        "use uv for every install",
        kind=Kind.CONVENTION,
        source="chat:cursor",
        source_id="s1#3",
        anchors=files("setup.py"),
        artifacts=[Artifact("commit", "abc1234")],
    )
    store.graph.add(b, other, EdgeType.RELATES_TO, 0.6)
    store.usage.record(b, AccessKind.CITATION)
    run(store, now=NOW)
    survivor, gone = store.get(a), store.get(b)  # the rule file's memory survives
    assert not survivor.archived and gone.archived
    assert gone.archive_reason is not None and gone.archive_reason.startswith(f"merged into #{a}")
    assert {str(x) for x in survivor.anchors} == {"file:pyproject.toml", "file:setup.py"}
    assert [x.ref for x in survivor.artifacts] == ["abc1234"]
    assert survivor.metadata["merged"] == [{"id": b, "source": "chat:cursor", "source_id": "s1#3"}]
    assert survivor.citation_count == 1
    edges = {(e.target_id, e.type) for e in store.graph.edges(a)}
    assert (other, EdgeType.RELATES_TO) in edges and (b, EdgeType.DERIVED_FROM) in edges
    assert not store.restore(b).archived


def test_merging_never_crosses_kinds(store: MemoryStore) -> None:
    mem(store, "The cache is flushed nightly.", kind=Kind.FACT)
    mem(store, "The cache is flushed nightly!", kind=Kind.DECISION)
    out = run(store, now=NOW)
    assert out.merged == 0 and store.count() == 2


def test_a_release_series_folds_into_its_newest(store: MemoryStore) -> None:
    ids = [
        mem(
            store,
            f"release: {v}",
            kind=Kind.EPISODE,
            source="git",
            source_id=sha,
            valid_from=NOW - (5 - n) * DAY,
            created_at=NOW - (5 - n) * DAY,
        )
        for n, (v, sha) in enumerate([("0.6.0", "a1"), ("0.7.1", "b2"), ("v0.8.0-rc1", "c3")])
    ]
    out = run(store, now=NOW)
    (merge,) = changes(out, "merge")
    assert merge["ids"] == [ids[2], ids[0], ids[1]] and "series of 3" in merge["reason"]
    assert [m.id for m in store.list()] == [ids[2]]
    assert template_key("release: 0.6.0") == template_key("Release: 10.2.33")


def test_distinct_decisions_that_look_alike_do_not_merge(store: MemoryStore) -> None:
    pairs = [
        ("Use PostgreSQL for the billing service.", "Use PostgreSQL for the analytics service."),
        ("Request timeout is 30 seconds.", "Request timeout is 60 seconds."),
    ]
    for x, y in pairs:
        mem(store, x, kind=Kind.DECISION)
        mem(store, y, kind=Kind.DECISION)
    out = run(store, now=NOW)
    assert out.merged == 0 and store.count() == 4


def test_an_unused_episode_is_forgotten_when_its_files_were_opened_without_it(
    store: MemoryStore,
) -> None:
    old = mem(
        store,
        "Refactored the logging setup.",
        kind=Kind.EPISODE,
        anchors=files("log.py"),
        created_at=NOW - 200 * DAY,
    )
    used = mem(
        store,
        "Moved logging to structlog.",
        kind=Kind.EPISODE,
        anchors=files("log.py"),
        created_at=NOW - 200 * DAY,
    )
    untouched_since(store, NOW - 150 * DAY)
    serve(store, [used], PASSED_OVER, NOW - 10 * DAY, "log.py")
    out = run(store, now=NOW)
    (forget,) = changes(out, "forget")
    assert forget["ids"] == [old] and "unused for 90 days" in forget["reason"]
    gone = store.get(old)
    assert gone.archived and gone.archive_reason == forget["reason"]
    assert not store.get(used).archived
    assert not store.restore(old).archived  # restorable


def test_nothing_is_unused_without_its_files_being_opened(store: MemoryStore) -> None:
    quiet = mem(
        store,
        "Refactored the logging setup.",
        kind=Kind.EPISODE,
        anchors=files("log.py"),
        created_at=NOW - 400 * DAY,
    )
    other = mem(store, "Payments use Stripe.", kind=Kind.DECISION, anchors=files("pay.py"))
    untouched_since(store, NOW - 400 * DAY)
    serve(store, [quiet], PASSED_OVER, NOW - 399 * DAY, "log.py")  # used, then log.py rests
    serve(store, [other], PASSED_OVER * 10, NOW - 30 * DAY, "pay.py")  # other files only
    assert run(store, now=NOW).forgotten == 0


def test_active_decisions_rules_and_contradicted_memories_are_never_forgotten(
    store: MemoryStore,
) -> None:
    old = {"created_at": NOW - 300 * DAY}
    kept = [
        mem(store, "We use JWT for sessions.", kind=Kind.DECISION, **old),
        mem(store, "Run ruff before committing.", kind=Kind.CONVENTION, source="rules", **old),
        mem(store, "Port is 1", kind=Kind.EPISODE, fact_key="p", fact_value="1", **old),
        mem(store, "Port is 2", kind=Kind.EPISODE, fact_key="p", fact_value="2", **old),
    ]
    store.contradictions.add(kept[2], kept[3], reason="different ports")
    untouched_since(store, NOW - 300 * DAY)
    serve(store, [kept[0]], 60, NOW - 5 * DAY)
    store.conn.execute("UPDATE memories SET last_accessed = NULL")
    out = run(store, now=NOW)
    assert out.forgotten == 0
    assert not any(m.archived for m in store.get_many(kept))


def test_a_memory_superseded_long_ago_is_archived_with_its_successor_named(
    store: MemoryStore,
) -> None:
    old = mem(store, "We use JWT for sessions.", kind=Kind.DECISION)
    new = mem(store, "We use server-side sessions, not JWT.", kind=Kind.DECISION)
    store.graph.supersede(old, new, at=NOW - 120 * DAY)
    untouched_since(store, NOW - 120 * DAY)
    out = run(store, now=NOW)
    (forget,) = changes(out, "forget")
    assert forget["ids"] == [old, new] and f"superseded by #{new}" in forget["reason"]
    assert store.get(old).archived and not store.get(new).archived


def test_old_episodes_are_served_at_shorter_levels(store: MemoryStore, tmp_path) -> None:
    step = "adjusted the retry loop in worker.py and re-ran the suite."
    ages = {"fresh": 1, "week": 10, "month": 40}
    ids = {
        name: mem(
            store,
            " ".join(f"Step {n}: {name} {step}" for n in range(12)),  # three different texts
            kind=Kind.EPISODE,
            anchors=files("worker.py"),
            created_at=NOW - days * DAY,
        )
        for name, days in ages.items()
    }
    run(store, now=NOW)  # fills the levels
    ctx = ContextEngine(store).assemble(
        ContextRequest(path="worker.py", root=str(tmp_path), budget=20000, as_of=NOW), record=False
    )
    level = {i.memory_id: i.level for i in ctx.items if i.key.startswith("m")}
    assert level[ids["fresh"]] == "full"
    assert level[ids["week"]] == "summary"
    assert level[ids["month"]] == "compressed"
    assert serving_level(Kind.DECISION, NOW - 400 * DAY, NOW) is Level.FULL


def test_compress_changes_name_the_episodes_that_age_into_a_shorter_level(
    store: MemoryStore,
) -> None:
    e = mem(store, "Fixed the flaky upload test.", kind=Kind.EPISODE, created_at=NOW - 6 * DAY)
    run(store, now=NOW)
    out = run(store, now=NOW + 2 * DAY)
    (c,) = changes(out, "compress")
    assert c["ids"] == [e] and "older than 7 days" in c["reason"]


def test_links_are_found_by_files_error_signature_and_co_access(store: MemoryStore) -> None:
    a = mem(store, "Session on retry logic.", kind=Kind.EPISODE, anchors=files("a.py", "b.py"))
    b = mem(store, "Reworked retry loop.", kind=Kind.EPISODE, anchors=files("a.py", "b.py", "c.py"))
    e1 = mem(
        store,
        "Fixed KeyError in loader.",
        kind=Kind.SOLUTION,
        anchors=[Anchor(AnchorType.ERROR, "KeyError: 'id'")],
    )
    e2 = mem(
        store,
        "Loader crashes on a missing id.",
        kind=Kind.FACT,
        anchors=[Anchor(AnchorType.ERROR, "KeyError: 'id'")],
    )
    x = mem(store, "Billing invoices are monthly.", kind=Kind.FACT)
    y = mem(store, "Invoices go out on the 1st.", kind=Kind.DECISION)
    z = mem(store, "Everything is typed.", kind=Kind.CONVENTION)  # served everywhere
    p = mem(store, "Uploads go to S3.", kind=Kind.FACT)
    for n in range(5):
        store.usage.record_many([x, y, z], AccessKind.RETRIEVAL, context=f"context bill{n}.py")
        for k in range(2):
            store.usage.record_many([p, z], AccessKind.RETRIEVAL, context=f"context up{n}{k}.py")
    out = run(store, now=NOW)
    reasons = {tuple(c["ids"]): c["reason"] for c in changes(out, "link")}
    assert "same files: a.py, b.py" in reasons[(a, b)]
    assert "same error signature" in reasons[(e1, e2)]
    assert reasons[(x, y)] == "used together in 5 contexts"
    assert (x, z) not in reasons and (y, z) not in reasons  # no more than chance
    assert {e.target_id for e in store.graph.edges(a) if e.type is EdgeType.RELATES_TO} == {b}
    assert run(store, now=NOW).linked == 0  # linked once


def test_use_moves_rankings_and_is_listed(store: MemoryStore) -> None:
    cited = mem(store, "Prefer httpx over requests.", kind=Kind.DECISION)
    ignored = mem(store, "The logo is blue.", kind=Kind.FACT)
    run(store, now=NOW)
    before = {m.id: m.decay_score for m in store.get_many([cited, ignored])}
    for _ in range(3):
        store.usage.record(cited, AccessKind.CITATION)
    store.usage.record(ignored, AccessKind.RETRIEVAL)
    store.usage.record(ignored, AccessKind.IGNORE)
    store.usage.record(ignored, AccessKind.IGNORE)
    out = run(store, now=NOW)
    listed = {c["ids"][0]: c["reason"] for c in changes(out, "rerank")}
    assert listed[cited].startswith("up: cited 3×")
    after = {m.id: m.decay_score for m in store.get_many([cited, ignored])}
    assert after[cited] > before[cited]
    assert after[ignored] <= before[ignored] + 1e-9


def test_progress_is_reported_and_can_cancel_before_writing(store: MemoryStore) -> None:
    mem(store, "Deploys run on Tuesday.", kind=Kind.CONVENTION)
    mem(store, "deploys run on tuesday", kind=Kind.CONVENTION)
    seen: list[str] = []

    class Stop(Exception):
        pass

    def progress(done: int, total: int, message: str | None = None) -> None:
        seen.append(message or "")
        if message == "merge":
            raise Stop

    with pytest.raises(Stop):
        run(store, progress=progress, now=NOW)
    assert seen == ["levels", "usage", "plan", "merge"]
    assert not any(m.archived for m in store.list(MemoryFilter(include_archived=True)))


def test_a_memory_with_many_links_gets_no_more(store: MemoryStore) -> None:
    hub = mem(
        store, "Overview of the retry module.", kind=Kind.EPISODE, anchors=files("r.py", "s.py")
    )
    for n in range(MAX_DEGREE):
        store.graph.add(hub, mem(store, f"Note {n} on retries.", kind=Kind.FACT), "RELATES_TO", 0.5)
    late = mem(store, "Rewrote the retry module.", kind=Kind.EPISODE, anchors=files("r.py", "s.py"))
    out = run(store, now=NOW)
    assert not [c for c in changes(out, "link") if set(c["ids"]) == {hub, late}]


def test_a_bad_clock_is_refused_by_name_and_changes_nothing(store: MemoryStore) -> None:
    mem(store, "Deploys run on Tuesday.", kind=Kind.CONVENTION)
    mem(store, "deploys run on tuesday", kind=Kind.CONVENTION)
    before = snapshot_of(store)
    with pytest.raises(ValueError, match="now must be a time"):
        run(store, options={"now": "soon"})
    assert snapshot_of(store) == before


def test_episodes_of_different_conversations_never_fold(store: MemoryStore) -> None:
    ids = [mem(store, f"Conversation: bumped to 1.{n}", kind=Kind.EPISODE) for n in range(2)]
    for n, mid in enumerate(ids):
        store.conn.execute(
            "INSERT INTO sessions(id, source_tool, external_id) VALUES (?, 'cursor', ?)",
            (n + 1, f"s{n}"),
        )
        store.conn.execute(
            "INSERT INTO session_memories(session_id, memory_id) VALUES (?, ?)", (n + 1, mid)
        )
    assert run(store, now=NOW).merged == 0


def test_a_failure_in_categories_is_reported_as_skipped_not_raised(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from predictive import categories

    def broken(rows: object) -> object:
        raise KeyError(("benchmarks", "bm"))

    monkeypatch.setattr(categories, "derive", broken)
    for i in range(3):
        mem(store, f"note {i}", anchors=files(f"src/a{i}.py"))
    dry = run(store, options={"dryRun": True}, now=NOW)
    assert dry.categories is None
    assert "categories: refreshing them failed (KeyError: ('benchmarks', 'bm'))" in dry.skipped
    done = run(store, now=NOW)
    assert done.levels_filled == 3 and done.categories is None  # the other steps ran
    assert any(s.startswith("categories: ") for s in done.skipped)
