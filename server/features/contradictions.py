"""Contradictions: ``livingMemory.contradictions`` lists them, ``resolveContradiction``
settles one (see :mod:`predictive.operations.contradictions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from predictive import operations as ops
from predictive.operations import ContradictionsArgs, ResolveArgs
from server.commands import command
from server.convert import to_wire

if TYPE_CHECKING:
    from server.features.host import Server


def setup(server: Server) -> None:
    @command(server, "contradictions", ContradictionsArgs)
    async def contradictions(a: ContradictionsArgs) -> Any:
        project = await server.project_for(folder=a.folder)

        def work() -> Any:
            assert project.store is not None  # project.call runs this once the store is open
            return to_wire(ops.contradictions(project.store, a))

        return await project.call(work)

    @command(server, "resolveContradiction", ResolveArgs)
    async def resolve(a: ResolveArgs) -> Any:
        project = await server.project_for(folder=a.folder)

        def work() -> Any:
            assert project.store is not None  # project.call runs this once the store is open
            return to_wire(ops.resolve_contradiction(project.store, a))

        return await project.call(work)
