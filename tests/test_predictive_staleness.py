"""Memories checked against the code they cite: real git repositories, real SQLite stores."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from predictive import staleness
from predictive.engine import ContextEngine, ContextRequest
from predictive.ingest import run as ingest
from storage import Anchor, Kind, MemoryStore, NewMemory
from storage.citations import Origin
from tests.project_fixtures import GIT_ENV

CONFIG = (
    "import json\n\n\n"
    "def parse_config(path):\n"
    "    with open(path) as f:\n"
    "        return json.load(f)\n\n\n"
    "def defaults():\n"
    "    return {'debug': False}\n"
)


class Repo:
    """A real repository written step by step with the ``git`` command."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Test")
        self.git("config", "user.email", "test@example.com")
        self.clock = 1_700_000_000

    def git(self, *args: str) -> str:
        self.clock = getattr(self, "clock", 1_700_000_000) + 60
        env = {
            **os.environ,
            **GIT_ENV,
            "GIT_AUTHOR_DATE": f"@{self.clock} +0000",
            "GIT_COMMITTER_DATE": f"@{self.clock} +0000",
        }
        out = subprocess.run(
            ["git", "-C", str(self.root), *args],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def commit(self, message: str, files: dict[str, str | None]) -> str:
        for path, text in files.items():
            p = self.root / path
            if text is None:
                self.git("rm", "-q", path)
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
                self.git("add", path)
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "proj")
    r.commit("Add the config loader", {"src/config.py": CONFIG, "README.md": "# Demo\n"})
    return r


def decision(store: MemoryStore, text: str) -> int:
    return store.add(NewMemory(text=text, kind=Kind.DECISION)).id


def verdict_of(store: MemoryStore, root: Path, mid: int) -> staleness.Verdict | None:
    return staleness.check(store, root, [mid]).get(mid)


def test_a_deleted_function_is_gone_and_current_again_after_a_revert(
    store: MemoryStore, repo: Repo
) -> None:
    mid = decision(store, "Settings are read with parse_config() in src/config.py.")
    first = verdict_of(store, repo.root, mid)
    assert first is not None and first.state == "current"
    origin = store.citations.origins([mid])[mid]
    assert {(c.type, c.value, c.path) for c in origin.citations} == {
        ("file", "src/config.py", ""),
        ("symbol", "parse_config", "src/config.py"),
    }

    removal = repo.commit(
        "Drop the JSON loader", {"src/config.py": "def defaults():\n    return {}\n"}
    )
    gone = verdict_of(store, repo.root, mid)
    assert gone is not None and gone.state == "gone"
    assert "parse_config() no longer exists in src/config.py" in gone.notes

    repo.git("revert", "--no-edit", removal)
    back = verdict_of(store, repo.root, mid)
    assert back is not None and back.state == "current" and not back.notes


def test_a_renamed_file_is_followed(store: MemoryStore, repo: Repo) -> None:
    mid = decision(store, "Configuration lives in src/config.py (see defaults()).")
    assert verdict_of(store, repo.root, mid) == staleness.Verdict("current")
    repo.git("mv", "src/config.py", "src/settings.py")
    repo.git("commit", "-q", "-m", "Rename config to settings")
    v = verdict_of(store, repo.root, mid)
    assert v is not None and v.state == "changed"
    assert v.notes == ("src/config.py moved to src/settings.py",)


def test_a_commit_whose_file_was_renamed_is_not_gone(tmp_path: Path, store: MemoryStore) -> None:
    r = Repo(tmp_path / "proj")
    r.commit("Add the token helpers", {"src/tokens.py": "def issue():\n    return 1\n"})
    r.git("mv", "src/tokens.py", "src/jwt.py")
    r.git("commit", "-q", "-m", "Move the token helpers")
    ingest(store, root=r.root, options={"sources": ["git"]})
    first = store.find_by_source("git", r.git("rev-parse", "HEAD~1"))
    assert first is not None
    v = staleness.check(store, r.root)[first.id]
    assert v.state == "changed" and "src/tokens.py moved to src/jwt.py" in v.notes


def test_a_rewritten_file_shows_changed_since_with_its_commits(
    store: MemoryStore, repo: Repo
) -> None:
    mid = decision(store, "The loader in src/config.py reads JSON.")
    assert verdict_of(store, repo.root, mid) == staleness.Verdict("current")
    for i in range(3):
        body = "".join(f"SETTING_{i}_{n} = {n}\n" for n in range(12))
        repo.commit(f"Rewrite settings, step {i}", {"src/config.py": body})
    v = verdict_of(store, repo.root, mid)
    assert v is not None and v.state == "changed"
    assert v.notes == ("src/config.py rewritten since this decision (3 commits)",)


