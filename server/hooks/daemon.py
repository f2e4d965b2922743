"""The warm hook daemon: ``living-memory hook serve``.

It listens on a Unix socket in the hooks' folder of the data directory (private to the user),
keeps one project session per project open (store, embedder, context engine), answers each
event on one thread and learns turns on another, so a prompt's answer costs a search, not an
interpreter, a model load and a store opening. It leaves after ``idle`` seconds without an
event or when asked to stop (``living-memory hook serve --stop``); the hook command falls back to
answering without it while it is not running (and starts it).
Protocol: one JSON request per connection (``client``, ``event``, ``input``, ``cwd``, ``db``,
``budget``; or ``control``: ``status`` | ``stop``), one JSON reply (``stdout``). A connection
that brings two descriptors with an ``mcp`` request hands over an MCP session
(:mod:`server.mcp_server.relay`): the daemon answers ``{"ok": …}`` on one line and, after
a yes, waits for the command's ``go`` line, then serves the session over those descriptors and
closes the connection when it ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.hooks import where
from server.hooks.client import ENV_DB
from server.hooks.handler import (
    Event,
    Sessions,
    default_db,
    describe,
    handle,
    learning_lock,
    parse,
    run_background,
)

if TYPE_CHECKING:
    from storage.embeddings import Embedder

log = logging.getLogger("living_memory.hooks.daemon")

IDLE_SECONDS = 1800.0
ANSWER_TIMEOUT = 10.0
MAX_REQUEST = 8_000_000
CONFIRM_SECONDS = 10.0  # how long a yes to an MCP hand-over waits for the command's go
WARM_PROMPT = "warm up the project memory search"  # loads the model and the file index


class Daemon:
    """Sessions and the two workers (answers, learning)."""

    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self.idle = idle
        self.last = time.monotonic()
        self.started = time.time()
        self.stop = threading.Event()
        self.answers = Sessions(embedder=lambda: self.model(None))  # one model with MCP's
        self.learning = Sessions()
        # each worker has its own thread, hence its own store connections
        self.answer_worker = ThreadPoolExecutor(1, thread_name_prefix="lm-hook-answer")
        self.learn_worker = ThreadPoolExecutor(1, thread_name_prefix="lm-hook-learn")
        self.opened: set[tuple[Path, Path]] = set()  # projects whose short forms are made
        self.sessions = 0  # MCP sessions being served: the daemon stays while there are any
        self._models: dict[str | None, Embedder] = {}  # shared by the MCP sessions
        self._lock = threading.Lock()  # guards the two above

    def warm(self, request: dict[str, object], *, known_only: bool = False) -> None:
        """Open the project of the event that started the daemon and load its model, so the
        next prompt costs a search only (``known_only``: only a project that has a memory
        already, for a daemon started by hand in some folder)."""
        from predictive.operations.prompt import PromptArgs

        def run() -> None:
            e = self._event({**request, "event": "warm"})
            if known_only and not self.answers.where(e)[1].exists():
                log.info("no project memory at %s to warm", e.folder)
                return
            self.answers.of(e).answer_prompt(PromptArgs(WARM_PROMPT, record=False))
            self._opening(e)

        started = time.perf_counter()
        try:
            self.answer_worker.submit(run).result(ANSWER_TIMEOUT * 6)
            log.info("warm after %.0f ms", (time.perf_counter() - started) * 1e3)
        except Exception:
            log.warning("warming up failed", exc_info=True)
        self.preload_mcp()

    def model(self, model_dir: str | None) -> Embedder:
        """The embedder of ``model_dir`` (None: the environment's), loaded once for every MCP
        session (it is safe to share between threads)."""
        from storage.embeddings import embedder_from_env

        with self._lock:
            if model_dir not in self._models:
                self._models[model_dir] = embedder_from_env(model_dir)
            return self._models[model_dir]

    def preload_mcp(self) -> None:
        """Import the MCP SDK's server layer now, while idle, so a handed-over session does
        not wait for it."""
        try:
            from server.mcp_server.sdk import server_class

            server_class()
        except Exception:
            log.info("the MCP SDK could not be imported", exc_info=True)

    def mcp(
        self,
        spec: dict[str, Any],
        fds: list[int],
        reply: Callable[[bytes], None],
        confirmed: Callable[[], bool],
    ) -> None:
        """Serve a handed-over MCP session over ``fds`` (stdin, stdout) until its client
        closes it. ``reply`` says yes, or no and why, before anything of them is read; after a
        yes the command must confirm (``confirmed``): one that gave up waiting serves the
        session itself, and two servers must never read one stdin."""
        from server.mcp_server.app import Backend, build_server, serve_descriptors, session_runner
        from server.mcp_server.relay import environment

        def answer(ok: bool, **more: object) -> None:
            reply(json.dumps({"ok": ok, **more}).encode("utf-8") + b"\n")

        with self._lock:
            self.sessions += 1
        try:
            if spec.get("env") != environment():
                answer(False, why="the daemon runs with other LIVING_MEMORY_* settings")
                return
            try:
                root, db = self._project_of(spec)
                model_dir = spec.get("modelDir")
                backend = Backend(
                    root=root,
                    db_path=db,
                    model_dir=Path(model_dir) if model_dir else None,
                    embedder=lambda: self.model(model_dir),
                )
                app = build_server(backend)
            except Exception as e:  # the command itself says it better
                answer(False, why=str(e))
                return
            runner = session_runner(app)
            if runner is None:
                answer(False, why="this MCP SDK serves only its own stdio")
                return
            answer(True, pid=os.getpid())
            if not confirmed():
                log.info("the command serves its MCP session itself")
                backend.close()
                return
            backend.learning.start()
            backend.start(bool(spec.get("ingest", True)))
            stdin, stdout = fds
            fds = []  # the session closes them
            log.info("MCP session for %s", root)
            serve_descriptors(runner, backend, stdin, stdout)
            log.info("MCP session for %s ended", root)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            with self._lock:
                self.sessions -= 1
            self.last = time.monotonic()

    @staticmethod
    def _project_of(spec: dict[str, Any]) -> tuple[Path, Path]:
        """The project and database a handed-over session is for, found as the ``mcp``
        command finds them in the caller's folder with the caller's ``LIVING_MEMORY_DB``."""
        from predictive.session import find_root

        root = find_root(spec.get("root") or str(spec["cwd"]))
        db = spec.get("db")
        return root, Path(db) if db else default_db(root)

    @staticmethod
    def _event(request: dict[str, object]) -> Event:
        return parse(
            str(request["client"]),
            str(request["event"]),
            str(request.get("input") or ""),
            cwd=request.get("cwd"),
            db=request.get("db"),
            budget=request.get("budget"),
        )

    def control(self, what: object) -> str:
        """``status``: what the daemon holds; ``stop``: leave (after learning what is queued)."""
        if what == "stop":
            self.stop.set()
            return json.dumps({"stopping": os.getpid()})
        if what == "status":
            with self.answers.lock:
                projects = sorted({root for root, _ in self.answers.sessions})
            return json.dumps(
                {
                    "pid": os.getpid(),
                    "since": self.started,
                    "idle_seconds": round(time.monotonic() - self.last, 1),
                    "leaves_after_idle_seconds": self.idle,
                    "projects": projects,
                    "mcp_sessions": self.sessions,
                }
            )
        return ""

    def request(self, raw: bytes) -> str:
        started = time.perf_counter()
        e: Event | None = None
        reply = None
        try:
            request = json.loads(raw.decode("utf-8"))
            if "control" in request:
                return self.control(request["control"])
            self.last = time.monotonic()
            e = self._event(request)
            event = e
            reply = self.answer_worker.submit(handle, event, self.answers).result(ANSWER_TIMEOUT)
            if reply.after is not None:  # recorded on the answering thread, after the answer
                self.answer_worker.submit(self._after, reply.after)
            self._opening(e)
            if reply.background is not None:
                self.learn_worker.submit(self._learn, reply.background)
            return reply.stdout
        except Exception as err:
            log.warning("event failed: %s", err, exc_info=not isinstance(err, ValueError))
            return ""
        finally:
            if e is not None:
                log.info("warm %s", describe(e, reply, (time.perf_counter() - started) * 1e3))

    def _opening(self, e: Event) -> None:
        """At a project's first event, make the short forms answers show for the memories
        that lack them (learned by an ``ingest`` run, say), once on the learning thread rather
        than at every answer."""
        try:
            where = self.answers.where(e)
        except Exception:  # the event's answer said why, in the log
            return
        if where in self.opened:
            return
        self.opened.add(where)
        self.learn_worker.submit(self._fill_levels, e)

    def _fill_levels(self, e: Event) -> None:
        try:
            with learning_lock():
                made = self.learning.of(e).fill_levels()
            if made:
                log.info("short forms made for %d memories of %s", made, e.folder)
        except Exception:
            log.warning("making the short forms failed", exc_info=True)

    @staticmethod
    def _after(record: Callable[[], None]) -> None:
        try:
            record()
        except Exception:
            log.warning("recording what was handed over failed", exc_info=True)

    def _learn(self, e: Event) -> None:
        try:
            with learning_lock():
                run_background(e, self.learning)
        except Exception:
            log.warning("learning %s %s failed", e.client, e.name, exc_info=True)

    def close(self) -> None:
        self.answer_worker.shutdown(wait=True)
        self.learn_worker.shutdown(wait=True)
        self.answers.close()
        self.learning.close()


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        first, fds, _, _ = socket.recv_fds(self.request, 65536, 2)
        if fds:
            self._mcp(first, fds)
            return
        raw = first + self.rfile.read(MAX_REQUEST - len(first)) if first else b""
        out = self.server.daemon.request(raw)
        with contextlib.suppress(OSError):
            self.wfile.write(json.dumps({"stdout": out}).encode("utf-8"))

    def _mcp(self, first: bytes, fds: list[int]) -> None:
        def reply(line: bytes) -> None:
            self.wfile.write(line)
            self.wfile.flush()

        try:
            while not first.endswith(b"\n") and len(first) < 65536:
                more = self.request.recv(65536)
                if not more:
                    break
                first += more
            spec = json.loads(first.decode("utf-8"))["mcp"]
            if len(fds) != 2 or not isinstance(spec, dict):
                raise ValueError("an MCP hand-over brings stdin and stdout")
        except (ValueError, KeyError, OSError) as e:
            log.warning("a bad MCP hand-over: %s", e)
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(OSError):
                reply(json.dumps({"ok": False, "why": str(e)}).encode() + b"\n")
            return

        def confirmed() -> bool:
            self.request.settimeout(CONFIRM_SECONDS)
            try:
                return self.rfile.readline(16).strip() == b"go"
            except OSError:
                return False
            finally:
                self.request.settimeout(None)

        try:
            self.server.daemon.mcp(spec, fds, reply, confirmed)
        except Exception:
            log.warning("the MCP session failed", exc_info=True)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, daemon: Daemon) -> None:
        self.daemon = daemon
        super().__init__(str(path), _Handler)


def _in_use(path: Path) -> bool:
    """Whether another daemon answers on ``path`` (a leftover socket file is not one)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def serve(idle: float = IDLE_SECONDS, warm: dict[str, object] | None = None) -> int:
    """Run until ``idle`` seconds pass without an event, until asked to stop, or until
    interrupted; ``warm``: an event whose project is opened at once (else the project of the
    working folder, when it has a memory)."""
    where.file_logging()
    path = where.socket_path()
    starting = where.hooks_dir() / "daemon.starting"
    try:
        if _in_use(path):
            log.info("a hook daemon already answers on %s", path)
            return 0
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old = os.umask(0o177)  # the socket is the user's alone
        try:
            server = _Server(path, Daemon(idle))
        finally:
            os.umask(old)
    finally:
        with contextlib.suppress(FileNotFoundError):
            starting.unlink()
    log.info("hook daemon on %s (pid %d, leaves after %.0f s idle)", path, os.getpid(), idle)

    def watch() -> None:
        while not server.daemon.stop.wait(min(5.0, idle / 4)):
            busy = server.daemon.sessions > 0
            if not busy and time.monotonic() - server.daemon.last > idle:
                log.info("idle for %.0f s", idle)
                break
        server.shutdown()

    threading.Thread(target=watch, name="lm-hook-idle", daemon=True).start()
    here = {"client": "claude", "input": "{}", "cwd": os.getcwd(), "db": os.environ.get(ENV_DB)}
    threading.Thread(
        target=server.daemon.warm,
        args=(warm or here,),
        kwargs={"known_only": warm is None},
        name="lm-hook-warm",
        daemon=True,
    ).start()
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        server.daemon.close()
        log.info("hook daemon left")
    return 0
