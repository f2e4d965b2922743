"""Claude Code sessions: ``~/.claude/projects/<encoded cwd>/<sessionId>.jsonl`` (FORMATS.md).

The project folder name is the session's ``cwd`` with every character other than a letter or
digit replaced by ``-``; it only narrows the search, since that encoding is lossy: each
record's ``cwd`` decides (a session belongs to the root when one of its ``cwd`` values is the
root or a folder inside it).

Records form a tree through ``parentUuid`` (and ``logicalParentUuid`` across a compaction).
The conversation is the chain from the latest leaf back to the root; side chains
(``isSidechain``, and ``agent-*.jsonl`` sub-agent files, counted as ``sidechain``) and
injected ``isMeta`` records are left out. Streamed assistant lines that share ``message.id``
are merged. Text blocks make ``user`` / ``assistant`` messages; ``thinking`` blocks are
not messages (their lines naming files are the conversation's ``thoughts``); ``tool_use``
blocks become ``role="tool"`` messages ``[tool: name] {input}`` (with the files the input
names, and the written code of ``Write`` / ``Edit`` as code blocks) and ``tool_result``
blocks ``role="tool"`` messages ``[result] …``. A ``summary`` record whose ``leafUuid`` is in
the file titles the session.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from storage.sources.chats import (
    MAX_LOG_BYTES,
    MAX_THOUGHT_LINES,
    Scope,
    as_list,
    as_text,
    fenced_code_blocks,
    file_lines,
    files_in_params,
    files_under,
    home_dir,
    json_lines,
    merge_code_blocks,
    numbered,
    read_text,
    relative_file,
    span,
    to_epoch,
    tool_call_text,
    tool_result_text,
    unique_files,
    workspace_matches,
)
from storage.sources.records import ChatMessage, CodeBlock, Conversation, SkipLog

TOOL = "claude"
_MESSAGE_TYPES = ("user", "assistant")
_SYSTEM_PREFIXES = ("<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>")


def default_locations(home: Path | None = None, platform: str | None = None) -> list[Path]:
    """``$CLAUDE_CONFIG_DIR/projects`` (own home only), ``~/.claude/projects`` and
    ``~/.config/claude/projects``."""
    base = home_dir(home)
    out = []
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    if home is None and env:
        out.append(Path(env) / "projects")
    out += [base / ".claude" / "projects", base / ".config" / "claude" / "projects"]
    return out


def encode_project(path: str) -> str:
    """The folder name Claude Code uses for a working directory."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def _encoded_roots(root: Path) -> set[str]:
    forms = {str(root)}
    with contextlib.suppress(OSError):
        forms.add(str(root.resolve()))
    return {encode_project(f) for f in forms}


def _dir_may_match(name: str, encoded: set[str]) -> bool:
    n = encode_project(name)
    return any(n == e or n.startswith(e + "-") for e in encoded)


def _looks_encoded(name: str) -> bool:
    return name.startswith("-") or bool(re.match(r"^[A-Za-z]--", name))


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
    """Claude Code conversations of ``root`` (every project's when ``root`` is None or
    ``all_workspaces``) from ``paths`` (session files, project folders, the ``projects``
    folder) or the default folders."""
    scope = Scope(TOOL, root, all_workspaces, since, skips)
    locations = list(paths) if paths is not None else default_locations(home, platform)
    encoded = _encoded_roots(root) if root is not None else set()
    for path in files_under(locations, ("*.jsonl", "*/*.jsonl")):
        where = str(path)
        if path.stem.startswith("agent-"):
            skips.skip(TOOL, where, "sidechain")
            continue
        folder = path.parent.name
        if (
            not scope.every_workspace
            and _looks_encoded(folder)
            and not _dir_may_match(folder, encoded)
        ):
            skips.skip(TOOL, where, "not this workspace")
            continue
        if scope.file_is_stale(path):
            continue
        text = read_text(path, TOOL, skips, limit=MAX_LOG_BYTES)
        if text is None:
            continue
        conv = _conversation(text, path, root, encoded, skips)
        if conv is not None and scope.keeps(conv):
            yield conv


