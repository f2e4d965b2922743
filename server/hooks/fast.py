"""The warm answer in as little of an interpreter as it takes: the event read, sent to the
running daemon, its answer written out.

Only modules built into the interpreter are imported (``_socket``, and ``_json`` to write and
read JSON strings), so a warm answer costs an interpreter start and a socket round trip, not
the imports of :mod:`json`, :mod:`socket` and :mod:`pathlib` (together about as much CPU as the
start itself). Whatever this does not handle — no daemon wanted or none answering, Codex's
``notify``, a platform whose data directory it does not know — goes to
:mod:`server.hooks.client` with the input already read; once the event is sent, the answer is
this one's (a slow daemon means nothing said, never a second request).
"""

from __future__ import annotations

import os
import sys

from server.hooks.limits import ANSWER_SECONDS, APP_NAME, CONNECT_SECONDS, MAX_INPUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

SIMPLE_OPTIONS = frozenset({"--client", "--budget"})


def data_dir() -> str | None:
    """The data directory as :func:`server.hooks.where.data_dir` finds it, where that is
    known without ``platformdirs`` (Linux, macOS); None elsewhere. A wrong guess only costs
    the slower path: no socket is found there."""
    base = os.environ.get("LIVING_MEMORY_DATA_DIR")
    if base:
        return os.path.expanduser(base)
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~/Library/Application Support"), APP_NAME)
    if sys.platform.startswith("linux"):
        xdg = os.environ.get("XDG_DATA_HOME", "").strip()
        base = xdg if os.path.isabs(xdg) else os.path.expanduser("~/.local/share")
        return os.path.join(base, APP_NAME)
    return None


def _options(args: Sequence[str]) -> tuple[str, str, int | None] | None:
    """EVENT, --client and --budget; None for anything else (the full client reads it)."""
    event, client, budget = "", "claude", None
    i = 0
    while i < len(args):
        a = args[i]
        if a in SIMPLE_OPTIONS and i + 1 < len(args):
            value = args[i + 1]
            if a == "--client":
                client = value
            else:
                budget = int(value) if value.isdigit() and int(value) > 0 else None
            i += 2
            continue
        if a.startswith("-") or event:
            return None
        event = a
        i += 1
    return (event, client, budget) if event else None


def _string(value: str | None) -> str:
    if value is None:
        return "null"
    try:
        from _json import encode_basestring_ascii
    except ImportError:  # an interpreter without the accelerator
        import json

        return json.dumps(value)
    return str(encode_basestring_ascii(value))


def encode_request(
    client: str, event: str, raw: str, cwd: str, db: str | None, budget: int | None
) -> str:
    """The daemon's request (:mod:`server.hooks.daemon`), one line of JSON."""
    return (
        f'{{"client": {_string(client)}, "event": {_string(event)}, "input": {_string(raw)}, '
        f'"cwd": {_string(cwd)}, "db": {_string(db)}, '
        f'"budget": {"null" if budget is None else int(budget)}}}\n'
    )


def stdout_of(reply: bytes) -> str:
    """The ``stdout`` string of the daemon's reply (``{"stdout": "…"}``)."""
    text = reply.decode("utf-8")
    key = text.find('"stdout"')
    start = text.find('"', text.index(":", key + 8)) if key >= 0 else -1
    if start < 0:
        raise ValueError("the daemon's reply has no stdout")
    try:
        from _json import scanstring
    except ImportError:
        import json

        return str(json.loads(text).get("stdout", ""))
    return str(scanstring(text, start + 1, True)[0])


def answer(args: Sequence[str]) -> int:
    """``hook EVENT [--client C] [--budget N]`` through the warm daemon; anything else, or
    no daemon, through :func:`server.hooks.client.answer`. Exits 0 whatever happens."""
    parsed = _options(args)
    base = data_dir() if parsed is not None else None
    path = os.path.join(base, "hooks", "daemon.sock") if base else ""
    wanted = os.environ.get("LIVING_MEMORY_HOOK_DAEMON") != "0"
    if parsed is None or parsed[0] in ("notify", "_learn") or not wanted or not path:
        return _full(args, None)
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT).decode("utf-8", "replace")
    except (OSError, ValueError, AttributeError):
        raw = ""
    event, client, budget = parsed
    sent = False
    try:
        if not os.path.exists(path):
            return _full(args, raw)
        import _socket

        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            s.settimeout(CONNECT_SECONDS)
            try:
                s.connect(path)
            except OSError:
                return _full(args, raw)
            db = os.environ.get("LIVING_MEMORY_DB") or None
            request = encode_request(client, event, raw, os.getcwd(), db, budget)
            s.settimeout(ANSWER_SECONDS)
            sent = True
            s.sendall(request.encode("utf-8"))
            s.shutdown(_socket.SHUT_WR)
            chunks = []
            while data := s.recv(65536):
                chunks.append(data)
        finally:
            s.close()
        out = stdout_of(b"".join(chunks))
    except Exception as e:
        # once sent, a slow or failing daemon means nothing said (never a second request)
        return _late(client, event, e) if sent else _full(args, raw)
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
        sys.stdout.flush()
    return 0


def _full(args: Sequence[str], raw: str | None) -> int:
    from server.hooks.client import answer as full

    return full(args, raw)


def _late(client: str, event: str, e: Exception) -> int:
    """The daemon took the event but gave no answer in time: the neutral answer, a log line."""
    try:
        from server.hooks.client import _log, neutral

        _log().warning("the hook daemon did not answer %s %s: %s", client, event, e)
        out = neutral(client, event)
        if out:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    except Exception:  # never an exception to the agent
        pass
    return 0
