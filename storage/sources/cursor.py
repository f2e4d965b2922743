"""Cursor chat history from its ``state.vscdb`` SQLite files: generations A–D of FORMATS.md.

- A (chat pane tabs) and B (composers with an inline conversation) are read from each
  workspace database's ``ItemTable``; the project is the folder in the ``workspace.json``
  beside it.
- C (composer body in the global ``cursorDiskKV`` under ``composerData:<id>`` with an inline
  ``conversation``) and D (``fullConversationHeadersOnly`` plus one ``bubbleId:<cid>:<bid>``
  row per message) are read from the global database. Their project is the workspace whose
  ``composer.composerData`` header lists the composer, else it is inferred from the files the
  composer mentions: an absolute path inside the root, or a relative path that exists under it.
- D bubbles are ordered by the headers only; rows no header names are ``orphan bubble``. A
  message's time falls back from ``createdAt`` to ``timingInfo`` to the composer's
  ``createdAt`` (then ``metadata["time_source"] == "composer"``).
- Tool bubbles (``toolFormerData``) become ``role="tool"`` messages (see :mod:`.chats`).

Databases are opened read-only through APSW and never written: ``mode=ro`` (or ``immutable=1``
for a WAL database whose ``-wal`` file is absent, since a read-only open would create it), then
``immutable=1`` when busy, then a private temporary copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import apsw

from storage.paths import git_root
from storage.sources.chats import (
    Scope,
    as_list,
    editor_user_dir,
    fenced_code_blocks,
    files_in_params,
    merge_code_blocks,
    numbered,
    parse_json,
    path_from_uri,
    relative_file,
    span,
    to_epoch,
    tool_call_text,
    tool_result_text,
    unique_files,
    workspace_matches,
)
from storage.sources.records import (
    MAX_FILE_BYTES,
    ChatMessage,
    CodeBlock,
    Conversation,
    Role,
    SkipLog,
)

TOOL: Final = "cursor"
CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSER_KEY = "composer.composerData"
KNOWN_VERSIONS = range(1, 11)
"""``_v`` values of composers and bubbles this reader knows (others are read, and counted)."""

MAX_VALUE_BYTES = 10 * MAX_FILE_BYTES
"""One ``ItemTable`` / ``cursorDiskKV`` value larger than this is ``too large``."""

_HEADER = b"SQLite format 3\x00"


def default_locations(home: Path | None = None, platform: str | None = None) -> list[Path]:
    """Cursor's ``User`` folder (holding ``globalStorage`` and ``workspaceStorage``)."""
    return [editor_user_dir("Cursor", home, platform)]


# ---------------------------------------------------------------- read-only SQLite


