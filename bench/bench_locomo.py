"""Retrieval quality on LoCoMo: evidence recall@k of keyword, vector and hybrid search.

    python -m bench.bench_locomo --embedder real

Every turn of a conversation becomes a memory (one store per conversation): the text is
``"Speaker: text"``, plus ``[shared an image: <blip_caption>]`` when the turn carries an
image caption; ``created_at`` is the session's date and time (turns a minute apart). Every
question is a query against its own conversation's store. The score of one question at k is
the fraction of its evidence turns found among the top k results; it is averaged over the
questions, overall and per category (1–5, reported by number: the upstream labels are
disputed; 5 is adversarial).

Data problems are repaired or counted, never dropped silently: evidence strings holding
several ids (``"D8:6; D9:17"``) are split, ``"D:11:26"`` and ``"D30:05"`` are normalised,
unparseable ids and ids naming no turn are counted, and questions left with no usable evidence
are counted and excluded from the averages.

A turn's ``source_id`` is ``<conversation>/session_<n>#<turn index>``, the key chat memories
carry (``<session>#<message index>``), so search reads it as a message of that session's
thread and scores it with its neighbouring turns (``storage/threads.py``).

Configurations: keyword only (FTS5 bm25), vector only, hybrid with reciprocal rank fusion,
hybrid with weighted fusion at several alphas (alpha = weight of the vector similarity), and
weighted hybrid (first alpha) with the thread context turned off (keyword, vector and RRF
searches have none). Each
k is its own search call with the store's default candidate pool. Question vectors are computed
once per question and passed to ``search``; a separate pass times whole searches, query
embedding included.

Built stores are cached under ``bench/.cache/locomo-<model>-threads/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import (
    CACHE_DIR,
    log,
    machine,
    machine_line,
    make_embedder,
    slug,
    summarize_ms,
    table,
    write_result,
)

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
_ID = re.compile(r"^D:?(\d+):0*(\d+)$")
_SESSION = re.compile(r"^session_(\d+)$")
BUILD = "threads"
"""Stores built before turns were keyed as thread messages live in another cache folder."""


# ---- data ----------------------------------------------------------------------------------


def parse_when(text: str) -> float:
    """``"1:56 pm on 8 May, 2023"`` -> epoch seconds (UTC)."""
    when = dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return when.replace(tzinfo=dt.timezone.utc).timestamp()


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shared an image: {caption}]"
    return text


def conversation_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The turns in order, each with dia_id, text and created_at."""
    conv = sample["conversation"]
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := _SESSION.match(key)) and conv[key]
    )
    out = []
    for number, key in sessions:
        start = parse_when(conv[f"{key}_date_time"])
        for i, turn in enumerate(conv[key]):
            out.append(
                {
                    "dia_id": turn["dia_id"],
                    "text": turn_text(turn),
                    "created_at": start + 60.0 * i,
                    "session": number,
                    "index": i,
                }
            )
    return out


def turn_source_id(sample_id: str, turn: dict[str, Any]) -> str:
    """``<conversation>/session_<n>#<turn index>``: the turn is message ``index`` of that
    session's thread, the way chat memories are keyed (``<session>#<message index>``)."""
    return f"{sample_id}/session_{turn['session']}#{turn['index']}"


def clean_evidence(
    raw: list[str], known: set[str], issues: Counter, examples: dict[str, list[str]]
) -> list[str]:
    """Split, normalise and check a question's evidence ids; count every repair and loss."""
    out: list[str] = []
    for item in raw:
        parts = [p for p in re.split(r"[;,\s]+", item.strip()) if p]
        if len(parts) != 1:
            issues["evidence_strings_split"] += 1
            examples["split"].append(item)
        for part in parts:
            m = _ID.match(part)
            if not m:
                issues["evidence_ids_unparseable"] += 1
                examples["unparseable"].append(part)
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if norm != part:
                issues["evidence_ids_normalised"] += 1
                examples["normalised"].append(f"{part} -> {norm}")
            if norm not in known:
                issues["evidence_ids_missing_turn"] += 1
                examples["missing"].append(norm)
                continue
            if norm not in out:
                out.append(norm)
    return out


def usable_questions(
    sample: dict[str, Any],
    known: set[str],
    issues: Counter,
    examples: dict[str, list[str]],
) -> Iterator[tuple[dict[str, Any], list[str]]]:
    """The sample's questions with their cleaned evidence; the ones left without usable
    evidence are counted (and listed in ``examples``), not scored."""
    for qa in sample["qa"]:
        raw = qa.get("evidence") or []
        if not raw:
            issues["questions_without_evidence"] += 1
        ev = clean_evidence(raw, known, issues, examples)
        if raw and not ev:
            issues["questions_evidence_all_unusable"] += 1
        if not ev:
            examples["excluded_questions"].append(f"{sample['sample_id']}: {qa['question']}")
            continue
        yield qa, ev


