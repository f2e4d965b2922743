"""Memory checked against the code it cites: current, changed since, or gone.

**Recording** (:func:`record`, on ingest, on remember, and lazily for older memories): the
commit a memory was learned at (a commit's own sha; otherwise the commit ``HEAD``'s first-parent
line had at the memory's time) and what it cited there — only the candidates of
:mod:`predictive.citations` that held in that commit's tree (the file existed, the symbol was in
it or, for a memory that is not a commit, anywhere in the tree, the dependency or command was
declared). Stored in ``citations`` / ``citation_origins``.

**Checking** (:class:`Checker`, once per memory per ``HEAD`` and state of the cited files):

- a file is *gone* when it is not in the work tree and no rename after the learned-at commit
  leads to one that is (git's rename detection, one ``git log -M`` walk per ``HEAD``); a
  rename is *changed* ("moved to"); a file is *rewritten* (changed) when at least
  :data:`REWRITE_SHARE` of the lines it had then were deleted or replaced since
  (``git diff --numstat`` against the work tree, asked only when the walk's sums allow it);
- a symbol is *gone* when it is no longer in its file nor anywhere in the tracked files;
  found elsewhere it has *moved* (changed);
- a dependency or command is *gone* when no manifest declares it any more.

The memory's verdict: its subject is its symbols, dependencies and commands when it names
any, else its files. *gone* when every one of them is gone; *changed* when one of them is gone
or changed, or when at least half of its files are; *current* otherwise. No citations: no
verdict. No git, a commit git does not have, one this branch does not contain: *unknown*.

**Serving** (:class:`Staleness`): contexts ask for the verdicts of their candidates; the
answer comes from memory (persisted in ``staleness`` per ``HEAD``); what is missing or out
of date is checked on a background thread, so a file-open never waits for git.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from predictive.citations import candidates, defines, module_paths, symbol_name
from predictive.manifests import Declared, is_manifest, normalise, read_manifests
from storage import Kind, Memory, MemoryStore
from storage.citations import Citation, Origin, StoredVerdict
from storage.sources import git_tree

log = logging.getLogger(__name__)

VERSION = 1
"""Version of the recording rules: memories recorded by an older one are recorded again."""
REWRITE_SHARE = 0.5
"""A file is rewritten once this share of the lines it had then is deleted or replaced."""
CHANGED_SHARE = 0.5
"""A memory is changed once this share of the files it cites is changed or gone."""
MAX_SYMBOL_FILES = 20  # files of one memory whose text is read to place its symbols
RECORD_BATCH = 500
RECHECK_SECONDS = 2.0  # how often a served verdict's files are looked at again (their mtimes)
HEAD_SECONDS = 0.5  # how often HEAD is read again on the hot path

CURRENT, CHANGED, GONE, UNKNOWN = "current", "changed", "gone", "unknown"
_RANK = {GONE: 0, CHANGED: 1, CURRENT: 2, UNKNOWN: 3}


@dataclass(frozen=True)
class Verdict:
    """A memory's verdict and what it rests on (one line per finding, gone ones first)."""

    state: str
    notes: tuple[str, ...] = ()

    @property
    def stale(self) -> bool:
        return self.state in (CHANGED, GONE)

    def mark(self) -> str | None:
        """The line shown beside the memory, None when it holds."""
        if not self.stale:
            return None
        head = "⚠ gone" if self.state == GONE else "⚠ changed since"
        return f"{head}: {'; '.join(self.notes[:2])}" if self.notes else head

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "notes": list(self.notes)}


def _subject(m: Memory) -> str:
    if m.source == "git":
        return "this commit"
    if m.kind is Kind.DECISION:
        return "this decision"
    return "this was learned"


# ---- recording ------------------------------------------------------------------------------


