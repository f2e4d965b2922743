"""Session-first retrieval on LoCoMo: global message search vs seed 004's session-first search.

    python -m bench.bench_sessions --embedder real

One store per LoCoMo sample, built the way the product builds one: ``predictive.ingest.run``
with the sample's sessions (``storage.sources.locomo.read_file``, one Conversation per
session), which saves each session with its deterministic summary, extracts memories and
embeds every message and summary. The build is timed, so it also measures ingest throughput
(messages/s and memories/s as ``ingest.run`` reports them, embedding included), per sample and
in total. Built stores are cached under ``bench/.cache/sessions-<model>/<sample_id>/``; the
throughput of a cached store is the one measured when it was built (its build time says when).

Questions and evidence are cleaned exactly as ``bench.bench_locomo`` does (``clean_evidence``:
split, normalised, missing ids counted; questions without usable evidence are counted and
excluded). Evidence recall@k of one question = the fraction of its evidence turns (dia_ids)
among the top k ranked messages, averaged over questions, overall and per category.

Methods:

- global message search (``search_messages``): hybrid (weighted fusion, the default), keyword
  only, vector only. Asked once with k = 25 and cut at 5 / 10 / 25.
- session first (``session_first``) with default settings and a few variants. The ranked list
  is ``result.hits``. Session first is called once *per k*: the number of sessions it opens is
  ``max(top_sessions, ceil(k / per_session))``, so a k = 25 call opens 5 sessions where the
  default k = 10 opens 3, and cutting a k = 25 call would not measure what a k = 10 call
  returns. For comparison the default is also reported asked once with k = 25 and cut.
  Session recall@k = the fraction of a question's evidence turns whose session is among the
  sessions the k call chose (``result.sessions``).

Precision@k is reported too (evidence turns in the top k / messages returned, at most k):
seed 004 claims session first is more precise. At equal k, a method that finds more evidence
has both the higher recall and the higher precision on that question.

Question vectors are computed once per question and passed as ``query_vector`` in the quality
pass (keyword-only search gets none: a vector would add vector candidates). Latency is a
separate pass: whole calls at k = 10 (neighbours and cross-links at their defaults), query
embedding included, methods interleaved per question, after a warm-up; also search-only
timings with the vector passed in, and the embedding alone.

With every sample (the default) a combined store holding all ten conversations (272 sessions,
5,882 messages) is also built and searched: a per-sample store has only 19-32 sessions, and a
real project's chat history is bigger; it shows how both methods scale. Its vectors are copied
from the per-sample stores (same model, same texts), so its build time is not a throughput.
An even sample of the questions (``--combined-questions``, 400 by default: every n-th in file
order) is run against it, with fewer configurations, to keep the run in minutes. Per-sample
results are written before the combined pass starts.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import shutil
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_locomo import DEFAULT_DATA, usable_questions
from bench.common import (
    CACHE_DIR,
    cache_tag,
    log,
    machine,
    machine_line,
    make_embedder,
    slug,
    summarize_ms,
    table,
    write_result,
)

BUILD_VERSION = 2  # 2: stores carry the session generation (d83ca03)
KS = (5, 10, 25)
LATENCY_K = 10
_EVIDENCE_SESSION = re.compile(r"^D(\d+):")

GLOBAL = [
    ("global hybrid", {"mode": "hybrid"}),
    ("global hybrid, no context", {"mode": "hybrid", "context": False}),
    ("global keyword", {"mode": "keyword"}),
    ("global vector", {"mode": "vector"}),
]
SESSION_FIRST = [
    ("session-first default", {}),
    ("sf top_sessions=2", {"top_sessions": 2}),
    ("sf top_sessions=5", {"top_sessions": 5}),
    ("sf per_session=10", {"per_session": 10}),
    ("sf session_weight=0", {"session_weight": 0.0}),
    ("sf session_weight=0.5", {"session_weight": 0.5}),
]
CUT_NAME = "session-first default (one k=25 call, cut)"
# the combined store: fewer configurations
COMBINED_GLOBAL = GLOBAL
COMBINED_SF = [SESSION_FIRST[0], SESSION_FIRST[2], SESSION_FIRST[3]]
# latency: (label, configuration, query vector given)
LATENCY_CALLS = [
    ("global hybrid", "global hybrid", False),
    ("global hybrid, no context", "global hybrid, no context", False),
    ("global keyword", "global keyword", False),
    ("global vector", "global vector", False),
    ("session-first default", "session-first default", False),
    ("sf top_sessions=5", "sf top_sessions=5", False),
    ("sf per_session=10", "sf per_session=10", False),
    ("global hybrid (search only)", "global hybrid", True),
    ("session-first default (search only)", "session-first default", True),
]
COMBINED_LATENCY = [
    c
    for c in LATENCY_CALLS
    if c[1] in ("global hybrid", "session-first default", "sf top_sessions=5")
]


# ---- data ----------------------------------------------------------------------------------


def read_samples(path: Path) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Conversations grouped by sample id (file order), and the reader's skip log."""
    from storage.sources.locomo import read_file
    from storage.sources.records import SkipLog

    skips = SkipLog()
    by_sample: dict[str, list[Any]] = defaultdict(list)
    for conv in read_file(path, skips=skips):
        by_sample[conv.metadata["sample_id"]].append(conv)
    return dict(by_sample), skips.as_dict()


