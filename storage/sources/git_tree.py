"""Reading a repository's trees, blobs and file history with a few batched ``git`` processes.

Every function answers an empty value (or None) when ``root`` is not a repository, git is
missing, or a revision is unknown: callers treat that as "cannot tell", never as an error.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_NUMSTAT = re.compile(r"^(\d+|-)\t(\d+|-)\t(.*)$", re.S)
MAX_BLOB_BYTES = 1_000_000


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"})
    return env


def run(root: Path, *args: str, stdin: bytes | None = None, timeout: float = 120) -> bytes | None:
    """The stdout of ``git -C root args`` when it succeeds, else None."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args],
            input=stdin,
            capture_output=True,
            env=_env(),
            check=False,
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        log.debug("git %s failed: %s", args[0], proc.stderr[-300:])
        return None
    return proc.stdout


def first_added(root: Path, paths: set[str]) -> dict[str, float]:
    """When each of ``paths`` was first committed under its path (commit time; a rename makes
    a new path); the ones no commit added are left out."""
    out = run(
        root, "log", "--no-renames", "--diff-filter=A", "--name-only", "-z", "--format=%x01%ct"
    )
    added: dict[str, float] = {}
    when = 0.0
    for field_ in (out or b"").split(b"\0"):
        field_ = field_.lstrip(b"\n")
        if field_.startswith(b"\x01"):
            when = float(field_[1:] or 0)
        elif field_ and (path := field_.decode("utf-8", "replace")) in paths:
            added[path] = when  # newest first: the last one seen is the first add
    return added


def git_dir(root: Path) -> Path | None:
    """The repository's git directory (a worktree's own one), read from the file system."""
    dot = root / ".git"
    try:
        if dot.is_dir():
            return dot
        if dot.is_file():
            line = dot.read_text(encoding="utf-8", errors="replace").strip()
            if line.startswith("gitdir:"):
                return (root / line[len("gitdir:") :].strip()).resolve()
    except OSError:
        return None
    return None


