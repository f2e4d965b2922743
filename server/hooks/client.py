"""The answer to one hook event, as the agent's command gets it.

It reads the event on stdin (Codex's ``notify`` passes it as the last argument), hands it to
the warm daemon over its Unix socket, and always exits 0: whatever goes wrong goes to the
hooks' log, never to the agent. Only the standard library is imported on the way, so a warm
answer costs an interpreter start and a socket round trip.

When no daemon answers, the command starts one and does not make the agent wait for a store
and a model to load: a prompt gets nothing (a late answer is worse than none), a session's
start gets its brief from this process (it needs no model), and any other event is answered
at once and handled by a detached process. With ``LIVING_MEMORY_HOOK_DAEMON=0`` (no daemon
wanted) every event is answered in this process instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from server.hooks import where
from server.hooks.limits import ANSWER_SECONDS, CONNECT_SECONDS, MAX_INPUT

if TYPE_CHECKING:
    import logging

ENV_DAEMON = "LIVING_MEMORY_HOOK_DAEMON"  # "0": never use or start the daemon
ENV_DB = "LIVING_MEMORY_DB"  # the caller's database, handed to the daemon with each event
ENV_SYNC = "LIVING_MEMORY_HOOK_SYNC"  # "1": learn turns before exiting (tests, replays)
EVENT_SECONDS = 2.0
PROMPT_EVENTS = frozenset(
    {"UserPromptSubmit", "beforeSubmitPrompt", "SessionStart", "sessionStart"}
)
START_EVENTS = frozenset({"SessionStart", "sessionStart"})  # answered cold: no model needed
QUIET_EVENTS = frozenset({"UserPromptSubmit"})  # cold: nothing to say, nothing to note
START_LOCK_SECONDS = 30.0


def daemon_wanted() -> bool:
    """Whether events go to a warm daemon (not on a system without Unix sockets)."""
    return os.environ.get(ENV_DAEMON) != "0" and hasattr(socket, "AF_UNIX")


def _log() -> logging.Logger:
    """The hooks' logger, writing to their log file (set up on first use: a warm answer that
    goes well logs nothing here, the daemon has logged it)."""
    import logging

    where.file_logging()
    return logging.getLogger("living_memory.hooks")


def _options(args: Sequence[str]) -> tuple[str, str, int | None, str | None]:
    """EVENT, --client, --budget and (for ``notify``) the JSON argument."""
    event = ""
    client = "claude"
    budget: int | None = None
    extra: str | None = None
    it = iter(args)
    for a in it:
        if a == "--client":
            client = next(it, client)
        elif a.startswith("--client="):
            client = a.split("=", 1)[1]
        elif a == "--budget":
            value = next(it, "")
            budget = int(value) if value.isdigit() and int(value) > 0 else None
        elif not event:
            event = a
        else:
            extra = a
    return event, client, budget, extra


def interpreter_command() -> list[str]:
    """How to start this installation's Python on the server package (``-P``: the agent's
    working folder, which may hold its own ``server`` package, must not shadow ours)."""
    isolate = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *isolate, "-m", "server"]


def ask_daemon(request: dict[str, object], timeout: float) -> str | None:
    """The daemon's stdout for the event (or control request); None when no daemon answers."""
    if not hasattr(socket, "AF_UNIX") or (not daemon_wanted() and "control" not in request):
        return None
    path = where.socket_path()
    if not path.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(CONNECT_SECONDS)
        try:
            s.connect(str(path))
        except OSError:
            return None
        s.settimeout(timeout)
        s.sendall(json.dumps(request).encode("utf-8") + b"\n")
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    reply = json.loads(b"".join(chunks).decode("utf-8"))
    return str(reply.get("stdout", ""))


def neutral(client: str, event: str) -> str:
    """What the client is told when nothing is said (Cursor expects a JSON object)."""
    if client != "cursor":
        return ""
    return '{"continue": true}' if event == "beforeSubmitPrompt" else "{}"