class DbUnreadable(Exception):
    """A database that cannot be read; ``reason`` is the skip reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ReadOnlyDb:
    """Another program's SQLite file, read without writing to it or beside it.

    Queries that meet a lock move on to the next way of opening: ``mode=ro``, ``immutable=1``,
    then a temporary copy. :class:`DbUnreadable` carries ``corrupt database``,
    ``database locked`` or ``unreadable database``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: apsw.Connection | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        try:
            with path.open("rb") as f:
                head = f.read(100)
        except OSError as exc:
            raise DbUnreadable("unreadable database") from exc
        if len(head) < 100 or not head.startswith(_HEADER):
            raise DbUnreadable("corrupt database")
        wal = head[18] == 2 or head[19] == 2
        has_wal = Path(f"{path}-wal").exists()
        # A read-only open of a WAL database creates -wal/-shm beside it; without a live -wal
        # there is nothing newer than the main file, so immutable reads it as it is.
        self._modes = ["immutable", "copy"] if wal and not has_wal else ["ro", "immutable", "copy"]

    def close(self) -> None:
        """Close the connection and drop any temporary copy."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> ReadOnlyDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, mode: str) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
        if mode == "copy":
            self._tmp = tempfile.TemporaryDirectory(prefix="lm-cursor-")
            target = Path(self._tmp.name) / "state.vscdb"
            shutil.copyfile(self.path, target)
            for suffix in ("-wal", "-journal"):
                side = Path(f"{self.path}{suffix}")
                if side.exists():
                    shutil.copyfile(side, Path(f"{target}{suffix}"))
            # The copy is ours: let SQLite recover a journal or WAL into it.
            conn = apsw.Connection(str(target))
        else:
            where = self.path.resolve().as_posix()
            where = where if where.startswith("/") else "/" + where  # C:/… → /C:/…
            uri = f"file:{quote(where, safe='/:')}?mode=ro"
            if mode == "immutable":
                uri += "&immutable=1"
            conn = apsw.Connection(uri, flags=flags)
        conn.set_busy_timeout(200)
        return conn

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """All rows of one statement; a missing table gives no rows."""
        last: Exception | None = None
        while True:
            if self._conn is None:
                if not self._modes:
                    reason = "database locked" if _is_lock(last) else "unreadable database"
                    raise DbUnreadable(reason) from last
                try:
                    self._conn = self._open(self._modes.pop(0))
                except (apsw.Error, OSError) as exc:
                    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
                        raise DbUnreadable("corrupt database") from exc
                    last = exc
                    continue
            try:
                return list(self._conn.execute(sql, params))
            except (apsw.CorruptError, apsw.NotADBError) as exc:
                raise DbUnreadable("corrupt database") from exc
            except apsw.SQLError as exc:
                if "no such table" in str(exc):
                    return []
                raise DbUnreadable("unreadable database") from exc
            except (apsw.Error, OSError) as exc:
                last = exc
                self._conn.close()
                self._conn = None

    def items(self, table: str, keys: Sequence[str]) -> dict[str, Any]:
        """``key → value`` for the given keys of a key/value table."""
        marks = ",".join("?" for _ in keys)
        sql = f"SELECT key, value FROM {table} WHERE key IN ({marks})"
        return {k: v for k, v in self.query(sql, tuple(keys))}

    def prefixed(
        self, table: str, prefix: str, *, keys_only: bool = False
    ) -> list[tuple[Any, ...]]:
        """``(key, value)`` rows (or ``(key,)``) whose key starts with ``prefix``, by key."""
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        cols = "key" if keys_only else "key, value"
        sql = f"SELECT {cols} FROM {table} WHERE key >= ? AND key < ? ORDER BY key"
        return self.query(sql, (prefix, upper))


def _is_lock(exc: Exception | None) -> bool:
    return isinstance(exc, (apsw.BusyError, apsw.LockedError)) or "locked" in str(exc or "")


# ---------------------------------------------------------------- finding databases


@dataclass
class _DbFile:
    path: Path
    folder: str | None  # the project of a workspace database, from workspace.json


@dataclass
class _State:
    scope: Scope
    skips: SkipLog
    composer_folder: dict[str, str] = field(default_factory=dict)
    composer_header: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)


def _databases(locations: Sequence[Path], skips: SkipLog) -> list[_DbFile]:
    found: dict[str, Path] = {}
    for loc in locations:
        if loc.is_file():
            found.setdefault(str(loc), loc)
        elif loc.is_dir():
            for pattern in ("state.vscdb", "*/state.vscdb", "*/*/state.vscdb"):
                for p in sorted(loc.glob(pattern)):
                    if p.is_file():
                        found.setdefault(str(p), p)
    out = [_DbFile(p, _folder(p, skips)) for p in found.values()]
    # Workspace databases first: their headers tell which project a global composer is.
    out.sort(key=lambda d: (d.folder is None, str(d.path)))
    return out


def _folder(db: Path, skips: SkipLog) -> str | None:
    meta = db.parent / "workspace.json"
    if not meta.is_file():
        return None
    try:
        raw = meta.read_bytes()[:MAX_FILE_BYTES]
    except OSError:
        skips.skip(TOOL, str(meta), "unreadable file")
        return None
    data = parse_json(raw, TOOL, str(meta), skips)
    if not isinstance(data, dict):
        return None
    return path_from_uri(data.get("folder"))


# ---------------------------------------------------------------- entry point


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
    """Cursor conversations of ``root`` (every project's when ``root`` is None or
    ``all_workspaces``) from ``paths`` (database files or folders holding them) or Cursor's
    default folder."""
    scope = Scope(TOOL, root, all_workspaces, since, skips)
    state = _State(scope, skips)
    locations = list(paths) if paths is not None else default_locations(home, platform)
    for db in _databases(locations, skips):
        try:
            with ReadOnlyDb(db.path) as conn:
                yield from _read_db(conn, db, state)
        except DbUnreadable as exc:
            skips.skip(TOOL, str(db.path), exc.reason)


def _read_db(conn: ReadOnlyDb, db: _DbFile, state: _State) -> Iterator[Conversation]:
    where = str(db.path)
    tables = conn.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN "
        "('ItemTable', 'cursorDiskKV')"
    )
    if not tables:
        state.skips.skip(TOOL, where, "not a Cursor database (no ItemTable or cursorDiskKV)")
        return
    items = conn.items("ItemTable", [CHAT_KEY, COMPOSER_KEY])
    chat = _value(items.get(CHAT_KEY), f"{where}#{CHAT_KEY}", state.skips)
    if chat is not None:
        yield from _chat_tabs(chat, db, state)
    composers = _value(items.get(COMPOSER_KEY), f"{where}#{COMPOSER_KEY}", state.skips)
    if composers is not None:
        yield from _inline_composers(composers, db, state)
    yield from _global_composers(conn, db, state)


def _value(raw: Any, where: str, skips: SkipLog) -> Any:
    if raw is None:
        return None
    if isinstance(raw, (bytes, str)) and len(raw) > MAX_VALUE_BYTES:
        skips.skip(TOOL, where, "too large")
        return None
    if not isinstance(raw, (bytes, str)):
        skips.skip(TOOL, where, "invalid json")
        return None
    return parse_json(raw, TOOL, where, skips)


# ---------------------------------------------------------------- generation A


def _chat_tabs(data: Any, db: _DbFile, state: _State) -> Iterator[Conversation]:
    tabs = data.get("tabs") if isinstance(data, dict) else None
    if not isinstance(tabs, list):
        state.skips.skip(TOOL, f"{db.path}#{CHAT_KEY}", "unknown shape")
        return
    root = state.scope.root
    for n, tab in enumerate(tabs):
        if not isinstance(tab, dict):
            continue
        tab_id = str(tab.get("tabId") or f"tab-{n}")
        where = f"{db.path}#{tab_id}"
        if tab_id in state.seen or not state.scope.wants_workspace(db.folder, where):
            continue
        last = to_epoch(tab.get("lastSendTime"))
        if not state.scope.recent(last, where):
            continue
        messages: list[ChatMessage] = []
        for bubble in as_list(tab.get("bubbles")):
            if not isinstance(bubble, dict):
                continue
            kind = bubble.get("type")
            role: Role | None = "user" if kind == "user" else "assistant" if kind == "ai" else None
            if role is None:
                state.skips.skip(TOOL, where, "unknown bubble type")
                continue
            text = _tab_text(bubble, role)
            attached = [
                CodeBlock(code=s["text"], filename=_relative(path_from_uri(s.get("uri")), root))
                for s in as_list(bubble.get("selections"))
                if isinstance(s, dict) and isinstance(s.get("text"), str) and s["text"].strip()
            ]
            blocks = merge_code_blocks(fenced_code_blocks(text), attached)
            if not text.strip() and not blocks:
                continue
            messages.append(
                ChatMessage(
                    idx=0,
                    role=role,
                    text=text,
                    at=to_epoch(bubble.get("createdAt") or bubble.get("timestamp")),
                    code_blocks=blocks,
                    files=unique_files(_bubble_files(bubble), root),
                    metadata={"bubbleId": bubble.get("id")} if bubble.get("id") else {},
                )
            )
        if not messages:
            state.skips.skip(TOOL, where, "no messages")
            continue
        state.seen.add(tab_id)
        msgs = numbered(messages)
        start, end = span(msgs, last)
        title = tab.get("chatTitle")
        yield Conversation(
            tool=TOOL,
            external_id=tab_id,
            messages=msgs,
            title=title if isinstance(title, str) and title else None,
            workspace=db.folder,
            started_at=start,
            ended_at=end,
            origin=str(db.path),
            metadata={"generation": "A"},
        )


def _tab_text(bubble: dict[str, Any], role: str) -> str:
    keys = ("text", "rawText") if role == "user" else ("rawText", "text")
    for key in keys:
        v = bubble.get(key)
        if isinstance(v, str) and v.strip():
            return v
    delegate = bubble.get("delegate")
    if isinstance(delegate, dict) and isinstance(delegate.get("a"), str) and delegate["a"]:
        return delegate["a"]
    return lexical_text(bubble.get("initText"))


_LEXICAL_BLOCKS = ("paragraph", "code", "heading", "quote", "listitem")


def lexical_text(value: Any) -> str:
    """Plain text of a Lexical editor state (a JSON string or dict): paragraphs on lines."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if not isinstance(value, dict):
        return ""
    lines: list[str] = []

    def walk(node: Any, buf: list[str]) -> None:
        if not isinstance(node, dict):
            return
        if isinstance(node.get("text"), str):
            buf.append(node["text"])
        if node.get("type") == "linebreak":
            buf.append("\n")
        children = node.get("children")
        if isinstance(children, list):
            for child in children:
                if isinstance(child, dict) and child.get("type") in _LEXICAL_BLOCKS:
                    inner: list[str] = []
                    walk(child, inner)
                    lines.append("".join(inner))
                else:
                    walk(child, buf)

    top: list[str] = []
    walk(value.get("root", value), top)
    if top:
        lines.insert(0, "".join(top))
    return "\n".join(lines).strip()


