"""Context injection: the assembled context, written where AI tools read it.

Targets (per workspace folder, each can be switched off with ``livingMemory.injectionTargets``):

- ``cursor``  → ``.cursor/rules/living-memory.mdc`` (front matter ``alwaysApply: true``)
- ``copilot`` → ``.github/instructions/living-memory.instructions.md`` (``applyTo: "**"``)
- ``agents``  → ``.living-memory/context.md`` (Claude Code imports it from ``CLAUDE.md`` once
  the user runs ``livingMemory.enableClaudeImport``; other agents can be pointed at it)

Only files the tool owns are written: each carries :data:`GENERATED_MARKER`, and a file at one
of these paths without it is the user's and is never overwritten. Writes are atomic (temporary
file + rename) and skipped when the content is already current. Readers of rule files (the
ingestion of issue 6, the server itself) must skip anything that carries the marker, so the
tool never reads its own output back as input.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storage.sources.records import GENERATED_MARKER, is_generated

__all__ = [
    "GENERATED_MARKER",
    "INJECTED_PATHS",
    "TARGETS",
    "Injector",
    "Prepared",
    "UnsafePath",
    "WriteResult",
    "atomic_write",
    "enable_claude_import",
    "is_generated",
    "is_injected_path",
    "owns",
    "render",
    "safe_read",
]

log = logging.getLogger(__name__)

MARKER_LINE = (
    f"{GENERATED_MARKER} — written by Living Memory for the file being edited; "
    "edits here are overwritten. Turn it off with the livingMemory.injectionTargets setting. -->"
)
CLAUDE_FILE = "CLAUDE.md"
CLAUDE_IMPORT = "@.living-memory/context.md"
MAX_OWNED_BYTES = 2_000_000
EXCLUDE_HEADER = (
    "# living-memory: generated context files (setting livingMemory.gitExcludeInjected)"
)


@dataclass(frozen=True)
class Target:
    name: str
    path: str  # relative to the workspace folder, POSIX
    front_matter: str
    tool: str  # the AI tool that reads it (what it loads itself is left out of its file)


TARGETS: dict[str, Target] = {
    "cursor": Target(
        "cursor",
        ".cursor/rules/living-memory.mdc",
        "---\ndescription: Project memory for the file being edited (Living Memory)\n"
        "alwaysApply: true\n---\n",
        "cursor",
    ),
    "copilot": Target(
        "copilot",
        ".github/instructions/living-memory.instructions.md",
        '---\napplyTo: "**"\n---\n',
        "copilot",
    ),
    "agents": Target("agents", ".living-memory/context.md", "", "claude"),
}
INJECTED_PATHS: tuple[str, ...] = tuple(t.path for t in TARGETS.values())


def is_injected_path(folder: Path, path: Path) -> bool:
    """Whether ``path`` is one of the injection targets of ``folder``."""
    try:
        rel = path.resolve().relative_to(folder.resolve()).as_posix()
    except (ValueError, OSError):
        return False
    return rel in INJECTED_PATHS


def render(target: Target, markdown: str) -> str:
    body = markdown if markdown.endswith("\n") else markdown + "\n"
    return f"{target.front_matter}{MARKER_LINE}\n\n{body}"


class UnsafePath(OSError):
    """A folder on the way to a file is a symlink (or not a folder): nothing is written."""


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open_dir(root: Path, parts: Sequence[str], *, create: bool) -> int:
    """A descriptor of ``root/parts…``, opened one component at a time without following a
    symlink, so every write lands inside ``root`` (``create`` makes missing folders)."""
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in parts:
            if part in ("", ".", ".."):
                raise UnsafePath(f"{part!r} in a path under {root}")
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:  # ELOOP: a symlink; ENOTDIR: a file in the way
                raise UnsafePath(
                    f"{root.joinpath(*parts)}: {part} is a symlink or not a folder"
                ) from e
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _split(root: Path, path: Path) -> tuple[list[str], str]:
    """``path`` relative to ``root`` as folder components and a file name."""
    rel = path.relative_to(root).parts
    if not rel:
        raise UnsafePath(f"{path} is the folder itself")
    return list(rel[:-1]), rel[-1]


def safe_read(root: Path, path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file under ``root`` (None if absent), reached without following a
    symlink anywhere below ``root``; a symlink, a non-file or a file over ``limit`` bytes is
    :class:`UnsafePath`."""
    parts, name = _split(root, path)
    try:
        dfd = _open_dir(root, parts, create=False)
    except FileNotFoundError:
        return None
    try:
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise UnsafePath(f"{path} is a symlink") from e
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UnsafePath(f"{path} is not a regular file")
            if st.st_size > limit:
                raise UnsafePath(f"{path} is larger than {limit} bytes")
            return f.read(limit + 1)
    finally:
        os.close(dfd)


