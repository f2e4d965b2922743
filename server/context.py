"""Editor signal → debounced prediction → assembled context → notification → injection.

Each signal that changes what the active file's context depends on asks for a refresh. A
refresh waits a short debounce; a newer request for the same project cancels the pending one
(latest wins), and work that reaches the worker after a newer request was made is skipped,
so rapid tab switching ends with the last file's context and leaves no backlog.

One context, one id: every assembled context that is written to the injection targets gets a
``contextId`` (increasing for the life of the process) and is kept as the project's
:attr:`~server.projects.Project.announced` context; ``livingMemory.assembleContext`` for the
active file answers exactly that one, so the status bar, the view, Copy Context and the
injected files show the same context.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from contextlib import suppress
from typing import Any, Protocol

from predictive.operations import AssembledContext
from server.convert import to_wire
from server.host import Host
from server.injection import Prepared
from server.projects import Announced, Project, Registry

log = logging.getLogger("living_memory.context")

CONTEXT_UPDATED = "livingMemory/contextUpdated"


class ContextHost(Host, Protocol):
    """The server as the context service sees it: the projects, and whether one is ready."""

    @property
    def registry(self) -> Registry | None: ...

    async def project_ready(self, project: Project) -> bool: ...


def view(
    project: Project, uri: str | None, result: AssembledContext, context_id: int | None = None
) -> dict[str, Any]:
    """A context as ``livingMemory.assembleContext`` answers it (``context_id`` None: assembled
    on demand, not announced)."""
    out = to_wire(result)
    out["uri"] = uri
    out["folder"] = project.uri
    out["contextId"] = context_id
    return out


def payload(
    project: Project,
    uri: str,
    result: AssembledContext,
    injected: Prepared | None,
    context_id: int | None = None,
) -> dict[str, Any]:
    """The ``livingMemory/contextUpdated`` parameters (``injected``: the files the context is
    written to, right after this is sent)."""
    return {
        "uri": uri,
        "folder": project.uri,
        "path": result.file.path,
        "branch": result.branch,
        "activity": result.activity.value,
        "tokens": result.tokens,
        "items": [to_wire(i) for i in result.items],
        "injected": [str(project.injector.path(t)) for t, _ in injected.files] if injected else [],
        "refused": [str(p) for p in injected.refused] if injected else [],
        "generation": result.generation,
        "contextId": context_id,
        "elapsedMs": round(result.elapsed_ms, 3),
    }


RECORD_QUIET_S = 0.5
"""What was served is logged once no context was asked for this long (files opened one after
another are not delayed by it)."""
RECORD_WAITING_MAX = 32
"""Contexts waiting to be logged that are logged without waiting for a quiet spell: one at a
time (a few milliseconds each), so that a file opened meanwhile waits for one at most, until
half of them are left."""


class ContextService:
    """Keeps each project's context current and tells the client."""

    def __init__(self, server: ContextHost) -> None:
        self.server = server
        self.pending: dict[Project, asyncio.Task[Any]] = {}
        self.last_id = 0  # contextId of the latest announced context (any project)
        self._ids = threading.Lock()
        self.recorders: dict[Project, asyncio.Task[Any]] = {}

    def request(
        self, project: Project, delay_ms: int | None = None, *, leading: bool = True
    ) -> None:
        """Refresh the context of ``project``'s active file.

        Debounced: a request that follows another within the window waits for the window to
        pass quietly (and cancels the one before — latest wins). With ``leading``, a request
        after a quiet spell runs at once, so opening one file costs no debounce delay; edits
        (``leading=False``) always wait.
        """
        window = (project.settings.debounce_ms if delay_ms is None else delay_ms) / 1000
        now = time.monotonic()
        old = self.pending.pop(project, None)
        busy = old is not None and not old.done()
        if busy:
            assert old is not None
            old.cancel()
        quiet = now - project.last_request >= window
        project.last_request = now
        delay = 0.0 if leading and quiet and not busy else window
        project.seq += 1
        if self.server.registry is not None:
            self.server.registry.active = project
        task = self.server.spawn(
            self._refresh(project, project.seq, delay), name=f"context {project.name}"
        )
        self.pending[project] = task

    async def _refresh(self, project: Project, seq: int, delay: float) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            if not await self.server.project_ready(project):
                return
            out = await project.call(self._assemble, project, seq)
            if out is None:
                return  # a newer request superseded this one
            body, result, files = out
            if seq == project.seq:
                self.server.notify(CONTEXT_UPDATED, body)
            if files is not None:
                project.write_files(files)
            if not result.cached:
                project.unrecorded.append(result)
                self._record_when_quiet(project)
        finally:
            if self.pending.get(project) is asyncio.current_task():
                self.pending.pop(project, None)

    def _record_when_quiet(self, project: Project) -> None:
        """Log what ``project`` served once the editor is quiet (:data:`RECORD_QUIET_S`)."""
        task = self.recorders.get(project)
        if task is None or task.done():
            self.recorders[project] = self.server.spawn(
                self._recorder(project), name=f"record {project.name}"
            )

    async def _recorder(self, project: Project) -> None:
        while project.unrecorded and not project.closed:
            await asyncio.sleep(RECORD_QUIET_S)
            quiet = time.monotonic() - project.last_request >= RECORD_QUIET_S
            with suppress(RuntimeError):  # the project closed meanwhile (it logs them)
                if quiet:
                    await project.call(project.record_served)
                elif len(project.unrecorded) >= RECORD_WAITING_MAX:
                    while len(project.unrecorded) > RECORD_WAITING_MAX // 2:
                        asked = self.pending.get(project)
                        if asked is not None:  # a context is being made: it goes first
                            await asyncio.wait([asked])
                            continue
                        await project.call(project.record_served, 1)

    def _assemble(
        self, project: Project, seq: int
    ) -> tuple[dict[str, Any], AssembledContext, Prepared | None] | None:
        """On the worker: assemble for the active file and render it for the injection
        targets (written once the client has it: :meth:`Project.write_files`)."""
        if seq != project.seq or project.engine is None:
            return None
        request = project.state.request()
        if request is None:
            return None
        result = project.engine.assemble(request, record=False)
        files = self._prepare_files(project, result)
        uri = project.uris.get(request.path) or request.path
        with self._ids:
            self.last_id += 1
            context_id = self.last_id
        project.announced = Announced(uri, context_id, result)  # what the injected files hold
        return payload(project, uri, result, files, context_id), result, files

    def _prepare_files(self, project: Project, result: AssembledContext) -> Prepared | None:
        if not project.injector.targets:
            return None
        prepared = project.injector.prepare(result.markdown_for)
        for path in prepared.refused:
            if path not in project.injector.warned:
                project.injector.warned.add(path)
                message = (
                    f"Living Memory: {path} exists and was not written by Living Memory; it is "
                    "left alone. Delete it or remove its target from livingMemory.injectionTargets."
                )
                loop = self.server.loop
                if loop is not None:
                    loop.call_soon_threadsafe(self.server.show_once, message)
        return prepared
