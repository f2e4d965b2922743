"""Everyone's diagnostics — ``livingMemory/diagnosticsChanged {uri, diagnostics}``, which a
language server cannot otherwise see — feed the context (errors widen the Critical tier) and
the error → fix capture of :mod:`predictive.fixes`."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from server.convert import ConversionError, structure

if TYPE_CHECKING:
    from pathlib import Path

    from server.features.host import Server
    from server.projects import Project

log = logging.getLogger("living_memory.diagnostics")

DIAGNOSTICS_CHANGED = "livingMemory/diagnosticsChanged"
MAX_DIAGNOSTICS = 500


@dataclass(frozen=True)
class DiagnosticsParams:
    uri: str
    diagnostics: tuple[Any, ...] = ()


def setup(server: Server) -> None:
    from predictive.operations import Diagnostic, DiagnosticsChanged

    @server.on(DIAGNOSTICS_CHANGED, wait=False)
    async def diagnostics_changed(params: Any) -> None:
        try:
            p = structure(params, DiagnosticsParams)
        except ConversionError as e:
            log.warning("%s: ignored malformed parameters: %s", DIAGNOSTICS_CHANGED, e)
            return
        from server.projects import open_text

        # the text these diagnostics describe is the text now, not after later edits
        text = open_text(server, p.uri) if p.uri.startswith("file:") else None
        await server.started.wait()
        assert server.registry is not None
        found = server.registry.locate(p.uri)
        if found is None:
            return
        project, path, rel = found
        diags, bad = [], 0
        for raw in p.diagnostics[:MAX_DIAGNOSTICS]:
            try:
                d = Diagnostic.from_dict(raw, rel)
            except ValueError as e:
                bad += 1
                log.debug("skipped a diagnostic of %s: %s", rel, e)
                continue
            diags.append(dataclasses.replace(d, path=rel))
        if bad:
            log.warning("%s: skipped %d malformed diagnostic(s) of %s", project.name, bad, rel)
        request = project.state.apply(DiagnosticsChanged(rel, tuple(diags)))
        if request is not None and server.context is not None:
            server.context.request(project)
        if project.settings.capture_fixes:
            server.spawn(capture(server, project, path, rel, diags, text), name=f"fixes {rel}")

    @server.on(types.TEXT_DOCUMENT_DID_CLOSE)
    def forget(params: types.DidCloseTextDocumentParams) -> None:
        assert server.registry is not None
        found = server.registry.locate(params.text_document.uri)
        if found is not None:
            found[0].fixes.forget(found[2])


async def capture(
    server: Server,
    project: Project,
    path: Path,
    rel: str,
    diags: list[Any],
    text: str | None,
) -> None:
    """Observe the new diagnostics (on the project's worker, in order) and store any fix."""
    if not await server.project_ready(project):
        return
    from predictive.operations import levels_of, record_fix
    from server.projects import disk_text

    def work() -> list[tuple[int, bool, str]]:
        current = text if text is not None else disk_text(path)
        out = []
        for fix in project.fixes.observe(rel, diags, current):
            assert project.store is not None
            mid, created = record_fix(project.store, fix)
            levels_of(project.store, project.store.get(mid))  # ready for the next context
            out.append((mid, created, fix.signature))
        return out

    for mid, created, signature in await project.call(work):
        log.info(
            "%s: %s solution memory #%d for %s",
            project.name,
            "new" if created else "updated",
            mid,
            signature,
        )
