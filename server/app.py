"""The language server process: a pygls 2 ``LanguageServer`` with an event bus, settings,
tracked background tasks and logging. Wiring only — features live in ``server.features``,
the work in ``predictive`` and ``storage``.

Nothing heavy is imported here: the store, the engine and the embedding model are loaded in
the background after ``initialize`` has been answered (see :mod:`server.projects`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import logging
import os
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from predictive.operations import llm_config
from server import settings as settings_mod
from server.host import COMMAND_PARAMS, Listener
from server.settings import Settings

if TYPE_CHECKING:
    from server.context import ContextService
    from server.projects import Project, Registry

log = logging.getLogger("living_memory.server")

NAME = "living-memory"
OUR_LOGGERS = ("living_memory", "server", "predictive", "storage")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("living-memory")
    except Exception:
        return "0.0.0"


class Protocol(LanguageServerProtocol):
    """pygls' protocol, plus: command handlers see their request's parameters, and a
    ``$/cancelRequest`` also stops the long job behind the request (pygls alone only answers
    the request as cancelled)."""

    _server: LivingMemoryServer

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        COMMAND_PARAMS.set(params)
        return (yield from super().lsp_workspace__execute_command(params))

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        super()._handle_cancel_notification(msg_id)
        try:
            self._server.jobs.cancel_request(msg_id)
        except Exception:
            log.exception("cancelling the job of request %s failed", msg_id)


class LspLogHandler(logging.Handler):
    """Forwards log records to the client as ``window/logMessage`` (from the event loop)."""

    _LEVELS = (
        (logging.ERROR, types.MessageType.Error),
        (logging.WARNING, types.MessageType.Warning),
        (logging.INFO, types.MessageType.Info),
        (0, types.MessageType.Log),
    )

    def __init__(self, server: LivingMemoryServer) -> None:
        super().__init__()
        self.server = server
        self._busy = threading.local()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("pygls") or getattr(self._busy, "on", False):
            return
        loop = self.server.loop
        if loop is None or loop.is_closed() or not self.server.connected:
            return
        try:
            self._busy.on = True
            kind = next(t for lv, t in self._LEVELS if record.levelno >= lv)
            params = types.LogMessageParams(type=kind, message=self.format(record))
            if _on_loop(loop):
                self.server.window_log_message(params)
            else:
                loop.call_soon_threadsafe(self._send, params)
        except Exception:
            self.handleError(record)
        finally:
            self._busy.on = False

    def _send(self, params: types.LogMessageParams) -> None:
        try:
            self._busy.on = True
            self.server.window_log_message(params)
        except Exception:
            pass
        finally:
            self._busy.on = False


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class WireParams(dict[str, Any]):
    """Parameters already in wire form (JSON values only): sent as they are. The converter
    would otherwise walk every value of a context's items on the event loop (≈ 1 ms of the
    1.4 ms a ``contextUpdated`` of 128 items costs to encode; bench notes)."""


def converter() -> Any:
    """lsprotocol's converter; the parameters of custom messages stay plain JSON (pygls would
    turn them into namedtuples, renaming keys that are not identifiers)."""
    from lsprotocol.converters import get_converter
    from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

    conv = get_converter()
    for cls in (JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage):
        conv.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    conv.register_unstructure_hook(WireParams, lambda params: params)
    return conv


class LivingMemoryServer(LanguageServer):
    """The Living Memory language server."""

    protocol: Protocol

    def __init__(self) -> None:
        super().__init__(
            NAME,
            _version(),
            converter_factory=converter,
            protocol_cls=Protocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.settings = Settings()
        self.init_options: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connected = False
        self.parent_pid: int | None = None  # over stdio: the process that started us
        self.tasks: set[asyncio.Task[Any]] = set()
        self._listeners: dict[str, list[tuple[str, Listener, bool]]] = {}
        self._shown: set[str] = set()
        self.started = asyncio.Event()  # the project registry exists (after `initialized`)
        self.registry: Registry | None = None
        self.context: ContextService | None = None
        self.folder_settings: dict[str, Settings] = {}
        self.raw_settings: dict[str, Any] = {}
        self.log_handler = LspLogHandler(self)
        from server.jobs import Jobs

        self.jobs = Jobs(self)
        self.shutting_down = False
        self.active_from_client = False  # the client sends livingMemory/activeEditorChanged

    # ---- event bus -------------------------------------------------------------------------

    def on(
        self, method: str, *, wait: bool = True, options: Any = None
    ) -> Callable[[Listener], Listener]:
        """Subscribe a feature to an LSP method or custom notification.

        Every subscriber is called in turn, each inside its own try/except: one failing
        feature is logged with its traceback and the others still run. With ``wait`` the
        call waits until the projects exist (events that arrive during start-up queue).
        """

        def decorator(fn: Listener) -> Listener:
            name = f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"
            if method not in self._listeners:
                self._listeners[method] = []
                self._register_dispatch(method, options)
            self._listeners[method].append((name, fn, wait))
            return fn

        return decorator

    def _register_dispatch(self, method: str, options: Any) -> None:
        async def dispatch(ls: Any, params: Any) -> Any:
            return await self.fan_out(method, params)

        dispatch.__name__ = f"dispatch_{method.replace('/', '_').replace('$', '')}"
        self.feature(method, options)(dispatch)

    async def fan_out(self, method: str, params: Any) -> Any:
        result = None
        for name, fn, wait in list(self._listeners.get(method, ())):
            if wait and not self.started.is_set():
                await self.started.wait()
            try:
                out = fn(params)
                if inspect.isawaitable(out):
                    out = await out
                if out is not None:
                    result = out
            except asyncio.CancelledError:
                raise
            except JsonRpcException:
                raise
            except Exception:
                log.exception("feature %s failed on %s", name, method)
        return result

    # ---- tasks -----------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; keep a reference and log its exception."""
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("background task %s failed", task.get_name(), exc_info=exc)

    async def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a thread (for small blocking reads outside any store)."""
        return await asyncio.to_thread(fn, *args)

    def shutdown(self) -> None:
        """The connection ended (exit, or the client went away): stop long jobs so the
        process can end; what they committed stays."""
        self.shutting_down = True
        try:
            self.jobs.cancel_all()
        finally:
            super().shutdown()

    # ---- transport: pygls' loops with the hardened reader of server.wire ------------------

    def _start_io_async(self, stdin: Any = None, stdout: Any = None) -> None:
        from pygls.io_ import StdinAsyncReader, StdoutWriter

        from server.wire import run_async

        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(
                run_async(
                    self._stop_event, reader, self.protocol, error_handler=self.report_server_error
                )
            )
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        from server.wire import run_async

        self._stop_event = stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await run_async(
                stop_event, reader, self.protocol, error_handler=self.report_server_error
            )
            self.shutdown()

        async def tcp_server() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        log.info("serving on %s:%s", host, port)
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(tcp_server())

    # ---- messages --------------------------------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        """Send a custom notification (call from the event loop); a dict of JSON values is
        sent as it is."""
        if self.connected:
            self.protocol.notify(method, WireParams(params) if type(params) is dict else params)

    def show_once(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """``window/showMessage``, but never the same text twice."""
        if message in self._shown:
            return
        self._shown.add(message)
        log.log(logging.ERROR if kind == types.MessageType.Error else logging.WARNING, message)
        if self.connected:
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A malformed message or a failing handler: log it, keep serving, no pop-up."""
        from pygls.exceptions import FeatureRequestError

        if source is FeatureRequestError:  # the client got an error response; see commands
            log.debug("request failed: %s", error)
            return
        log.error("%s: %s", getattr(source, "__name__", source), error, exc_info=error)

    # ---- settings --------------------------------------------------------------------------

    def apply_settings(self, raw: Any) -> Settings:
        """Load settings, tell the user once about anything ignored, set the log level."""
        new, problems = settings_mod.load(raw)
        for message in problems:
            self.show_once(f"Living Memory: {message}")
        self.settings = new
        set_log_level(self, new.level)
        # the model the user configured here, else the one of the environment (like the CLI)
        llm_config.configure(new.llm if new.llm.enabled else llm_config.config_from_env()[0])
        return new

    def client_supports(self, path: str) -> bool:
        node: Any = getattr(self.protocol, "client_capabilities", None)
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                return False
        return bool(node)

    # ---- heavy parts -----------------------------------------------------------------------

    async def load_projects_module(self) -> Any:
        """Import the store/engine side in a thread (it takes about a second)."""
        return await asyncio.to_thread(importlib.import_module, "server.projects")

    async def project_for(self, *, folder: str | None = None, uri: str | None = None) -> Project:
        """The project a command is about: the document's, the folder's, else the active one."""
        from server.commands import ArgumentError, RequestFailed

        await self.started.wait()
        assert self.registry is not None
        if uri is not None:
            found = self.registry.locate(uri)
            if found is None:
                raise ArgumentError("uri", f"{uri} is not a file in an open workspace folder")
            return found[0]
        project = self.registry.by_folder(folder)
        if project is None:
            if folder:
                raise ArgumentError("folder", f"{folder} is not an open workspace folder")
            raise RequestFailed("no workspace folder is open")
        return project

    async def project_ready(self, project: Project) -> bool:
        await project.wait_ready()
        return project.store is not None


