"""The context for a file: the tiered knowledge an AI assistant should see when it is open."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from predictive.compress import backfill_levels
from predictive.engine import AssembledContext, ContextEngine, ContextRequest
from predictive.operations.errors import ArgumentError
from predictive.operations.requests import ContextArgs
from predictive.signals import Activity, Diagnostic, diagnostics_from_json
from predictive.state import EditorState
from storage import MemoryStore
from storage.paths import current_branch


def relative_path(root: Path, path: str) -> str:
    """``path`` relative to ``root`` (as given when it lies outside it)."""
    p = Path(path).expanduser()
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def context_for_file(
    store: MemoryStore,
    a: ContextArgs,
    root: Path,
    engine: ContextEngine | None = None,
    editor: EditorState | None = None,
    *,
    record: bool = True,
) -> AssembledContext:
    """Assemble the context for ``a.path`` in the project at ``root`` (``engine``: a long-lived
    engine whose cache to use, a new one otherwise; ``editor``: what the editor shows, which
    the request's own values override; ``record``: log what was served now, else the caller
    records it later)."""
    rel = relative_path(root, a.path)
    diagnostics: tuple[Diagnostic, ...] = ()
    if a.diagnostics:
        try:
            diagnostics = diagnostics_from_json(a.diagnostics, rel)
        except ValueError as e:
            raise ArgumentError("diagnostics", str(e)) from None
    if engine is None:  # a long-lived engine's owner embeds and fills levels in the background
        if store.embeddings.pending():
            store.embeddings.embed_pending()
        backfill_levels(store)
        engine = ContextEngine(store, root=root, wait_for_staleness=True)
    base = editor.request_for(rel) if editor is not None else ContextRequest(path=rel)
    if base.branch is None:
        base = replace(base, branch=current_branch(root))
    overrides: dict[str, Any] = {"root": str(root)}
    for name, value in (
        ("branch", a.branch),
        ("diagnostics", diagnostics if a.diagnostics else None),
        ("activity", Activity(a.activity) if a.activity else None),
        ("budget", a.budget),
        ("as_of", a.as_of),
        ("text", a.text),
    ):
        if value is not None:
            overrides[name] = value
    return engine.assemble(replace(base, **overrides), record=record)
