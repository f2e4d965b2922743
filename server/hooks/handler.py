"""One hook event: parse what the agent sent, run the operation, say what the agent expects.

Claude Code and Codex share one event vocabulary (``SessionStart``, ``UserPromptSubmit``,
``PostToolUse``, ``Stop``, …; answers in ``hookSpecificOutput.additionalContext``); Cursor has
its own (``sessionStart``, ``beforeSubmitPrompt``, ``afterFileEdit``, ``afterAgentResponse``,
``stop``; answers in snake_case). Codex's ``notify`` program gets ``agent-turn-complete``.
The work itself is in :mod:`predictive.operations.prompt` and
:mod:`predictive.operations.capture`; learning a turn is slow, so it is handed back as
background work that the caller runs after it has answered.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from predictive.operations import capture as cap
from predictive.operations import hook_state
from predictive.operations.prompt import PROMPT_BUDGET, BriefArgs, PromptArgs, record_served
from predictive.session import ProjectSession, find_root
from storage.paths import ENV_DB, default_db_path

if TYPE_CHECKING:
    from storage.embeddings import Embedder

log = logging.getLogger("living_memory.hooks")

CLIENTS = ("claude", "cursor", "codex")
ENV_BUDGET = "LIVING_MEMORY_HOOK_BUDGET"
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
CAPTURE_EVENTS = frozenset({"Stop", "SubagentStop", "SessionEnd", "PreCompact"})
CURSOR_CAPTURE = frozenset({"stop", "sessionEnd", "preCompact"})
SETTLE_SECONDS = 2.0  # a transcript may lag the event that reports its turn
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)


class BadEvent(ValueError):
    """The input is not an event this client sends; the message says why (for the log)."""


@dataclass(frozen=True)
class Event:
    client: str
    name: str
    payload: dict[str, Any]
    cwd: str | None = None  # the caller's working folder (when the event names none)
    db: str | None = None  # the caller's LIVING_MEMORY_DB, if set
    budget: int | None = None

    @property
    def conversation(self) -> str:
        p = self.payload
        key = "conversation_id" if self.client == "cursor" else "session_id"
        value = p.get(key) or p.get("thread-id") or p.get("session_id")
        if not isinstance(value, str) or not value.strip():
            raise BadEvent(f"no {key} in the {self.name} event")
        return value

    @property
    def folder(self) -> str | None:
        p = self.payload
        roots = p.get("workspace_roots")
        if isinstance(roots, list) and roots and isinstance(roots[0], str):
            return roots[0]
        cwd = p.get("cwd")
        return cwd if isinstance(cwd, str) and cwd else self.cwd


@dataclass
class Reply:
    """What to print on stdout, and the slow work to run once it is printed: ``after`` (the
    writes that record what was handed over, on the thread that answered) and ``background``
    (learning a turn)."""

    stdout: str = ""
    background: Event | None = None
    items: int = 0
    after: Callable[[], None] | None = None


def parse(client: str, name: str, raw: bytes | str, **where: Any) -> Event:
    """The event in ``raw`` (a JSON object); ``name`` is the event the command line names
    (the payload's ``hook_event_name`` wins when it has one)."""
    if client not in CLIENTS:
        raise BadEvent(f"unknown client {client!r}")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        raise BadEvent("empty input")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadEvent(f"input is not JSON ({e.msg} at {e.pos})") from None
    if not isinstance(payload, dict):
        raise BadEvent("input is not a JSON object")
    given = payload.get("hook_event_name") or payload.get("type")
    event_name = given if isinstance(given, str) and given else name
    return Event(client, event_name, payload, **where)


def _budget(e: Event) -> int:
    if e.budget:
        return e.budget
    env = os.environ.get(ENV_BUDGET, "")
    return int(env) if env.isdigit() and int(env) > 0 else PROMPT_BUDGET


def _relative(root: Path, path: str) -> str:
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return p.as_posix()


def _edited_files(tool_input: Any) -> list[str]:
    """The files an edit tool's input names (an ``apply_patch`` names them in its patch)."""
    if isinstance(tool_input, str):
        return _PATCH_FILE.findall(tool_input)
    if not isinstance(tool_input, dict):
        return []
    out = [
        v
        for k in ("file_path", "notebook_path", "path")
        if isinstance(v := tool_input.get(k), str) and v
    ]
    for k in ("command", "patch", "input"):
        v = tool_input.get(k)
        if isinstance(v, str):
            out += _PATCH_FILE.findall(v)
        elif isinstance(v, list):
            out += [f for x in v if isinstance(x, str) for f in _PATCH_FILE.findall(x)]
    return out


def _context(event_name: str, text: str) -> str:
    """Claude Code's (and Codex's) shape for context added at an event."""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}},
        ensure_ascii=False,
    )


