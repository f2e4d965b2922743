"""Context assembly latency and budget use at 1k / 10k / 100k memories.

Uses the stores ``bench.bench_store`` caches under ``bench/.cache/`` (build them first with
``python -m bench.bench_store --build-only``); each is copied once to a ``context-*`` folder
where the deterministic levels are backfilled, so the cached store stays untouched.

    .venv/bin/python -m bench.bench_context [--sizes 1000,10000,100000] [--requests 200]

"Warm" means the process, model, vector index and per-generation pools are loaded and the
request itself is new (no hit in the engine's result cache). Cached hits are reported apart.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from bench.common import machine, machine_line
from predictive.compress import backfill_levels
from predictive.engine import ContextEngine, ContextRequest
from predictive.signals import Diagnostic
from storage import MemoryStore
from storage.embeddings import load_embedder

CACHE = Path(__file__).parent / ".cache"


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def source_store(size: int) -> Path:
    found = sorted(CACHE.glob(f"store-n{size}-s0-g1-all-MiniLM*/memories.db"))
    # A proxy store (hashing vectors under the real model's identity) times the same work;
    # only its semantic matches are meaningless. Used when the real one is not built.
    found = found or sorted(CACHE.glob(f"store-n{size}-s0-g1-proxy-*/memories.db"))
    if not found:
        raise SystemExit(
            f"no cached store of {size}; run: python -m bench.bench_store "
            f"--sizes {size} --build-only"
        )
    return found[0]


def prepared_store(size: int) -> Path:
    """A copy of the cached store with every level backfilled (done once)."""
    src = source_store(size)
    dst_dir = CACHE / f"context-n{size}"
    dst = dst_dir / "memories.db"
    if not (dst_dir / "ready").exists():
        shutil.rmtree(dst_dir, ignore_errors=True)
        dst_dir.mkdir(parents=True)
        for f in src.parent.iterdir():
            if f.name.startswith("memories."):
                shutil.copy2(f, dst_dir / f.name)
        store = MemoryStore(dst, embedder=load_embedder())
        t0 = time.perf_counter()
        n = backfill_levels(store)
        print(
            f"  backfilled levels of {n} memories in {time.perf_counter() - t0:.1f}s",
            file=sys.stderr,
        )
        store.close()
        (dst_dir / "ready").write_text(src.parent.name)  # which store it was copied from
    return dst


def requests(store: MemoryStore, n: int, seed: int = 1) -> list[ContextRequest]:
    rng = random.Random(seed)
    files = [
        r[0]
        for r in store.conn.execute(
            "SELECT value FROM anchors WHERE type = 'file' GROUP BY value ORDER BY count(*) DESC "
            "LIMIT 400"
        )
    ]
    branches = [
        r[0]
        for r in store.conn.execute(
            "SELECT DISTINCT value FROM anchors WHERE type = 'branch' LIMIT 50"
        )
    ] or ["main"]
    errors = [
        r[0]
        for r in store.conn.execute(
            "SELECT DISTINCT value FROM anchors WHERE type = 'error' LIMIT 50"
        )
    ]
    out = []
    for i in range(n):
        f = rng.choice(files)
        diags: tuple[Diagnostic, ...] = ()
        if errors and i % 4 == 0:
            diags = (Diagnostic(f, 1, rng.choice(errors)),)
        out.append(
            ContextRequest(path=f, branch=rng.choice([*branches, "main"]), diagnostics=diags)
        )
    return out


def run(size: int, n_requests: int) -> dict:
    path = prepared_store(size)
    proxy = "proxy" in source_store(size).parent.name
    store = MemoryStore(path, embedder=load_embedder())
    store.vectors()  # load the index as the server does at start
    engine = ContextEngine(store)
    reqs = requests(store, n_requests + 20)
    for r in reqs[:20]:  # warm-up: pools, topics, tokenizer, onnx session
        engine.assemble(r, record=False)
    times, used, cached_times, record_times = [], [], [], []
    for r in reqs[20:]:
        t0 = time.perf_counter()
        res = engine.assemble(r, record=False)
        times.append((time.perf_counter() - t0) * 1e3)
        used.append(res.tokens["total"] / res.tokens["budget"])
        t0 = time.perf_counter()
        engine.assemble(r, record=False)
        cached_times.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        engine.record_retrieval(res)
        record_times.append((time.perf_counter() - t0) * 1e3)
    store._vectors = None  # never save over the prepared copy's index
    store.close()
    return {
        "size": size,
        "store": "proxy (hashing vectors)" if proxy else "real model",
        "requests": len(times),
        "assemble_ms": {"p50": statistics.median(times), "p95": p95(times), "max": max(times)},
        "cached_ms": {"p50": statistics.median(cached_times), "p95": p95(cached_times)},
        "record_retrieval_ms": {"p50": statistics.median(record_times), "p95": p95(record_times)},
        "budget_use": {
            "mean": statistics.mean(used),
            "min": min(used),
            "share_ge_90": sum(u >= 0.9 for u in used) / len(used),
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--requests", type=int, default=200)
    a = ap.parse_args(argv)
    info = machine()
    print(machine_line(info))
    results = []
    for size in (int(s) for s in a.sizes.split(",")):
        r = run(size, a.requests)
        results.append(r)
        print(
            f"{size:>7} memories: assemble p50 {r['assemble_ms']['p50']:.1f} ms, "
            f"p95 {r['assemble_ms']['p95']:.1f} ms (target ≤ 50); cached p50 "
            f"{r['cached_ms']['p50']:.2f} ms; record {r['record_retrieval_ms']['p50']:.1f} ms;"
            f" budget use mean {r['budget_use']['mean']:.1%}, "
            f"≥90 % in {r['budget_use']['share_ge_90']:.0%} of requests"
        )
    out = Path(__file__).parent / "results" / "context.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": info, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
