"""Persistence and search: SQLite through APSW, local embeddings, the usearch index.

Knows nothing of editors; imported by ``predictive`` and ``server``, never the reverse.
"""

from storage.errors import (
    DatabaseCorrupt,
    DatabaseLocked,
    DatabaseTooNew,
    InvalidInput,
    ModelUnavailable,
    NotFound,
    StoreError,
    StoreUnavailable,
)
from storage.models import (
    MAX_ANCHOR_CHARS,
    AccessKind,
    Anchor,
    AnchorType,
    Artifact,
    Contradiction,
    ContradictionStatus,
    Edge,
    EdgeType,
    Kind,
    Level,
    Memory,
    NewMemory,
    Resolution,
    Review,
    Scope,
    TraversalStep,
    clip_anchor_value,
)
from storage.repository import AddResult, MemoryFilter, MemoryStore, Stats
from storage.search import SearchHit, search

__all__ = [
    "MAX_ANCHOR_CHARS",
    "AccessKind",
    "AddResult",
    "Anchor",
    "AnchorType",
    "Artifact",
    "Contradiction",
    "ContradictionStatus",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "DatabaseTooNew",
    "Edge",
    "EdgeType",
    "InvalidInput",
    "Kind",
    "Level",
    "Memory",
    "MemoryFilter",
    "MemoryStore",
    "ModelUnavailable",
    "NewMemory",
    "NotFound",
    "Resolution",
    "Review",
    "Scope",
    "SearchHit",
    "Stats",
    "StoreError",
    "StoreUnavailable",
    "TraversalStep",
    "clip_anchor_value",
    "search",
]