def atomic_write(path: Path, data: bytes, *, root: Path | None = None) -> None:
    """Replace ``path`` with ``data`` in one rename; readers never see half a file.

    Every folder from ``root`` (default: the file's own folder) down to the file is opened
    without following symlinks, and the temporary file is created new (``O_EXCL |
    O_NOFOLLOW``, a random name), so a planted symlink can never redirect the write."""
    root = root if root is not None else path.parent
    parts, name = _split(root, path)
    dfd = _open_dir(root, parts, create=True)
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    try:
        mode = 0o644
        with contextlib.suppress(FileNotFoundError):  # keep the file's permissions
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
                raise UnsafePath(f"{path} is a symlink or not a regular file")
            mode = stat.S_IMODE(st.st_mode)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)


@dataclass
class WriteResult:
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    refused: list[Path] = field(default_factory=list)  # a user's file is in the way
    failed: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def current(self) -> list[Path]:
        """Files that now hold the context (freshly written or already up to date)."""
        return sorted(self.written + self.unchanged)


@dataclass
class Prepared:
    """A context rendered for the files it is to be written to, before any is written."""

    files: list[tuple[Target, bytes]] = field(default_factory=list)  # ours, or absent
    refused: list[Path] = field(default_factory=list)  # a user's file is in the way
    failed: list[tuple[Path, str]] = field(default_factory=list)  # could not be read


class Injector:
    """Writes one folder's context files: :meth:`prepare` on one thread (it only reads),
    :meth:`write` and :meth:`remove` on another, one call at a time."""

    def __init__(
        self,
        folder: Path,
        targets: Iterable[str],
        *,
        git_root: Path | None = None,
        git_exclude: bool = True,
    ) -> None:
        self.folder = folder
        self.targets = [TARGETS[t] for t in dict.fromkeys(targets) if t in TARGETS]
        self.git_root = git_root
        self.git_exclude = git_exclude
        self._excluded = False
        self.warned: set[Path] = set()  # refused paths already reported

    def path(self, target: Target) -> Path:
        return self.folder / target.path

    def prepare(self, markdown: str | Callable[[str], str]) -> Prepared:
        """The context rendered for every enabled target, and which of their files are
        someone else's (read, nothing written); ``markdown`` may be a function of the
        target's tool (what that tool loads by itself left out)."""
        prepared = Prepared()
        for target in self.targets:
            path = self.path(target)
            text = markdown(target.tool) if callable(markdown) else markdown
            data = render(target, text).encode("utf-8")
            try:
                if _read_owned(self.folder, target) is _NOT_OURS:
                    prepared.refused.append(path)
                    continue
            except UnsafePath as e:
                log.warning("not writing %s: %s", path, e)
                prepared.refused.append(path)
                continue
            except OSError as e:
                log.warning("could not read %s: %s", path, e)
                prepared.failed.append((path, str(e)))
                continue
            prepared.files.append((target, data))
        return prepared

    def write(self, context: str | Callable[[str], str] | Prepared) -> WriteResult:
        """Write the context (markdown, or what :meth:`prepare` made of it) to every enabled
        target whose file is ours (or absent); a file that already holds it is left alone."""
        prepared = context if isinstance(context, Prepared) else self.prepare(context)
        result = WriteResult(refused=list(prepared.refused), failed=list(prepared.failed))
        for target, data in prepared.files:
            if target not in self.targets:  # prepared before the target was turned off
                continue
            path = self.path(target)
            try:
                existing = _read_owned(self.folder, target)
                if existing is _NOT_OURS:  # the user put a file there since
                    result.refused.append(path)
                    continue
                if existing == data:
                    result.unchanged.append(path)
                    continue
                atomic_write(path, data, root=self.folder)
                result.written.append(path)
                if target.name == "agents":
                    _ensure_ignored_dir(self.folder, path.parent)
            except UnsafePath as e:
                log.warning("not writing %s: %s", path, e)
                result.refused.append(path)
            except OSError as e:
                log.warning("could not write %s: %s", path, e)
                result.failed.append((path, str(e)))
        if result.written and self.git_exclude and not self._excluded:
            self._excluded = True
            try:
                self._exclude_from_git()
            except OSError as e:
                log.info("could not add the context files to .git/info/exclude: %s", e)
        return result

    def remove(self, targets: Sequence[str]) -> list[Path]:
        """Delete the files of ``targets`` that this tool wrote (a user's file stays)."""
        removed = []
        for name in targets:
            target = TARGETS.get(name)
            if target is None:
                continue
            path = self.path(target)
            try:
                existing = _read_owned(self.folder, target)
                if existing is None or existing is _NOT_OURS:
                    continue
                parts, file_name = _split(self.folder, path)
                dfd = _open_dir(self.folder, parts, create=False)
                try:
                    os.unlink(file_name, dir_fd=dfd)
                finally:
                    os.close(dfd)
                removed.append(path)
            except OSError as e:
                log.warning("could not remove %s: %s", path, e)
        return removed

    def _exclude_from_git(self) -> None:
        """List the generated files in ``.git/info/exclude`` (local; nothing is committed).

        A symlinked ``.git``, ``info`` or ``exclude`` is left alone: its content is never read
        into, or written out of, the repository."""
        if self.git_root is None or not (self.git_root / ".git").is_dir():
            return
        exclude = self.git_root / ".git" / "info" / "exclude"
        try:
            rel = self.folder.resolve().relative_to(self.git_root.resolve()).as_posix()
        except ValueError:
            return
        prefix = "" if rel == "." else rel + "/"
        wanted = [f"/{prefix}{t.path}" for t in self.targets if t.name != "agents"]
        raw = safe_read(self.git_root, exclude, MAX_OWNED_BYTES)
        text = (raw or b"").decode("utf-8", errors="replace")
        have = {line.strip() for line in text.splitlines()}
        missing = [w for w in wanted if w not in have]
        if not missing:
            return
        lines = ([] if EXCLUDE_HEADER in have else [EXCLUDE_HEADER]) + missing
        sep = "" if not text or text.endswith("\n") else "\n"
        atomic_write(
            exclude, (text + sep + "\n".join(lines) + "\n").encode("utf-8"), root=self.git_root
        )


