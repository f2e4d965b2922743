"""Chat histories of AI coding tools: one entry point, the tools' default folders, shared helpers.

:func:`read_all` runs each tool's reader (:mod:`.cursor`, :mod:`.specstory`, :mod:`.copilot`,
:mod:`.claude_code`, :mod:`.codex`) in turn; one reader failing is logged and counted, the others
go on. The helpers below are what those readers share: finding an editor's ``User`` folder per
platform, decoding files without trusting them, JSON lines, times, paths and fenced code.

Conventions every reader follows (see ``/work/shared/FORMATS.md`` for the formats):

- Nothing is ever written to the tools' files; what cannot be read is counted in a
  :class:`~storage.sources.records.SkipLog` under a short, stable reason.
- Tool calls and tool outputs become their own ``role="tool"`` messages, rendered as
  ``[tool: name] {params}`` and ``[result] output`` and clipped to :data:`TOOL_TEXT_LIMIT`
  characters, with ``metadata["kind"]`` ``"call"`` or ``"result"``; assistant text around them
  stays in ``assistant`` messages, so a consumer can drop tool noise by role.
- A conversation's ``workspace`` is compared with the project root as a path: the root itself
  or a folder inside it belongs to the project.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from storage.sources.records import MAX_FILE_BYTES, ChatMessage, CodeBlock, Conversation, SkipLog

log = logging.getLogger(__name__)

TOOLS = ("cursor", "specstory", "copilot", "claude", "codex")
"""The chat tools :func:`read_all` reads by default, in that order."""

_MODULES = {
    "cursor": "cursor",
    "specstory": "specstory",
    "copilot": "copilot",
    "claude": "claude_code",
    "codex": "codex",
    "locomo": "locomo",  # benchmark data: only when asked for by name
}

MAX_LOG_BYTES = 20 * MAX_FILE_BYTES
"""Limit for transcript logs (JSON / JSON lines), which routinely pass MAX_FILE_BYTES."""

TOOL_TEXT_LIMIT = 2000
"""Tool calls and tool outputs are clipped to this many characters."""

_FILE_KEYS = (
    "file_path",
    "filePath",
    "path",
    "notebook_path",
    "target_file",
    "targetFile",
    "relativeWorkspacePath",
    "fsPath",
    "file",
)


# ---------------------------------------------------------------- dispatcher


def read_all(
    root: Path | None,
    *,
    tools: Sequence[str] | None = None,
    paths: Mapping[str, Sequence[Path]] | Sequence[Path] | None = None,
    home: Path | None = None,
    platform: str | None = None,
    all_workspaces: bool = False,
    since: float | None = None,
    skips: SkipLog,
) -> Iterator[Conversation]:
    """Every conversation of ``root`` from each tool in ``tools`` (default :data:`TOOLS`).

    ``paths`` maps a tool name to the files or folders to read instead of its default
    locations (tools it does not name use their defaults), or is a plain list of files and
    folders: then each file, and each chat file found under a folder, goes to the tool whose
    format it has (:func:`sniff`; a named file of no known format is ``unknown format``) and
    no tool reads its defaults. An unexpected exception in one reader is logged, counted as
    ``reader failed: …`` and the next tool is read.
    """
    per_tool = _split_paths(paths, skips)
    for tool in tools or TOOLS:
        name = _MODULES.get(tool)
        if name is None:
            skips.skip(tool, str(root or ""), "unknown tool")
            continue
        where = str(root) if root is not None else tool
        try:
            module = importlib.import_module(f"storage.sources.{name}")
            yield from module.read(
                root,
                paths=per_tool(tool),
                home=home,
                platform=platform,
                all_workspaces=all_workspaces,
                since=since,
                skips=skips,
            )
        except Exception as exc:
            log.warning("chat reader %s failed on %s", tool, where, exc_info=True)
            skips.skip(tool, where, f"reader failed: {exc}")


def _split_paths(
    paths: Mapping[str, Sequence[Path]] | Sequence[Path] | None, skips: SkipLog
) -> Callable[[str], Sequence[Path] | None]:
    if paths is None:
        return lambda tool: None
    if isinstance(paths, Mapping):
        mapping = paths
        return lambda tool: mapping.get(tool)
    files: dict[str, list[Path]] = {}
    for p in map(Path, paths):
        if p.is_dir():
            for found in sorted(p.rglob("*")):
                tool = sniff(found) if found.suffix in _CHAT_SUFFIXES and found.is_file() else None
                if tool is not None:
                    files.setdefault(tool, []).append(found)
            continue
        tool = sniff(p)
        if tool is None:
            skips.skip("chats", str(p), "unknown format")
        else:
            files.setdefault(tool, []).append(p)
    return lambda tool: files.get(tool, [])


_CHAT_SUFFIXES = (".vscdb", ".json", ".jsonl", ".md")


def sniff(path: Path) -> str | None:
    """Which tool wrote a chat file, from its name and first bytes (None when unknown)."""
    try:
        with path.open("rb") as f:
            head = f.read(65536)
    except OSError:
        return None
    if head.startswith(b"SQLite format 3\x00") or path.suffix == ".vscdb":
        return "cursor"
    text = head.decode("utf-8", errors="replace")
    if path.suffix == ".md":
        marked = "SpecStory" in text[:2000] or ".specstory" in path.parts
        return "specstory" if marked or "_**User" in text else None
    first = text.split("\n", 1)[0].strip()
    try:
        obj = json.loads(first)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        if "kind" in obj and ("v" in obj or "k" in obj):
            return "copilot"
        if obj.get("type") == "session_meta" or "payload" in obj:
            return "codex"
        if "sessionId" in obj and "requests" in obj:
            return "copilot"
        if obj.get("type") in _CLAUDE_TYPES or "parentUuid" in obj or "leafUuid" in obj:
            return "claude"
        if obj.get("type") in ("message", "function_call") or "instructions" in obj:
            return "codex"
    compact = re.sub(r"\s+", "", first[:4000])
    if compact.startswith('{"kind":'):
        return "copilot"
    if '"type":"session_meta"' in compact:
        return "codex"
    if '"parentUuid"' in compact or '"leafUuid"' in compact:
        return "claude"
    if path.suffix == ".json" and '"requests"' in text:
        return "copilot"
    if path.suffix == ".json" and '"conversation"' in text and '"sample_id"' in text:
        return "locomo"
    return None


_CLAUDE_TYPES = ("user", "assistant", "summary", "system", "file-history-snapshot", "progress")


# ---------------------------------------------------------------- where tools keep things


def platform_name(platform: str | None = None) -> str:
    """``linux``, ``darwin`` or ``win32`` for a ``sys.platform`` style value (default: this OS)."""
    p = platform or sys.platform
    if p.startswith("win") or p == "cygwin":
        return "win32"
    if p == "darwin":
        return "darwin"
    return "linux"


def home_dir(home: Path | None = None) -> Path:
    """The given home folder, else the user's."""
    return Path(home) if home is not None else Path.home()


