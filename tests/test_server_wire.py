"""Hostile bytes on the wire, on the real server process: a broken frame costs that message
only, a malformed request gets an error answer, and the next request is served."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest
from server_support import make_repo, uri

TIMEOUT = 60.0


def frame(message: dict[str, Any] | bytes) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _read(stream: IO[bytes], out: queue.Queue[dict[str, Any] | None]) -> None:
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                out.put(None)
                return
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        out.put(json.loads(stream.read(length)))


class Wire:
    """A server process and the messages it sends, read by a thread."""

    def __init__(self, tmp_path: Path, *, process_id: int | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
        env["LIVING_MEMORY_EMBEDDER"] = "hashing"
        env["LIVING_MEMORY_DATA_DIR"] = str(tmp_path / "data")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=_read, args=(self.proc.stdout, self.messages), daemon=True).start()
        folder = self.folder = make_repo(tmp_path / "ws", files={"a.py": "A = 1\n"})
        self.send(
            frame(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "processId": os.getpid() if process_id is None else process_id,
                        "capabilities": {},
                        "workspaceFolders": [{"uri": uri(folder), "name": "ws"}],
                    },
                }
            )
        )
        assert "result" in self.response(1)
        self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def send(self, data: bytes) -> None:
        """Write raw bytes (what the server said before is dropped: each test reads its own)."""
        while not self.messages.empty():
            self.messages.get_nowait()
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def response(self, msg_id: Any) -> dict[str, Any]:
        """The answer to request ``msg_id`` (fails after TIMEOUT seconds: the stream stalled)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                m = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer to request {msg_id!r}") from None
            assert m is not None, "the server closed the stream"
            if "method" not in m and m.get("id") == msg_id:
                return m

    def command(self, msg_id: int, command: str, *arguments: Any) -> dict[str, Any]:
        """Run ``workspace/executeCommand`` and return the answer."""
        params = {"command": command, "arguments": list(arguments)}
        message = {"jsonrpc": "2.0", "id": msg_id, "method": "workspace/executeCommand"}
        self.send(frame({**message, "params": params}))
        return self.response(msg_id)

    def stats(self, msg_id: int) -> dict[str, Any]:
        """A well-formed request's answer: the stream still works."""
        return self.command(msg_id, "livingMemory.stats")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One server for the module: every test ends by proving that the stream still works."""
    w = Wire(tmp_path_factory.mktemp("wire"))
    yield w
    w.close()


BODY = b'{"jsonrpc": "2.0", "id": 50, "method": "workspace/executeCommand", "params": {}}'

BROKEN_FRAMES = {
    "missing": b"Content-Type: application/json\r\n\r\n" + BODY,
    "short": b"Content-Length: 20\r\n\r\n" + BODY,
    "negative": b"Content-Length: -5\r\n\r\n" + BODY,
    "non-numeric": b"Content-Length: twelve\r\n\r\n" + BODY,
    "huge": b"Content-Length: 99999999999999\r\n\r\n" + BODY,
    "garbage-line": b"this is not a header at all\r\n",
}


@pytest.mark.parametrize("case", list(BROKEN_FRAMES))
def test_a_broken_frame_does_not_stall_the_stream(wire: Wire, case: str) -> None:
    wire.send(BROKEN_FRAMES[case])
    assert wire.stats(7)["result"]["memories"] >= 0
    assert wire.stats(8)["result"]["memories"] >= 0
    assert wire.proc.poll() is None


@pytest.mark.parametrize(
    "params",
    [None, [], {}, {"arguments": []}, {"command": 5}, {"command": None, "arguments": None}],
    ids=["null", "list", "empty", "no-command", "number", "nulls"],
)
def test_execute_command_with_bad_params_is_answered(wire: Wire, params: Any) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 9, "method": "workspace/executeCommand"}
    message["params"] = params
    wire.send(frame(message))
    error = wire.response(9)["error"]
    assert error["code"] == -32602  # InvalidParams
    assert wire.stats(10)["result"]["memories"] >= 0


def test_a_missing_params_member_is_answered(wire: Wire) -> None:
    wire.send(frame({"jsonrpc": "2.0", "id": 11, "method": "workspace/executeCommand"}))
    assert wire.response(11)["error"]["code"] == -32602
    assert wire.stats(12)["result"]["memories"] >= 0


def test_lone_surrogates_are_not_an_internal_error(wire: Wire) -> None:
    body = (
        b'{"jsonrpc": "2.0", "id": 13, "method": "workspace/executeCommand", "params": '
        b'{"command": "livingMemory.remember", "arguments": [{"text": "bad \\ud800 half"}]}}'
    )
    wire.send(frame(body))
    answer = wire.response(13)
    assert "result" in answer or answer["error"]["code"] != -32603, answer
    assert wire.stats(14)["result"]["memories"] >= 0


def test_an_object_as_id_is_an_invalid_request(wire: Wire) -> None:
    body = b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}'
    wire.send(frame(body))
    answer = wire.response(None)
    assert answer["error"]["code"] == -32600  # InvalidRequest
    assert wire.stats(15)["result"]["memories"] >= 0


def test_a_frame_that_is_not_json_is_a_parse_error(wire: Wire) -> None:
    wire.send(frame(b"{not json"))
    assert wire.response(None)["error"]["code"] == -32700
    assert wire.stats(16)["result"]["memories"] >= 0


def test_a_huge_branch_name_does_not_stop_the_server(wire: Wire) -> None:
    params = {"branch": "b" * 10_000_000, "previous": "main"}
    wire.send(frame({"jsonrpc": "2.0", "method": "livingMemory/branchChanged", "params": params}))
    args = {"uri": uri(wire.folder / "a.py"), "budget": 200}
    answer = wire.command(17, "livingMemory.assembleContext", args)
    assert answer["result"]["tokens"]["total"] <= 200
    assert answer["result"]["branch"] == "b" * 1024
    assert wire.stats(18)["result"]["memories"] >= 0


def test_a_huge_tag_is_remembered_and_answered(wire: Wire) -> None:
    args = [{"text": "Retry payments with backoff", "tags": ["t" * 10_000_000]}]
    cmd = {"command": "livingMemory.remember", "arguments": args}
    wire.send(frame({"jsonrpc": "2.0", "id": 19, "method": "workspace/executeCommand",
                     "params": cmd}))  # fmt: skip
    assert wire.response(19)["result"]["id"] >= 1
    cmd = {
        "command": "livingMemory.assembleContext",
        "arguments": [{"uri": uri(wire.folder / "a.py")}],
    }
    wire.send(frame({"jsonrpc": "2.0", "id": 20, "method": "workspace/executeCommand",
                     "params": cmd}))  # fmt: skip
    assert "result" in wire.response(20)


def test_the_server_exits_when_its_client_process_dies(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    w = Wire(tmp_path, process_id=parent.pid)
    try:
        assert w.stats(2)["result"]["memories"] == 0
        parent.kill()
        parent.wait(10)
        w.proc.wait(timeout=30)  # stdin is still open: only the watch can end it
        assert w.proc.returncode is not None
    finally:
        w.close()
