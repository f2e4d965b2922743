"""What the parts of the language server see of the server process: narrow protocols that
:class:`server.app.LivingMemoryServer` implements, so that nothing the server sets up has to
import it (no import circle through the server).

:class:`Host` is what every part may use (the event loop, background tasks, messages, the
client's capabilities and documents); :mod:`server.features` see more (:class:`Server` in
:mod:`server.features.host`); :mod:`server.projects` and :mod:`server.context` add the little
they need of each other in their own protocols.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.progress import Progress
    from pygls.workspace import Workspace

    from server.settings import Settings

Listener = Callable[[Any], Any]

COMMAND_PARAMS: contextvars.ContextVar[types.ExecuteCommandParams | None] = contextvars.ContextVar(
    "command_params", default=None
)
"""The parameters of the ``workspace/executeCommand`` request being handled (for its work-done
token): set by the server's protocol, read by command handlers running in the same context."""


class Host(Protocol):
    """The server as every part of it sees it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None: ...

    @property
    def shutting_down(self) -> bool: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def work_done_progress(self) -> Progress: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; keep a reference and log its exception."""
        ...

    def notify(self, method: str, params: Any) -> None:
        """Send a custom notification (call from the event loop)."""
        ...

    def show_once(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """``window/showMessage``, but never the same text twice."""
        ...

    def client_supports(self, path: str) -> bool: ...