def set_log_level(server: LivingMemoryServer, level: int) -> None:
    for name in OUR_LOGGERS:
        logging.getLogger(name).setLevel(level)
    server.log_handler.setLevel(level)
    debug = level <= logging.DEBUG
    logging.getLogger("pygls").setLevel(logging.DEBUG if debug else logging.WARNING)
    # pygls logs every error response with a traceback; ours are logged where they arise
    logging.getLogger("pygls.protocol.json_rpc").setLevel(
        logging.DEBUG if debug else logging.CRITICAL
    )


def configure_logging(server: LivingMemoryServer, level: int = logging.INFO) -> None:
    """stderr gets warnings and errors (never stdout: that is the protocol); the client gets
    our records at the configured level as ``window/logMessage``."""
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.WARNING)
    stderr.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(stderr)
    root.setLevel(logging.DEBUG)
    for name in OUR_LOGGERS:
        logging.getLogger(name).addHandler(server.log_handler)
    set_log_level(server, level)


def create_server() -> LivingMemoryServer:
    """A server with every feature set up."""
    from server import features

    server = LivingMemoryServer()
    features.setup_all(server)
    return server


def serve(*, tcp: tuple[str, int] | None = None, log_level: str = "info") -> int:
    """Run the server on stdio (or TCP) until the client says exit."""
    server = create_server()
    configure_logging(server, settings_mod.LOG_LEVELS.get(log_level, logging.INFO))
    if tcp is not None:
        server.start_tcp(*tcp)
    else:
        server.parent_pid = os.getppid()
        server.start_io()
    return 0
