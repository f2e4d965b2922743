"""``livingMemory.assembleContext``: the context of a file (default: the active one) on demand,
with optional overrides (branch, activity, budget, diagnostics). Read-only: it neither
changes the active file nor writes the injection targets.

For the active file without overrides it answers the context last announced and written to
the injection targets (same ``contextId``), unless the caller asks for a newer one than that
(``contextId`` greater than the announced one: a context still on its way is then assembled
on demand)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from server.commands import ArgumentError, command
from server.convert import Invalid

if TYPE_CHECKING:
    from server.app import LivingMemoryServer

ActivityName = Literal["debugging", "feature", "review", "refactor", "deploy", "general"]


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

    def __post_init__(self) -> None:
        if self.budget is not None and not 200 <= self.budget <= 1_000_000:
            raise Invalid("argument 'budget' must be between 200 and 1000000 tokens")


def setup(server: LivingMemoryServer) -> None:
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
            if last["file"] != path:
                return None
            if args.context_id is not None and last["contextId"] < args.context_id:
                return None
            out = dict(last)
            if not args.markdown:
                out.pop("markdown", None)
            return out

        def work() -> dict[str, Any]:
            import dataclasses

            same = announced()
            if same is not None:
                return same

            from predictive.engine import ContextRequest
            from predictive.signals import diagnostics_from_json, parse_activity

            state = project.state
            if rel is None:
                base = state.request()
                if base is None:
                    raise ArgumentError("uri", "no file is active; pass the uri of a file")
            else:
                base = ContextRequest(
                    path=rel,
                    text=text if text is not None else state.texts.get(rel),
                    language_id=state.languages.get(rel),
                    branch=state.branch,
                    diagnostics=state.diagnostics.get(rel, ()),
                    activity=state.activity,
                    root=str(project.root),
                )
            changes: dict[str, Any] = {}
            if args.branch is not None:
                changes["branch"] = args.branch
            if args.activity is not None:
                changes["activity"] = parse_activity(args.activity)
            if args.budget is not None:
                changes["budget"] = args.budget
            if args.diagnostics is not None:
                try:
                    changes["diagnostics"] = diagnostics_from_json(
                        list(args.diagnostics), base.path
                    )
                except ValueError as e:
                    raise ArgumentError("diagnostics", str(e)) from None
            request = dataclasses.replace(base, **changes)
            assert project.engine is not None
            result = project.engine.assemble(request, record=False)
            from server.context import view

            out = view(project, project.uris.get(request.path, args.uri), result)
            if not args.markdown:
                out.pop("markdown", None)
            return out

        return await project.call(work)
