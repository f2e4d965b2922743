"""MCP tool latency: ``search``, ``recall`` and ``context_for_file`` through the official SDK
client over stdio against the real ``living-memory mcp`` process, on a store of generated
memories (bench_store's generator and cache).

    python -m bench.bench_mcp --size 10000 --embedder real --calls 200

Each call is timed at the client (request sent → result parsed): JSON-RPC over stdio, argument
validation, the store work, usage logging (a write per call), budget fitting and
serialisation included. The first call of each tool is reported separately (cold: model and
index loading, caches), then ``--calls`` warm calls give p50/p95. The store is copied first,
so the usage the calls record never touches the cached one, and its disclosure levels are
filled (as the language server or the MCP server does once per store), so the context engine
is measured in its steady state. Machine and load average are
written with the results to ``bench/results/mcp.json``, beside the same operations called
in process (no MCP, no budget fitting) on the same store, for what the MCP layer adds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import (
    BENCH_DIR,
    build_store,
    cache_tag,
    log,
    machine,
    machine_line,
    make_embedder,
    summarize_ms,
    table,
    write_result,
)

ROOT = BENCH_DIR.parent
TOOLS = ("search", "recall", "context_for_file")


def _project(tmp: Path, files: list[str]) -> Path:
    """A folder that looks like a git checkout, with the files the memories are anchored to."""
    root = tmp / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for rel in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {rel}\nimport os\n")
    return root


def _copy_store(src: Path, dst: Path) -> Path:
    """The store and its vector index with the index's sidecar (without it the first server
    started on the copy would rebuild the index: not a learned store's start)."""
    from storage.repository import default_index_path

    dst.mkdir(parents=True, exist_ok=True)
    db = dst / "memory.db"
    shutil.copy2(src, db)
    index, copy = default_index_path(src), default_index_path(db)
    for suffix in ("", ".json"):
        if index.with_name(index.name + suffix).exists():
            shutil.copy2(index.with_name(index.name + suffix), copy.with_name(copy.name + suffix))
    return db


def _inputs(db: Path, seed: int, n_queries: int, size: int) -> dict[str, Any]:
    """Queries, memory ids and anchored files to call the tools with."""
    from bench.generate import generate_queries
    from predictive.compress import backfill_levels
    from storage import MemoryStore

    with MemoryStore(db) as store:
        backfill_levels(store)  # as the language server (or the MCP server) does once
        ids = [r[0] for r in store.conn.execute("SELECT id FROM memories ORDER BY id")]
        files = [
            r[0]
            for r in store.conn.execute(
                "SELECT value FROM anchors WHERE type = 'file' GROUP BY value "
                "ORDER BY count(*) DESC, value LIMIT 40"
            )
        ]
    rng = random.Random(seed)
    return {
        "queries": [q.text for q in generate_queries(size, n_queries, seed)],
        "ids": rng.sample(ids, min(len(ids), n_queries)),
        "files": files,
    }


def _env(embedder: str, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
    env["PYTHONPATH"] = str(ROOT)
    env["LIVING_MEMORY_DATA_DIR"] = str(data)
    if embedder == "hashing":
        env["LIVING_MEMORY_EMBEDDER"] = "hashing"
    return env


async def _measure(
    db: Path, root: Path, env: dict[str, str], inputs: dict[str, Any], calls: int, budget: int
) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from predictive.tokens import count_tokens

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "--db", str(db), "mcp", "--no-ingest", "--root", str(root)],
        env=env,
        cwd=str(root),
    )
    levels = ("summary", "full", "compressed", "index")

    def args_for(tool: str, i: int) -> dict[str, Any]:
        if tool == "search":
            return {"query": inputs["queries"][i % len(inputs["queries"])], "budget": budget}
        if tool == "recall":
            ids = inputs["ids"]
            return {"id": ids[i % len(ids)], "level": levels[i % len(levels)], "budget": budget}
        files = inputs["files"]
        return {"path": files[i % len(files)], "budget": max(budget, 300)}

    out: dict[str, Any] = {}
    with open(os.devnull, "w") as errlog:
        t_start = time.perf_counter()
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out["startup_ms"] = round((time.perf_counter() - t_start) * 1e3, 1)
            for tool in TOOLS:
                t0 = time.perf_counter()
                res = await session.call_tool(tool, args_for(tool, 0))
                cold = time.perf_counter() - t0
                if res.is_error:
                    raise SystemExit(f"{tool} failed: {res.content}")
                samples: list[float] = []
                tokens: list[int] = []
                truncated = 0
                for i in range(1, calls + 1):
                    t0 = time.perf_counter()
                    res = await session.call_tool(tool, args_for(tool, i))
                    samples.append(time.perf_counter() - t0)
                    if res.is_error:
                        raise SystemExit(f"{tool} failed: {res.content}")
                    body = json.loads(res.content[0].text)  # type: ignore[union-attr]
                    truncated += bool(body.get("truncated"))
                    tokens.append(count_tokens(res.content[0].text))  # type: ignore[union-attr]
                out[tool] = {
                    "cold_ms": round(cold * 1e3, 2),
                    **summarize_ms(samples),
                    "calls": calls,
                    "max_tokens": max(tokens),
                    "budget": args_for(tool, 0)["budget"],
                    "truncated_calls": truncated,
                }
                log(f"{tool}: p50 {out[tool]['p50_ms']} ms, p95 {out[tool]['p95_ms']} ms")
    return out


