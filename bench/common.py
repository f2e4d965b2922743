"""Shared benchmark plumbing: the machine, statistics, memory, result files, cached stores."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / ".cache"
RESULTS_DIR = BENCH_DIR / "results"

# Bump when bench.generate changes its output, so cached stores are not reused by mistake.
GENERATOR_VERSION = 1


# ---- the machine ---------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    ram = _ram_bytes()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        affinity = os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": affinity,
        "ram_gb": round(ram / 2**30, 1) if ram else None,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "platform": platform.platform(),
        "packages": {
            name: _version(name)
            for name in ("apsw", "usearch", "onnxruntime", "numpy", "tokenizers", "psutil")
        },
        "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def machine_line(m: dict[str, Any] | None = None) -> str:
    m = m or machine()
    p = m["packages"]
    return (
        f"{m['cpu']}, {m['usable_cpus']} CPUs, {m['ram_gb']} GB RAM, {m['os']}, "
        f"Python {m['python']}; apsw {p['apsw']}, usearch {p['usearch']}, "
        f"onnxruntime {p['onnxruntime']}, numpy {p['numpy']}"
    )


# ---- statistics ----------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between closest ranks."""
    if not values:
        return math.nan
    xs = sorted(values)
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def summarize_ms(seconds: Sequence[float]) -> dict[str, float]:
    """Latency summary in milliseconds."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "mean_ms": round(sum(ms) / len(ms), 3) if ms else math.nan,
        "max_ms": round(max(ms), 3) if ms else math.nan,
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# ---- memory and files ----------------------------------------------------------------------


def rss_bytes() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int | None:
    try:
        import resource

        # ru_maxrss is KiB on Linux, bytes on macOS
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)
    except Exception:  # pragma: no cover
        return None


def mb(n: int | float | None) -> float | None:
    return None if n is None else round(n / 2**20, 1)


def file_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def db_size(db_path: Path) -> int:
    """Database bytes on disk, the WAL and shared-memory files included."""
    return sum(file_size(Path(str(db_path) + s)) for s in ("", "-wal", "-shm"))


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``bench/results/<name>.json`` (atomically), stamped with time and machine."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{name}.json"
    body = {
        "bench": name,
        "when": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        **payload,
    }
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=2, default=str) + "\n")
    os.replace(tmp, out)
    return out


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (readable in a terminal too)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            if math.isnan(v):
                return "–"
            return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
        return "–" if v is None else str(v)

    cells = [[cell(v) for v in r] for r in rows]
    left = [isinstance(v, str) for v in rows[0]] if rows else [False] * len(headers)
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"]
    lines.append(
        "| "
        + " | ".join(("-" * w) if lf else ("-" * (w - 1) + ":") for w, lf in zip(widths, left))
        + " |"
    )
    for r in cells:
        lines.append(
            "| "
            + " | ".join(c.ljust(w) if lf else c.rjust(w) for c, w, lf in zip(r, widths, left))
            + " |"
        )
    return "\n".join(lines)


# ---- embedders and cached stores -----------------------------------------------------------


class ProxyEmbedder:
    """Hashing vectors labelled with the real model's identity and dimension.

    For timing and memory at a scale where embedding every memory with the real model takes
    too long on a small machine: a store built with it opens under the real model (queries are
    embedded for real, the index has the real shape and size), but its vectors carry no
    meaning, so recall measured over it means nothing.
    """

    def __init__(self) -> None:
        from storage.embeddings import HashingEmbedder, load_embedder

        real = load_embedder()
        self._model_id, self._dim = real.model_id, real.dim
        self._hash = HashingEmbedder(dim=real.dim)
        self.cache_tag = proxy_tag(real.model_id)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]):
        return self._hash.embed(texts)


def proxy_tag(model_id: str) -> str:
    return f"proxy-hashing-as-{model_id}"


def make_embedder(name: str):
    """``real``: the packaged int8 MiniLM (384-d); ``hashing``: the fast deterministic fake;
    ``proxy``: hashing vectors under the real model's identity (see ProxyEmbedder)."""
    from storage.embeddings import HashingEmbedder, load_embedder

    if name == "real":
        return load_embedder()
    if name == "hashing":
        return HashingEmbedder(dim=384)
    if name == "proxy":
        return ProxyEmbedder()
    raise SystemExit(f"unknown embedder {name!r}: use real, hashing or proxy")


def cache_tag(embedder: Any) -> str:
    """What cached stores are keyed by: the model identity (or the proxy's tag)."""
    return getattr(embedder, "cache_tag", None) or embedder.model_id


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def store_dir(n: int, seed: int, tag: str) -> Path:
    return CACHE_DIR / f"store-n{n}-s{seed}-g{GENERATOR_VERSION}-{slug(tag)}"


def build_store(
    n: int, seed: int, embedder: Any, *, batch: int = 256, quiet: bool = False
) -> tuple[Path, dict[str, Any]]:
    """A store of ``generate(n, seed)`` embedded with ``embedder``, cached under bench/.cache.

    Built in ``<dir>.partial`` and renamed when complete; an interrupted build resumes where it
    stopped (batches are committed in order). Returns the directory and its build record.
    """
    from bench.generate import generate
    from storage import MemoryStore

    final = store_dir(n, seed, cache_tag(embedder))
    record_path = final / "build.json"
    if record_path.exists():
        return final, json.loads(record_path.read_text())
    partial = final.with_name(final.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    t_gen, mems = timed(lambda: generate(n, seed))
    db_path = partial / "memories.db"
    store = MemoryStore(db_path, embedder=embedder)
    try:
        done = store.count()
        if done and not quiet:
            log(f"resuming build of {final.name} at {done}/{n}")
        start_done = done
        t0 = time.perf_counter()
        last_log = t0
        for i in range(done, n, batch):
            store.add_many(mems[i : i + batch])
            done = min(n, i + batch)
            now = time.perf_counter()
            if not quiet and (now - last_log > 30 or done == n):
                rate = (done - start_done) / (now - t0)
                eta = (n - done) / rate if rate else math.inf
                log(f"{final.name}: {done}/{n} ({rate:.0f}/s, eta {eta / 60:.1f} min)")
                last_log = now
        t_insert = time.perf_counter() - t0
        t_index, vi = timed(store.vectors)
        if vi is not None:
            vi.save(force=True)
        stats = store.stats()
    finally:
        store.close()
    record = {
        "n": n,
        "seed": seed,
        "model_id": embedder.model_id,
        "cache_tag": cache_tag(embedder),
        "generator_version": GENERATOR_VERSION,
        "generate_s": round(t_gen, 2),
        "inserted_this_run": n - start_done,
        "insert_s_this_run": round(t_insert, 2),
        "insert_rate_per_s": round((n - start_done) / t_insert, 1) if t_insert > 0 else None,
        "index_build_s": round(t_index, 2),
        "memories": stats.memories,
        "embedded": stats.embedded,
        "built_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_line(),
    }
    (partial / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)
    return final, record