_NOT_OURS = object()


def owns(target: Target, data: bytes) -> bool:
    """Whether ``data`` begins with the header this tool writes for ``target`` (a file that
    merely quotes the marker somewhere is the user's)."""
    return data.startswith((target.front_matter + GENERATED_MARKER).encode("utf-8"))


def _read_owned(folder: Path, target: Target) -> bytes | object | None:
    """The file's bytes if this tool wrote it, None if absent, ``_NOT_OURS`` otherwise (also
    for a symlink, a non-file, a file too large, or a folder on the way that is a symlink)."""
    try:
        data = safe_read(folder, folder / target.path, MAX_OWNED_BYTES)
    except UnsafePath:
        return _NOT_OURS
    if data is None:
        return None
    return data if owns(target, data) else _NOT_OURS


_IGNORE_ALL = b"# written by Living Memory: generated files, not for version control\n*\n"
_IGNORE = _IGNORE_ALL + b"# but the team's shared memory is\n!shared/\n!shared/**\n"


def _ensure_ignored_dir(folder: Path, directory: Path) -> None:
    """``.living-memory/`` is the tool's own folder: keep it out of version control, all but
    the team's shared memory (``shared/``). The file an earlier version wrote, which ignored
    everything, is brought up to date; one the user changed is left alone."""
    gi = directory / ".gitignore"
    try:
        found = safe_read(folder, gi, MAX_OWNED_BYTES)
    except UnsafePath:
        return
    if found is not None and found != _IGNORE_ALL:
        return
    atomic_write(gi, _IGNORE, root=folder)


def enable_claude_import(folder: Path) -> dict[str, object]:
    """Add the ``@.living-memory/context.md`` import line to ``CLAUDE.md`` (once)."""
    path = folder / CLAUDE_FILE
    raw = safe_read(folder, path, MAX_OWNED_BYTES)  # a symlinked CLAUDE.md is refused
    text = "" if raw is None else raw.decode("utf-8", errors="strict")
    if any(line.strip() == CLAUDE_IMPORT for line in text.splitlines()):
        return {"file": str(path), "changed": False, "line": CLAUDE_IMPORT}
    sep = "" if not text or text.endswith("\n") else "\n"
    blank = "\n" if text.strip() else ""
    atomic_write(path, (text + sep + blank + CLAUDE_IMPORT + "\n").encode("utf-8"), root=folder)
    return {"file": str(path), "changed": True, "line": CLAUDE_IMPORT}
