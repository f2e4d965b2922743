"""What the store keeps about a conversation an agent's hooks report live: the files it worked
on, what was injected into it and not yet judged, how far its transcript was read, and (for a
tool that hands over no transcript) the turns reported so far.

It lives in the store's ingestion state (one source per conversation), so a hook writes
nothing outside the data directory and every front door sees the same state.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from storage import MemoryStore

log = logging.getLogger(__name__)

MAX_FILES = 20  # files worked on kept per conversation, most recent last
MAX_TURNS_CHARS = 2_000_000  # a conversation reported turn by turn keeps its latest turns


def state_source(tool: str, conversation: str) -> str:
    return f"hook:{tool}:{conversation}"


@dataclass
class HookState:
    """One conversation's live state."""

    files: list[str] = field(default_factory=list)
    injected: list[dict[str, Any]] = field(default_factory=list)  # {"ids": [...], "at": t}
    transcript: str = ""  # "size:mtime_ns" of the transcript when it was last read
    learned: str = ""  # "count:digest" of the messages learned so far (see capture)
    turns: list[dict[str, Any]] = field(default_factory=list)  # {"role", "text", "at", "files"}
    pending: str = ""  # an answer waiting for the next moment the tool takes context

    def worked_on(self, paths: list[str]) -> None:
        """Note files worked on (a file worked on again moves to the end)."""
        for p in paths:
            if p in self.files:
                self.files.remove(p)
            self.files.append(p)
        del self.files[:-MAX_FILES]

    def add_turn(self, turn: dict[str, Any]) -> None:
        self.turns.append(turn)
        while len(self.turns) > 1 and len(json.dumps(self.turns)) > MAX_TURNS_CHARS:
            self.turns.pop(0)


_FIELDS = ("files", "injected", "transcript", "learned", "turns", "pending")


def load(store: MemoryStore, tool: str, conversation: str) -> HookState:
    """The state of a conversation (empty when the store never heard of it)."""
    raw = store.cursors.get(state_source(tool, conversation))
    state = HookState()
    for name in _FIELDS:
        if name not in raw:
            continue
        value: Any = raw[name]
        if isinstance(getattr(state, name), list):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                log.warning("hook state %s of %s is unreadable; reset", name, conversation)
                continue
            if not isinstance(value, list):
                continue
        setattr(state, name, value)
    return state


def save(store: MemoryStore, tool: str, conversation: str, state: HookState) -> None:
    values = {
        name: (json.dumps(v, ensure_ascii=False) if isinstance(v, list) else str(v))
        for name in _FIELDS
        for v in [getattr(state, name)]
    }
    store.cursors.set(state_source(tool, conversation), values)