class Recorder:
    """Records citations for memories of one repository (state shared across batches)."""

    def __init__(self, root: Path, head: str | None = None) -> None:
        self.root = root
        self.head = head or git_tree.head_sha(root) or git_tree.resolve(root, "HEAD")
        self._times: list[tuple[int, str]] | None = None
        self._manifest_paths: list[str] | None = None
        self._declared: dict[str, Declared] = {}

    def _learned_at(self, mems: Sequence[Memory]) -> dict[int, str | None]:
        """The commit each memory was learned at: a commit's own (when git has it), else
        the last one on HEAD's first-parent line at the memory's time (the oldest when the
        memory is older than the history)."""
        if self.head is None:
            return {m.id: None for m in mems}
        own = {m.id: m.source_id for m in mems if m.source == "git" and m.source_id}
        known = _commits_known(self.root, set(own.values()))
        out: dict[int, str | None] = {}
        for m in mems:
            sha = own.get(m.id)
            if sha is not None:
                out[m.id] = sha if sha in known else None
                continue
            if self._times is None:
                self._times = git_tree.first_parent_times(self.root, self.head)
            if not self._times:
                out[m.id] = None
                continue
            at = max(m.valid_from, m.created_at)
            i = bisect.bisect_right(self._times, (int(at), "\U0010ffff")) - 1
            out[m.id] = self._times[max(i, 0)][1]
        return out

    def _declared_at(self, commits: Iterable[str]) -> None:
        todo = [c for c in dict.fromkeys(commits) if c not in self._declared]
        if not todo:
            return
        if self._manifest_paths is None:
            self._manifest_paths = sorted(
                p for p in git_tree.tracked(self.root, self.head or "HEAD") if is_manifest(p)
            )
        texts = git_tree.blobs(self.root, [f"{c}:{p}" for c in todo for p in self._manifest_paths])
        for c in todo:
            prefix = f"{c}:"
            self._declared[c] = read_manifests(
                {k[len(prefix) :]: v for k, v in texts.items() if k.startswith(prefix)}
            )

    def origins(self, mems: Sequence[Memory]) -> list[Origin]:
        """What each memory cited in the tree of the commit it was learned at."""
        learned = self._learned_at(mems)
        wanted = {m.id: candidates(m) for m in mems}
        specs: list[str] = []
        for m in mems:
            c, sha = wanted[m.id], learned[m.id]
            if sha is None:
                continue
            specs += [f"{sha}:{p}" for p in c.files]
            specs += [f"{sha}:{p}" for mod in c.modules for p in module_paths(mod)]
        sizes = git_tree.present(self.root, specs)
        self._declared_at(
            learned[m.id]  # type: ignore[misc]
            for m in mems
            if learned[m.id] and (wanted[m.id].dependencies or wanted[m.id].commands)
        )
        found_files: dict[int, list[str]] = {}
        for m in mems:
            sha, c = learned[m.id], wanted[m.id]
            if sha is None:
                continue
            files = [p for p in c.files if f"{sha}:{p}" in sizes]
            for mod in c.modules:
                hit = next((p for p in module_paths(mod) if f"{sha}:{p}" in sizes), None)
                if hit and hit not in files:
                    files.append(hit)
            found_files[m.id] = files
        texts = git_tree.blobs(
            self.root,
            [
                f"{learned[m.id]}:{p}"
                for m in mems
                if wanted[m.id].symbols
                for p in found_files.get(m.id, [])[:MAX_SYMBOL_FILES]
            ],
        )
        bound: dict[int, list[Citation]] = {}
        loose: dict[str, dict[int, list[str]]] = {}  # commit → memory → symbols to grep
        for m in mems:
            sha = learned[m.id]
            if sha is None:
                continue
            for sym in wanted[m.id].symbols:
                name = symbol_name(sym)
                where = [
                    p
                    for p in found_files.get(m.id, [])[:MAX_SYMBOL_FILES]
                    if defines(texts.get(f"{sha}:{p}", ""), name)
                ]
                if where:
                    bound.setdefault(m.id, []).extend(Citation("symbol", sym, p) for p in where[:3])
                elif m.source != "git":  # a commit names what it touched
                    loose.setdefault(sha, {}).setdefault(m.id, []).append(sym)
        for sha, per in loose.items():
            hits = git_tree.grep_words(
                self.root, [symbol_name(s) for syms in per.values() for s in syms], sha
            )
            for mid, syms in per.items():
                bound.setdefault(mid, []).extend(
                    Citation("symbol", s) for s in syms if symbol_name(s) in hits
                )
        out: list[Origin] = []
        for m in mems:
            sha = learned[m.id]
            if sha is None:
                out.append(Origin(m.id, None, ()))
                continue
            cited = [Citation("file", p) for p in found_files.get(m.id, [])]
            cited += bound.get(m.id, [])
            declared = self._declared.get(sha)
            if declared is not None:
                cited += [
                    Citation("dependency", d)
                    for d in wanted[m.id].dependencies
                    if normalise(d) in declared.dependencies
                ]
                cited += [
                    Citation("command", c) for c in wanted[m.id].commands if declared.has_command(c)
                ]
            out.append(Origin(m.id, sha, tuple(dict.fromkeys(cited))))
        return out