# ---------------------------------------------------------------- generations B, C, D


def _inline_composers(data: Any, db: _DbFile, state: _State) -> Iterator[Conversation]:
    composers = data.get("allComposers") if isinstance(data, dict) else None
    if not isinstance(composers, list):
        state.skips.skip(TOOL, f"{db.path}#{COMPOSER_KEY}", "unknown shape")
        return
    for c in composers:
        if not isinstance(c, dict) or not isinstance(c.get("composerId"), str):
            continue
        cid = c["composerId"]
        if db.folder is not None:
            state.composer_folder.setdefault(cid, db.folder)
        state.composer_header.setdefault(cid, c)
        conversation = c.get("conversation")
        if isinstance(conversation, list) and conversation:
            yield from _composer(c, conversation, "B", db.path, db.folder, state)


def _global_composers(conn: ReadOnlyDb, db: _DbFile, state: _State) -> Iterator[Conversation]:
    for (key,) in conn.prefixed("cursorDiskKV", "composerData:", keys_only=True):
        cid = str(key)[len("composerData:") :]
        where = f"{db.path}#{key}"
        if cid in state.seen:
            continue
        folder = state.composer_folder.get(cid)
        if folder is not None and not state.scope.wants_workspace(folder, where):
            continue
        rows = conn.items("cursorDiskKV", [key])
        data = _value(rows.get(key), where, state.skips)
        if not isinstance(data, dict):
            if data is not None:
                state.skips.skip(TOOL, where, "unknown shape")
            continue
        version = data.get("_v")
        if version is not None and version not in KNOWN_VERSIONS:
            state.skips.skip(TOOL, where, "unknown version")
        last = to_epoch(data.get("lastUpdatedAt")) or to_epoch(data.get("createdAt"))
        if not state.scope.recent(last, where):
            continue
        conversation = data.get("conversation")
        headers = data.get("fullConversationHeadersOnly")
        if isinstance(conversation, list) and conversation:
            yield from _composer(data, conversation, "C", db.path, folder, state, cid=cid)
        elif isinstance(headers, list) and headers:
            bubbles = _bubbles(conn, cid, where, state.skips)
            ordered: list[Any] = []
            named: set[str] = set()
            lost: list[tuple[str, str]] = []
            for h in headers:
                bid = h.get("bubbleId") if isinstance(h, dict) else None
                if not isinstance(bid, str):
                    continue
                named.add(bid)
                if bid in bubbles:
                    ordered.append(bubbles[bid])
                else:
                    lost.append((f"{where}:{bid}", "missing bubble"))
            lost += [(f"{where}:{b}", "orphan bubble") for b in sorted(set(bubbles) - named)]
            yield from _composer(data, ordered, "D", db.path, folder, state, cid=cid, lost=lost)
        elif not (isinstance(conversation, list) or isinstance(headers, list)):
            state.skips.skip(TOOL, where, "unknown shape")


