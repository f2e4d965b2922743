"""What the memory commands do with a project's store. Runs on the project's worker thread;
arguments arrive already typed (see ``server.features.memory``); results are JSON-ready."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from predictive.compress import fill_levels
from predictive.retrieval import recall as ranked_recall
from server.commands import ArgumentError
from storage import (
    AccessKind,
    Anchor,
    AnchorType,
    Contradiction,
    ContradictionStatus,
    EdgeType,
    Kind,
    Level,
    Memory,
    MemoryFilter,
    MemoryStore,
    NewMemory,
    Resolution,
    Scope,
)
from storage.search import MIN_SIMILARITY

if TYPE_CHECKING:
    from server.features.contradictions import ContradictionsArgs, ResolveArgs
    from server.features.memory import (
        ExploreArgs,
        ForgetArgs,
        IdArgs,
        RecallArgs,
        RememberArgs,
        SearchArgs,
    )
    from server.projects import Project


def _store(project: Project) -> MemoryStore:
    assert project.store is not None
    return project.store


def _memory(store: MemoryStore, memory_id: int, argument: str = "id") -> Memory:
    found = store.get_many([memory_id])
    if not found:
        raise ArgumentError(argument, f"no memory #{memory_id}")
    return found[0]


def _anchors(values: tuple[str, ...], argument: str) -> list[Anchor]:
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
    except Exception:
        import dataclasses

        return dataclasses.replace(m, **missing)


def brief(m: Memory) -> dict[str, Any]:
    """A memory as a list entry: its labels, not its full text."""
    return {
        "id": m.id,
        "kind": m.kind.value,
        "label": m.index_label,
        "compressed": m.compressed,
        "anchors": [str(a) for a in m.anchors],
        "archived": m.archived,
        "supersededBy": m.superseded_by,
        "createdAt": m.created_at,
    }


# ---- remember / search / recall / explore ---------------------------------------------------


def remember(project: Project, a: RememberArgs, rel: str | None) -> dict[str, Any]:
    store = _store(project)
    anchors = _anchors(a.anchors, "anchors") + [
        Anchor(AnchorType.TAG, t.strip()) for t in a.tags if t.strip()
    ]
    if rel is not None:
        anchors.append(Anchor(AnchorType.FILE, rel))
    if a.supersedes is not None:
        _memory(store, a.supersedes, "supersedes")
    result = store.add(
        NewMemory(
            text=a.text,
            kind=Kind(a.kind),
            anchors=anchors,
            importance=a.importance,
            scope=Scope(a.scope),
            source=a.source,
        )
    )
    if a.supersedes is not None and a.supersedes != result.id:
        store.graph.supersede(a.supersedes, result.id)
    m = levels_of(store, store.get(result.id))
    return {"id": m.id, "created": result.created, "memory": brief(m)}


def search(project: Project, a: SearchArgs) -> dict[str, Any]:
    """One search over memories and conversations; each result names its source."""
    from predictive.retrieval import find

    store = _store(project)
    filters = MemoryFilter(
        kinds=[Kind(k) for k in a.kinds],
        anchors=_anchors(a.anchors, "anchors"),
        branch=a.branch,
        include_archived=a.include_archived,
        valid_at=None if a.include_archived or a.as_of is not None else time.time(),
    )
    results = find(
        store,
        a.query,
        filters=filters,
        k=a.limit,
        mode=a.mode,
        as_of=a.as_of,
        min_similarity=a.min_similarity,
    )
    ids = [r.memory.id for r in results if r.memory is not None]
    if ids:
        store.usage.record_many(
            ids,
            AccessKind.RETRIEVAL,
            context="lsp search",
            bump_generation=False,  # usage is logged; the cached contexts stay valid
        )
    out = []
    for r in results:
        d = r.to_dict()
        m = r.memory
        if m is not None:
            d.update(compressed=m.compressed, archived=m.archived)
        out.append(camel_keys(d))
    return {"query": a.query, "count": len(out), "results": out}


def recall(project: Project, a: RecallArgs) -> dict[str, Any]:
    store = _store(project)
    m = _memory(store, a.id)
    store.usage.record_many(
        [m.id], AccessKind.VIEW, context=f"lsp recall {a.level}", bump_generation=False
    )
    if a.level == "related":
        steps = store.graph.traverse(m.id, depth=a.depth, direction="both", limit=a.limit)
        mems = {x.id: x for x in store.get_many([s.memory_id for s in steps])}
        related = []
        for s in steps:
            r = mems.get(s.memory_id)
            if r is None:
                continue
            r = levels_of(store, r)
            related.append(
                {
                    **brief(r),
                    "depth": s.depth,
                    "via": s.via.value,
                    "from": s.parent_id,
                    "strength": round(s.strength, 6),
                }
            )
        return {"id": m.id, "level": "related", "memory": brief(m), "related": related}
    m = levels_of(store, m)
    level = Level(a.level)
    text = m.level(level) or m.text
    richer = {"index": "compressed", "compressed": "summary", "summary": "full", "full": "related"}
    return {
        "id": m.id,
        "kind": m.kind.value,
        "level": level.value,
        "text": text,
        "next": richer[level.value],  # what to ask for to see more
        "anchors": [str(x) for x in m.anchors],
        "artifacts": [{"type": x.type, "ref": x.ref, "title": x.title} for x in m.artifacts],
        "source": m.source,
        "createdAt": m.created_at,
        "validFrom": m.valid_from,
        "validTo": m.valid_to,
        "archived": m.archived,
        "supersedes": m.supersedes,
        "supersededBy": m.superseded_by,
        "usage": {
            "retrieved": m.retrieval_count,
            "cited": m.citation_count,
            "ignored": m.ignore_count,
        },
    }


def explore(project: Project, a: ExploreArgs) -> dict[str, Any]:
    """A tree: the root memory (or the best matches of a query) and what the graph links to
    them, to ``depth`` levels, at most ``maxNodes`` nodes, each shown at ``level``."""
    store = _store(project)
    if a.id is not None:
        roots = [_memory(store, a.id)]
    else:
        assert a.query is not None
        roots = [
            r.memory
            for r in ranked_recall(store, a.query, k=a.roots, min_similarity=MIN_SIMILARITY)
        ]
    seen: set[int] = set()
    budget = [a.max_nodes]

    def node(m: Memory) -> dict[str, Any]:
        m = levels_of(store, m)
        text = m.level(Level(a.level)) or m.text
        return {"id": m.id, "kind": m.kind.value, "text": text, "children": []}

    trees = []
    for root in roots:
        if root.id in seen or budget[0] <= 0:
            continue
        seen.add(root.id)
        budget[0] -= 1
        top = node(root)
        by_id = {root.id: top}
        steps = store.graph.traverse(
            root.id, depth=a.depth, direction="both", limit=max(1, a.max_nodes * 2)
        )
        mems = {m.id: m for m in store.get_many([s.memory_id for s in steps])}
        for s in sorted(steps, key=lambda s: (s.depth, -s.strength)):
            if budget[0] <= 0:
                break
            if s.memory_id in seen or s.parent_id not in by_id or s.memory_id not in mems:
                continue
            seen.add(s.memory_id)
            budget[0] -= 1
            child = node(mems[s.memory_id])
            child.update(via=s.via.value, strength=round(s.strength, 6), depth=s.depth)
            by_id[s.memory_id] = child
            by_id[s.parent_id]["children"].append(child)
        trees.append(top)
    if trees:
        store.usage.record_many(
            [t["id"] for t in trees], AccessKind.VIEW, context="lsp explore", bump_generation=False
        )
    return {
        "roots": trees,
        "nodes": a.max_nodes - budget[0],
        "truncated": budget[0] <= 0,
        "depth": a.depth,
        "level": a.level,
    }


# ---- usage / lifecycle ---------------------------------------------------------------------


def cite(project: Project, a: IdArgs) -> dict[str, Any]:
    store = _store(project)
    _memory(store, a.id)
    assert project.engine is not None
    project.engine.cite(a.id, a.context)
    m = store.get(a.id)
    return {"id": m.id, "citationCount": m.citation_count}


def ignore(project: Project, a: IdArgs) -> dict[str, Any]:
    store = _store(project)
    _memory(store, a.id)
    assert project.engine is not None
    project.engine.ignore(a.id, a.context)
    m = store.get(a.id)
    return {"id": m.id, "ignoreCount": m.ignore_count}


def forget(project: Project, a: ForgetArgs) -> dict[str, Any]:
    store = _store(project)
    m = _memory(store, a.id)
    if a.purge:
        if not m.archived:
            raise ArgumentError("purge", f"#{a.id} is not archived; forget it first, then purge")
        store.purge(a.id)
        return {"id": a.id, "archived": True, "purged": True, "changed": True}
    if m.archived:
        return {"id": a.id, "archived": True, "purged": False, "changed": False}
    store.archive(a.id, a.reason)
    return {"id": a.id, "archived": True, "purged": False, "changed": True}


def restore(project: Project, a: IdArgs) -> dict[str, Any]:
    store = _store(project)
    m = _memory(store, a.id)
    if not m.archived:
        return {"id": a.id, "archived": False, "changed": False}
    store.restore(a.id)
    return {"id": a.id, "archived": False, "changed": True}


def stats(project: Project) -> dict[str, Any]:
    store = _store(project)
    out = {_camel(k): v for k, v in store.stats().to_dict().items()}
    out.update(
        folder=project.uri,
        root=str(project.root),
        branch=project.branch,
        injectionTargets=[str(project.injector.path(t)) for t in project.injector.targets],
    )
    return out


# ---- contradictions ------------------------------------------------------------------------


def _contradiction(store: MemoryStore, c: Contradiction) -> dict[str, Any]:
    mems = {m.id: levels_of(store, m) for m in store.get_many([c.memory_a, c.memory_b])}

    def side(mid: int) -> dict[str, Any] | None:
        m = mems.get(mid)
        return None if m is None else {**brief(m), "text": m.text}

    return {
        "id": c.id,
        "a": side(c.memory_a),
        "b": side(c.memory_b),
        "status": c.status.value,
        "resolution": c.resolution.value if c.resolution else None,
        "note": c.note,
        "reason": c.reason,
        "confidence": c.confidence,
        "detectedAt": c.detected_at,
        "resolvedAt": c.resolved_at,
    }


def contradictions(project: Project, a: ContradictionsArgs) -> dict[str, Any]:
    store = _store(project)
    status = None if a.status == "all" else ContradictionStatus(a.status)
    found = store.contradictions.query(status)[: a.limit]
    return {
        "status": a.status,
        "count": len(found),
        "contradictions": [_contradiction(store, c) for c in found],
    }


def resolve_contradiction(project: Project, a: ResolveArgs) -> dict[str, Any]:
    store = _store(project)
    existing = {c.id: c for c in store.contradictions.query(None)}
    c = existing.get(a.id)
    if c is None:
        raise ArgumentError("id", f"no contradiction #{a.id}")
    if c.status is not ContradictionStatus.OPEN:
        raise ArgumentError("id", f"contradiction #{a.id} is already {c.status.value}")
    if a.resolution == "dismissed":
        out = _contradiction(store, store.contradictions.dismiss(a.id, a.note))
        out["mergedId"] = None
        return out
    merged_id = a.merged_id
    if merged_id is not None:
        _memory(store, merged_id, "mergedId")
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
            raise ArgumentError("mergedText", "the merged text is the same as one of the pair")
        store.graph.add(merged_id, c.memory_a, EdgeType.DERIVED_FROM, 1.0)
        store.graph.add(merged_id, c.memory_b, EdgeType.DERIVED_FROM, 1.0)
    resolved = store.contradictions.resolve(
        a.id, Resolution(a.resolution), a.note, merged_id=merged_id
    )
    out = _contradiction(store, resolved)
    out["mergedId"] = merged_id
    return out


def camel_keys(value: Any) -> Any:
    from server.convert import camel_keys as convert

    return convert(value)


def _camel(key: str) -> str:
    from server.convert import camel

    return camel(key)