def _commits_known(root: Path, shas: set[str]) -> set[str]:
    if not shas:
        return set()
    ordered = sorted(shas)
    out = git_tree.run(
        root, "cat-file", "--batch-check", stdin=("\n".join(ordered) + "\n").encode()
    )
    known: set[str] = set()
    for sha, line in zip(ordered, (out or b"").decode("utf-8", "replace").splitlines()):
        parts = line.split()
        if len(parts) == 3 and parts[1] == "commit":
            known.add(sha)
    return known


def record(
    store: MemoryStore, root: Path, ids: Sequence[int], recorder: Recorder | None = None
) -> int:
    """Record what the memories ``ids`` cite (see the module's docstring); how many were
    recorded. Never raises: a failure is logged and leaves them for a later attempt."""
    try:
        rec = recorder or Recorder(root)
        done = 0
        for start in range(0, len(ids), RECORD_BATCH):
            mems = store.get_many(list(ids[start : start + RECORD_BATCH]))
            store.citations.record(rec.origins(mems), VERSION)
            done += len(mems)
        return done
    except Exception:
        log.warning("recording what memories cite failed", exc_info=True)
        return 0


def record_pending(store: MemoryStore, root: Path, *, limit: int | None = None) -> int:
    """Record every memory not recorded yet (or by older rules); how many were."""
    rec = Recorder(root)
    done, after = 0, 0
    while limit is None or done < limit:
        ids = store.citations.unrecorded(VERSION, limit=RECORD_BATCH, after=after)
        if not ids:
            break
        n = record(store, root, ids, rec)
        if n == 0:
            break
        done += n
        after = ids[-1]
    return done


# ---- checking -------------------------------------------------------------------------------


@dataclass
class _FileState:
    state: str
    note: str | None
    now: str | None  # where the file is now (None when gone)


@dataclass
class Checked:
    verdict: Verdict
    fingerprint: str


