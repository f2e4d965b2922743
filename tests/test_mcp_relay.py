"""``living-memory mcp`` handing its session to the warm hook daemon: the official SDK client
gets the same answers whoever serves them, a daemon with other settings declines and the
command serves the session itself, and a session ends when its client leaves."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp_support import INITIALIZE, call, db_of, mcp_session, server_env
from project_fixtures import make_git_repo

from storage import Anchor, AnchorType, Kind, MemoryStore, NewMemory
from storage.embeddings import HashingEmbedder

DECISION = "Payment retries use exponential backoff capped at 30 seconds"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_git_repo(tmp_path).root
    with MemoryStore(db_of(root, tmp_path / "data"), embedder=HashingEmbedder()) as store:
        store.add(
            NewMemory(
                DECISION,
                kind=Kind.DECISION,
                anchors=[Anchor(AnchorType.FILE, "src/api.py")],
                importance=0.9,
            )
        )
    return root


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def hooks_log(data: Path) -> str:
    path = data / "hooks" / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def status(data: Path) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(str(data / "hooks" / "daemon.sock"))
        s.sendall(b'{"control": "status"}\n')
        s.shutdown(socket.SHUT_WR)
        reply = b"".join(iter(lambda: s.recv(65536), b""))
    return json.loads(json.loads(reply)["stdout"])


def until(check: object, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@contextmanager
def daemon(project: Path, data: Path, **extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """The warm hook daemon, started by hand in ``project`` and warm."""
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "server", "hook", "serve", "--idle", "120"],
        env=server_env(data, **extra),
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert until(lambda: "warm after" in hooks_log(data)), hooks_log(data)
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)


async def answers(project: Path, data: Path, **extra: str) -> tuple[list[str], list[dict]]:
    """The tools listed and the items a search finds (a ``learning`` note beside them depends
    on how far the session's preparation got by then)."""
    env = server_env(data, **extra)
    async with mcp_session(project, data, env=env) as s:
        tools = sorted(t.name for t in (await s.list_tools()).tools)
        found = await call(s, "search", query="payment retries backoff")
    return tools, found["items"]


@pytest.mark.asyncio
async def test_a_session_handed_to_the_daemon_answers_as_the_command_does(
    project: Path, data: Path
) -> None:
    alone = await answers(project, data, LIVING_MEMORY_HOOK_DAEMON="0")
    with daemon(project, data):
        handed = await answers(project, data)
        assert "MCP session for" in hooks_log(data)
    assert handed == alone
    assert handed[1][0]["label"].startswith("Payment retries use exponential")


@pytest.mark.asyncio
async def test_a_session_ends_when_its_client_leaves(project: Path, data: Path) -> None:
    with daemon(project, data):
        async with mcp_session(project, data) as s:
            await call(s, "search", query="payment retries")
            assert status(data)["mcp_sessions"] == 1
        assert until(lambda: status(data)["mcp_sessions"] == 0, 30)
        assert f"MCP session for {project} ended" in hooks_log(data)


@pytest.mark.asyncio
async def test_a_daemon_with_other_settings_leaves_the_session_to_the_command(
    project: Path, data: Path
) -> None:
    with daemon(project, data, LIVING_MEMORY_EMBED_THREADS="1"):
        tools, found = await answers(project, data)
        assert "MCP session for" not in hooks_log(data)
    assert "search" in tools
    assert found[0]["label"].startswith("Payment retries use exponential")


def test_a_bad_root_is_refused_by_the_command_not_the_daemon(project: Path, data: Path) -> None:
    with daemon(project, data):
        done = subprocess.run(
            [sys.executable, "-m", "server", "mcp", "--root", str(project / "missing")],
            env=server_env(data),
            cwd=project,
            input=b"",
            capture_output=True,
            timeout=60,
        )
        assert status(data)["mcp_sessions"] == 0
    assert done.returncode != 0
    assert b"--root" in done.stderr and b"is not a folder" in done.stderr


def test_the_command_leaves_when_the_daemon_dies_mid_session(project: Path, data: Path) -> None:
    with daemon(project, data) as served_by:
        mcp = subprocess.Popen(
            [sys.executable, "-m", "server", "mcp", "--no-ingest"],
            env=server_env(data),
            cwd=project,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert mcp.stdin is not None and mcp.stdout is not None
            mcp.stdin.write(INITIALIZE + b"\n")
            mcp.stdin.flush()
            answer = json.loads(mcp.stdout.readline())
            assert answer["id"] == 1 and "serverInfo" in answer["result"]
            assert status(data)["mcp_sessions"] == 1  # the daemon answered it
            served_by.kill()
            assert mcp.wait(30) == 0  # no agent waits on a server that is gone
            assert mcp.stdout.read() == b""
        finally:
            if mcp.poll() is None:
                mcp.kill()
                mcp.wait()


def test_a_hand_over_not_confirmed_leaves_stdin_unread(project: Path, data: Path) -> None:
    from server.mcp_server.relay import environment

    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    env = server_env(data)
    request = {"mcp": {"root": str(project), "cwd": str(project), "db": None, "ingest": False}}
    with daemon(project, data):
        with pytest.MonkeyPatch.context() as mp:
            for k in [k for k in os.environ if k.startswith("LIVING_MEMORY_")]:
                mp.delenv(k)
            for k, v in env.items():
                if k.startswith("LIVING_MEMORY_"):
                    mp.setenv(k, v)
            request["mcp"]["env"] = environment()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(data / "hooks" / "daemon.sock"))
            socket.send_fds(s, [json.dumps(request).encode() + b"\n"], [stdin_r, stdout_w])
            assert json.loads(s.makefile("rb").readline())["ok"] is True
        # the command gave up waiting (it closed the connection without its go)
        assert until(lambda: "serves its MCP session itself" in hooks_log(data), 30)
        assert status(data)["mcp_sessions"] == 0
        os.write(stdin_w, b"mine\n")
        os.set_blocking(stdin_r, False)
        assert os.read(stdin_r, 64) == b"mine\n"  # nothing of it was read by the daemon
    for fd in (stdin_r, stdin_w, stdout_r, stdout_w):
        os.close(fd)