def sample_questions(
    sample: dict[str, Any],
    convs: list[Any],
    issues: Counter,
    examples: dict[str, list[str]],
) -> list[dict[str, Any]]:
    """The sample's questions with usable evidence: text, category, evidence keys."""
    sid = sample["sample_id"]
    known = {m.metadata.get("dia_id") for c in convs for m in c.messages}
    out = []
    issues["questions_total"] += len(sample["qa"])
    for qa, ev in usable_questions(sample, known, issues, examples):
        out.append(
            {
                "sample": sid,
                "question": qa["question"],
                "category": int(qa["category"]),
                "evidence": {f"{sid}|{d}" for d in ev},
                "evidence_sessions": {
                    f"{sid}|{d}": f"{sid}:session_{_EVIDENCE_SESSION.match(d).group(1)}" for d in ev
                },
            }
        )
    return out


# ---- stores --------------------------------------------------------------------------------


class ReuseEmbedder:
    """The real model's identity, with vectors already computed for the same texts reused."""

    def __init__(self, inner: Any, known: dict[str, np.ndarray]) -> None:
        self.inner = inner
        self.known = known
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.known]
        if missing:
            self.misses += len(missing)
            for t, v in zip(missing, self.inner.embed(missing)):
                self.known[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self.known[t] for t in texts]).astype(np.float32)