def head_sha(root: Path) -> str | None:
    """The commit ``HEAD`` points at, read from files (no process): a detached sha, a loose
    ref or a packed one; None when it cannot be read (no repository, unborn branch)."""
    gd = git_dir(root)
    if gd is None:
        return None
    try:
        head = (gd / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if _SHA.match(head):
        return head
    if not head.startswith("ref: "):
        return None
    ref = head[5:].strip()
    common = gd
    try:
        cf = gd / "commondir"
        if cf.is_file():
            common = (gd / cf.read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return None
    for base in dict.fromkeys((gd, common)):
        try:
            sha = (base / ref).read_text(encoding="utf-8", errors="replace").strip()
            if _SHA.match(sha):
                return sha
        except OSError:
            pass
    try:
        for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref and _SHA.match(parts[0]):
                return parts[0]
    except OSError:
        pass
    return None


def resolve(root: Path, rev: str) -> str | None:
    """The full sha of commit ``rev``, None when git does not have it."""
    out = run(root, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
    sha = out.decode("ascii", "replace").strip() if out else ""
    return sha if _SHA.match(sha) else None


def ancestry(root: Path, head: str) -> list[str]:
    """Commits reachable from ``head``, newest first (topological order)."""
    out = run(root, "rev-list", "--topo-order", head, "--")
    return out.decode("ascii", "replace").split() if out else []


def first_parent_times(root: Path, head: str) -> list[tuple[int, str]]:
    """(commit time, sha) along ``head``'s first-parent line, oldest first."""
    out = run(root, "log", "--first-parent", "--format=%ct %H", head, "--")
    rows: list[tuple[int, str]] = []
    for line in (out or b"").decode("ascii", "replace").splitlines():
        t, _, sha = line.partition(" ")
        if t.isdigit() and _SHA.match(sha):
            rows.append((int(t), sha))
    rows.reverse()
    return rows


def tracked(root: Path, rev: str) -> set[str]:
    """Every file path in ``rev``'s tree."""
    out = run(root, "ls-tree", "-r", "-z", "--name-only", rev)
    return {p.decode("utf-8", "replace") for p in (out or b"").split(b"\0") if p}


def present(root: Path, specs: Iterable[str]) -> dict[str, int]:
    """Byte size of each existing object ``rev:path`` among ``specs`` (absent ones left out)."""
    wanted = [s for s in dict.fromkeys(specs) if "\n" not in s]
    if not wanted:
        return {}
    out = run(root, "cat-file", "--batch-check", stdin=("\n".join(wanted) + "\n").encode())
    found: dict[str, int] = {}
    for spec, line in zip(wanted, (out or b"").decode("utf-8", "replace").splitlines()):
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
            found[spec] = int(parts[2])
    return found


def blobs(root: Path, specs: Iterable[str]) -> dict[str, str]:
    """The text of each existing blob ``rev:path`` among ``specs`` (binary and huge ones
    left out), read by one ``cat-file --batch`` process."""
    sizes = present(root, specs)
    wanted = [s for s, n in sizes.items() if n <= MAX_BLOB_BYTES]
    if not wanted:
        return {}
    out = run(root, "cat-file", "--batch", stdin=("\n".join(wanted) + "\n").encode())
    if out is None:
        return {}
    texts: dict[str, str] = {}
    at = 0
    for spec in wanted:
        nl = out.find(b"\n", at)
        if nl < 0:
            break
        header = out[at:nl].split()
        if len(header) != 3 or not header[2].isdigit():
            at = nl + 1
            continue
        size = int(header[2])
        data = out[nl + 1 : nl + 1 + size]
        at = nl + 1 + size + 1
        if b"\0" not in data[:8192]:
            texts[spec] = data.decode("utf-8", "replace")
    return texts


def grep_words(root: Path, words: Sequence[str], rev: str | None = None) -> set[str]:
    """Which of ``words`` occur as whole words in the tracked files (of ``rev``, or of the
    work tree when None): a ``git grep`` process per few hundred words (one alternation
    when git has PCRE, many times faster than as many fixed strings)."""
    words = [w for w in dict.fromkeys(words) if w and "\n" not in w]
    found: set[str] = set()
    for start in range(0, len(words), GREP_CHUNK):
        found |= _grep_chunk(root, words[start : start + GREP_CHUNK], rev)
    return found


GREP_CHUNK = 400
_PCRE: dict[str, bool] = {}


def _grep_chunk(root: Path, words: list[str], rev: str | None) -> set[str]:
    tail = [rev, "--"] if rev else ["--"]
    plain = all(re.fullmatch(r"\w+", w) for w in words)
    attempts = []
    if plain and _PCRE.get("ok", True):
        attempts.append(["-P", "-e", "(?:" + "|".join(words) + ")"])
    attempts.append(["-F", *[x for w in words for x in ("-e", w)]])
    for pattern in attempts:
        args = ["grep", "-w", "-o", "-h", "-I", "--no-color", *pattern, *tail]
        try:
            proc = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, env=_env(), timeout=300
            )
        except (OSError, subprocess.SubprocessError):
            return set()
        if proc.returncode in (0, 1):  # 1: nothing found
            wanted = set(words)
            return {w for w in proc.stdout.decode("utf-8", "replace").splitlines() if w in wanted}
        if pattern[0] == "-P":
            _PCRE["ok"] = False  # git built without PCRE: fixed strings from now on
    return set()


def numstat(
    root: Path, base: str, paths: Sequence[str], target: str | None = None
) -> dict[str, tuple[int, int]]:
    """(added, deleted) lines per file between ``base`` and ``target`` (the work tree when
    None), renames among ``paths`` detected (keyed by the new path); binary files left out."""
    if not paths:
        return {}
    revs = [base, target] if target else [base]
    out = run(root, "diff", "-M", "--numstat", "-z", *revs, "--", *paths)
    if out is None:
        return {}
    toks = out.split(b"\0")
    found: dict[str, tuple[int, int]] = {}
    i = 0
    while i < len(toks):
        m = _NUMSTAT.match(toks[i].decode("utf-8", "replace"))
        i += 1
        if not m:
            continue
        path = m.group(3)
        if not path and i + 1 < len(toks):  # a rename: old and new path follow
            path = toks[i + 1].decode("utf-8", "replace")
            i += 2
        if m.group(1) != "-":
            found[path] = (int(m.group(1)), int(m.group(2)))
    return found


def changed_between(root: Path, a: str, b: str) -> set[str] | None:
    """Every path added, changed, deleted or renamed (both names) between two commits; None
    when git cannot tell."""
    out = run(root, "diff", "-M", "--name-status", "-z", a, b, "--")
    if out is None:
        return None
    toks = [t.decode("utf-8", "replace") for t in out.split(b"\0") if t]
    return {t for t in toks if not re.fullmatch(r"[ACDMRTUXB]\d*", t)}


def dirty(root: Path) -> set[str]:
    """Tracked paths whose work-tree text differs from ``HEAD`` (or that are gone)."""
    out = run(root, "diff", "--name-only", "-z", "HEAD", "--")
    return {p.decode("utf-8", "replace") for p in (out or b"").split(b"\0") if p}


@dataclass
class Touch:
    """One commit's change to one path: its position in the ancestry (0 = newest)."""

    pos: int
    status: str  # A M D R (renamed away: ``to`` is the new path) or N (renamed here)
    added: int = 0
    deleted: int = 0
    to: str | None = None


@dataclass
class History:
    """Every change to every path reachable from one head, from one ``git log`` walk."""

    head: str
    complete: bool = False  # False when git could not be read (nothing can be told)
    positions: dict[str, int] = field(default_factory=dict)
    touches: dict[str, list[Touch]] = field(default_factory=dict)  # newest first
    shas: list[str] = field(default_factory=list)


def history(root: Path, head: str) -> History:
    """The ancestry of ``head`` and each commit's changes (renames detected, merges by what
    their other parents brought: those commits are walked themselves)."""
    hist = History(head)
    hist.shas = ancestry(root, head)
    hist.positions = {s: i for i, s in enumerate(hist.shas)}
    out = run(root, "log", "-M", "--raw", "--numstat", "-z", "--format=%x1e%H", head, "--")
    if out is None or not hist.shas:
        return hist
    hist.complete = True
    toks = out.split(b"\0")
    pos = -1
    raw: dict[str, Touch] = {}
    i = 0
    while i < len(toks):
        tok = toks[i].decode("utf-8", "replace").lstrip("\n")
        i += 1
        if tok.startswith("\x1e"):
            pos = hist.positions.get(tok[1:].strip(), -1)
            raw = {}
            continue
        if pos < 0 or not tok:
            continue
        if tok.startswith(":"):
            status = tok.split()[-1][:1]
            if status in ("R", "C") and i + 1 < len(toks):
                old = toks[i].decode("utf-8", "replace")
                new = toks[i + 1].decode("utf-8", "replace")
                i += 2
                if status == "R":
                    t = Touch(pos, "R", to=new)
                    hist.touches.setdefault(old, []).append(t)
                    n = Touch(pos, "N")
                    hist.touches.setdefault(new, []).append(n)
                    raw[new] = n
                else:
                    n = Touch(pos, "A")
                    hist.touches.setdefault(new, []).append(n)
                    raw[new] = n
            elif i < len(toks):
                path = toks[i].decode("utf-8", "replace")
                i += 1
                t = Touch(pos, status)
                hist.touches.setdefault(path, []).append(t)
                raw[path] = t
            continue
        m = _NUMSTAT.match(tok)
        if m:
            path = m.group(3)
            if not path and i + 1 < len(toks):
                path = toks[i + 1].decode("utf-8", "replace")
                i += 2
            touched = raw.get(path)
            if touched is not None and m.group(1) != "-":
                touched.added, touched.deleted = int(m.group(1)), int(m.group(2))
    for touches in hist.touches.values():
        touches.sort(key=lambda t: t.pos)
    return hist
