"""Consolidation when the editor is idle: after ``consolidateWhenIdleMinutes`` without an
editor event (open, change, save, close, switch, diagnostics, branch) each project whose
store changed since its last consolidation is consolidated in the background (0: never).
A run that wrote is followed by one more, since a write made while it ran is
indistinguishable from its own; consolidation writes nothing once there is nothing to do,
so this stops. The result's counts are announced with ``livingMemory/consolidated``."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from server.convert import to_wire
from server.features.branch import BRANCH_CHANGED
from server.features.diagnostics import DIAGNOSTICS_CHANGED
from server.features.documents import ACTIVE_EDITOR_CHANGED

if TYPE_CHECKING:
    from server.features.host import Server
    from server.jobs import Job
    from server.projects import Project

log = logging.getLogger("living_memory.idle")

CONSOLIDATED = "livingMemory/consolidated"
ACTIVITY = (
    types.TEXT_DOCUMENT_DID_OPEN,
    types.TEXT_DOCUMENT_DID_CHANGE,
    types.TEXT_DOCUMENT_DID_SAVE,
    types.TEXT_DOCUMENT_DID_CLOSE,
    ACTIVE_EDITOR_CHANGED,
    DIAGNOSTICS_CHANGED,
    BRANCH_CHANGED,
)
OFF_POLL_SECONDS = 5.0
"""How often the setting is looked at again while every project has it off."""
MAX_POLL_SECONDS = 30.0


def setup(server: Server) -> None:
    last_event = [time.monotonic()]
    done: dict[str, tuple[int, int, float]] = {}  # folder URI → (generation before, after, time)

    def touched(params: Any) -> None:
        last_event[0] = time.monotonic()

    for method in ACTIVITY:
        server.on(method, wait=False)(touched)

    def due(project: Project, minutes: float, now: float) -> bool:
        store = project.store
        if minutes <= 0 or store is None or project.closed or server.jobs.running:
            return False
        if now - last_event[0] < minutes * 60:
            return False
        previous = done.get(project.uri)
        if previous is None:
            return True
        before, after, at = previous
        changed = before != after or store.generation() != after
        return now - at >= minutes * 60 and changed

    async def consolidate(project: Project) -> None:
        from predictive import operations as ops

        store = project.store
        assert store is not None

        def work(job: Job) -> tuple[int, ops.Consolidated]:
            before = store.generation()
            return before, ops.consolidate(store, ops.ConsolidateArgs(), job.progress)

        before, result = await server.jobs.run(
            "Living Memory: consolidating (editor idle)", work, project.job_worker
        )
        after = await project.call(store.generation)
        done[project.uri] = (before, after, time.monotonic())
        counts = {k: v for k, v in to_wire(result).items() if k != "changes"}
        log.info("%s: consolidated while idle: %s", project.name, counts)
        server.notify(CONSOLIDATED, {"folder": project.uri, "trigger": "idle", **counts})
        changed = result.merged or result.forgotten
        if changed and server.context is not None and project.state.request() is not None:
            server.context.request(project)

    async def watch() -> None:
        while not server.shutting_down:
            assert server.registry is not None
            projects = list(server.registry.projects.values())
            minutes = [p.settings.consolidate_when_idle_minutes for p in projects]
            on = [m for m in minutes if m > 0]
            pause = min(MAX_POLL_SECONDS, max(0.05, min(on) * 60 / 4)) if on else OFF_POLL_SECONDS
            await asyncio.sleep(pause)
            now = time.monotonic()
            for project in projects:
                if not due(project, project.settings.consolidate_when_idle_minutes, now):
                    continue
                try:
                    await consolidate(project)
                except Exception:
                    log.warning("%s: consolidation while idle failed", project.name, exc_info=True)
                    done[project.uri] = (-1, -1, time.monotonic())

    @server.on(types.INITIALIZED)
    def start(params: Any) -> None:
        server.spawn(watch(), name="consolidate when idle")