def test_a_small_edit_keeps_it_current(store: MemoryStore, repo: Repo) -> None:
    mid = decision(store, "Settings are read with parse_config() in src/config.py.")
    verdict_of(store, repo.root, mid)
    repo.commit("Tweak defaults", {"src/config.py": CONFIG.replace("False", "True")})
    assert verdict_of(store, repo.root, mid) == staleness.Verdict("current")


def test_a_removed_dependency_is_gone(store: MemoryStore, repo: Repo) -> None:
    pyproject = '[project]\nname = "demo"\ndependencies = ["httpx>=0.27", "rich"]\n'
    repo.commit("Declare dependencies", {"pyproject.toml": pyproject})
    mid = decision(store, "HTTP calls go through the httpx library.")
    assert verdict_of(store, repo.root, mid) == staleness.Verdict("current")
    repo.commit("Use urllib", {"pyproject.toml": pyproject.replace('"httpx>=0.27", ', "")})
    v = verdict_of(store, repo.root, mid)
    assert v == staleness.Verdict("gone", ("httpx is no longer a declared dependency",))


def test_a_memory_citing_nothing_gets_no_verdict(store: MemoryStore, repo: Repo) -> None:
    mid = decision(store, "We prefer small pull requests reviewed by two people.")
    assert staleness.check(store, repo.root, [mid]) == {}
    assert store.citations.origins([mid])[mid].citations == ()


def test_words_that_only_look_like_code_are_not_cited(store: MemoryStore, repo: Repo) -> None:
    mid = decision(store, "Call setup_logging() from src/missing.py before anything else.")
    assert staleness.check(store, repo.root, [mid]) == {}


def test_no_git_detached_head_and_missing_commits_never_raise(
    tmp_path: Path, store: MemoryStore, repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "src").mkdir()
    (plain / "src/config.py").write_text(CONFIG)
    mid = decision(store, "Settings are read with parse_config() in src/config.py.")
    assert staleness.check(store, plain, [mid]) == {}  # nothing can be checked

    other = decision(store, "defaults() in src/config.py gives the fallback settings.")
    assert verdict_of(store, repo.root, other) == staleness.Verdict("current")
    repo.git("checkout", "-q", "--detach", "HEAD")
    assert verdict_of(store, repo.root, other) == staleness.Verdict("current")

    cited = store.citations.origins([other])[other].citations
    store.citations.record([Origin(other, "0" * 40, cited)], staleness.VERSION)
    assert verdict_of(store, repo.root, other) == staleness.Verdict("unknown")

    head = repo.git("rev-parse", "HEAD")
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    store.citations.record([Origin(other, head, cited)], staleness.VERSION)
    assert verdict_of(store, repo.root, other) == staleness.Verdict("unknown")


def test_context_marks_changed_items_and_never_serves_a_gone_one_as_current(
    store: MemoryStore, repo: Repo
) -> None:
    gone = decision(store, "Settings are read with parse_config() in src/config.py.")
    moved = store.add(
        NewMemory(text="The defaults of src/config.py are read at start.", kind=Kind.DECISION)
    ).id
    for m in (gone, moved):
        store.add_anchors(m, [Anchor.parse("file:src/config.py")])
    engine = ContextEngine(store, root=repo.root, wait_for_staleness=True)
    before = engine.assemble(ContextRequest("src/config.py", root=str(repo.root)))
    assert {i.memory_id: i.tier.value for i in before.items if i.memory_id}[gone] == "critical"
    assert "⚠" not in before.markdown

    for i in range(2):
        body = "".join(f"def defaults_{i}_{n}():\n    return {n}\n" for n in range(8))
        repo.commit(f"Rewrite the loader {i}", {"src/config.py": body})
    after = engine.assemble(ContextRequest("src/config.py", root=str(repo.root)))
    tiers = {i.memory_id: i for i in after.items if i.memory_id}
    assert tiers[gone].tier.value == "index" and tiers[gone].stale is not None
    assert tiers[gone].stale["state"] == "gone"
    assert "(stale)" in after.markdown
    assert "parse_config() no longer exists in src/config.py" in after.markdown
    assert tiers[moved].tier.value == "critical"
    assert tiers[moved].stale == {
        "state": "changed",
        "notes": ["src/config.py rewritten since this decision (2 commits)"],
    }, after.markdown
    assert "⚠ changed since: src/config.py rewritten since this decision (2 commits)" in (
        after.markdown
    )


