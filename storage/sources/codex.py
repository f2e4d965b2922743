"""Codex CLI sessions: ``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`` (FORMATS.md).

The first record, ``session_meta``, gives the session id, ``cwd`` (the project) and ``git``
(the branch); a file whose ``cwd`` is another project is skipped after reading that one line.
``response_item`` records carry the conversation: ``message`` items become ``user`` /
``assistant`` messages (``developer`` and ``system`` instructions and injected user
boilerplate — ``<environment_context>``, ``<user_instructions>``, ``AGENTS.md`` instructions —
are left out and counted in ``metadata["injected"]``); ``function_call`` /
``custom_tool_call`` / ``local_shell_call`` items become ``role="tool"`` calls and their
``*_output`` items ``role="tool"`` results. ``reasoning``, ``event_msg`` (which repeats the
messages), ``turn_context`` and ``compacted`` records add nothing. Files rolled out before
``session_meta`` existed (items at the top level of each line) are read the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from storage.sources.chats import (
    MAX_LOG_BYTES,
    Scope,
    as_list,
    as_text,
    fenced_code_blocks,
    files_in_params,
    files_under,
    home_dir,
    json_lines,
    numbered,
    read_text,
    span,
    to_epoch,
    tool_call_text,
    tool_result_text,
    unique_files,
)
from storage.sources.records import MAX_FILE_BYTES, ChatMessage, Conversation, SkipLog

TOOL: Final = "codex"
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
"""User messages starting with these were written by Codex, not typed by the user."""

_ITEM_TYPES = {
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
}
_UUID = re.compile(
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


def default_locations(home: Path | None = None, platform: str | None = None) -> list[Path]:
    """``$CODEX_HOME/sessions`` (own home only), ``~/.codex/sessions`` and
    ``~/.codex/archived_sessions``."""
    base = home_dir(home)
    out = []
    env = os.environ.get("CODEX_HOME")
    if home is None and env:
        out += [Path(env) / "sessions", Path(env) / "archived_sessions"]
    out += [base / ".codex" / "sessions", base / ".codex" / "archived_sessions"]
    return out


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
    """Codex conversations of ``root`` (every project's when ``root`` is None or
    ``all_workspaces``) from ``paths`` (rollout files or folders) or the default folders."""
    scope = Scope(TOOL, root, all_workspaces, since, skips)
    locations = list(paths) if paths is not None else default_locations(home, platform)
    for path in files_under(locations, ("**/*.jsonl",)):
        where = str(path)
        if scope.file_is_stale(path):
            continue
        if not scope.every_workspace:
            cwd = _first_cwd(path)
            if cwd is not None and not scope.wants_workspace(cwd, where):
                continue
        text = read_text(path, TOOL, skips, limit=MAX_LOG_BYTES)
        if text is None:
            continue
        conv = _conversation(text, path, root, skips)
        if conv is not None and scope.keeps(conv):
            yield conv


def _first_cwd(path: Path) -> str | None:
    """The ``cwd`` of the ``session_meta`` on the first line, read alone (None if unsure)."""
    try:
        with path.open("rb") as f:
            line = f.readline(MAX_FILE_BYTES)
        first = json.loads(line.decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if not isinstance(first, dict):
        return None
    payload = first.get("payload")
    if first.get("type") == "session_meta" and isinstance(payload, dict):
        cwd = payload.get("cwd")
        return cwd if isinstance(cwd, str) and cwd else None
    return None


def _conversation(text: str, path: Path, root: Path | None, skips: SkipLog) -> Conversation | None:
    where = str(path)
    meta: dict[str, Any] = {}
    cwd: str | None = None
    started: float | None = None
    messages: list[ChatMessage] = []
    injected = 0
    for n, record in enumerate(json_lines(text, TOOL, where, skips)):
        kind = record.get("type")
        payload = record.get("payload")
        at = to_epoch(record.get("timestamp"))
        if kind == "session_meta" and isinstance(payload, dict):
            meta = payload
            started = to_epoch(payload.get("timestamp")) or at
            if isinstance(payload.get("cwd"), str):
                cwd = payload["cwd"]
            continue
        if kind == "turn_context" and isinstance(payload, dict):
            if cwd is None and isinstance(payload.get("cwd"), str):
                cwd = payload["cwd"]
            continue
        if kind is None and n == 0 and "id" in record:  # legacy first line: the session
            meta = record
            started = to_epoch(record.get("timestamp"))
            continue
        if kind == "response_item" and isinstance(payload, dict):
            item = payload
        elif (
            isinstance(kind, str) and kind in _ITEM_TYPES and payload is None
        ):  # legacy: the item is the line
            item = record
        else:
            continue
        made, was_injected = _item_messages(item, at, root)
        injected += was_injected
        messages.extend(made)
    if not messages:
        skips.skip(TOOL, where, "no messages")
        return None
    msgs = numbered(messages)
    start, end = span(msgs, started)
    git = g if isinstance(g := meta.get("git"), dict) else {}
    branch = git.get("branch") if isinstance(git.get("branch"), str) else None
    sid = meta.get("id") if isinstance(meta.get("id"), str) and meta.get("id") else None
    m = _UUID.search(path.stem)
    extra: dict[str, Any] = {"injected": injected}
    for key in ("cli_version", "originator", "model_provider"):
        if isinstance(meta.get(key), str):
            extra[key] = meta[key]
    if isinstance(git.get("commit_hash"), str):
        extra["commit"] = git["commit_hash"]
    return Conversation(
        tool=TOOL,
        external_id=sid or (m.group(1) if m else path.stem),
        messages=msgs,
        workspace=cwd,
        branch=branch,
        started_at=start,
        ended_at=end,
        origin=where,
        metadata=extra,
    )


def _item_messages(
    item: dict[str, Any], at: float | None, root: Path | None
) -> tuple[list[ChatMessage], int]:
    """The messages of one response item, and 1 when it was injected boilerplate."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = "\n".join(
            as_text(c) for c in as_list(item.get("content")) if isinstance(c, dict) and as_text(c)
        )
        if isinstance(item.get("content"), str):
            text = item["content"]
        if role not in ("user", "assistant") or (
            role == "user" and text.lstrip().startswith(INJECTED_PREFIXES)
        ):
            return [], 1
        if not text.strip():
            return [], 0
        msg = ChatMessage(idx=0, role=role, text=text, at=at, code_blocks=fenced_code_blocks(text))
        return [msg], 0
    call_id = item.get("call_id") or item.get("id")
    if kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        name = n if isinstance(n := item.get("name"), str) else kind
        params: Any = item.get("arguments", item.get("input", item.get("action")))
        if isinstance(params, str) and params[:1] in "{[":
            with contextlib.suppress(ValueError):
                params = json.loads(params)
        raw = params if isinstance(params, str) else json.dumps(params, default=str)
        files = [*files_in_params(params), *(f.strip() for f in _PATCH_FILE.findall(raw))]
        msg = ChatMessage(
            idx=0,
            role="tool",
            text=tool_call_text(name, params),
            at=at,
            files=unique_files(files, root),
            metadata={"tool": name, "kind": "call", "call_id": call_id},
        )
        return [msg], 0
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        if isinstance(output, str) and output[:1] == "{":
            try:
                decoded = json.loads(output)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict) and "output" in decoded:
                output = decoded["output"]
        elif isinstance(output, dict):
            output = output.get("content", output)
        msg = ChatMessage(
            idx=0,
            role="tool",
            text=tool_result_text(output),
            at=at,
            metadata={"kind": "result", "call_id": call_id},
        )
        return [msg], 0
    return [], 0
