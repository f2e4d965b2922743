"""Memory commands: remember, search, recall, explore, cite, ignore, forget, restore, stats.

Every command takes one object argument; ``folder`` (a workspace folder URI) picks the
project, else the folder of ``uri`` when the command has one, else the active folder. The
work is :mod:`predictive.operations`'; results go out through :func:`server.convert.to_wire`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from predictive import operations as ops
from predictive.operations import (
    ExploreArgs,
    FolderArgs,
    ForgetArgs,
    IdArgs,
    RecallArgs,
    RememberArgs,
    SearchArgs,
)
from server.commands import command
from server.convert import to_wire

if TYPE_CHECKING:
    from server.features.host import Server
    from server.projects import Project


def _stats(project: Project) -> dict[str, Any]:
    assert project.store is not None
    out = to_wire(ops.stats(project.store))
    out.update(
        folder=project.uri,
        root=str(project.root),
        branch=project.branch,
        injectionTargets=[str(project.injector.path(t)) for t in project.injector.targets],
    )
    return out


def setup(server: Server) -> None:
    async def run(
        folder: str | None, fn: Callable[..., Any], *args: Any, uri: str | None = None
    ) -> Any:
        """``fn(store, *args)`` on the project's worker thread, its result in wire form."""
        project = await server.project_for(folder=folder, uri=uri)

        def work() -> Any:
            assert project.store is not None
            return to_wire(fn(project.store, *args))

        return await project.call(work)

    @command(server, "remember", RememberArgs)
    async def remember(a: RememberArgs) -> Any:
        rel = None
        if a.uri is not None:
            assert server.registry is not None
            found = server.registry.locate(a.uri)
            rel = found[2] if found else None
        return await run(a.folder, ops.remember, a, rel, uri=a.uri)

    @command(server, "search", SearchArgs)
    async def search(a: SearchArgs) -> Any:
        return await run(a.folder, ops.search, a, "lsp search")

    @command(server, "recall", RecallArgs)
    async def recall(a: RecallArgs) -> Any:
        return await run(a.folder, ops.recall, a, "lsp recall")

    @command(server, "explore", ExploreArgs)
    async def explore(a: ExploreArgs) -> Any:
        return await run(a.folder, ops.explore, a, "lsp explore")

    @command(server, "cite", IdArgs)
    async def cite(a: IdArgs) -> Any:
        return await run(a.folder, ops.cite, a)

    @command(server, "ignore", IdArgs)
    async def ignore(a: IdArgs) -> Any:
        return await run(a.folder, ops.ignore, a)

    @command(server, "forget", ForgetArgs)
    async def forget(a: ForgetArgs) -> Any:
        return await run(a.folder, ops.forget, a)

    @command(server, "restore", IdArgs)
    async def restore(a: IdArgs) -> Any:
        return await run(a.folder, ops.restore, a)

    @command(server, "stats", FolderArgs)
    async def stats(a: FolderArgs) -> Any:
        project = await server.project_for(folder=a.folder)
        return await project.call(_stats, project)
