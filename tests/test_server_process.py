"""The server as a process: ``living-memory serve`` / ``python -m server serve`` over stdio,
``--tcp`` for debugging, stdout reserved for the protocol, a clean exit."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest
from server_support import make_repo, uri

ROOT = Path(__file__).resolve().parents[1]


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    assert length is not None, "a message without Content-Length"
    return json.loads(stream.read(length))


def until_response(stream: IO[bytes], msg_id: int) -> dict[str, Any]:
    while True:
        message = read_message(stream)
        assert message is not None, "the server closed the stream"
        if message.get("id") == msg_id and "method" not in message:
            return message


def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
    e["LIVING_MEMORY_EMBEDDER"] = "hashing"
    e["LIVING_MEMORY_DATA_DIR"] = str(tmp_path / "data")
    return e


def reap(proc: subprocess.Popen[bytes]) -> None:
    """The server process ended (killed if it is still running) and its pipes closed."""
    proc.kill()
    proc.wait()
    for s in (proc.stdin, proc.stdout, proc.stderr):
        if s is not None:
            s.close()


def initialize_message(folder: Path) -> dict[str, Any]:
    return {
        "id": 1,
        "method": "initialize",
        "params": {
            "processId": os.getpid(),
            "capabilities": {},
            "workspaceFolders": [{"uri": uri(folder), "name": folder.name}],
        },
    }


def session(proc: subprocess.Popen[bytes], folder: Path) -> list[dict[str, Any]]:
    """initialize → initialized → stats → shutdown → exit; every message the server sent."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(frame(initialize_message(folder)))
    proc.stdin.flush()
    init = until_response(proc.stdout, 1)
    assert init["result"]["serverInfo"]["name"] == "living-memory"
    proc.stdin.write(frame({"method": "initialized", "params": {}}))
    stats = {"command": "livingMemory.stats", "arguments": []}
    proc.stdin.write(frame({"id": 2, "method": "workspace/executeCommand", "params": stats}))
    proc.stdin.flush()
    assert until_response(proc.stdout, 2)["result"]["memories"] == 0
    proc.stdin.write(frame({"id": 3, "method": "shutdown"}))
    proc.stdin.flush()
    until_response(proc.stdout, 3)
    proc.stdin.write(frame({"method": "exit"}))
    proc.stdin.flush()
    assert proc.wait(timeout=20) == 0
    rest = []
    while (m := read_message(proc.stdout)) is not None:
        rest.append(m)
    return rest


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "server", "serve"],
        [sys.executable, "-m", "server.cli", "serve", "--stdio"],
        [sys.executable, "-m", "server.lsp", "--stdio", "--log-level", "debug"],
    ],
    ids=["python -m server serve", "the CLI's serve", "python -m server.lsp"],
)
def test_stdio_serves_and_exits_cleanly(tmp_path: Path, command: list[str]):
    folder = make_repo(tmp_path / "repo")
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        rest = session(proc, folder)
    finally:
        reap(proc)
    # everything on stdout was a framed JSON-RPC message (read_message would have failed)
    assert all(m.get("jsonrpc") == "2.0" for m in rest)


