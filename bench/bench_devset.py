"""The dev sets (../shared/data/devset/<name>): search and file-open prefetch, scored by each
set's own score.py, beside a plain BM25 over the tool's own passages.

    python -m bench.bench_devset [--set NAME ...] [--embedder real|hashing] [--rebuild]
                                 [--reingest] [--devset DIR]

Every set in the dev-set folder runs by default (``--set gryag --set twat-search`` picks
some); each is reported on its own. For each set the bench builds the workspace with the set's
``extract.sh`` (from the bundle beside it, offline), ingests it the way ``living-memory
ingest`` does, asks each question through the code path of ``living-memory search``
(:func:`predictive.retrieval.find`), opens each prefetch file through the path of
``living-memory context FILE --as-of T`` and scores both with ``score.py``.

The baseline (``bm25`` in the report) is computed here, over what the tool itself stored:
BM25Okapi (k1 1.5, b 0.75) over every conversation passage, every decision record, rule
section and commit memory, each scored on its own (length-normalised), top 10, provenance as
the search reports it. It is the keyword floor the fused ranking must not fall below.

Workspaces and stores are cached per set in ``bench/.cache/devset-ws-<name>`` and
``bench/.cache/devset-store-<name>-<embedder>``; the real model's vectors are cached by text
in ``bench/.cache/embeddings-<model>.sqlite``, so ``--reingest`` (ingestion changed) re-reads a
set without embedding again what it embedded before.

SpecStory headers of twat-search carry local times that the set takes as +01:00 (its README),
so the ingestion here runs with ``TZ=Europe/Paris``, as it would on the author's machine; gryag's
headers are UTC (``Z``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

os.environ["TZ"] = "Europe/Paris"
time.tzset()

from bench.common import (  # noqa: E402
    CACHE_DIR,
    RESULTS_DIR,
    log,
    make_embedder,
    slug,
    summarize_ms,
    write_result,
)

HERE = Path(__file__).resolve().parent
DEVSETS = next(
    (
        p
        for p in (
            HERE.parents[1] / "shared" / "data" / "devset",
            Path("/work/shared/data/devset"),
        )
        if p.is_dir()
    ),
    HERE.parents[1] / "shared" / "data" / "devset",
)
_LINE = re.compile(
    r"^\s*(?:(kind|group)\s+(\S+)\s+n=\s*\d+\s+|search\s+n=\d+\s+|prefetch\s+n=\d+\s+)(.*)$"
)
DEFAULT_DEVSET = DEVSETS / "twat-search"
BM25_K1 = 1.5
BM25_B = 0.75
_TOKEN = re.compile(r"[a-z0-9]+")


class CachedEmbedder:
    """The real model with its vectors kept by text on disk: a set ingested again (after a
    change to ingestion) embeds only what it never embedded. Same identity as the model."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.db = sqlite3.connect(
            CACHE_DIR / f"embeddings-{slug(inner.model_id)}.sqlite",
            check_same_thread=False,
            timeout=120,
        )
        self.lock = threading.Lock()
        self.db.execute("CREATE TABLE IF NOT EXISTS v (h TEXT PRIMARY KEY, vec BLOB)")

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        with self.lock:
            return self._embed(texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        have: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            q = f"SELECT h, vec FROM v WHERE h IN ({','.join('?' * len(part))})"
            have.update(self.db.execute(q, part).fetchall())
        todo = [i for i, k in enumerate(keys) if k not in have]
        if todo:
            vecs = self.inner.embed([texts[i] for i in todo])
            rows = [(keys[i], vecs[j].astype("<f4").tobytes()) for j, i in enumerate(todo)]
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
            self.db.commit()
            have.update(rows)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([np.frombuffer(have[k], dtype="<f4") for k in keys]).astype(np.float32)


def workspace(devset: Path, rebuild: bool) -> Path:
    ws = CACHE_DIR / f"devset-ws-{devset.name}"
    if rebuild and ws.exists():
        shutil.rmtree(ws)
    if not (ws / ".git").is_dir():
        if ws.exists():
            shutil.rmtree(ws)
        log(f"building the workspace with {devset / 'extract.sh'}")
        subprocess.run(["bash", str(devset / "extract.sh"), str(ws)], check=True)
    return ws


def ingest(
    ws: Path, name: str, embedder_name: str, rebuild: bool
) -> tuple[Any, dict[str, Any] | None]:
    from predictive.ingest import run
    from server.convert import to_wire
    from storage import MemoryStore

    emb = make_embedder(embedder_name)
    if embedder_name == "real":
        emb = CachedEmbedder(emb)
    d = CACHE_DIR / f"devset-store-{name}-{embedder_name}"
    if rebuild and d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(d / "memory.db", embedder=emb)
    summary = None
    if not (d / "ingested.json").exists():
        log(f"{name}: ingesting (git, decision records, rules, chats)")
        t0 = time.perf_counter()
        summary = to_wire(run(store, root=ws, options={"sources": ["all"]}))
        store.embeddings.embed_pending()
        summary["wallSeconds"] = round(time.perf_counter() - t0, 1)
        (d / "ingested.json").write_text(json.dumps(summary, indent=1))
        log(f"{name}: ingested in {summary['wallSeconds']} s: {summary['added']} memories")
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


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_documents(store: Any) -> list[tuple[str, str]]:
    """(provenance, text) of every piece the tool stored on its own: each conversation passage,
    each decision record, rule section and commit memory (other memories left out)."""
    from predictive.retrieval import _origins

    origins = _origins(store)
    docs: list[tuple[str, str]] = []
    for tool, ext, text in store.conn.execute(
        "SELECT s.source_tool, s.external_id, p.text FROM passages p "
        "JOIN sessions s ON s.id = p.session_id"
    ):
        docs.append((origins.get((tool, ext)) or f"session:{tool}:{ext}", text))
    for src, sid, text in store.conn.execute(
        "SELECT source, source_id, text FROM memories WHERE source IN ('adr', 'rules', 'git') "
        "AND archived = 0 AND superseded_by IS NULL"
    ):
        where = sid or ""
        if src in ("adr", "rules"):
            head, sep, tail = where.rpartition(":")
            where = head if sep and tail.isdigit() else where
        docs.append((where, text))
    return docs


def bm25_search(store: Any, questions: list[dict[str, Any]], k: int) -> list[dict]:
    """Plain BM25Okapi over :func:`bm25_documents`, top ``k`` pieces, no dedupe."""
    docs = bm25_documents(store)
    toks = [Counter(_tokens(t)) for _, t in docs]
    lens = np.asarray([sum(c.values()) for c in toks], dtype=np.float64)
    avg = float(lens.mean()) if len(lens) else 1.0
    df: Counter[str] = Counter()
    for c in toks:
        df.update(c.keys())
    n = len(docs)
    postings: dict[str, list[tuple[int, int]]] = {}
    for i, c in enumerate(toks):
        for t, f in c.items():
            postings.setdefault(t, []).append((i, f))
    out = []
    for q in questions:
        scores = np.zeros(n)
        for t in set(_tokens(q["question"])):
            if t not in df:
                continue
            idf = math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1.0)
            for i, f in postings[t]:
                norm = BM25_K1 * (1 - BM25_B + BM25_B * lens[i] / avg)
                scores[i] += idf * f * (BM25_K1 + 1) / (f + norm)
        top = np.argsort(-scores, kind="stable")[:k]
        out.append({"id": q["id"], "results": [docs[i][0] for i in top if scores[i] > 0]})
    return out


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