def app_data_dir(home: Path | None = None, platform: str | None = None) -> Path:
    """Where desktop apps keep per-user data: ``~/.config``, ``~/Library/Application Support``
    or ``%APPDATA%`` (``home/AppData/Roaming`` when a home is given)."""
    plat = platform_name(platform)
    base = home_dir(home)
    if plat == "darwin":
        return base / "Library" / "Application Support"
    if plat == "win32":
        env = os.environ.get("APPDATA")
        if home is None and env:
            return Path(env)
        return base / "AppData" / "Roaming"
    if home is None and os.environ.get("XDG_CONFIG_HOME"):
        return Path(os.environ["XDG_CONFIG_HOME"])
    return base / ".config"


def editor_user_dir(app: str, home: Path | None = None, platform: str | None = None) -> Path:
    """The ``User`` folder of a VS Code family editor (``Cursor``, ``Code``, …)."""
    return app_data_dir(home, platform) / app / "User"


def files_under(locations: Iterable[Path], patterns: Sequence[str]) -> list[Path]:
    """Files named directly in ``locations`` plus those matching ``patterns`` under the folders.

    Sorted and without duplicates; missing locations are ignored.
    """
    found: dict[str, Path] = {}
    for loc in locations:
        loc = Path(loc)
        if loc.is_file():
            found.setdefault(str(loc), loc)
        elif loc.is_dir():
            for pattern in patterns:
                for p in loc.glob(pattern):
                    if p.is_file():
                        found.setdefault(str(p), p)
    return [found[k] for k in sorted(found)]


