"""The git branch: ``livingMemory/branchChanged {folder, branch, previous}`` from the
extension, and — for clients that send nothing — ``.git/HEAD`` read on every save and every
``gitPollSeconds``. Once a client has reported a folder's branch, it is trusted for that
folder and the polling stops there (the two would otherwise disagree mid-checkout)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from server.convert import ConversionError, structure

if TYPE_CHECKING:
    from server.features.host import Server
    from server.projects import Project

log = logging.getLogger("living_memory.branch")

BRANCH_CHANGED = "livingMemory/branchChanged"


@dataclass(frozen=True)
class BranchParams:
    folder: str | None = None  # the repository (or workspace folder) URI; None: all
    branch: str | None = None  # None: detached HEAD
    previous: str | None = None


def setup(server: Server) -> None:
    from predictive.operations import BranchChanged

    def changed(project: Project, branch: str | None, previous: str | None) -> None:
        from storage import clip_anchor_value

        # a branch name is matched by its first 1,024 characters (as stored): a huge one is
        # cut here, before it reaches the logs, the state or the notifications
        branch = clip_anchor_value(branch) if isinstance(branch, str) else branch
        previous = clip_anchor_value(previous) if isinstance(previous, str) else previous
        if branch == project.branch:
            return
        log.info("%s: branch %s → %s", project.name, project.branch, branch)
        request = project.state.apply(BranchChanged(branch, previous))
        if request is not None and server.context is not None:
            server.context.request(project)

    async def check(project: Project) -> None:
        if project.store is None or project.closed or project.branch_from_client:
            return
        from storage.paths import current_branch

        branch = await asyncio.to_thread(current_branch, project.root)
        changed(project, branch, project.branch)

    async def poll() -> None:
        while not server.shutting_down:
            assert server.registry is not None
            projects = list(server.registry.projects.values())
            interval = min(
                [p.settings.git_poll_seconds for p in projects]
                or [server.settings.git_poll_seconds]
            )
            await asyncio.sleep(interval)
            for project in projects:
                try:
                    await check(project)
                except Exception:
                    log.warning("%s: reading .git/HEAD failed", project.name, exc_info=True)

    @server.on(types.INITIALIZED)
    def start_polling(params: Any) -> None:
        server.spawn(poll(), name="poll .git/HEAD")

    @server.on(types.TEXT_DOCUMENT_DID_SAVE)
    def on_save(params: types.DidSaveTextDocumentParams) -> None:
        assert server.registry is not None
        found = server.registry.locate(params.text_document.uri)
        if found is not None:
            server.spawn(check(found[0]), name="branch on save")

    @server.on(BRANCH_CHANGED)
    def branch_changed(params: Any) -> None:
        assert server.registry is not None
        try:
            p = structure(params, BranchParams)
        except ConversionError as e:
            log.warning("%s: ignored malformed parameters: %s", BRANCH_CHANGED, e)
            return
        for project in targets(server, p.folder):
            project.branch_from_client = True  # the client knows: stop reading .git/HEAD
            changed(project, p.branch, p.previous)


def targets(server: Server, folder: str | None) -> list[Project]:
    """The projects a repository URI concerns: those in it, or the one containing it."""
    assert server.registry is not None
    projects = list(server.registry.projects.values())
    if not folder:
        return projects
    fs = to_fs_path(folder) if folder.startswith("file:") else folder
    if not fs:
        return []
    repo = Path(fs).resolve()
    out = []
    for p in projects:
        f = p.folder.resolve()
        if f == repo or repo in f.parents or p.root.resolve() == repo:
            out.append(p)
    return out
