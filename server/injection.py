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
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storage.sources.records import GENERATED_MARKER, is_generated

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


TARGETS: dict[str, Target] = {
    "cursor": Target(
        "cursor",
        ".cursor/rules/living-memory.mdc",
        "---\ndescription: Project memory for the file being edited (Living Memory)\n"
        "alwaysApply: true\n---\n",
    ),
    "copilot": Target(
        "copilot",
        ".github/instructions/living-memory.instructions.md",
        '---\napplyTo: "**"\n---\n',
    ),
    "agents": Target("agents", ".living-memory/context.md", ""),
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


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one rename; readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        with contextlib.suppress(FileNotFoundError):  # keep the file's permissions
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


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


class Injector:
    """Writes one folder's context files; thread-confined (call it from one worker)."""

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

    def write(self, markdown: str) -> WriteResult:
        """Write the context to every enabled target whose file is ours (or absent)."""
        result = WriteResult()
        for target in self.targets:
            path = self.path(target)
            data = render(target, markdown).encode("utf-8")
            try:
                existing = _read_owned(path)
                if existing is _NOT_OURS:
                    result.refused.append(path)
                    continue
                if existing == data:
                    result.unchanged.append(path)
                    continue
                atomic_write(path, data)
                result.written.append(path)
                if target.name == "agents":
                    _ensure_ignored_dir(path.parent)
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
                existing = _read_owned(path)
                if existing is None or existing is _NOT_OURS:
                    continue
                path.unlink()
                removed.append(path)
            except OSError as e:
                log.warning("could not remove %s: %s", path, e)
        return removed

    def _exclude_from_git(self) -> None:
        """List the generated files in ``.git/info/exclude`` (local; nothing is committed)."""
        if self.git_root is None or not (self.git_root / ".git").is_dir():
            return
        exclude = self.git_root / ".git" / "info" / "exclude"
        try:
            rel = self.folder.resolve().relative_to(self.git_root.resolve()).as_posix()
        except ValueError:
            return
        prefix = "" if rel == "." else rel + "/"
        wanted = [f"/{prefix}{t.path}" for t in self.targets if t.name != "agents"]
        text = exclude.read_text(encoding="utf-8", errors="replace") if exclude.exists() else ""
        have = {line.strip() for line in text.splitlines()}
        missing = [w for w in wanted if w not in have]
        if not missing:
            return
        lines = ([] if EXCLUDE_HEADER in have else [EXCLUDE_HEADER]) + missing
        sep = "" if not text or text.endswith("\n") else "\n"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(exclude, (text + sep + "\n".join(lines) + "\n").encode("utf-8"))


_NOT_OURS = object()


def _read_owned(path: Path) -> bytes | object | None:
    """The file's bytes if this tool wrote it, None if absent, ``_NOT_OURS`` otherwise."""
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return _NOT_OURS
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size > MAX_OWNED_BYTES:
        return _NOT_OURS
    data = path.read_bytes()
    return data if is_generated(data) else _NOT_OURS


def _ensure_ignored_dir(directory: Path) -> None:
    """``.living-memory/`` is the tool's own folder: keep it out of version control."""
    gi = directory / ".gitignore"
    if not gi.exists():
        atomic_write(
            gi, b"# written by Living Memory: generated files, not for version control\n*\n"
        )


def enable_claude_import(folder: Path) -> dict[str, object]:
    """Add the ``@.living-memory/context.md`` import line to ``CLAUDE.md`` (once)."""
    path = folder / CLAUDE_FILE
    text = ""
    if path.exists():
        if not path.is_file():
            raise OSError(f"{path} is not a file")
        text = path.read_text(encoding="utf-8", errors="strict")
    if any(line.strip() == CLAUDE_IMPORT for line in text.splitlines()):
        return {"file": str(path), "changed": False, "line": CLAUDE_IMPORT}
    sep = "" if not text or text.endswith("\n") else "\n"
    blank = "\n" if text.strip() else ""
    atomic_write(path, (text + sep + blank + CLAUDE_IMPORT + "\n").encode("utf-8"))
    return {"file": str(path), "changed": True, "line": CLAUDE_IMPORT}