def _conversation(
    text: str, path: Path, root: Path | None, encoded: set[str], skips: SkipLog
) -> Conversation | None:
    where = str(path)
    records = list(json_lines(text, TOOL, where, skips))
    nodes: dict[str, dict[str, Any]] = {}
    children: set[str] = set()
    candidates: list[tuple[int, dict[str, Any]]] = []
    summaries: list[tuple[str, str]] = []
    for n, r in enumerate(records):
        kind = r.get("type")
        if kind == "summary":
            if isinstance(r.get("summary"), str) and isinstance(r.get("leafUuid"), str):
                summaries.append((r["leafUuid"], r["summary"]))
            continue
        uuid = r.get("uuid")
        if isinstance(uuid, str):
            nodes[uuid] = r
        if kind in _MESSAGE_TYPES and not r.get("isSidechain"):
            candidates.append((n, r))
            parent = r.get("parentUuid")
            if isinstance(parent, str):
                children.add(parent)
    if not candidates:
        skips.skip(TOOL, where, "no messages")
        return None
    chain = _main_chain(candidates, nodes, children)
    messages = _messages(chain, root)
    if not messages:
        skips.skip(TOOL, where, "no messages")
        return None
    msgs = numbered(messages)
    start, end = span(msgs, *(to_epoch(r.get("timestamp")) for r in chain))
    cwds = [r["cwd"] for r in chain if isinstance(r.get("cwd"), str) and r["cwd"]]
    workspace = cwds[0] if cwds else None
    if root is not None and cwds and not workspace_matches(cwds[0], root):
        workspace = next((c for c in cwds if workspace_matches(c, root)), cwds[0])
    if workspace is None and root is not None and path.parent.name in encoded:
        workspace = str(root)
    branches = [r["gitBranch"] for r in chain if isinstance(r.get("gitBranch"), str)]
    branch = next((b for b in reversed(branches) if b), None)
    chain_ids = {r.get("uuid") for r in chain}
    title = next((s for leaf, s in reversed(summaries) if leaf in chain_ids), None)
    title = title or next((s for leaf, s in reversed(summaries) if leaf in nodes), None)
    sid = next((r["sessionId"] for r in chain if isinstance(r.get("sessionId"), str)), None)
    meta: dict[str, Any] = {}
    versions = [r["version"] for r in chain if isinstance(r.get("version"), str)]
    if versions:
        meta["version"] = versions[-1]
    thoughts = [
        line
        for r in chain
        if isinstance(r.get("message"), dict) and r.get("type") == "assistant"
        for b in _blocks(r["message"].get("content"))
        if b.get("type") == "thinking" and isinstance(b.get("thinking"), str)
        for line in file_lines(b["thinking"])
    ]
    return Conversation(
        tool=TOOL,
        external_id=sid or path.stem,
        messages=msgs,
        title=title,
        workspace=workspace,
        branch=branch,
        started_at=start,
        ended_at=end,
        origin=where,
        metadata=meta,
        thoughts=tuple(thoughts[:MAX_THOUGHT_LINES]),
    )


def _main_chain(
    candidates: list[tuple[int, dict[str, Any]]],
    nodes: dict[str, dict[str, Any]],
    children: set[str],
) -> list[dict[str, Any]]:
    """The records from the root to the latest leaf (file order when there are no uuids)."""
    if not any(isinstance(r.get("uuid"), str) for _, r in candidates):
        return [r for _, r in candidates]
    leaves = [(n, r) for n, r in candidates if r.get("uuid") not in children]
    if not leaves:
        leaves = candidates

    def key(item: tuple[int, dict[str, Any]]) -> tuple[float, int]:
        t = to_epoch(item[1].get("timestamp"))
        return (t if t is not None else float("-inf"), item[0])

    _, leaf = max(leaves, key=key)
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: dict[str, Any] | None = leaf
    while current is not None:
        uuid = current.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                break
            seen.add(uuid)
        chain.append(current)
        parent = current.get("parentUuid") or current.get("logicalParentUuid")
        current = nodes.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return [r for r in chain if r.get("type") in _MESSAGE_TYPES and not r.get("isSidechain")]


