"""Contradictions: list them, settle them (a_wins | b_wins | both_valid | merged, with a note),
or dismiss one that is not a contradiction at all (``dismissed``: both memories stay untouched).

The loser of a_wins/b_wins is superseded by the winner, never deleted; ``merged`` takes the id
of a memory that merges both (``mergedId``) or its text (``mergedText``, stored as a new
memory derived from both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from server.commands import command
from server.convert import Invalid

if TYPE_CHECKING:
    from server.app import LivingMemoryServer


@dataclass(frozen=True)
class ContradictionsArgs:
    status: Literal["open", "resolved", "dismissed", "all"] = "open"
    limit: int = 50
    folder: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= 1000:
            raise Invalid("argument 'limit' must be between 1 and 1000")


@dataclass(frozen=True)
class ResolveArgs:
    id: int
    resolution: Literal["a_wins", "b_wins", "both_valid", "merged", "dismissed"]
    note: str | None = None
    merged_id: int | None = None
    merged_text: str | None = None
    folder: str | None = None

    def __post_init__(self) -> None:
        if self.id <= 0:
            raise Invalid("argument 'id' must be a positive integer")
        if self.resolution == "merged":
            if (self.merged_id is None) == (self.merged_text is None):
                raise Invalid(
                    "a merged resolution needs exactly one of the arguments 'mergedId' "
                    "and 'mergedText'"
                )
            if self.merged_text is not None and not self.merged_text.strip():
                raise Invalid("argument 'mergedText' is empty")
        elif self.merged_id is not None or self.merged_text is not None:
            raise Invalid("arguments 'mergedId' and 'mergedText' go with resolution 'merged'")


def setup(server: LivingMemoryServer) -> None:
    @command(server, "contradictions", ContradictionsArgs)
    async def contradictions(a: ContradictionsArgs) -> Any:
        project = await server.project_for(folder=a.folder)
        from server import ops

        return await project.call(ops.contradictions, project, a)

    @command(server, "resolveContradiction", ResolveArgs)
    async def resolve(a: ResolveArgs) -> Any:
        project = await server.project_for(folder=a.folder)
        from server import ops

        return await project.call(ops.resolve_contradiction, project, a)
