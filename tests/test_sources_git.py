"""The git reader against real repositories scripted with the git command."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from project_fixtures import (
    BASE_TIME,
    DEFAULT_HISTORY,
    GitRepo,
    git,
    make_big_repo,
    make_git_repo,
)

from storage.sources.git import head, is_repo, read_commits
from storage.sources.records import Commit, SkipLog


def read(root: Path, **kw: object) -> tuple[list[Commit], SkipLog]:
    skips = SkipLog()
    return list(read_commits(root, skips=skips, **kw)), skips  # type: ignore[arg-type]


def by_label(repo: GitRepo, commits: list[Commit]) -> dict[str, Commit]:
    index = {c.sha: c for c in commits}
    return {label: index[sha] for label, sha in repo.shas.items() if sha in index}


def test_default_history_oldest_first_with_files_merge_and_revert(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    commits, skips = read(repo.root)
    assert skips.total == 0
    assert [c.subject for c in commits] == [
        "Initial commit: project skeleton",
        "Add the API module",
        "Add token auth to the API",
        "Document the auth header",
        "Read settings from the environment",
        "Merge branch 'feature/auth'",
        'Revert "Read settings from the environment"',
        "Remove the placeholder app",
    ]
    seen: set[str] = set()
    for c in commits:  # every parent comes before its children
        assert all(p in seen for p in c.parents)
        seen.add(c.sha)
    c = by_label(repo, commits)
    assert c["init"].parents == ()
    assert set(c["init"].files) == {"README.md", "src/app.py"}
    assert c["api"].body == "The API answers /health for the load balancer."
    assert c["api"].author == "Ada Lovelace" and c["api"].email == "ada@example.com"
    assert c["api"].at == BASE_TIME + 120
    # a merge: two parents, files diffed against the first parent (what the branch brought)
    merge = c["merge"]
    assert merge.is_merge and merge.parents == (c["config"].sha, c["auth-docs"].sha)
    assert set(merge.files) == {"src/auth.py", "src/api.py", "docs/auth.md"}
    assert not c["auth"].is_merge
    # a revert names the reverted commit; the deletion lists the deleted file
    assert c["revert"].reverts == c["config"].sha
    assert c["revert"].files == ("src/config.py",)
    assert all(x.reverts is None for x in commits if x is not c["revert"])
    assert c["remove"].files == ("src/app.py",)
    assert head(repo.root) == commits[-1].sha
    assert is_repo(repo.root)


def test_branch_is_set_only_for_commits_no_other_branch_has(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)  # feature/auth still exists and holds init, api, auth…
    c = by_label(repo, read(repo.root)[0])
    assert {k for k, v in c.items() if v.branch == "main"} == {
        "config",
        "merge",
        "revert",
        "remove",
    }
    assert {k for k, v in c.items() if v.branch is None} == {"init", "api", "auth", "auth-docs"}

    repo.delete_branch("feature/auth")  # now everything is on main only
    assert {x.branch for x in read(repo.root)[0]} == {"main"}

    repo.branch("topic")
    repo.commit("Topic work", {"topic.txt": "t\n"}, label="topic")
    c = by_label(repo, read(repo.root)[0])
    assert c["topic"].branch == "topic"
    assert c["remove"].branch is None  # main holds it too

    git(repo.root, "checkout", "-q", "--detach")
    assert {x.branch for x in read(repo.root)[0]} == {None}


def test_a_remote_copy_of_the_same_branch_does_not_hide_it(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path, DEFAULT_HISTORY[:2])
    git(repo.root, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo.root, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    assert {x.branch for x in read(repo.root)[0]} == {"main"}
    git(repo.root, "update-ref", "refs/remotes/origin/other", "HEAD")
    assert {x.branch for x in read(repo.root)[0]} == {None}


def test_after_reads_only_newer_commits(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    newer, skips = read(repo.root, after=repo.shas["merge"])
    assert [c.sha for c in newer] == [repo.shas["revert"], repo.shas["remove"]]
    assert skips.total == 0
    assert read(repo.root, after=repo.head())[0] == []
    # commits of a merged branch are not reachable from a main-line commit before the merge
    after_config = read(repo.root, after=repo.shas["config"])[0]
    assert {c.sha for c in after_config} >= {repo.shas["auth"], repo.shas["merge"]}
    assert repo.shas["api"] not in {c.sha for c in after_config}


def test_unknown_last_commit_reads_everything_and_says_so(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    commits, skips = read(repo.root, after="0123456789abcdef0123456789abcdef01234567")
    assert len(commits) == 8
    assert skips.counts[("git", "unknown last commit")] == 1

    # a rewritten history: the old tip is gone after a rebase-like reset and gc
    old_tip = repo.head()
    git(repo.root, "reset", "-q", "--hard", "HEAD~1")
    repo.commit("Rewritten last commit", {"new.txt": "n\n"})
    git(repo.root, "reflog", "expire", "--expire=now", "--all")
    git(repo.root, "gc", "-q", "--prune=now")
    commits, skips = read(repo.root, after=old_tip)
    assert commits[-1].subject == "Rewritten last commit"
    assert len(commits) == 8
    assert skips.counts[("git", "unknown last commit")] == 1


def test_limit_pages_through_history_without_losing_commits(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    everything = [c.sha for c in read(repo.root)[0]]
    seen: list[str] = []
    after = None
    for _ in range(10):
        page = read(repo.root, after=after, limit=3)[0]
        if not page:
            break
        assert len(page) <= 3
        seen += [c.sha for c in page if c.sha not in seen]
        after = page[-1].sha
    assert sorted(seen) == sorted(everything)
    assert read(repo.root, limit=0)[0] == []


def test_since_keeps_recent_commits(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    commits = read(repo.root, since=BASE_TIME + 300)[0]  # the fifth step onwards
    assert commits and all(c.at >= BASE_TIME + 300 for c in commits)
    assert repo.shas["config"] in {c.sha for c in commits}
    assert repo.shas["api"] not in {c.sha for c in commits}
    assert read(repo.root, since=BASE_TIME + 10_000)[0] == []


def raw_commit(repo: GitRepo, message: bytes, *, encoding: str | None = None) -> str:
    """A commit object written byte for byte (git commit would fix up invalid UTF-8)."""
    tree = git(repo.root, "rev-parse", "HEAD^{tree}")
    stamp = f"{BASE_TIME} +0000"
    lines = [f"tree {tree}", f"parent {repo.head()}"]
    lines += [f"author Raw <raw@example.com> {stamp}", f"committer Raw <raw@example.com> {stamp}"]
    if encoding:
        lines.append(f"encoding {encoding}")
    data = "\n".join(lines).encode() + b"\n\n" + message
    proc = subprocess.run(
        ["git", "-C", str(repo.root), "hash-object", "-w", "-t", "commit", "--stdin"],
        input=data,
        capture_output=True,
        check=True,
    )
    sha = proc.stdout.decode().strip()
    git(repo.root, "update-ref", "HEAD", sha)
    return sha


def test_non_utf8_messages_odd_file_names_and_empty_commits(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path, [])
    repo.commit("Start", {"docs/na\u00efve file.md": "x\n"})
    raw_commit(repo, b"Fix caf\xe9 menu\n\nLatin-1 body \xff\n")
    raw_commit(repo, b"Declared caf\xe9\n", encoding="ISO-8859-1")
    repo.commit("An empty commit", allow_empty=True)
    repo.commit("Subject only", {"a b/c\td.txt": "x\n"})
    commits, skips = read(repo.root)
    assert skips.total == 0
    start, raw, declared, empty, last = commits
    assert start.files == ("docs/na\u00efve file.md",)
    assert raw.subject == "Fix caf\ufffd menu"  # undeclared bytes: replacement characters
    assert raw.body == "Latin-1 body \ufffd"
    assert declared.subject == "Declared caf\u00e9"  # a declared encoding is converted by git
    assert empty.files == () and empty.subject == "An empty commit"
    assert last.files == ("a b/c\td.txt",) and last.body == ""


def test_revert_of_a_revert_names_the_revert(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    again = repo.revert(repo.shas["revert"])
    last = read(repo.root)[0][-1]
    assert last.sha == again and last.reverts == repo.shas["revert"]
    assert last.subject.startswith('Revert "Revert')


def test_a_subfolder_reads_its_own_commits_with_relative_paths(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    commits, skips = read(repo.root / "src")
    assert skips.total == 0
    assert repo.shas["auth-docs"] not in {c.sha for c in commits}  # touched docs/ only
    api = next(c for c in commits if c.sha == repo.shas["api"])
    assert api.files == ("api.py",)


def test_not_a_repository_and_missing_folder(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    commits, skips = read(plain)
    assert commits == [] and skips.counts[("git", "not a git repository")] == 1
    assert not is_repo(plain) and head(plain) is None
    commits, skips = read(tmp_path / "missing")
    assert commits == [] and skips.counts[("git", "not a git repository")] == 1
    assert not is_repo(tmp_path / "missing")


def test_empty_repository(tmp_path: Path) -> None:
    repo = GitRepo.init(tmp_path / "empty")
    commits, skips = read(repo.root)
    assert commits == [] and skips.counts[("git", "empty repository")] == 1
    assert is_repo(repo.root) and head(repo.root) is None


def test_git_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_git_repo(tmp_path, DEFAULT_HISTORY[:1])
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    commits, skips = read(repo.root)
    assert commits == [] and skips.counts[("git", "git not installed")] == 1
    assert not is_repo(repo.root) and head(repo.root) is None


def test_a_repository_git_does_not_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_git_repo(tmp_path, DEFAULT_HISTORY[:1])
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")  # git's own test switch
    commits, skips = read(repo.root)
    assert commits == [] and skips.counts == {("git", "repository not trusted by git"): 1}


def test_shallow_clone_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path)
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{repo.root}", str(clone)],
        check=True,
        capture_output=True,
    )
    commits, skips = read(clone)
    assert commits[-1].sha == repo.head()
    assert 1 <= len(commits) < 8
    assert skips.counts[("git", "shallow clone")] == 1


def test_stopping_early_ends_git_quietly(tmp_path: Path) -> None:
    repo = make_big_repo(tmp_path / "big", 500, files_per_commit=1)
    skips = SkipLog()
    stream = read_commits(repo.root, skips=skips)
    first = next(stream)
    stream.close()
    assert first.subject == "Commit 1: change module 1"
    assert skips.total == 0


def test_ten_thousand_commits_in_seconds(tmp_path: Path) -> None:
    repo = make_big_repo(tmp_path / "big", 10_000)
    skips = SkipLog()
    started = time.perf_counter()
    count, last = 0, None
    for commit in read_commits(repo.root, skips=skips):
        count, last = count + 1, commit
    elapsed = time.perf_counter() - started
    assert count == 10_000 and skips.total == 0
    assert last is not None and last.subject == "Commit 10000: change module 9"
    assert len(last.files) == 3 and last.branch == "main"
    assert elapsed < 10, f"{elapsed:.1f} s"


def _linear_repo(root: Path, n: int = 6) -> list[str]:
    """A repository of ``n`` commits, each adding a file; their shas, oldest first."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    shas = []
    for i in range(n):
        (root / f"f{i}.txt").write_text(f"file {i}\n")
        git(root, "add", ".")
        git(root, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", f"c{i}")
        shas.append(git(root, "rev-parse", "HEAD").strip())
    return shas


def _corrupt(root: Path, sha: str) -> None:
    """Overwrite one loose object with garbage."""
    path = root / ".git" / "objects" / sha[:2] / sha[2:]
    path.chmod(0o644)
    path.write_bytes(b"this is not a zlib stream")


def test_a_corrupt_tree_skips_its_commit_with_a_reason_and_reads_the_rest(tmp_path: Path) -> None:
    shas = _linear_repo(tmp_path / "r")
    tree = git(tmp_path / "r", "rev-parse", f"{shas[2]}^{{tree}}").strip()
    _corrupt(tmp_path / "r", tree)
    for _ in range(5):  # the failure used to be lost in a race with git's exit
        commits, skips = read(tmp_path / "r")
        read_shas = [c.sha for c in commits]
        assert read_shas[:2] == shas[:2]
        assert shas[-1] in read_shas  # the rest is read
        assert shas[2] not in read_shas
        reasons = [reason for (_, reason) in skips.counts]
        assert any(r.startswith("unreadable commit") for r in reasons), reasons


def test_a_corrupt_commit_object_skips_only_itself_and_every_readable_commit_is_read(
    tmp_path: Path,
) -> None:
    shas = _linear_repo(tmp_path / "r", 10)
    _corrupt(tmp_path / "r", shas[5])  # commit 6 of 10: git cannot walk past it
    for _ in range(3):
        commits, skips = read(tmp_path / "r")
        by_sha = {c.sha: c for c in commits}
        assert set(by_sha) == set(shas) - {shas[5]}
        assert len(commits) == 9  # each once
        assert skips.total == 1
        assert next(r for (_, r) in skips.counts).startswith("unreadable commit")
        assert by_sha[shas[0]].files == ("f0.txt",) and by_sha[shas[9]].files == ("f9.txt",)
        assert by_sha[shas[6]].files == ()  # its parent is unreadable: no diff to list
        older = [c.sha for c in commits if c.sha in shas[:5]]
        assert older == shas[:5]  # the history behind it, parents first
        newer = [c.sha for c in commits if c.sha in shas[6:]]
        assert newer == shas[6:]


def test_a_files_last_change_is_its_last_commit_or_its_uncommitted_edit(tmp_path: Path) -> None:
    from storage.sources.git import last_changed

    root = tmp_path / "r"
    root.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "GIT_AUTHOR_DATE": "2021-05-04T10:00:00+00:00",
        "GIT_COMMITTER_DATE": "2021-05-04T10:00:00+00:00",
    }
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True, env=env)
    (root / "AGENTS.md").write_text("# Rules\n")
    subprocess.run(["git", "-C", str(root), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "rules"], check=True, env=env)
    assert last_changed(root, "AGENTS.md") == 1620122400.0
    (root / "AGENTS.md").write_text("# Rules\n\nchanged\n")
    assert last_changed(root, "AGENTS.md") == (root / "AGENTS.md").stat().st_mtime
    assert last_changed(root, "missing.md") is None
