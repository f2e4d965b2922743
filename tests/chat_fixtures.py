"""Builders of chat-history fixtures in each tool's on-disk format (see /work/shared/FORMATS.md).

Every builder writes under a fake home folder (``tmp_path / "home"`` unless given) at the
tool's default location for ``platform`` (``linux`` unless given), so a reader called with
``home=`` and ``platform=`` finds it, and answers what it wrote (paths and ids). Times are
fixed: :data:`T0` (epoch seconds) plus a few minutes per message.

Used by the reader tests and by end-to-end ingestion tests::

    fx = build_cursor_workspace(tmp_path, generation="D", project=tmp_path / "proj")
    convs = list(cursor.read(fx.project, home=fx.home, platform="linux", skips=SkipLog()))
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

T0 = 1_717_236_000.0  # 2024-06-01 10:00:00 UTC
MINUTE = 60.0


def iso(t: float) -> str:
    """``t`` (epoch seconds) as an ISO 8601 UTC string with milliseconds and ``Z``."""
    dt = datetime.fromtimestamp(t, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def ms(t: float) -> int:
    """``t`` (epoch seconds) as epoch milliseconds."""
    return round(t * 1000)


def snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """``relative path → (size, mtime_ns, bytes)`` of every file under ``folder``.

    Compare two snapshots to prove a reader wrote nothing (no change, no new file).
    """
    out: dict[str, tuple[int, int, bytes]] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(folder))] = (st.st_size, st.st_mtime_ns, p.read_bytes())
    return out


def _home(tmp_path: Path, home: Path | None) -> Path:
    h = home if home is not None else tmp_path / "home"
    h.mkdir(parents=True, exist_ok=True)
    return h


def app_data(home: Path, platform: str = "linux") -> Path:
    """The per-user app data folder of ``platform`` under a fake ``home``."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return home / "AppData" / "Roaming"
    return home / ".config"


def file_uri(path: Path | str) -> str:
    """A ``file://`` URI for ``path`` with URL quoting, as VS Code writes it."""
    return "file://" + quote(str(path))


# ---------------------------------------------------------------- SQLite key/value stores


def write_vscdb(
    path: Path,
    items: dict[str, Any] | None = None,
    disk_kv: dict[str, Any] | None = None,
    *,
    wal: bool = False,
) -> Path:
    """Create or extend a ``state.vscdb`` with ``ItemTable`` and ``cursorDiskKV`` rows.

    Values that are not ``str``/``bytes`` are stored as JSON text; ``cursorDiskKV`` values are
    stored as UTF-8 bytes (a BLOB), as Cursor does for many of them.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    try:
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        for table in ("ItemTable", "cursorDiskKV"):
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} "
                "(key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"
            )
        with conn:
            for key, value in (items or {}).items():
                v = value if isinstance(value, (str, bytes)) else json.dumps(value)
                conn.execute("INSERT INTO ItemTable VALUES (?, ?)", (key, v))
            for key, value in (disk_kv or {}).items():
                v = value if isinstance(value, (str, bytes)) else json.dumps(value)
                conn.execute(
                    "INSERT INTO cursorDiskKV VALUES (?, ?)",
                    (key, v.encode() if isinstance(v, str) else v),
                )
    finally:
        conn.close()
    return path


# ---------------------------------------------------------------- Cursor


@dataclass
class CursorFixture:
    """What :func:`build_cursor_workspace` wrote."""

    home: Path
    project: Path
    user_dir: Path
    workspace_db: Path
    global_db: Path
    ids: list[str]
    generation: str
    expected: list[tuple[str, str]] = field(default_factory=list)  # (role, text start)


def cursor_user_dir(home: Path, platform: str = "linux") -> Path:
    """Cursor's ``User`` folder under a fake home."""
    return app_data(home, platform) / "Cursor" / "User"


def _lexical(text: str) -> str:
    paragraphs = [
        {"type": "paragraph", "children": [{"type": "text", "text": line}] if line else []}
        for line in text.split("\n")
    ]
    return json.dumps({"root": {"type": "root", "children": paragraphs}})


