"""Upkeep: ingest, consolidate, reindex and stats, each a long job with progress."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from predictive.operations.requests import ConsolidateArgs, IngestArgs, ReindexArgs
from predictive.operations.results import Consolidated, Ingested, Reindexed
from storage import MemoryStore, Stats

Progress = Callable[..., None]  # (done, total, message=None); raises to cancel
DEFAULT_BATCH = 256


def ingest(
    store: MemoryStore,
    a: IngestArgs,
    root: Path,
    progress: Progress | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Ingested:
    """Learn from git, decision records, rule files and chats; a summary per source.

    ``defaults`` fill what the request leaves open (a front door's settings: the commit
    filters ``include_merges``, ``include_bots``, ``include_trivial``, the
    ``shared_folder``)."""
    from predictive.ingest import IngestOptions, parse_since, run

    given = defaults or {}

    def chosen(name: str) -> Any:
        value = getattr(a, name)
        return given.get(name) if value is None else value

    options = IngestOptions(
        sources=a.sources,
        tools=a.tools or None,
        paths=a.paths,
        since=parse_since(a.since),
        dry_run=a.dry_run,
        all_workspaces=a.all_workspaces,
        include_merges=bool(chosen("include_merges")),
        include_bots=bool(chosen("include_bots")),
        include_trivial=bool(chosen("include_trivial")),
        shared_folder=chosen("shared_folder") or None,
    )
    return run(store, root=root, options=options, progress=progress)


def consolidate(
    store: MemoryStore, a: ConsolidateArgs, progress: Progress | None = None
) -> Consolidated:
    """Upkeep of the store (see :mod:`predictive.consolidate`); ``dry_run`` writes nothing."""
    from predictive.consolidate import run

    return run(store, options={"dry_run": a.dry_run}, progress=progress)


def reindex(
    store: MemoryStore,
    a: ReindexArgs,
    progress: Progress | None = None,
    check: Callable[[], None] | None = None,
) -> Reindexed:
    """Embed what lacks a vector, then rebuild the keyword and vector indexes from the rows."""
    pending = store.embeddings.pending()
    embedded = store.embeddings.embed_pending(
        batch=a.batch_size or DEFAULT_BATCH, progress=progress
    )
    if check is not None:
        check()
    if progress is not None:
        progress(pending, max(pending, 1), "rebuilding indexes")
    result = store.reindex(
        fts_progress=(lambda done, total: progress(done, total, "keyword index"))
        if progress is not None
        else None
    )
    return Reindexed(embedded, result["fts_rows"], result["vectors"])


def stats(store: MemoryStore) -> Stats:
    return store.stats()