class Checker:
    """Verdicts against one ``HEAD`` and the work tree (state read once, shared by batches)."""

    def __init__(self, root: Path, head: str) -> None:
        self.root = root
        self.head = head
        self.history = git_tree.history(root, head)
        self.dirty = git_tree.dirty(root)
        self._manifests = sorted(p for p in git_tree.tracked(root, head) if is_manifest(p))
        self._declared: Declared | None = None
        self._texts: dict[str, str | None] = {}
        self._diffs: dict[tuple[str, tuple[str, ...]], dict[str, tuple[int, int]]] = {}

    def _text(self, path: str) -> str | None:
        if path not in self._texts:
            try:
                data = (self.root / path).read_bytes()
                self._texts[path] = (
                    None if b"\0" in data[:8192] else data.decode("utf-8", "replace")
                )
            except OSError:
                self._texts[path] = None
        return self._texts[path]

    @property
    def declared(self) -> Declared:
        if self._declared is None:
            texts = {p: t for p in self._manifests if (t := self._text(p)) is not None}
            self._declared = read_manifests(texts)
        return self._declared

    def _follow(self, path: str, since: int) -> tuple[str, int, int, int, bool]:
        """Where ``path`` went after the commit at position ``since``: (path now, commits
        that changed it, lines added, lines deleted, deleted at the end)."""
        cur, after = path, since
        commits = added = deleted = 0
        removed = False
        for _ in range(64):
            moved = False
            for t in sorted(
                (t for t in self.history.touches.get(cur, ()) if t.pos < after),
                key=lambda t: -t.pos,
            ):
                commits += 1
                added += t.added
                deleted += t.deleted
                if t.status == "D":
                    removed = True
                elif t.status == "R" and t.to:
                    cur, after, moved, removed = t.to, t.pos, True, False
                    break
                else:
                    removed = False
            if not moved:
                break
        return cur, commits, added, deleted, removed

    def _file(self, path: str, since: int, subject: str, learned: str) -> _FileState:
        cur, commits, added, deleted, _ = self._follow(path, since)
        if not (self.root / cur).is_file():
            if (self.root / path).is_file():
                cur = path
            else:
                where = f"{path} moved to {cur} and was then deleted" if cur != path else None
                return _FileState(GONE, where or f"{path} no longer exists", None)
        state, notes = CURRENT, []
        if cur != path:
            state = CHANGED
            notes.append(f"{path} moved to {cur}")
        text = self._text(cur)
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0) if text else 0
        then = lines - added + deleted
        if text is not None and (
            cur in self.dirty or path in self.dirty or deleted >= REWRITE_SHARE * max(then, 1)
        ):
            key = (learned, tuple(dict.fromkeys([path, cur])))
            if key not in self._diffs:  # against HEAD's tree unless the work tree differs
                clean = cur not in self.dirty and path not in self.dirty
                self._diffs[key] = git_tree.numstat(
                    self.root, learned, list(key[1]), self.head if clean else None
                )
            diff = self._diffs[key]
            a, d = diff.get(cur, (0, 0))
            then = lines - a + d
            if then > 0 and d >= REWRITE_SHARE * then:
                state = CHANGED
                since_s = f"{commits} commit{'s' if commits != 1 else ''}" if commits else ""
                if cur in self.dirty:
                    since_s = f"{since_s}, uncommitted changes" if since_s else "uncommitted"
                notes.append(f"{cur} rewritten since {subject} ({since_s})")
        return _FileState(state, "; ".join(notes) or None, cur)

    def check(self, mems: dict[int, Memory], origins: dict[int, Origin]) -> dict[int, Checked]:
        """The verdict of each memory that cites anything."""
        out: dict[int, Checked] = {}
        pending: dict[int, list[tuple[Citation, str | None]]] = {}
        states: dict[int, list[tuple[Citation, str, str | None]]] = {}
        for mid, o in origins.items():
            if not o.citations:
                continue
            fp = self.fingerprint(o)
            m = mems.get(mid)
            pos = self.history.positions.get(o.commit) if o.commit else None
            if m is None or pos is None or not self.history.complete:
                out[mid] = Checked(Verdict(UNKNOWN), fp)
                continue
            subject = _subject(m)
            assert o.commit is not None
            files: dict[str, _FileState] = {}
            found: list[tuple[Citation, str, str | None]] = []
            for c in o.citations:
                if c.type == "file":
                    fs = files[c.value] = self._file(c.value, pos, subject, o.commit)
                    found.append((c, fs.state, fs.note))
            for c in o.citations:
                if c.type == "symbol":
                    name = symbol_name(c.value)
                    home = None
                    if c.path:
                        fs = files.get(c.path) or self._file(c.path, pos, subject, o.commit)
                        home = fs.now
                    if home is not None and defines(self._text(home) or "", name):
                        found.append((c, CURRENT, None))
                    else:
                        pending.setdefault(mid, []).append((c, home))
                elif c.type == "dependency":
                    ok = normalise(c.value) in self.declared.dependencies
                    note = None if ok else f"{c.value} is no longer a declared dependency"
                    found.append((c, CURRENT if ok else GONE, note))
                elif c.type == "command":
                    ok = self.declared.has_command(c.value)
                    shown = c.value.replace("npm ", "npm run ", 1)
                    found.append(
                        (
                            c,
                            CURRENT if ok else GONE,
                            None if ok else f"`{shown}` is no longer defined",
                        )
                    )
            states[mid] = found
            out[mid] = Checked(Verdict(UNKNOWN), fp)
        if pending:
            hits = git_tree.grep_words(
                self.root, [symbol_name(c.value) for cs in pending.values() for c, _ in cs]
            )
            for mid, cs in pending.items():
                for c, home in cs:
                    shown = c.value + ("()" if "(" not in c.value else "")
                    where = f" in {c.path}" if c.path else ""
                    if symbol_name(c.value) in hits:
                        note = f"{shown} is no longer in {home or c.path}" if c.path else None
                        states[mid].append((c, CHANGED if c.path else CURRENT, note))
                    else:
                        states[mid].append((c, GONE, f"{shown} no longer exists{where}"))
        for mid, found in states.items():
            out[mid] = Checked(_aggregate(found), out[mid].fingerprint)
        return out

    def fingerprint(self, o: Origin) -> str:
        return fingerprint(self.root, o)


