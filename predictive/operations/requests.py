"""Typed requests of the memory operations, checked when they are built.

Field names are snake_case; the front doors (CLI, language server, MCP) build them from their
own spelling. ``folder`` picks a project where a front door serves several.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from predictive.operations.errors import Invalid
from storage.search import MIN_SIMILARITY

KindName = Literal[
    "fact",
    "decision",
    "episode",
    "solution",
    "pattern",
    "workflow",
    "convention",
    "preference",
    "summary",
]
ScopeName = Literal["user", "project", "system"]
LevelName = Literal["index", "compressed", "summary", "full", "related"]
ModeName = Literal["hybrid", "keyword", "vector"]
StatusName = Literal["review", "open", "suspected", "resolved", "dismissed", "pending", "all"]
"""Which contradictions to list; ``review``: open and suspected (what awaits the user)."""
ResolutionName = Literal["a_wins", "b_wins", "both_valid", "merged", "dismissed", "confirm"]
"""How to settle a contradiction; ``confirm`` turns a suspected one into an open one."""
ActivityName = Literal["debugging", "feature", "review", "refactor", "deploy", "general"]


MAX_LIST = 200
"""Most items a list argument (anchors, tags, artifacts, ids …) of one request may carry."""
MAX_ITEM_CHARS = 2_000
"""Longest branch or category name (an anchor's value is clipped where it is stored)."""
MAX_QUERY_CHARS = 10_000
MAX_PATH_CHARS = 4_096
"""Longest path (the longest a file system takes)."""


def _at_most(name: str, values: tuple[str, ...] | tuple[int, ...], n: int = MAX_LIST) -> None:
    if len(values) > n:
        raise Invalid(f"argument '{name}' has {len(values)} items; the limit is {n}")


def _short(name: str, value: str | None, n: int) -> None:
    if value is not None and len(value) > n:
        raise Invalid(f"argument '{name}' is {len(value)} characters; the limit is {n}")


def _positive(name: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise Invalid(f"argument '{name}' must be a positive integer")


def _between(name: str, value: float, lo: float, hi: float) -> None:
    if not lo <= value <= hi:
        raise Invalid(f"argument '{name}' must be between {lo} and {hi}")


def _nonblank(name: str, value: str | None) -> None:
    if value is not None and not value.strip():
        raise Invalid(f"argument '{name}' is empty")


@dataclass(frozen=True)
class RememberArgs:
    text: str
    kind: KindName = "fact"
    anchors: tuple[str, ...] = ()  # file:PATH, module:NAME, symbol:NAME, branch:NAME, error:SIG
    tags: tuple[str, ...] = ()
    importance: float = 0.5
    scope: ScopeName = "project"
    uri: str | None = None  # the file it is about (adds a file anchor, picks the folder)
    folder: str | None = None
    supersedes: int | None = None
    source: str = "editor"
    source_id: str | None = None
    artifacts: tuple[str, ...] = ()  # TYPE:REF (commit:SHA, adr:PATH, pr:URL …)

    def __post_init__(self) -> None:
        _nonblank("text", self.text)
        _at_most("anchors", self.anchors)
        _at_most("tags", self.tags)
        _at_most("artifacts", self.artifacts)
        _short("uri", self.uri, MAX_PATH_CHARS)
        _between("importance", self.importance, 0.0, 1.0)
        _positive("supersedes", self.supersedes)
        _nonblank("source", self.source)
        for raw in self.artifacts:
            kind, sep, ref = raw.partition(":")
            if not sep or not kind.strip() or not ref.strip():
                raise Invalid(f"an artifact must look like TYPE:REF, not {raw!r}")


@dataclass(frozen=True)
class SearchArgs:
    query: str
    limit: int = 10
    kinds: tuple[KindName, ...] = ()
    anchors: tuple[str, ...] = ()
    branch: str | None = None
    mode: ModeName = "hybrid"
    include_archived: bool = False
    min_similarity: float = MIN_SIMILARITY
    as_of: float | None = None  # as the store would have answered then (nothing learned later)
    valid_at: float | None = None  # only memories valid at this time (default: now)
    history: bool = False  # also memories no longer valid (superseded, expired), ranked down
    folder: str | None = None

    def __post_init__(self) -> None:
        _nonblank("query", self.query)
        _short("query", self.query, MAX_QUERY_CHARS)
        _at_most("kinds", self.kinds, 20)
        _at_most("anchors", self.anchors)
        _short("branch", self.branch, MAX_ITEM_CHARS)
        _between("limit", self.limit, 1, 200)
        _between("minSimilarity", self.min_similarity, 0.0, 1.0)


@dataclass(frozen=True)
class AskArgs:
    question: str
    limit: int = 8
    as_of: float | None = None  # as the store would have answered then
    folder: str | None = None

    def __post_init__(self) -> None:
        _nonblank("question", self.question)
        _between("limit", self.limit, 1, 50)


@dataclass(frozen=True)
class SessionSearchArgs:
    query: str
    limit: int = 10
    mode: ModeName = "hybrid"
    folder: str | None = None

    def __post_init__(self) -> None:
        _nonblank("query", self.query)
        _between("limit", self.limit, 1, 200)


@dataclass(frozen=True)
class RecallArgs:
    id: int
    level: LevelName = "summary"
    depth: int = 1  # for level "related"
    limit: int = 50  # for level "related"
    folder: str | None = None

    def __post_init__(self) -> None:
        _positive("id", self.id)
        _between("depth", self.depth, 1, 6)
        _between("limit", self.limit, 1, 500)


@dataclass(frozen=True)
class RelatedArgs:
    id: int
    depth: int = 2
    types: tuple[str, ...] = ()  # edge types to follow (default: all)
    min_strength: float = 0.0
    direction: Literal["out", "in", "both"] = "both"
    limit: int = 500
    link: int | None = None  # first add an edge from ``id`` to this memory
    link_type: str = "RELATES_TO"
    strength: float = 1.0  # of the new edge
    folder: str | None = None

    def __post_init__(self) -> None:
        _positive("id", self.id)
        _positive("link", self.link)
        _between("depth", self.depth, 1, 6)
        _between("limit", self.limit, 1, 5000)
        _between("minStrength", self.min_strength, 0.0, 1.0)
        _between("strength", self.strength, 0.0, 1.0)


@dataclass(frozen=True)
class ExploreArgs:
    id: int | None = None  # start from this memory …
    query: str | None = None  # … or from the best matches of a query …
    category: str | None = None  # … or from a category ("" for all): its areas and summaries
    depth: int = 2
    max_nodes: int = 50
    roots: int = 5  # with a query: how many matches start a tree
    level: Literal["index", "compressed", "summary", "full"] = "index"
    folder: str | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.id, self.query, self.category)) != 1:
            raise Invalid("pass exactly one of the arguments 'id', 'query' and 'category'")
        _positive("id", self.id)
        _nonblank("query", self.query)
        _short("query", self.query, MAX_QUERY_CHARS)
        _short("category", self.category, MAX_ITEM_CHARS)
        _between("depth", self.depth, 0, 6)
        _between("maxNodes", self.max_nodes, 1, 1000)
        _between("roots", self.roots, 1, 50)