def build_cursor_workspace(
    tmp_path: Path,
    generation: str = "D",
    project: Path | None = None,
    *,
    home: Path | None = None,
    platform: str = "linux",
    conversation_id: str | None = None,
    title: str = "Config loading",
    start: float = T0,
    header_in_workspace: bool = True,
    orphans: int = 1,
    version: Any = 10,
    wal: bool = False,
) -> CursorFixture:
    """Write one Cursor conversation of ``generation`` A, B, C or D for ``project``.

    The conversation: the user asks about ``src/config.py`` (an absolute path in the project),
    the assistant answers with a fenced Python block. Generation D adds a tool bubble, bubble
    ids whose key order differs from the conversation order, ``orphans`` bubble rows no header
    names, and one bubble of each time source (``createdAt``, ``timingInfo``, none).
    ``header_in_workspace=False`` leaves the C/D composer out of the workspace's
    ``composer.composerData`` so its project must be inferred from file paths.
    Several calls with the same ``home`` add workspaces and composers side by side.
    """
    home = _home(tmp_path, home)
    project = project if project is not None else tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "config.py").write_text("def load():\n    return {}\n")
    user = cursor_user_dir(home, platform)
    digest = hashlib.md5(f"{project}:{generation}:{conversation_id}".encode()).hexdigest()
    ws_dir = user / "workspaceStorage" / digest
    ws_dir.mkdir(parents=True, exist_ok=True)
    (ws_dir / "workspace.json").write_text(json.dumps({"folder": file_uri(project)}))
    ws_db = ws_dir / "state.vscdb"
    global_db = user / "globalStorage" / "state.vscdb"
    cfg = str(project / "src" / "config.py")
    question = f"How does {cfg} load the settings?"
    answer = "It reads a dict:\n\n```python:src/config.py\ndef load():\n    return {}\n```\n"
    cid = conversation_id or f"composer-{generation.lower()}-{digest[:8]}"
    expected = [("user", "How does"), ("assistant", "It reads a dict")]

    if generation == "A":
        chat = {
            "tabs": [
                {
                    "tabId": cid,
                    "chatTitle": title,
                    "lastSendTime": ms(start + 2 * MINUTE),
                    "bubbles": [
                        {
                            "type": "user",
                            "id": "u1",
                            "initText": _lexical(question + "\nThanks"),
                            "selections": [
                                {"text": "CONFIG = {}", "uri": {"fsPath": cfg}},
                            ],
                        },
                        {"type": "ai", "id": "a1", "rawText": answer},
                        {"type": "user", "id": "u2", "delegate": {"a": "And the tests?"}},
                        {"type": "ai", "id": "a2", "rawText": "See tests/test_config.py."},
                    ],
                }
            ]
        }
        expected += [("user", "And the tests?"), ("assistant", "See tests/")]
        write_vscdb(ws_db, {"workbench.panel.aichat.view.aichat.chatdata": chat}, wal=wal)
        return CursorFixture(home, project, user, ws_db, global_db, [cid], "A", expected)

    conversation = [
        {
            "type": 1,
            "bubbleId": "b-user",
            "text": question,
            "relevantFiles": [cfg],
            "context": {"fileSelections": [{"uri": {"fsPath": cfg}}]},
        },
        {
            "type": 2,
            "bubbleId": "b-ai",
            "text": answer,
            "suggestedCodeBlocks": [
                {"language": "python", "code": "CONFIG = load()", "filename": "src/app.py"}
            ],
        },
    ]
    header = {
        "composerId": cid,
        "name": title,
        "createdAt": ms(start),
        "lastUpdatedAt": ms(start + 3 * MINUTE),
    }
    if generation == "B":
        composer = {
            **header,
            "context": {"fileSelections": [{"uri": {"fsPath": cfg}}]},
            "conversation": conversation,
        }
        write_vscdb(ws_db, {"composer.composerData": {"allComposers": [composer]}}, wal=wal)
        return CursorFixture(home, project, user, ws_db, global_db, [cid], "B", expected)

    headers = [header] if header_in_workspace else []
    write_vscdb(ws_db, {"composer.composerData": {"allComposers": headers}}, wal=wal)
    if generation == "C":
        body = {**header, "conversation": conversation}
        write_vscdb(global_db, disk_kv={f"composerData:{cid}": body}, wal=wal)
        return CursorFixture(home, project, user, ws_db, global_db, [cid], "C", expected)
    if generation != "D":
        raise ValueError(f"unknown Cursor generation {generation!r}")

    # Bubble ids sort z, y, x, w by key but the conversation order is w, x, y, z.
    bubbles = {
        "z1": {
            "_v": 3,
            "bubbleId": "z1",
            "type": 1,
            "text": question,
            "createdAt": iso(start),
            "attachedFileCodeChunksUris": [{"path": cfg}],
            "relevantFiles": ["src/config.py"],
        },
        "y2": {
            "_v": 3,
            "bubbleId": "y2",
            "type": 2,
            "text": "",
            "toolFormerData": {
                "name": "read_file",
                "params": json.dumps({"targetFile": cfg}),
                "result": "def load(): ...",
            },
            "timingInfo": {"clientStartTime": ms(start + MINUTE), "clientEndTime": 12.5},
        },
        "x3": {
            "_v": 3,
            "bubbleId": "x3",
            "type": 2,
            "text": answer,
            "codeBlocks": [{"content": "def load():\n    return {}", "languageId": "python"}],
            "timingInfo": {"clientRpcSendTime": ms(start + 2 * MINUTE)},
        },
        "w4": {"_v": 3, "bubbleId": "w4", "type": 1, "text": "Thanks!"},
    }
    order = ["z1", "y2", "x3", "w4"]
    kv: dict[str, Any] = {f"bubbleId:{cid}:{b}": bubbles[b] for b in order}
    for n in range(orphans):
        kv[f"bubbleId:{cid}:orphan{n}"] = {
            "_v": 3,
            "bubbleId": f"orphan{n}",
            "type": 1,
            "text": "x",
        }
    kv[f"composerData:{cid}"] = {
        "_v": version,
        **header,
        "fullConversationHeadersOnly": [{"bubbleId": b, "type": bubbles[b]["type"]} for b in order],
        "context": {"fileSelections": []},
        "latestConversationSummary": {"summary": {"summary": "Explained config loading."}},
    }
    write_vscdb(global_db, disk_kv=kv, wal=wal)
    expected = [
        ("user", "How does"),
        ("tool", "[tool: read_file]"),
        ("assistant", "It reads a dict"),
        ("user", "Thanks!"),
    ]
    return CursorFixture(home, project, user, ws_db, global_db, [cid], "D", expected)


