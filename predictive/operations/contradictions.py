"""Contradictions: list them, settle them (a_wins | b_wins | both_valid | merged, with a note),
or dismiss one that is not a contradiction at all (both memories stay untouched).

The loser of a_wins/b_wins is superseded by the winner, never deleted; ``merged`` takes the id
of a memory that merges both or its text (stored as a new memory derived from both)."""

from __future__ import annotations

from predictive.operations.errors import ArgumentError
from predictive.operations.memory import levels_of, memory_of
from predictive.operations.requests import ContradictionsArgs, ResolveArgs
from predictive.operations.results import Brief, ContradictionList, ContradictionView, Side
from storage import (
    Contradiction,
    ContradictionStatus,
    EdgeType,
    MemoryStore,
    NewMemory,
    Resolution,
)


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


def contradictions(store: MemoryStore, a: ContradictionsArgs) -> ContradictionList:
    status = None if a.status == "all" else ContradictionStatus(a.status)
    found = store.contradictions.query(status)[: a.limit]
    return ContradictionList(a.status, tuple(view(store, c) for c in found))


def resolve_contradiction(store: MemoryStore, a: ResolveArgs) -> ContradictionView:
    existing = {c.id: c for c in store.contradictions.query(None)}
    c = existing.get(a.id)
    if c is None:
        raise ArgumentError("id", f"no contradiction #{a.id}")
    if c.status is not ContradictionStatus.OPEN:
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
