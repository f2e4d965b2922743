"""``livingMemory.assembleContext``: the context of a file (default: the active one) on demand,
with optional overrides (branch, activity, budget, diagnostics). Read-only: it neither
changes the active file nor writes the injection targets.

For the active file without overrides it answers the context last announced and written to
the injection targets (same ``contextId``), unless the caller asks for a newer one than that
(``contextId`` greater than the announced one: a context still on its way is then assembled
on demand)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from predictive.operations import ContextArgs
from predictive.operations.requests import ActivityName
from server.commands import ArgumentError, command

if TYPE_CHECKING:
    from server.features.host import Server


@dataclass(frozen=True)
class AssembleArgs:
    uri: str | None = None  # default: the active file of the active folder
    folder: str | None = None
    branch: str | None = None  # default: the checked-out branch
    activity: ActivityName | None = None  # default: inferred
    budget: int | None = None  # default: the livingMemory.budget setting
    diagnostics: tuple[Any, ...] | None = None  # default: what the editor reported
    markdown: bool = True  # include the rendered context
    context_id: int | None = None  # the contextId the caller has (it wants that one or newer)

    def overrides(self, path: str, text: str | None) -> ContextArgs:
        """The context request for ``path`` (checked: a wrong budget is refused here)."""
        diagnostics = None if self.diagnostics is None else json.dumps(list(self.diagnostics))
        return ContextArgs(
            path=path,
            branch=self.branch,
            activity=self.activity,
            budget=self.budget,
            diagnostics=diagnostics,
            text=text,
        )


def setup(server: Server) -> None:
    @command(server, "assembleContext", AssembleArgs)
    async def assemble_context(args: AssembleArgs) -> dict[str, Any]:
        project = await server.project_for(folder=args.folder, uri=args.uri)
        rel = None
        text = None
        if args.uri is not None:
            assert server.registry is not None
            found = server.registry.locate(args.uri)
            assert found is not None
            rel = found[2]
            from server.projects import open_text

            text = open_text(server, args.uri)

        def announced() -> dict[str, Any] | None:
            """The announced context, when it is the one asked for."""
            last = project.announced
            plain = (args.branch, args.activity, args.budget, args.diagnostics) == (None,) * 4
            path = rel if rel is not None else project.state.active
            if last is None or not plain or path is None or path != project.state.active:
                return None
            if last.result.file.path != path:
                return None
            if args.context_id is not None and last.context_id < args.context_id:
                return None
            from server.context import view

            out = view(project, last.uri, last.result, last.context_id)
            if not args.markdown:
                out.pop("markdown", None)
            return out

        def work() -> dict[str, Any]:
            same = announced()
            if same is not None:
                return same
            path = rel if rel is not None else project.state.active
            if path is None:
                raise ArgumentError("uri", "no file is active; pass the uri of a file")
            assert project.session is not None
            result = project.session.context(args.overrides(path, text), record=False)
            from server.context import view

            out = view(project, project.uris.get(path, args.uri), result)
            if not args.markdown:
                out.pop("markdown", None)
            return out

        return await project.call(work)