def test_tcp_for_debugging(tmp_path: Path):
    folder = make_repo(tmp_path / "repo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "serve", "--tcp", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=20)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with conn:
            conn.sendall(frame(initialize_message(folder)))
            stream = conn.makefile("rb")
            response = until_response(stream, 1)
            assert "executeCommandProvider" in response["result"]["capabilities"]
    finally:
        proc.kill()
        out = proc.communicate()[0]
    assert out == b""  # nothing but the socket carries the protocol


def test_the_command_line_still_works(tmp_path: Path):
    out = subprocess.run(
        [sys.executable, "-m", "server", "stats", "--json"],
        cwd=ROOT,
        env={**env(tmp_path), "LIVING_MEMORY_DB": str(tmp_path / "cli.db")},
        capture_output=True,
        check=True,
    )
    assert json.loads(out.stdout)["memories"] == 0


def test_a_bad_serve_option_is_a_one_line_error(tmp_path: Path):
    out = subprocess.run(
        [sys.executable, "-m", "server", "serve", "--tcp", "nonsense"],
        cwd=ROOT,
        env=env(tmp_path),
        capture_output=True,
    )
    assert out.returncode == 2 and b"HOST:PORT" in out.stderr and out.stdout == b""


PARENT = """
import subprocess, sys, time
stdin, out = int(sys.argv[1]), sys.argv[2]
with open(out, "wb") as f:
    p = subprocess.Popen(
        [sys.executable, "-m", "server", "serve"], stdin=stdin, stdout=f,
        stderr=subprocess.DEVNULL,
    )
print(p.pid, flush=True)
time.sleep(600)
"""


def test_without_a_process_id_the_server_ends_when_its_parent_is_gone(tmp_path: Path):
    from server.client_watch import alive

    folder = make_repo(tmp_path / "repo")
    out = tmp_path / "server-stdout"
    read_end, write_end = os.pipe()  # this test holds stdin open: only the parent goes away
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(read_end), str(out)],
        cwd=ROOT,
        env=env(tmp_path),
        pass_fds=(read_end,),
        stdout=subprocess.PIPE,
    )
    os.close(read_end)
    server_pid = 0
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
        init = initialize_message(folder)
        init["params"]["processId"] = None
        os.write(write_end, frame(init))
        deadline = time.monotonic() + 60
        while b"living-memory" not in out.read_bytes():
            assert time.monotonic() < deadline, "no answer to initialize"
            time.sleep(0.1)
        time.sleep(3)  # longer than a poll: the server stays while its parent lives
        assert alive(server_pid)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while alive(server_pid):
            assert time.monotonic() < deadline, "the server outlived its parent"
            time.sleep(0.2)
    finally:
        os.close(write_end)
        parent.kill()
        parent.wait()
        if server_pid and alive(server_pid):
            os.kill(server_pid, 9)


def test_a_context_served_just_before_shutdown_is_still_logged(tmp_path: Path):
    """What was served is logged once the editor is quiet, or when the server closes the
    store: a shutdown right after a context loses none of it."""
    import apsw

    folder = make_repo(tmp_path / "repo")
    (folder / "auth.py").write_text("def login():\n    return 1\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "serve"],
        cwd=ROOT,
        env=env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(frame(initialize_message(folder)))
        proc.stdin.flush()
        until_response(proc.stdout, 1)
        proc.stdin.write(frame({"method": "initialized", "params": {}}))
        remember = {
            "command": "livingMemory.remember",
            "arguments": [{"text": "Login never logs the password.", "anchors": ["file:auth.py"]}],
        }
        proc.stdin.write(frame({"id": 2, "method": "workspace/executeCommand", "params": remember}))
        proc.stdin.flush()
        mid = until_response(proc.stdout, 2)["result"]["id"]
        doc = {"uri": uri(folder / "auth.py"), "languageId": "python", "version": 1}
        doc["text"] = (folder / "auth.py").read_text()
        proc.stdin.write(frame({"method": "textDocument/didOpen", "params": {"textDocument": doc}}))
        proc.stdin.flush()
        while True:
            message = read_message(proc.stdout)
            assert message is not None, "the server closed the stream"
            if message.get("method") == "livingMemory/contextUpdated":
                assert mid in {i["memoryId"] for i in message["params"]["items"]}
                break
        proc.stdin.write(frame({"id": 3, "method": "shutdown"}))  # at once: no quiet spell
        proc.stdin.flush()
        until_response(proc.stdout, 3)
        proc.stdin.write(frame({"method": "exit"}))
        proc.stdin.flush()
        assert proc.wait(timeout=20) == 0
    finally:
        reap(proc)
    (db,) = (tmp_path / "data").rglob("memory.db")
    rows = apsw.Connection(str(db)).execute(
        "SELECT count(*) FROM access_log WHERE memory_id = ? AND kind = 'retrieval'", (mid,)
    )
    assert rows.get == 1
