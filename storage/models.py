"""The memory model of DESIGN.md §3 as plain, typed values."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Kind(str, enum.Enum):
    FACT = "fact"
    DECISION = "decision"
    EPISODE = "episode"
    SOLUTION = "solution"
    PATTERN = "pattern"
    WORKFLOW = "workflow"
    CONVENTION = "convention"
    PREFERENCE = "preference"
    SUMMARY = "summary"


class Level(str, enum.Enum):
    """Progressive-disclosure levels, richest first."""

    FULL = "full"
    SUMMARY = "summary"
    COMPRESSED = "compressed"
    INDEX = "index"


class AnchorType(str, enum.Enum):
    FILE = "file"
    MODULE = "module"
    SYMBOL = "symbol"
    BRANCH = "branch"
    ERROR = "error"
    TAG = "tag"
    GLOB = "glob"  # a path pattern (``src/api/**``): the memory belongs to matching files


class Scope(str, enum.Enum):
    USER = "user"
    PROJECT = "project"
    SYSTEM = "system"


class EdgeType(str, enum.Enum):
    RELATES_TO = "RELATES_TO"
    SIMILAR_TO = "SIMILAR_TO"
    LEADS_TO = "LEADS_TO"
    DERIVED_FROM = "DERIVED_FROM"
    SOLVES = "SOLVES"
    SUPERSEDES = "SUPERSEDES"
    OCCURRED_BEFORE = "OCCURRED_BEFORE"
    EVOLVED_INTO = "EVOLVED_INTO"
    CONTRADICTS = "CONTRADICTS"
    INVALIDATED_BY = "INVALIDATED_BY"
    PREFERS_OVER = "PREFERS_OVER"
    PART_OF = "PART_OF"
    DEPENDS_ON = "DEPENDS_ON"
    IMPLEMENTS = "IMPLEMENTS"
    EXEMPLIFIES = "EXEMPLIFIES"

    @property
    def bidirectional(self) -> bool:
        return self in _BIDIRECTIONAL


_BIDIRECTIONAL = frozenset({EdgeType.RELATES_TO, EdgeType.SIMILAR_TO, EdgeType.CONTRADICTS})


class AccessKind(str, enum.Enum):
    RETRIEVAL = "retrieval"
    CITATION = "citation"
    IGNORE = "ignore"
    VIEW = "view"


class ContradictionStatus(str, enum.Enum):
    """``open``: shown with the memories it concerns (strong evidence or the user's word);
    ``suspected``: a weaker finding, only listed for review until confirmed or dismissed."""

    OPEN = "open"
    SUSPECTED = "suspected"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


class Review(str, enum.Enum):
    """Whether a memory may be shared with the team (only sharing is gated: a proposed
    memory serves the local context like any other)."""

    PROPOSED = "proposed"
    APPROVED = "approved"
    REJECTED = "rejected"


REVIEWED_SOURCES = ("manual", "editor", "cli", "git", "adr", "rules", "shared")
"""Sources whose memories start approved: what the user wrote or remembered explicitly, and
what the repository itself holds (commits, decision records, rule files, the shared folder).
Everything else (chat extraction, agents, fixes seen in the editor) starts proposed."""


def initial_review(source: str) -> Review:
    return Review.APPROVED if source in REVIEWED_SOURCES else Review.PROPOSED


class Resolution(str, enum.Enum):
    A_WINS = "a_wins"
    B_WINS = "b_wins"
    BOTH_VALID = "both_valid"
    MERGED = "merged"


# Anchor values (paths, branches, tags …) are cut to this many characters when stored and when
# matched, so one huge value can neither bloat the store nor slow every later context.
MAX_ANCHOR_CHARS = 1024


def clip_anchor_value(value: str) -> str:
    """``value`` cut to :data:`MAX_ANCHOR_CHARS` characters (the stored and matched form)."""
    return value if len(value) <= MAX_ANCHOR_CHARS else value[:MAX_ANCHOR_CHARS]


@dataclass(frozen=True)
class Anchor:
    type: AnchorType
    value: str

    @classmethod
    def parse(cls, text: str) -> Anchor:
        """Parse ``type:value`` (``file:src/auth.py``); a bare value is a tag."""
        kind, sep, value = text.partition(":")
        if sep and kind in AnchorType._value2member_map_:
            if not value.strip():
                raise ValueError(f"anchor {text!r} has an empty value")
            return cls(AnchorType(kind), value.strip())
        if not text.strip():
            raise ValueError("empty anchor")
        return cls(AnchorType.TAG, text.strip())

    def __str__(self) -> str:
        return f"{self.type.value}:{self.value}"


@dataclass(frozen=True)
class Artifact:
    type: str  # commit, pr, adr, file, url, issue
    ref: str
    title: str | None = None


@dataclass
class NewMemory:
    """What a caller hands to :meth:`storage.MemoryStore.add`."""

    text: str
    kind: Kind = Kind.FACT
    summary: str | None = None
    compressed: str | None = None
    index_label: str | None = None
    anchors: list[Anchor] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    scope: Scope = Scope.PROJECT
    source: str = "manual"
    source_id: str | None = None
    importance: float = 0.5
    confidence: float = 1.0
    valid_from: float | None = None
    valid_to: float | None = None
    created_at: float | None = None
    fact_key: str | None = None
    fact_value: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    review: Review | None = None  # None: by source (:func:`initial_review`)


@dataclass
class Memory:
    id: int
    kind: Kind
    text: str
    summary: str | None
    compressed: str | None
    index_label: str | None
    scope: Scope
    source: str
    source_id: str | None
    content_hash: str
    importance: float
    confidence: float
    decay_score: float
    retrieval_count: int
    citation_count: int
    ignore_count: int
    created_at: float
    updated_at: float
    valid_from: float
    valid_to: float | None
    last_accessed: float | None
    supersedes: int | None
    superseded_by: int | None
    archived: bool
    archived_at: float | None
    archive_reason: str | None
    fact_key: str | None
    fact_value: str | None
    metadata: dict[str, Any]
    anchors: list[Anchor] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    review: Review = Review.APPROVED

    def level(self, level: Level) -> str | None:
        """The text at a level, or None when that level has not been filled yet."""
        return {
            Level.FULL: self.text,
            Level.SUMMARY: self.summary,
            Level.COMPRESSED: self.compressed,
            Level.INDEX: self.index_label,
        }[level]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind.value,
            "text": self.text,
            "summary": self.summary,
            "compressed": self.compressed,
            "index_label": self.index_label,
            "scope": self.scope.value,
            "source": self.source,
            "source_id": self.source_id,
            "content_hash": self.content_hash,
            "importance": self.importance,
            "confidence": self.confidence,
            "decay_score": self.decay_score,
            "retrieval_count": self.retrieval_count,
            "citation_count": self.citation_count,
            "ignore_count": self.ignore_count,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "last_accessed": self.last_accessed,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "archived": self.archived,
            "archived_at": self.archived_at,
            "archive_reason": self.archive_reason,
            "fact_key": self.fact_key,
            "fact_value": self.fact_value,
            "metadata": self.metadata,
            "anchors": [str(a) for a in self.anchors],
            "artifacts": [{"type": a.type, "ref": a.ref, "title": a.title} for a in self.artifacts],
            "review": self.review.value,
        }


@dataclass(frozen=True)
class Edge:
    source_id: int
    target_id: int
    type: EdgeType
    strength: float
    created_at: float


@dataclass(frozen=True)
class TraversalStep:
    memory_id: int
    depth: int
    strength: float  # product of edge strengths along the path
    via: EdgeType
    parent_id: int


@dataclass(frozen=True)
class Contradiction:
    id: int
    memory_a: int
    memory_b: int
    status: ContradictionStatus
    resolution: Resolution | None
    note: str | None
    reason: str | None
    confidence: float
    detected_at: float
    resolved_at: float | None
