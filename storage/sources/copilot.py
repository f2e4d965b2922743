"""VS Code Copilot Chat sessions: ``chatSessions/<sessionId>.json`` or ``.jsonl`` (FORMATS.md).

A ``.json`` file is one session object; a ``.jsonl`` file is VS Code's object mutation log,
replayed here the way ``objectMutationLog.ts`` reads it (0 whole state, 1 set at path, 2 push
after truncating to ``i``, 3 delete). A session's project is the folder in the
``workspace.json`` of its ``workspaceStorage/<hash>`` folder; empty-window sessions
(``globalStorage/emptyWindowChatSessions``) have none and are read only for every workspace.

Each request gives a user message (its text, with attached files from ``variableData``) and an
assistant message from the markdown response parts; ``inlineReference`` parts are written into
the text as the file name in backticks and listed in ``files``. Tool invocations become
``role="tool"`` messages between the assistant text before and after them. The reply's time is
the request's plus ``result.timings.totalElapsed`` when known, else the request's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from storage.sources.chats import (
    MAX_LOG_BYTES,
    Scope,
    as_text,
    clip,
    editor_user_dir,
    fenced_code_blocks,
    json_lines,
    numbered,
    parse_json,
    path_from_uri,
    read_text,
    relative_file,
    span,
    to_epoch,
    unique_files,
)
from storage.sources.records import MAX_FILE_BYTES, ChatMessage, Conversation, SkipLog

TOOL: Final = "copilot"
APPS = ("Code", "Code - Insiders", "VSCodium")
KNOWN_VERSIONS = (1, 2, 3)
EMPTY_WINDOW = "emptyWindowChatSessions"


def default_locations(home: Path | None = None, platform: str | None = None) -> list[Path]:
    """The ``User`` folders of VS Code, VS Code Insiders and VSCodium."""
    return [editor_user_dir(app, home, platform) for app in APPS]


def session_files(locations: Sequence[Path]) -> list[Path]:
    """Session files in ``locations``: files, ``chatSessions`` folders, ``User`` folders, …

    A ``.jsonl`` log hides a ``.json`` of the same session beside it (VS Code migrated it).
    """
    found: dict[str, Path] = {}
    for loc in locations:
        if loc.is_file():
            found.setdefault(str(loc), loc)
            continue
        if not loc.is_dir():
            continue
        if loc.name in ("chatSessions", EMPTY_WINDOW):
            dirs = [loc]
        else:
            dirs = [
                *loc.glob("chatSessions"),
                *loc.glob("*/chatSessions"),
                *loc.glob("workspaceStorage/*/chatSessions"),
                *loc.glob(f"globalStorage/{EMPTY_WINDOW}"),
                *loc.glob(EMPTY_WINDOW),
            ]
        for d in dirs:
            for p in [*d.glob("*.jsonl"), *d.glob("*.json")]:
                if p.is_file():
                    found.setdefault(str(p), p)
    out = [
        p
        for p in found.values()
        if not (p.suffix == ".json" and str(p.with_suffix(".jsonl")) in found)
    ]
    return sorted(out)


def _folder(path: Path, skips: SkipLog) -> str | None:
    if path.parent.name != "chatSessions":
        return None
    meta = path.parent.parent / "workspace.json"
    if not meta.is_file():
        return None
    try:
        raw = meta.read_bytes()[:MAX_FILE_BYTES]
    except OSError:
        skips.skip(TOOL, str(meta), "unreadable file")
        return None
    data = parse_json(raw, TOOL, str(meta), skips)
    return path_from_uri(data.get("folder")) if isinstance(data, dict) else None


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
    """Copilot Chat conversations of ``root`` (every project's when ``root`` is None or
    ``all_workspaces``) from ``paths`` (session files or folders) or VS Code's folders."""
    scope = Scope(TOOL, root, all_workspaces, since, skips)
    locations = list(paths) if paths is not None else default_locations(home, platform)
    for path in session_files(locations):
        where = str(path)
        empty_window = path.parent.name == EMPTY_WINDOW
        folder = _folder(path, skips)
        if empty_window and not scope.every_workspace:
            skips.skip(TOOL, where, "not this workspace")
            continue
        if folder is not None and not scope.wants_workspace(folder, where):
            continue
        if scope.file_is_stale(path):
            continue
        text = read_text(path, TOOL, skips, limit=MAX_LOG_BYTES)
        if text is None:
            continue
        if not text.strip():
            skips.skip(TOOL, where, "empty file")
            continue
        if path.suffix == ".jsonl":
            session = replay(text, TOOL, where, skips)
        else:
            session = parse_json(text, TOOL, where, skips)
        if not isinstance(session, dict):
            if session is not None:
                skips.skip(TOOL, where, "unknown shape")
            continue
        conv = _conversation(session, path, folder, root, skips)
        if conv is None:
            continue
        if scope.keeps(conv):
            yield conv