# ---------------------------------------------------------------- reading files safely


def read_text(path: Path, tool: str, skips: SkipLog, *, limit: int = MAX_FILE_BYTES) -> str | None:
    """A file's text, or None after counting why not (``too large``, ``binary file``, …).

    Invalid UTF-8 is replaced (counted once as ``invalid utf-8``) and the rest is still read.
    """
    where = str(path)
    try:
        size = path.stat().st_size
        if size > limit:
            skips.skip(tool, where, "too large")
            return None
        data = path.read_bytes()
    except OSError:
        skips.skip(tool, where, "unreadable file")
        return None
    if b"\x00" in data[:8192]:
        skips.skip(tool, where, "binary file")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        skips.skip(tool, where, "invalid utf-8")
    return text.removeprefix("\ufeff")


def json_lines(text: str, tool: str, where: str, skips: SkipLog) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines text, in order.

    An unparsable last line without a final newline is ``truncated line`` (a writer was
    interrupted); other unparsable lines are ``invalid json``; non-objects ``invalid record``.
    """
    lines = text.split("\n")
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    for n, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        try:
            obj = json.loads(s)
        except ValueError:
            truncated = n == last and not text.endswith("\n")
            skips.skip(tool, f"{where}:{n + 1}", "truncated line" if truncated else "invalid json")
            continue
        if not isinstance(obj, dict):
            skips.skip(tool, f"{where}:{n + 1}", "invalid record")
            continue
        yield obj


_MISSING = object()


def parse_json(text: str | bytes, tool: str, where: str, skips: SkipLog) -> Any:
    """``json.loads`` that counts ``invalid json`` and answers None instead of raising."""
    if isinstance(text, bytes):
        raw = text
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            skips.skip(tool, where, "invalid utf-8")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        skips.skip(tool, where, "invalid json")
        return None


# ---------------------------------------------------------------- values


def to_epoch(value: Any) -> float | None:
    """Epoch seconds from epoch seconds / milliseconds / microseconds or an ISO 8601 string.

    Numbers too small to be a date after 1973 (relative timers) give None; naive ISO strings
    are read as UTC.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        try:
            return to_epoch(float(s))
        except ValueError:
            pass
        return _iso_epoch(s)
    if isinstance(value, (int, float)):
        v = float(value)
        if v != v or v in (float("inf"), float("-inf")):
            return None
        if v > 1e17:
            return v / 1e9
        if v > 1e14:
            return v / 1e6
        if v > 1e11:
            return v / 1e3
        if v > 1e8:
            return v
    return None


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _iso_epoch(s: str) -> float | None:
    s = s.replace("Z", "+00:00").replace("z", "+00:00")
    s = _FRACTION.sub(r"\1", s)
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def as_text(value: Any) -> str:
    """A string value, the ``value`` / ``text`` of a dict, or ``""``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("value", "text"):
            if isinstance(value.get(key), str):
                return value[key]
    return ""


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty list (formats put anything anywhere)."""
    return value if isinstance(value, list) else []


