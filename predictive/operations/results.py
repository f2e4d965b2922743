"""Typed results of the memory operations; ``to_dict()`` is their JSON-ready, snake_case form
(the front doors turn keys to camelCase in one place, ``server.convert.to_wire``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from predictive.categories import CategoryNode
from predictive.result import Result, plain
from predictive.retrieval import Found
from predictive.upkeep_results import CategoriesRefreshed, Consolidated, Ingested, SourceIngested
from storage import Memory
from storage.locked_contexts import LockedContext, LockSummary
from storage.vector_progress import VectorProgress


@dataclass(frozen=True)
class Answer(Result):
    """A question's cited items (best first; a history question oldest first), with the
    configured model's answer when it wrote one that the items support."""

    question: str
    type: str
    cue: str | None
    items: tuple[dict[str, Any], ...]
    answer: dict[str, Any] | None = None
    next: str = ""

    @property
    def count(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        out = {"answer": self.answer} if self.answer is not None else {}
        return {
            **out,
            "question": self.question,
            "type": self.type,
            "cue": self.cue,
            "count": self.count,
            "items": list(self.items),
            "next": self.next,
        }


@dataclass(frozen=True)
class Brief(Result):
    """A memory as a list entry: its labels, not its full text."""

    id: int
    kind: str
    label: str | None
    compressed: str | None
    anchors: tuple[str, ...]
    archived: bool
    superseded_by: int | None
    created_at: float

    @classmethod
    def of(cls, m: Memory) -> Brief:
        return cls(
            m.id,
            m.kind.value,
            m.index_label,
            m.compressed,
            tuple(str(a) for a in m.anchors),
            m.archived,
            m.superseded_by,
            m.created_at,
        )


@dataclass(frozen=True)
class Remembered(Result):
    id: int
    created: bool  # False when the same text was already stored
    memory: Brief
    contradictions: tuple[int, ...] = ()  # the contradictions it opened (ids)


@dataclass(frozen=True)
class SearchResults(Result):
    query: str
    results: tuple[Found, ...]
    stale: dict[int, Any] = field(default_factory=dict)  # memory id → its staleness Verdict
    learning: VectorProgress | None = None  # vectors still being computed: ranked without them

    def to_dict(self) -> dict[str, Any]:
        out = []
        for r in self.results:
            d = r.to_dict()
            if r.memory is not None:
                d["compressed"] = r.memory.compressed
                if r.memory.id in self.stale:
                    d["stale"] = self.stale[r.memory.id].to_dict()
            out.append(d)
        found: dict[str, Any] = {"query": self.query, "count": len(out), "results": out}
        if self.learning is not None and not self.learning.complete:
            found["learning"] = self.learning.to_dict()
        return found


@dataclass(frozen=True)
class Usage(Result):
    retrieved: int
    cited: int
    ignored: int


@dataclass(frozen=True)
class Recalled(Result):
    """One memory at one level; ``next`` names the level that shows more."""

    id: int
    kind: str
    level: str
    text: str
    next: str
    anchors: tuple[str, ...]
    artifacts: tuple[dict[str, Any], ...]
    source: str
    created_at: float
    valid_from: float | None
    valid_to: float | None
    archived: bool
    supersedes: int | None
    superseded_by: int | None
    usage: Usage
    scope: str = "project"
    source_id: str | None = None
    importance: float = 0.5
    decay_score: float = 1.0
    archived_at: float | None = None
    archive_reason: str | None = None
    categories: tuple[str, ...] = ()
    edges: tuple[Link, ...] = ()
    review: str = "approved"  # whether it may be shared with the team (proposed, rejected)
    shared: dict[str, Any] | None = None  # its file in the team's folder: path, by, at, commit


@dataclass(frozen=True)
class Link(Result):
    """An edge of a memory: ``source → target`` of ``type``."""

    source: int
    target: int
    type: str
    strength: float


@dataclass(frozen=True)
class RelatedItem(Result):
    memory: Brief
    depth: int
    via: str
    from_id: int | None = field(metadata={"wire": "from"})
    strength: float

    def to_dict(self) -> dict[str, Any]:
        d = self.memory.to_dict()
        d.update(depth=self.depth, via=self.via, strength=self.strength)
        d["from"] = self.from_id
        return d


@dataclass(frozen=True)
class RecalledRelated(Result):
    id: int
    memory: Brief
    related: tuple[RelatedItem, ...]
    level: str = "related"


@dataclass
class Node(Result):
    """A memory in an explored tree, with how it is related to its parent."""

    id: int
    kind: str
    text: str
    children: list[Node] = field(default_factory=list)
    via: str | None = None
    strength: float | None = None
    depth: int = 0
    areas: tuple[str, ...] = ()  # the categories of a root memory


@dataclass(frozen=True)
class Explored(Result):
    roots: tuple[Node, ...]
    nodes: int
    truncated: bool
    depth: int
    level: str
    categories: tuple[CategoryNode, ...] = ()  # exploring a category: its tree with summaries


@dataclass(frozen=True)
class Cited(Result):
    id: int
    citation_count: int


@dataclass(frozen=True)
class Ignored(Result):
    id: int
    ignore_count: int


@dataclass(frozen=True)
class Lifecycle(Result):
    """What forget or restore did: ``changed`` is False when there was nothing to do."""

    id: int
    archived: bool
    purged: bool
    changed: bool


@dataclass(frozen=True)
class Side(Result):
    memory: Brief
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.memory.to_dict(), "text": self.text}


