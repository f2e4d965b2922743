"""What the features (and the command helpers they register with) see of the language server:
:class:`Server`, a protocol that :class:`server.app.LivingMemoryServer` implements, so that a
feature never imports the server that sets it up."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lsprotocol import types

from server.context import ContextHost
from server.host import Listener
from server.projects import ProjectHost

if TYPE_CHECKING:
    from pygls.protocol import LanguageServerProtocol

    from server.context import ContextService
    from server.jobs import Jobs
    from server.projects import Project, Registry
    from server.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


class Server(ProjectHost, ContextHost, Protocol):
    """The server as its features see it: the event bus, the projects, the context service,
    the jobs, the settings as the client sent them."""

    registry: Registry | None
    context: ContextService | None
    loop: asyncio.AbstractEventLoop | None
    connected: bool
    shutting_down: bool
    active_from_client: bool  # the client sends livingMemory/activeEditorChanged
    init_options: Any
    raw_settings: dict[str, Any]
    folder_settings: dict[str, Settings]
    parent_pid: int | None  # over stdio: the process that started the server
    started: asyncio.Event  # the project registry exists (after `initialized`)

    @property
    def jobs(self) -> Jobs: ...

    @property
    def protocol(self) -> LanguageServerProtocol: ...

    def on(
        self, method: str, *, wait: bool = True, options: Any = None
    ) -> Callable[[Listener], Listener]:
        """Subscribe a feature to an LSP method or custom notification."""
        ...

    def command(self, command_name: str) -> Callable[[F], F]: ...

    async def workspace_configuration_async(
        self, params: types.ConfigurationParams
    ) -> Sequence[Any | None]: ...

    def apply_settings(self, raw: Any) -> Settings: ...

    async def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any: ...

    async def load_projects_module(self) -> Any: ...

    async def project_for(self, *, folder: str | None = None, uri: str | None = None) -> Project:
        """The project a command is about: the document's, the folder's, else the active one."""
        ...

    async def project_ready(self, project: Project) -> bool: ...
