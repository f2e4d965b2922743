"""The language server through a real LSP client (pygls): start-up, didOpen → contextUpdated
latency, tab switches, rapid tab switching, resident memory — at 10k and 100k memories.

Uses the stores ``bench.bench_store`` caches under ``bench/.cache/``: ``bench_context``'s copy
with its disclosure levels filled when there is one (else the server spends minutes filling
them before the first measured open), else the real model's, else a proxy store (hashing
vectors under the real model's identity, searched with the real model — honest timings,
meaningless vector recall). Each is copied to a temporary project first; the
cache is never modified. The server runs as ``python -m server serve`` with the real model and
default settings (debounce 100 ms, leading edge: a single open is not delayed).

    .venv/bin/python -m bench.bench_server [--sizes 10000,100000] [--opens 100]

"Warm" means: the server has started, opened the store, loaded the model and the vector index
and served 20 opens; each measured open carries new text, so the engine's result cache cannot
answer it. Latency is measured in the client, from sending ``didOpen`` to receiving
``livingMemory/contextUpdated`` for that document; ``server_ms`` is the engine's own time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from bench.common import (
    CACHE_DIR,
    log,
    machine,
    machine_line,
    mb,
    summarize_ms,
    table,
    write_result,
)
from server.app import converter
from storage.paths import project_key

WARMUP_OPENS = 20
SWITCHES = 50
SWITCH_WINDOW_S = 1.0
QUIET_S = 1.5


def source_store(size: int) -> tuple[Path, str] | None:
    prepared = CACHE_DIR / f"context-n{size}"
    if (prepared / "ready").exists():  # bench_context's copy, its levels filled
        made_from = (prepared / "ready").read_text().strip()  # the store bench_context copied
        proxy = (
            "proxy" in made_from
            if made_from != "ok"
            else not any(CACHE_DIR.glob(f"store-n{size}-s0-g1-all-MiniLM*/memories.db"))
        )
        return prepared / "memories.db", "levels filled, " + (
            "proxy (hashing vectors, real model for queries)" if proxy else "real model"
        )
    real = sorted(CACHE_DIR.glob(f"store-n{size}-s0-g1-all-MiniLM*/memories.db"))
    real = [p for p in real if not p.parent.name.endswith(".partial")]
    if real:
        return real[0], "real model"
    proxy = sorted(CACHE_DIR.glob(f"store-n{size}-s0-g1-proxy-*/memories.db"))
    if proxy:
        return proxy[0], "proxy (hashing vectors, real model for queries)"
    return None


def copy_store(src: Path, root: Path, data: Path) -> Path:
    """The cached store as the server's database for ``root`` (files renamed to match)."""
    dst = data / "projects" / project_key(root)
    dst.mkdir(parents=True)
    for f in src.parent.iterdir():
        if f.name.startswith("memories.") and not f.name.endswith(".lock"):
            if f.name.endswith(("-wal", "-shm")) and f.stat().st_size == 0:
                continue
            copied = dst / f.name.replace("memories.", "memory.", 1)
            shutil.copy2(f, copied)
            with copied.open("rb+") as written:  # on disk, as a store in use has long been:
                os.fsync(written.fileno())  # else the server's first checkpoint flushes it all
    return dst / "memory.db"


def files_of(db: Path, n: int = 400) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [
            r[0]
            for r in con.execute(
                "SELECT value FROM anchors WHERE type = 'file' GROUP BY value "
                "ORDER BY count(*) DESC LIMIT ?",
                (n,),
            )
        ]
    finally:
        con.close()


def modules_of(db: Path, n: int = 200) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [
            r[0]
            for r in con.execute(
                "SELECT value FROM anchors WHERE type = 'module' GROUP BY value "
                "ORDER BY count(*) DESC LIMIT ?",
                (n,),
            )
        ]
    finally:
        con.close()


def source_text(rel: str, modules: list[str], rng: random.Random, visit: int) -> str:
    """A plausible file for ``rel``: a few imports from the store's modules, a function."""
    imports = "\n".join(f"import {m}" for m in rng.sample(modules, min(3, len(modules))))
    stem = Path(rel).stem.replace("-", "_") or "module"
    if rel.endswith((".ts", ".tsx", ".js")):
        imports = "\n".join(
            f"import {{ x{i} }} from './{m.split('.')[-1]}';" for i, m in enumerate(modules[:3])
        )
        return f"{imports}\n\nexport function {stem}(): number {{\n  return {visit};\n}}\n"
    return f"{imports}\n\n\ndef {stem}():\n    return {visit}  # visit {visit}\n"