def known_vectors(paths: list[Path], model_id: str) -> dict[str, np.ndarray]:
    """Text -> vector of every message and session summary in these stores."""
    import apsw

    out: dict[str, np.ndarray] = {}
    for p in paths:
        conn = apsw.Connection(str(p / "memories.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            for sql in (
                "SELECT text, embedding FROM messages WHERE model_id = ?",
                "SELECT coalesce(title, '') || '. ' || summary, embedding FROM sessions "
                "WHERE summary IS NOT NULL AND model_id = ?",
            ):
                for text, blob in conn.execute(sql, (model_id,)):
                    out[text] = np.frombuffer(blob, dtype="<f4").copy()
        finally:
            conn.close()
    return out


def build_store(
    final: Path, label: str, convs: list[Any], embedder: Any, *, rebuild: bool = False
) -> tuple[Path, dict[str, Any]]:
    """A store of these conversations built with ``predictive.ingest.run`` (cached)."""
    from predictive import ingest
    from server.convert import to_wire
    from storage import MemoryStore
    from storage.sessions import SessionStore

    record_path = final / "build.json"
    if record_path.exists() and not rebuild:
        record = json.loads(record_path.read_text())
        if record.get("build_version") == BUILD_VERSION:
            record["cached"] = True
            return final, record
    partial = final.with_name(final.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    store = MemoryStore(partial / "memories.db", embedder=embedder)
    marks: dict[str, float] = {}

    def progress(done: int, total: int, message: str) -> None:
        if message.startswith("chats:") and message.endswith("conversations"):
            marks["saved"] = time.perf_counter()

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    summary = to_wire(
        ingest.run(
            store,
            root=partial,
            options={"sources": ["chats"]},
            conversations=convs,
            progress=progress,
        )
    )
    wall = time.perf_counter() - t0
    vi = store.vectors()
    if vi is not None:
        vi.save(force=True)
    n_sessions, n_messages = SessionStore(store).count()
    memories = store.count()
    store.close()
    chats = summary["sources"]["chats"]
    if chats.get("error"):
        raise SystemExit(f"ingesting {label} failed: {chats['error']}")
    saved_s = marks.get("saved", t0) - t0
    record = {
        "label": label,
        "build_version": BUILD_VERSION,
        "model_id": embedder.model_id,
        "sessions": n_sessions,
        "messages": n_messages,
        "memories": memories,
        "memories_added": summary["added"],
        "candidates_dropped": summary["dropped"],
        "seconds": summary["seconds"],
        "wall_s": round(wall, 3),
        "save_extract_s": round(saved_s, 3),
        "embed_messages_s": round(wall - saved_s, 3),
        "messagesPerSecond": summary["messagesPerSecond"],
        "memoriesPerSecond": summary["memoriesPerSecond"],
        "skipped": summary["skipped"],
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_avg_at_start": round(load0, 2),
        "machine": machine_line(),
    }
    if isinstance(embedder, ReuseEmbedder):
        record["vectors_reused"] = True
        record["texts_embedded_for_real"] = embedder.misses
    (partial / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)
    record["cached"] = False
    return final, record


def store_keys(sessions: Any) -> tuple[dict[int, str], dict[int, str]]:
    """message id -> "<sample>|<dia_id>", session id -> "<sample>:session_<n>"."""
    conn = sessions.store.conn
    sess = {sid: ext for sid, ext in conn.execute("SELECT id, external_id FROM sessions")}
    msgs = {}
    for mid, sid, meta in conn.execute("SELECT id, session_id, metadata FROM messages"):
        sample = sess[sid].rsplit(":session_", 1)[0]
        msgs[mid] = f"{sample}|{json.loads(meta or '{}').get('dia_id')}"
    return msgs, sess


# ---- evaluation ----------------------------------------------------------------------------


class Scores:
    """Per configuration: per question rows of (category, {metric: value})."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[int, dict[str, float]]]] = defaultdict(list)

    def add(self, name: str, cat: int, values: dict[str, float]) -> None:
        self.rows[name].append((cat, values))

    def summary(self, cats: list[int]) -> dict[str, Any]:
        def mean(xs: list[float]) -> float:
            return round(sum(xs) / len(xs), 4) if xs else float("nan")

        out = {}
        for name, rows in self.rows.items():
            metrics = list(rows[0][1]) if rows else []
            out[name] = {
                "questions": len(rows),
                "overall": {m: mean([v[m] for _, v in rows]) for m in metrics},
                "by_category": {
                    str(c): {m: mean([v[m] for cc, v in rows if cc == c]) for m in metrics}
                    for c in cats
                },
            }
        return out


def ranked_metrics(keys: list[str], q: dict[str, Any], ks: tuple[int, ...]) -> dict[str, float]:
    ev = q["evidence"]
    out = {}
    for k in ks:
        top = keys[:k]
        found = len(set(top) & ev)
        out[f"recall@{k}"] = found / len(ev)
        out[f"precision@{k}"] = found / len(top) if top else 0.0
    return out


def score_store(
    sessions: Any,
    questions: list[dict[str, Any]],
    qvecs: np.ndarray,
    global_cfgs: list[tuple[str, dict[str, Any]]],
    sf_cfgs: list[tuple[str, dict[str, Any]]],
    scores: Scores,
) -> None:
    from storage.session_search import search_messages, session_first

    msg_key, sess_key = store_keys(sessions)
    kmax = max(KS)
    for q, qv in zip(questions, qvecs):
        cat = q["category"]
        for name, kw in global_cfgs:
            vec = None if kw["mode"] == "keyword" else qv
            hits = search_messages(sessions, q["question"], k=kmax, query_vector=vec, **kw)
            keys = [msg_key[h.message.id] for h in hits]
            vals = ranked_metrics(keys, q, KS)
            top_sessions = {sess_key[h.message.session_id] for h in hits[:LATENCY_K]}
            vals["evidence sessions in top-10 hits"] = _session_recall(q, top_sessions)
            vals["returned@25"] = len(hits)
            scores.add(name, cat, vals)
        for name, kw in sf_cfgs:
            vals = {}
            for k in KS:
                res = session_first(sessions, q["question"], k=k, query_vector=qv, **kw)
                keys = [msg_key[h.message.id] for h in res.hits]
                vals.update(ranked_metrics(keys, q, (k,)))
                chosen = {sess_key[s.session.id] for s in res.sessions}
                vals[f"session recall@{k}"] = _session_recall(q, chosen)
                vals[f"sessions opened@{k}"] = len(res.sessions)
                vals[f"returned@{k}"] = len(res.hits)
                if k == LATENCY_K:
                    vals["evidence sessions in top-10 hits"] = _session_recall(
                        q, {sess_key[h.message.session_id] for h in res.hits}
                    )
                if k == kmax and name == SESSION_FIRST[0][0]:
                    cut = ranked_metrics(keys, q, KS)
                    cut[f"session recall@{k}"] = vals[f"session recall@{k}"]
                    cut[f"sessions opened@{k}"] = len(res.sessions)
                    scores.add(CUT_NAME, cat, cut)
            scores.add(name, cat, vals)


def _session_recall(q: dict[str, Any], chosen: set[str]) -> float:
    """Fraction of the evidence turns whose session is in ``chosen``."""
    return sum(1 for s in q["evidence_sessions"].values() if s in chosen) / len(q["evidence"])


def time_store(
    sessions: Any,
    questions: list[dict[str, Any]],
    qvecs: np.ndarray,
    calls: list[tuple[str, str, bool]],
    repeat: int,
    lat: dict[str, list[float]],
) -> None:
    """Whole calls at k=10 (query embedding included, unless the label says search only),
    interleaved per question, after a warm-up."""
    from storage.session_search import search_messages, session_first

    cfg = dict(GLOBAL + SESSION_FIRST)
    embedder = sessions.store.embedder

    def call(name: str, q: str, qv: Any) -> None:
        kw = cfg[name]
        if name.startswith("global"):
            if kw["mode"] == "keyword":
                qv = None
            search_messages(sessions, q, k=LATENCY_K, query_vector=qv, **kw)
        else:
            session_first(sessions, q, k=LATENCY_K, query_vector=qv, **kw)

    for q in questions[:5]:  # warm-up
        for _, name, _ in calls:
            call(name, q["question"], None)
    for _ in range(repeat):
        for q, qv in zip(questions, qvecs):
            text = q["question"]
            for label, name, search_only in calls:
                t0 = time.perf_counter()
                call(name, text, qv if search_only else None)
                lat[label].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            embedder.embed([text])
            lat["query embedding only"].append(time.perf_counter() - t0)


def _git_head() -> str | None:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "storage", "predictive"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.stdout.strip() + ("+dirty" if dirty else "")


# ---- the run -------------------------------------------------------------------------------


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from storage import MemoryStore
    from storage.sessions import SessionStore

    data_path = Path(args.data)
    data = json.loads(data_path.read_text())
    if args.conversations:
        data = data[: args.conversations]
    by_sample, reader_skips = read_samples(data_path)
    embedder = make_embedder(args.embedder)
    root = CACHE_DIR / f"sessions-{slug(cache_tag(embedder))}"

    issues: Counter = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    scores = Scores()
    lat: dict[str, list[float]] = defaultdict(list)
    builds = []
    all_questions: list[dict[str, Any]] = []
    all_qvecs: list[np.ndarray] = []
    paths = []
    load_start = [round(x, 2) for x in os.getloadavg()]
    t_start = time.perf_counter()
    for sample in data:
        sid = sample["sample_id"]
        convs = by_sample[sid]
        t_build = time.perf_counter()
        path, record = build_store(root / sid, sid, convs, embedder, rebuild=args.rebuild)
        paths.append(path)
        if not record["cached"]:
            log(
                f"built {sid}: {record['sessions']} sessions, {record['messages']} messages, "
                f"{record['memories_added']} memories in {time.perf_counter() - t_build:.1f} s "
                f"({record['messagesPerSecond']} messages/s)"
            )
        builds.append(record)
        questions = sample_questions(sample, convs, issues, examples)
        qvecs = embedder.embed([q["question"] for q in questions])
        all_questions += questions
        all_qvecs += list(qvecs)
        store = MemoryStore(path / "memories.db", embedder=embedder)
        sessions = SessionStore(store)
        score_store(sessions, questions, qvecs, GLOBAL, SESSION_FIRST, scores)
        time_store(sessions, questions, qvecs, LATENCY_CALLS, args.repeat, lat)
        store.close()
        log(f"{sid}: {len(questions)} questions scored and timed")

    combined: dict[str, Any] | None = None
    payload = functools.partial(
        _payload,
        args,
        data_path,
        embedder,
        reader_skips,
        issues,
        examples,
        scores,
        lat,
        builds,
        all_questions,
        load_start,
        t_start,
    )
    partial = payload(None)
    write_result(args.name or f"sessions-{args.embedder}", partial)
    if args.combined_questions and len(data) > 1:
        stride = max(1, math.ceil(len(all_questions) / args.combined_questions))
        picked = list(range(0, len(all_questions), stride))
        tag = f"combined-{len(data)}"
        reuse = ReuseEmbedder(embedder, known_vectors(paths, embedder.model_id))
        convs = [c for s in data for c in by_sample[s["sample_id"]]]
        t_build = time.perf_counter()
        path, record = build_store(root / tag, tag, convs, reuse, rebuild=args.rebuild)
        if not record["cached"]:
            log(f"built the combined store in {time.perf_counter() - t_build:.1f} s")
        c_scores = Scores()
        c_lat: dict[str, list[float]] = defaultdict(list)
        store = MemoryStore(path / "memories.db", embedder=embedder)
        sessions = SessionStore(store)
        c_questions = [all_questions[i] for i in picked]
        qv = np.stack([all_qvecs[i] for i in picked])
        score_store(sessions, c_questions, qv, COMBINED_GLOBAL, COMBINED_SF, c_scores)
        time_store(sessions, c_questions, qv, COMBINED_LATENCY, args.repeat, c_lat)
        store.close()
        log("combined store: scored and timed")
        cats = sorted({q["category"] for q in c_questions})
        combined = {
            "questions": len(c_questions),
            "question_sample": f"every {stride}th scored question, in file order",
            "questions_by_category": dict(
                sorted(Counter(str(q["category"]) for q in c_questions).items())
            ),
            "build": record,
            "scores": c_scores.summary(cats),
            "latency": {m: summarize_ms(v) for m, v in c_lat.items()},
        }

    return payload(combined)


def _payload(
    args: argparse.Namespace,
    data_path: Path,
    embedder: Any,
    reader_skips: dict[str, Any],
    issues: Counter,
    examples: dict[str, list[str]],
    scores: Scores,
    lat: dict[str, list[float]],
    builds: list[dict[str, Any]],
    all_questions: list[dict[str, Any]],
    load_start: list[float],
    t_start: float,
    combined: dict[str, Any] | None,
) -> dict[str, Any]:
    cats = sorted({q["category"] for q in all_questions})
    cat_n = Counter(q["category"] for q in all_questions)
    fresh = [b for b in builds if not b.get("cached")]
    total_s = sum(b["seconds"] for b in builds)
    total_msgs = sum(b["messages"] for b in builds)
    total_mems = sum(b["memories_added"] for b in builds)
    return {
        "data": str(data_path),
        "embedder": args.embedder,
        "model_id": embedder.model_id,
        "conversations": len(builds),
        "sessions": sum(b["sessions"] for b in builds),
        "messages": total_msgs,
        "questions_total": issues.get("questions_total", 0),
        "questions_scored": len(all_questions),
        "questions_by_category": {str(c): cat_n[c] for c in cats},
        "data_issues": {k: v for k, v in issues.items() if k != "questions_total"},
        "data_issue_examples": dict(examples),
        "reader_skips": reader_skips,
        "ks": list(KS),
        "latency_k": LATENCY_K,
        "repeat": args.repeat,
        "ingest": {
            "per_sample": builds,
            "total": {
                "sessions": sum(b["sessions"] for b in builds),
                "messages": total_msgs,
                "memories_added": total_mems,
                "seconds": round(total_s, 2),
                "save_extract_s": round(sum(b["save_extract_s"] for b in builds), 2),
                "embed_messages_s": round(sum(b["embed_messages_s"] for b in builds), 2),
                "messagesPerSecond": round(total_msgs / total_s, 1) if total_s else None,
                "memoriesPerSecond": round(total_mems / total_s, 2) if total_s else None,
                "built_this_run": len(fresh),
            },
        },
        "scores": scores.summary(cats),
        "latency": {m: summarize_ms(v) for m, v in lat.items()},
        "storage_commit": _git_head(),
        "combined": combined,
        "load_avg_start": load_start,
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "run_s": round(time.perf_counter() - t_start, 1),
    }


# ---- the report ----------------------------------------------------------------------------


def _speed(a: float, b: float) -> str:
    """How fast b is relative to a (a / b)."""
    r = a / b
    return f"{r:.2f}x as fast" if r >= 1 else f"{1 / r:.2f}x slower"


def verdict(latency: dict[str, Any], scores: dict[str, Any], where: str) -> str:
    g, s = latency["global hybrid"], latency["session-first default"]
    gs = latency["global hybrid (search only)"]
    ss = latency["session-first default (search only)"]
    go, so = scores["global hybrid"]["overall"], scores["session-first default"]["overall"]
    return (
        f"Verdict ({where}): seed 004 claims session first is more precise than global search "
        f"and 5x faster. Speed at k=10, p50, query embedding included: global hybrid "
        f"{g['p50_ms']:.1f} ms, session first {s['p50_ms']:.1f} ms -> session first is "
        f"{_speed(g['p50_ms'], s['p50_ms'])}; search only (vector given) {gs['p50_ms']:.2f} vs "
        f"{ss['p50_ms']:.2f} ms ({_speed(gs['p50_ms'], ss['p50_ms'])}). "
        f"Precision@10 {so['precision@10']:.3f} vs {go['precision@10']:.3f}, recall@5 "
        f"{so['recall@5']:.3f} vs {go['recall@5']:.3f}, recall@10 {so['recall@10']:.3f} vs "
        f"{go['recall@10']:.3f}, recall@25 {so['recall@25']:.3f} vs {go['recall@25']:.3f}. "
        + (
            "Precision@10: session first is ahead"
            if so["precision@10"] > go["precision@10"]
            else "Precision@10: the claim does not hold"
        )
        + "; speed: "
        + (
            "the 5x claim holds."
            if g["p50_ms"] / s["p50_ms"] >= 5
            else "the 5x claim does not hold."
        )
    )


def main_table(scores: dict[str, Any], latency: dict[str, Any]) -> str:
    rows = []
    for name, v in scores.items():
        o = v["overall"]
        lt = latency.get(name, {})
        rows.append(
            [
                name,
                o["recall@5"],
                o["recall@10"],
                o["recall@25"],
                o["precision@10"],
                o.get("session recall@10"),
                o.get("sessions opened@10"),
                o.get("evidence sessions in top-10 hits"),
                lt.get("p50_ms"),
                lt.get("p95_ms"),
            ]
        )
    return table(
        [
            "method",
            "R@5",
            "R@10",
            "R@25",
            "P@10",
            "sess R@10",
            "sessions@10",
            "ev. sessions in top-10 hits",
            "p50 ms",
            "p95 ms",
        ],
        rows,
    )


def print_report(res: dict[str, Any]) -> None:
    m = res["machine"]
    print(f"\nMachine: {machine_line(m)}")
    print(
        f"Load average (1/5/15 min): {res['load_avg_start']} at the start, "
        f"{res['load_avg_end']} at the end; run took {res['run_s']} s"
    )
    print(
        f"LoCoMo: {res['conversations']} conversations, {res['sessions']} sessions, "
        f"{res['messages']} messages; {res['questions_scored']} of {res['questions_total']} "
        f"questions scored; embedder {res['model_id']}"
    )
    print(f"Data issues: {res['data_issues']}; reader skips: {res['reader_skips']['total']}")
    print(f"Storage code at commit {res['storage_commit']}\n")

    ing = res["ingest"]
    print("Ingest (predictive.ingest.run, chats only; embedding included)")
    rows = [
        [
            b["label"],
            b["sessions"],
            b["messages"],
            b["memories_added"],
            b["seconds"],
            b["save_extract_s"],
            b["embed_messages_s"],
            b["messagesPerSecond"],
            b["memoriesPerSecond"],
            "cached " + b["built_at"] if b.get("cached") else "now",
        ]
        for b in ing["per_sample"]
    ]
    t = ing["total"]
    rows.append(
        [
            "total",
            t["sessions"],
            t["messages"],
            t["memories_added"],
            t["seconds"],
            t["save_extract_s"],
            t["embed_messages_s"],
            t["messagesPerSecond"],
            t["memoriesPerSecond"],
            f"{t['built_this_run']} built now",
        ]
    )
    print(
        table(
            [
                "sample",
                "sessions",
                "messages",
                "memories",
                "s",
                "save+extract s",
                "embed msgs s",
                "messages/s",
                "memories/s",
                "built",
            ],
            rows,
        )
    )

    print(
        "\nPer-sample stores. Global search: one k=25 call cut at 5/10/25. Session first: one "
        "call per k (the sessions it opens depend on k); its cut row is one k=25 call. "
        "Latency: whole calls at k=10, query embedding included."
    )
    print(main_table(res["scores"], res["latency"]))
    for k in res["ks"]:
        cats = list(res["questions_by_category"])
        print(f"\nRecall@{k} by category (questions per category in the header)")
        print(
            table(
                ["method", *[f"cat {c} (n={res['questions_by_category'][c]})" for c in cats]],
                [
                    [n, *[v["by_category"][c][f"recall@{k}"] for c in cats]]
                    for n, v in res["scores"].items()
                ],
            )
        )
    print("\nLatency, ms (k=10)")
    print(
        table(
            ["call", "n", "p50", "p95", "mean"],
            [
                [n, v["n"], v["p50_ms"], v["p95_ms"], v["mean_ms"]]
                for n, v in res["latency"].items()
            ],
        )
    )
    print("\n" + verdict(res["latency"], res["scores"], "per-sample stores"))
    c = res.get("combined")
    if c:
        b = c["build"]
        print(
            f"\nCombined store: {b['sessions']} sessions, {b['messages']} messages (vectors "
            f"reused from the per-sample stores); {c['questions']} questions "
            f"({c['question_sample']}) against it"
        )
        print(main_table(c["scores"], c["latency"]))
        print("\nLatency, ms (k=10), combined store")
        print(
            table(
                ["call", "n", "p50", "p95", "mean"],
                [
                    [n, v["n"], v["p50_ms"], v["p95_ms"], v["mean_ms"]]
                    for n, v in c["latency"].items()
                ],
            )
        )
        print("\n" + verdict(c["latency"], c["scores"], "combined store"))
    print("\n" + recommendation(res))


def recommendation(res: dict[str, Any]) -> str:
    """Is a session-first variant clearly better than the default at k=10 (both stores)?"""
    base = res["scores"]["session-first default"]["overall"]["recall@10"]
    base_lat = res["latency"]["session-first default"]["p50_ms"]
    g_lat = res["latency"]["global hybrid"]["p50_ms"]
    lines = ["Session-first variants vs the default, recall@10 (per-sample / combined):"]
    for name, _ in SESSION_FIRST[1:]:
        r = res["scores"][name]["overall"]["recall@10"]
        cm = (res.get("combined") or {}).get("scores", {}).get(name)
        cb = (res.get("combined") or {}).get("scores", {}).get("session-first default")
        comb = (
            f" / {cm['overall']['recall@10']:.3f} (default {cb['overall']['recall@10']:.3f})"
            if cm and cb
            else ""
        )
        lt = res["latency"].get(name, {}).get("p50_ms")
        lines.append(
            f"  {name}: {r:.3f} (default {base:.3f}, {r - base:+.3f}){comb}"
            + (f"; p50 {lt:.1f} ms (default {base_lat:.1f}, global {g_lat:.1f})" if lt else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--embedder", default="real", choices=("real", "hashing"))
    ap.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
    ap.add_argument("--repeat", type=int, default=1, help="latency passes over the questions")
    ap.add_argument(
        "--combined-questions",
        type=int,
        default=400,
        help="questions (an even sample) run against the store of every conversation (0 = skip)",
    )
    ap.add_argument("--rebuild", action="store_true", help="ignore cached stores")
    ap.add_argument("--name", default=None, help="result name (default sessions-<embedder>)")
    args = ap.parse_args(argv)
    res = evaluate(args)
    out = write_result(args.name or f"sessions-{args.embedder}", res)
    res["machine"] = machine()
    print_report(res)
    print(f"\nresults: {out}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
