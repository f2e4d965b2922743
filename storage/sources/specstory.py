"""SpecStory exports: ``<project>/.specstory/history/*.md`` (FORMATS.md).

A file is one conversation: ``# Title (YYYY-MM-DD HH:MM:SS)`` gives the title and start (a
time without ``Z`` or offset is local time, as SpecStory writes it; the file name's
``YYYY-MM-DD_HH-MM`` stamp is the fallback), then turns headed ``_**User**_`` and
``_**Assistant**_`` (also ``_**Agent (model …)**_`` and ``_**User (time)**_`` from newer
versions) separated by ``---``. Headers inside code fences are text.

``<details>`` and ``<tool-use>`` blocks are tool calls: each becomes a ``role="tool"`` message
``[tool: <its summary>]`` (its body is dropped); "Thought Process" blocks and ``<think>`` are
not messages: only their lines that name a file-like token are kept, as the conversation's
``thoughts`` (what the assistant reasoned about says which files it worked on).
The project is the folder holding ``.specstory``; the external id is the file stem.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from storage.sources.chats import (
    MAX_THOUGHT_LINES,
    Scope,
    clip,
    fenced_code_blocks,
    file_lines,
    numbered,
    read_text,
    span,
    to_epoch,
)
from storage.sources.records import ChatMessage, Conversation, Role, SkipLog, is_generated

TOOL: Final = "specstory"

_TURN = re.compile(
    r"^_\*\*(User|Human|Assistant|Agent|AI|Cursor|Copilot|Claude)\b\s*(?:\((.*?)\))?\s*\*\*_\s*$",
    re.IGNORECASE,
)
_STAMP = r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:Z|[+-]\d{2}:?\d{2})?"
_DMY = r"\d{2}/\d{2}/\d{4},?\s+\d{1,2}:\d{2}(?::\d{2})?"
_TITLE = re.compile(rf"^#{{1,3}}\s+(.*?)\s*(?:\(({_STAMP}|{_DMY})\))?\s*$")
_FILE_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})_(\d{2})-(\d{2})(?:-(\d{2}))?(Z?)")
_SESSION = re.compile(r"<!--\s*(\w[\w-]*)\s+Session\s+([\w-]+)", re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_BLOCK = re.compile(
    r"<details\b[^>]*>.*?</details>|<tool-use\b[^>]*>.*?</tool-use>|<think>.*?</think>",
    re.DOTALL | re.IGNORECASE,
)
_SUMMARY = re.compile(r"<summary\b[^>]*>(.*?)</summary>", re.DOTALL | re.IGNORECASE)
_TOOL_NAME = re.compile(r'data-tool-name="([^"]*)"')
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def default_locations(
    home: Path | None = None, platform: str | None = None, *, root: Path | None = None
) -> list[Path]:
    """``<root>/.specstory/history`` (SpecStory writes inside the project; none without one)."""
    return [root / ".specstory" / "history"] if root is not None else []


def history_files(locations: Sequence[Path]) -> list[Path]:
    """Markdown files named in ``locations`` or found under them (in a project's
    ``.specstory/history`` when the location is a project folder)."""
    found: dict[str, Path] = {}
    for loc in locations:
        if loc.is_file():
            found.setdefault(str(loc), loc)
        elif loc.is_dir():
            base = loc / ".specstory" / "history"
            for p in (base if base.is_dir() else loc).glob("**/*.md"):
                if p.is_file():
                    found.setdefault(str(p), p)
    return [found[k] for k in sorted(found)]


def project_of(path: Path) -> str | None:
    """The folder holding the ``.specstory`` folder the file is in, if any."""
    for parent in path.parents:
        if parent.name == ".specstory":
            return str(parent.parent)
    return None


def read(
    root: Path | None,
    *,
    paths: Sequence[Path] | None = None,
    home: Path | None = None,
    platform: str | None = None,
    all_workspaces: bool = False,
    since: float | None = None,
    skips: SkipLog,
) -> Iterator[Conversation]:
    """SpecStory conversations of ``root`` from ``paths`` (files or folders) or the root's
    ``.specstory/history``."""
    scope = Scope(TOOL, root, all_workspaces, since, skips)
    locations = list(paths) if paths is not None else default_locations(root=root)
    for path in history_files(locations):
        where = str(path)
        workspace = project_of(path)
        if not scope.wants_workspace(workspace, where) or scope.file_is_stale(path):
            continue
        text = read_text(path, TOOL, skips)
        if text is None:
            continue
        if is_generated(text):
            skips.skip(TOOL, where, "generated file")
            continue
        conv = parse(text, path, workspace, skips)
        if conv is not None and scope.keeps(conv):
            yield conv


def _stamp(value: str) -> float | None:
    dmy = re.fullmatch(r"(\d{2})/(\d{2})/(\d{4}),?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?", value.strip())
    if dmy:  # older exports: DD/MM/YYYY, HH:MM:SS (local time)
        d, mo, y, hh, mm, ss = dmy.groups()
        value = f"{y}-{mo}-{d} {int(hh):02d}:{mm}:{ss or '00'}"
    s = value.strip().replace(" ", "T", 1).replace(" ", "")
    if s.endswith(("Z", "z")) or re.search(r"[+-]\d{2}:?\d{2}$", s[10:]):
        return to_epoch(s)
    try:
        return datetime.fromisoformat(s).timestamp()  # naive: local time
    except ValueError:
        return None


def _file_stamp(stem: str) -> float | None:
    m = _FILE_STAMP.match(stem)
    if not m:
        return None
    day, hh, mm, ss, z = m.groups()
    return _stamp(f"{day} {hh}:{mm}:{ss or '00'}{z}")


def parse(text: str, path: Path, workspace: str | None, skips: SkipLog) -> Conversation | None:
    """One SpecStory file as a conversation (None, counted, when it holds no turns)."""
    where = str(path)
    title: str | None = None
    started: float | None = None
    meta: dict[str, Any] = {}
    session = _SESSION.search(text[:2000])
    if session:
        meta["source"] = session.group(1).lower()
        meta["session"] = session.group(2)
    turns: list[tuple[Role, float | None, dict[str, Any], list[str]]] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m:
            mark = m.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip(mark[0]):
                fence = None
        if fence is None and not m:
            header = _TURN.match(line.strip())
            if header:
                who, extra = header.group(1).lower(), (header.group(2) or "").strip()
                role: Role = "user" if who in ("user", "human") else "assistant"
                at = _stamp(extra) if re.match(_STAMP, extra) else None
                info = {"speaker_info": extra} if extra and at is None else {}
                turns.append((role, at, info, []))
                continue
            if not turns and title is None:
                t = _TITLE.match(line)
                if t and t.group(1).strip().lower() != "specstory":
                    title = t.group(1).strip() or None
                    started = _stamp(t.group(2)) if t.group(2) else None
                    continue
        if turns:
            turns[-1][3].append(line)
    if started is None:
        started = _file_stamp(path.stem)
    messages: list[ChatMessage] = []
    thoughts: list[str] = []
    for role, at, info, lines in turns:
        messages.extend(_turn_messages(role, at, info, "\n".join(lines), thoughts))
    if not messages:
        skips.skip(TOOL, where, "no messages")
        return None
    msgs = numbered(messages)
    start, end = span(msgs, started)
    return Conversation(
        tool=TOOL,
        external_id=path.stem,
        messages=msgs,
        title=title,
        workspace=workspace,
        started_at=start,
        ended_at=end,
        origin=where,
        metadata=meta,
        thoughts=tuple(thoughts[:MAX_THOUGHT_LINES]),
    )


def _clean(text: str) -> str:
    lines = _COMMENT.sub("", text).strip().split("\n")
    while lines and lines[-1].strip() in ("---", ""):
        lines.pop()
    while lines and lines[0].strip() in ("---", ""):
        lines.pop(0)
    return "\n".join(lines).strip()


def _turn_messages(
    role: Role, at: float | None, info: dict[str, Any], body: str, thoughts: list[str]
) -> list[ChatMessage]:
    out: list[ChatMessage] = []

    def add_text(chunk: str) -> None:
        text = _clean(chunk)
        if text:
            out.append(
                ChatMessage(
                    idx=0,
                    role=role,
                    text=text,
                    at=at,
                    code_blocks=fenced_code_blocks(text),
                    metadata=dict(info),
                )
            )

    pos = 0
    for m in _BLOCK.finditer(body):
        add_text(body[pos : m.start()])
        pos = m.end()
        block = m.group(0)
        if block.lower().startswith("<think"):
            thoughts.extend(file_lines(_TAG.sub(" ", block)))
            continue
        name_match = _TOOL_NAME.search(block[:500])
        summary_match = _SUMMARY.search(block)
        summary = _TAG.sub("", summary_match.group(1)) if summary_match else ""
        summary = " ".join(summary.replace("**", "").split())
        if summary.lower().startswith(("thought process", "thinking")):
            thoughts.extend(file_lines(_TAG.sub(" ", _SUMMARY.sub("", block))))
            continue
        name = name_match.group(1) if name_match else summary or "details"
        shown = summary or name
        out.append(
            ChatMessage(
                idx=0,
                role="tool",
                text=clip(f"[tool: {shown}]"),
                at=at,
                metadata={"tool": clip(name, 200), "kind": "call"},
            )
        )
    add_text(body[pos:])
    return out
