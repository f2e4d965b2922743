"""Builds the MCP server over one project's store and runs it over stdio or streamable HTTP.

All store work happens on one worker thread (the store keeps a connection per thread). Two
more threads start before the SDK is imported: one loads the model beside the import and, once
the server is built, queues the rest of the warm-up on the worker and loads the vector index
beside it (its loading releases the GIL); the other prepares the store (the first
ingestion of a new project, vectors for what lacks one), as the language server does. An
answer waits only for what it needs that is still loading. Logs go to stderr, never stdout
(stdout carries the protocol)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from predictive.operations import Learning
from predictive.session import ProjectSession
from storage import MemoryStore
from storage.embeddings import Embedder

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger("living_memory.mcp")

T = TypeVar("T")

INSTRUCTIONS = (
    "Living Memory is this project's memory: decisions, conventions, fixes, history and past "
    "conversations, each citing its source. Ask it before guessing: `ask` a question, "
    "`search` it, `context_for_file` before editing a file, `recall` an id at a richer level, "
    "`explore` what an item is linked to. `remember` what you find out (decisions, fixes, "
    "tool results worth keeping). Every result has a token `budget`."
)


WARM_SEARCH_AFTER_S = 0.5
"""How long after the server is built the warm-up's own search waits for a client's first
call, which warms the worker itself: a client asks right after ``initialize``, and a warming
search run then would only make it wait."""


@dataclass
class Backend:
    """One project's session (opened on first use) and the thread that does all store work."""

    root: Path
    db_path: Path
    model_dir: Path | None = None
    embedder: Callable[[], Embedder] | None = None  # loads the embedder (default: model_dir's)
    learning: Learning = field(default_factory=Learning)
    session: ProjectSession | None = None
    worker: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="lm-mcp-store")
    )
    _open_lock: threading.Lock = field(default_factory=threading.Lock)
    built: threading.Event = field(default_factory=threading.Event)  # set once tools are in
    _called: int = 0  # calls the worker has started (counted on the worker)

    def open(self) -> ProjectSession:
        """The project's session (its store is opened on first use)."""
        with self._open_lock:
            if self.session is None:
                self.session = ProjectSession.open(
                    self.root,
                    self.db_path,
                    model_dir=self.model_dir,
                    embedder=self.embedder,
                    learning=self.learning,
                )
                log.info("memory of %s at %s", self.root, self.db_path)
            return self.session

    async def call(self, fn: Callable[[MemoryStore], T]) -> T:
        """``fn(store)`` on the store's worker thread."""
        loop = asyncio.get_running_loop()

        def run() -> T:
            self._called += 1
            return fn(self.open().store)

        return await loop.run_in_executor(self.worker, run)

    def warm(self) -> None:
        """Load the model now, beside the SDK's import. The rest of the warm-up
        (:meth:`ProjectSession.warm`) holds the GIL, so it waits until the server is built
        (:attr:`built`) and is then queued on the worker, which answers: a call that came first
        is answered first; the vector index loads here meanwhile (its loading releases the GIL:
        before the server is built it only slowed the SDK's import on two cores). A failure is
        logged; the first answer that needs the part tries again and says why."""
        try:
            session = self.open()
            session.store.embedder  # noqa: B018
        except Exception:
            log.warning("loading the memory of %s failed", self.root, exc_info=True)
            return
        self.built.wait()
        self._submit(self._warm_worker, session)
        try:
            session.load_vectors()
        except Exception:
            log.warning("loading the vector index of %s failed", self.root, exc_info=True)

    def _warm_worker(self, session: ProjectSession) -> None:
        """What a search needs first; then, once the client has been quiet for a moment
        (:data:`WARM_SEARCH_AFTER_S`), a warming search unless a call has warmed the worker
        already, and the context engine, each in a job of its own behind any call that came
        meanwhile (an agent's first call is rarely for a file's context)."""
        try:
            session.warm(engine=False, search=False)
        except Exception:
            log.warning("warming the store's worker failed", exc_info=True)
            return
        timer = threading.Timer(WARM_SEARCH_AFTER_S, self._submit, (self._warm_search, session))
        timer.daemon = True
        timer.start()

    def _submit(self, job: Callable[[ProjectSession], None], session: ProjectSession) -> None:
        with suppress(RuntimeError):  # the server has stopped already
            self.worker.submit(job, session)

    def _warm_search(self, session: ProjectSession) -> None:
        if not self._called:
            try:
                session.warm_search()
            except Exception:
                log.warning("warming the store's worker failed", exc_info=True)
        self._submit(self._warm_engine, session)

    def _warm_engine(self, session: ProjectSession) -> None:
        try:
            session.engine  # noqa: B018
        except Exception:
            log.warning("building the context engine failed", exc_info=True)

    def start(self, ingest: bool = True) -> list[threading.Thread]:
        """Warm the session on one thread and prepare it on another, both started now: a
        store with nothing to learn says so within a few queries, while the model loads."""
        threads = [
            threading.Thread(target=self.warm, name="lm-mcp-warm", daemon=True),
            threading.Thread(
                target=self.prepare, args=(ingest,), name="lm-mcp-prepare", daemon=True
            ),
        ]
        for thread in threads:
            thread.start()
        return threads

    def prepare(self, ingest: bool = True) -> None:
        """The session's preparation (first ingestion, vectors, levels); answers given before
        the vectors are in carry a ``learning`` note."""
        try:
            prepared = self.open().prepare(ingest=ingest)
            if prepared.first_run is not None:
                log.info("first ingestion of %s: %d memories", self.root, prepared.first_run.added)
        except Exception:
            log.warning("preparing the memory of %s failed", self.root, exc_info=True)

    def close(self) -> None:
        self.worker.shutdown(wait=True)
        if self.session is not None:
            self.session.close()


