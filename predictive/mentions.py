"""Which project files a text talks about, and how often: a conversation's mentions of paths
and base names, and of modules (a dotted module path, or a file's unique stem written as
code), resolved against the project's own file list."""

from __future__ import annotations

import hashlib
import re
import subprocess
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from storage.sources import git_tree
from storage.text import is_tool_output

# A file-like token: optional directories, a name, an extension of letters (1–8).
FILE_TOKEN = re.compile(r"(?<![\w/.-])@?((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})\b")
MAX_FILES = 200_000
# A module written as code (`critique`, `engines.critique`) or a dotted import path.
_CODE_SPAN = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)`")
_DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,})(?![\w(])")
MIN_STEM = 4
"""A bare stem shorter than this (``api``, ``cli``) names too many things to count."""
MAX_TEXTS = 20_000  # texts whose mentions a file index keeps
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .js .jsx .ts .tsx .mjs .cjs .go .rs .java .kt .rb .php .cs .c .h .cc .cpp .hpp "
    ".swift .scala .lua .ex .exs .hs .ml .dart .vue .svelte .sh".split()
)


class FileIndex:
    """A project's files by base name, to resolve ``brave.py`` or ``engines/brave.py``.
    With the repository's ``root``, a bare name several files share is read, in a text of a
    given time, as the ones that existed then (see :attr:`added`)."""

    def __init__(self, paths: Iterable[str], root: Path | None = None) -> None:
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.by_stem: dict[str, list[str]] = defaultdict(list)
        self._added: Mapping[str, float] | None = None
        self._root = root
        self._named: dict[tuple[bytes, float | None], Counter[str]] = {}
        self._in_output: dict[tuple[bytes, float | None], Counter[str]] = {}
        for p in paths:
            pp = PurePosixPath(p)
            self.by_name[pp.name.lower()].append(p)
            if pp.suffix.lower() in SOURCE_SUFFIXES:
                self.by_stem[pp.stem.lower()].append(p)

    @property
    def added(self) -> Mapping[str, float]:
        """When each file that shares its name with another was first committed (read from
        git once, when first needed: only texts of a past time ask)."""
        if self._added is None:
            shared = {p for found in self.by_name.values() if len(found) > 1 for p in found}
            self._added = git_tree.first_added(self._root, shared) if self._root and shared else {}
        return self._added

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_name.values())

    def resolve(self, token: str, at: float | None = None) -> list[str]:
        """The project paths a token names: all of them when a bare name is ambiguous, or,
        said at time ``at``, those of them that existed then (all again when none did: the
        text may be the one that made the file)."""
        token = token.strip("@").replace("\\", "/").lstrip("./")
        name = PurePosixPath(token).name.lower()
        found = self.by_name.get(name)
        if not found:
            return []
        if "/" in token:
            tail = "/" + token.lower()
            narrowed = [p for p in found if ("/" + p.lower()).endswith(tail)]
            return narrowed or ([] if len(found) > 1 else found)
        if at is not None and len(found) > 1 and self.added:
            then = [p for p in found if self.added.get(p, at) <= at]
            return then or found
        return found

    def resolve_module(self, dotted: str, *, bare: bool) -> str | None:
        """The source file a module names: ``a.b.mod`` when one file's path ends in
        ``a/b/mod``; a ``bare`` stem only when it is one file's alone and not too short."""
        parts = dotted.lower().split(".")
        found = self.by_stem.get(parts[-1], [])
        if len(parts) == 1:
            ok = bare and len(found) == 1 and len(parts[0]) >= MIN_STEM
            return found[0] if ok else None
        tail = "/" + "/".join(parts)
        narrowed = [p for p in found if ("/" + p.lower()).rsplit(".", 1)[0].endswith(tail)]
        return narrowed[0] if len(narrowed) == 1 else None

    @classmethod
    def of_project(cls, root: Path) -> FileIndex:
        """The files git tracks under ``root`` (empty outside a repository)."""
        return cls(tracked_files(root), root=root)

    def named(
        self, texts: Iterable[str], *, in_output: bool = False, at: float | None = None
    ) -> Counter[str]:
        """:func:`count` plus :func:`count_modules` of ``texts``, each text's counted once
        and kept (a conversation read again at every turn counts its new messages only).
        ``in_output``: the files its lines of tool output name instead (``count`` only).
        ``at``: when the texts were written (see :meth:`resolve`)."""
        cache = self._in_output if in_output else self._named
        total: Counter[str] = Counter()
        for text in texts:
            digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
            key = (digest.digest(), at)
            counts = cache.get(key)
            if counts is None:
                if in_output:
                    counts = count([text], self, in_output=True, at=at)
                else:
                    counts = count([text], self, at=at) + count_modules([text], self)
                if len(cache) >= MAX_TEXTS:
                    cache.clear()
                cache[key] = counts
            total.update(counts)
        return total


_indexes_lock = threading.Lock()
_indexes: dict[str, tuple[tuple[int, int] | None, FileIndex]] = {}


def _index_stamp(root: Path) -> tuple[int, int] | None:
    """When and how big git's index of ``root`` is (it changes whenever the tracked files do);
    None when it cannot be told (the list is then read every time)."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            line = git.read_text(encoding="utf-8", errors="replace").strip()
            if not line.startswith("gitdir:"):
                return None
            git = (root / line[len("gitdir:") :].strip()).resolve()
        st = (git / "index").stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def project_index(root: Path) -> FileIndex:
    """The files git tracks in ``root``, listed again only when git's index has changed (a
    warm process meets the same project at every prompt and turn; its index keeps what each
    text names)."""
    key = str(root)
    stamp = _index_stamp(root)
    with _indexes_lock:
        hit = _indexes.get(key)
        if stamp is not None and hit is not None and hit[0] == stamp:
            return hit[1]
    index = FileIndex.of_project(root)
    with _indexes_lock:
        _indexes[key] = (stamp, index)
    return index


def tracked_files(root: str | Path) -> list[str]:
    """The files git tracks under ``root`` (empty outside a repository or without git)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    return [n for n in out.stdout.decode("utf-8", "replace").split("\0")[:MAX_FILES] if n]


def count(
    texts: Iterable[str], files: FileIndex, *, in_output: bool = False, at: float | None = None
) -> Counter[str]:
    """On how many lines of ``texts`` each project file is talked about (lines of tool
    output do not count; a line naming a file twice counts once). ``in_output``: count only
    the lines of tool output instead (a file a stack frame or a test report names). ``at``:
    when the texts were written (a bare shared name means a file that existed then)."""
    counts: Counter[str] = Counter()
    if not files.by_name:
        return counts
    for text in texts:
        for line in text.split("\n"):
            if "." not in line:
                continue
            named: set[str] = set()
            for m in FILE_TOKEN.finditer(line):
                named.update(files.resolve(m.group(1), at))
            if named and is_tool_output(line) != in_output:  # asked only when a file is named
                continue
            for path in named:
                counts[path] += 1
    return counts


MODULE_WEIGHT = 0.5
"""A module named as code says less than its file's path: it may be the thing, not the file."""


def count_modules(texts: Iterable[str], files: FileIndex) -> Counter[str]:
    """On how many lines of ``texts`` each project source file is named as a module (a dotted
    path, or a unique stem written as code), weighted by :data:`MODULE_WEIGHT`; lines of tool
    output do not count."""
    counts: Counter[str] = Counter()
    if not files.by_stem:
        return counts
    for text in texts:
        for line in text.split("\n"):
            if "`" not in line and "." not in line:
                continue
            named: set[str] = set()
            for m in _CODE_SPAN.finditer(line):
                if path := files.resolve_module(m.group(1), bare=True):
                    named.add(path)
            for m in _DOTTED.finditer(line):
                if path := files.resolve_module(m.group(1), bare=False):
                    named.add(path)
            if named and is_tool_output(line):
                continue
            for path in named:
                counts[path] += MODULE_WEIGHT  # type: ignore[assignment]
    return counts