class Client:
    """A pygls client that records contextUpdated notifications as they arrive."""

    def __init__(self) -> None:
        self.lsp = LanguageClient("bench-server", "1", converter_factory=converter)
        self.updates: list[tuple[float, dict[str, Any]]] = []
        self.waiters: dict[str, asyncio.Future[tuple[float, dict[str, Any]]]] = {}

        @self.lsp.feature("livingMemory/contextUpdated")
        def updated(params: dict[str, Any]) -> None:
            item = (time.perf_counter(), params)
            self.updates.append(item)
            fut = self.waiters.pop(params["uri"], None)
            if fut is not None and not fut.done():
                fut.set_result(item)

        self.progress: dict[Any, list[dict[str, Any]]] = {}

        @self.lsp.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress_create(params: Any) -> None:
            self.progress.setdefault(params.token, [])

        @self.lsp.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            value = params.value if isinstance(params.value, dict) else {}
            self.progress.setdefault(params.token, []).append({**value, "at": time.perf_counter()})

        @self.lsp.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: Any) -> None:
            return None

    def expect(self, uri: str) -> asyncio.Future[tuple[float, dict[str, Any]]]:
        fut: asyncio.Future[tuple[float, dict[str, Any]]] = (
            asyncio.get_running_loop().create_future()
        )
        self.waiters[uri] = fut
        return fut

    def running(self) -> list[str]:
        """Titles of the background jobs that have begun and not ended."""
        out = []
        for reports in self.progress.values():
            if reports and reports[0].get("kind") == "begin" and reports[-1].get("kind") != "end":
                last = reports[-1].get("message") or ""
                out.append(f"{reports[0].get('title')} {last}".strip())
        return out

    async def settle(self, limit_s: float) -> float:
        """Wait until no background job runs (embedding, summarising); return the time."""
        t0 = time.perf_counter()
        await asyncio.sleep(0.5)
        shown = 0.0
        while (jobs := self.running()) and time.perf_counter() - t0 < limit_s:
            if time.perf_counter() - shown > 30:
                shown = time.perf_counter()
                log(f"waiting for {'; '.join(jobs)}")
            await asyncio.sleep(0.5)
        return time.perf_counter() - t0

    async def command(self, name: str, args: dict[str, Any] | None = None) -> Any:
        return await self.lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command=f"livingMemory.{name}", arguments=[args or {}])
        )