# ---- stores --------------------------------------------------------------------------------


def build_conversation(
    sample: dict[str, Any], turns: list[dict[str, Any]], embedder: Any, root: Path
) -> tuple[Path, dict[str, Any]]:
    """The conversation's store (cached) and its record: dia_id -> memory id, duplicates."""
    from storage import Kind, MemoryStore, NewMemory

    final = root / sample["sample_id"]
    record_path = final / "build.json"
    if record_path.exists():
        return final, json.loads(record_path.read_text())
    partial = final.with_name(final.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    mems = [
        NewMemory(
            text=t["text"],
            kind=Kind.EPISODE,
            source="locomo",
            source_id=turn_source_id(sample["sample_id"], t),
            created_at=t["created_at"],
            metadata={"dia_id": t["dia_id"], "session": t["session"]},
        )
        for t in turns
    ]
    store = MemoryStore(partial / "memories.db", embedder=embedder)
    t0 = time.perf_counter()
    results = []
    for i in range(0, len(mems), 256):
        results += store.add_many(mems[i : i + 256])
    seconds = time.perf_counter() - t0
    vi = store.vectors()
    if vi is not None:
        vi.save(force=True)
    store.close()
    dia_to_id = {t["dia_id"]: r.id for t, r in zip(turns, results)}
    record = {
        "sample_id": sample["sample_id"],
        "turns": len(turns),
        "memories": len({r.id for r in results}),
        "deduplicated_turns": sum(1 for r in results if not r.created),
        "insert_s": round(seconds, 2),
        "model_id": getattr(embedder, "model_id", None),
        "dia_to_id": dia_to_id,
    }
    (partial / "build.json").write_text(json.dumps(record))
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)
    return final, record


# ---- evaluation ----------------------------------------------------------------------------


