"""The optional LLM's wiring, measured against a local fake endpoint (no real model here).

    python -m bench.bench_llm_wiring

Starts an OpenAI-compatible ``/v1/chat/completions`` server in a thread whose "model" is
naive: for every message it is shown it proposes the message's first sentence as a
convention (a true quote) and one item with an invented quote. The labelled extraction sample
(``bench/data/extraction_labelled.json``) is then scored without and with it, twice (the second
pass is answered from the cache). What this shows: calls, discarded answers, cache hits and
the validator's effect — not what a real model would add to precision or recall.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.bench_extraction import evaluate, load
from bench.common import machine_line, write_result

_SHOWN = re.compile(r"\[message (\d+), (\w+)\]\n(.*?)(?=\n\n\[message |\Z)", re.S)


def _naive(prompt: str) -> str:
    items = []
    for idx, _role, text in _SHOWN.findall(prompt):
        first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0][:200]
        if len(first) >= 20:
            items.append({"kind": "convention", "text": first, "quote": first, "message": int(idx)})
            items.append(
                {
                    "kind": "decision",
                    "text": "The team standardised on an approach described here.",
                    "quote": "we standardised on this approach",
                    "message": int(idx),
                }
            )
    return json.dumps({"items": items[:8]})


class _Handler(BaseHTTPRequestHandler):
    calls = 0

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        content = _naive(body["messages"][1]["content"])
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    from predictive.llm import LlmClient
    from predictive.llm_config import LlmConfig
    from storage import MemoryStore

    print(machine_line())
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    items = load()
    out: dict[str, Any] = {"load_before": os.getloadavg(), "note": __doc__.split("\n\n")[2]}
    t0 = time.perf_counter()
    out["without"] = {k: v for k, v in evaluate(items).items() if k != "rows"}
    out["without"]["seconds"] = round(time.perf_counter() - t0, 3)
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "memory.db")
        config = LlmConfig(
            url=url,
            model="fake-naive",
            max_calls_per_run=10_000,
            max_tokens_per_run=10_000_000,
            max_tokens_per_day=10_000_000,
        )
        for name in ("with_fake", "with_fake_cached"):
            client = LlmClient(config, store=store)
            before = _Handler.calls
            t0 = time.perf_counter()
            res = {k: v for k, v in evaluate(items, client).items() if k != "rows"}
            res["seconds"] = round(time.perf_counter() - t0, 3)
            res["server_calls"] = _Handler.calls - before
            res["client"] = client.stats()
            out[name] = res
        store.close()
    server.shutdown()
    out["load_after"] = os.getloadavg()
    for name in ("without", "with_fake", "with_fake_cached"):
        r = out[name]
        extra = (
            f"; {r['server_calls']} calls, {r['client']['invalid']} items/answers discarded, "
            f"{r['client']['cached']} from cache"
            if "client" in r
            else ""
        )
        print(
            f"{name:<17} extracted {r['extracted']}, right {r['correct']} → precision "
            f"{r['precision']}, recall {r['recall']} in {r['seconds']} s{extra}"
        )
    write_result("llm-wiring", out)


if __name__ == "__main__":
    main()
