"""Start-up, settings, workspace folders and shutdown.

``initialize`` only reads ``initializationOptions``, so it answers at once. ``initialized``
starts loading the store side (in a thread), pulls ``workspace/configuration`` (section
``livingMemory``, globally and per folder), creates one project per workspace folder and
opens their stores in the background; the embedding model loads after that, lazily.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from server import client_watch
from server import settings as settings_mod
from server.settings import SECTION

if TYPE_CHECKING:
    from server.features.host import Server

log = logging.getLogger("living_memory.lifecycle")

CONFIG_TIMEOUT_S = 5.0


def setup(server: Server) -> None:
    state: dict[str, Any] = {"folders": []}

    @server.on(types.INITIALIZE, wait=False)
    def initialize(params: types.InitializeParams) -> None:
        server.loop = asyncio.get_running_loop()
        server.connected = True
        server.init_options = params.initialization_options
        server.raw_settings = settings_mod.merge(
            settings_mod.section_of(params.initialization_options)
        )
        server.apply_settings(server.raw_settings)
        folders = [f.uri for f in params.workspace_folders or []]
        if not folders and params.root_uri:
            folders = [params.root_uri]
        state["folders"] = folders
        if isinstance(params.process_id, int):
            server.spawn(
                client_watch.watch(params.process_id, lambda: exit_now(server)), "client-watch"
            )
        elif server.parent_pid is not None:  # no processId: the process that started us
            server.spawn(
                client_watch.watch_parent(server.parent_pid, lambda: exit_now(server)),
                "parent-watch",
            )

    @server.on(types.INITIALIZED, wait=False)
    async def initialized(params: types.InitializedParams) -> None:
        # the store side (storage, numpy, the tokenizer) loads only now, after the
        # initialize response is out: importing it competes with that response for the GIL
        projects = await server.load_projects_module()
        from server.context import ContextService

        await pull_configuration(server, state["folders"])
        server.registry = projects.Registry(server)
        server.context = ContextService(server)
        for uri in state["folders"]:
            server.registry.add_folder(uri)
        server.started.set()
        log.info("started with %d workspace folder(s)", len(server.registry.projects))

    @server.on(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(params: types.DidChangeConfigurationParams) -> None:
        assert server.registry is not None
        folders = [p.uri for p in server.registry.projects.values()]
        pushed = params.settings
        if server.client_supports("workspace.configuration"):
            await pull_configuration(server, folders)
        elif isinstance(pushed, dict):
            server.raw_settings = settings_mod.merge(
                settings_mod.section_of(server.init_options), settings_mod.section_of(pushed)
            )
            server.apply_settings(server.raw_settings)
        for project in list(server.registry.projects.values()):
            new = server.folder_settings.get(project.uri, server.settings)
            try:
                await project.reconfigure(new)
            except Exception:
                log.exception("%s: applying the new settings failed", project.name)
            if project.state.request() is not None and server.context is not None:
                server.context.request(project)

    @server.on(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(params: types.DidChangeWorkspaceFoldersParams) -> None:
        assert server.registry is not None
        for f in params.event.removed or []:
            await server.registry.remove_folder(f.uri)
        added = [f.uri for f in params.event.added or []]
        # register the folders at once (their documents may arrive next), open them once
        # their settings are known
        projects = [server.registry.add_folder(uri, start=False) for uri in added]
        if added:
            await pull_configuration(server, added, global_too=False)
        for project in projects:
            if project is not None:
                project.start(server.folder_settings.get(project.uri, server.settings))

    @server.on(types.SHUTDOWN, wait=False)
    async def shutdown(params: Any) -> None:
        await stop_work(server)


async def stop_work(server: Server) -> None:
    """Cancel the long jobs and pending contexts and close every store (what is committed
    stays)."""
    server.shutting_down = True
    server.jobs.cancel_all()
    if server.context is not None:
        for task in list(server.context.pending.values()):
            task.cancel()
    if server.registry is not None:
        await server.registry.close()


async def exit_now(server: Server) -> None:
    """The client's process is gone: close the stores and end the process. (Our stdin may
    still be open, and a thread is blocked reading it, so a normal exit would wait for ever.)"""
    try:
        await asyncio.wait_for(stop_work(server), 20)
    except Exception:
        log.exception("closing the stores before exiting failed")
    finally:
        logging.shutdown()
        os._exit(0)


async def pull_configuration(
    server: Server, folders: list[str], *, global_too: bool = True
) -> None:
    """Ask the client for ``livingMemory`` settings (pull model), over initializationOptions."""
    if not server.client_supports("workspace.configuration"):
        for uri in folders:
            server.folder_settings[uri] = server.settings
        return
    items = [types.ConfigurationItem(section=SECTION)] if global_too else []
    items += [types.ConfigurationItem(section=SECTION, scope_uri=uri) for uri in folders]
    try:
        values = await asyncio.wait_for(
            server.workspace_configuration_async(types.ConfigurationParams(items=items)),
            CONFIG_TIMEOUT_S,
        )
    except Exception as e:
        log.warning("workspace/configuration failed (%s); using initializationOptions", e)
        for uri in folders:
            server.folder_settings.setdefault(uri, server.settings)
        return
    values = list(values or [])
    base = settings_mod.section_of(server.init_options)
    if global_too:
        top = values.pop(0) if values else None
        server.raw_settings = settings_mod.merge(base, settings_mod.section_of(top))
        server.apply_settings(server.raw_settings)
    for uri, value in zip(folders, values):
        raw = settings_mod.merge(server.raw_settings, settings_mod.section_of(value))
        loaded, problems = settings_mod.load(raw)
        for message in problems:
            server.show_once(f"Living Memory: {message}")
        server.folder_settings[uri] = loaded