async def _starts(
    db: Path, root: Path, env: dict[str, str], queries: list[str], repeats: int
) -> dict[str, Any]:
    """Fresh server processes: spawn → ``initialize`` answered, and spawn → the answer to a
    first ``search`` sent right after (what an agent does when its session begins), in wall
    time and in the server's CPU time (all its threads) at each point, which a loaded machine
    changes less."""
    import psutil
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    def server_cpu() -> float:
        """CPU seconds (user + system) of the one server process this one started."""
        (child,) = [c for c in psutil.Process().children() if "mcp" in c.cmdline()]
        t = child.cpu_times()
        return float(t.user + t.system)

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "--db", str(db), "mcp", "--no-ingest", "--root", str(root)],
        env=env,
        cwd=str(root),
    )
    initialized: list[float] = []
    answered: list[float] = []
    cpu_initialized: list[float] = []
    cpu_answered: list[float] = []
    with open(os.devnull, "w") as errlog:
        for i in range(repeats):
            t0 = time.perf_counter()
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                initialized.append(time.perf_counter() - t0)
                cpu_initialized.append(server_cpu())
                res = await session.call_tool("search", {"query": queries[i % len(queries)]})
                answered.append(time.perf_counter() - t0)
                cpu_answered.append(server_cpu())
                if res.is_error:
                    raise SystemExit(f"search failed: {res.content}")
            log(
                f"start {i + 1}: initialize {initialized[-1]:.2f}s, answer {answered[-1]:.2f}s "
                f"(server CPU {cpu_initialized[-1]:.2f}s, {cpu_answered[-1]:.2f}s)"
            )
    return {
        "initialize": summarize_ms(initialized),
        "first_answer": summarize_ms(answered),
        "initialize_cpu": summarize_ms(cpu_initialized),
        "first_answer_cpu": summarize_ms(cpu_answered),
    }


def _in_process(db: Path, root: Path, inputs: dict[str, Any], calls: int) -> dict[str, Any]:
    """The same operations called directly (no MCP, no budget fitting): the reference that
    shows what the MCP layer adds."""
    from predictive import operations as ops
    from predictive.engine import ContextEngine
    from storage import MemoryStore
    from storage.embeddings import embedder_from_env

    levels = ("summary", "full", "compressed", "index")
    out: dict[str, Any] = {}
    with MemoryStore(db, embedder_factory=lambda: embedder_from_env(None)) as store:
        engine = ContextEngine(store, root=root)
        runs = {
            "search": lambda i: ops.search(
                store, ops.SearchArgs(query=inputs["queries"][i % len(inputs["queries"])])
            ),
            "recall": lambda i: ops.recall(
                store,
                ops.RecallArgs(id=inputs["ids"][i % len(inputs["ids"])], level=levels[i % 4]),
            ),
            "context_for_file": lambda i: ops.context_for_file(
                store,
                ops.ContextArgs(path=inputs["files"][i % len(inputs["files"])], budget=1333),
                root,
                engine,
            ),
        }
        for tool, run in runs.items():
            run(0)
            samples = []
            for i in range(1, calls + 1):
                t0 = time.perf_counter()
                run(i)
                samples.append(time.perf_counter() - t0)
            out[tool] = summarize_ms(samples)
            log(f"in process {tool}: p50 {out[tool]['p50_ms']} ms, p95 {out[tool]['p95_ms']} ms")
    return out


