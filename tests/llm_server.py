"""A local HTTP server speaking OpenAI's ``/v1/chat/completions``, scripted by tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | dict[str, Any] | Callable[[dict[str, Any]], Any]


@dataclass
class FakeLlm:
    """Answers each request with the next scripted reply (the last one repeats).

    A reply is the answer's text, ``{"status": 500}``, ``{"delay": seconds, "text": ...}``,
    ``{"raw": "not an envelope"}``, or a function of the request body returning one of them.
    """

    replies: list[Reply] = field(default_factory=lambda: ['{"ok": true}'])
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    usage: dict[str, int] | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                    reply = fake.replies.pop(0) if len(fake.replies) > 1 else fake.replies[0]
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    self._answer(reply(body) if callable(reply) else reply)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _answer(self, reply: Any) -> None:
                if isinstance(reply, dict) and "delay" in reply:
                    time.sleep(reply["delay"])
                    reply = reply.get("text", "{}")
                if isinstance(reply, dict) and "status" in reply:
                    self.send_response(reply["status"])
                    self.end_headers()
                    self.wfile.write(b'{"error": "scripted"}')
                    return
                if isinstance(reply, dict) and "raw" in reply:
                    payload = reply["raw"].encode()
                else:
                    envelope: dict[str, Any] = {
                        "id": "x",
                        "object": "chat.completion",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": reply}}
                        ],
                    }
                    if fake.usage is not None:
                        envelope["usage"] = fake.usage
                    payload = json.dumps(envelope).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def prompts(self) -> list[str]:
        """Every message text the server received."""
        return [m["content"] for r in self.requests for m in r["messages"]]
