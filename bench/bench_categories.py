"""Categories: how many, how big, and how long a refresh takes (first, unchanged, incremental).

    python -m bench.bench_categories [--sizes 10000] [--repeat 7] [--devset-store DIR]

Runs on a copy of the dev-set store (``bench/.cache/devset-store-twat-search-hashing`` by
default; the cache is never written) and on synthetic stores of ``--sizes`` memories
(``bench.generate``, no vectors: categories do not use them). For each store: the first
refresh (derive, write members, summarise every category), a refresh with nothing changed,
and an incremental one after adding one memory to an existing area (each repeated; median
and p95).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import CACHE_DIR, machine_line, summarize_ms, write_result


def _sizes(store: Any) -> dict[str, Any]:
    from predictive.categories import category_tree

    rows = store.conn.execute(
        "SELECT c.origin, count(cm.memory_id) FROM categories c LEFT JOIN category_members cm "
        "ON cm.category_id = c.id GROUP BY c.id"
    ).fetchall()
    own = sorted((n for _, n in rows), reverse=True)
    per_memory = [
        n for (n,) in store.conn.execute("SELECT count(*) FROM category_members GROUP BY memory_id")
    ]
    current = store.conn.execute(
        "SELECT count(*) FROM memories WHERE archived = 0 AND superseded_by IS NULL"
    ).fetchone()[0]

    def depth(nodes: Any, d: int = 1) -> int:
        return max((max(d, depth(n.children, d + 1)) for n in nodes), default=0)

    tree = category_tree(store)
    return {
        "categories": len(rows),
        "areas": sum(1 for o, _ in rows if o == "area"),
        "tags": sum(1 for o, _ in rows if o == "tag"),
        "top_level": len(tree),
        "depth": depth(tree),
        "members_largest": own[:5],
        "members_median": statistics.median(own) if own else 0,
        "memories_current": current,
        "memories_in_a_category": len(per_memory),
        "categories_per_memory_mean": round(statistics.mean(per_memory), 2) if per_memory else 0,
        "top": [(n.name, n.total) for n in tree[:8]],
    }


def measure(db: Path, repeat: int, label: str) -> dict[str, Any]:
    from predictive.categories import refresh_categories
    from server.convert import to_wire
    from storage import Anchor, AnchorType, Kind, MemoryStore, NewMemory

    store = MemoryStore(db)
    try:
        t0 = time.perf_counter()
        first = to_wire(refresh_categories(store))
        first_s = time.perf_counter() - t0
        unchanged = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = refresh_categories(store)
            unchanged.append(time.perf_counter() - t0)
            assert r.summarised == 0, r
        # one new memory in the largest area each time
        area = store.conn.execute(
            "SELECT c.name FROM categories c JOIN category_members cm ON cm.category_id = c.id "
            "WHERE c.origin = 'area' GROUP BY c.id ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
        incremental: dict[bool, list[float]] = {True: [], False: []}
        summarised: dict[bool, list[int]] = {True: [], False: []}
        for i in range(2 * repeat if area else 0):
            full = i % 2 == 1  # after ingestion (new memories only), then consolidation
            path = f"{area[0]}bench_new_{i}.py"
            store.add(
                NewMemory(
                    text=f"Bench decision {i} {time.time()}: new module follows the area's rules.",
                    kind=Kind.DECISION,
                    anchors=[Anchor(AnchorType.FILE, path)],
                )
            )
            t0 = time.perf_counter()
            r = refresh_categories(store, full=full)
            incremental[full].append(time.perf_counter() - t0)
            summarised[full].append(r.summarised)
        out = {
            "store": label,
            "first_refresh_s": round(first_s, 3),
            "first": {k: v for k, v in first.items() if k != "largest"},
            "unchanged_ms": summarize_ms(unchanged),
            "after_ingest_ms": summarize_ms(incremental[False]) if incremental[False] else None,
            "after_ingest_summarised": summarised[False],
            "full_refresh_ms": summarize_ms(incremental[True]) if incremental[True] else None,
            "full_refresh_summarised": summarised[True],
            **_sizes(store),
        }
    finally:
        store.close()
    return out


def synthetic(n: int, directory: Path, keep: Path | None) -> Path:
    from bench.generate import generate
    from storage import MemoryStore

    db = directory / f"synthetic-{n}.db"
    kept = keep / f"synthetic-{n}.db" if keep else None
    if kept is not None and kept.exists():
        shutil.copyfile(kept, db)  # a built store is reused; the copy is what gets measured
        return db
    store = MemoryStore(db)
    try:
        mems = generate(n)
        for start in range(0, n, 2000):
            store.add_many(mems[start : start + 2000])
    finally:
        store.close()
    if kept is not None:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(db, kept)
    return db


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument(
        "--devset-store", type=Path, default=CACHE_DIR / "devset-store-twat-search-hashing"
    )
    p.add_argument("--keep", type=Path, help="keep (and reuse) the built synthetic stores here")
    a = p.parse_args(argv)
    print(machine_line())
    results: dict[str, Any] = {"repeat": a.repeat, "load_before": os.getloadavg(), "stores": []}
    with tempfile.TemporaryDirectory(prefix="lm-bench-categories-") as tmp:
        work = Path(tmp)
        if (a.devset_store / "memory.db").exists():
            copy = work / "devset"
            shutil.copytree(a.devset_store, copy, ignore=shutil.ignore_patterns("*.lock"))
            results["stores"].append(measure(copy / "memory.db", a.repeat, "devset (twat-search)"))
        else:
            print(f"no dev-set store at {a.devset_store}; build it with bench.bench_devset")
        for n in a.sizes:
            t0 = time.perf_counter()
            db = synthetic(n, work, a.keep)
            print(f"synthetic {n}: built in {time.perf_counter() - t0:.1f} s")
            results["stores"].append(measure(db, a.repeat, f"synthetic {n}"))
    for r in results["stores"]:
        print(
            f"{r['store']}: {r['memories_current']} memories → {r['categories']} categories "
            f"({r['areas']} areas, {r['tags']} tags, depth {r['depth']}), largest "
            f"{r['members_largest']}, median {r['members_median']}, "
            f"{r['categories_per_memory_mean']} per memory; first refresh "
            f"{r['first_refresh_s']} s, unchanged p50 {r['unchanged_ms']['p50_ms']} ms / p95 "
            f"{r['unchanged_ms']['p95_ms']} ms; one new memory, after ingest p50 "
            f"{(r['after_ingest_ms'] or {}).get('p50_ms')} ms / p95 "
            f"{(r['after_ingest_ms'] or {}).get('p95_ms')} ms "
            f"(summarised {r['after_ingest_summarised']}), full p50 "
            f"{(r['full_refresh_ms'] or {}).get('p50_ms')} ms / p95 "
            f"{(r['full_refresh_ms'] or {}).get('p95_ms')} ms"
        )
    results["load_after"] = os.getloadavg()
    print(f"load average before {results['load_before']}, after {results['load_after']}")
    write_result("categories", results)


if __name__ == "__main__":
    main()