def fingerprint(root: Path, o: Origin) -> str:
    """The state of what a verdict rests on in the work tree: the cited files' (and, when it
    cites dependencies or commands, the root manifests') modification times."""
    paths = [c.value for c in o.citations if c.type == "file"]
    paths += [c.path for c in o.citations if c.type == "symbol" and c.path]
    if any(c.type in ("dependency", "command") for c in o.citations):
        paths += ["pyproject.toml", "package.json", "requirements.txt", "Makefile", "Cargo.toml"]
    h = hashlib.sha1()
    for p in sorted(set(paths)):
        try:
            h.update(f"{p}:{os.stat(root / p).st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{p}:-\n".encode())
    return h.hexdigest()[:16]


def _aggregate(found: list[tuple[Citation, str, str | None]]) -> Verdict:
    subject = [(c, s, n) for c, s, n in found if c.type != "file"]
    files = [(c, s, n) for c, s, n in found if c.type == "file"]
    notes = [
        n for _, s, n in sorted(found, key=lambda f: _RANK[f[1]]) if n and s in (GONE, CHANGED)
    ]
    notes = list(dict.fromkeys(notes))
    moved_files = sum(1 for _, s, _ in files if s in (GONE, CHANGED))
    files_changed = bool(files) and moved_files >= CHANGED_SHARE * len(files)
    if subject:
        if all(s == GONE for _, s, _ in subject):
            return Verdict(GONE, tuple(notes))
        if any(s in (GONE, CHANGED) for _, s, _ in subject) or files_changed:
            return Verdict(CHANGED, tuple(notes))
        return Verdict(CURRENT)
    if files and all(s == GONE for _, s, _ in files):
        return Verdict(GONE, tuple(notes))
    if files_changed:
        return Verdict(CHANGED, tuple(notes))
    return Verdict(CURRENT)


def check(
    store: MemoryStore, root: Path, ids: Sequence[int] | None = None, *, save: bool = True
) -> dict[int, Verdict]:
    """Record what is not recorded yet among ``ids`` (every memory when None), check them
    against ``HEAD`` and the work tree, store the verdicts. Memories that cite nothing get
    none; with no repository every one is unknown. Never raises."""
    try:
        head = git_tree.head_sha(root) or git_tree.resolve(root, "HEAD")
        if ids is None:
            record_pending(store, root)
            origins = store.citations.origins()
        else:
            known = store.citations.origins(ids)
            todo = [i for i in ids if i not in known]
            if todo:
                record(store, root, todo)
            origins = store.citations.origins(ids)
        if head is None:
            return {mid: Verdict(UNKNOWN) for mid, o in origins.items() if o.citations}
        kept: dict[int, Verdict] = {}
        if ids is None:  # what was checked at this HEAD, with its files untouched, holds
            for mid, s in store.citations.verdicts(head).items():
                o = origins.get(mid)
                if o is not None and s.fingerprint == fingerprint(root, o):
                    kept[mid] = Verdict(s.verdict, s.notes)
                    del origins[mid]
        return kept | _check_origins(store, root, head, origins, save=save)
    except Exception:
        log.warning("checking memories against the code failed", exc_info=True)
        return {}