def run_set(devset: Path, a: argparse.Namespace) -> dict[str, Any]:
    name = devset.name
    ws = workspace(devset, a.rebuild)
    if a.reingest:
        shutil.rmtree(CACHE_DIR / f"devset-store-{name}-{a.embedder}", ignore_errors=True)
    store, summary = ingest(ws, name, a.embedder, a.rebuild)
    questions = [json.loads(x) for x in (devset / "questions.jsonl").read_text().splitlines()]
    cases = [json.loads(x) for x in (devset / "prefetch.jsonl").read_text().splitlines()]
    tmp = CACHE_DIR / f"devset-out-{name}"
    tmp.mkdir(parents=True, exist_ok=True)
    searched, s_times = ask(store, questions, a.k)
    (tmp / "search.jsonl").write_text("".join(json.dumps(r) + "\n" for r in searched))
    baseline = bm25_search(store, questions, a.k)
    (tmp / "bm25.jsonl").write_text("".join(json.dumps(r) + "\n" for r in baseline))
    runs: list[tuple[str, list[str]]] = [
        ("search", ["--search", str(tmp / "search.jsonl")]),
        ("search_dedupe", ["--search", str(tmp / "search.jsonl"), "--dedupe"]),
        ("bm25", ["--search", str(tmp / "bm25.jsonl")]),
    ]
    p_times: list[float] = []
    if not a.no_prefetch:
        fetched, p_times = prefetch(store, ws, cases)
        (tmp / "prefetch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in fetched))
        runs += [
            ("prefetch@5", ["--prefetch", str(tmp / "prefetch.jsonl"), "--budget", "5"]),
            ("prefetch@10", ["--prefetch", str(tmp / "prefetch.jsonl"), "--budget", "10"]),
        ]
    report: dict[str, Any] = {"set": name, "embedder": a.embedder, "k": a.k}
    for label, args in runs:
        text, parsed = score(devset, args)
        if not a.quiet:
            print(f"== {name} {label}\n{text}")
        report[label] = parsed
    report["search_ms"] = summarize_ms(s_times)
    if p_times:
        report["context_ms"] = summarize_ms(p_times)
    if summary is not None:
        report["ingest"] = summary
    store.close()
    return report


def table(reports: list[dict[str, Any]]) -> str:
    """All sets side by side: R@1/R@5/R@10 overall and per group, tool vs BM25; prefetch."""
    rows = [
        "| set | group | R@1 | R@5 | R@10 | BM25 R@1 / R@5 / R@10 |",
        "|---|---|---|---|---|---|",
    ]
    for r in reports:
        groups = ["overall", *sorted(g for g in r["search"] if g.startswith(("group:", "kind:")))]
        for g in groups:
            s, b = r["search"].get(g, {}), r["bm25"].get(g, {})
            rows.append(
                f"| {r['set']} | {g} | {s.get('R@1', '-')} | {s.get('R@5', '-')} | "
                f"{s.get('R@10', '-')} | {b.get('R@1', '-')} / {b.get('R@5', '-')} / "
                f"{b.get('R@10', '-')} |"
            )
    rows += ["", "| set | prefetch@5 | prefetch@10 | leakage |", "|---|---|---|---|"]
    for r in reports:
        p5, p10 = (
            r.get("prefetch@5", {}).get("overall", {}),
            r.get("prefetch@10", {}).get("overall", {}),
        )
        rows.append(
            f"| {r['set']} | {p5.get('recall(macro)', '-')} | {p10.get('recall(macro)', '-')} | "
            f"{p10.get('leakage', '-')} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--set", action="append", dest="sets", help="a set by name (repeatable)")
    ap.add_argument("--devset", type=Path, help="a set by its folder")
    ap.add_argument("--embedder", default="real", choices=("real", "hashing"))
    ap.add_argument("--rebuild", action="store_true", help="rebuild workspace and store")
    ap.add_argument("--reingest", action="store_true", help="ingest again (vectors cached)")
    ap.add_argument("--no-prefetch", action="store_true", help="search only")
    ap.add_argument("--quiet", action="store_true", help="only the summary table")
    ap.add_argument("--k", type=int, default=10)
    a = ap.parse_args(argv)
    if a.devset is not None:
        sets = [a.devset]
    elif a.sets:
        sets = [DEVSETS / s for s in a.sets]
    else:
        sets = sorted(p for p in DEVSETS.iterdir() if (p / "score.py").exists())
    for s in sets:
        if not (s / "score.py").exists():
            raise SystemExit(f"no dev set at {s}")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    reports = [run_set(s, a) for s in sets]
    print(table(reports))
    for r in reports:
        print(f"{r['set']}: search latency {r['search_ms']}  context latency {r.get('context_ms')}")
        name = f"devset-{r['set']}-{a.embedder}"
        print(f"wrote {write_result(name, r)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
