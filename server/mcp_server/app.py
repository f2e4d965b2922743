"""Builds the MCP server over one project's store and runs it over stdio or streamable HTTP.

All store work happens on one worker thread (the store keeps a connection per thread); the
first ingestion of a new project runs on a second thread, as the language server does.
Logs go to stderr, never stdout (stdout carries the protocol)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer

from predictive.learning import Learning
from predictive.session import ProjectSession
from storage import MemoryStore

log = logging.getLogger("living_memory.mcp")

T = TypeVar("T")

INSTRUCTIONS = (
    "Living Memory is this project's memory: decisions, conventions, fixes, history and past "
    "conversations, each citing its source. Ask it before guessing: `ask` a question, "
    "`search` it, `context_for_file` before editing a file, `recall` an id at a richer level, "
    "`explore` what an item is linked to. `remember` what you find out (decisions, fixes, "
    "tool results worth keeping). Every result has a token `budget`."
)


@dataclass
class Backend:
    """One project's session (opened on first use) and the thread that does all store work."""

    root: Path
    db_path: Path
    model_dir: Path | None = None
    learning: Learning = field(default_factory=Learning)
    session: ProjectSession | None = None
    worker: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="lm-mcp-store")
    )
    _open_lock: threading.Lock = field(default_factory=threading.Lock)

    def open(self) -> ProjectSession:
        """The project's session (its store is opened on first use)."""
        with self._open_lock:
            if self.session is None:
                self.session = ProjectSession.open(
                    self.root, self.db_path, model_dir=self.model_dir, learning=self.learning
                )
                log.info("memory of %s at %s", self.root, self.db_path)
            return self.session

    async def call(self, fn: Callable[[MemoryStore], T]) -> T:
        """``fn(store)`` on the store's worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.worker, lambda: fn(self.open().store))

    def prepare(self, ingest: bool = True) -> None:
        """The session's preparation (first ingestion, vectors, levels); answers given before
        the vectors are in carry a ``learning`` note."""
        try:
            prepared = self.open().prepare(ingest=ingest)
            if prepared.first_run is not None:
                log.info(
                    "first ingestion of %s: %d memories", self.root, prepared.first_run["added"]
                )
        except Exception:
            log.warning("preparing the memory of %s failed", self.root, exc_info=True)

    def close(self) -> None:
        self.worker.shutdown(wait=True)
        if self.session is not None:
            self.session.close()


def build_server(backend: Backend) -> MCPServer:
    """The MCP server with every Living Memory tool registered."""
    from server.mcp_server.tools import register

    app: MCPServer = MCPServer(
        "living-memory",
        title="Living Memory",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    register(app, backend)
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


def serve(
    backend: Backend,
    *,
    http_port: int | None = None,
    ingest: bool = True,
    token: str | None = None,
) -> int:
    """Run until the client closes stdin (or, with ``http_port``, until interrupted; HTTP
    requests must then carry ``token`` as a bearer token unless it is None)."""
    app = build_server(backend)
    backend.learning.start()  # before the first request can be answered
    threading.Thread(
        target=backend.prepare, args=(ingest,), name="lm-mcp-prepare", daemon=True
    ).start()
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