def start_daemon(warm: dict[str, object] | None = None) -> None:
    """Start the warm daemon in the background unless one is starting already; ``warm`` is
    the event that asked, whose project the daemon opens (and whose model it loads) first."""
    if not daemon_wanted():
        return
    lock = where.hooks_dir() / "daemon.starting"
    with contextlib.suppress(OSError):
        if time.time() - lock.stat().st_mtime > START_LOCK_SECONDS:
            lock.unlink()
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    import subprocess

    child = subprocess.Popen(
        [*interpreter_command(), "hook", "serve", *(["--warm"] if warm else [])],
        stdin=subprocess.PIPE if warm else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    if warm and child.stdin is not None:
        with contextlib.suppress(OSError):
            child.stdin.write(json.dumps(warm).encode("utf-8"))
        with contextlib.suppress(OSError):
            child.stdin.close()


def spawn_background(request: dict[str, object]) -> None:
    """Handle an event in a detached process (the agent does not wait for it): its turn is
    learned, and with ``request["handle"]`` the event is answered there first (its notes
    kept, its answer dropped)."""
    import subprocess

    child = subprocess.Popen(
        [*interpreter_command(), "hook", "_learn"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    assert child.stdin is not None
    child.stdin.write(json.dumps(request).encode("utf-8"))
    child.stdin.close()


def _cold(request: dict[str, object]) -> str:
    """Answer in this process; the slow part runs detached (or here with ``ENV_SYNC``)."""
    where.full_site()
    from server.hooks.handler import Sessions, describe, handle, parse, run_background

    where.file_logging()
    started = time.perf_counter()
    sessions = Sessions()
    e = reply = None
    try:
        e = parse(
            str(request["client"]),
            str(request["event"]),
            str(request["input"]),
            cwd=request.get("cwd"),  # type: ignore[arg-type]
            db=request.get("db"),  # type: ignore[arg-type]
            budget=request.get("budget"),  # type: ignore[arg-type]
        )
        reply = handle(e, sessions)
        if reply.after is not None:
            reply.after()
        if reply.background is not None:
            if os.environ.get(ENV_SYNC) == "1":
                run_background(reply.background, sessions, settle=0.0)
            else:
                spawn_background(request)
        return reply.stdout
    finally:
        sessions.close()
        _log().info("cold %s", describe(e, reply, (time.perf_counter() - started) * 1e3))


def learn(raw: bytes) -> int:
    """The detached half of an event: learn its turn (one learner at a time)."""
    where.full_site()
    from server.hooks.handler import (
        Event,
        Sessions,
        handle,
        learning_lock,
        parse,
        run_background,
    )

    request = json.loads(raw.decode("utf-8"))
    sessions = Sessions()
    try:
        e = parse(
            str(request["client"]),
            str(request["event"]),
            str(request["input"]),
            cwd=request.get("cwd"),
            db=request.get("db"),
            budget=request.get("budget"),
        )
        later: Event | None = e
        if request.get("handle"):
            reply = handle(e, sessions)
            if reply.after is not None:
                reply.after()
            later = reply.background
        if later is not None:
            with learning_lock():
                run_background(later, sessions)
    finally:
        sessions.close()
    return 0


def _no_daemon(request: dict[str, object]) -> str:
    """The answer when no daemon answers: see the module's docstring."""
    if not daemon_wanted():
        return _cold(request)
    start_daemon(request)
    client, event = str(request["client"]), str(request["event"])
    if event in START_EVENTS:
        return _cold(request)
    _log().info("no hook daemon yet: %s %s answered empty", client, event)
    if client == "cursor" or event not in QUIET_EVENTS:
        spawn_background({**request, "handle": True})
    return neutral(client, event)


def _read_stdin() -> str:
    try:
        data = sys.stdin.buffer.read(MAX_INPUT)
    except (OSError, ValueError, AttributeError):
        return ""
    return data.decode("utf-8", "replace")


def answer(args: Sequence[str], given: str | None = None) -> int:
    """``hook EVENT [--client C] [--budget N]``: answer one event; exit 0 whatever happens
    (``given``: the input, when the caller read it already)."""
    try:
        if args and args[0] == "_learn":
            where.file_logging()
            return learn(sys.stdin.buffer.read(MAX_INPUT))
        event, client, budget, extra = _options(args)
        if extra is not None and event == "notify":
            raw = extra
        else:
            raw = given if given is not None else _read_stdin()
        request: dict[str, object] = {
            "client": client,
            "event": event,
            "input": raw,
            "cwd": os.getcwd(),
            "db": os.environ.get(ENV_DB) or None,
            "budget": budget,
        }
        wait = ANSWER_SECONDS if event in PROMPT_EVENTS else EVENT_SECONDS
        try:
            out = ask_daemon(request, wait)
        except (OSError, ValueError) as e:
            _log().warning("the hook daemon did not answer %s %s: %s", client, event, e)
            out = neutral(client, event)  # a slow daemon: nothing said, not a slower answer
        if out is None:
            out = _no_daemon(request)
        if out:
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
            sys.stdout.flush()
    except BaseException as e:  # never an exception to the agent
        with contextlib.suppress(Exception):
            _log().error("hook %s failed: %s", " ".join(args)[:200], e, exc_info=not _expected(e))
    return 0


def _expected(e: BaseException) -> bool:
    """A bad event is one log line, not a stack trace."""
    where.full_site()
    from server.hooks.handler import BadEvent

    return isinstance(e, BadEvent)