def _check_origins(
    store: MemoryStore,
    root: Path,
    head: str,
    origins: dict[int, Origin],
    *,
    save: bool,
    checker: Checker | None = None,
) -> dict[int, Verdict]:
    cited = {mid: o for mid, o in origins.items() if o.citations}
    if not cited:
        return {}
    checker = checker or Checker(root, head)
    mems = {m.id: m for m in store.get_many(list(cited), details=False)}
    checked = checker.check(mems, cited)
    if save:
        stamp = time.time()
        store.citations.save_verdicts(
            [
                StoredVerdict(mid, head, c.fingerprint, c.verdict.state, c.verdict.notes, stamp)
                for mid, c in checked.items()
            ]
        )
    return {mid: c.verdict for mid, c in checked.items()}


# ---- serving --------------------------------------------------------------------------------


@dataclass
class _Entry:
    verdict: Verdict
    fingerprint: str
    origin: Origin
    seen: float = 0.0


@dataclass
class _Work:
    ids: set[int] = field(default_factory=set)
    full: bool = False


class Staleness:
    """Verdicts for contexts: answered from memory, refreshed off the caller's thread.

    ``epoch`` moves whenever a served verdict may have changed (contexts cached on it are
    then assembled again)."""

    def __init__(self, store: MemoryStore, root: str | Path | None, *, enabled: bool = True):
        self.store = store
        self.root = Path(root) if root else None
        self.enabled = enabled and self.root is not None and _wanted()
        self.epoch = 0
        self._head: str | None = None
        self._head_read = 0.0
        self._head_seen: str | None = None
        self._entries: dict[int, _Entry] = {}
        self._uncited: set[int] = set()
        self._lock = threading.Lock()
        self._work = _Work()
        self._running: Future[None] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._checker: Checker | None = None

    def head(self, *, fresh: bool = False) -> str | None:
        """HEAD as last read (read again at most every :data:`HEAD_SECONDS`, or now)."""
        now = time.monotonic()
        if self.root is not None and (fresh or now - self._head_read >= HEAD_SECONDS):
            self._head_read = now
            self._head_seen = git_tree.head_sha(self.root)
        return self._head_seen

    def lookup(self, ids: Iterable[int], *, wait: bool = False) -> dict[int, Verdict]:
        """The verdicts known for ``ids`` (none for memories that cite nothing). What is
        missing or out of date is checked in the background, or now with ``wait``."""
        if not self.enabled:
            return {}
        try:
            return self._lookup(list(ids), wait)
        except Exception:  # a verdict is an annotation: its failure never costs the context
            log.warning("looking up staleness verdicts failed", exc_info=True)
            return {}

    def _lookup(self, ids: list[int], wait: bool) -> dict[int, Verdict]:
        head = self.head(fresh=wait)
        if head is None:
            return {}
        if head != self._head:
            if wait:  # switch to that HEAD's verdicts; what they lack is checked below
                self._refresh(_Work(), head)
            else:
                self._schedule(_Work(full=True))
        now = time.monotonic()
        out: dict[int, Verdict] = {}
        todo: set[int] = set()
        with self._lock:
            entries, uncited = self._entries, self._uncited
        for mid in ids:
            e = entries.get(mid)
            if e is None:
                if mid not in uncited:
                    todo.add(mid)
                continue
            if now - e.seen >= RECHECK_SECONDS:
                e.seen = now
                assert self.root is not None
                if fingerprint(self.root, e.origin) != e.fingerprint:
                    todo.add(mid)
            out[mid] = e.verdict
        if todo:
            if wait:
                self._refresh(_Work(todo), head)
                with self._lock:
                    out.update({i: self._entries[i].verdict for i in todo if i in self._entries})
            else:
                self._schedule(_Work(todo))
        return out

    def refresh(self, *, wait: bool = True) -> None:
        """Check every memory against the current HEAD (now, or in the background)."""
        if not self.enabled:
            return
        head = self.head()
        if head is None:
            return
        if wait:
            self._refresh(_Work(full=True), head)
        else:
            self._schedule(_Work(full=True))

    def _schedule(self, work: _Work) -> None:
        with self._lock:
            self._work.ids |= work.ids
            self._work.full |= work.full
            if self._running is not None and not self._running.done():
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lm-stale")
            self._running = self._pool.submit(self._drain)

    def _drain(self) -> None:
        while True:
            with self._lock:
                work, self._work = self._work, _Work()
            if not work.ids and not work.full:
                return
            head = self.head() if self.root is not None else None
            if head is None:
                return
            try:
                self._refresh(work, head)
            except Exception:
                log.warning("refreshing staleness verdicts failed", exc_info=True)
                return

    def _refresh(self, work: _Work, head: str) -> None:
        assert self.root is not None
        store, root = self.store, self.root
        head = self.head(fresh=True) or head  # checked against the HEAD of now
        if head != self._head:
            # another HEAD: what was stored for it holds (while its files are unchanged), and
            # so does a verdict of the last HEAD that cites nothing the move changed
            stored = store.citations.verdicts(head)
            origins = store.citations.origins(list(stored)) if stored else {}
            entries = {
                mid: _Entry(Verdict(s.verdict, s.notes), s.fingerprint, origins[mid])
                for mid, s in stored.items()
                if mid in origins
            }
            moved = (
                git_tree.changed_between(root, self._head, head)
                if self._head is not None and self._entries
                else None
            )
            if moved is not None:
                carried = {
                    mid: e
                    for mid, e in self._entries.items()
                    if mid not in entries
                    and e.verdict.state == CURRENT  # a stale one may point at a moved path
                    and not _touched(e.origin, moved)
                }
                entries.update(carried)
                stamp = time.time()
                store.citations.save_verdicts(
                    [
                        StoredVerdict(
                            mid, head, e.fingerprint, e.verdict.state, e.verdict.notes, stamp
                        )
                        for mid, e in carried.items()
                    ]
                )
            with self._lock:
                self._entries, self._head, self._uncited = entries, head, set()
                self._checker = None
                self.epoch += 1
        if work.full:
            record_pending(store, root)
            origins = store.citations.origins()
            todo = {
                mid: o
                for mid, o in origins.items()
                if mid not in self._entries
                or fingerprint(root, o) != self._entries[mid].fingerprint
            }
            with self._lock:
                self._uncited |= {i for i in work.ids if i not in origins}
        else:
            known = store.citations.origins(list(work.ids))
            missing = [i for i in work.ids if i not in known]
            if missing:
                record(store, root, missing)
                known = store.citations.origins(list(work.ids))
            todo = {mid: o for mid, o in known.items() if o.citations}
            with self._lock:
                self._uncited |= {mid for mid, o in known.items() if not o.citations}
        if not todo:
            return
        if (
            self._checker is None
            or self._checker.head != head
            or not self._checker.history.complete
        ):
            self._checker = Checker(root, head)
        else:
            self._checker.dirty = git_tree.dirty(root)
            self._checker._texts.clear()
            self._checker._diffs.clear()
            self._checker._declared = None
        verdicts = _check_origins(store, root, head, todo, save=True, checker=self._checker)
        changed = False
        with self._lock:
            for mid, v in verdicts.items():
                old = self._entries.get(mid)
                if old is None or old.verdict != v:
                    changed = True
                self._entries[mid] = _Entry(v, fingerprint(root, todo[mid]), todo[mid])
            if changed:
                self.epoch += 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _touched(o: Origin, moved: set[str]) -> bool:
    """Whether a commit range that changed ``moved`` may change ``o``'s verdict."""
    if not moved:
        return False
    for c in o.citations:
        if c.type == "file" and c.value in moved:
            return True
        if c.type == "symbol" and (not c.path or c.path in moved):
            return True
        if c.type in ("dependency", "command") and any(is_manifest(p) for p in moved):
            return True
    return False


def _wanted() -> bool:
    """Off when ``LIVING_MEMORY_STALENESS`` is ``0``/``off``/``false``."""
    return os.environ.get("LIVING_MEMORY_STALENESS", "").strip().lower() not in (
        "0",
        "off",
        "false",
        "no",
    )


def latest(store: MemoryStore, ids: Sequence[int]) -> dict[int, Verdict]:
    """The last verdict stored for each of ``ids`` (whatever HEAD it was made at): for
    answers that have no project root at hand (search, recall)."""
    try:
        return {mid: Verdict(s.verdict, s.notes) for mid, s in store.citations.latest(ids).items()}
    except Exception:
        log.warning("reading staleness verdicts failed", exc_info=True)
        return {}