def _bubbles(conn: ReadOnlyDb, cid: str, where: str, skips: SkipLog) -> dict[str, Any]:
    prefix = f"bubbleId:{cid}:"
    out: dict[str, Any] = {}
    for key, raw in conn.prefixed("cursorDiskKV", prefix):
        bid = str(key)[len(prefix) :]
        value = _value(raw, f"{where}:{bid}", skips)
        if isinstance(value, dict):
            out[bid] = value
    return out


def _composer(
    data: dict[str, Any],
    conversation: list[Any],
    generation: str,
    origin: Path,
    folder: str | None,
    state: _State,
    *,
    cid: str | None = None,
    lost: Sequence[tuple[str, str]] = (),
) -> Iterator[Conversation]:
    """One composer's conversation; ``lost`` (where, reason) is counted only if it is kept."""
    cid = cid or str(data.get("composerId"))
    where = f"{origin}#composerData:{cid}"
    if cid in state.seen:
        return
    header = state.composer_header.get(cid, {})
    root = state.scope.root
    composer_start = to_epoch(data.get("createdAt")) or to_epoch(header.get("createdAt"))
    context_files = _context_files(data.get("context"))
    messages: list[ChatMessage] = []
    mentioned: list[str] = list(context_files)
    for bubble in conversation:
        if not isinstance(bubble, dict):
            continue
        version = bubble.get("_v")
        if version is not None and version not in KNOWN_VERSIONS:
            state.skips.skip(TOOL, f"{where}:{bubble.get('bubbleId')}", "unknown version")
        files = _bubble_files(bubble)
        mentioned.extend(files)
        messages.extend(_bubble_messages(bubble, files, composer_start, root, where, state))
    if messages and context_files:
        first = messages[0]
        messages[0] = ChatMessage(
            idx=0,
            role=first.role,
            text=first.text,
            at=first.at,
            code_blocks=first.code_blocks,
            files=unique_files([*first.files, *context_files], root),
            metadata=first.metadata,
        )
    workspace = folder if folder is not None else _infer_workspace(mentioned, root)
    if not state.scope.wants_workspace(workspace, where):
        return
    for lost_where, reason in lost:
        state.skips.skip(TOOL, lost_where, reason)
    if not messages:
        state.skips.skip(TOOL, where, "no messages")
        return
    msgs = numbered(messages)
    start, end = span(msgs, composer_start, to_epoch(data.get("lastUpdatedAt")))
    if not state.scope.recent(end, where):
        return
    state.seen.add(cid)
    name = data.get("name") or header.get("name")
    meta: dict[str, Any] = {"generation": generation}
    if data.get("_v") is not None:
        meta["version"] = data.get("_v")
    summary = data.get("latestConversationSummary")
    if isinstance(summary, dict) and isinstance(summary.get("summary"), dict):
        text = summary["summary"].get("summary")
        if isinstance(text, str) and text:
            meta["summary"] = text
    if folder is None and workspace is not None:
        meta["workspace_inferred"] = True
    yield Conversation(
        tool=TOOL,
        external_id=cid,
        messages=msgs,
        title=name if isinstance(name, str) and name else None,
        workspace=workspace,
        started_at=start,
        ended_at=end,
        origin=str(origin),
        metadata=meta,
    )


