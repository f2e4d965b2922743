"""Staleness verdicts against labels read off real histories, and what the check costs.

1. **Quality.** Every repository of ``data/staleness_labels.json`` (built by
   ``bench.staleness_labels`` with plain git, sharing no code with the product) is checked out
   at its labelled HEAD, its history ingested like ``living-memory ingest git`` into a fresh
   store, every memory checked (``predictive.staleness.check``), and each labelled commit's
   verdict compared with its label: *stale* predicted = ``changed`` or ``gone``. Precision and
   recall overall, per type and per repository; every miss is listed.
2. **Cost on real stores.** Contexts for the labelled files, assembled warm by one engine with
   the check and one without (interleaved, each request with new text so the result cache
   cannot answer): p50/p95 of both, and of the check's own lookup per context.
3. **Cost at 10k memories.** The 10k store ``bench_store`` caches, in a git repository made of
   the files its memories cite (a second commit deletes a tenth of them and rewrites another
   tenth, so verdicts of every kind are served): the full check's time (background work when
   HEAD moves), then file-open p50/p95 with the check on and off, interleaved in one run.

    .venv/bin/python -m bench.bench_staleness [--requests 200] [--skip cost10k]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import machine, machine_line
from predictive import staleness
from predictive.engine import ContextEngine, ContextRequest
from predictive.ingest import run as ingest
from storage import MemoryStore

HERE = Path(__file__).parent
CACHE = HERE / ".cache" / "staleness"
LABELS = HERE / "data" / "staleness_labels.json"
RESULT = HERE / "results" / "staleness.json"
DATA = HERE.parent.parent / "shared" / "data"
EXTRACT = {
    "gryag": DATA / "devset" / "gryag" / "extract.sh",
    "twat-search": DATA / "devset" / "twat-search" / "extract.sh",
    "dd-trace-py": DATA / "context-gold" / "extract.sh",
}
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        text=True,
        env=env or GIT_ENV,
    ).stdout.strip()


def workspace(name: str, head: str) -> Path:
    """The repository checked out at ``head`` (built once under ``.cache/staleness``)."""
    where = CACHE / f"repo-{name}"
    if where.exists():
        if git(where, "rev-parse", "HEAD") == head:
            return where
        shutil.rmtree(where)
    CACHE.mkdir(parents=True, exist_ok=True)
    project = HERE.parent
    if name == "this":
        git(CACHE, "clone", "-q", str(project), str(where))
        git(where, "checkout", "-q", "-B", "main", head)
    else:
        subprocess.run(
            ["bash", str(EXTRACT[name]), str(where)],
            check=True,
            cwd=project,  # git bundle verify wants to run inside a repository
            capture_output=True,
        )
    if git(where, "rev-parse", "HEAD") != head:
        raise SystemExit(f"{name}: workspace HEAD is not the labelled {head}")
    return where


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def ms(xs: list[float]) -> dict[str, float]:
    return {
        "p50": round(1e3 * statistics.median(xs), 3) if xs else float("nan"),
        "p95": round(1e3 * pct(xs, 0.95), 3),
        "n": len(xs),
    }


def score(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    tp = sum(1 for p, t in pairs if p and t)
    fp = sum(1 for p, t in pairs if p and not t)
    fn = sum(1 for p, t in pairs if not p and t)
    return {
        "cases": len(pairs),
        "stale": sum(1 for _, t in pairs if t),
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def quality(requests: int) -> dict[str, Any]:
    labels = json.loads(LABELS.read_text())
    out: dict[str, Any] = {"repos": {}, "misses": [], "absent": []}
    all_pairs: list[tuple[bool, bool]] = []
    by_type: dict[str, list[tuple[bool, bool]]] = {}
    for name, head in labels["repos"].items():
        root = workspace(name, head)
        db = CACHE / f"{name}.db"
        for f in CACHE.glob(f"{name}.db*"):
            f.unlink()
        store = MemoryStore(db)
        t0 = time.perf_counter()
        # every commit is kept (bots and one-word subjects too): more labelled ones to check
        keep = {"sources": ["git"], "include_bots": True, "include_trivial": True}
        summary = ingest(store, root=root, options=keep)
        t_ingest = time.perf_counter() - t0
        t0 = time.perf_counter()
        verdicts = staleness.check(store, root)
        t_check = time.perf_counter() - t0
        memories = summary.added
        log(
            f"{name}: {memories} memories ingested in {t_ingest:.1f}s (citations recorded), "
            f"{len(verdicts)} checked in {t_check:.1f}s"
        )
        pairs: list[tuple[bool, bool]] = []
        for case in (c for c in labels["cases"] if c["repo"] == name):
            m = store.find_by_source("git", case["source_id"])
            if m is None:
                out["absent"].append({k: case[k] for k in ("repo", "source_id", "subject")})
                continue
            v = verdicts.get(m.id)
            predicted = v is not None and v.stale
            truth = case["label"] == "stale"
            pairs.append((predicted, truth))
            by_type.setdefault(case["type"], []).append((predicted, truth))
            if predicted != truth:
                out["misses"].append(
                    {
                        "repo": name,
                        "type": case["type"],
                        "commit": case["source_id"][:10],
                        "subject": case["subject"][:90],
                        "cites": case["cites"],
                        "label": case["label"],
                        "why": case["why"],
                        "verdict": v.to_dict() if v else None,
                    }
                )
        all_pairs += pairs
        cost = context_cost(store, root, labels, name, requests)
        out["repos"][name] = {
            "head": head,
            "memories": memories,
            "ingest_s": round(t_ingest, 2),
            "check_all_s": round(t_check, 2),
            "check_per_memory_ms": round(1e3 * t_check / max(memories, 1), 3),
            "verdicts": {
                s: sum(1 for v in verdicts.values() if v.state == s)
                for s in ("current", "changed", "gone", "unknown")
            },
            **score(pairs),
            "context": cost,
        }
        store.close()
    out["overall"] = score(all_pairs)
    out["by_type"] = {t: score(p) for t, p in sorted(by_type.items())}
    return out


def interleaved(
    store: MemoryStore, root: Path, reqs: list[ContextRequest]
) -> dict[str, dict[str, float]]:
    """Assemble every request with the check on and off (alternating), warm."""
    on = ContextEngine(store, root=root)
    off = ContextEngine(store, root=root, staleness=staleness.Staleness(store, root, enabled=False))
    on.staleness.refresh(wait=True)
    for r in reqs[:10]:
        on.assemble(r, record=False)
        off.assemble(r, record=False)
    t_on, t_off, t_lookup = [], [], []
    for i, r in enumerate(reqs[10:]):
        text = (r.text or "") + f"\n# visit {i}\n"
        req = ContextRequest(r.path, text=text, branch=r.branch, root=str(root))
        order = (on, off) if i % 2 == 0 else (off, on)
        for engine in order:
            t0 = time.perf_counter()
            res = engine.assemble(req, record=False)
            (t_on if engine is on else t_off).append(time.perf_counter() - t0)
            if engine is on:
                ids = [it.memory_id for it in res.items if it.memory_id is not None]
                t0 = time.perf_counter()
                on.staleness.lookup(ids)
                t_lookup.append(time.perf_counter() - t0)
    on.staleness.close()
    return {"on": ms(t_on), "off": ms(t_off), "lookup": ms(t_lookup)}


def context_cost(
    store: MemoryStore, root: Path, labels: dict[str, Any], name: str, n: int
) -> dict[str, Any]:
    files = [
        c["cites"]["file"]
        for c in labels["cases"]
        if c["repo"] == name and (root / c["cites"]["file"]).is_file()
    ]
    if not files:
        return {}
    rng = random.Random(7)
    reqs = []
    for _ in range(n + 10):
        f = rng.choice(files)
        try:
            text = (root / f).read_text(errors="replace")[:20_000]
        except OSError:
            continue
        reqs.append(ContextRequest(f, text=text, root=str(root)))
    return interleaved(store, root, reqs)


def synthetic_repo(store: MemoryStore, root: Path) -> dict[str, int]:
    """A repository of the files the store's memories cite: all added long ago, then a
    tenth deleted and a tenth rewritten."""
    files = sorted(
        {
            a.value
            for m in store.list(limit=20_000, order="id")
            for a in m.anchors
            if a.type.value == "file"
        }
    )
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for f in files:
        p = root / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(f"line {i} of {f}\n" for i in range(40)))
    times = [m.created_at for m in store.list(limit=20_000, order="id")]

    def at(t: float) -> dict[str, str]:
        stamp = f"@{int(t)} +0000"
        return {**GIT_ENV, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    for k, v in (("user.name", "bench"), ("user.email", "bench@example.com")):
        git(root, "config", k, v)
    git(root, "add", "-A")
    # the project before every memory, the change after them all: each was learned before it
    git(root, "commit", "-q", "-m", "the project", env=at(min(times) - 86_400))
    rng = random.Random(3)
    picked = rng.sample(files, len(files) // 5)
    gone, rewritten = picked[: len(picked) // 2], picked[len(picked) // 2 :]
    for f in gone:
        (root / f).unlink()
    for f in rewritten:
        (root / f).write_text("".join(f"new {i}\n" for i in range(40)))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "move things", env=at(max(times) + 60))
    return {"files": len(files), "deleted": len(gone), "rewritten": len(rewritten)}


def cost_10k(n: int) -> dict[str, Any]:
    from bench.bench_context import prepared_store, requests
    from storage.embeddings import load_embedder

    src = prepared_store(10_000)
    work = CACHE / "n10000"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for f in src.parent.iterdir():
        if f.name.startswith("memories."):
            shutil.copy2(f, work / f.name)
    store = MemoryStore(work / "memories.db", embedder=load_embedder())
    store.vectors()
    root = work / "project"
    repo = synthetic_repo(store, root)
    t0 = time.perf_counter()
    verdicts = staleness.check(store, root)
    t_check = time.perf_counter() - t0
    log(f"10k: {repo}; full check of {len(verdicts)} citing memories in {t_check:.1f}s")
    reqs = [
        ContextRequest(r.path, text=f"# {r.path}\n", branch=r.branch, diagnostics=r.diagnostics)
        for r in requests(store, n + 10)
    ]
    timing = interleaved(store, root, reqs)
    store.close()
    return {
        "memories": 10_000,
        "repo": repo,
        "check_all_s": round(t_check, 2),
        "verdicts": {
            s: sum(1 for v in verdicts.values() if v.state == s)
            for s in ("current", "changed", "gone", "unknown")
        },
        "file_open": timing,
        "p95_added_ms": round(timing["on"]["p95"] - timing["off"]["p95"], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--skip", default="", help="quality,cost10k")
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    started = os.getloadavg()
    result: dict[str, Any] = {"machine": machine()}
    if "quality" not in skip:
        result["quality"] = quality(a.requests // 2)
    if "cost10k" not in skip:
        result["cost10k"] = cost_10k(a.requests)
    result["load"] = {"start": started, "end": os.getloadavg()}
    RESULT.write_text(json.dumps(result, indent=1) + "\n")
    print(machine_line(result["machine"]))
    print(f"load average at start {started}, at end {os.getloadavg()}")
    q = result.get("quality")
    if q:
        print("\n| repository | memories | labelled | stale | precision | recall | check all (s) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, r in q["repos"].items():
            print(
                f"| {name} | {r['memories']} | {r['cases']} | {r['stale']} | {r['precision']} | "
                f"{r['recall']} | {r['check_all_s']} |"
            )
        o = q["overall"]
        print(
            f"| **all** | | {o['cases']} | {o['stale']} | **{o['precision']}** | "
            f"**{o['recall']}** | |"
        )
        for t, s in q["by_type"].items():
            print(f"  {t}: precision {s['precision']} recall {s['recall']} ({s['cases']} cases)")
        print("\ncontext (ms): repository, on p50/p95, off p50/p95, lookup p50/p95")
        for name, r in q["repos"].items():
            c = r["context"]
            if c:
                print(
                    f"  {name}: {c['on']['p50']}/{c['on']['p95']}, {c['off']['p50']}/"
                    f"{c['off']['p95']}, {c['lookup']['p50']}/{c['lookup']['p95']}"
                )
        print(f"misses: {len(q['misses'])}, absent from the store: {len(q['absent'])}")
    c = result.get("cost10k")
    if c:
        f = c["file_open"]
        print(
            f"\n10k: full check {c['check_all_s']} s; file open on {f['on']['p50']}/"
            f"{f['on']['p95']} ms, off {f['off']['p50']}/{f['off']['p95']} ms "
            f"(p95 +{c['p95_added_ms']} ms); lookup {f['lookup']['p50']}/{f['lookup']['p95']} ms"
        )


if __name__ == "__main__":
    main()