def build_server(backend: Backend) -> MCPServer:
    """The MCP server with every Living Memory tool registered."""
    from server.mcp_server.sdk import server_class

    server_type = server_class()
    from server.mcp_server.tools import register

    app: MCPServer = server_type(
        "living-memory",
        title="Living Memory",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    register(app, backend)
    backend.built.set()
    return app


def http_app(app: MCPServer, port: int, token: str | None) -> Any:
    """The streamable HTTP application on 127.0.0.1:``port``: the SDK's, its Host and Origin
    lists exact (its own ``:*`` patterns match by prefix: ``127.0.0.1:80.evil.example``), behind
    the guard that asks for ``token`` (None: no token)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from server.mcp_server.http_guard import Guard, local_hosts, local_origins

    security = TransportSecuritySettings(
        allowed_hosts=local_hosts(port), allowed_origins=local_origins(port)
    )
    inner = app.streamable_http_app(transport_security=security, host="127.0.0.1")
    return Guard(inner, port, token)


def _run_http(app: MCPServer, port: int, token: str | None) -> None:
    import uvicorn

    config = uvicorn.Config(
        http_app(app, port, token), host="127.0.0.1", port=port, log_level="warning"
    )
    uvicorn.Server(config).run()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while the server starts: importing the SDK and
    building the tools make ~100k objects that live as long as the process, over which it would
    otherwise run full collections (~0.1 s each) on the way to the first answer. What exists
    then is frozen: later collections leave it out, so they stay short too."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def session_runner(app: MCPServer) -> Callable[[Any, Any], Any] | None:
    """How to run one session of ``app`` over given streams (the SDK's ``run`` only serves
    the process's own stdio); None with an SDK laid out otherwise."""
    lowlevel = getattr(app, "_lowlevel_server", None)
    run = getattr(lowlevel, "run", None)
    options = getattr(lowlevel, "create_initialization_options", None)
    if run is None or options is None:
        return None
    return lambda read, write: run(read, write, options())


def serve_descriptors(
    runner: Callable[[Any, Any], Any], backend: Backend, stdin: int, stdout: int
) -> None:
    """Serve one session with ``runner`` (:func:`session_runner`) over the descriptors
    ``stdin`` and ``stdout`` (another process's, handed over: :mod:`server.mcp_server.relay`)
    until the client closes its end; both are closed after, and ``backend`` with them."""
    import io

    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        reader = io.TextIOWrapper(os.fdopen(stdin, "rb"), encoding="utf-8", errors="replace")
        writer = io.TextIOWrapper(os.fdopen(stdout, "wb"), encoding="utf-8")
        with reader, writer:
            async with stdio_server(anyio.wrap_file(reader), anyio.wrap_file(writer)) as (r, w):
                await runner(r, w)

    try:
        anyio.run(run)
    finally:
        backend.close()


def serve(
    backend: Backend,
    *,
    http_port: int | None = None,
    ingest: bool = True,
    token: str | None = None,
) -> int:
    """Run until the client closes stdin (or, with ``http_port``, until interrupted; HTTP
    requests must then carry ``token`` as a bearer token unless it is None)."""
    backend.learning.start()  # before the first request can be answered
    with _collector_paused():
        backend.start(ingest)  # the model loads while the SDK is imported and the tools built
        app = build_server(backend)
    try:
        if http_port is None:
            app.run("stdio")
        else:
            _run_http(app, http_port, token)
    except KeyboardInterrupt:
        pass
    finally:
        backend.close()
    return 0
