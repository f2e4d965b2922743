"""Ingestion end to end: real git histories, decision records (the real samples too), rule
files and chat histories of every tool, into a real store — idempotent, incremental, dry-run,
and a failing source never stops the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictive.ingest import first_run, parse_since, run
from storage import MemoryFilter, MemoryStore
from storage.errors import InvalidInput
from storage.sessions import SessionStore
from tests.chat_fixtures import build_all_chats
from tests.conftest import TEST_DATA, snapshot_of
from tests.project_fixtures import GitRepo, make_adr_records, make_git_repo, make_rule_files

ADR_DATA = TEST_DATA / "adr"
COMMITS_IN_DEFAULT_HISTORY = 8  # 7 commits on two branches + the merge
KNOWLEDGE_COMMITS = 7  # the merge is left out by default


@pytest.fixture
def project(tmp_path: Path) -> GitRepo:
    repo = make_git_repo(tmp_path)
    make_adr_records(repo.root)
    make_rule_files(repo.root)
    return repo


@pytest.fixture
def home(tmp_path: Path, project: GitRepo) -> Path:
    home = tmp_path / "home"
    build_all_chats(tmp_path, project.root, home=home)
    return home


def options(home: Path | None = None, **kw) -> dict:
    return {
        "home": str(home) if home else str(Path("/nonexistent-home")),
        "platform": "linux",
        **kw,
    }


def by_source(store: MemoryStore, source: str) -> list:
    return [m for m in store.list(limit=10_000) if m.source == source]


def test_everything_a_project_has_is_learned(store: MemoryStore, project: GitRepo, home: Path):
    s = run(store, root=project.root, options=options(home))
    src = s.sources
    assert src["git"].read == COMMITS_IN_DEFAULT_HISTORY
    assert src["git"].added == KNOWLEDGE_COMMITS
    assert src["git"].ignored == {"merge": 1}
    assert src["adr"].added == 3
    assert src["rules"].added >= 8
    assert src["chats"].sessions >= 8  # Cursor A-D, Copilot, Claude, Codex, SpecStory
    assert src["chats"].messages > 0
    assert all(r.error is None for r in src.values()), src
    assert s.added == sum(r.added for r in src.values())
    # nothing of the tool's own output was read back
    texts = " ".join(m.text for m in store.list(limit=10_000))
    assert "generated rule" not in texts and "generated context" not in texts
    # every chat session is stored with a summary, and its messages are embedded
    sessions = SessionStore(store)
    n_sessions, n_messages = sessions.count()
    assert n_sessions == src["chats"].sessions and n_messages == src["chats"].messages
    assert all(x.summary for x in sessions.list(limit=100))
    assert sessions.pending_embeddings() == 0


def test_commits_are_anchored_and_a_revert_supersedes_what_it_reverts(
    store: MemoryStore, project: GitRepo
):
    run(store, root=project.root, options=options(sources=["git"]))
    config = store.find_by_source("git", project.shas["config"])
    revert = store.find_by_source("git", project.shas["revert"])
    assert config is not None and revert is not None
    assert config.superseded_by == revert.id and config.valid_to is not None
    api = store.find_by_source("git", project.shas["api"])
    assert api is not None
    assert {str(a) for a in api.anchors} >= {"file:src/api.py", "file:tests/test_api.py"}
    assert store.find_by_source("git", project.shas["merge"]) is None  # noise by default


def test_merges_are_kept_when_asked(store: MemoryStore, project: GitRepo):
    s = run(store, root=project.root, options=options(sources=["git"], includeMerges=True))
    assert s.sources["git"].added == COMMITS_IN_DEFAULT_HISTORY
    merge = store.find_by_source("git", project.shas["merge"])
    assert merge is not None and "tag:merge" in {str(a) for a in merge.anchors}


def test_git_is_incremental_from_the_last_commit(store: MemoryStore, project: GitRepo):
    run(store, root=project.root, options=options(sources=["git"]))
    project.commit("Add rate limiting", {"src/limits.py": "N = 10\n"})
    again = run(store, root=project.root, options=options(sources=["git"]))
    assert again.sources["git"].read == 1 and again.sources["git"].added == 1
    assert len(by_source(store, "git")) == KNOWLEDGE_COMMITS + 1


def test_running_twice_adds_nothing(store: MemoryStore, project: GitRepo, home: Path):
    run(store, root=project.root, options=options(home))
    before = snapshot_of(store)
    again = run(store, root=project.root, options=options(home))
    assert again.added == 0, again.sources
    assert again.sources["rules"].unchanged == again.sources["rules"].read
    assert again.sources["chats"].unchanged == again.sources["chats"].read
    after = snapshot_of(store)
    assert after["memories"] == before["memories"]


def test_a_superseded_decision_record_is_closed_and_linked(store: MemoryStore, project: GitRepo):
    run(store, root=project.root, options=options(sources=["adr"]))
    old = store.find_by_source("adr", "docs/adr/0001-use-postgresql.md")
    new = store.find_by_source("adr", "docs/adr/0002-use-sqlite.md")
    assert old is not None and new is not None
    assert old.superseded_by == new.id and old.valid_to is not None
    assert new.valid_to is None
    assert any(
        e.type.value == "SUPERSEDES" and e.target_id == old.id for e in store.graph.edges(new.id)
    )


def test_an_edited_decision_record_supersedes_its_previous_version(
    store: MemoryStore, project: GitRepo
):
    run(store, root=project.root, options=options(sources=["adr"]))
    path = project.root / "docs/adr/0003-local-embeddings.md"
    first = store.find_by_source("adr", "docs/adr/0003-local-embeddings.md")
    path.write_text(path.read_text() + "\nWe also pin the model version.\n")
    s = run(store, root=project.root, options=options(sources=["adr"]))
    assert s.sources["adr"].added == 1 and s.sources["adr"].unchanged == 2
    newest = store.source_ids("adr")["docs/adr/0003-local-embeddings.md"]
    assert first is not None and store.get(first.id).superseded_by == newest


def test_rules_that_disappear_are_archived_not_deleted(store: MemoryStore, project: GitRepo):
    run(store, root=project.root, options=options(sources=["rules"]))
    (project.root / ".cursorrules").write_text("- Use type hints everywhere.\n")
    s = run(store, root=project.root, options=options(sources=["rules"]))
    assert s.sources["rules"].archived == 1
    gone = [
        m
        for m in store.list(MemoryFilter(include_archived=True), limit=1000)
        if "pathlib" in m.text
    ]
    assert len(gone) == 1 and gone[0].archived
    assert "no longer in .cursorrules" in (gone[0].archive_reason or "")
    kept = [m for m in store.list(limit=1000) if "type hints" in m.text]
    assert len(kept) == 1 and not kept[0].archived


def test_rule_globs_become_glob_anchors(store: MemoryStore, project: GitRepo):
    run(store, root=project.root, options=options(sources=["rules"]))
    globs = {pat for _, pat in store.glob_anchors()}
    assert {"src/api/**", "src/auth.py", "tests/**/*.py"} <= globs


def test_dry_run_counts_and_writes_nothing(store: MemoryStore, project: GitRepo, home: Path):
    before = snapshot_of(store)
    s = run(store, root=project.root, options=options(home, dry_run=True))
    assert s.dry_run and s.added > 0
    assert s.sources["git"].added == KNOWLEDGE_COMMITS
    assert snapshot_of(store) == before
    assert SessionStore(store).count() == (0, 0)
    assert store.cursors.get("git") == {}


def test_since_limits_by_time(store: MemoryStore, project: GitRepo, home: Path):
    s = run(store, root=project.root, options=options(home, since="2100-01-01"))
    assert s.sources["git"].read == 0
    assert s.sources["chats"].sessions == 0


def test_bad_options_are_refused_before_anything_is_written(store: MemoryStore, project: GitRepo):
    with pytest.raises(InvalidInput, match="since"):
        run(store, root=project.root, options={"since": "yesterday-ish"})
    with pytest.raises(InvalidInput, match="unknown source"):
        run(store, root=project.root, options={"sources": ["email"]})
    with pytest.raises(InvalidInput, match="chat source"):
        run(store, root=project.root, options={"tools": ["slack"]})
    assert store.count() == 0


def test_since_accepts_dates_times_and_ages():
    assert parse_since("2025-01-31") == 1738281600.0
    assert parse_since("2025-01-31T12:00:00Z") == 1738281600.0 + 43200
    assert parse_since("30d", now=1_000_000_000.0) == 1_000_000_000.0 - 30 * 86400
    assert parse_since(12.5) == 12.5 and parse_since(None) is None


def test_a_failing_source_is_reported_and_the_others_still_run(
    store: MemoryStore, project: GitRepo, monkeypatch: pytest.MonkeyPatch
):
    from storage.sources import rules

    def broken(*a, **k):
        raise RuntimeError("reader exploded")

    monkeypatch.setattr(rules, "find_rule_files", broken)
    s = run(store, root=project.root, options=options(sources=["git", "rules", "adr"]))
    assert "reader exploded" in s.sources["rules"].error
    assert s.sources["git"].added == KNOWLEDGE_COMMITS
    assert s.sources["adr"].added == 3


def test_cancelling_stops_the_run_and_keeps_what_was_written(store: MemoryStore, project: GitRepo):
    calls = []

    class Cancelled(Exception):
        pass

    def progress(done, total, message=None):
        calls.append(message)
        if len(calls) > 2:
            raise Cancelled("stop")

    with pytest.raises(Cancelled):
        run(store, root=project.root, options=options(sources=["git", "adr"]), progress=progress)
    # what was stored is whole: every stored commit has its text and anchors
    for m in by_source(store, "git"):
        assert m.text and m.anchors


def test_not_a_git_repository_is_a_skip_not_an_error(store: MemoryStore, tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    s = run(store, root=plain, options=options(sources=["git"]))
    assert s.sources["git"].added == 0 and s.sources["git"].error is None
    reasons = {r["reason"] for r in s.skipped["byReason"]}
    assert "not a git repository" in reasons


def test_first_run_learns_once(store: MemoryStore, project: GitRepo):
    summary = first_run(store, project.root)
    assert summary is not None and set(summary.sources) == {"git", "adr", "rules", "shared"}
    assert summary.added > 0
    assert first_run(store, project.root) is None


def test_first_run_also_learns_into_a_store_with_remembered_memories(
    store: MemoryStore, project: GitRepo, add
):
    add("something the user remembered")
    summary = first_run(store, project.root)
    assert summary is not None and summary.added > 0
    assert store.count() == 1 + summary.added


def test_first_run_is_not_needed_after_an_explicit_ingestion(store: MemoryStore, project: GitRepo):
    run(store, root=project.root, options=options(sources=["git"]))
    assert first_run(store, project.root) is None


@pytest.mark.parametrize(
    ("folder", "superseded"),
    # govuk-aws ADR 3 is only partly superseded (by ADR 33): amended and linked, not closed
    [("madr", 0), ("cisagov-manage.get.gov", 1), ("alphagov-govuk-aws", 1)],
)
def test_the_real_decision_records_are_ingested(
    store: MemoryStore, tmp_path: Path, folder: str, superseded: int
):
    data = ADR_DATA / folder
    s = run(store, root=tmp_path, options={"sources": ["adr"], "paths": [str(data)]})
    r = s.sources["adr"]
    assert r.added == r.read > 3
    decisions = [m for m in store.list(limit=10_000) if m.source == "adr"]
    assert len(decisions) == r.added
    assert all(m.kind.value == "decision" for m in decisions)
    closed = [m for m in decisions if m.superseded_by is not None]
    assert len(closed) == superseded == r.superseded
    assert all(m.valid_to is not None for m in closed)
    # ingesting the same folder again changes nothing
    again = run(store, root=tmp_path, options={"sources": ["adr"], "paths": [str(data)]})
    assert again.sources["adr"].added == 0


def test_a_record_without_a_date_is_dated_by_its_last_commit(store: MemoryStore, tmp_path: Path):
    """A decision record that names no date of its own is as old as the last commit that
    changed it (its commit time, when it entered the history), never the ingestion time; so
    ``--as-of`` an earlier instant does not see it."""
    from tests.project_fixtures import GitRepo

    repo = GitRepo.init(tmp_path / "p")
    body = (
        "# RFC: Queues\n\nStatus: Proposed\n\nProblem\n- Slow jobs.\n\nRecommendation\n- Queue.\n"
    )
    repo.commit("rfc", {"docs/rfcs/queues.md": body}, at=1_700_000_000)
    edited = repo.commit(
        "edit", {"docs/rfcs/queues.md": body + "\nRisks\n- None.\n"}, at=1_700_086_400
    )
    assert edited
    run(store, root=repo.root, options={"sources": ["adr"]})
    (m,) = by_source(store, "adr")
    assert m.valid_from == pytest.approx(1_700_086_400)
    assert "Slow jobs" in m.text and "Queue." in m.text
    assert store.list(filters=MemoryFilter(valid_at=1_700_050_000), limit=10) == []


def test_a_record_edited_after_its_date_is_known_from_the_edit(store: MemoryStore, tmp_path: Path):
    """A record names the day it was decided but was edited later: the text held is the
    edited one, so it is not known before the edit (``--as-of`` never sees today's text
    under an old date)."""
    from tests.project_fixtures import GitRepo

    repo = GitRepo.init(tmp_path / "p")
    body = "# 1. Use queues\n\nDate: 2023-11-01\n\n## Status\n\nAccepted\n\n## Decision\n\nQueue.\n"
    repo.commit("adr", {"docs/adr/0001-use-queues.md": body}, at=1_698_900_000)
    repo.commit("edit", {"docs/adr/0001-use-queues.md": body + "Also retry.\n"}, at=1_700_000_000)
    run(store, root=repo.root, options={"sources": ["adr"]})
    (m,) = by_source(store, "adr")
    assert m.created_at == pytest.approx(1_698_796_800)  # the day it names
    assert m.valid_from == pytest.approx(1_700_000_000)  # the text it holds
