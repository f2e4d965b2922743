"""Learning a conversation while it happens, from what an agent's hooks report.

A conversation whose tool keeps a transcript (Claude Code, Codex) is read from it through the
same reader, extraction, redaction and provenance as ``ingest chats``, under the same
``(tool, session id)`` key, so the live capture and a later ingestion are one conversation.
Each capture learns only the messages that are new since the last one (the turn that was
still open then is read again): the file is parsed again, but redaction, extraction and
embedding, the costly parts, cover the new messages only.
A tool that hands over no transcript (Cursor) reports its turns one by one; they are kept
until the turn ends and then learned as that tool's conversation of the same id.

What was injected into the conversation is judged once the agent has answered: a memory it
cites (by ``#id``) or whose file it then edits counts as a citation, any other as ignored.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from predictive.hook_state import HookState, load, save
from predictive.operations.errors import ArgumentError
from predictive.operations.results import Result
from storage import AccessKind, AnchorType, MemoryStore, NotFound, StoreError
from storage.redact import redact
from storage.sources.chats import numbered
from storage.sources.records import (
    ChatMessage,
    Conversation,
    SkipLog,
    strip_injected,
    without_injected,
)

log = logging.getLogger(__name__)

TRANSCRIPT_TOOLS = ("claude", "codex")
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "edit"})
SETTLE_STEP = 0.2  # seconds between two looks at a transcript that may still be growing


@dataclass(frozen=True)
class Captured(Result):
    """What a capture did."""

    captured: bool
    reason: str  # "learned" | "unchanged" | "no transcript" | "nothing to learn"
    messages: int = 0
    added: int = 0
    cited: tuple[int, ...] = ()
    ignored: tuple[int, ...] = ()


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def _settled(path: Path, wait: float) -> str:
    """The transcript's stamp once it stopped growing (the agent may still be writing it),
    waiting at most ``wait`` seconds."""
    stamp = _stamp(path)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(SETTLE_STEP)
        again = _stamp(path)
        if again == stamp:
            break
        stamp = again
    return stamp


def note_files(store: MemoryStore, tool: str, conversation: str, files: Sequence[str]) -> None:
    """Tie a live conversation to the files it worked on."""
    if not files:
        return
    state = load(store, tool, conversation)
    state.worked_on(list(files))
    save(store, tool, conversation, state)


def note_injected(
    store: MemoryStore, tool: str, conversation: str, ids: Sequence[int], at: float
) -> None:
    """Remember what was handed to a conversation, to be judged once the agent answered."""
    if not ids:
        return
    state = load(store, tool, conversation)
    state.injected.append({"ids": list(ids), "at": at})
    save(store, tool, conversation, state)


def note_turn(
    store: MemoryStore,
    tool: str,
    conversation: str,
    role: str,
    text: str,
    *,
    files: Sequence[str] = (),
    at: float | None = None,
) -> None:
    """Keep one turn of a conversation whose tool hands over no transcript."""
    state = load(store, tool, conversation)
    if files:
        state.worked_on(list(files))
    text = redact(strip_injected(text))  # kept in the store: no secret goes in
    if text.strip() or files:
        state.add_turn({"role": role, "text": text, "at": at or time.time(), "files": list(files)})
    save(store, tool, conversation, state)


def _mark(conv: Conversation) -> str:
    """How much of ``conv`` is learned: its message count and a digest of its messages (so a
    transcript rewritten before that point is learned whole again; hashing is cheap next to
    redaction)."""
    msgs = without_injected(conv).messages
    if not msgs:
        return ""
    h = hashlib.sha256()
    for m in msgs:
        h.update(f"{m.idx}\0{m.role}\0{m.text}\0".encode("utf-8", "surrogatepass"))
    return f"{len(msgs)}:{h.hexdigest()[:16]}"


def _learned(conv: Conversation, mark: str) -> int:
    """How many of ``conv``'s messages the ``mark`` left by the last capture says are
    learned (0: learn it whole)."""
    count = mark.partition(":")[0]
    if not count.isdigit() or int(count) == 0:
        return 0
    n = int(count)
    msgs = without_injected(conv).messages
    if len(msgs) < n or _mark(replace(conv, messages=msgs[:n])) != mark:
        return 0
    return n


def _learn(store: MemoryStore, root: Path, convs: list[Conversation], state: HookState) -> int:
    """Learn ``convs`` (only what is new since ``state.learned``); update the mark."""
    from predictive.ingest import run

    learned = {}
    for c in convs:
        if (n := _learned(c, state.learned)) > 0:
            learned[f"{c.tool}:{c.external_id}"] = n
    summary = run(
        store,
        root=root,
        options={"sources": ["chats"]},
        conversations=convs,
        learned=learned,
    )
    return summary.added


def capture_transcript(
    store: MemoryStore,
    root: Path,
    tool: str,
    conversation: str,
    transcript: str | Path,
    *,
    settle: float = 0.0,
) -> Captured:
    """Learn what is new in a conversation's transcript since the last capture."""
    if tool not in TRANSCRIPT_TOOLS:
        raise ArgumentError("tool", f"{tool} keeps no transcript this reads ({TRANSCRIPT_TOOLS})")
    path = Path(transcript).expanduser()
    if not path.is_file():
        return Captured(False, "no transcript")
    stamp = _settled(path, settle) if settle > 0 else _stamp(path)
    state = load(store, tool, conversation)
    if state.transcript == stamp:
        return Captured(False, "unchanged")
    from storage.sources.chats import read_all

    convs = list(
        read_all(None, tools=(tool,), paths={tool: [path]}, all_workspaces=True, skips=SkipLog())
    )
    convs = [c for c in convs if c.external_id == conversation] or convs
    if not convs:
        return Captured(False, "nothing to learn")
    added = _learn(store, root, convs, state)
    state = load(store, tool, conversation)  # notes made meanwhile are kept
    state.transcript = stamp
    state.learned = _mark(convs[-1])
    cited, ignored = _judge(store, tool, conversation, state, convs)
    save(store, tool, conversation, state)
    return Captured(True, "learned", sum(len(c.messages) for c in convs), added, cited, ignored)