@dataclass
class Sessions:
    """The project sessions a hook process keeps (one per project and database); a daemon
    keeps them warm between events."""

    sessions: dict[tuple[str, str], ProjectSession] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    embedder: Callable[[], Embedder] | None = None  # default: each session loads its own

    @staticmethod
    def where(e: Event) -> tuple[Path, Path]:
        """The project an event comes from and its database."""
        folder = e.folder
        root = find_root(folder) if folder and Path(folder).is_dir() else find_root()
        return root, Path(e.db) if e.db else default_db(root)

    def of(self, e: Event) -> ProjectSession:
        root, db = self.where(e)
        key = (str(root), str(db))
        with self.lock:
            s = self.sessions.get(key)
            if s is None:
                s = self.sessions[key] = ProjectSession.open(root, db, embedder=self.embedder)
            return s

    def close(self) -> None:
        with self.lock:
            for s in self.sessions.values():
                try:
                    s.close()
                except Exception:
                    log.warning("closing the memory of %s failed", s.root, exc_info=True)
            self.sessions.clear()


def default_db(root: Path) -> Path:
    """The project's database: ``default_db_path`` without the process's own
    ``LIVING_MEMORY_DB`` (the event carries the caller's)."""
    saved = os.environ.pop(ENV_DB, None)
    try:
        return default_db_path(root)
    finally:
        if saved is not None:
            os.environ[ENV_DB] = saved


def handle(e: Event, sessions: Sessions) -> Reply:
    """Answer one event (fast); the slow part comes back as ``Reply.background``."""
    if e.client == "cursor":
        return _cursor(e, sessions)
    return _claude(e, sessions)


def _claude(e: Event, sessions: Sessions) -> Reply:
    """Claude Code, and Codex (same events and output shape; its transcript is a rollout)."""
    name = e.name
    if name == "agent-turn-complete":  # Codex's notify program
        return Reply(background=e)
    if name not in {"SessionStart", "UserPromptSubmit", "PostToolUse"} | CAPTURE_EVENTS:
        return Reply()
    tool = e.client
    conversation = e.conversation
    session = sessions.of(e)
    if name == "SessionStart":
        if session.needs_first_run():  # the project's history is learned in the background
            return Reply(background=e)
        brief = session.brief(BriefArgs(tool=tool))
        return Reply(
            _context(name, brief.markdown) if brief.markdown else "", items=len(brief.items)
        )
    if name == "UserPromptSubmit":
        prompt = e.payload.get("prompt")
        if not isinstance(prompt, str):
            raise BadEvent("UserPromptSubmit without a prompt")
        answer = session.answer_prompt(
            PromptArgs(
                prompt, conversation=conversation, tool=tool, budget=_budget(e), record=False
            )
        )
        if not answer.markdown:
            return Reply()
        ids, at = answer.memory_ids, time.time()

        def record() -> None:  # once the agent has its answer
            record_served(session.store, ids, tool, conversation)
            cap.note_injected(session.store, tool, conversation, ids, at)

        return Reply(_context(name, answer.markdown), items=len(answer.items), after=record)
    if name == "PostToolUse":
        if e.payload.get("tool_name") in EDIT_TOOLS:
            files = [_relative(session.root, f) for f in _edited_files(e.payload.get("tool_input"))]
            cap.note_files(session.store, tool, conversation, files)
        return Reply()
    return Reply(background=e)  # Stop, SubagentStop, SessionEnd, PreCompact


