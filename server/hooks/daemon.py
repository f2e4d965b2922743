"""The warm hook daemon: ``living-memory hook serve``.

It listens on a Unix socket in the hooks' folder of the data directory (private to the user),
keeps one project session per project open (store, embedder, context engine), answers each
event on one thread and learns turns on another, so a prompt's answer costs a search, not an
interpreter, a model load and a store opening. It leaves after ``idle`` seconds without an
event or when asked to stop (``living-memory hook serve --stop``); the hook command falls back to
answering without it while it is not running (and starts it).
Protocol: one JSON request per connection (``client``, ``event``, ``input``, ``cwd``, ``db``,
``budget``; or ``control``: ``status`` | ``stop``), one JSON reply (``stdout``).
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

from server.hooks import where
from server.hooks.client import ENV_DB
from server.hooks.handler import (
    Event,
    Sessions,
    describe,
    handle,
    learning_lock,
    parse,
    run_background,
)

log = logging.getLogger("living_memory.hooks.daemon")

IDLE_SECONDS = 1800.0
ANSWER_TIMEOUT = 10.0
MAX_REQUEST = 8_000_000
WARM_PROMPT = "warm up the project memory search"  # loads the model and the file index


class Daemon:
    """Sessions and the two workers (answers, learning)."""

    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self.idle = idle
        self.last = time.monotonic()
        self.started = time.time()
        self.stop = threading.Event()
        self.answers = Sessions()
        self.learning = Sessions()
        # each worker has its own thread, hence its own store connections
        self.answer_worker = ThreadPoolExecutor(1, thread_name_prefix="lm-hook-answer")
        self.learn_worker = ThreadPoolExecutor(1, thread_name_prefix="lm-hook-learn")
        self.opened: set[tuple[Path, Path]] = set()  # projects whose short forms are made

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
        raw = self.rfile.read(MAX_REQUEST)
        out = self.server.daemon.request(raw)
        with contextlib.suppress(OSError):
            self.wfile.write(json.dumps({"stdout": out}).encode("utf-8"))


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
            if time.monotonic() - server.daemon.last > idle:
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
