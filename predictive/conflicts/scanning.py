"""The scan over a store, in two stages.

1. **The local rules**: each memory written is compared with its nearest neighbours (keyword
   and vector) of related kinds — decision, convention, fact, solution, preference, workflow,
   pattern; a commit or other short episode only against those. A conflict is recorded
   **open** on strong evidence (a record that supersedes or amends another, a judge's
   verdict) and **suspected** otherwise (the review list only, never a context, until the
   user confirms it).
2. **Candidates by subject** (:mod:`predictive.conflicts.candidates`): at most five earlier
   memories on the same subject, whatever their wording, two commits included. A judge
   reads them; without one they wait as pending (never in a context).

An optional ``judge(text_a, text_b) -> Verdict | None`` (an LLM, when one is configured) has
the last word on what the rules find and reads the candidates; None (or an error) leaves a
finding to the rules and a candidate pending. A pair is recorded once whatever became of it,
and a pair whose two texts were settled (resolved, dismissed, judged) is not taken up again.

Pairs never compared: a memory and its own source (DERIVED_FROM), two versions of one source
(one supersedes the other, or the same source id), two parts of one document (sections of one
rule file, memories of one decision record), a commit and a rule file or decision record it
added or changed, a conversation's own summary. The rules never compare two episodes. A
commit and a rule section are never in conflict by polarity or change wording alone (a change
and the text that describes the same work), unless the commit names what replaces something
the rule names ("Replace Selenium with Playwright …").

After an ingest the scan is bounded in time and resumable (:func:`scan_backlog`): it reads in
batches, records each batch's findings in short transactions of their own and keeps its place.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from predictive.conflicts.candidates import MAX_CANDIDATES, Candidate, propose
from predictive.conflicts.pairs import (
    CHANGE_KINDS,
    RELATED_KINDS,
    never_compared,
    scannable,
    wording_only,
)
from predictive.conflicts.rules import Finding, detect
from predictive.conflicts.statement import MAX_TEXT, analyse
from storage import conflict_candidates as candidates
from storage.conflict_candidates import settled_texts, texts_key
from storage.conflict_pairs import (
    BACKLOG,
    decisions_numbered,
    ids_after,
    lineage,
    max_memory_id,
    recorded_pairs,
)
from storage.errors import StoreError
from storage.models import ContradictionStatus, EdgeType, Memory
from storage.repository import MemoryFilter, MemoryStore
from storage.search import search

SCAN_BATCH = 50
"""Memories read from the store at once while scanning."""
NEIGHBOURS = 8
"""Nearest neighbours compared with each scanned memory."""
MIN_SIMILARITY = 0.3
"""Vector neighbours less similar than this are not compared."""

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
    judged: bool = False  # a judge read this pair (an empty type: it found no conflict)

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


@dataclass(frozen=True)
class Bounds:
    """How far one scan goes: ``seconds`` of wall time at most (None: no limit), the
    neighbours the rules compare and the candidates by subject proposed per memory."""

    seconds: float | None = None
    neighbours: int = NEIGHBOURS
    candidates: int = MAX_CANDIDATES


@dataclass
class Outcome:
    """What one scan found: conflicts to record, candidates by subject no judge answered
    (pending), and the ids it scanned in order (``stopped``: its time ran out before the
    rest)."""

    conflicts: list[Conflict] = field(default_factory=list)
    pending: list[Candidate] = field(default_factory=list)
    scanned: list[int] = field(default_factory=list)
    stopped: bool = False


def scan(
    store: MemoryStore,
    ids: Iterable[int],
    *,
    judge: Judge | None = None,
    neighbours: int = NEIGHBOURS,
) -> list[Conflict]:
    """The conflicts between the memories ``ids`` and their neighbours that are not recorded
    yet. Unknown, archived, superseded and unrelated memories are passed over. With a
    ``judge``, it has the last word on what the rules find and reads each memory's
    candidates by subject too."""
    bounds = Bounds(neighbours=neighbours)
    found = examine(store, ids, judge=judge, bounds=bounds, candidates=judge is not None)
    return [c for c in found.conflicts if c.type]


def examine(
    store: MemoryStore,
    ids: Iterable[int],
    *,
    judge: Judge | None = None,
    bounds: Bounds | None = None,
    candidates: bool = True,
) -> Outcome:
    """Each memory of ``ids`` (in order) against its neighbours by the local rules, then,
    with ``candidates``, against the earlier memories on its subject
    (:func:`~predictive.conflicts.candidates.propose`): a ``judge`` reads those, else they
    are answered as pending. Stops between two memories once ``bounds.seconds`` have passed.
    Reads only: each query is its own short read, nothing is written."""
    bounds = bounds or Bounds()
    deadline = None if bounds.seconds is None else time.monotonic() + bounds.seconds
    wanted = list(dict.fromkeys(int(i) for i in ids))
    out = Outcome()
    seen: set[tuple[int, int]] = set()  # pairs the rules compared
    decided: set[tuple[int, int]] = set()  # pairs the rules (or a judge on them) decided
    # a commit or a message can only contradict a related memory by the rules
    related = store.count(MemoryFilter(kinds=RELATED_KINDS, valid_at=time.time())) > 0
    for start in range(0, len(wanted), SCAN_BATCH):
        batch = wanted[start : start + SCAN_BATCH]
        order = {mid: i for i, mid in enumerate(batch)}
        for m in sorted(store.get_many(batch), key=lambda m: order[m.id]):
            if deadline is not None and time.monotonic() > deadline:
                out.stopped = True
                return out
            out.scanned.append(m.id)
            if not scannable(m):
                continue
            if m.kind not in CHANGE_KINDS or related:
                out.conflicts += _by_rules(store, m, judge, bounds.neighbours, seen, decided)
            if candidates and bounds.candidates > 0:
                conflicts, pending = _by_subject(store, m, judge, bounds.candidates, decided)
                out.conflicts += conflicts
                out.pending += pending
    return out


def _by_rules(
    store: MemoryStore,
    m: Memory,
    judge: Judge | None,
    neighbours: int,
    seen: set[tuple[int, int]],
    decided: set[tuple[int, int]],
) -> list[Conflict]:
    """What the local rules find between ``m`` and its nearest neighbours (a judge, when
    there is one, has the last word on each finding)."""
    out: list[Conflict] = []
    near = _neighbours(store, m, neighbours)
    if not near:
        return out
    skip = lineage(store, [m.id, *near]) | recorded_pairs(store, [m.id])
    others = {o.id: o for o in store.get_many(near)}
    settled: set[str] | None = None
    for oid in near:
        o = others.get(oid)
        pair = (min(m.id, oid), max(m.id, oid))
        if o is None or pair in seen or pair in skip or not scannable(o):
            continue
        seen.add(pair)
        if m.kind in CHANGE_KINDS and o.kind in CHANGE_KINDS:
            continue
        if never_compared(m, o):
            continue  # one source's versions, one document's parts, a commit and its document
        finding = detect(m, o)
        if finding is None or wording_only(m, o, finding):
            continue
        if settled is None:
            settled = settled_texts(store, [m.id])
        if texts_key(m.content_hash, o.content_hash) in settled:
            continue  # these two texts were settled before, under other ids
        decided.add(pair)
        conflict = _judge(m, o, judge) if judge is not None else None
        if conflict is None:
            newer, older = _newer_first(m, o, finding)
            conflict = Conflict(
                older.id,
                newer.id,
                finding.type,
                finding.reason,
                finding.confidence,
                finding.partial,
            )
        if conflict.type:
            out.append(conflict)
    return out


def _by_subject(
    store: MemoryStore,
    m: Memory,
    judge: Judge | None,
    limit: int,
    decided: set[tuple[int, int]],
) -> tuple[list[Conflict], list[Candidate]]:
    """The earlier memories on ``m``'s subject that the rules did not compare: judged when a
    judge answers, else pending. A pair recorded, judged or settled before is left alone
    (a pending one is read again by a judge)."""
    kinds = RELATED_KINDS + CHANGE_KINDS
    found = propose(
        store, m, kinds, lambda x, y: scannable(y) and not never_compared(x, y), limit=2 * limit
    )
    found = [c for c in found if c.pair not in decided][:limit]
    if not found:
        return [], []
    others = [c.older for c in found]
    skip = lineage(store, [m.id, *others]) | recorded_pairs(store, [m.id])
    settled = settled_texts(store, [m.id])
    hashes = {o.id: o.content_hash for o in store.get_many(others)}
    conflicts: list[Conflict] = []
    pending: list[Candidate] = []
    for c in found:
        decided.add(c.pair)
        if c.pair in skip or texts_key(m.content_hash, hashes.get(c.older, "")) in settled:
            continue
        if judge is None:
            pending.append(c)
            continue
        older, newer = store.get_many([c.older, c.newer])
        conflict = _judge(older, newer, judge)
        if conflict is None:
            pending.append(c)  # the judge could not answer now: it waits
        else:
            conflicts.append(replace(conflict, judged=True))
    return conflicts, pending


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
    store: MemoryStore,
    ids: Iterable[int],
    *,
    judge: Judge | None = None,
    bounds: Bounds | None = None,
) -> list[int]:
    """:func:`examine` then :func:`record`, the candidates no judge answered kept as pending
    and the verdicts a judge gave remembered: what every write path calls. Each write is a
    short transaction of its own."""
    outcome = examine(store, ids, judge=judge, bounds=bounds)
    return record_outcome(store, outcome)


def record_outcome(store: MemoryStore, outcome: Outcome) -> list[int]:
    """Record what :func:`examine` found (see :func:`scan_and_record`)."""
    opened = record(store, [c for c in outcome.conflicts if c.type])
    for c in outcome.conflicts:
        if c.judged:
            candidates.judged(store, c.older, c.newer, bool(c.type), c.reason or None)
    for p in outcome.pending:
        candidates.propose(store, p.older, p.newer, p.score, p.why)
    return opened


WRITE_SCAN_SECONDS = 30.0
"""Wall time the scan after one ingest takes at most; what is left waits for the next."""


@dataclass(frozen=True)
class Progress:
    """What one bounded scan of the backlog did."""

    opened: list[int]
    scanned: int
    pending: int
    left: int
    seconds: float

    @property
    def stopped(self) -> bool:
        return self.left > 0

    def to_dict(self) -> dict[str, object]:
        return {
            "scanned": self.scanned,
            "pending": self.pending,
            "left": self.left,
            "seconds": round(self.seconds, 3),
        }


def hold_backlog(store: MemoryStore, after: int) -> None:
    """Keep the memories added after id ``after`` waiting for :func:`scan_backlog` (an
    ingestion stores its memories first and scans them once their vectors are in; a process
    killed in between leaves them waiting, not forgotten)."""
    kept = store.cursors.get(BACKLOG).get("after")
    if kept is None or int(kept) > after:
        store.cursors.set(BACKLOG, {"after": str(after)})


def scan_backlog(
    store: MemoryStore,
    after: int,
    *,
    judge: Judge | None = None,
    bounds: Bounds | None = None,
) -> Progress:
    """Scan the memories added after id ``after`` — and those an earlier run left, when its
    cursor is further back — oldest first, a batch at a time: each batch is read, its
    findings recorded (short transactions, so other writers are never held up long) and the
    cursor moved past it. Stops once ``bounds.seconds`` have passed; the next call goes on
    from where this one stopped."""
    bounds = bounds or Bounds(seconds=WRITE_SCAN_SECONDS)
    kept = store.cursors.get(BACKLOG).get("after")
    start = min(int(kept), after) if kept else after
    todo = ids_after(store, start)
    t0 = time.monotonic()
    opened: list[int] = []
    scanned = pending = 0
    done = 0
    for i in range(0, len(todo), SCAN_BATCH):
        batch = todo[i : i + SCAN_BATCH]
        left = None if bounds.seconds is None else bounds.seconds - (time.monotonic() - t0)
        outcome = examine(store, batch, judge=judge, bounds=replace(bounds, seconds=left))
        opened += record_outcome(store, outcome)
        scanned += len(outcome.scanned)
        pending += len(outcome.pending)
        through = outcome.scanned[-1] if outcome.stopped and outcome.scanned else None
        if not outcome.stopped:
            through = batch[-1]
        if through is not None:
            store.cursors.set(BACKLOG, {"after": str(through)})
            done = todo.index(through) + 1
        if outcome.stopped:
            break
    return Progress(opened, scanned, pending, len(todo) - done, time.monotonic() - t0)


@dataclass
class Judged:
    """What one pass over the waiting candidates did: the contradictions it opened, the pairs
    judged a conflict or compatible, and those the judge could not answer (still pending)."""

    opened: list[int] = field(default_factory=list)
    conflicts: int = 0
    compatible: int = 0
    unanswered: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "opened": list(self.opened),
            "conflicts": self.conflicts,
            "compatible": self.compatible,
            "unanswered": self.unanswered,
        }


def judge_waiting(
    store: MemoryStore,
    judge: Judge,
    *,
    limit: int = 1000,
    seconds: float | None = WRITE_SCAN_SECONDS,
) -> Judged:
    """Put at most ``limit`` pairs that wait to ``judge`` until ``seconds`` have passed: the
    candidate pairs (best first), then the contradictions the local rules only suspected (the
    judge has the last word on those, as it has during a scan: confirmed open, or dismissed).
    A verdict is remembered, a conflict recorded; a pair the judge cannot answer now keeps
    waiting."""
    t0 = time.monotonic()
    out = Judged()
    asked = 0

    def more() -> bool:
        return asked < limit and (seconds is None or time.monotonic() - t0 <= seconds)

    for row in candidates.pending(store, limit=limit):
        if not more():
            break
        asked += 1
        pair = store.get_many([row.older, row.newer])
        if len(pair) != 2:
            continue
        conflict = _judge(pair[0], pair[1], judge)
        if conflict is None:
            out.unanswered += 1
            continue
        candidates.judged(store, row.older, row.newer, bool(conflict.type), conflict.reason)
        if conflict.type:
            out.conflicts += 1
            out.opened += record(store, [conflict])
        else:
            out.compatible += 1
    for suspected in store.contradictions.query(ContradictionStatus.SUSPECTED):
        if not more():
            break
        pair = store.get_many([suspected.memory_a, suspected.memory_b])
        if len(pair) != 2:
            continue
        asked += 1
        conflict = _judge(pair[0], pair[1], judge)
        if conflict is None:
            out.unanswered += 1
        elif conflict.type:
            out.conflicts += 1
            store.contradictions.confirm(suspected.id, f"by a judge: {conflict.reason}")
            out.opened.append(suspected.id)
        else:
            out.compatible += 1
            store.contradictions.dismiss(suspected.id, "a judge found no conflict")
    return out


def judge_pending(
    store: MemoryStore, judge: Judge, *, seconds: float | None = WRITE_SCAN_SECONDS
) -> list[int]:
    """:func:`judge_waiting` over every waiting pair; answers the contradictions opened."""
    return judge_waiting(store, judge, seconds=seconds).opened


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