# ---------------------------------------------------------------- JSON lines helpers


def write_jsonl(path: Path, records: list[Any], *, truncate_last: bool = False) -> Path:
    """Write one JSON value per line; ``truncate_last`` cuts the last line in half (no newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records]
    text = "\n".join(lines) + "\n"
    if truncate_last and lines:
        text = "\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2]
    path.write_text(text, encoding="utf-8")
    return path


def set_mtime(path: Path, t: float) -> None:
    """Set a file's access and modification times to ``t`` (epoch seconds)."""
    os.utime(path, (t, t))


# ---------------------------------------------------------------- Claude Code


@dataclass
class ClaudeFixture:
    """What :func:`write_claude_session` wrote."""

    home: Path
    project: Path
    path: Path
    session_id: str
    expected: list[tuple[str, str]]  # (role, text start) of the main chain, in order


def claude_projects_dir(home: Path) -> Path:
    """``~/.claude/projects`` under a fake home."""
    return home / ".claude" / "projects"


def claude_project_dir_name(cwd: Path | str) -> str:
    """The folder name Claude Code gives a working directory."""
    return "".join(c if c.isalnum() and c.isascii() else "-" for c in str(cwd))


def write_claude_session(
    tmp_path: Path,
    project: Path | None = None,
    *,
    home: Path | None = None,
    session_id: str = "0b6f3c1e-5a7d-4a51-9d59-1f3c2b7e8a01",
    branch: str = "feature/config",
    start: float = T0,
    cwd: Path | None = None,
    truncate_last: bool = False,
    extra: Sequence[Any] = (),
) -> ClaudeFixture:
    """Write a Claude Code session for ``project`` (run from ``cwd``, default the project).

    It has a summary, a ``file-history-snapshot`` and a ``system`` line, an assistant reply
    streamed over three lines sharing ``message.id`` (thinking, text, ``Read`` tool use), tool
    results, a side chain, an abandoned edit branch (an older leaf) and an ``Edit`` call.
    ``extra`` records are appended; ``truncate_last`` cuts the last line.
    """
    home = _home(tmp_path, home)
    project = project if project is not None else tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    cwd = cwd if cwd is not None else project
    cfg = str(project / "src" / "config.py")
    folder = claude_projects_dir(home) / claude_project_dir_name(cwd)
    path = folder / f"{session_id}.jsonl"

    def rec(uuid: str, parent: str | None, kind: str, minute: float, **message: Any) -> dict:
        return {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": str(cwd),
            "gitBranch": branch,
            "sessionId": session_id,
            "version": "1.0.80",
            "timestamp": iso(start + minute * MINUTE),
            "message": message,
        }

    answer = "The bug is the default:\n\n```python\ndef load():\n    return {}\n```"
    records: list[Any] = [
        {"type": "summary", "summary": "Fix the config loader", "leafUuid": "a6"},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        rec("u1", None, "user", 0, role="user", content="Why does load() fail?"),
        rec(
            "a1",
            "u1",
            "assistant",
            0.5,
            role="assistant",
            id="msg_1",
            model="claude-x",
            content=[{"type": "thinking", "thinking": "secret musing\nabout src/config.py"}],
        ),
        rec(
            "a2",
            "a1",
            "assistant",
            0.6,
            role="assistant",
            id="msg_1",
            model="claude-x",
            content=[{"type": "text", "text": "Let me look."}],
        ),
        rec(
            "a3",
            "a2",
            "assistant",
            0.7,
            role="assistant",
            id="msg_1",
            model="claude-x",
            content=[
                {"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": cfg}}
            ],
        ),
        rec(
            "r1",
            "a3",
            "user",
            0.8,
            role="user",
            content=[
                {
                    "type": "tool_result",
                    "tool_use_id": "tu1",
                    "content": [{"type": "text", "text": "def load(): ..."}],
                }
            ],
        ),
        rec(
            "a4",
            "r1",
            "assistant",
            1,
            role="assistant",
            id="msg_2",
            model="claude-x",
            content=[{"type": "text", "text": answer}],
        ),
        {
            **rec("s1", "a4", "user", 1.5, role="user", content="sub-agent prompt"),
            "isSidechain": True,
        },
        rec("x1", "a4", "user", 2, role="user", content="An abandoned question"),
        rec(
            "x2",
            "x1",
            "assistant",
            2.5,
            role="assistant",
            id="msg_x",
            content=[{"type": "text", "text": "An abandoned answer"}],
        ),
        {
            "type": "system",
            "uuid": "sys1",
            "parentUuid": "a4",
            "content": "compacted",
            "timestamp": iso(start + 2.8 * MINUTE),
        },
        rec("u2", "a4", "user", 3, role="user", content="Thanks, fix it please."),
        {
            **rec(
                "m1",
                "u2",
                "user",
                3.1,
                role="user",
                content="<local-command-caveat>injected</local-command-caveat>",
            ),
            "isMeta": True,
        },
        rec(
            "a5",
            "m1",
            "assistant",
            3.5,
            role="assistant",
            id="msg_3",
            content=[
                {
                    "type": "tool_use",
                    "id": "tu2",
                    "name": "Edit",
                    "input": {
                        "file_path": cfg,
                        "old_string": "{}",
                        "new_string": "{'debug': False}",
                    },
                }
            ],
        ),
        rec(
            "r2",
            "a5",
            "user",
            4,
            role="user",
            content=[
                {"type": "tool_result", "tool_use_id": "tu2", "content": "ok", "is_error": False}
            ],
        ),
        rec(
            "a6",
            "r2",
            "assistant",
            5,
            role="assistant",
            id="msg_4",
            content=[{"type": "text", "text": "Done."}],
        ),
        *extra,
    ]
    write_jsonl(path, records, truncate_last=truncate_last)
    expected = [
        ("user", "Why does load() fail?"),
        ("assistant", "Let me look."),
        ("tool", "[tool: Read]"),
        ("tool", "[result] def load(): ..."),
        ("assistant", "The bug is the default"),
        ("user", "Thanks, fix it please."),
        ("tool", "[tool: Edit]"),
        ("tool", "[result] ok"),
        ("assistant", "Done."),
    ]
    return ClaudeFixture(home, project, path, session_id, expected)


