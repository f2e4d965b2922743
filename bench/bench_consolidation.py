"""Consolidation at scale: time and changes at 10k and 100k memories.

    python -m bench.bench_consolidation [--sizes 10000,100000] [--repeats 3] [--embedder hashing]

Each size starts from the cached generated store of ``bench.bench_store`` (``generate(n)``:
nine kinds, file/module/symbol/error/branch anchors, a year of creation times), copied, and
made to look lived in (seeded, the same every run): 1 % of the memories get a near copy (the
same text with other punctuation and case), 1 % become short release-bot episodes in series
("release: 1.4.2"), 0.5 % are superseded 120 days ago, and a year of editor use is logged —
4 contexts a day, each serving ~12 memories anchored to the opened file — with some
citations and ignores. Consolidation then runs at "now" = the newest memory + 1 day:

- ``plan``: a dry run (computes every change, writes nothing);
- ``apply``: a real run on a fresh copy (plan + every write);
- ``again``: a second real run right after (what a steady idle schedule costs).

Medians and p95 over ``--repeats`` runs (each on its own copy); counts of changes by action.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import (
    build_store,
    log,
    machine_line,
    make_embedder,
    mb,
    peak_rss_bytes,
    summarize_ms,
    write_result,
)

DAY = 86_400.0


def live_in(db: Path, embedder: Any, seed: int) -> float:
    """Add duplicates, release series, supersessions and a year of use; return "now"."""
    from storage import MemoryStore, NewMemory
    from storage.models import Kind

    rng = random.Random(f"consolidation/{seed}")
    store = MemoryStore(db, embedder=embedder)
    conn = store.conn
    rows = conn.execute("SELECT id, kind, text, created_at FROM memories ORDER BY id").fetchall()
    n = len(rows)
    now = max(r[3] for r in rows) + DAY
    dupes = [
        NewMemory(
            text=r[2].upper().replace(".", "!"),
            kind=Kind(r[1]),
            source="bench",
            source_id=f"dup-{r[0]}",
            created_at=r[3] + DAY,
        )
        for r in rng.sample(rows, n // 100)
    ]
    series = [
        NewMemory(
            text=f"release: {s % 7}.{v // 10}.{v % 10}",
            kind=Kind.EPISODE,
            source="git",
            source_id=f"rel-{s}-{v}",
            created_at=now - rng.random() * 300 * DAY,
        )
        for s in range(max(1, n // 1000))
        for v in range(10)
    ]
    for i in range(0, len(dupes) + len(series), 512):
        store.add_many((dupes + series)[i : i + 512])
    ids = [r[0] for r in rows]
    for old in rng.sample(ids, n // 200):
        new = rng.choice(ids)
        if new != old:
            store.graph.supersede(old, new, at=now - 120 * DAY)
    by_file: dict[str, list[int]] = {}
    for mid, value in conn.execute("SELECT memory_id, value FROM anchors WHERE type = 'file'"):
        by_file.setdefault(value, []).append(mid)
    files = sorted(by_file)
    log_rows = []
    start = now - 365 * DAY
    for day in range(365):
        for k in range(4):
            at = start + day * DAY + k * 3600
            path = rng.choice(files)
            served = rng.sample(by_file[path], min(12, len(by_file[path])))
            log_rows += [(m, at, "retrieval", f"context {path}") for m in served]
            if rng.random() < 0.3:
                log_rows.append((served[0], at + 60, "citation", None))
            if rng.random() < 0.2:
                log_rows.append((served[-1], at + 60, "ignore", None))
    with conn:
        conn.executemany(
            "INSERT INTO access_log(memory_id, at, kind, context) VALUES (?, ?, ?, ?)", log_rows
        )
        conn.execute(
            "UPDATE memories SET last_accessed = (SELECT max(at) FROM access_log a "
            "WHERE a.memory_id = memories.id), "
            "retrieval_count = (SELECT count(*) FROM access_log a WHERE a.memory_id = memories.id "
            "AND a.kind = 'retrieval'), "
            "citation_count = (SELECT count(*) FROM access_log a WHERE a.memory_id = memories.id "
            "AND a.kind = 'citation'), "
            "ignore_count = (SELECT count(*) FROM access_log a WHERE a.memory_id = memories.id "
            "AND a.kind = 'ignore')"
        )
        conn.execute("UPDATE memories SET updated_at = min(updated_at, created_at + ?)", (DAY,))
    store.close()
    return now


def copy_store(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for p in src.iterdir():
        if p.is_file():
            shutil.copy2(p, dst / p.name)
    return dst / "memories.db"


def one_size(n: int, repeats: int, embedder: Any, seed: int) -> dict[str, Any]:
    from predictive.consolidate import run
    from server.convert import to_wire
    from storage import MemoryStore

    cached, _ = build_store(n, seed, embedder)
    work = Path(tempfile.mkdtemp(prefix=f"bench-consolidation-{n}-"))
    base = copy_store(cached, work / "base")
    log(f"{n}: making the store look lived in")
    now = live_in(base, embedder, seed)
    # levels and vectors once, so every timed run starts from the same filled store
    store = MemoryStore(base, embedder=embedder)
    from predictive.compress import backfill_levels

    backfill_levels(store)
    store.embeddings.embed_pending()
    total = store.count()
    store.close()
    times: dict[str, list[float]] = {"plan": [], "apply": [], "again": []}
    counts: dict[str, Any] = {}
    for r in range(repeats):
        db = copy_store(base.parent, work / f"run{r}")
        store = MemoryStore(db, embedder=embedder)
        t0 = time.perf_counter()
        dry = to_wire(run(store, options={"dryRun": True}, now=now))
        times["plan"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = to_wire(run(store, now=now))
        times["apply"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        again = to_wire(run(store, now=now + 3600))
        times["again"].append(time.perf_counter() - t0)
        counts = {
            "planned": dict(Counter(c["action"] for c in dry["changes"])),
            "applied": dict(Counter(c["action"] for c in out["changes"])),
            "again": dict(Counter(c["action"] for c in again["changes"])),
            "skipped": out["skipped"],
            "decayUpdated": out["decayUpdated"],
            "levelsFilled": out["levelsFilled"],
        }
        store.close()
        shutil.rmtree(work / f"run{r}", ignore_errors=True)
        log(f"{n}: run {r + 1}/{repeats}: plan {times['plan'][-1]:.1f} s, apply "
            f"{times['apply'][-1]:.1f} s, again {times['again'][-1]:.1f} s")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    return {
        "memories": total,
        "repeats": repeats,
        **{f"{k}_ms": summarize_ms(v) for k, v in times.items()},
        **counts,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--embedder", default="hashing", choices=("hashing", "real", "proxy"))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    embedder = make_embedder(a.embedder)
    report: dict[str, Any] = {"embedder": a.embedder, "sizes": {}}
    for n in [int(x) for x in a.sizes.split(",")]:
        res = one_size(n, a.repeats, embedder, a.seed)
        report["sizes"][str(n)] = res
        print(
            f"{n:>7}: plan {res['plan_ms']['p50_ms']:.0f} ms, apply "
            f"{res['apply_ms']['p50_ms']:.0f} ms (p95 {res['apply_ms']['p95_ms']:.0f}), again "
            f"{res['again_ms']['p50_ms']:.0f} ms; changes {res['applied']}"
        )
    report["peak_rss_mb"] = mb(peak_rss_bytes())
    print(machine_line())
    print(f"wrote {write_result(f'consolidation-{a.embedder}', report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