def _bubble_messages(
    bubble: dict[str, Any],
    files: list[str],
    composer_start: float | None,
    root: Path | None,
    where: str,
    state: _State,
) -> list[ChatMessage]:
    kind = bubble.get("type")
    if kind not in (1, 2):
        state.skips.skip(TOOL, f"{where}:{bubble.get('bubbleId')}", "unknown bubble type")
        return []
    role: Role = "user" if kind == 1 else "assistant"
    at, source = _bubble_time(bubble, composer_start)
    meta: dict[str, Any] = {}
    if isinstance(bubble.get("bubbleId"), str):
        meta["bubbleId"] = bubble["bubbleId"]
    if source == "composer":
        meta["time_source"] = "composer"
    text = t if isinstance(t := bubble.get("text"), str) else ""
    if not text.strip():
        text = lexical_text(bubble.get("richText"))
    blocks = merge_code_blocks(
        fenced_code_blocks(text),
        _listed_blocks(bubble.get("suggestedCodeBlocks"), "code", root),
        _listed_blocks(bubble.get("codeBlocks"), "content", root),
    )
    out: list[ChatMessage] = []
    if text.strip() or blocks:
        out.append(
            ChatMessage(
                idx=0,
                role=role,
                text=text,
                at=at,
                code_blocks=blocks,
                files=unique_files(files, root),
                metadata=meta,
            )
        )
    tool = bubble.get("toolFormerData")
    if isinstance(tool, dict) and (tool.get("name") or tool.get("params")):
        name = str(tool.get("name") or "unknown")
        body = tool_call_text(name, _maybe_json(tool.get("params")))
        if tool.get("result") not in (None, ""):
            body = f"{body}\n{tool_result_text(_maybe_json(tool.get('result')))}"
        out.append(
            ChatMessage(
                idx=0,
                role="tool",
                text=body,
                at=at,
                files=unique_files(files_in_params(tool.get("params")), root),
                metadata={**meta, "tool": name, "kind": "call"},
            )
        )
    return out


