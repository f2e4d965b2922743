"""``livingMemory.enableClaudeImport``: add the one ``@.living-memory/context.md`` import line
to ``CLAUDE.md`` — only when the user asks. (The injection itself runs with every context
update; see :mod:`server.injection`.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from server.commands import RequestFailed, command

if TYPE_CHECKING:
    from server.features.host import Server


@dataclass(frozen=True)
class ClaudeImportArgs:
    folder: str | None = None


def setup(server: Server) -> None:
    @command(server, "enableClaudeImport", ClaudeImportArgs)
    async def enable_claude_import(a: ClaudeImportArgs) -> Any:
        from server.injection import enable_claude_import as add_line

        project = await server.project_for(folder=a.folder)
        try:
            result: dict[str, Any] = await server.run_blocking(add_line, project.folder)
        except (OSError, UnicodeDecodeError) as e:
            raise RequestFailed(f"cannot update CLAUDE.md: {e}") from None
        if "agents" not in project.settings.injection_targets:
            result["warning"] = (
                "the 'agents' injection target is off, so .living-memory/context.md is not "
                "written; add it to livingMemory.injectionTargets"
            )
        return result
