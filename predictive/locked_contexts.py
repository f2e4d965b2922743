"""Locked contexts: an agent pins a named context — text it wrote, or the memories it names —
and reads it back by name at the preview or the full level; relocking keeps the old version.
This module makes what is stored (the content of named memories, the preview); the typed
operations are in :mod:`predictive.operations.locked_contexts`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from predictive.tokens import truncate_to_tokens
from storage import InvalidInput, MemoryStore
from storage.locked_contexts import LockedContext
from storage.redact import redact

PREVIEW_TOKENS = 120
_RULE = re.compile(r"\b(MUST|ALWAYS|NEVER|REQUIRED|CRITICAL|WARNING|DO NOT|DON'T)\b", re.I)


def preview_of(content: str) -> str:
    """Title, first substantial paragraph and up to two rule lines, at most PREVIEW_TOKENS."""
    lines = [ln.strip() for ln in content.splitlines() if ln.strip()]
    title = next((ln.lstrip("#").strip() for ln in lines[:5] if ln.startswith("#")), "")
    body = next((ln for ln in lines if not ln.startswith("#") and len(ln) > 40), "")
    if not body:
        body = next((ln for ln in lines if not ln.startswith("#")), "")
    rules = [ln for ln in lines if _RULE.search(ln) and ln != body][:2]
    parts = [p for p in (title, body) if p]
    if rules:
        parts.append("Rules: " + "; ".join(rules))
    return truncate_to_tokens("\n".join(parts) or content.strip(), PREVIEW_TOKENS)


def _content_of(store: MemoryStore, memory_ids: Sequence[int]) -> str:
    """The full texts of the named memories, each headed by its id and kind."""
    found = {m.id: m for m in store.get_many(list(memory_ids))}
    missing = [i for i in memory_ids if i not in found]
    if missing:
        raise InvalidInput(f"no memory #{missing[0]}")
    return "\n\n".join(f"## #{i} {found[i].kind.value}\n{found[i].text}" for i in memory_ids)


def lock_context(
    store: MemoryStore,
    name: str,
    content: str | None = None,
    *,
    memory_ids: Sequence[int] = (),
    tags: Sequence[str] = (),
    note: str | None = None,
    source: str = "mcp",
) -> tuple[LockedContext, bool]:
    """Lock ``content`` (or, without it, the texts of ``memory_ids``) as the next version of
    ``name``; the flag says whether a new version was written (same content: no)."""
    if content is None or not content.strip():
        if not memory_ids:
            raise InvalidInput("give the content to lock, or the ids of memories to lock")
        content = _content_of(store, memory_ids)
    content = redact(content)  # before the preview is cut from it
    return store.locked_contexts.lock(
        name,
        content,
        preview=preview_of(content),
        tags=tags,
        memory_ids=memory_ids,
        note=note,
        source=source,
    )
