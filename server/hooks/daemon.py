"""The warm hook daemon: ``living-memory hook serve``.

It listens on a Unix socket in the hooks' folder of the data directory (private to the user),
keeps one project session per project open (store, embedder, context engine), answers each
event on one thread and learns turns on another, so a prompt's answer costs a search, not an
interpreter, a model load and a store opening. It leaves after ``idle`` seconds without an
event; the hook command falls back to answering cold while it is not running.
Protocol: one JSON request per connection (``client``, ``event``, ``input``, ``cwd``, ``db``,
``budget``), one JSON reply (``stdout``).
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from server.hooks import where
from server.hooks.handler import Event, Sessions, describe, handle, parse, run_background

log = logging.getLogger("living_memory.hooks.daemon")

IDLE_SECONDS = 1800.0
ANSWER_TIMEOUT = 10.0
MAX_REQUEST = 8_000_000


class Daemon:
    """Sessions and the two workers (answers, learning)."""

    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self.idle = idle
        self.last = time.monotonic()
        self.answers = Sessions()
        self.learning = Sessions()
        # each worker has its own thread, hence its own store connections
        self.answer_worker = ThreadPoolExecutor(1, thread_name_prefix="lm-hook-answer")
        self.learn_worker = ThreadPoolExecutor(1, thread_name_prefix="lm-hook-learn")

    def request(self, raw: bytes) -> str:
        self.last = time.monotonic()
        started = time.perf_counter()
        e: Event | None = None
        reply = None
        try:
            request = json.loads(raw.decode("utf-8"))
            e = parse(
                str(request["client"]),
                str(request["event"]),
                str(request.get("input") or ""),
                cwd=request.get("cwd"),
                db=request.get("db"),
                budget=request.get("budget"),
            )
            event = e
            reply = self.answer_worker.submit(handle, event, self.answers).result(ANSWER_TIMEOUT)
            if reply.background is not None:
                self.learn_worker.submit(self._learn, reply.background)
            return reply.stdout
        except Exception as err:
            log.warning("event failed: %s", err, exc_info=not isinstance(err, ValueError))
            return ""
        finally:
            log.info("warm %s", describe(e, reply, (time.perf_counter() - started) * 1e3))

    def _learn(self, e: Event) -> None:
        try:
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


def serve(idle: float = IDLE_SECONDS) -> int:
    """Run until ``idle`` seconds pass without an event (or until interrupted)."""
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
        while True:
            time.sleep(min(5.0, idle / 4))
            if time.monotonic() - server.daemon.last > idle:
                server.shutdown()
                return

    threading.Thread(target=watch, name="lm-hook-idle", daemon=True).start()
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
