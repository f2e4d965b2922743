"""The MCP server's HTTP front: a bearer token, exact Host and Origin checks, and JSON-RPC
requests the SDK would drop answered with a JSON-RPC error.

The token is made on first use and kept beside the project's data (``mcp-token``, mode 0600),
so only the user who owns the memory can read it; ``mcp install`` writes it into clients that
send headers to HTTP servers. Over stdio no token is needed: the client starts the server."""

from __future__ import annotations

import hmac
import json
import os
import secrets
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

TOKEN_FILE = "mcp-token"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 4 * 1024 * 1024
"""The SDK's own limit of a request body; the guard reads no more than this to check ids."""


def token_path(db_path: Path) -> Path:
    """Where the HTTP token of the store at ``db_path`` is kept (its data directory)."""
    return db_path.parent / TOKEN_FILE


def load_or_create_token(db_path: Path) -> str:
    """The store's HTTP token, made (random, 256 bits) and written with mode 0600 on first use;
    a token file that others could read is made private again."""
    path = token_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            os.chmod(path, 0o600)
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
        path.unlink()
        return load_or_create_token(db_path)
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    return token


def local_hosts(port: int) -> list[str]:
    """The Host header values a local client sends to ``127.0.0.1:port``."""
    return [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]


def local_origins(port: int) -> list[str]:
    """The Origin values a page served from this server itself would send."""
    return [f"{scheme}://{h}" for h in local_hosts(port) for scheme in ("http", "https")]


def _valid_id(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    )


def bad_ids(body: bytes) -> bool:
    """Whether ``body`` is a JSON-RPC message (or batch) with an id that is neither a string,
    a number nor null (the SDK answers such a request with 202 and nothing)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False  # the SDK answers a parse error itself
    messages = data if isinstance(data, list) else [data]
    return any(isinstance(m, dict) and "id" in m and not _valid_id(m["id"]) for m in messages)


class Guard:
    """ASGI wrapper: refuses a request without the token (401), with a foreign Host (421) or
    Origin (403), or with an id JSON-RPC does not allow (400 and a JSON-RPC error)."""

    def __init__(self, app: ASGIApp, port: int, token: str | None) -> None:
        self.app = app
        self.token = token
        self.hosts = {h.lower() for h in local_hosts(port)}
        self.origins = {o.lower() for o in local_origins(port)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            await _plain(send, 421, "Invalid Host header: this server answers on 127.0.0.1 only")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            await _plain(send, 403, "Invalid Origin header: not this server's own")
            return
        if self.token is not None and not _bearer_matches(headers, self.token):
            await _plain(
                send,
                401,
                "Missing or wrong bearer token: send 'Authorization: Bearer <token>' "
                "(the token is in the mcp-token file beside the project's memory; "
                "'living-memory mcp install --http PORT' writes it into a client's configuration)",
                extra=[(b"www-authenticate", b'Bearer realm="living-memory"')],
            )
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, more, replay = await _read_body(receive)
        if not more and bad_ids(body):
            await _json(
                send,
                400,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32600,
                        "message": "Invalid Request: a request's id must be a string, "
                        "a number or null",
                    },
                },
            )
            return
        await self.app(scope, replay, send)


def _bearer_matches(headers: dict[str, str], token: str) -> bool:
    scheme, _, given = headers.get("authorization", "").strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


async def _read_body(receive: Receive) -> tuple[bytes, bool, Receive]:
    """The request body (up to MAX_BODY; the flag says more was left) and a ``receive`` that
    gives the application the same messages again."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body", False) or size > MAX_BODY:
            break
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
    more = bool(messages and messages[-1].get("more_body", False))

    async def replay() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return body, more, replay


async def _plain(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *(extra or [])]
    await _respond(send, status, headers, body)


async def _json(send: Send, status: int, payload: dict[str, Any]) -> None:
    await _respond(
        send, status, [(b"content-type", b"application/json")], json.dumps(payload).encode()
    )


async def _respond(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
