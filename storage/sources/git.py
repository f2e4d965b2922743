"""Commits of a git repository, oldest first, read with the ``git`` command.

One ``git log`` process streams the history and it is parsed token by token as it arrives.
Choices:

- **Order**: ``--date-order --reverse``: parents always come before their children, otherwise
  commit-time order. Any prefix of the stream is therefore closed under ancestry, so a caller
  that stops after ``limit`` commits and later passes the last sha as ``after`` loses nothing
  (a commit may come twice; callers dedupe by sha).
- **after**: the last ingested sha; only commits not reachable from it (``after..HEAD``). An
  unknown sha (history rewritten, object gone) is logged as ``unknown last commit`` and the
  whole history is read again.
- **since**: epoch seconds, passed to git as ``--since`` (git compares the *committer* date;
  :attr:`Commit.at` is the author date).
- **Merges**: their files are the diff against the first parent (what the merge brought into
  the branch); ``Commit.parents`` tells them apart.
- **Reverts**: ``This reverts commit <sha>.`` in the message fills :attr:`Commit.reverts`.
- **Branch**: the checked-out branch, for commits reachable from ``HEAD`` but from no other
  branch (local, or remote-tracking under another name): work done only there.
  Shared history, and everything when ``HEAD`` is detached, has no branch. This never ties a
  commit that is also on another branch to one of them.
- **A subfolder of a repository**: only commits touching it, paths relative to it.
- Messages are decoded as UTF-8 with replacement characters; so are file names.
- Not a repository, git missing, an empty repository, a repository git refuses (another
  user's, see ``safe.directory``): nothing is read and the skip log says why (``not a git
  repository``, ``git not installed``, ``empty repository``, ``repository not trusted by
  git``). A shallow clone is read as far as it goes and logged as ``shallow clone``; a failing
  ``git log`` is logged as ``git error``. When it stops at an unreadable (corrupt) object,
  the commit it stopped at is skipped as ``unreadable commit`` and the rest is read; ``git
  log``'s exit status is always awaited, also after the end of its output. When a commit
  object itself is unreadable (git cannot walk past it), every readable commit is found in
  the object database and read (``_salvage``): those after it, and the history behind it
  that no branch reaches any more; the commit right after it comes without files, and the
  order is then parents first for what was not yet read.
- Memory: the stream is parsed as it arrives; only the set of branch-only shas is held (all
  of them for a repository with a single branch: about 100 bytes a commit).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from storage.sources.records import Commit, SkipLog

log = logging.getLogger(__name__)

SOURCE = "git"
_FIELDS = 7  # sha, parents, author, email, author time, subject, body
_FORMAT = "%x1e%H%x00%P%x00%aN%x00%aE%x00%at%x00%s%x00%b%x00"
_SHA = re.compile(rb"\x1e([0-9a-f]{40}|[0-9a-f]{64})")
_REVERTS = re.compile(r"This reverts commit ([0-9a-fA-F]{7,64})")
_CHUNK = 1 << 16


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"})
    return env


def _git(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C root args`` to completion; raises FileNotFoundError when git is missing."""
    return subprocess.run(
        ["git", "-C", str(root), *args],
        input=stdin.encode("utf-8") if stdin is not None else None,
        capture_output=True,
        env=_env(),
        check=False,
    )


def _out(root: Path, *args: str) -> str | None:
    """The trimmed stdout of a successful git command, else None (git missing included)."""
    try:
        proc = _git(root, *args)
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", errors="replace").strip()


def is_repo(root: Path) -> bool:
    """Whether ``root`` is inside a git work tree (False when git is not installed)."""
    return _out(root, "rev-parse", "--is-inside-work-tree") == "true"


def head(root: Path) -> str | None:
    """The full sha ``HEAD`` points at; None outside a repository or before the first commit."""
    return _out(root, "rev-parse", "--verify", "-q", "HEAD^{commit}") or None