# ---------------------------------------------------------------- Codex


@dataclass
class CodexFixture:
    """What :func:`write_codex_session` wrote."""

    home: Path
    project: Path
    path: Path
    session_id: str
    expected: list[tuple[str, str]]


def write_codex_session(
    tmp_path: Path,
    project: Path | None = None,
    *,
    home: Path | None = None,
    session_id: str = "5973b6c0-94b8-487b-a530-2aeb6098ae0e",
    branch: str = "main",
    start: float = T0,
    truncate_last: bool = False,
    with_meta: bool = True,
) -> CodexFixture:
    """Write a Codex rollout for ``project`` under ``~/.codex/sessions/YYYY/MM/DD``.

    It has injected boilerplate (a developer message, ``<environment_context>`` and AGENTS.md
    user messages), a real question, reasoning, an answer with a fenced block, a shell
    ``function_call`` with its output, an ``apply_patch`` custom tool call, and the
    ``event_msg`` / ``turn_context`` records that repeat or frame them.
    """
    home = _home(tmp_path, home)
    project = project if project is not None else tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    day = datetime.fromtimestamp(start, tz=timezone.utc)
    stamp = day.strftime("%Y-%m-%dT%H-%M-%S")
    path = (
        home
        / ".codex"
        / "sessions"
        / day.strftime("%Y/%m/%d")
        / f"rollout-{stamp}-{session_id}.jsonl"
    )

    def line(minute: float, kind: str, payload: Any) -> dict[str, Any]:
        return {"timestamp": iso(start + minute * MINUTE), "type": kind, "payload": payload}

    def msg(role: str, text: str) -> dict[str, Any]:
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    patch = (
        "*** Begin Patch\n*** Update File: src/config.py\n@@\n"
        "-    return {}\n+    return {'debug': False}\n*** End Patch"
    )
    records: list[Any] = []
    if with_meta:
        records.append(
            line(
                0,
                "session_meta",
                {
                    "id": session_id,
                    "timestamp": iso(start),
                    "cwd": str(project),
                    "originator": "codex_cli_rs",
                    "cli_version": "0.40.0",
                    "instructions": None,
                    "git": {
                        "commit_hash": "abc123",
                        "branch": branch,
                        "repository_url": "git@example.com:x/y.git",
                    },
                },
            )
        )
    records += [
        line(0, "response_item", msg("developer", "<permissions instructions>...")),
        line(
            0,
            "response_item",
            msg("user", "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"),
        ),
        line(0, "response_item", msg("user", "# AGENTS.md instructions for /x\n\nBe nice.")),
        line(0.1, "turn_context", {"cwd": str(project), "model": "gpt-5"}),
        line(0.2, "response_item", msg("user", "Make load() return debug False.")),
        line(
            0.2, "event_msg", {"type": "user_message", "message": "Make load() return debug False."}
        ),
        line(0.5, "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"}),
        line(
            1,
            "response_item",
            msg("assistant", "I'll change it:\n\n```python\nreturn {'debug': False}\n```"),
        ),
        line(1, "event_msg", {"type": "agent_message", "message": "I'll change it"}),
        line(
            1.5,
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "call_id": "call_1",
                "arguments": json.dumps(
                    {"command": ["cat", "src/config.py"], "workdir": str(project)}
                ),
            },
        ),
        line(
            1.6,
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": json.dumps(
                    {"output": "def load():\n    return {}\n", "metadata": {"exit_code": 0}}
                ),
            },
        ),
        line(
            2,
            "response_item",
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "call_2",
                "input": patch,
            },
        ),
        line(
            2.1,
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": "call_2",
                "output": "Success.",
            },
        ),
        line(3, "response_item", msg("assistant", "Done: load() now returns debug False.")),
    ]
    write_jsonl(path, records, truncate_last=truncate_last)
    expected = [
        ("user", "Make load() return debug False."),
        ("assistant", "I'll change it"),
        ("tool", "[tool: shell]"),
        ("tool", "[result] def load()"),
        ("tool", "[tool: apply_patch]"),
        ("tool", "[result] Success."),
        ("assistant", "Done: load()"),
    ]
    return CodexFixture(home, project, path, session_id, expected)


