"""What an agent is handed when a prompt is submitted or a session starts.

At a prompt: the memories that answer *this prompt* — the one search over everything plus what
is tied to the files the prompt names — within a small token budget, or nothing when nothing
is relevant. At the start of a session: a short project brief (open contradictions and what
applies project-wide). The text is wrapped in :data:`INJECTED_OPEN` … :data:`INJECTED_CLOSE`
so that a transcript that shows it again is read without it.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from predictive.compress import fill_levels
from predictive.engine import mention_strength
from predictive.mentions import FileIndex, count_modules, project_index
from predictive.mentions import count as count_mentions
from predictive.operations.errors import ArgumentError
from predictive.operations.results import Result
from predictive.render import memory_renderings
from predictive.retrieval import Found, find
from predictive.selection import loaded_by
from predictive.tokens import count_tokens, truncate_to_tokens
from storage import (
    AccessKind,
    Anchor,
    AnchorType,
    ContradictionStatus,
    Kind,
    Level,
    Memory,
    MemoryFilter,
    MemoryStore,
    StoreError,
)
from storage.sources.records import INJECTED_CLOSE, INJECTED_OPEN, strip_injected
from storage.text import fts_terms

PROMPT_BUDGET = 1_500  # tokens a prompt's answer may take (a setting of every front door)
BRIEF_BUDGET = 800  # tokens of the brief at the start of a session
SEARCH_K = 8
NAMED_FILES = 3  # files a prompt names whose context joins the answer
FILE_ITEMS = 4  # memories taken from each named file's context
FILE_CONTEXT_BUDGET = 1_200
MIN_WORDS = 2  # a prompt of fewer words ("yes", "go on") gets nothing
MIN_RELEVANCE = 0.3  # a search result below this share of the best one is left out
MIN_SCORE = 0.02  # the best search result must score at least this for anything to be said
BRIEF_KINDS = (Kind.DECISION, Kind.CONVENTION, Kind.PREFERENCE, Kind.WORKFLOW)
LOCAL_ANCHORS = frozenset(
    {AnchorType.FILE, AnchorType.GLOB, AnchorType.SYMBOL, AnchorType.MODULE, AnchorType.ERROR}
)
CHATTER = frozenset(
    "please continue thanks thank okay sure great good nice proceed again lets just ahead "
    "yes yeah yep also then now next more some thing things that this".split()
)  # words of a prompt that say nothing about what it is about
HEADER = "Project memory for this prompt (Living Memory; cite an item by its #id):"
BRIEF_HEADER = "Project memory (Living Memory): what applies across this project."


@dataclass(frozen=True)
class PromptArgs:
    """A submitted prompt, the conversation it belongs to and the tool that sent it."""

    prompt: str
    conversation: str | None = None
    tool: str = "claude"  # what the tool reads from its own rule files is left out
    budget: int = PROMPT_BUDGET
    as_of: float | None = None  # answer as the store would have then (replays)
    record: bool = True  # log what was served in the usage tracker


@dataclass(frozen=True)
class BriefArgs:
    tool: str = "claude"
    budget: int = BRIEF_BUDGET
    as_of: float | None = None


@dataclass(frozen=True)
class Injected(Result):
    """One item handed to the agent."""

    memory_id: int | None
    kind: str
    via: str  # "search" | "file:<path>" | "brief"
    text: str  # the Markdown line
    files: tuple[str, ...]  # the files its memory is anchored to


@dataclass(frozen=True)
class PromptAnswer(Result):
    """The text to hand over ("" when nothing is relevant) and what it holds."""

    markdown: str
    items: tuple[Injected, ...]
    named_files: tuple[str, ...]
    tokens: int
    elapsed_ms: float

    @property
    def memory_ids(self) -> list[int]:
        return [i.memory_id for i in self.items if i.memory_id is not None]


def project_files(root: Path) -> FileIndex:
    """The files git tracks in ``root`` (listed again when git's index changes)."""
    return project_index(root)


def named_files(text: str, root: Path) -> list[str]:
    """The project files ``text`` names (by path, name or module), most named first."""
    index = project_files(root)
    counts = count_mentions([text], index) + count_modules([text], index)
    return [p for p, _ in counts.most_common(NAMED_FILES)]


def _file_anchors(m: Memory) -> tuple[str, ...]:
    return tuple(a.value for a in m.anchors if a.type is AnchorType.FILE)


def _line(m: Memory, room: int) -> str | None:
    """The richest rendering of ``m`` that fits ``room`` tokens (None when none does)."""
    levels = {k: v for k, v in fill_levels(m).items() if isinstance(v, str)}
    shown = memory_renderings(m, levels)
    for level in (Level.SUMMARY, Level.COMPRESSED, Level.INDEX):
        line = shown.get(level)
        if line and count_tokens(line) <= room:
            return line
    return None


def _passage_line(f: Found, room: int) -> str | None:
    line = f"- [conversation · {f.provenance}] {' '.join(f.snippet.split())}"
    return truncate_to_tokens(line, room) if room > 20 else None


def _wrap(header: str, lines: list[str]) -> str:
    return f"{INJECTED_OPEN}\n{header}\n" + "\n".join(lines) + f"\n{INJECTED_CLOSE}\n"


class _Packer:
    """Adds items while they fit the budget (the header and markers count)."""

    def __init__(self, header: str, budget: int) -> None:
        self.header = header
        self.room = budget - count_tokens(_wrap(header, []))
        self.lines: list[str] = []
        self.items: list[Injected] = []
        self.ids: set[int] = set()

    def add_memory(self, m: Memory, via: str) -> None:
        if m.id in self.ids or self.room <= 0:
            return
        line = _line(m, self.room)
        if line is None:
            return
        self.ids.add(m.id)
        self._take(line, Injected(m.id, m.kind.value, via, line, _file_anchors(m)))

    def add_passage(self, f: Found) -> None:
        line = _passage_line(f, self.room)
        if line is None or line in self.lines:
            return
        self._take(line, Injected(None, "conversation", "search", line, ()))

    def _take(self, line: str, item: Injected) -> None:
        self.lines.append(line)
        self.items.append(item)
        self.room -= count_tokens(line) + 1

    def answer(self, named: tuple[str, ...], started: float) -> PromptAnswer:
        text = _wrap(self.header, self.lines) if self.lines else ""
        elapsed = (time.perf_counter() - started) * 1e3
        return PromptAnswer(text, tuple(self.items), named, count_tokens(text), elapsed)


def _words(text: str) -> int:
    return sum(1 for w in text.split() if any(c.isalnum() for c in w))


@lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    """The words a text is about, cut to five letters (so "retries" meets "retry"); kept for
    the texts met most (a warm daemon ranks the same memories prompt after prompt)."""
    return frozenset(
        t[:5] for t in fts_terms(text, max_terms=200) if len(t) > 2 and t not in CHATTER
    )


def _shares_words(f: Found, asked: frozenset[str]) -> bool:
    """Whether a result says something the prompt asks about: one of its words when the
    prompt has few, two when it has more (a long prompt shares a common word with anything)."""
    said = f.memory.text + " " + (f.memory.index_label or "") if f.memory else f.snippet
    shared = len(asked & _terms(said))
    return shared >= (1 if len(asked) <= 3 else 2)


def answer_prompt(store: MemoryStore, root: Path, a: PromptArgs) -> PromptAnswer:
    """The memories that answer ``a.prompt``: those tied to the files it names first, then
    the best of one search over everything, within ``a.budget`` tokens."""
    started = time.perf_counter()
    if a.budget <= 0:
        raise ArgumentError("budget", "must be a positive number of tokens")
    text = strip_injected(a.prompt or "").strip()
    packer = _Packer(HEADER, a.budget)
    if _words(text) < MIN_WORDS:
        return packer.answer((), started)
    named = tuple(named_files(text, root))
    asked = _terms(text)
    at = a.as_of if a.as_of is not None else time.time()
    for path in named:
        for m in tied_to(store, path, asked, at):
            if a.tool not in loaded_by(m):
                packer.add_memory(m, f"file:{path}")
    if asked:
        _add_found(store, packer, text, asked, a)
    answer = packer.answer(named, started)
    if a.record:
        record_served(store, answer.memory_ids, a.tool, a.conversation)
    return answer


KIND_WEIGHT = {
    Kind.SOLUTION: 1.0,
    Kind.DECISION: 1.0,
    Kind.CONVENTION: 0.9,
    Kind.WORKFLOW: 0.7,
    Kind.EPISODE: 0.6,
    Kind.SUMMARY: 0.5,
}
TIED_POOL = 200  # memories tied to a file looked at (most recent first)


def tied_to(store: MemoryStore, path: str, asked: frozenset[str], at: float) -> list[Memory]:
    """The memories tied to a file the prompt names, best first: those saying what the prompt
    asks about, then by kind (fixes, decisions and rules before history), a conversation by
    how much it is about the file, then the most recent. (A file's whole context would bring
    excerpts of every conversation about it, which takes seconds on a long history.)"""
    pool = store.list(
        MemoryFilter(anchors=[Anchor(AnchorType.FILE, path)], valid_at=at),
        limit=TIED_POOL,
        order="recent",
    )

    def rank(m: Memory) -> tuple[float, float]:
        shared = len(asked & _terms(m.text + " " + (m.index_label or "")))
        weight = KIND_WEIGHT.get(m.kind, 0.5) * mention_strength(m, path)
        return (min(shared, 3) + weight, m.valid_from)

    return sorted(pool, key=rank, reverse=True)[:FILE_ITEMS]


def _add_found(
    store: MemoryStore, packer: _Packer, text: str, asked: frozenset[str], a: PromptArgs
) -> None:
    """The best of one search over everything that shares words with the prompt."""
    valid_at = None if a.as_of is not None else time.time()
    found = find(
        store,
        text[:2000],
        k=SEARCH_K,
        filters=MemoryFilter(valid_at=valid_at),
        as_of=a.as_of,
    )
    best = max((f.score for f in found), default=0.0)
    if best < MIN_SCORE:
        return
    for f in found:
        if f.score < MIN_RELEVANCE * best:
            break
        if not _shares_words(f, asked):
            continue
        if f.memory is None:
            packer.add_passage(f)
        elif a.tool not in loaded_by(f.memory):
            packer.add_memory(f.memory, "search")


def record_served(store: MemoryStore, ids: list[int], tool: str, conversation: str | None) -> None:
    """Log a prompt's answer in the usage tracker (a caller that answers first and records
    after asks with ``PromptArgs.record`` off and calls this)."""
    if not ids:
        return
    context = f"hook {tool} prompt {conversation or ''}".strip()
    # what was served is still served when the log cannot be written
    with contextlib.suppress(StoreError):
        store.usage.record_many(ids, AccessKind.RETRIEVAL, context=context, bump_generation=False)


def project_brief(store: MemoryStore, a: BriefArgs) -> PromptAnswer:
    """Open contradictions and the decisions, conventions, preferences and workflows that
    apply across the project (tied to no file), most important first, within ``a.budget``."""
    started = time.perf_counter()
    packer = _Packer(BRIEF_HEADER, a.budget)
    at = a.as_of if a.as_of is not None else time.time()
    for c in store.contradictions.query(ContradictionStatus.OPEN)[:3]:
        line = f"- ⚠ contradiction c{c.id}: #{c.memory_a} vs #{c.memory_b}"
        if c.reason:
            line += f" ({' '.join(c.reason.split())[:160]})"
        if count_tokens(line) < packer.room:
            packer._take(line, Injected(None, "contradiction", "brief", line, ()))
    wide = store.list(MemoryFilter(kinds=BRIEF_KINDS, valid_at=at), limit=200, order="importance")
    for m in wide:
        if a.as_of is not None and m.created_at > a.as_of:
            continue
        if any(x.type in LOCAL_ANCHORS for x in m.anchors) or a.tool in loaded_by(m):
            continue
        packer.add_memory(m, "brief")
    return packer.answer((), started)