# ---------------------------------------------------------------- mutation log


def replay(text: str, tool: str, where: str, skips: SkipLog) -> Any:
    """The state a VS Code object mutation log describes (None when it has no initial state).

    An entry that does not fit the state is ``invalid mutation``; an unknown kind is
    ``unknown mutation``; both are counted and the replay goes on.
    """
    state: Any = None
    for n, entry in enumerate(json_lines(text, tool, where, skips)):
        kind = entry.get("kind")
        path = entry.get("k") or []
        value = entry.get("v")
        try:
            if kind == 0:
                state = value
            elif kind not in (1, 2, 3):
                skips.skip(tool, f"{where}#{n}", "unknown mutation")
            elif state is None or not isinstance(path, list):
                skips.skip(tool, f"{where}#{n}", "invalid mutation")
            elif kind == 1:
                state = _set(state, path, value)
            elif kind == 2:
                _push(state, path, value, entry.get("i"))
            else:
                _delete(state, path)
        except (KeyError, IndexError, TypeError, ValueError):
            skips.skip(tool, f"{where}#{n}", "invalid mutation")
    return state


def _walk(state: Any, path: list[Any]) -> Any:
    current = state
    for key in path:
        current = current[key]
    return current


def _set(state: Any, path: list[Any], value: Any) -> Any:
    if not path:
        return value
    _walk(state, path[:-1])[path[-1]] = value
    return state


def _push(state: Any, path: list[Any], values: Any, start: Any) -> None:
    if not path:
        raise ValueError("push needs a path")
    parent = _walk(state, path[:-1])
    key = path[-1]
    current = parent.get(key) if isinstance(parent, dict) else parent[key]
    arr = current if isinstance(current, list) else []
    if isinstance(start, int) and start >= 0:
        del arr[start:]
    if isinstance(values, list):
        arr.extend(values)
    elif values is not None:
        raise TypeError("push value is not a list")
    parent[key] = arr