def _relative(path: str | None, root: Path | None) -> str | None:
    return relative_file(path, root) if path else None


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _bubble_time(bubble: dict[str, Any], composer_start: float | None) -> tuple[float | None, str]:
    at = to_epoch(bubble.get("createdAt"))
    if at is not None:
        return at, "bubble"
    timing = bubble.get("timingInfo")
    if isinstance(timing, dict):
        for key in ("clientStartTime", "clientRpcSendTime", "clientSettleTime", "clientEndTime"):
            at = to_epoch(timing.get(key))
            if at is not None:
                return at, "timing"
    return composer_start, "composer"


def _listed_blocks(items: Any, code_key: str, root: Path | None) -> list[CodeBlock]:
    out: list[CodeBlock] = []
    for b in items if isinstance(items, list) else []:
        if not isinstance(b, dict):
            continue
        code = b.get(code_key)
        if not isinstance(code, str):
            code = b.get("code") if isinstance(b.get("code"), str) else b.get("content")
        if not isinstance(code, str) or not code.strip():
            continue
        lang = b.get("language") or b.get("languageId")
        name = b.get("filename") or b.get("fileName") or path_from_uri(b.get("uri"))
        out.append(
            CodeBlock(
                code=code,
                language=lang if isinstance(lang, str) and lang else None,
                filename=_relative(name, root) if isinstance(name, str) else None,
            )
        )
    return out


def _context_files(context: Any) -> list[str]:
    if not isinstance(context, dict):
        return []
    out: list[str] = []
    for key in ("fileSelections", "selections", "folderSelections"):
        for s in as_list(context.get(key)):
            p = path_from_uri(s.get("uri")) if isinstance(s, dict) else None
            if p:
                out.append(p)
    return out


def _bubble_files(bubble: dict[str, Any]) -> list[str]:
    """Files a bubble mentions: relevant files, attached chunks, selections, its context."""
    out: list[str] = []
    for f in as_list(bubble.get("relevantFiles")):
        p = path_from_uri(f)
        if p:
            out.append(p)
    for key in ("attachedFileCodeChunksUris", "fileSelections", "selections"):
        for item in as_list(bubble.get(key)):
            if isinstance(item, dict) and "uri" in item:
                item = item["uri"]
            p = path_from_uri(item)
            if p:
                out.append(p)
    out.extend(_context_files(bubble.get("context")))
    return out


def _infer_workspace(files: Sequence[str], root: Path | None) -> str | None:
    """The project of a composer no workspace lists, from the files it mentions.

    Absolute paths decide: the root when one is inside it, else the git root (or common
    folder) of the first one. Only when there are none, a relative path that exists under
    the root stands for it.
    """
    absolute = [f for f in files if f.startswith("/") or _DRIVE.match(f)]
    if absolute:
        if root is not None and any(workspace_matches(f, root) for f in absolute):
            return str(root)
        return _project_of(absolute)
    if root is not None and any((root / f).is_file() for f in files):
        return str(root)
    return None


_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def _project_of(files: Sequence[str]) -> str | None:
    """The git root above the first file, else the folder the files share."""
    first = Path(files[0])
    found = git_root(first.parent) if first.parent.is_dir() else None
    if found is not None:
        return str(found)
    try:
        common = os.path.commonpath([os.path.dirname(f) for f in files])
    except ValueError:
        return None
    return common if common not in ("", "/") else None