@functools.lru_cache(maxsize=1)
def _git_version() -> tuple[int, int]:
    """The installed git's (major, minor), (0, 0) when unknown."""
    m = re.search(r"(\d+)\.(\d+)", _out(Path.cwd(), "version") or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def count_commits(root: Path, *, after: str | None = None, since: float | None = None) -> int:
    """How many commits :func:`read_commits` would read (0 when unknown): for progress."""
    args = ["rev-list", "--count", "HEAD"]
    if after and _commit_exists(root, after):
        args.append(f"^{after}")
    if since is not None:
        args.append(_since(since))
    try:
        out = _out(root, *args, "--")
    except OSError:
        return 0
    return int(out) if out and out.strip().isdigit() else 0


def last_changed(root: Path, path: str) -> float | None:
    """When ``path`` got the text it has: the commit time of the last commit that changed it
    (when the text entered this history; a rebase or a merged pull request makes that later
    than its author time), or its modification time when it has changes not committed yet (or
    git does not know it); None when neither can be read."""
    full = root / path
    try:
        mtime = full.stat().st_mtime
    except OSError:
        mtime = None
    at = committed_at(root, path)
    return mtime if at is None else at


def committed_at(root: Path, path: str) -> float | None:
    """The commit time of the last commit that changed ``path``, when its text is that
    commit's (None when it is untracked or modified, or ``root`` is not a repository)."""
    status = _out(root, "status", "--porcelain", "--", path)
    if status is None or status:  # not a repository, or untracked / modified
        return None
    at = _out(root, "log", "-1", "--format=%ct", "--", path)
    return float(at) if at and at.isdigit() else None


def _commit_exists(root: Path, rev: str) -> bool:
    return _out(root, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}") is not None


def _only_on_branch(root: Path, revs: Sequence[str], since: float | None) -> tuple[str, set[str]]:
    """The current branch and the commits of ``revs`` that no other branch contains."""
    branch = _out(root, "symbolic-ref", "--short", "-q", "HEAD")
    if not branch:
        return "", set()
    refs = _out(root, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes") or ""
    others = [
        ref
        for ref in refs.splitlines()
        if ref != f"refs/heads/{branch}"
        and not (ref.startswith("refs/remotes/") and ref.endswith(("/HEAD", f"/{branch}")))
    ]
    args = ["rev-list", "--stdin"]
    if since is not None:
        args.append(_since(since))
    try:
        proc = _git(root, *args, stdin="\n".join([*revs, *(f"^{r}" for r in others)]) + "\n")
    except OSError:
        return "", set()
    if proc.returncode != 0:
        return "", set()
    return branch, set(proc.stdout.decode("ascii", errors="replace").split())


def _since(since: float) -> str:
    return f"--since=@{int(since)} +0000"


def _tokens(stream: IO[bytes]) -> Iterator[bytes]:
    """The NUL-separated tokens of a stream, read in chunks."""
    rest = b""
    while chunk := stream.read(_CHUNK):
        parts = (rest + chunk).split(b"\0")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _commits(tokens: Iterator[bytes], branch: str, mine: set[str]) -> Iterator[Commit]:
    """Parse ``\\x1e sha \\0 parents \\0 … body \\0`` headers, each followed by file names."""
    header: list[bytes] | None = None
    files: list[str] = []

    def build() -> Commit:
        assert header is not None
        sha = _text(header[0])
        subject, body = _text(header[5]), _text(header[6]).strip()
        reverts = _REVERTS.search(body)
        return Commit(
            sha=sha,
            parents=tuple(_text(header[1]).split()),
            author=_text(header[2]),
            email=_text(header[3]),
            at=float(header[4] or 0),
            subject=subject,
            body=body,
            files=tuple(files),
            branch=branch if sha in mine else None,
            reverts=reverts.group(1).lower() if reverts else None,
        )

    for token in tokens:
        if _SHA.fullmatch(token):
            if header is not None:
                yield build()
            header, files = [token[1:]], []
        elif header is not None and len(header) < _FIELDS:
            header.append(token)
        elif header is not None:
            name = token[1:] if token.startswith(b"\n") else token
            if name:
                files.append(_text(name))
    if header is not None and len(header) == _FIELDS:
        yield build()


def read_commits(
    root: Path,
    *,
    after: str | None = None,
    since: float | None = None,
    limit: int | None = None,
    skips: SkipLog,
) -> Iterator[Commit]:
    """The commits of ``HEAD``, oldest first, streamed (see the module notes for each choice).

    ``after``: the last sha already ingested (only newer commits); ``since``: epoch seconds;
    ``limit``: stop after this many (the oldest ones). Nothing raises: what cannot be read is
    counted in ``skips`` under the source ``git``.
    """
    where = str(root)
    if not root.is_dir():
        skips.skip(SOURCE, where, "not a git repository")
        return
    try:
        inside = _git(root, "rev-parse", "--is-inside-work-tree", "--is-shallow-repository")
    except OSError:
        skips.skip(SOURCE, where, "git not installed")
        return
    answers = inside.stdout.decode("ascii", errors="replace").split()
    if b"dubious ownership" in inside.stderr:  # git's safe.directory check
        skips.skip(SOURCE, where, "repository not trusted by git")
        return
    if inside.returncode != 0 or not answers or answers[0] != "true":
        skips.skip(SOURCE, where, "not a git repository")
        return
    tip = head(root)
    if tip is None:
        skips.skip(SOURCE, where, "empty repository")
        return
    if answers[-1] == "true":
        skips.skip(SOURCE, where, "shallow clone")
    revs = [tip]
    if after:
        if _commit_exists(root, after):
            revs.append(f"^{after}")
        else:
            skips.skip(SOURCE, after, "unknown last commit")
    if limit is not None and limit <= 0:
        return
    branch, mine = _only_on_branch(root, revs, since)
    prefix = _out(root, "rev-parse", "--show-prefix") or ""
    args = [
        "-c",
        "log.showSignature=false",
        "log",
        "--no-color",
        "--reverse",
        "--date-order",
        "-z",
        "--name-only",
        f"--format={_FORMAT}",
    ]
    if _git_version() >= (2, 31):  # older gits list no files for merges
        args.append("--diff-merges=first-parent")
    if since is not None:
        args.append(_since(since))
    if prefix:
        args.append("--relative")
    args += [*revs, "--"]
    if prefix:
        args.append(".")
    seen: set[str] = set()
    count = 0
    for commit in _walk(root, args, revs, since, branch, mine, seen, skips):
        if commit.sha in seen:
            continue
        seen.add(commit.sha)
        yield commit
        count += 1
        if limit is not None and count >= limit:
            return


def _walk(
    root: Path,
    args: list[str],
    revs: list[str],
    since: float | None,
    branch: str,
    mine: set[str],
    seen: set[str],
    skips: SkipLog,
) -> Iterator[Commit]:
    """``git log``'s commits, again past each unreadable object it stops at (a commit may come
    twice: the caller keeps ``seen``)."""
    where = str(root)
    for _attempt in range(MAX_RESTARTS + 1):
        failure: list[str] = []
        yield from _stream(root, args, branch, mine, failure)
        if not failure:
            return
        # git stopped at an unreadable object: skip the commit it stopped at, read the rest
        bad = _first_unread(root, revs, since, seen)
        if bad is None:
            # the history itself cannot be walked (a commit object is unreadable): read every
            # commit that can be read, found in the object database
            salvage = _salvage(root, revs, since, seen)
            if salvage is None:
                log.warning("git log failed in %s: %s", root, failure[0])
                skips.skip(SOURCE, where, f"git error: {failure[0][:200]}")
                return
            order, orphans, unreadable = salvage
            log.warning("git could not read %d commit(s) in %s", len(unreadable), root)
            for sha in unreadable:
                skips.skip(SOURCE, sha, f"unreadable commit (corrupt object): {failure[0][:200]}")
            yield from _read_listed(root, args, revs, order, orphans, branch, mine, skips)
            return
        log.warning("git could not read commit %s in %s: %s", bad, root, failure[0])
        skips.skip(SOURCE, bad, f"unreadable commit (corrupt object): {failure[0][:200]}")
        seen.add(bad)
        args = [*args[: args.index("--")], f"^{bad}", *args[args.index("--") :]]
    skips.skip(SOURCE, where, "too many unreadable commits; the rest is not read")


MAX_RESTARTS = 20
_BATCH = 500
"""Commits named on one ``git log --no-walk`` command line while salvaging a history."""
_WALK_OPTIONS = ("--reverse", "--date-order")


def _read_listed(
    root: Path,
    args: list[str],
    tips: list[str],
    order: list[str],
    orphans: set[str],
    branch: str,
    mine: set[str],
    skips: SkipLog,
) -> Iterator[Commit]:
    """The commits ``order`` names, in that order, each read on its own (``--no-walk``); an
    orphan (its parent unreadable) has no diff to list, so it comes without files."""
    at = args.index("--")
    # the options only: not the walk's order, its tip or what it excludes (``^sha``)
    options = [
        a for a in args[:at] if a not in _WALK_OPTIONS and not a.startswith("^") and a not in tips
    ]
    runs: list[tuple[bool, list[str]]] = []
    for sha in order:
        orphan = sha in orphans
        if not runs or runs[-1][0] != orphan or len(runs[-1][1]) >= _BATCH:
            runs.append((orphan, []))
        runs[-1][1].append(sha)
    for orphan, shas in runs:
        opts = [a for a in options if a != "--name-only"] if orphan else options
        failure: list[str] = []
        yield from _stream(
            root, [*opts, "--no-walk=unsorted", *shas, *args[at:]], branch, mine, failure
        )
        if failure:
            skips.skip(SOURCE, str(root), f"git error: {failure[0][:200]}")


def _salvage(
    root: Path, revs: list[str], since: float | None, seen: set[str]
) -> tuple[list[str], set[str], list[str]] | None:
    """When a commit object of the history is unreadable, ``git log`` cannot walk past it. The
    history is then rebuilt from the object database: every readable commit reachable from the
    tip, then, behind each unreadable one, the readable commits that no branch or tag reaches
    (the history it cut off). Answers the readable commits not in ``seen``, parents first; the
    children of an unreadable commit (listed without files: there is no diff to list); and the
    unreadable commits. None when the object database cannot be listed.

    Limit: a commit left unreachable by other means (an amended commit's old version) is read
    as part of that cut-off history too."""
    try:
        listing = _git(
            root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"
        )
    except OSError:
        return None
    commits = [
        line.split()[0]
        for line in listing.stdout.decode("ascii", errors="replace").splitlines()
        if line.endswith(" commit")
    ]
    if not commits:
        return None
    info = _git(
        root, "log", "--no-walk=unsorted", "--stdin", "--format=%H %ct %P", stdin="\n".join(commits)
    )
    parents: dict[str, list[str]] = {}
    when: dict[str, int] = {}
    for line in info.stdout.decode("ascii", errors="replace").splitlines():
        sha, at, *ps = line.split()
        parents[sha], when[sha] = ps, int(at)
    tip, *rest = revs
    excluded = _reach(parents, [r[1:] for r in rest if r.startswith("^")], set())
    reached = _reach(parents, [tip], set())
    unreadable = sorted(r for r in reached if r not in parents)
    if not unreadable:
        return None
    refs = _out(root, "for-each-ref", "--format=%(objectname)") or ""
    by_refs = _reach(parents, refs.split(), set())
    cut = {c for c in parents if c not in by_refs and c not in reached}
    children_of = {p for c in cut for p in parents[c]}
    tips = [c for c in cut if c not in children_of]
    reached = _reach(parents, tips, reached)
    wanted = [
        c
        for c in reached
        if c in parents
        and c not in seen
        and c not in excluded
        and (since is None or when[c] >= since)
    ]
    orphans = {c for c in wanted if any(p not in parents for p in parents[c])}
    return _parents_first(wanted, parents, when), orphans, unreadable


def _reach(parents: dict[str, list[str]], starts: list[str], found: set[str]) -> set[str]:
    """``found`` and every commit reachable from ``starts`` along the known parents."""
    out = set(found)
    stack = [s for s in starts if s not in out]
    while stack:
        sha = stack.pop()
        if sha in out:
            continue
        out.add(sha)
        stack.extend(p for p in parents.get(sha, ()) if p not in out)
    return out


def _parents_first(
    shas: list[str], parents: dict[str, list[str]], when: dict[str, int]
) -> list[str]:
    """``shas`` ordered parents before children, older first among the free ones."""
    import heapq

    chosen = set(shas)
    waiting = {s: sum(p in chosen for p in parents[s]) for s in shas}
    children: dict[str, list[str]] = {}
    for s in shas:
        for p in parents[s]:
            if p in chosen:
                children.setdefault(p, []).append(s)
    ready = [(when[s], s) for s in shas if waiting[s] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, s = heapq.heappop(ready)
        out.append(s)
        for c in children.get(s, ()):
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, (when[c], c))
    return out


def _first_unread(root: Path, revs: list[str], since: float | None, seen: set[str]) -> str | None:
    """The first commit in log order that was not read (the one git stopped at), if the
    history itself can still be walked."""
    args = ["rev-list", "--reverse", "--date-order"]
    if since is not None:
        args.append(_since(since))
    try:
        proc = _git(root, *args, *revs, "--")
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    for line in proc.stdout.decode("ascii", errors="replace").split():
        if line not in seen:
            return line
    return None


def _stream(
    root: Path,
    args: list[str],
    branch: str,
    mine: set[str],
    failure: list[str],
) -> Iterator[Commit]:
    """Run ``git log`` and yield its commits; the process is ended when the caller stops
    early. When git itself fails, its first error line is appended to ``failure`` (also when
    it fails after the end of its output: its exit status is always awaited)."""
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                ["git", "-C", str(root), *args],
                stdout=subprocess.PIPE,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=_env(),
            )
        except OSError:
            failure.append("git not installed")
            return
        assert proc.stdout is not None
        finished = False
        try:
            yield from _commits(_tokens(proc.stdout), branch, mine)
            finished = True
        finally:
            if not finished and proc.poll() is None:
                proc.kill()  # the caller stopped early
            proc.stdout.close()
            code = proc.wait()
        if finished and code != 0:
            err.seek(0)
            message = err.read(2000).decode("utf-8", errors="replace").strip()
            failure.append(message.splitlines()[0] if message else f"exit status {code}")