def clip(text: str, limit: int = TOOL_TEXT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_FILE_LIKE = re.compile(r"[\w-]\.[A-Za-z][A-Za-z0-9]{0,7}\b")
MAX_THOUGHT_LINES = 2000
"""At most this many lines of a conversation's reasoning are kept (Conversation.thoughts)."""


def file_lines(text: str) -> list[str]:
    """The lines of ``text`` (an assistant's reasoning) that name something file-like."""
    return [clip(line.strip(), 500) for line in text.split("\n") if _FILE_LIKE.search(line)]


def tool_call_text(name: str, params: Any) -> str:
    """``[tool: name] {params}`` clipped to :data:`TOOL_TEXT_LIMIT`."""
    if isinstance(params, str):
        shown = params
    elif params is None:
        shown = ""
    else:
        try:
            shown = json.dumps(params, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            shown = str(params)
    return clip(f"[tool: {name or 'unknown'}] {shown}".rstrip())


def tool_result_text(output: Any) -> str:
    """``[result] output`` clipped to :data:`TOOL_TEXT_LIMIT`; lists of text parts are joined."""
    if isinstance(output, list):
        parts = [as_text(p) for p in output]
        shown = "\n".join(p for p in parts if p)
    elif isinstance(output, str):
        shown = output
    elif output is None:
        shown = ""
    else:
        shown = json.dumps(output, ensure_ascii=False, default=str)
    return clip(f"[result] {shown}".rstrip())


def files_in_params(params: Any) -> list[str]:
    """File paths named in a tool call's parameters (``file_path``, ``path``, ``uri``, …)."""
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            return []
    out: list[str] = []
    if isinstance(params, dict):
        for key in _FILE_KEYS:
            v = params.get(key)
            if isinstance(v, str) and v.strip():
                out.append(v.strip())
        uri = params.get("uri")
        p = path_from_uri(uri) if uri is not None else None
        if p:
            out.append(p)
        for key in ("paths", "files", "file_paths"):
            v = params.get(key)
            if isinstance(v, list):
                out.extend(x for x in v if isinstance(x, str) and x.strip())
    return out


# ---------------------------------------------------------------- paths


_WIN = re.compile(r"^/?([A-Za-z]):[\\/]")


def path_from_uri(value: Any) -> str | None:
    """A file path from a ``file://`` URI, a plain path, or a ``{fsPath|path|external}`` dict."""
    if isinstance(value, dict):
        for key in ("fsPath", "path", "external", "uri"):
            v = value.get(key)
            if isinstance(v, (str, dict)) and v:
                found = path_from_uri(v)
                if found:
                    return found
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    s = value.strip()
    if "://" in s[:40]:
        parts = urlsplit(s)
        path = unquote(parts.path)
        if _WIN.match(path):
            path = path.lstrip("/")
        return path or None
    return s


def norm_path(p: str) -> str:
    """A comparable form of a path: normalized, ``/``-separated, Windows drives lower-cased."""
    m = _WIN.match(p)
    if m:
        return posixpath.normpath(p.lstrip("/").replace("\\", "/")).lower()
    return posixpath.normpath(p) if p.startswith("/") else os.path.normpath(p)


def _root_forms(root: Path) -> set[str]:
    forms = {norm_path(str(root))}
    with contextlib.suppress(OSError):
        forms.add(norm_path(str(root.resolve())))
    return forms


def _path_forms(p: str) -> set[str]:
    forms = {norm_path(p)}
    if p.startswith("/") and not _WIN.match(p):
        with contextlib.suppress(OSError, RuntimeError):
            forms.add(norm_path(str(Path(p).resolve())))
    return forms


def _inside(p: str, base: str) -> bool:
    return p == base or p.startswith(base.rstrip("/") + "/")


def workspace_matches(workspace: str, root: Path) -> bool:
    """Whether ``workspace`` is the project ``root`` or a folder inside it."""
    roots = _root_forms(root)
    return any(_inside(w, r) for w in _path_forms(workspace) for r in roots)


def relative_file(path: str, root: Path | None) -> str:
    """A referenced file as a path relative to ``root`` when inside it, else as given."""
    p = path_from_uri(path) or path
    if root is None or not (p.startswith("/") or _WIN.match(p)):
        return p
    for w in _path_forms(p):
        for r in _root_forms(root):
            if _inside(w, r) and w != r:
                return w[len(r.rstrip("/")) + 1 :]
    return p


def unique_files(paths: Iterable[str | None], root: Path | None) -> tuple[str, ...]:
    """Referenced files, relative to ``root`` where possible, without duplicates, in order."""
    seen: dict[str, None] = {}
    for p in paths:
        if p and isinstance(p, str) and p.strip():
            seen.setdefault(relative_file(p.strip(), root), None)
    return tuple(seen)


# ---------------------------------------------------------------- markdown


_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$")
_LINE_RANGE_PATH = re.compile(r"^\d+:\d+:(.+)$")


def _info(info: str) -> tuple[str | None, str | None]:
    """Language and file name from a fence info string (``py``, ``py:src/a.py``, ``1:9:a.py``)."""
    if not info:
        return None, None
    m = _LINE_RANGE_PATH.match(info)
    if m:
        return None, m.group(1)
    if ":" in info:
        lang, _, name = info.partition(":")
        return (lang or None), (name or None)
    if "/" in info or "\\" in info:
        return None, info
    return info, None


def fenced_code_blocks(text: str) -> tuple[CodeBlock, ...]:
    """The fenced (```` ``` ```` or ``~~~``) code blocks of a markdown text, in order.

    An unclosed last fence runs to the end of the text; empty blocks are dropped.
    """
    if "```" not in text and "~~~" not in text:
        return ()
    blocks: list[CodeBlock] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(1)
        lang, name = _info(m.group(2))
        body: list[str] = []
        i += 1
        while i < len(lines):
            s = lines[i].strip()
            if s.startswith(fence[0] * len(fence)) and not s.strip(fence[0]):
                break
            body.append(lines[i])
            i += 1
        i += 1
        code = "\n".join(body)
        if code.strip():
            blocks.append(CodeBlock(code=code, language=lang, filename=name))
    return tuple(blocks)


def merge_code_blocks(*groups: Iterable[CodeBlock]) -> tuple[CodeBlock, ...]:
    """Code blocks from several places without repeating the same code twice."""
    seen: set[str] = set()
    out: list[CodeBlock] = []
    for group in groups:
        for b in group:
            key = b.code.strip()
            if key and key not in seen:
                seen.add(key)
                out.append(b)
    return tuple(out)


# ---------------------------------------------------------------- conversations


def numbered(messages: Iterable[ChatMessage]) -> tuple[ChatMessage, ...]:
    """The messages with ``idx`` set to their position, from 0."""
    return tuple(replace(m, idx=i) for i, m in enumerate(messages))


def span(
    messages: Sequence[ChatMessage], *known: float | None
) -> tuple[float | None, float | None]:
    """The earliest and latest of the messages' times and the other ``known`` times."""
    times = [m.at for m in messages if m.at is not None] + [t for t in known if t is not None]
    return (min(times), max(times)) if times else (None, None)


@dataclass(frozen=True)
class Scope:
    """Which conversations a reader keeps: the project's (unless all) and recent enough."""

    tool: str
    root: Path | None
    all_workspaces: bool
    since: float | None
    skips: SkipLog

    @property
    def every_workspace(self) -> bool:
        """True when conversations of every project are wanted."""
        return self.root is None or self.all_workspaces

    def wants_workspace(self, workspace: str | None, where: str) -> bool:
        """Whether a conversation of ``workspace`` is wanted; a refusal is counted."""
        if self.every_workspace:
            return True
        assert self.root is not None
        if workspace is None:
            self.skips.skip(self.tool, where, "unknown workspace")
            return False
        if workspace_matches(workspace, self.root):
            return True
        self.skips.skip(self.tool, where, "not this workspace")
        return False

    def recent(self, last: float | None, where: str) -> bool:
        """Whether activity at ``last`` is not older than ``since`` (unknown times are kept)."""
        if self.since is None or last is None or last >= self.since:
            return True
        self.skips.skip(self.tool, where, "older than since")
        return False

    def keeps(self, conv: Conversation) -> bool:
        """Workspace and time checks for a finished conversation (a refusal is counted)."""
        where = f"{conv.origin}#{conv.external_id}"
        last = conv.ended_at if conv.ended_at is not None else conv.started_at
        return self.wants_workspace(conv.workspace, where) and self.recent(last, where)

    def file_is_stale(self, path: Path) -> bool:
        """Whether a whole file was last modified before ``since`` (counted; nothing to read)."""
        if self.since is None:
            return False
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return False
        return not self.recent(mtime, str(path))
