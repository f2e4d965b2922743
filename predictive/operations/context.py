"""The context for a file: the tiered knowledge an AI assistant should see when it is open."""

from __future__ import annotations

from pathlib import Path

from predictive.compress import backfill_levels
from predictive.engine import AssembledContext, ContextEngine, ContextRequest
from predictive.operations.errors import ArgumentError
from predictive.operations.requests import ContextArgs
from predictive.signals import Activity, Diagnostic, diagnostics_from_json
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
) -> AssembledContext:
    """Assemble the context for ``a.path`` in the project at ``root`` (``engine``: a long-lived
    engine whose cache to use; a new one otherwise)."""
    rel = relative_path(root, a.path)
    diagnostics: tuple[Diagnostic, ...] = ()
    if a.diagnostics:
        try:
            diagnostics = diagnostics_from_json(a.diagnostics, rel)
        except ValueError as e:
            raise ArgumentError("diagnostics", str(e)) from None
    if store.embeddings.pending():
        store.embeddings.embed_pending()
    if engine is None:
        backfill_levels(store)
        engine = ContextEngine(store, root=root)
    return engine.assemble(
        ContextRequest(
            path=rel,
            branch=a.branch if a.branch is not None else current_branch(root),
            diagnostics=diagnostics,
            activity=Activity(a.activity) if a.activity else None,
            budget=a.budget,
            root=str(root),
            as_of=a.as_of,
        )
    )
