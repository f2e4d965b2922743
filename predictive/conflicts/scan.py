"""The scan over a store: each memory written is compared with its nearest neighbours (keyword
and vector) of related kinds — decision, convention, fact, solution, preference, workflow,
pattern; a commit or other short episode only against those — and the pairs the rules (or a
judge) find in conflict are recorded, never twice for one pair whatever the first one's
status: **open** on strong evidence (a record that supersedes or amends another, a judge's
verdict) and **suspected** otherwise (the review list only, never a context, until the user
confirms it).

Pairs never compared: a memory and its own source (DERIVED_FROM), two versions of one source
(one supersedes the other, or the same source id), two parts of one document (sections of one
rule file, memories of one decision record), a commit and a rule file or decision record it
added or changed, a conversation's own summary, two episodes, memories already in a
contradiction. A commit and a rule section are never in conflict by polarity or change
wording alone (a change and the text that describes the same work), unless the commit names
what replaces something the rule names ("Replace Selenium with Playwright …").

An optional ``judge(text_a, text_b) -> Verdict | None`` (an LLM, when one is configured) has
the last word on every candidate pair it answers; None (or an error) leaves the local rules to
decide.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from predictive.conflicts.rules import Finding, detect
from predictive.conflicts.statement import MAX_TEXT, analyse
from predictive.conflicts.wording import content_words
from storage.conflict_pairs import (
    decisions_numbered,
    ids_after,
    lineage,
    max_memory_id,
    recorded_pairs,
)
from storage.errors import StoreError
from storage.models import AnchorType, ContradictionStatus, EdgeType, Kind, Memory
from storage.repository import MemoryFilter, MemoryStore
from storage.search import search

RELATED_KINDS: tuple[Kind, ...] = (
    Kind.DECISION,
    Kind.CONVENTION,
    Kind.FACT,
    Kind.SOLUTION,
    Kind.PREFERENCE,
    Kind.WORKFLOW,
    Kind.PATTERN,
)
"""Kinds that state how things are or should be: they can contradict each other."""
CHANGE_KINDS: tuple[Kind, ...] = (Kind.EPISODE,)
"""Kinds that report a change (a commit, a message): they can contradict a related memory
but are not compared with each other."""
NEIGHBOURS = 8
"""Nearest neighbours compared with each scanned memory."""
MIN_SIMILARITY = 0.3
"""Vector neighbours less similar than this are not compared."""
MAX_EPISODE_CHARS = 2000
"""An episode longer than this (a whole conversation) is not compared clause by clause."""


STRONG_TYPES = frozenset({"superseded", "amended", "judged"})
"""Conflicts that open a contradiction at once: a record naming another it supersedes or
amends, a judge's verdict. Every other finding of the local rules is only suspected."""


@dataclass(frozen=True)
class Verdict:
    """What a judge (an LLM) says of two texts."""

    conflict: bool
    reason: str = ""
    partial: bool = False
    confidence: float = 0.7


class Judge(Protocol):
    def __call__(self, text_a: str, text_b: str) -> Verdict | None: ...


@dataclass(frozen=True)
class Conflict:
    """Two memories that disagree: ``older`` was there first, ``newer`` changes it."""

    older: int
    newer: int
    type: str
    reason: str
    confidence: float
    partial: bool = False

    @property
    def pair(self) -> tuple[int, int]:
        return (min(self.older, self.newer), max(self.older, self.newer))

    def to_dict(self) -> dict[str, object]:
        return {
            "older": self.older,
            "newer": self.newer,
            "type": self.type,
            "reason": self.reason,
            "confidence": self.confidence,
            "partial": self.partial,
        }


def _scannable(m: Memory) -> bool:
    if m.archived or m.superseded_by is not None:
        return False
    if m.valid_to is not None and m.valid_to <= time.time():
        return False
    if m.kind in RELATED_KINDS:
        return True
    if m.kind in CHANGE_KINDS and m.source.startswith("chat:"):
        return False  # a whole conversation's summary: its items are compared instead
    return m.kind in CHANGE_KINDS and len(m.text) <= MAX_EPISODE_CHARS


