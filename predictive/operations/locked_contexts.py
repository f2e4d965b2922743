"""Locked contexts: an agent pins a named context and reads it back by name; locking the same
name again adds a version and keeps the old ones."""

from __future__ import annotations

from predictive.locked_contexts import lock_context
from predictive.operations.requests import LockArgs, LockedContextArgs, LockedListArgs
from predictive.operations.results import Locked, LockedContexts, LockedContextView
from storage import MemoryStore


def lock(store: MemoryStore, a: LockArgs) -> Locked:
    """Store ``a.content`` (or the texts of ``a.memory_ids``) as the next version of
    ``a.name``; nothing is added when the newest version holds the same."""
    context, created = lock_context(
        store,
        a.name,
        a.content,
        memory_ids=a.memory_ids,
        tags=a.tags,
        note=a.note,
        source=a.source,
    )
    return Locked(context, created)


def locked_context(store: MemoryStore, a: LockedContextArgs) -> LockedContextView:
    """A version of a locked context (the newest by default) with the list of its versions."""
    contexts = store.locked_contexts
    context = contexts.get(a.name, a.version)
    return LockedContextView(context, a.level, tuple(contexts.versions(context.name)))


def locked_contexts(store: MemoryStore, a: LockedListArgs) -> LockedContexts:
    """Every locked context's newest version, most recently locked first."""
    return LockedContexts(tuple(store.locked_contexts.list(tag=a.tag, limit=a.limit)))
