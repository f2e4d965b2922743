"""The dev set (../shared/data/devset/twat-search): search and file-open prefetch, scored by its
own score.py against its baselines.

    python -m bench.bench_devset [--embedder real|hashing] [--rebuild] [--devset DIR]

Builds the workspace with the set's ``extract.sh`` (from the bundle beside it, offline),
ingests it the way ``living-memory ingest`` does, asks each question through the code path of
``living-memory search`` (:func:`predictive.retrieval.find`), opens each prefetch file through
the path of ``living-memory context FILE --as-of T`` and scores both with ``score.py``.

SpecStory headers carry local times; the set takes them as +01:00 (its README), so the
ingestion here runs with ``TZ=Europe/Paris``, as it would on the author's machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ["TZ"] = "Europe/Paris"
time.tzset()

from bench.common import (  # noqa: E402
    CACHE_DIR,
    RESULTS_DIR,
    log,
    make_embedder,
    summarize_ms,
    write_result,
)

HERE = Path(__file__).resolve().parent
DEFAULT_DEVSET = next(
    (
        p
        for p in (
            HERE.parents[1] / "shared" / "data" / "devset" / "twat-search",
            Path("/work/shared/data/devset/twat-search"),
        )
        if p.is_dir()
    ),
    HERE.parents[1] / "shared" / "data" / "devset" / "twat-search",
)
_LINE = re.compile(
    r"^\s*(?:(kind|group)\s+(\S+)\s+n=\s*\d+\s+|search\s+n=\d+\s+|prefetch\s+n=\d+\s+)(.*)$"
)


def workspace(devset: Path, rebuild: bool) -> Path:
    ws = CACHE_DIR / "devset-ws"
    if rebuild and ws.exists():
        shutil.rmtree(ws)
    if not (ws / ".git").is_dir():
        if ws.exists():
            shutil.rmtree(ws)
        log(f"building the workspace with {devset / 'extract.sh'}")
        subprocess.run(["bash", str(devset / "extract.sh"), str(ws)], check=True)
    return ws


def ingest(ws: Path, embedder_name: str, rebuild: bool) -> tuple[Any, dict[str, Any] | None]:
    from predictive.ingest import run
    from storage import MemoryStore

    emb = make_embedder(embedder_name)
    d = CACHE_DIR / f"devset-store-{embedder_name}"
    if rebuild and d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(d / "memory.db", embedder=emb)
    summary = None
    if not (d / "ingested.json").exists():
        log("ingesting (git, decision records, rules, chats)")
        t0 = time.perf_counter()
        summary = run(store, root=ws, options={"sources": ["all"]})
        store.embeddings.embed_pending()
        summary["wallSeconds"] = round(time.perf_counter() - t0, 1)
        (d / "ingested.json").write_text(json.dumps(summary, indent=1))
        log(f"ingested in {summary['wallSeconds']} s: {summary['added']} memories")
    return store, summary


def provenance(found: Any) -> str:
    p = found.provenance
    return p.path or p.commit or found.unit


def ask(store: Any, questions: list[dict[str, Any]], k: int) -> tuple[list[dict], list[float]]:
    from predictive.retrieval import find

    out, times = [], []
    for q in questions:
        t0 = time.perf_counter()
        found = find(store, q["question"], k=k)
        times.append(time.perf_counter() - t0)
        out.append({"id": q["id"], "results": [provenance(f) for f in found]})
    return out, times


def prefetch(store: Any, ws: Path, cases: list[dict[str, Any]]) -> tuple[list[dict], list[float]]:
    from predictive.engine import ContextEngine, ContextRequest
    from predictive.retrieval import _origins, unit_of

    engine = ContextEngine(store, root=ws)
    origins = _origins(store)
    out, times = [], []
    for c in cases:
        as_of = datetime.fromisoformat(c["as_of"]).timestamp()
        t0 = time.perf_counter()
        ctx = engine.assemble(
            ContextRequest(path=c["file"], root=str(ws), as_of=as_of), record=False
        )
        times.append(time.perf_counter() - t0)
        ids = [i.memory_id for i in ctx.items if i.memory_id is not None]
        mems = {m.id: m for m in store.get_many(ids)}
        items = []
        for mid in dict.fromkeys(ids):
            if mid in mems:
                _, prov = unit_of(mems[mid], origins)
                items.append(prov.path or prov.commit or f"memory:{mid}")
        out.append({"id": c["id"], "context": items})
    return out, times


def score(devset: Path, args: list[str]) -> tuple[str, dict[str, Any]]:
    text = subprocess.run(
        [sys.executable, str(devset / "score.py"), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    parsed: dict[str, Any] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        name = f"{m.group(1)}:{m.group(2)}" if m.group(1) else "overall"
        parsed[name] = {
            kv.split("=")[0]: float(kv.split("=")[1].split()[0])
            for kv in m.group(3).split()
            if "=" in kv and re.match(r"^[\d.]+", kv.split("=")[1])
        }
    return text, parsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--embedder", default="real", choices=("real", "hashing"))
    ap.add_argument("--devset", type=Path, default=DEFAULT_DEVSET)
    ap.add_argument("--rebuild", action="store_true", help="rebuild workspace and store")
    ap.add_argument("--k", type=int, default=10)
    a = ap.parse_args(argv)
    if not (a.devset / "score.py").exists():
        raise SystemExit(f"no dev set at {a.devset}")
    ws = workspace(a.devset, a.rebuild)
    store, summary = ingest(ws, a.embedder, a.rebuild)
    questions = [json.loads(x) for x in (a.devset / "questions.jsonl").read_text().splitlines()]
    cases = [json.loads(x) for x in (a.devset / "prefetch.jsonl").read_text().splitlines()]
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = CACHE_DIR / "devset-out"
    tmp.mkdir(parents=True, exist_ok=True)
    searched, s_times = ask(store, questions, a.k)
    (tmp / "search.jsonl").write_text("".join(json.dumps(r) + "\n" for r in searched))
    fetched, p_times = prefetch(store, ws, cases)
    (tmp / "prefetch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in fetched))
    report: dict[str, Any] = {"embedder": a.embedder, "k": a.k}
    for name, args in (
        ("search", ["--search", str(tmp / "search.jsonl")]),
        ("search_dedupe", ["--search", str(tmp / "search.jsonl"), "--dedupe"]),
        ("prefetch@5", ["--prefetch", str(tmp / "prefetch.jsonl"), "--budget", "5"]),
        ("prefetch@10", ["--prefetch", str(tmp / "prefetch.jsonl"), "--budget", "10"]),
    ):
        text, parsed = score(a.devset, args)
        print(f"== {name}\n{text}")
        report[name] = parsed
    report["search_ms"] = summarize_ms(s_times)
    report["context_ms"] = summarize_ms(p_times)
    if summary is not None:
        report["ingest"] = summary
    print(f"search latency {report['search_ms']}\ncontext latency {report['context_ms']}")
    print(f"wrote {write_result(f'devset-{a.embedder}', report)}")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