def _neighbours(store: MemoryStore, m: Memory, k: int) -> list[int]:
    kinds = RELATED_KINDS if m.kind in CHANGE_KINDS else RELATED_KINDS + CHANGE_KINDS
    filters = MemoryFilter(kinds=kinds, valid_at=time.time())
    vector = store.embeddings.of([m.id]).get(m.id) if store.has_embedder else None
    try:
        hits = search(
            store,
            m.text[:2000],
            filters=filters,
            k=k + 1,
            query_vector=vector,
            min_similarity=MIN_SIMILARITY,
        )
    except StoreError:
        return []
    found = [h.memory.id for h in hits if h.memory.id != m.id]
    numbers = [r.number for r in analyse(m.text[:MAX_TEXT]).refs]
    for ids in decisions_numbered(store, numbers).values():
        found += [i for i in ids if i != m.id and i not in found]
    return found


def _document(m: Memory) -> str | None:
    """The file a memory is one part of: a rule file's section, a decision record."""
    if m.source == "rules":
        path = m.metadata.get("file")
        if isinstance(path, str) and path:
            return path
    elif m.source == "adr" and m.source_id:
        return m.source_id
    else:
        return None
    return next((a.ref for a in m.artifacts if a.type in ("file", "adr")), None)


def _is_commit(m: Memory) -> bool:
    return m.kind is Kind.EPISODE and (
        m.source == "git" or any(a.type == "commit" for a in m.artifacts)
    )