def _delete(state: Any, path: list[Any]) -> None:
    if not path:
        raise ValueError("delete needs a path")
    parent = _walk(state, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = None


# ---------------------------------------------------------------- sessions


def _conversation(
    session: dict[str, Any], path: Path, folder: str | None, root: Path | None, skips: SkipLog
) -> Conversation | None:
    where = str(path)
    version = session.get("version")
    if version is not None and version not in KNOWN_VERSIONS:
        skips.skip(TOOL, where, "unknown version")
    requests = session.get("requests")
    if not isinstance(requests, list):
        skips.skip(TOOL, where, "unknown shape")
        return None
    messages: list[ChatMessage] = []
    for req in requests:
        if isinstance(req, dict):
            messages.extend(_request_messages(req, root))
    if not messages:
        skips.skip(TOOL, where, "no messages")
        return None
    msgs = numbered(messages)
    created = to_epoch(session.get("creationDate"))
    start, end = span(msgs, created, to_epoch(session.get("lastMessageDate")))
    title = session.get("customTitle")
    sid = session.get("sessionId")
    meta: dict[str, Any] = {"format": path.suffix.lstrip(".")}
    if version is not None:
        meta["version"] = version
    return Conversation(
        tool=TOOL,
        external_id=sid if isinstance(sid, str) and sid else path.stem,
        messages=msgs,
        title=title if isinstance(title, str) and title else None,
        workspace=folder,
        started_at=start,
        ended_at=end,
        origin=where,
        metadata=meta,
    )


def _request_messages(req: dict[str, Any], root: Path | None) -> list[ChatMessage]:
    at = to_epoch(req.get("timestamp"))
    message = req.get("message")
    text = message if isinstance(message, str) else as_text(message)
    meta: dict[str, Any] = {}
    if isinstance(req.get("requestId"), str):
        meta["requestId"] = req["requestId"]
    out: list[ChatMessage] = []
    if text.strip():
        out.append(
            ChatMessage(
                idx=0,
                role="user",
                text=text,
                at=at,
                code_blocks=fenced_code_blocks(text),
                files=unique_files(_variable_files(req.get("variableData")), root),
                metadata=dict(meta),
            )
        )
    reply_at = at
    result = req.get("result")
    timings = result.get("timings") if isinstance(result, dict) else None
    if at is not None and isinstance(timings, dict):
        elapsed = timings.get("totalElapsed")
        if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and elapsed >= 0:
            reply_at = at + elapsed / 1000.0
    if isinstance(req.get("modelId"), str):
        meta["model"] = req["modelId"]
    out.extend(_response_messages(req.get("response"), req, reply_at, root, meta))
    return out


def _response_messages(
    parts: Any, req: dict[str, Any], at: float | None, root: Path | None, meta: dict[str, Any]
) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    text: list[str] = []
    files: list[str] = list(_reference_files(req.get("contentReferences")))

    def flush() -> None:
        body = "".join(text).strip()
        if body:
            out.append(
                ChatMessage(
                    idx=0,
                    role="assistant",
                    text=body,
                    at=at,
                    code_blocks=fenced_code_blocks(body),
                    files=unique_files(files, root),
                    metadata=dict(meta),
                )
            )
        text.clear()
        files.clear()

    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            text.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("kind")
        if kind is None or kind in ("markdownContent", "markdownVuln"):
            text.append(as_text(part.get("content")) if kind else as_text(part))
        elif kind == "inlineReference":
            ref = part.get("inlineReference")
            p = _reference_path(ref)
            if p:
                files.append(p)
                name = part.get("name") if isinstance(part.get("name"), str) else None
                text.append(f"`{name or relative_file(p, root)}`")
        elif kind in ("codeblockUri", "textEditGroup", "notebookEditGroup"):
            p = path_from_uri(part.get("uri"))
            if p:
                files.append(p)
        elif kind in ("toolInvocation", "toolInvocationSerialized"):
            flush()
            out.append(_tool_message(part, at, root, meta))
    flush()
    return out


def _tool_message(
    part: dict[str, Any], at: float | None, root: Path | None, meta: dict[str, Any]
) -> ChatMessage:
    name = part.get("toolId") if isinstance(part.get("toolId"), str) else "unknown"
    said = as_text(part.get("pastTenseMessage")) or as_text(part.get("invocationMessage"))
    data = part.get("toolSpecificData")
    files: list[str] = []
    if isinstance(data, dict):
        command = data.get("commandLine") or data.get("command")
        if isinstance(command, dict):
            command = command.get("original") or command.get("toolEdited")
        if isinstance(command, str) and command:
            said = f"{said} $ {command}".strip()
    for key in ("invocationMessage", "pastTenseMessage"):
        v = part.get(key)
        if isinstance(v, dict):
            uris = v.get("uris")
            for uri in uris.values() if isinstance(uris, dict) else ():
                p = path_from_uri(uri)
                if p:
                    files.append(p)
    return ChatMessage(
        idx=0,
        role="tool",
        text=clip(f"[tool: {name}] {said}".rstrip()),
        at=at,
        files=unique_files(files, root),
        metadata={**meta, "tool": name, "kind": "call"},
    )


def _reference_path(ref: Any) -> str | None:
    if isinstance(ref, dict) and isinstance(ref.get("uri"), dict) and "range" in ref:
        return path_from_uri(ref["uri"])  # a location: {uri, range}
    return path_from_uri(ref)


def _reference_files(refs: Any) -> list[str]:
    out: list[str] = []
    for r in refs if isinstance(refs, list) else []:
        ref = r.get("reference") if isinstance(r, dict) else None
        p = _reference_path(ref)
        if p:
            out.append(p)
    return out


def _variable_files(data: Any) -> list[str]:
    variables = data.get("variables") if isinstance(data, dict) else None
    out: list[str] = []
    for v in variables if isinstance(variables, list) else []:
        if not isinstance(v, dict):
            continue
        value = v.get("value")
        p = None
        if isinstance(value, dict):
            p = _reference_path(value)
        elif isinstance(value, str) and v.get("kind") in ("file", "directory"):
            p = path_from_uri(value)
        if p:
            out.append(p)
    return out
