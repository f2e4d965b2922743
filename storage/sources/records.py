"""The plain records readers produce, and the log of what they skipped and why."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from storage.redact import redact, redact_value

GENERATED_MARKER = "<!-- living-memory:generated"
"""Files carrying this near the top were written by Living Memory and are never read back."""

MAX_FILE_BYTES = 5_000_000
"""Readers skip text files larger than this (reason ``too large``)."""

Role = Literal["user", "assistant", "tool", "system"]

INJECTED_OPEN = "<living-memory-context>"
INJECTED_CLOSE = "</living-memory-context>"
"""What Living Memory hands an agent at a prompt is wrapped in these; a conversation that
shows it again (the agent's transcript, a pasted copy) is read without it."""
_INJECTED = re.compile(
    re.escape(INJECTED_OPEN) + r".*?(?:" + re.escape(INJECTED_CLOSE) + r"|\Z)", re.DOTALL
)


def strip_injected(text: str) -> str:
    """``text`` without the blocks Living Memory injected (an unclosed block runs to the
    end)."""
    if INJECTED_OPEN not in text:
        return text
    return _INJECTED.sub("", text).strip()


def is_generated(text: str | bytes) -> bool:
    """Whether a file's content was written by this tool: a line near the top (after any front
    matter) begins with the marker; a file that merely quotes it inside a line is not."""
    head = text[:2000]
    if isinstance(head, bytes):
        head = head.decode("utf-8", errors="replace")
    return any(line.startswith(GENERATED_MARKER) for line in head.splitlines()[:12])


@dataclass
class SkipLog:
    """Counts what a reader could not use, by source and reason; keeps the first examples."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    examples: list[tuple[str, str, str]] = field(default_factory=list)
    max_examples: int = 50

    def skip(self, source: str, where: str, reason: str) -> None:
        self.counts[(source, reason)] += 1
        if len(self.examples) < self.max_examples:
            self.examples.append((source, where, reason))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "byReason": [
                {"source": s, "reason": r, "count": n} for (s, r), n in sorted(self.counts.items())
            ],
            "examples": [{"source": s, "where": w, "reason": r} for s, w, r in self.examples],
        }


@dataclass(frozen=True)
class Commit:
    """One git commit. ``at`` is the author time in epoch seconds."""

    sha: str
    parents: tuple[str, ...]
    author: str
    email: str
    at: float
    subject: str
    body: str
    files: tuple[str, ...]
    branch: str | None = None
    reverts: str | None = None  # the full or abbreviated sha named by "This reverts commit X"

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


@dataclass(frozen=True)
class DecisionRecord:
    """One architecture decision record (Nygard or MADR). Paths are relative to the root."""

    path: str
    title: str
    format: Literal["nygard", "madr", "unknown"]
    number: int | None = None
    status: str | None = None  # lower case: proposed, accepted, deprecated, superseded, rejected…
    status_note: str = ""  # what the status lines say beside the status: why, by whom
    date: float | None = None
    context: str = ""
    decision: str = ""
    consequences: str = ""
    options: tuple[str, ...] = ()
    chosen: str | None = None
    rationale: str | None = None
    deciders: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()  # paths of the records this one supersedes
    superseded_by: tuple[str, ...] = ()  # paths of the records that supersede this one
    text: str = ""
    amends: tuple[str, ...] = ()  # paths of the records this one partly supersedes / amends
    amended_by: tuple[str, ...] = ()  # paths of the records that partly supersede this one
    links: tuple[str, ...] = ()  # paths of the other records its text links to


@dataclass(frozen=True)
class RuleItem:
    """One atomic statement of a rule file: a bullet, a numbered item or a short paragraph."""

    text: str
    heading: str | None = None
    line: int = 0


@dataclass(frozen=True)
class RuleFile:
    """A rule or instruction file, split into items. ``globs`` are anchors for its items."""

    path: str
    kind: Literal[
        "cursorrules",
        "cursor-mdc",
        "claude",
        "agents",
        "copilot",
        "copilot-instructions",
        "contributing",
    ]
    items: tuple[RuleItem, ...]
    globs: tuple[str, ...] = ()
    always_apply: bool = False
    description: str | None = None
    text: str = ""


@dataclass(frozen=True)
class CodeBlock:
    code: str
    language: str | None = None
    filename: str | None = None


@dataclass(frozen=True)
class ChatMessage:
    """One turn. ``idx`` is its position in the conversation, from 0."""

    idx: int
    role: Role
    text: str
    at: float | None = None
    code_blocks: tuple[CodeBlock, ...] = ()
    files: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Conversation:
    """One chat session from one tool. ``external_id`` is unique within that tool."""

    tool: Literal["cursor", "specstory", "copilot", "claude", "codex", "locomo"]
    external_id: str
    messages: tuple[ChatMessage, ...]
    title: str | None = None
    workspace: str | None = None  # the project folder the conversation belongs to, if known
    branch: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    origin: str = ""  # the file it was read from
    metadata: dict[str, Any] = field(default_factory=dict)
    thoughts: tuple[str, ...] = ()
    """Lines of the assistant's reasoning that name files: never stored or shown, only read
    for which files the conversation worked on."""
    is_redacted: bool = field(default=False, init=False, repr=False, compare=False)
    """Set by :func:`redacted` only. Not an argument, so ``dataclasses.replace`` (new messages,
    a new title) gives a conversation that is redacted again where it is stored."""


def without_injected(conv: Conversation) -> Conversation:
    """``conv`` with Living Memory's own injected blocks taken out of every message (a message
    left empty is dropped, the rest renumbered), so the tool never learns its own output."""
    if not any(INJECTED_OPEN in m.text for m in conv.messages):
        return conv
    kept: list[ChatMessage] = []
    for m in conv.messages:
        text = strip_injected(m.text)
        if text.strip():
            kept.append(replace(m, idx=len(kept), text=text))
    return replace(conv, messages=tuple(kept))


def redacted(conv: Conversation) -> Conversation:
    """``conv`` with every text in it redacted (title, messages, code, file names, metadata,
    thoughts): what is derived from it (labels, summaries, topics) is derived from this, so a
    secret cut, joined or lowercased on the way can no longer escape the patterns. Marked
    (``is_redacted``), so storing it does not redact its messages a second time."""
    messages = tuple(
        replace(
            m,
            text=redact(m.text),
            code_blocks=tuple(
                replace(b, code=redact(b.code), filename=redact(b.filename) if b.filename else None)
                for b in m.code_blocks
            ),
            files=tuple(redact(f) for f in m.files),
            metadata=redact_value(m.metadata),
        )
        for m in conv.messages
    )
    clean = replace(
        conv,
        messages=messages,
        title=redact(conv.title) if conv.title else conv.title,
        metadata=redact_value(conv.metadata),
        thoughts=tuple(redact(t) for t in conv.thoughts),
    )
    object.__setattr__(clean, "is_redacted", True)  # a frozen dataclass's own field
    return clean
