"""Typed results of the long upkeep jobs: ingestion, consolidation and the categories'
refresh both run. Snake_case fields; the front doors turn them to camelCase
(``server.convert.to_wire``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from predictive.consolidation.plan import Change
from predictive.result import Result


def _without_none(result: Result) -> dict[str, Any]:
    return {k: v for k, v in Result.to_dict(result).items() if v is not None}


@dataclass(frozen=True)
class CategoriesRefreshed(Result):
    """What refreshing the categories did (or, dry, would do). Three shapes: ``unchanged``
    (nothing changed since the last refresh), a dry run (``would_create``,
    ``would_delete``) and a refresh (``full`` or only the new memories placed); the fields
    of the other shapes are None and left out of ``to_dict``."""

    dry_run: bool
    unchanged: bool | None = None
    full: bool | None = None
    categories: int | None = None  # how many there are (dry: would be)
    would_create: tuple[str, ...] | None = None
    would_delete: tuple[str, ...] | None = None
    created: int | None = None
    deleted: int | None = None
    members_added: int | None = None
    members_removed: int | None = None
    summarised: int | None = None
    llm_summaries: int | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return _without_none(self)


@dataclass(frozen=True)
class SourceIngested(Result):
    """What ingesting one source did; counts that are zero for most sources (``ignored``,
    ``rewritten``, ``sessions`` and ``messages``) and ``error`` are left out of ``to_dict``
    when empty."""

    read: int
    added: int
    existing: int
    unchanged: int
    dropped: int
    superseded: int
    archived: int
    by_kind: dict[str, int]
    seconds: float
    ignored: dict[str, int] = field(default_factory=dict)  # noise left out, by reason
    rewritten: int = 0  # memories of an older format brought up to date
    sessions: int = 0
    messages: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = Result.to_dict(self)
        for key in ("ignored", "rewritten", "error"):
            if not out[key]:
                del out[key]
        if not (self.sessions or self.messages):
            del out["sessions"], out["messages"]
        return out


@dataclass(frozen=True)
class Ingested(Result):
    """What an ingestion read, added, already knew and dropped, per source and in all."""

    root: str
    dry_run: bool
    since: float | None
    sources: dict[str, SourceIngested]
    added: int
    existing: int
    dropped: int
    contradictions_opened: int
    contradictions_suspected: int
    contradiction_scan: dict[str, Any] | None  # what the bounded scan did (None: not run)
    skipped: dict[str, Any]  # what the readers skipped: total, by reason, examples
    categories: CategoriesRefreshed | None
    seconds: float
    searchable_seconds: float  # until text, keyword indexes and ties were stored
    learned: dict[str, Any] | None  # the vectors learned after (None: left to the caller)
    memories_per_second: float | None
    messages_per_second: float | None


@dataclass(frozen=True)
class Consolidated(Result):
    """What consolidation did (or, dry, would do), with every change of its plan."""

    dry_run: bool
    levels_filled: int
    decay_updated: int
    similar_linked: int
    contradictions_opened: int
    contradictions_suspected: int
    merged: int
    compressed: int
    linked: int
    forgotten: int
    reranked: int
    skipped: tuple[str, ...]
    categories: CategoriesRefreshed | None
    changes: tuple[Change, ...]  # in plan order
    seconds: float