# ---------------------------------------------------------------- Copilot


@dataclass
class CopilotFixture:
    """What :func:`write_copilot_session` wrote."""

    home: Path
    project: Path
    path: Path
    session_id: str
    expected: list[tuple[str, str]]


def copilot_user_dir(home: Path, platform: str = "linux") -> Path:
    """VS Code's ``User`` folder under a fake home."""
    return app_data(home, platform) / "Code" / "User"


def copilot_session(project: Path, session_id: str, start: float = T0) -> dict[str, Any]:
    """A version 3 Copilot Chat session object with two requests."""
    cfg = project / "src" / "config.py"
    uri = {"$mid": 1, "fsPath": str(cfg), "path": str(cfg), "scheme": "file"}
    return {
        "version": 3,
        "sessionId": session_id,
        "creationDate": ms(start),
        "lastMessageDate": ms(start + 5 * MINUTE),
        "customTitle": "Config question",
        "requesterUsername": "me",
        "responderUsername": "GitHub Copilot",
        "requests": [
            {
                "requestId": "request_1",
                "timestamp": ms(start),
                "modelId": "copilot/gpt-4.1",
                "message": {"text": "How is config loaded?", "parts": []},
                "variableData": {
                    "variables": [
                        {"id": "file", "name": "file:config.py", "kind": "file", "value": uri}
                    ]
                },
                "response": [
                    {"value": "Open ", "supportThemeIcons": False},
                    {"kind": "inlineReference", "inlineReference": uri},
                    {"value": " and call it:\n\n```python\nCONFIG = load()\n```\n"},
                    {
                        "kind": "toolInvocationSerialized",
                        "toolId": "copilot_readFile",
                        "invocationMessage": {"value": "Reading config.py"},
                        "pastTenseMessage": {"value": "Read config.py"},
                        "isComplete": True,
                    },
                    {"value": "That is all."},
                    {"kind": "progressMessage", "content": {"value": "Thinking"}},
                ],
                "result": {"timings": {"firstProgress": 800, "totalElapsed": 4000}},
            },
            {
                "requestId": "request_2",
                "timestamp": ms(start + 5 * MINUTE),
                "message": "Thanks!",
                "response": [{"value": "You're welcome."}],
            },
        ],
    }