def _touched(commit: Memory, path: str) -> bool:
    """Whether a commit added or changed the file ``path`` (its files are relative to the git
    root, which may be above the project's folder)."""
    files = commit.metadata.get("files")
    paths = {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()
    paths |= {a.value for a in commit.anchors if a.type is AnchorType.FILE}
    return any(p == path or p.endswith("/" + path) for p in paths)


def _never_conflict(x: Memory, y: Memory) -> bool:
    """Pairs that are never a contradiction, whatever their texts say: two parts of one
    document, a commit and a document it added or changed."""
    dx, dy = _document(x), _document(y)
    if dx is not None and dx == dy:
        return True  # two sections of one rule file, two memories of one record
    for commit, doc in ((x, dy), (y, dx)):
        if doc is not None and _is_commit(commit) and _touched(commit, doc):
            return True
    return False


def _wording_only(x: Memory, y: Memory, finding: Finding) -> bool:
    """A commit and a rule section flagged by polarity or change wording alone: a change and
    a text that describes the same work ("Never run pytest directly" / "Run the coverage
    suite with pytest-cov"), unless the commit names what replaces something the rule names
    ("Replace Selenium with Playwright …" against "Use Selenium for …")."""
    if finding.type not in ("polarity", "changed"):
        return False
    commit, rule = (x, y) if _is_commit(x) else (y, x)
    if not _is_commit(commit) or rule.source != "rules":
        return False
    if finding.type == "changed":
        said = content_words(rule.text[:MAX_TEXT])
        for choice in analyse(commit.text[:MAX_TEXT]).choices:
            if choice.winner and not (choice.says_not or choice.negated) and choice.loser <= said:
                return False
    return True


def status_for(conflict_type: str) -> ContradictionStatus:
    """How a conflict of this type is recorded: open on strong evidence, else suspected."""
    return (
        ContradictionStatus.OPEN if conflict_type in STRONG_TYPES else ContradictionStatus.SUSPECTED
    )


def _newer_first(x: Memory, y: Memory, finding: Finding) -> tuple[Memory, Memory]:
    if finding.first_newer is not None:
        return (x, y) if finding.first_newer else (y, x)
    if (x.valid_from, x.id) >= (y.valid_from, y.id):
        return x, y
    return y, x


def scan(
    store: MemoryStore,
    ids: Iterable[int],
    *,
    judge: Judge | None = None,
    neighbours: int = NEIGHBOURS,
) -> list[Conflict]:
    """The conflicts between the memories ``ids`` and their neighbours that are not recorded
    yet. Unknown, archived, superseded and unrelated memories are passed over."""
    wanted = list(dict.fromkeys(int(i) for i in ids))
    out: list[Conflict] = []
    seen: set[tuple[int, int]] = set()
    # a commit or a message can only contradict a related memory: none, nothing to look for
    related = store.count(MemoryFilter(kinds=RELATED_KINDS, valid_at=time.time())) > 0
    for m in store.get_many(wanted):
        if not _scannable(m) or (m.kind in CHANGE_KINDS and not related):
            continue
        near = _neighbours(store, m, neighbours)
        if not near:
            continue
        skip = lineage(store, [m.id, *near]) | recorded_pairs(store, [m.id])
        others = {o.id: o for o in store.get_many(near)}
        for oid in near:
            o = others.get(oid)
            pair = (min(m.id, oid), max(m.id, oid))
            if o is None or pair in seen or pair in skip or not _scannable(o):
                continue
            seen.add(pair)
            if m.kind in CHANGE_KINDS and o.kind in CHANGE_KINDS:
                continue
            if o.source == m.source and o.source_id is not None and o.source_id == m.source_id:
                continue  # two versions of one source
            if _never_conflict(m, o):
                continue  # one document's parts; a commit and a document it changed
            conflict = _judge(m, o, judge) if judge is not None else None
            if conflict is None:
                finding = detect(m, o)
                if finding is not None and not _wording_only(m, o, finding):
                    newer, older = _newer_first(m, o, finding)
                    conflict = Conflict(
                        older.id,
                        newer.id,
                        finding.type,
                        finding.reason,
                        finding.confidence,
                        finding.partial,
                    )
            if conflict is not None and conflict.type:
                out.append(conflict)
    return out


def _judge(x: Memory, y: Memory, judge: Judge) -> Conflict | None:
    """The judge's verdict as a conflict; None when it has none (the local rules decide).
    A verdict of no conflict answers an empty-typed conflict the scan drops."""
    newer, older = (x, y) if (x.valid_from, x.id) >= (y.valid_from, y.id) else (y, x)
    try:
        verdict = judge(older.text, newer.text)  # A is the older, B the newer
    except Exception:  # an unreachable or confused judge leaves the local rules to decide
        return None
    if verdict is None:
        return None
    if not verdict.conflict:
        return Conflict(older.id, newer.id, "", "", 0.0)
    return Conflict(
        older.id,
        newer.id,
        "amended" if verdict.partial else "judged",
        verdict.reason or "judged contradictory",
        max(0.0, min(1.0, verdict.confidence)),
        verdict.partial,
    )


def record(store: MemoryStore, conflicts: Sequence[Conflict]) -> list[int]:
    """Record a contradiction for each conflict, open or suspected by its type (see
    :func:`status_for`; a pair already recorded is left as it is); a partial supersession
    also links the older memory to the newer (EVOLVED_INTO) without closing it. Answers the
    ids of the contradictions recorded now."""
    opened: list[int] = []
    for c in conflicts:
        if c.older == c.newer or store.contradictions.exists(c.older, c.newer):
            continue
        if not (store.exists(c.older) and store.exists(c.newer)):
            continue
        if c.partial:
            store.graph.add(
                c.older,
                c.newer,
                EdgeType.EVOLVED_INTO,
                1.0,
                {"by": "contradictions", "partial": True},
            )
        opened.append(
            store.contradictions.add(
                c.older,
                c.newer,
                reason=f"{c.type}: {c.reason}",
                confidence=c.confidence,
                status=status_for(c.type),
            )
        )
    return opened


def scan_and_record(
    store: MemoryStore, ids: Iterable[int], *, judge: Judge | None = None
) -> list[int]:
    """:func:`scan` then :func:`record`: what every write path calls."""
    return record(store, scan(store, ids, judge=judge))


SCAN_STATE = "contradictions"
"""Cursor source holding the last memory id consolidation scanned through."""
MAX_SCAN = 2000
"""Memories one consolidation scans at most (the next run goes on from there)."""


def pending_scan(store: MemoryStore) -> tuple[list[int], int]:
    """The memories consolidation scans next (added since its last run, at most
    :data:`MAX_SCAN`) and the id it will have scanned through."""
    after = int(store.cursors.get(SCAN_STATE).get("scanned_through", "0") or 0)
    todo = ids_after(store, after)
    through = todo[MAX_SCAN - 1] if len(todo) > MAX_SCAN else max_memory_id(store)
    return todo[:MAX_SCAN], through


def mark_scanned(store: MemoryStore, through: int) -> None:
    """Remember that consolidation scanned every memory up to id ``through``."""
    store.cursors.set(SCAN_STATE, {"scanned_through": str(through)})