def _cursor(e: Event, sessions: Sessions) -> Reply:
    name = e.name
    empty = Reply("{}")
    if (
        name
        not in (
            "sessionStart",
            "beforeSubmitPrompt",
            "postToolUse",
            "afterFileEdit",
            "afterAgentResponse",
        )
        and name not in CURSOR_CAPTURE
    ):
        return empty
    conversation = e.conversation
    session = sessions.of(e)
    store = session.store
    if name == "sessionStart":
        if session.needs_first_run():
            return Reply("{}", background=e)
        brief = session.brief(BriefArgs(tool="cursor"))
        if not brief.markdown:
            return empty
        return Reply(json.dumps({"additional_context": brief.markdown}), items=len(brief.items))
    if name == "beforeSubmitPrompt":
        # Cursor takes no context here: the answer waits for the turn's first tool result
        prompt = e.payload.get("prompt")
        if not isinstance(prompt, str):
            raise BadEvent("beforeSubmitPrompt without a prompt")
        cap.note_turn(store, "cursor", conversation, "user", prompt)
        answer = session.answer_prompt(
            PromptArgs(prompt, conversation=conversation, tool="cursor", budget=_budget(e))
        )
        state = hook_state.load(store, "cursor", conversation)
        state.pending = answer.markdown
        if answer.memory_ids:
            state.injected.append({"ids": answer.memory_ids, "at": time.time()})
        hook_state.save(store, "cursor", conversation, state)
        return Reply(json.dumps({"continue": True}), items=len(answer.items))
    if name == "postToolUse":
        state = hook_state.load(store, "cursor", conversation)
        if not state.pending:
            return empty
        text, state.pending = state.pending, ""
        hook_state.save(store, "cursor", conversation, state)
        return Reply(json.dumps({"additional_context": text}, ensure_ascii=False))
    if name == "afterFileEdit":
        path = e.payload.get("file_path")
        if isinstance(path, str) and path:
            rel = _relative(session.root, path)
            cap.note_turn(store, "cursor", conversation, "tool", f"[edit] {rel}", files=[rel])
        return empty
    if name == "afterAgentResponse":
        said = e.payload.get("text")
        if isinstance(said, str) and said.strip():
            cap.note_turn(store, "cursor", conversation, "assistant", said)
        return empty
    return Reply("{}", background=e)  # stop, sessionEnd, preCompact


@contextlib.contextmanager
def learning_lock() -> Iterator[None]:
    """Held while a turn is learned, so the daemon and detached processes learn one at a time
    (two captures of one transcript at once would both see it as new). Without ``fcntl``
    (Windows, where no daemon runs either) each process learns on its own."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    from server.hooks.where import hooks_dir

    with open(hooks_dir() / "learning.lock", "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_background(e: Event, sessions: Sessions, *, settle: float = SETTLE_SECONDS) -> None:
    """The slow part of an event: learn the turn (or, at a new project's first session, its
    history); errors go to the log."""
    session = sessions.of(e)
    started = time.perf_counter()
    if e.name in ("SessionStart", "sessionStart"):
        prepared = session.prepare()
        log.info("prepared %s: %s", session.root, prepared)
        return
    if e.client == "cursor":
        done = cap.capture_turns(session.store, session.root, "cursor", e.conversation)
    elif e.name == "agent-turn-complete":
        done = _codex_turn(e, session)
    else:
        transcript = e.payload.get("transcript_path")
        if not isinstance(transcript, str) or not transcript:
            if e.client != "codex":
                log.info("%s %s: no transcript_path; nothing to learn", e.client, e.name)
                return
            done = _codex_turn(e, session)  # Codex may send none: its rollout is found
        else:
            done = cap.capture_transcript(
                session.store, session.root, e.client, e.conversation, transcript, settle=settle
            )
    if done.added:
        session.fill_levels()  # the short forms a prompt's answer shows, made once, not per answer
    log.info(
        "%s %s %s: %s (%d messages, %d memories, cited %s, ignored %s) in %.0f ms",
        e.client,
        e.name,
        e.conversation,
        done.reason,
        done.messages,
        done.added,
        list(done.cited),
        list(done.ignored),
        (time.perf_counter() - started) * 1e3,
    )


def _codex_turn(e: Event, session: ProjectSession) -> cap.Captured:
    """Codex's notify names no transcript: its rollout is found among the session files."""
    from storage.sources.codex import default_locations

    thread = e.conversation
    for folder in default_locations():
        for path in sorted(folder.rglob(f"rollout-*{thread}.jsonl"), reverse=True):
            return cap.capture_transcript(
                session.store, session.root, "codex", thread, path, settle=SETTLE_SECONDS
            )
    return cap.Captured(False, "no transcript")


def describe(e: Event | None, reply: Reply | None, ms: float) -> str:
    """One log line for an event."""
    if e is None:
        return f"no event ({ms:.0f} ms)"
    said = f"{reply.items} items" if reply and reply.items else "nothing said"
    later = ", learning in the background" if reply and reply.background else ""
    return f"{e.client} {e.name}: {said}{later} ({ms:.0f} ms)"