def test_the_hot_path_answers_from_memory_and_checks_in_the_background(
    store: MemoryStore, repo: Repo
) -> None:
    mid = decision(store, "Settings are read with parse_config() in src/config.py.")
    service = staleness.Staleness(store, repo.root)
    assert service.lookup([mid]) == {}  # not known yet: checked off this thread
    assert service._running is not None
    service._running.result(timeout=60)
    assert service.lookup([mid]) == {mid: staleness.Verdict("current")}
    epoch = service.epoch
    repo.commit("Drop the loader", {"src/config.py": "X = 1\n"})
    service._head_read = 0.0  # HEAD is read again at most twice a second
    assert service.lookup([mid])[mid].state == "current"  # the old answer, for now
    assert service._running is not None
    service._running.result(timeout=60)
    assert service.lookup([mid])[mid].state == "gone" and service.epoch > epoch
    service.close()


def test_a_store_from_before_citations_gains_their_tables_and_records_lazily(
    tmp_path: Path, repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from storage import db as dbmod
    from storage.schema import _V10, MIGRATIONS

    path = tmp_path / "old.db"
    before = MIGRATIONS.index(_V10)
    monkeypatch.setattr(dbmod, "MIGRATIONS", MIGRATIONS[:before])
    with MemoryStore(path) as old:
        assert old.conn.pragma("user_version") == before
        mid = decision(old, "Settings are read with parse_config() in src/config.py.")
    monkeypatch.undo()
    with MemoryStore(path) as s:
        assert s.conn.pragma("user_version") == len(MIGRATIONS)
        assert s.citations.unrecorded(staleness.VERSION) == [mid]
        assert staleness.check(s, repo.root) == {mid: staleness.Verdict("current")}
        assert s.citations.unrecorded(staleness.VERSION) == []


def test_a_head_move_keeps_the_verdicts_of_memories_it_did_not_touch(
    store: MemoryStore, repo: Repo
) -> None:
    config = decision(store, "Settings are read with parse_config() in src/config.py.")
    readme = decision(store, "The README.md explains how to run the demo.")
    service = staleness.Staleness(store, repo.root)
    service.refresh(wait=True)
    assert service.lookup([config, readme], wait=True) == {
        config: staleness.Verdict("current"),
        readme: staleness.Verdict("current"),
    }
    kept = service._entries[readme]
    repo.commit("Drop the loader", {"src/config.py": "X = 1\n"})
    service._head_read = 0.0
    got = service.lookup([config, readme], wait=True)
    assert got[config].state == "gone" and got[readme].state == "current"
    assert service._entries[readme] is kept  # carried over, not checked again
    head = repo.git("rev-parse", "HEAD")
    assert set(store.citations.verdicts(head)) == {config, readme}
    service.close()


def test_search_answers_and_the_review_list_carry_stale_memories(
    store: MemoryStore, repo: Repo
) -> None:
    from predictive import operations as ops

    gone = decision(store, "Settings are read with parse_config() in src/config.py.")
    kept = decision(store, "Settings fall back to defaults() in src/config.py.")
    untouched = decision(store, "Settings are reviewed by two people.")
    staleness.check(store, repo.root)
    loader = "def parse_config(path):\n    with open(path) as f:\n        return json.load(f)\n"
    repo.commit("Drop the JSON loader", {"src/config.py": CONFIG.replace(loader, "")})
    staleness.check(store, repo.root)

    found = ops.search(store, ops.SearchArgs(query="settings", mode="keyword")).to_dict()
    by_id = {r["id"]: r for r in found["results"]}
    assert {gone, kept, untouched} <= set(by_id)
    assert by_id[gone]["stale"] == {
        "state": "gone",
        "notes": ["parse_config() no longer exists in src/config.py"],
    }
    assert "stale" not in by_id[kept] and "stale" not in by_id[untouched]

    review = ops.contradictions(store, ops.ContradictionsArgs()).to_dict()
    assert [(s["id"], s["state"]) for s in review["stale"]] == [(gone, "gone")]
    assert "stale" not in ops.contradictions(store, ops.ContradictionsArgs("open")).to_dict()