def write_copilot_session(
    tmp_path: Path,
    project: Path | None = None,
    *,
    home: Path | None = None,
    platform: str = "linux",
    fmt: str = "json",
    session_id: str = "9f1c1a2b-0000-4000-8000-00000000c0p1",
    start: float = T0,
    empty_window: bool = False,
) -> CopilotFixture:
    """Write a Copilot Chat session as ``.json`` or as a ``.jsonl`` mutation log.

    The log starts from a session with no requests and replays every entry kind: pushes,
    a push that truncates (``i``) a wrong request away, sets (the title and a streamed
    response) and a delete. ``empty_window`` writes to ``emptyWindowChatSessions``.
    """
    home = _home(tmp_path, home)
    project = project if project is not None else tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    user = copilot_user_dir(home, platform)
    if empty_window:
        folder = user / "globalStorage" / "emptyWindowChatSessions"
    else:
        digest = hashlib.md5(str(project).encode()).hexdigest()
        ws = user / "workspaceStorage" / digest
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "workspace.json").write_text(json.dumps({"folder": file_uri(project)}))
        folder = ws / "chatSessions"
    folder.mkdir(parents=True, exist_ok=True)
    session = copilot_session(project, session_id, start)
    expected = [
        ("user", "How is config loaded?"),
        ("assistant", "Open `src/config.py` and call it"),
        ("tool", "[tool: copilot_readFile] Read config.py"),
        ("assistant", "That is all."),
        ("user", "Thanks!"),
        ("assistant", "You're welcome."),
    ]
    if fmt == "json":
        path = folder / f"{session_id}.json"
        path.write_text(json.dumps(session, indent=1), encoding="utf-8")
        return CopilotFixture(home, project, path, session_id, expected)
    first, second = session["requests"]
    initial = {**session, "requests": [], "customTitle": None}
    streaming = {**first, "response": [{"value": "Open "}], "followups": [{"message": "x"}]}
    wrong = {
        "requestId": "wrong",
        "timestamp": ms(start),
        "message": {"text": "typo"},
        "response": [],
    }
    entries = [
        {"kind": 0, "v": initial},
        {"kind": 2, "k": ["requests"], "v": [streaming]},
        {"kind": 1, "k": ["requests", 0, "response"], "v": first["response"]},
        {"kind": 1, "k": ["requests", 0, "result"], "v": first["result"]},
        {"kind": 3, "k": ["requests", 0, "followups"]},
        {"kind": 2, "k": ["requests"], "v": [wrong]},
        {"kind": 2, "k": ["requests"], "v": [second], "i": 1},
        {"kind": 1, "k": ["customTitle"], "v": "Config question"},
    ]
    path = folder / f"{session_id}.jsonl"
    write_jsonl(path, entries)
    return CopilotFixture(home, project, path, session_id, expected)