def _turns_conversation(
    tool: str, conversation: str, root: Path, turns: list[dict[str, Any]]
) -> Conversation | None:
    messages = []
    for t in turns:
        role = t.get("role")
        text = t.get("text")
        if role not in ("user", "assistant", "tool") or not isinstance(text, str):
            continue
        files = tuple(f for f in t.get("files") or () if isinstance(f, str))
        at = t.get("at") if isinstance(t.get("at"), int | float) else None
        meta = {"tool": "edit"} if role == "tool" and files else {}
        messages.append(ChatMessage(0, role, text, at=at, files=files, metadata=meta))
    if not messages:
        return None
    msgs = numbered(messages)
    times = [m.at for m in msgs if m.at is not None]
    return Conversation(
        tool=tool,  # type: ignore[arg-type]
        external_id=conversation,
        messages=msgs,
        workspace=str(root),
        started_at=min(times) if times else None,
        ended_at=max(times) if times else None,
        origin=f"{tool} hooks",
    )


def capture_turns(store: MemoryStore, root: Path, tool: str, conversation: str) -> Captured:
    """Learn a conversation from the turns its hooks reported (Cursor)."""
    state = load(store, tool, conversation)
    conv = _turns_conversation(tool, conversation, root, state.turns)
    if conv is None:
        return Captured(False, "nothing to learn")
    stamp = f"turns:{len(state.turns)}"
    if state.transcript == stamp:
        return Captured(False, "unchanged")
    added = _learn(store, root, [conv], state)
    state = load(store, tool, conversation)
    state.transcript = stamp
    state.learned = _mark(conv)
    cited, ignored = _judge(store, tool, conversation, state, [conv])
    save(store, tool, conversation, state)
    return Captured(True, "learned", len(conv.messages), added, cited, ignored)


def _judge(
    store: MemoryStore,
    tool: str,
    conversation: str,
    state: HookState,
    convs: list[Conversation],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Count each injected memory the agent has since answered with as cited or ignored;
    an injection with no answer after it yet (the transcript lags) waits."""
    messages = [m for c in convs for m in c.messages]
    cited: list[int] = []
    ignored: list[int] = []
    waiting = []
    for shot in state.injected:
        at = shot.get("at")
        after = [
            m
            for m in messages
            if m.role in ("assistant", "tool") and m.at is not None and m.at >= (at or 0)
        ]
        if not any(m.role == "assistant" for m in after):
            waiting.append(shot)
            continue
        said = "\n".join(m.text for m in after)
        touched = {f for m in after if m.metadata.get("tool") in EDIT_TOOLS for f in m.files}
        for mid in shot.get("ids") or ():
            if not isinstance(mid, int):
                continue
            try:
                m = store.get(mid)
            except NotFound:
                continue
            files = {a.value for a in m.anchors if a.type is AnchorType.FILE}
            used = f"#{mid}" in said or bool(files & touched)
            (cited if used else ignored).append(mid)
    state.injected = waiting
    context = f"hook {tool} {conversation}"
    try:
        for mid in cited:
            store.usage.record(mid, AccessKind.CITATION, context)
        for mid in ignored:
            store.usage.record(mid, AccessKind.IGNORE, context)
    except StoreError:
        log.warning("could not record how injected memories were used", exc_info=True)
    return tuple(cited), tuple(ignored)