async def drain(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and (line := await stream.readline()):
        sys.stderr.buffer.write(line)


def rss_of(pid: int) -> tuple[int | None, int | None]:
    """Current and peak resident memory of a process (Linux /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None, None
    values = {}
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) * 1024
    return values.get("VmRSS"), values.get("VmHWM")


async def run_size(size: int, opens: int, seed: int) -> dict[str, Any]:
    found = source_store(size)
    if found is None:
        return {"size": size, "missing": True}
    src, kind = found
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix=f"lm-bench-server-{size}-"))
    try:
        root = tmp / "project"
        (root / ".git").mkdir(parents=True)
        (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        t0 = time.perf_counter()
        db = copy_store(src, root, tmp / "data")
        log(f"{size}: copied {kind} store in {time.perf_counter() - t0:.1f}s")
        files, modules = files_of(db), modules_of(db)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
        client = Client()
        t_spawn = time.perf_counter()
        await client.lsp.start_io(sys.executable, "-m", "server", "serve", env=env)
        server = client.lsp._server
        assert server is not None
        stderr_task = asyncio.create_task(drain(server.stderr))
        t_req = time.perf_counter()
        await client.lsp.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    window=types.WindowClientCapabilities(work_done_progress=True)
                ),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(root)) or "", name="project")
                ],
                initialization_options={"dataDirectory": str(tmp / "data")},
            )
        )
        t_init = time.perf_counter()
        client.lsp.initialized(types.InitializedParams())
        stats = await client.command("stats")  # waits until the store is open
        t_open = time.perf_counter()
        log(
            f"{size}: initialize {1e3 * (t_init - t_req):.0f} ms after the request "
            f"({1e3 * (t_init - t_spawn):.0f} ms after spawn); store open "
            f"{1e3 * (t_open - t_init):.0f} ms later; {stats['memories']} memories"
        )

        visit = 0

        async def open_file(rel: str) -> tuple[float, float]:
            nonlocal visit
            visit += 1
            uri = from_fs_path(str(root / rel)) or ""
            fut = client.expect(uri)
            t = time.perf_counter()
            client.lsp.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=uri,
                        language_id="python" if rel.endswith(".py") else "typescript",
                        version=visit,
                        text=source_text(rel, modules, rng, visit),
                    )
                )
            )
            got_at, params = await asyncio.wait_for(fut, 60)
            return got_at - t, float(params["elapsedMs"])

        rss_open, _ = rss_of(server.pid)
        prepare_s = await client.settle(limit_s=3600)
        log(f"{size}: background preparation (embedding, summaries) took {prepare_s:.1f}s")
        rss_prepared, _ = rss_of(server.pid)
        t_first = time.perf_counter()
        first, _ = await open_file(rng.choice(files))
        log(
            f"{size}: first open → context {1e3 * first:.0f} ms "
            f"({1e3 * (time.perf_counter() - t_first):.0f} incl. model warm-up wait)"
        )
        for _ in range(WARMUP_OPENS):
            await open_file(rng.choice(files))
            await asyncio.sleep(0.15)
        latencies, server_ms = [], []
        for _ in range(opens):
            lat, srv = await open_file(rng.choice(files))
            latencies.append(lat)
            server_ms.append(srv / 1e3)
            await asyncio.sleep(0.15)  # past the debounce window: each open stands alone
        log(f"{size}: didOpen → contextUpdated {summarize_ms(latencies)}")

        # switching back to files already open (no didOpen; the engine may answer from cache)
        opened = list(dict.fromkeys(p["uri"] for _, p in client.updates))
        switch_lat = []
        active = client.updates[-1][1]["uri"]
        for _ in range(min(50, len(opened) - 1)):
            uri = rng.choice([u for u in opened if u != active])  # a real switch
            active = uri
            fut = client.expect(uri)
            t = time.perf_counter()
            client.lsp.protocol.notify("livingMemory/activeEditorChanged", {"uri": uri})
            got_at, _ = await asyncio.wait_for(fut, 30)
            switch_lat.append(got_at - t)
            await asyncio.sleep(0.15)

        # a cheap command measures what waits in the store's queue (nothing, if no backlog)
        probe = {"id": 1, "level": "index"}
        t_cmd = time.perf_counter()
        await client.command("recall", probe)
        probe_idle = time.perf_counter() - t_cmd
        rss_before_switching, _ = rss_of(server.pid)

        # rapid tab switching: 50 switches within a second
        names = rng.sample(files, min(SWITCHES, len(files)))
        targets = [
            from_fs_path(str(root / f"switch/{i}/{rel}")) or "" for i, rel in enumerate(names)
        ]
        for i, uri in enumerate(targets):  # open them all first (one didOpen each)
            client.lsp.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=uri, language_id="python", version=10_000 + i, text=f"X = {i}\n"
                    )
                )
            )
        await asyncio.sleep(QUIET_S)
        before = len(client.updates)
        last = targets[-1]
        fut = client.expect(last)
        t_start = time.perf_counter()
        for i, uri in enumerate(targets):
            client.lsp.protocol.notify("livingMemory/activeEditorChanged", {"uri": uri})
            await asyncio.sleep(
                max(0.0, t_start + (i + 1) * SWITCH_WINDOW_S / SWITCHES - time.perf_counter())
            )
        t_last_switch = time.perf_counter()
        got_at, _ = await asyncio.wait_for(fut, 60)
        await asyncio.sleep(QUIET_S)
        after = client.updates[before:]
        t_cmd = time.perf_counter()
        await client.command("recall", probe)
        cmd_after = time.perf_counter() - t_cmd
        rapid = {
            "switches": SWITCHES,
            "switching_s": round(t_last_switch - t_start, 3),
            "updates": len(after),
            "last_update_is_last_file": bool(after) and after[-1][1]["uri"] == last,
            "updates_after_last_file": sum(1 for t, _ in after if t > got_at),
            "last_switch_to_context_ms": round(1e3 * (got_at - t_last_switch), 1),
            "command_after_ms": round(1e3 * cmd_after, 1),
            "command_when_idle_ms": round(1e3 * probe_idle, 1),
        }
        log(f"{size}: rapid switching {rapid}")

        rss, peak = rss_of(server.pid)
        log(f"{size}: server RSS {mb(rss)} MB (peak {mb(peak)} MB)")
        await client.lsp.shutdown_async(None)
        client.lsp.exit(None)
        try:
            await asyncio.wait_for(server.wait(), 20)
        except asyncio.TimeoutError:
            server.kill()
        stderr_task.cancel()
        await client.lsp.stop()
        return {
            "size": size,
            "store": kind,
            "initialize_ms": round(1e3 * (t_init - t_req), 1),
            "spawn_to_initialized_ms": round(1e3 * (t_init - t_spawn), 1),
            "store_open_ms": round(1e3 * (t_open - t_init), 1),
            "background_preparation_s": round(prepare_s, 1),
            "first_open_ms": round(1e3 * first, 1),
            "did_open_to_context": summarize_ms(latencies),
            "engine_time": summarize_ms(server_ms),
            "switch_to_open_file": summarize_ms(switch_lat) if switch_lat else None,
            "rapid_switching": rapid,
            "rss_mb": mb(rss),
            "peak_rss_mb": mb(peak),
            "rss_checkpoints_mb": {
                "store_open": mb(rss_open),
                "after_background_preparation": mb(rss_prepared),
                "after_opens_and_switches": mb(rss_before_switching),
                "end": mb(rss),
            },
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def measure_initialize(repeats: int = 5) -> dict[str, Any]:
    """``initialize`` latency: sent at spawn (what clients do: includes Python and pygls
    start-up) and sent to a server that is already up (the handler itself)."""
    at_spawn, warm = [], []
    for i in range(repeats * 2):
        tmp = Path(tempfile.mkdtemp(prefix="lm-bench-init-"))
        client = Client()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
        env["LIVING_MEMORY_DATA_DIR"] = str(tmp)
        t0 = time.perf_counter()
        await client.lsp.start_io(sys.executable, "-m", "server", "serve", env=env)
        server = client.lsp._server
        assert server is not None
        stderr_task = asyncio.create_task(drain(server.stderr))
        if i % 2:
            await asyncio.sleep(3.0)
            t0 = time.perf_counter()
        await client.lsp.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(tmp)) or "", name="w")
                ],
            )
        )
        (warm if i % 2 else at_spawn).append(time.perf_counter() - t0)
        await client.lsp.shutdown_async(None)
        client.lsp.exit(None)
        try:
            await asyncio.wait_for(server.wait(), 20)
        except asyncio.TimeoutError:
            server.kill()
        stderr_task.cancel()
        await client.lsp.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"sent_at_spawn": summarize_ms(at_spawn), "server_already_up": summarize_ms(warm)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--opens", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    info = machine()
    print(machine_line(info))
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    init = asyncio.run(measure_initialize())
    log(f"initialize: {init}")
    results = []
    for size in (int(s) for s in a.sizes.split(",")):
        r = asyncio.run(run_size(size, a.opens, a.seed))
        r["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
        results.append(r)
        if r.get("missing"):
            print(
                f"{size}: no cached store; build it with python -m bench.bench_store "
                f"--sizes {size} --build-only"
            )
    rows = [
        [
            r["size"],
            r["store"],
            r["did_open_to_context"]["p50_ms"],
            r["did_open_to_context"]["p95_ms"],
            r["engine_time"]["p50_ms"],
            r["initialize_ms"],
            r["rapid_switching"]["updates"],
            r["rapid_switching"]["last_update_is_last_file"],
            r["rss_mb"],
            ", ".join(f"{x:.2f}" for x in r["load_avg_after"]),
        ]
        for r in results
        if not r.get("missing")
    ]
    if rows:
        print(
            table(
                [
                    "memories",
                    "store",
                    "open→ctx p50 ms",
                    "p95 ms",
                    "engine p50 ms",
                    "initialize ms",
                    "updates in 50 switches",
                    "ends on last file",
                    "RSS MB",
                    "load avg after",
                ],
                rows,
            )
        )
    out = write_result("server", {"initialize": init, "results": results})
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
