"""Remember, recall, explore, cite, ignore, forget, restore: the memory operations over a store."""

from __future__ import annotations

import dataclasses
import logging

from predictive.categories import CategoryNode, category_of, category_tree
from predictive.compress import fill_levels
from predictive.operations.errors import ArgumentError
from predictive.operations.requests import (
    ExploreArgs,
    ForgetArgs,
    IdArgs,
    RecallArgs,
    RelatedArgs,
    RememberArgs,
)
from predictive.operations.results import (
    Brief,
    Cited,
    Explored,
    Ignored,
    Lifecycle,
    Link,
    Node,
    Recalled,
    RecalledRelated,
    RelatedItem,
    Remembered,
    Usage,
)
from predictive.retrieval import recall as ranked_recall
from storage import (
    AccessKind,
    Anchor,
    AnchorType,
    Artifact,
    EdgeType,
    InvalidInput,
    Kind,
    Level,
    Memory,
    MemoryStore,
    NewMemory,
    Scope,
    StoreError,
)
from storage.search import MIN_SIMILARITY

log = logging.getLogger(__name__)

RICHER = {"index": "compressed", "compressed": "summary", "summary": "full", "full": "related"}


def memory_of(store: MemoryStore, memory_id: int, argument: str = "id") -> Memory:
    """The memory, or an ArgumentError naming ``argument``."""
    found = store.get_many([memory_id])
    if not found:
        raise ArgumentError(argument, f"no memory #{memory_id}")
    return found[0]


def anchors_of(values: tuple[str, ...], argument: str = "anchors") -> list[Anchor]:
    out = []
    for i, v in enumerate(values):
        try:
            out.append(Anchor.parse(v))
        except ValueError as e:
            raise ArgumentError(f"{argument}[{i}]", str(e)) from None
    return out


def levels_of(store: MemoryStore, m: Memory) -> Memory:
    """``m`` with every level filled (computed deterministically and saved when missing)."""
    missing = fill_levels(m)
    if not missing:
        return m
    try:
        return store.update(m.id, **missing)
    except (StoreError, InvalidInput):
        log.debug("could not save the levels of #%s", m.id, exc_info=True)
        return dataclasses.replace(m, **missing)


def remember(store: MemoryStore, a: RememberArgs, file: str | None = None) -> Remembered:
    """Store a memory (``file``: the project-relative file it is about)."""
    anchors = anchors_of(a.anchors) + [
        Anchor(AnchorType.TAG, t.strip()) for t in a.tags if t.strip()
    ]
    if file is not None:
        anchors.append(Anchor(AnchorType.FILE, file))
    artifacts = [Artifact(*raw.split(":", 1)) for raw in a.artifacts]
    if a.supersedes is not None:
        memory_of(store, a.supersedes, "supersedes")
    result = store.add(
        NewMemory(
            text=a.text,
            kind=Kind(a.kind),
            anchors=anchors,
            artifacts=artifacts,
            importance=a.importance,
            scope=Scope(a.scope),
            source=a.source,
            source_id=a.source_id,
        )
    )
    if a.supersedes is not None and a.supersedes != result.id:
        store.graph.supersede(a.supersedes, result.id)
    opened = _scan(store, result.id) if result.created else ()
    m = levels_of(store, store.get(result.id))
    return Remembered(m.id, result.created, Brief.of(m), opened)


def _scan(store: MemoryStore, memory_id: int) -> tuple[int, ...]:
    """The contradictions a new memory opens with what the store knew (a configured model
    judges the candidates); a failing scan is logged and the memory stays remembered."""
    from predictive.conflicts import scan_and_record
    from predictive.llm import client_for
    from predictive.llm_judge import scanner_judge

    try:
        judge = scanner_judge(client_for(store))
        return tuple(scan_and_record(store, [memory_id], judge=judge))
    except Exception:
        log.warning("scanning #%s for contradictions failed", memory_id, exc_info=True)
        return ()


def recall(store: MemoryStore, a: RecallArgs, via: str = "recall") -> Recalled | RecalledRelated:
    """One memory at a level (index → compressed → summary → full), or what it relates to."""
    m = memory_of(store, a.id)
    store.usage.record_many(
        [m.id], AccessKind.VIEW, context=f"{via} {a.level}", bump_generation=False
    )
    if a.level == "related":
        return related(store, RelatedArgs(a.id, depth=a.depth, limit=a.limit))
    m = levels_of(store, m)
    level = Level(a.level)
    return Recalled(
        id=m.id,
        kind=m.kind.value,
        level=level.value,
        text=m.level(level) or m.text,
        next=RICHER[level.value],
        anchors=tuple(str(x) for x in m.anchors),
        artifacts=tuple({"type": x.type, "ref": x.ref, "title": x.title} for x in m.artifacts),
        source=m.source,
        created_at=m.created_at,
        valid_from=m.valid_from,
        valid_to=m.valid_to,
        archived=m.archived,
        supersedes=m.supersedes,
        superseded_by=m.superseded_by,
        usage=Usage(m.retrieval_count, m.citation_count, m.ignore_count),
        scope=m.scope.value,
        source_id=m.source_id,
        importance=m.importance,
        decay_score=m.decay_score,
        archived_at=m.archived_at,
        archive_reason=m.archive_reason,
        categories=tuple(store.categories.of(m.id)),
        edges=tuple(
            Link(e.source_id, e.target_id, e.type.value, e.strength)
            for e in store.graph.edges(m.id, direction="both")
        ),
        review=m.review.value,
        shared=m.metadata.get("shared") if isinstance(m.metadata.get("shared"), dict) else None,
    )