@dataclass(frozen=True)
class IdArgs:
    id: int
    context: str | None = None  # why (cite/ignore): kept in the access log
    folder: str | None = None

    def __post_init__(self) -> None:
        _positive("id", self.id)


@dataclass(frozen=True)
class ForgetArgs:
    id: int
    reason: str | None = None
    purge: bool = False  # delete for good (only an archived memory)
    folder: str | None = None

    def __post_init__(self) -> None:
        _positive("id", self.id)


@dataclass(frozen=True)
class FolderArgs:
    folder: str | None = None


@dataclass(frozen=True)
class ContradictionsArgs:
    status: StatusName = "review"
    limit: int = 50
    folder: str | None = None

    def __post_init__(self) -> None:
        _between("limit", self.limit, 1, 1000)


@dataclass(frozen=True)
class ResolveArgs:
    id: int
    resolution: ResolutionName
    note: str | None = None
    merged_id: int | None = None
    merged_text: str | None = None
    folder: str | None = None

    def __post_init__(self) -> None:
        _positive("id", self.id)
        if self.resolution == "merged":
            if (self.merged_id is None) == (self.merged_text is None):
                raise Invalid(
                    "a merged resolution needs exactly one of the arguments 'mergedId' "
                    "and 'mergedText'"
                )
            _nonblank("mergedText", self.merged_text)
        elif self.merged_id is not None or self.merged_text is not None:
            raise Invalid("arguments 'mergedId' and 'mergedText' go with resolution 'merged'")