def configs(alphas: list[float]) -> list[tuple[str, dict[str, Any]]]:
    out = [
        ("keyword", {"mode": "keyword"}),
        ("vector", {"mode": "vector"}),
        ("hybrid rrf", {"mode": "hybrid", "fusion": "rrf"}),
    ]
    out += [
        (f"hybrid weighted a={a}", {"mode": "hybrid", "fusion": "weighted", "alpha": a})
        for a in alphas
    ]
    out += [
        (
            f"hybrid weighted a={alphas[0] if alphas else 0.3}, no context",
            {
                "mode": "hybrid",
                "fusion": "weighted",
                "alpha": alphas[0] if alphas else 0.3,
                "context": False,
            },
        ),
    ]
    return out


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from storage import MemoryStore, search

    data = json.loads(Path(args.data).read_text())
    if args.conversations:
        data = data[: args.conversations]
    embedder = make_embedder(args.embedder)
    root = CACHE_DIR / f"locomo-{slug(embedder.model_id)}-{BUILD}"
    ks = [int(k) for k in args.ks.split(",")]
    alphas = [float(a) for a in args.alphas.split(",") if a]
    cfgs = configs(alphas)

    issues: Counter = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    # per config, per k: list of (category, recall)
    scores: dict[str, dict[int, list[tuple[int, float]]]] = {
        name: {k: [] for k in ks} for name, _ in cfgs
    }
    latencies: dict[str, list[float]] = {
        "hybrid": [],
        "hybrid, no context": [],
        "keyword": [],
        "vector": [],
    }
    embed_lat: list[float] = []
    builds = []
    totals = Counter()
    cat_questions: Counter = Counter()
    for sample in data:
        turns = conversation_turns(sample)
        known = {t["dia_id"] for t in turns}
        totals["turns"] += len(turns)
        t_build = time.perf_counter()
        path, record = build_conversation(sample, turns, embedder, root)
        if time.perf_counter() - t_build > 1:
            log(f"built {sample['sample_id']}: {record['turns']} turns in {record['insert_s']} s")
        builds.append({k: v for k, v in record.items() if k != "dia_to_id"})
        id_to_dias: dict[int, set[str]] = defaultdict(set)
        for dia, mid in record["dia_to_id"].items():
            id_to_dias[mid].add(dia)
        questions = []
        totals["questions"] += len(sample["qa"])
        for qa, ev in usable_questions(sample, known, issues, examples):
            questions.append((qa["question"], int(qa["category"]), set(ev)))
            cat_questions[int(qa["category"])] += 1
        store = MemoryStore(path / "memories.db", embedder=embedder)
        qvecs = embedder.embed([q for q, _, _ in questions]) if questions else []
        for (question, cat, ev), qv in zip(questions, qvecs):
            for name, kw in cfgs:
                for k in ks:
                    hits = search(store, question, k=k, query_vector=qv, **kw)
                    found = set()
                    for h in hits:
                        found |= id_to_dias.get(h.memory.id, set())
                    scores[name][k].append((cat, len(found & ev) / len(ev)))
        # latency: whole searches, query embedding included (warm after the first few)
        for question, _, _ in questions[:5]:
            search(store, question, k=10)
        for question, _, _ in questions:
            for name in latencies:
                mode, _, bare = name.partition(", ")
                t0 = time.perf_counter()
                search(store, question, k=10, mode=mode, context=not bare)
                latencies[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            embedder.embed([question])
            embed_lat.append(time.perf_counter() - t0)
        store.close()
        log(f"{sample['sample_id']}: {len(questions)} questions scored")

    def mean(xs: list[float]) -> float:
        return round(sum(xs) / len(xs), 4) if xs else float("nan")

    results: dict[str, Any] = {}
    cats = sorted(cat_questions)
    for name, _ in cfgs:
        results[name] = {
            "overall": {f"recall@{k}": mean([r for _, r in scores[name][k]]) for k in ks},
            "by_category": {
                str(c): {
                    f"recall@{k}": mean([r for cc, r in scores[name][k] if cc == c]) for k in ks
                }
                for c in cats
            },
        }
    return {
        "data": str(args.data),
        "embedder": args.embedder,
        "model_id": embedder.model_id,
        "conversations": len(data),
        "turns": totals["turns"],
        "questions_total": totals["questions"],
        "questions_scored": sum(cat_questions.values()),
        "questions_by_category": {str(c): cat_questions[c] for c in cats},
        "data_issues": dict(issues),
        "data_issue_examples": {k: v for k, v in examples.items()},
        "memories": sum(b["memories"] for b in builds),
        "deduplicated_turns": sum(b["deduplicated_turns"] for b in builds),
        "stores": builds,
        "ks": ks,
        "recall": results,
        "latency": {m: summarize_ms(v) for m, v in latencies.items()},
        "query_embedding": summarize_ms(embed_lat),
    }


def print_report(res: dict[str, Any]) -> None:
    print(f"\nMachine: {machine_line(res['machine'])}")
    print(
        f"LoCoMo: {res['conversations']} conversations, {res['turns']} turns "
        f"({res['memories']} memories; {res['deduplicated_turns']} turns identical to an earlier "
        f"turn were deduplicated into it), {res['questions_scored']} of "
        f"{res['questions_total']} questions scored; embedder {res['model_id']}"
    )
    print(f"Data issues: {res['data_issues']}\n")
    ks = res["ks"]
    print("Evidence recall@k, all questions")
    print(
        table(
            ["configuration", *[f"R@{k}" for k in ks]],
            [[n, *[v["overall"][f"recall@{k}"] for k in ks]] for n, v in res["recall"].items()],
        )
    )
    cats = list(res["questions_by_category"])
    for k in ks:
        print(f"\nEvidence recall@{k} by category (questions per category in the header)")
        print(
            table(
                [
                    "configuration",
                    *[f"cat {c} (n={res['questions_by_category'][c]})" for c in cats],
                ],
                [
                    [n, *[v["by_category"][c][f"recall@{k}"] for c in cats]]
                    for n, v in res["recall"].items()
                ],
            )
        )
    print("\nSearch latency on these stores (k=10, query embedding included), ms")
    print(
        table(
            ["mode", "p50", "p95", "mean"],
            [
                [m, v["p50_ms"], v["p95_ms"], v["mean_ms"]]
                for m, v in [*res["latency"].items(), ("embedding only", res["query_embedding"])]
            ],
        )
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--embedder", default="real", choices=("real", "hashing"))
    ap.add_argument("--ks", default="5,10,25")
    ap.add_argument("--alphas", default="0.3,0.5,0.7")
    ap.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
    ap.add_argument("--name", default=None, help="result name (default locomo-<embedder>)")
    args = ap.parse_args(argv)
    res = evaluate(args)
    out = write_result(args.name or f"locomo-{args.embedder}", res)
    res["machine"] = machine()
    print_report(res)
    print(f"\nresults: {out}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
