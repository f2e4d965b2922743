"""Team memory in the editor: ``livingMemory.reviewList``, ``approve``, ``reject``, ``edit``
and ``share`` (the operations of :mod:`predictive.operations.review`), and the shared folder
read back whenever its files change — a pull, a branch change, a teammate's file or a hand
edit — checked every ``gitPollSeconds`` (the first check reads it when a project opens).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from predictive import operations as ops
from predictive.operations import EditArgs, ReviewArgs, ReviewListArgs, ShareArgs
from server.commands import command
from server.convert import to_wire

if TYPE_CHECKING:
    from server.features.host import Server
    from server.projects import Project

log = logging.getLogger("living_memory.team")

MAX_FILES = 20_000  # a folder larger than this is not watched file by file
Signature = tuple[tuple[str, int, int], ...]


def signature(folder: Path) -> Signature:
    """What changes when a file of the folder is added, removed or rewritten."""
    out: list[tuple[str, int, int]] = []
    if not folder.is_dir():
        return ()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if not name.endswith(".md"):
                continue
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue
            out.append((os.path.join(dirpath, name), st.st_size, st.st_mtime_ns))
            if len(out) >= MAX_FILES:
                return tuple(sorted(out))
    return tuple(sorted(out))


def folder_of(project: Project) -> Path:
    from predictive.operations import shared_folder_of as resolve

    return resolve(project.root, project.settings.shared_folder)


class SharedFolderWatcher:
    """Reads a project's shared folder into its store when the folder's files change."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.seen: dict[str, Signature] = {}

    async def mark_seen(self, project: Project) -> None:
        """What the folder looks like now is known (this store just wrote it)."""
        self.seen[str(project.folder)] = await asyncio.to_thread(signature, folder_of(project))

    async def refresh(self, project: Project) -> None:
        store = project.store
        if store is None or project.closed:
            return
        where = folder_of(project)
        sig = await asyncio.to_thread(signature, where)
        key = str(project.folder)
        if self.seen.get(key) == sig:
            return
        self.seen[key] = sig

        def read() -> Any:
            from predictive.operations import read_shared_folder as read_folder
            from storage.sources.records import SkipLog

            skips = SkipLog()
            return read_folder(store, project.root, where, skips), skips

        loop = asyncio.get_running_loop()
        report, skips = await loop.run_in_executor(project.job_worker, read)
        for source, path, reason in skips.examples:
            if source == "shared":
                log.warning("%s: skipped shared file %s: %s", project.name, path, reason)
        if report.added or report.superseded or report.archived or report.updated:
            log.info(
                "%s: shared folder: %d new, %d edited, %d deleted",
                project.name,
                report.added,
                report.superseded,
                report.archived,
            )
            if self.server.context is not None and project.state.request() is not None:
                self.server.context.request(project)

    async def watch(self) -> None:
        server = self.server
        while not server.shutting_down:
            assert server.registry is not None
            projects = list(server.registry.projects.values())
            for project in projects:
                try:
                    await self.refresh(project)
                except Exception:
                    log.warning("%s: reading the shared folder failed", project.name, exc_info=True)
            interval = min(
                [p.settings.git_poll_seconds for p in projects]
                or [server.settings.git_poll_seconds]
            )
            await asyncio.sleep(interval)


def setup(server: Server) -> None:
    watcher = SharedFolderWatcher(server)

    @server.on(types.INITIALIZED)
    def start_watching(params: Any) -> None:
        server.spawn(watcher.watch(), name="watch the shared folder")

    async def run(folder_uri: str | None, fn: Any, *args: Any) -> Any:
        project = await server.project_for(folder=folder_uri)

        def work() -> Any:
            assert project.store is not None
            return to_wire(fn(project.store, *args))

        result = await project.call(work)
        if server.context is not None and project.state.request() is not None:
            server.context.request(project)  # a rejected or edited memory leaves the context
        return result

    @command(server, "reviewList", ReviewListArgs)
    async def review_list(a: ReviewListArgs) -> Any:
        return await run(a.folder, ops.review_list, a)

    @command(server, "approve", ReviewArgs)
    async def approve(a: ReviewArgs) -> Any:
        return await run(a.folder, ops.approve, a)

    @command(server, "reject", ReviewArgs)
    async def reject(a: ReviewArgs) -> Any:
        return await run(a.folder, ops.reject, a)

    @command(server, "edit", EditArgs)
    async def edit(a: EditArgs) -> Any:
        return await run(a.folder, ops.edit, a)

    @command(server, "share", ShareArgs)
    async def share(a: ShareArgs) -> Any:
        project = await server.project_for(folder=a.folder)
        request = ShareArgs(a.shared_folder or project.settings.shared_folder, a.dry_run)

        def work() -> Any:
            assert project.store is not None
            return to_wire(ops.share(project.store, request, project.root))

        await project.call(lambda: None)  # the store is open
        # on the job worker, like ingestion and the folder's reading: never two at once
        result = await asyncio.get_running_loop().run_in_executor(project.job_worker, work)
        await watcher.mark_seen(project)
        return result
