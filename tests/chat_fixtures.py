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
