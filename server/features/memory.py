"""Memory commands: remember, search, recall, explore, cite, ignore, forget, restore, stats.

Every command takes one object argument; ``folder`` (a workspace folder URI) picks the
project, else the folder of ``uri`` when the command has one, else the active folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from server.commands import command
from server.convert import Invalid
from storage.search import MIN_SIMILARITY

if TYPE_CHECKING:
    from server.app import LivingMemoryServer

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

    def __post_init__(self) -> None:
        _nonblank("text", self.text)
        _between("importance", self.importance, 0.0, 1.0)
        _positive("supersedes", self.supersedes)
        _nonblank("source", self.source)


@dataclass(frozen=True)
class SearchArgs:
    query: str
    limit: int = 10
    kinds: tuple[KindName, ...] = ()
    anchors: tuple[str, ...] = ()
    branch: str | None = None
    mode: Literal["hybrid", "keyword", "vector"] = "hybrid"
    include_archived: bool = False
    min_similarity: float = MIN_SIMILARITY
    as_of: float | None = None
    folder: str | None = None

    def __post_init__(self) -> None:
        _nonblank("query", self.query)
        _between("limit", self.limit, 1, 200)
        _between("minSimilarity", self.min_similarity, 0.0, 1.0)


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
class ExploreArgs:
    id: int | None = None  # start from this memory …
    query: str | None = None  # … or from the best matches of a query
    depth: int = 2
    max_nodes: int = 50
    roots: int = 5  # with a query: how many matches start a tree
    level: Literal["index", "compressed", "summary", "full"] = "index"
    folder: str | None = None

    def __post_init__(self) -> None:
        if (self.id is None) == (self.query is None):
            raise Invalid("pass exactly one of the arguments 'id' and 'query'")
        _positive("id", self.id)
        _nonblank("query", self.query)
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


def setup(server: LivingMemoryServer) -> None:
    async def run(folder: str | None, fn_name: str, *args: Any, uri: str | None = None) -> Any:
        project = await server.project_for(folder=folder, uri=uri)
        from server import ops

        return await project.call(getattr(ops, fn_name), project, *args)

    @command(server, "remember", RememberArgs)
    async def remember(a: RememberArgs) -> Any:
        project = await server.project_for(folder=a.folder, uri=a.uri)
        rel = None
        if a.uri is not None:
            assert server.registry is not None
            found = server.registry.locate(a.uri)
            rel = found[2] if found else None
        from server import ops

        return await project.call(ops.remember, project, a, rel)

    @command(server, "search", SearchArgs)
    async def search(a: SearchArgs) -> Any:
        return await run(a.folder, "search", a)

    @command(server, "recall", RecallArgs)
    async def recall(a: RecallArgs) -> Any:
        return await run(a.folder, "recall", a)

    @command(server, "explore", ExploreArgs)
    async def explore(a: ExploreArgs) -> Any:
        return await run(a.folder, "explore", a)

    @command(server, "cite", IdArgs)
    async def cite(a: IdArgs) -> Any:
        return await run(a.folder, "cite", a)

    @command(server, "ignore", IdArgs)
    async def ignore(a: IdArgs) -> Any:
        return await run(a.folder, "ignore", a)

    @command(server, "forget", ForgetArgs)
    async def forget(a: ForgetArgs) -> Any:
        return await run(a.folder, "forget", a)

    @command(server, "restore", IdArgs)
    async def restore(a: IdArgs) -> Any:
        return await run(a.folder, "restore", a)

    @command(server, "stats", FolderArgs)
    async def stats(a: FolderArgs) -> Any:
        return await run(a.folder, "stats")
