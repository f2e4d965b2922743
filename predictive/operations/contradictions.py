"""Contradictions: list them (by default the review list: open ones, then suspected ones),
settle them (a_wins | b_wins | both_valid | merged, with a note), confirm a suspected one (it
becomes open: shown with its memories), or dismiss one that is not a contradiction at all
(both memories stay untouched). ``pending`` lists the candidate pairs found by subject that
wait for a judge (never shown in a context): each with its candidate id, the older memory as
``a``, the newer as ``b``, and why it was proposed.

The loser of a_wins/b_wins is superseded by the winner, never deleted; ``merged`` takes the id
of a memory that merges both or its text (stored as a new memory derived from both)."""

from __future__ import annotations

from predictive.operations.errors import ArgumentError
from predictive.operations.memory import levels_of, memory_of
from predictive.operations.requests import ContradictionsArgs, ResolveArgs
from predictive.operations.results import (
    Brief,
    ContradictionList,
    ContradictionView,
    Side,
    StaleMemory,
)
from storage import (
    Contradiction,
    ContradictionStatus,
    EdgeType,
    MemoryStore,
    NewMemory,
    NotFound,
    Resolution,
)
from storage import conflict_candidates as candidates


def view(store: MemoryStore, c: Contradiction, merged_id: int | None = None) -> ContradictionView:
    """A contradiction with both of its sides."""
    mems = {m.id: levels_of(store, m) for m in store.get_many([c.memory_a, c.memory_b])}

    def side(mid: int) -> Side | None:
        m = mems.get(mid)
        return None if m is None else Side(Brief.of(m), m.text)

    return ContradictionView(
        id=c.id,
        a=side(c.memory_a),
        b=side(c.memory_b),
        status=c.status.value,
        resolution=c.resolution.value if c.resolution else None,
        note=c.note,
        reason=c.reason,
        confidence=c.confidence,
        detected_at=c.detected_at,
        resolved_at=c.resolved_at,
        merged_id=merged_id,
    )


REVIEW = (ContradictionStatus.OPEN, ContradictionStatus.SUSPECTED)
"""What ``review`` lists: the contradictions not settled yet, open ones first."""
_ORDER = {s: i for i, s in enumerate(ContradictionStatus)}


def pending(store: MemoryStore, limit: int) -> ContradictionList:
    """The candidate pairs that wait for a judge, best first."""
    rows = candidates.pending(store, limit)
    mems = {
        m.id: levels_of(store, m)
        for m in store.get_many([i for r in rows for i in (r.older, r.newer)])
    }

    def side(mid: int) -> Side | None:
        m = mems.get(mid)
        return None if m is None else Side(Brief.of(m), m.text)

    return ContradictionList(
        "pending",
        tuple(
            ContradictionView(
                id=r.id,
                a=side(r.older),
                b=side(r.newer),
                status="pending",
                resolution=None,
                note=None,
                reason=r.why,
                confidence=min(1.0, r.score),
                detected_at=r.proposed_at,
                resolved_at=None,
            )
            for r in rows
        ),
    )


def contradictions(store: MemoryStore, a: ContradictionsArgs) -> ContradictionList:
    if a.status == "pending":
        return pending(store, a.limit)
    if a.status == "all":
        found = store.contradictions.query(None)
    elif a.status == "review":
        found = store.contradictions.query(REVIEW)
    else:
        found = store.contradictions.query(ContradictionStatus(a.status))
    # open before suspected (each newest first, as stored)
    found = sorted(found, key=lambda c: _ORDER[c.status])[: a.limit]
    stale: tuple[StaleMemory, ...] = ()
    if a.status in ("review", "all"):
        stale = stale_memories(store, a.limit)
    return ContradictionList(a.status, tuple(view(store, c) for c in found), stale)


def stale_memories(store: MemoryStore, limit: int) -> tuple[StaleMemory, ...]:
    """Memories whose cited code is gone (first) or changed, as last checked."""
    rows = store.citations.stale(None, limit=limit)
    mems = {m.id: m for m in store.get_many([r.memory_id for r in rows])}
    return tuple(
        StaleMemory(Brief.of(mems[r.memory_id]), r.verdict, r.notes)
        for r in rows
        if r.memory_id in mems
    )


def resolve_contradiction(store: MemoryStore, a: ResolveArgs) -> ContradictionView:
    try:
        c = store.contradictions.get(a.id)
    except NotFound:
        raise ArgumentError("id", f"no contradiction #{a.id}") from None
    if a.resolution == "confirm":
        if c.status is not ContradictionStatus.SUSPECTED:
            raise ArgumentError(
                "id",
                f"contradiction #{a.id} is {c.status.value}: only a suspected one is confirmed",
            )
        return view(store, store.contradictions.confirm(a.id, a.note))
    if c.status not in REVIEW:
        raise ArgumentError("id", f"contradiction #{a.id} is already {c.status.value}")
    if a.resolution == "dismissed":
        return view(store, store.contradictions.dismiss(a.id, a.note))
    merged_id = a.merged_id
    if merged_id is not None:
        memory_of(store, merged_id, "merged_id")
    elif a.resolution == "merged" and a.merged_text is not None:
        ma, mb = store.get_many([c.memory_a, c.memory_b])
        merged_id = store.add(
            NewMemory(
                text=a.merged_text,
                kind=ma.kind,
                anchors=list(dict.fromkeys([*ma.anchors, *mb.anchors])),
                importance=max(ma.importance, mb.importance),
                source="editor",
            )
        ).id
        if merged_id in (c.memory_a, c.memory_b):
            raise ArgumentError("merged_text", "the merged text is the same as one of the pair")
        store.graph.add(merged_id, c.memory_a, EdgeType.DERIVED_FROM, 1.0)
        store.graph.add(merged_id, c.memory_b, EdgeType.DERIVED_FROM, 1.0)
    resolved = store.contradictions.resolve(
        a.id, Resolution(a.resolution), a.note, merged_id=merged_id
    )
    return view(store, resolved, merged_id)