@dataclass(frozen=True)
class ContextArgs:
    path: str  # the file, relative to the project root (or absolute inside it)
    branch: str | None = None
    activity: ActivityName | None = None  # default: inferred from the signals
    budget: int | None = None  # total tokens (default: the engine's, 8000)
    as_of: float | None = None  # as the store would have assembled it then
    diagnostics: str | None = None  # the file's diagnostics as JSON (LSP shape)
    folder: str | None = None
    text: str | None = None  # the file's text as the editor has it (default: what is known)

    def __post_init__(self) -> None:
        _nonblank("path", self.path)
        _short("path", self.path, MAX_PATH_CHARS)
        _short("branch", self.branch, MAX_ITEM_CHARS)
        if self.budget is not None:
            _between("budget", self.budget, 200, 1_000_000)


SourceName = Literal["git", "adr", "rules", "shared", "chats", "all"]
ToolName = Literal["cursor", "specstory", "copilot", "claude", "codex"]


@dataclass(frozen=True)
class IngestArgs:
    sources: tuple[SourceName, ...] = ("all",)
    since: str | None = None  # ISO date/time, epoch seconds or an age (30d)
    dry_run: bool = False
    tools: tuple[ToolName, ...] | None = None  # chat tools (default: all)
    paths: tuple[str, ...] = ()  # read these files or folders instead of the usual places
    all_workspaces: bool = False  # chats of every workspace, not only this folder's
    include_merges: bool | None = None  # default: the front door's setting (else False)
    include_bots: bool | None = None
    include_trivial: bool | None = None
    shared_folder: str | None = None  # default: the front door's setting (.living-memory/shared)
    folder: str | None = None


@dataclass(frozen=True)
class ConsolidateArgs:
    dry_run: bool = False
    folder: str | None = None


@dataclass(frozen=True)
class ReindexArgs:
    batch_size: int | None = None  # memories embedded per transaction (default 256)
    folder: str | None = None

    def __post_init__(self) -> None:
        if self.batch_size is not None:
            _between("batchSize", self.batch_size, 1, 4096)


ReviewName = Literal["proposed", "approved", "rejected"]


@dataclass(frozen=True)
class ReviewListArgs:
    status: ReviewName = "proposed"
    limit: int = 100
    folder: str | None = None

    def __post_init__(self) -> None:
        _between("limit", self.limit, 1, 5000)


@dataclass(frozen=True)
class ReviewArgs:
    """Approve or reject memories (several ids at once)."""

    ids: tuple[int, ...]
    reason: str | None = None  # why (reject): kept as the archive reason
    folder: str | None = None

    def __post_init__(self) -> None:
        if not self.ids:
            raise Invalid("argument 'ids' names no memory")
        for i in self.ids:
            _positive("ids", i)


@dataclass(frozen=True)
class EditArgs:
    """A person's correction: a new version that supersedes the memory (approved)."""

    id: int
    text: str
    kind: KindName | None = None  # default: the memory's
    anchors: tuple[str, ...] | None = None  # default: the memory's
    folder: str | None = None

    def __post_init__(self) -> None:
        _positive("id", self.id)
        _nonblank("text", self.text)


@dataclass(frozen=True)
class ShareArgs:
    shared_folder: str | None = None  # default: the front door's setting (.living-memory/shared)
    dry_run: bool = False
    folder: str | None = None


@dataclass(frozen=True)
class LockArgs:
    """Lock ``content`` (or, without it, the full texts of ``memory_ids``) under ``name``."""

    name: str
    content: str | None = None
    memory_ids: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    note: str | None = None
    source: str = "mcp"  # the front door that locked it
    folder: str | None = None

    def __post_init__(self) -> None:
        _nonblank("source", self.source)


@dataclass(frozen=True)
class LockedContextArgs:
    name: str
    version: int | None = None  # default: the newest
    level: Literal["preview", "full"] = "full"
    folder: str | None = None

    def __post_init__(self) -> None:
        _positive("version", self.version)
        if self.level not in ("preview", "full"):
            raise Invalid("level must be 'preview' or 'full'")


@dataclass(frozen=True)
class LockedListArgs:
    tag: str | None = None  # only the contexts with this tag
    limit: int = 100
    folder: str | None = None

    def __post_init__(self) -> None:
        _between("limit", self.limit, 1, 5000)