def related(store: MemoryStore, a: RelatedArgs) -> RecalledRelated:
    """What the graph links to a memory (optionally adding a link first), nearest first."""
    m = memory_of(store, a.id)
    types = [_edge_type(t, "types") for t in a.types] or None
    if a.link is not None:
        memory_of(store, a.link, "link")
        store.graph.add(a.id, a.link, _edge_type(a.link_type, "link_type"), a.strength)
    steps = store.graph.traverse(
        m.id,
        depth=a.depth,
        types=types,
        min_strength=a.min_strength,
        direction=a.direction,
        limit=a.limit,
    )
    mems = {x.id: x for x in store.get_many([s.memory_id for s in steps])}
    items = tuple(
        RelatedItem(
            Brief.of(levels_of(store, mems[s.memory_id])),
            s.depth,
            s.via.value,
            s.parent_id,
            round(s.strength, 6),
        )
        for s in steps
        if s.memory_id in mems
    )
    return RecalledRelated(m.id, Brief.of(m), items)


def _edge_type(value: str, argument: str) -> EdgeType:
    for t in EdgeType:
        if t.value.lower() == value.lower():
            return t
    allowed = ", ".join(t.value for t in EdgeType)
    raise ArgumentError(argument, f"{value!r} is not one of {allowed}")


def explore(store: MemoryStore, a: ExploreArgs, via: str = "explore") -> Explored:
    """A tree: the root memory (or the best matches of a query) and what the graph links to
    them, to ``depth`` levels, at most ``max_nodes`` nodes, each shown at ``level``."""
    if a.category is not None:
        return _explore_category(store, a)
    if a.id is not None:
        roots = [memory_of(store, a.id)]
    else:
        assert a.query is not None
        roots = [
            r.memory
            for r in ranked_recall(store, a.query, k=a.roots, min_similarity=MIN_SIMILARITY)
        ]
    seen: set[int] = set()
    left = a.max_nodes

    def node(m: Memory) -> Node:
        m = levels_of(store, m)
        return Node(m.id, m.kind.value, m.level(Level(a.level)) or m.text)

    trees = []
    for root in roots:
        if root.id in seen or left <= 0:
            continue
        seen.add(root.id)
        left -= 1
        top = node(root)
        top.areas = tuple(c.name for c in category_of(store, root.id))
        by_id = {root.id: top}
        steps = store.graph.traverse(
            root.id, depth=a.depth, direction="both", limit=max(1, a.max_nodes * 2)
        )
        mems = {m.id: m for m in store.get_many([s.memory_id for s in steps])}
        for s in sorted(steps, key=lambda s: (s.depth, -s.strength)):
            if left <= 0:
                break
            if s.memory_id in seen or s.parent_id not in by_id or s.memory_id not in mems:
                continue
            seen.add(s.memory_id)
            left -= 1
            child = node(mems[s.memory_id])
            child.via, child.strength, child.depth = s.via.value, round(s.strength, 6), s.depth
            by_id[s.memory_id] = child
            by_id[s.parent_id].children.append(child)
        trees.append(top)
    if trees:
        store.usage.record_many(
            [t.id for t in trees], AccessKind.VIEW, context=via, bump_generation=False
        )
    return Explored(tuple(trees), a.max_nodes - left, left <= 0, a.depth, a.level)


def _explore_category(store: MemoryStore, a: ExploreArgs) -> Explored:
    """The category tree under ``a.category`` ("": every top category), each node with its
    summary and member counts, at most ``max_nodes`` nodes."""
    forest = category_tree(store, root=a.category or None, depth=a.depth)
    if a.category and not forest:
        raise ArgumentError("category", f"no category {a.category!r}")
    left = a.max_nodes

    def cut(nodes: tuple[CategoryNode, ...] | list[CategoryNode]) -> tuple[CategoryNode, ...]:
        nonlocal left
        kept = []
        for n in nodes:
            if left <= 0:
                break
            left -= 1
            kept.append(dataclasses.replace(n, children=cut(n.children)))
        return tuple(kept)

    shown = cut(forest)
    return Explored((), a.max_nodes - left, left <= 0, a.depth, a.level, shown)


def cite(store: MemoryStore, a: IdArgs) -> Cited:
    """A served memory influenced real work: ranks it up."""
    memory_of(store, a.id)
    store.usage.record(a.id, AccessKind.CITATION, a.context)
    return Cited(a.id, store.get(a.id).citation_count)


def ignore(store: MemoryStore, a: IdArgs) -> Ignored:
    """A served memory was not used: ranks it down."""
    memory_of(store, a.id)
    store.usage.record(a.id, AccessKind.IGNORE, a.context)
    return Ignored(a.id, store.get(a.id).ignore_count)


def forget(store: MemoryStore, a: ForgetArgs) -> Lifecycle:
    """Archive a memory (restorable); ``purge`` deletes an archived one for good."""
    m = memory_of(store, a.id)
    if a.purge:
        if not m.archived:
            raise ArgumentError("purge", f"#{a.id} is not archived; forget it first, then purge")
        store.purge(a.id)
        return Lifecycle(a.id, archived=True, purged=True, changed=True)
    if m.archived:
        return Lifecycle(a.id, archived=True, purged=False, changed=False)
    store.archive(a.id, a.reason)
    return Lifecycle(a.id, archived=True, purged=False, changed=True)


def restore(store: MemoryStore, a: IdArgs) -> Lifecycle:
    m = memory_of(store, a.id)
    if not m.archived:
        return Lifecycle(a.id, archived=False, purged=False, changed=False)
    store.restore(a.id)
    return Lifecycle(a.id, archived=False, purged=False, changed=True)