@contextmanager
def _daemon(wanted: bool, db: Path, root: Path, env: dict[str, str]) -> Iterator[None]:
    """The warm hook daemon for ``root``'s store, started and warm (model loaded, SDK
    imported) before the starts are measured; nothing when not ``wanted``."""
    if not wanted:
        yield
        return
    data = Path(env["LIVING_MEMORY_DATA_DIR"])
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "server", "hook", "serve", "--idle", "600"],
        env={**env, "LIVING_MEMORY_DB": str(db)},
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log_file = data / "hooks" / "hooks.log"
    try:
        deadline = time.monotonic() + 120
        while "warm after" not in (log_file.read_text() if log_file.exists() else ""):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the hook daemon did not warm up")
            time.sleep(0.2)
        time.sleep(3.0)  # the SDK's import follows the warm-up
        log("hook daemon warm")
        yield
    finally:
        proc.terminate()
        proc.wait(30)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embedder", choices=["real", "hashing", "proxy"], default="real")
    ap.add_argument("--calls", type=int, default=200, help="warm calls per tool")
    ap.add_argument("--budget", type=int, default=2000, help="token budget of each call")
    ap.add_argument("--name", default="mcp", help="results file bench/results/NAME.json")
    ap.add_argument(
        "--starts", type=int, default=5, help="fresh processes for start-up and first answer"
    )
    ap.add_argument(
        "--only-starts", action="store_true", help="measure start-up only (no warm calls)"
    )
    ap.add_argument(
        "--daemon",
        action="store_true",
        help="with a warm hook daemon running, to which each start hands its session (the "
        "server CPU is then the handing process's alone)",
    )
    a = ap.parse_args(argv)

    embedder = make_embedder(a.embedder)
    cached, record = build_store(a.size, a.seed, embedder)
    load_before = machine()["load_avg"]
    with tempfile.TemporaryDirectory(prefix="lm-bench-mcp-") as tmp:
        db = _copy_store(cached / "memories.db", Path(tmp) / "store")
        inputs = _inputs(db, a.seed, max(50, a.calls), a.size)
        root = _project(Path(tmp), inputs["files"])
        env = _env(a.embedder, Path(tmp) / "data")
        with _daemon(a.daemon, db, root, env):
            starts = asyncio.run(_starts(db, root, env, inputs["queries"], a.starts))
        if a.only_starts:
            _report_starts(a, starts, load_before)
            return
        res = asyncio.run(_measure(db, root, env, inputs, a.calls, a.budget))
        if a.embedder == "hashing":
            os.environ["LIVING_MEMORY_EMBEDDER"] = "hashing"
        reference = _in_process(db, root, inputs, a.calls)
    m = machine()
    payload = {
        "size": a.size,
        "seed": a.seed,
        "embedder": a.embedder,
        "model": cache_tag(embedder),
        "calls_per_tool": a.calls,
        "budget": a.budget,
        "load_avg_before": load_before,
        "load_avg_after": m["load_avg"],
        "store_build": record,
        "results": res,
        "starts": starts,
        "in_process": reference,
    }
    path = write_result(a.name, payload)
    print(machine_line(m))
    print(f"load average before {load_before}, after {m['load_avg']}")
    print(f"server start + initialize: {res['startup_ms']} ms")
    _print_starts(starts)
    rows = [
        [
            t,
            res[t]["cold_ms"],
            res[t]["p50_ms"],
            res[t]["p95_ms"],
            reference[t]["p50_ms"],
            reference[t]["p95_ms"],
            res[t]["max_tokens"],
            res[t]["budget"],
        ]
        for t in TOOLS
    ]
    headers = ["tool", "cold ms", "p50 ms", "p95 ms", "in-process p50", "in-process p95"]
    print(table([*headers, "max tokens", "budget"], rows))
    print(f"written to {path}")


def _print_starts(starts: dict[str, Any]) -> None:
    for what in ("initialize", "first_answer"):
        st, cpu = starts[what], starts[f"{what}_cpu"]
        print(
            f"spawn → {what}: p50 {st['p50_ms']} ms, max {st['max_ms']} ms; server CPU p50 "
            f"{cpu['p50_ms']} ms, max {cpu['max_ms']} ms ({st['n']} starts)"
        )


def _report_starts(a: argparse.Namespace, starts: dict[str, Any], load_before: Any) -> None:
    m = machine()
    payload = {
        "size": a.size,
        "embedder": a.embedder,
        "daemon": a.daemon,
        "load_avg_before": load_before,
        "load_avg_after": m["load_avg"],
        "starts": starts,
    }
    path = write_result(a.name, payload)
    print(machine_line(m))
    print(f"load average before {load_before}, after {m['load_avg']}")
    _print_starts(starts)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
