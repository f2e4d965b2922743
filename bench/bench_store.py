"""Store benchmark: ingest throughput, search latency, index rebuild/load, sizes, RSS, dtype.

    python -m bench.bench_store --sizes 1000,10000,100000 --embedder real

Every measurement runs in a fresh subprocess (``--worker PHASE``) so that one phase's
allocations (building a store, holding 100k generated memories) never pollute another's
timings or resident memory. Stores are built once and cached under ``bench/.cache/`` keyed by
size, seed, generator version and model; reruns reuse them.

Phases:
  ingest  add_many in batches of 256 into a fresh store, on a sample of generated memories:
          end to end (embedding included), embedding only, insert only (vectors precomputed),
          and insert without any embedder. Memories per second, median over repeats.
  search  open the cached store of one size in a new process: model load, index load from
          disk, then warm searches (hybrid RRF, keyword, vector, hybrid with a kind filter and
          with a file-anchor filter), every query's latency including its embedding; RSS after
          the searches; then full index rebuild time (store.vectors().rebuild(conn)).
  dtype   usearch f16 vs f32 (and i8 for reference) over the stored vectors: build time,
          file size, search latency, recall@10 against exact brute force.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    build_store,
    cache_tag,
    db_size,
    file_size,
    log,
    machine,
    machine_line,
    make_embedder,
    mb,
    median,
    peak_rss_bytes,
    percentile,
    proxy_tag,
    rss_bytes,
    store_dir,
    summarize_ms,
    table,
    timed,
    write_result,
)

SEARCH_MODES = ("hybrid", "keyword", "vector", "hybrid+kind", "hybrid+file", "find")


# ---- helpers used by workers ---------------------------------------------------------------


class PrecomputedEmbedder:
    """Hands back vectors computed earlier, so an insert can be timed without the model."""

    def __init__(self, model_id: str, dim: int, vectors: dict[str, Any]) -> None:
        self._model_id, self._dim, self._vectors = model_id, dim, vectors

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]):
        import numpy as np

        return np.stack([self._vectors[t] for t in texts])


def _chunks(seq: list[Any], size: int) -> list[list[Any]]:
    return [seq[i : i + size] for i in range(0, len(seq), size)]


def _queries_path(size: int, seed: int, tag: str, n_queries: int) -> Path:
    return store_dir(size, seed, tag) / f"queries-{n_queries}.json"


def _ensure_queries(size: int, seed: int, tag: str, n_queries: int) -> Path:
    from bench.generate import generate_queries

    path = _queries_path(size, seed, tag, n_queries)
    if not path.exists():
        qs = generate_queries(size, n_queries, seed)
        path.write_text(
            json.dumps([{"text": q.text, "target": q.target, "kind": q.kind.value} for q in qs])
        )
    return path


# ---- worker: ingest ------------------------------------------------------------------------


def worker_ingest(args: argparse.Namespace) -> dict[str, Any]:
    from bench.generate import generate
    from storage import MemoryStore
    from storage.redact import redact

    emb = make_embedder(args.embedder)
    # A sample that is not a prefix of the cached stores (another seed), same distribution.
    mems = generate(args.ingest_sample, seed=args.seed + 1000)
    texts = [m.text for m in mems]
    batches = _chunks(mems, args.batch)
    emb.embed(texts[:8])  # warm the session
    out: dict[str, Any] = {"sample": len(mems), "batch": args.batch, "repeats": args.ingest_repeats}
    tok = getattr(emb, "_tokenizer", None)
    if tok is not None:
        lengths = [len(e.ids) for e in tok.encode_batch(texts)]
        out["tokens_mean"] = round(sum(lengths) / len(lengths), 1)
        out["tokens_p95"] = percentile(lengths, 95)
    out["chars_mean"] = round(sum(map(len, texts)) / len(texts), 1)

    def fresh_store(embedder: Any) -> tuple[MemoryStore, tempfile.TemporaryDirectory]:
        tmp = tempfile.TemporaryDirectory(prefix="lm-bench-")
        return MemoryStore(Path(tmp.name) / "m.db", embedder=embedder), tmp

    def run_insert(embedder: Any) -> float:
        store, tmp = fresh_store(embedder)
        try:
            t0 = time.perf_counter()
            for b in batches:
                store.add_many(b)
            return time.perf_counter() - t0
        finally:
            store.close()
            tmp.cleanup()

    # embedding only
    emb_times = []
    vectors: dict[str, Any] = {}
    for _ in range(args.ingest_repeats):
        t0 = time.perf_counter()
        for b in _chunks(texts, args.batch):
            vs = emb.embed(b)
            for t, v in zip(b, vs):
                vectors[t] = v
        emb_times.append(time.perf_counter() - t0)
    log(f"ingest: embedding only {len(texts) / median(emb_times):.1f}/s")
    # the store redacts before embedding; key the precomputed vectors by the stored text
    pre = PrecomputedEmbedder(emb.model_id, emb.dim, {redact(t): v for t, v in vectors.items()})
    full = [run_insert(emb) for _ in range(args.ingest_repeats)]
    log(f"ingest: end to end {len(texts) / median(full):.1f}/s")
    insert_only = [run_insert(pre) for _ in range(args.ingest_repeats)]
    no_vec = [run_insert(None) for _ in range(args.ingest_repeats)]

    def rate(times: list[float]) -> dict[str, float]:
        rates = [len(texts) / t for t in times]
        return {
            "per_s_median": round(median(rates), 1),
            "per_s_min": round(min(rates), 1),
            "per_s_max": round(max(rates), 1),
            "seconds": [round(t, 3) for t in times],
        }

    out["end_to_end"] = rate(full)
    out["embedding_only"] = rate(emb_times)
    out["insert_precomputed_vectors"] = rate(insert_only)
    out["insert_no_embedder"] = rate(no_vec)
    out["model_id"] = emb.model_id
    return out


# ---- worker: search ------------------------------------------------------------------------


def worker_search(args: argparse.Namespace) -> dict[str, Any]:
    from storage import Anchor, AnchorType, Kind, MemoryFilter, MemoryStore, search

    out: dict[str, Any] = {"size": args.size, "embedder": args.embedder}
    rss0 = rss_bytes()
    # a proxy store is searched with the real model: queries are embedded for real
    proxy = args.embedder == "proxy"
    t_model, emb = timed(lambda: make_embedder("real" if proxy else args.embedder))
    out["model_load_s"] = round(t_model, 3)
    rss_model = rss_bytes()
    sdir = store_dir(args.size, args.seed, proxy_tag(emb.model_id) if proxy else cache_tag(emb))
    db_path = sdir / "memories.db"
    queries = json.loads(Path(args.queries_file).read_text())
    t_open, store = timed(lambda: MemoryStore(db_path, embedder=emb))
    t_index, vi = timed(store.vectors)
    out["store_open_s"] = round(t_open, 4)
    out["index_load_s"] = round(t_index, 4)
    out["index_load_action"] = vi.state.action if vi and vi.state else None
    rss_open = rss_bytes()

    targets = {}
    for q in queries:
        m = store.find_by_source("bench", f"gen-{q['target']}")
        targets[q["target"]] = (m.id, m.anchors) if m else (None, [])

    from predictive.retrieval import find

    def run(mode: str, q: dict[str, Any], k: int = 10):
        _mid, anchors = targets[q["target"]]
        if mode == "find":  # what `living-memory search` runs: memories and passages, collapsed
            return [f for f in find(store, q["text"], k=k) if f.memory is not None]
        if mode == "hybrid+kind":
            f = MemoryFilter(kinds=[Kind(q["kind"])])
            return search(store, q["text"], k=k, filters=f)
        if mode == "hybrid+file":
            files = [a for a in anchors if a.type is AnchorType.FILE][:1]
            f = MemoryFilter(anchors=files or [Anchor(AnchorType.FILE, "none")])
            return search(store, q["text"], k=k, filters=f)
        return search(store, q["text"], k=k, mode=mode)

    for q in queries[: args.warmup]:
        for mode in SEARCH_MODES:
            run(mode, q)
    times: dict[str, list[float]] = {m: [] for m in SEARCH_MODES}
    cpu: dict[str, list[float]] = {m: [] for m in SEARCH_MODES}  # process CPU, every thread
    hits: dict[str, int] = {m: 0 for m in SEARCH_MODES}
    embed_times: list[float] = []
    for rep in range(args.repeats):
        for q in queries:
            for mode in SEARCH_MODES:
                t0, c0 = time.perf_counter(), time.process_time()
                res = run(mode, q)
                times[mode].append(time.perf_counter() - t0)
                cpu[mode].append(time.process_time() - c0)
                if rep == 0 and targets[q["target"]][0] in {h.memory.id for h in res}:
                    hits[mode] += 1
            t0 = time.perf_counter()
            emb.embed([q["text"]])
            embed_times.append(time.perf_counter() - t0)
    out["queries"] = len(queries)
    out["repeats"] = args.repeats
    out["latency"] = {m: summarize_ms(t) for m, t in times.items()}
    # what a shared machine's load distorts least: CPU time of the whole process per call
    out["cpu_per_call"] = {m: summarize_ms(t) for m, t in cpu.items()}
    # p95 of each repeat, to show the spread between runs
    out["latency_p95_per_repeat_ms"] = {
        m: [
            round(percentile(t[i * len(queries) : (i + 1) * len(queries)], 95) * 1000, 3)
            for i in range(args.repeats)
        ]
        for m, t in times.items()
    }
    out["query_embedding"] = summarize_ms(embed_times)
    out["sanity_target_in_top10"] = {m: round(h / len(queries), 3) for m, h in hits.items()}
    out["rss_mb"] = {
        "start": mb(rss0),
        "model_loaded": mb(rss_model),
        "store_and_index_open": mb(rss_open),
        "after_searches": mb(rss_bytes()),
        "peak": mb(peak_rss_bytes()),
    }
    index_path = store._index_path
    out["db_bytes"] = db_size(db_path)
    out["db_mb"] = mb(out["db_bytes"])
    out["index_bytes"] = file_size(index_path)
    out["index_mb"] = mb(out["index_bytes"])
    out["memories"] = store.count()

    # raw index load from disk (page cache warm), as the product does it
    from usearch.index import Index

    loads = [timed(lambda: Index.restore(str(index_path), view=False))[0] for _ in range(3)]
    out["index_restore_s_median"] = round(median(loads), 4)
    # full rebuild from the vectors in SQLite (after the RSS reading: it allocates a 2nd index)
    rebuilds = []
    for _ in range(args.rebuild_repeats):
        dt_, _state = timed(lambda: vi.rebuild(store.conn, "bench"))
        rebuilds.append(dt_)
    out["rebuild_s"] = [round(t, 3) for t in rebuilds]
    out["rebuild_s_median"] = round(median(rebuilds), 3) if rebuilds else None
    store._vectors = None  # never save the rebuilt copy over the cached file
    store.close()
    return out


# ---- worker: dtype -------------------------------------------------------------------------


def worker_dtype(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from storage import MemoryStore
    from storage.vector_index import VectorIndex

    emb = make_embedder(args.embedder)
    sdir = store_dir(args.size, args.seed, cache_tag(emb))
    queries = json.loads(Path(args.queries_file).read_text())
    store = MemoryStore(sdir / "memories.db", embedder=emb)
    conn = store.conn
    rows = conn.execute(
        "SELECT memory_id, vector FROM embeddings WHERE model_id = ? ORDER BY memory_id",
        (emb.model_id,),
    ).fetchall()
    ids = np.asarray([r[0] for r in rows], dtype=np.int64)
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
    qv = emb.embed([q["text"] for q in queries])
    k = 10
    sims = qv @ mat.T
    exact = [set(ids[np.argpartition(-s, k)[:k]].tolist()) for s in sims]
    out: dict[str, Any] = {"size": len(ids), "queries": len(queries), "k": k, "dtypes": {}}
    for dtype in args.dtypes:
        with tempfile.TemporaryDirectory(prefix="lm-dtype-") as tmp:
            path = Path(tmp) / "v.usearch"
            vi = VectorIndex(path, dim=emb.dim, model_id=emb.model_id, dtype=dtype)
            t_build, _ = timed(lambda vi=vi: vi.rebuild(conn, "bench"))
            vi.save(force=True)
            size = file_size(path)
            recalls = []
            for q, ex in zip(qv, exact):
                got = {mid for mid, _ in vi.search(q, k)}
                recalls.append(len(got & ex) / k)
            for q in qv[:20]:
                vi.search(q, k)  # warm
            lat = []
            for _ in range(args.repeats):
                for q in qv:
                    t0 = time.perf_counter()
                    vi.search(q, 50)  # the hybrid candidate pool
                    lat.append(time.perf_counter() - t0)
            t_load = median(
                [timed(lambda vi=vi: vi._try_load())[0] for _ in range(3)]  # from disk
            )
            usage = getattr(vi._index, "memory_usage", None)
            out["dtypes"][dtype] = {
                "build_s": round(t_build, 3),
                "file_mb": mb(size),
                "memory_usage_mb": mb(usage) if isinstance(usage, int) else None,
                "load_s": round(t_load, 4),
                "recall_at_10": round(float(np.mean(recalls)), 4),
                "recall_at_10_min": round(float(np.min(recalls)), 3),
                "search_k50": summarize_ms(lat),
            }
            log(f"dtype {dtype} @ {len(ids)}: {out['dtypes'][dtype]}")
            del vi
    # exact brute force in numpy for comparison (what search does below 4000 filtered rows)
    lat = []
    for q in qv:
        t0 = time.perf_counter()
        s = mat @ q
        np.argpartition(-s, 50)[:50]
        lat.append(time.perf_counter() - t0)
    out["exact_numpy_f32"] = summarize_ms(lat)
    store.close()
    return out


# ---- worker: build -------------------------------------------------------------------------


def worker_build(args: argparse.Namespace) -> dict[str, Any]:
    emb = make_embedder(args.embedder)
    path, record = build_store(args.size, args.seed, emb)
    qpath = _ensure_queries(args.size, args.seed, cache_tag(emb), args.queries)
    return {"path": str(path), "record": record, "queries_file": str(qpath)}


WORKERS = {
    "ingest": worker_ingest,
    "search": worker_search,
    "dtype": worker_dtype,
    "build": worker_build,
}


# ---- orchestration -------------------------------------------------------------------------


def run_worker(phase: str, args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.bench_store", "--worker", phase]
    opts = {
        "embedder": args.embedder,
        "seed": args.seed,
        "queries": args.queries,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "batch": args.batch,
        "ingest_sample": args.ingest_sample,
        "ingest_repeats": args.ingest_repeats,
        "rebuild_repeats": args.rebuild_repeats,
        "dtypes": ",".join(args.dtypes),
        **extra,
    }
    for key, value in opts.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    log(f"worker {phase} {extra}")
    load_before = os.getloadavg()
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent
    )
    if proc.returncode != 0:
        raise SystemExit(f"worker {phase} failed with exit code {proc.returncode}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # other processes on the machine inflate timings: keep the load average beside them
    out["load_avg_before"] = [round(x, 2) for x in load_before]
    out["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def print_report(res: dict[str, Any]) -> None:
    print(f"\nMachine: {machine_line(res['machine'])}\n")
    ing = res.get("ingest")
    if ing:
        print(
            f"Ingest: {ing['sample']} memories (mean {ing.get('tokens_mean')} tokens, "
            f"{ing['chars_mean']} chars), add_many batches of {ing['batch']}, "
            f"median of {ing['repeats']}"
        )
        print(
            table(
                ["path", "memories/s (median)", "min", "max"],
                [
                    [name, v["per_s_median"], v["per_s_min"], v["per_s_max"]]
                    for name, v in (
                        ("end to end (embedding included)", ing["end_to_end"]),
                        ("embedding only", ing["embedding_only"]),
                        ("insert, vectors precomputed", ing["insert_precomputed_vectors"]),
                        ("insert, no embedder", ing["insert_no_embedder"]),
                    )
                ],
            )
        )
        print()
    sizes = res.get("sizes", {})
    if sizes:
        rows = []
        for n, s in sizes.items():
            se = s.get("search")
            if not se:
                continue
            lat = se["latency"]
            rows.append(
                [
                    n,
                    lat["hybrid"]["p50_ms"],
                    lat["hybrid"]["p95_ms"],
                    lat["keyword"]["p50_ms"],
                    lat["keyword"]["p95_ms"],
                    lat["vector"]["p50_ms"],
                    lat["vector"]["p95_ms"],
                    lat["hybrid+kind"]["p95_ms"],
                    lat["hybrid+file"]["p95_ms"],
                    lat.get("find", {}).get("p50_ms"),
                    lat.get("find", {}).get("p95_ms"),
                    se["query_embedding"]["p50_ms"],
                    se["sanity_target_in_top10"]["hybrid"],
                ]
            )
        print("Search latency in ms (warm; hybrid and vector include the query embedding)")
        print(
            table(
                [
                    "memories",
                    "hybrid p50",
                    "hybrid p95",
                    "kw p50",
                    "kw p95",
                    "vec p50",
                    "vec p95",
                    "+kind p95",
                    "+file p95",
                    "search p50",
                    "search p95",
                    "embed p50",
                    "target@10",
                ],
                rows,
            )
        )
        print()
        rows = []
        for n, s in sizes.items():
            se, b = s.get("search"), s.get("build", {})
            if not se:
                continue
            rows.append(
                [
                    n,
                    b.get("insert_rate_per_s"),
                    se["index_load_s"] * 1000,
                    se["index_restore_s_median"] * 1000,
                    se["rebuild_s_median"],
                    se["db_mb"],
                    se["index_mb"],
                    se["rss_mb"]["model_loaded"],
                    se["rss_mb"]["after_searches"],
                    se["rss_mb"]["peak"],
                ]
            )
        print("Build, index and memory")
        print(
            table(
                [
                    "memories",
                    "build /s",
                    "index open ms",
                    "restore ms",
                    "rebuild s",
                    "db MB",
                    "index MB",
                    "RSS model MB",
                    "RSS searched MB",
                    "peak RSS MB",
                ],
                rows,
            )
        )
        print()
        rows = []
        for n, s in sizes.items():
            d = s.get("dtype")
            if not d:
                continue
            for dtype, v in d["dtypes"].items():
                rows.append(
                    [
                        n,
                        dtype,
                        v["recall_at_10"],
                        v["search_k50"]["p50_ms"],
                        v["search_k50"]["p95_ms"],
                        v["file_mb"],
                        v["build_s"],
                        v["load_s"] * 1000,
                    ]
                )
            rows.append(
                [
                    n,
                    "exact numpy",
                    1.0,
                    d["exact_numpy_f32"]["p50_ms"],
                    d["exact_numpy_f32"]["p95_ms"],
                    None,
                    None,
                    None,
                ]
            )
        if rows:
            print("usearch dtype (cosine, M=16, ef_add=64, ef_search=96; ANN search of 50)")
            print(
                table(
                    [
                        "memories",
                        "dtype",
                        "recall@10",
                        "p50 ms",
                        "p95 ms",
                        "file MB",
                        "build s",
                        "load ms",
                    ],
                    rows,
                )
            )
            print()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--embedder", default="real", choices=("real", "hashing", "proxy"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=300, help="distinct search queries")
    ap.add_argument("--repeats", type=int, default=3, help="passes over the queries / ingest")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--ingest-sample", type=int, default=2000)
    ap.add_argument("--ingest-repeats", type=int, default=3)
    ap.add_argument("--rebuild-repeats", type=int, default=3, help="0: skip the rebuild")
    ap.add_argument("--dtypes", default="f16,f32", help="also try i8, bf16")
    ap.add_argument("--dtype-sizes", default="10000,100000", help="sizes for the dtype study")
    ap.add_argument("--skip", default="", help="phases to skip: ingest,search,dtype")
    ap.add_argument("--build-only", action="store_true", help="build the cached stores, stop")
    ap.add_argument("--name", default=None, help="result name (default store-<embedder>)")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--queries-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.dtypes = [d for d in args.dtypes.split(",") if d]

    if args.worker:
        result = WORKERS[args.worker](args)
        sys.stdout.write(json.dumps(result, default=str) + "\n")
        return

    sizes = [int(s) for s in args.sizes.split(",") if s]
    dtype_sizes = {int(s) for s in args.dtype_sizes.split(",") if s}
    skip = set(args.skip.split(","))
    name = args.name or f"store-{args.embedder}"
    res: dict[str, Any] = {
        "machine": machine(),
        "embedder": args.embedder,
        "seed": args.seed,
        "config": {k: v for k, v in vars(args).items() if k not in ("worker", "size")},
        "sizes": {},
    }
    out_path = None

    def save() -> None:
        nonlocal out_path
        payload = {k: v for k, v in res.items() if k != "machine"}
        out_path = write_result(name, payload)

    for n in sizes:
        res["sizes"][str(n)] = {"build": run_worker("build", args, size=n)["record"]}
        save()
    if args.build_only:
        return
    if "ingest" not in skip:
        res["ingest"] = run_worker("ingest", args)
        save()
    for n in sizes:
        record = res["sizes"][str(n)]["build"]
        qfile = _queries_path(
            n, args.seed, record.get("cache_tag", record["model_id"]), args.queries
        )
        entry = res["sizes"][str(n)]
        if "search" not in skip:
            entry["search"] = run_worker("search", args, size=n, queries_file=qfile)
            save()
        if "dtype" not in skip and n in dtype_sizes:
            entry["dtype"] = run_worker("dtype", args, size=n, queries_file=qfile)
            save()
    print_report(res)
    print(f"results: {out_path}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