@dataclass(frozen=True)
class ContradictionView(Result):
    id: int
    a: Side | None
    b: Side | None
    status: str
    resolution: str | None
    note: str | None
    reason: str | None
    confidence: float
    detected_at: float
    resolved_at: float | None
    merged_id: int | None = None


@dataclass(frozen=True)
class StaleMemory(Result):
    """A memory whose cited code changed (``changed``) or is gone (``gone``), and how."""

    memory: Brief
    state: str
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**self.memory.to_dict(), "state": self.state, "notes": list(self.notes)}


@dataclass(frozen=True)
class ContradictionList(Result):
    status: str
    contradictions: tuple[ContradictionView, ...]
    stale: tuple[StaleMemory, ...] = ()  # the review list also holds memories gone stale

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "count": len(self.contradictions),
            "contradictions": [c.to_dict() for c in self.contradictions],
        }
        if self.status in ("review", "all"):
            out["stale"] = [s.to_dict() for s in self.stale]
        return out


@dataclass(frozen=True)
class Reindexed(Result):
    embedded: int  # memories newly embedded
    keyword_rows: int
    vectors: int | None  # None without an embedding model


@dataclass(frozen=True)
class ReviewItem(Result):
    """A memory awaiting (or past) review: what it says and where it came from."""

    memory: Brief
    text: str
    review: str
    source: str
    confidence: float
    shared_path: str | None = None  # its file, relative to the shared folder, once shared

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.memory.to_dict(),
            "text": self.text,
            "review": self.review,
            "source": self.source,
            "confidence": self.confidence,
            "shared_path": self.shared_path,
        }


@dataclass(frozen=True)
class ReviewList(Result):
    status: str
    items: tuple[ReviewItem, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "count": len(self.items),
            "items": [i.to_dict() for i in self.items],
        }


@dataclass(frozen=True)
class Reviewed(Result):
    """What approve or reject did to each memory: ``changed`` is False when it already was."""

    review: str
    ids: tuple[int, ...]
    changed: tuple[int, ...]


@dataclass(frozen=True)
class Shared(Result):
    """What ``share`` read from the folder and wrote to it."""

    folder: str
    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    kept: tuple[str, ...]  # files of rejected memories changed by someone else: left in place
    files: int  # memory files in the folder now
    bytes: int
    read: dict[str, int]  # what reading the folder first brought in
    skipped: dict[str, Any]
    seconds: float
    dry_run: bool = False
    ignored_by_git: bool = False  # a .gitignore hides the folder: a commit would miss it


@dataclass(frozen=True)
class Locked(Result):
    """The version locking wrote (or the newest one, when its content was the same: then
    ``created`` is False), without its content."""

    context: LockedContext
    created: bool

    def to_dict(self) -> dict[str, Any]:
        out = self.context.to_dict()
        out.pop("content")
        out["created"] = self.created
        return out


@dataclass(frozen=True)
class LockedContextView(Result):
    """A version of a locked context at ``preview`` (no content) or ``full`` level, with the
    numbers of all its versions, oldest first."""

    context: LockedContext
    level: str
    versions: tuple[int, ...]

    @property
    def content(self) -> str | None:
        return self.context.content if self.level == "full" else None

    def to_dict(self) -> dict[str, Any]:
        out = self.context.to_dict()
        if self.level == "preview":
            out.pop("content")
        out["level"] = self.level
        out["versions"] = list(self.versions)
        return out


@dataclass(frozen=True)
class LockedContexts(Result):
    """Every locked context's newest version (its preview), most recently locked first."""

    items: tuple[LockSummary, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"count": len(self.items), "items": [i.to_dict() for i in self.items]}


__all__ = [
    "CategoriesRefreshed",
    "Consolidated",
    "Ingested",
    "Result",
    "SourceIngested",
    "plain",
]