# ---------------------------------------------------------------- SpecStory


def specstory_markdown(
    title: str = "Fixing the config loader", when: str = "2024-06-01 10:00:00"
) -> str:
    """A SpecStory export: two user turns, answers with code and tool/thinking blocks."""
    return f"""<!-- Generated by SpecStory -->

# {title} ({when})

_**User**_

Why does load() fail?

---

_**Assistant**_

<details>
            <summary>Thought Process</summary>
Hmm, let me think.
</details>

<details>
            <summary>Searched codebase "load config" • **2** results</summary>

| File | Lines |
|------|-------|
| `src/config.py` | L1-10 |

</details>

The default is wrong:

```python:src/config.py
_**User**_
def load():
    return {{}}
```

---

_**User**_

Thanks!

---

_**Assistant**_

You're welcome.

---
"""


def write_specstory(
    project: Path,
    *,
    name: str = "2024-06-01_10-00-00Z-fixing-the-config-loader",
    text: str | None = None,
) -> Path:
    """Write a SpecStory export into ``project/.specstory/history/<name>.md``."""
    folder = project / ".specstory" / "history"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text if text is not None else specstory_markdown(), encoding="utf-8")
    return path


SPECSTORY_EXPECTED = [
    ("user", "Why does load() fail?"),
    ("tool", '[tool: Searched codebase "load config" • 2 results]'),
    ("assistant", "The default is wrong:"),
    ("user", "Thanks!"),
    ("assistant", "You're welcome."),
]


# ---------------------------------------------------------------- everything at once


def build_all_chats(
    tmp_path: Path, project: Path | None = None, *, home: Path | None = None
) -> dict[str, list[str]]:
    """One conversation of every tool (Cursor: all four generations) for ``project``.

    Answers ``tool → external ids``; read them with ``home=`` and ``platform="linux"``.
    Session ids are derived from the project path, so several projects can share a home.
    """
    project = project if project is not None else tmp_path / "project"
    home = _home(tmp_path, home)
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, str(project)))
    ids: dict[str, list[str]] = {"cursor": []}
    for generation in "ABCD":
        fx = build_cursor_workspace(tmp_path, generation, project, home=home)
        ids["cursor"] += fx.ids
    cop = write_copilot_session(tmp_path, project, home=home, session_id=sid)
    ids["copilot"] = [cop.session_id]
    ids["claude"] = [write_claude_session(tmp_path, project, home=home, session_id=sid).session_id]
    ids["codex"] = [write_codex_session(tmp_path, project, home=home, session_id=sid).session_id]
    ids["specstory"] = [write_specstory(project).stem]
    return ids
