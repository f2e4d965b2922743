"""An MCP session handed to the warm daemon: ``living-memory mcp`` over stdio, when the hooks'
daemon already runs, gives it its stdin and stdout (over the daemon's private Unix socket) and
waits; the daemon serves the session with the SDK, the model and the store it has loaded, so
the first answer costs a search, not an interpreter, the SDK's import and a model load.

Nothing here imports the SDK or the store (the hook client's module is the standard
library's). When no daemon answers, or it declines (another environment, an SDK it cannot
serve this way), nothing of stdin has been read and the command serves the session itself.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from server.hooks import where
from server.hooks.client import ENV_DAEMON, ENV_DB, ENV_SYNC, daemon_wanted
from server.hooks.limits import CONNECT_SECONDS

HANDSHAKE_SECONDS = 5.0  # the daemon builds the session's server before it says yes
NOT_SHARED = frozenset({ENV_DB, ENV_DAEMON, ENV_SYNC, "LIVING_MEMORY_HOOK_BUDGET"})
"""Settings from the environment that are the hooks' own or travel with the request."""


def environment() -> dict[str, str]:
    """The settings from the environment a session depends on: a daemon started with others
    does not serve it."""
    return {
        k: v
        for k, v in os.environ.items()
        if k.startswith("LIVING_MEMORY_") and k not in NOT_SHARED
    }


def hand_over(
    root: Path | None, db: Path | None, model_dir: Path | None, *, ingest: bool
) -> int | None:
    """Give stdin and stdout to the warm daemon and wait until it ends the session (the exit
    code, 0); None when no daemon took it (nothing of stdin was read). ``root`` and ``db`` as
    given on the command line (the daemon finds them as the command would, from this working
    folder and this ``LIVING_MEMORY_DB``)."""
    if not daemon_wanted() or not hasattr(socket, "send_fds"):
        return None
    path = where.socket_path()
    if not path.exists():
        return None
    request = {
        "mcp": {
            "root": None if root is None else str(root),
            "cwd": os.getcwd(),
            "db": str(db) if db is not None else os.environ.get(ENV_DB) or None,
            "modelDir": None if model_dir is None else str(model_dir),
            "ingest": ingest,
            "env": environment(),
        }
    }
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(CONNECT_SECONDS)
        s.connect(str(path))
        s.settimeout(HANDSHAKE_SECONDS)
        socket.send_fds(s, [json.dumps(request).encode("utf-8") + b"\n"], [0, 1])
        reply = _line(s)
    except OSError:
        s.close()
        return None
    try:
        answer = json.loads(reply.decode("utf-8")) if reply else {}
    except ValueError:
        answer = {}
    if not answer.get("ok"):
        s.close()
        return None
    try:  # the daemon serves only once told to: had this given up, it would serve itself
        s.sendall(b"go\n")
    except OSError:
        s.close()
        return None
    s.settimeout(None)
    with s:  # the daemon closes it when the session ends
        while s.recv(4096):
            pass
    return 0


def _line(s: socket.socket) -> bytes:
    """One line from ``s`` (the daemon's yes or no)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data
