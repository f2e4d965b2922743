"""Helpers for the MCP server's end-to-end tests: the real ``living-memory mcp`` process
driven by the official SDK client over stdio, on a project's own store."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from predictive.tokens import count_tokens
from storage.paths import project_key

ROOT = Path(__file__).resolve().parents[1]

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
).encode()
"""A client's first request, as raw bytes (for what the SDK client would not send)."""


def server_env(data: Path, **extra: str) -> dict[str, str]:
    """The server's environment: its data folder, the hashing embedder, this checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
    env.update(
        LIVING_MEMORY_EMBEDDER="hashing",
        LIVING_MEMORY_DATA_DIR=str(data),
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def db_of(root: Path, data: Path) -> Path:
    """Where the CLI, the language server and the MCP server keep ``root``'s memory."""
    return data / "projects" / project_key(root) / "memory.db"


@asynccontextmanager
async def mcp_session(
    root: Path, data: Path, *args: str, ingest: bool = False, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised SDK client session with ``living-memory mcp`` run in ``root`` (``env``:
    the process's environment, default :func:`server_env`)."""
    extra = [] if ingest else ["--no-ingest"]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "mcp", *extra, *args],
        env=env or server_env(data),
        cwd=str(root),
    )
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "mcp-stderr.log", "a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A successful tool call's JSON result (fails the test on a tool error)."""
    res = await session.call_tool(tool, arguments)
    text = res.content[0].text  # type: ignore[union-attr]
    assert not res.is_error, f"{tool}: {text}"
    out = json.loads(text)
    assert out == res.structured_content
    return out


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The message of a tool call that must fail."""
    res = await session.call_tool(tool, arguments)
    assert res.is_error, f"{tool} should have failed: {res.content}"
    return res.content[0].text  # type: ignore[union-attr]


async def tokens_of_call(session: ClientSession, tool: str, **arguments: Any) -> int:
    """Tokens of the text an agent reads from a tool call."""
    res = await session.call_tool(tool, arguments)
    assert not res.is_error, res.content
    return count_tokens(res.content[0].text)  # type: ignore[union-attr]