def _messages(chain: list[dict[str, Any]], root: Path | None) -> list[ChatMessage]:
    """Messages of the chain, merging consecutive assistant lines of one ``message.id``."""
    out: list[ChatMessage] = []
    i = 0
    while i < len(chain):
        record = chain[i]
        message = record.get("message")
        if not isinstance(message, dict):
            i += 1
            continue
        blocks = _blocks(message.get("content"))
        mid = message.get("id")
        j = i + 1
        if record.get("type") == "assistant" and isinstance(mid, str):
            while j < len(chain):
                nxt = chain[j].get("message")
                if chain[j].get("type") != "assistant" or not isinstance(nxt, dict):
                    break
                if nxt.get("id") != mid:
                    break
                blocks += _blocks(nxt.get("content"))
                j += 1
        if not record.get("isMeta"):
            out.extend(_record_messages(record, message, blocks, root))
        i = j
    return out


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _record_messages(
    record: dict[str, Any], message: dict[str, Any], blocks: list[dict[str, Any]], root: Path | None
) -> list[ChatMessage]:
    at = to_epoch(record.get("timestamp"))
    role = "assistant" if record.get("type") == "assistant" else "user"
    meta: dict[str, Any] = {}
    if isinstance(record.get("uuid"), str):
        meta["uuid"] = record["uuid"]
    if role == "assistant" and isinstance(message.get("model"), str):
        meta["model"] = message["model"]
    out: list[ChatMessage] = []
    text: list[str] = []

    def flush() -> None:
        body = "\n\n".join(t for t in text if t.strip()).strip()
        text.clear()
        if not body:
            return
        kind = role
        if role == "user" and body.startswith(_SYSTEM_PREFIXES):
            kind = "system"
        out.append(
            ChatMessage(
                idx=0,
                role=kind,
                text=body,
                at=at,
                code_blocks=fenced_code_blocks(body),
                metadata=dict(meta),
            )
        )

    for b in blocks:
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            text.append(b["text"])
        elif kind == "tool_use":
            flush()
            name = b.get("name") if isinstance(b.get("name"), str) else "unknown"
            params = b.get("input")
            files = files_in_params(params)
            out.append(
                ChatMessage(
                    idx=0,
                    role="tool",
                    text=tool_call_text(name, params),
                    at=at,
                    code_blocks=_written_code(params, root),
                    files=unique_files(files, root),
                    metadata={**meta, "tool": name, "kind": "call", "tool_use_id": b.get("id")},
                )
            )
        elif kind == "tool_result":
            flush()
            result_meta = {**meta, "kind": "result", "tool_use_id": b.get("tool_use_id")}
            if b.get("is_error"):
                result_meta["is_error"] = True
            out.append(
                ChatMessage(
                    idx=0,
                    role="tool",
                    text=tool_result_text(_result_content(b.get("content"))),
                    at=at,
                    metadata=result_meta,
                )
            )
    flush()
    return out


def _result_content(content: Any) -> Any:
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict) and c.get("type") == "image":
                parts.append("[image]")
            else:
                parts.append(as_text(c))
        return "\n".join(p for p in parts if p)
    return content


def _written_code(params: Any, root: Path | None) -> tuple[CodeBlock, ...]:
    """What a ``Write`` / ``Edit`` / ``MultiEdit`` call puts into a file, as code blocks."""
    if not isinstance(params, dict):
        return ()
    target = params.get("file_path") or params.get("notebook_path")
    name = relative_file(target, root) if isinstance(target, str) else None
    pieces = [params.get("content"), params.get("new_string"), params.get("new_source")]
    for edit in as_list(params.get("edits")):
        if isinstance(edit, dict):
            pieces.append(edit.get("new_string"))
    blocks = [CodeBlock(code=p, filename=name) for p in pieces if isinstance(p, str) and p.strip()]
    return merge_code_blocks(blocks)
