"""``livingMemory.assembleContext``: the context of a file (default: the active one) on demand,
with optional overrides (branch, activity, budget, diagnostics). Read-only: it neither
changes the active file nor writes the injection targets."""

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

        def work() -> dict[str, Any]:
            import dataclasses

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
            out = result.to_dict()
            out["items"] = [{_camel(k): v for k, v in i.items()} for i in out["items"]]
            out["elapsedMs"] = out.pop("elapsed_ms")
            out["uri"] = project.uris.get(request.path, args.uri)
            out["folder"] = project.uri
            if not args.markdown:
                out.pop("markdown", None)
            return out

        return await project.call(work)


def _camel(key: str) -> str:
    from server.convert import camel

    return camel(key)
