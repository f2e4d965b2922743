"""The context for a file: the tiered knowledge an AI assistant should see when it is open."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from predictive.compress import backfill_levels
from predictive.engine import AssembledContext, ContextEngine, ContextRequest
from predictive.operations.errors import ArgumentError
from predictive.operations.requests import ContextArgs
from predictive.signals import Activity, Diagnostic, diagnostics_from_json
from predictive.state import EditorState
from storage import MemoryStore
from storage.paths import current_branch
from storage.vector_progress import vector_progress


def project_path(root: Path, path: str) -> str:
    """``path`` (plain, ``~``, absolute, or a ``file:`` URI, ``file:../x`` too) as a path
    relative to ``root``, the one normaliser of every front door; a path that leads outside the
    project (``..``, a symbolic link, another folder) or names a folder is refused."""
    given = path
    if path.startswith("file:"):
        path = unquote(urlparse(path).path)
        if len(path) > 2 and path[0] == "/" and path[2] == ":":
            path = path[1:]  # file:///C:/x on Windows
    p = Path(path).expanduser()
    full = p if p.is_absolute() else root / p
    try:
        rel = full.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):  # outside, too long, a symbolic link loop
        raise ArgumentError("path", f"{given} is outside the project {root}") from None
    try:
        is_folder = full.is_dir()
    except OSError:
        is_folder = False
    if is_folder or not rel.parts:
        raise ArgumentError("path", f"{given} is not a file")
    return rel.as_posix()


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
    rel = project_path(root, a.path)
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
    assembled = engine.assemble(replace(base, **overrides), record=record)
    learning = vector_progress(store)
    if learning is not None and not learning.complete:
        assembled = replace(assembled, learning=learning)
    return assembled
