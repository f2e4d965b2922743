"""The local contradiction scanner on a labelled set and on whole real stores.

    python -m bench.bench_contradictions [--embedder real|hashing] [--no-stores] [--sample 12]
                                         [--split tune|heldout|fresh|unseen|all] [--oracle]
                                         [--host-oracle] [--llm]

1. ``bench/data/contradiction_pairs.json``: every pair's two texts become memories of one
   real temporary store (kinds, times and record numbers as ingestion would give them); the
   scanner runs over all of them as it runs on a write (``scan`` then ``record``). A pair is
   predicted a conflict when a contradiction was opened between its two memories. Recall and
   precision per split (odd ids up to 92 tune, even ids held out; ``fresh``: pairs written
   later, before the rules that followed were tuned, and never tuned on; ``unseen``: pairs
   written by another engineer who never read the scanner, scored before any rule saw them);
   contradictions opened across pairs are listed apart (unlabelled). ``--split`` chooses the
   split whose misses and false alarms are printed (the JSON has them all).
2. Whole stores: the dev set's workspace (git, decision records, rules, chats), this
   repository (git, decision records, rules), each folder of real decision records, and
   ``docs`` (every Markdown paragraph of this repository and the dev set as a fact: parallel
   prose worded alike) are ingested once (cached under ``bench/.cache/contradictions-*``); a
   copy has its contradictions cleared and every current memory scanned one at a time, as its
   write would; the contradictions opened are counted and a sample is listed (each one is a
   false alarm unless it reads as a real disagreement).

   **Candidate recall**: the scan also proposes, for each memory, at most five earlier
   memories on its subject (:mod:`predictive.conflicts.candidates`); without a judge they are
   kept pending. A labelled conflict counts as reached when the rules flagged the pair or the
   pair is among the candidates proposed for the later of its two memories.
3. With ``--oracle``: the labelled pairs once more through the real judge path (the scanner's
   judge is :func:`predictive.llm_judge.scanner_judge` over an OpenAI-protocol client) against
   a local scripted server that answers from the labels (``tests/llm_server.py``): what any
   competent model can reach with these candidates. Written apart (``contradictions-oracle``).
   With ``--host-oracle``: the scan runs without a judge (every candidate waits, as in an
   editor with no endpoint), then the waiting pairs go to the chain of judges with the
   editor's models offered (:mod:`predictive.judges`, a few pairs a run) and the host's model
   answers from the labels (``contradictions-host-oracle``).
4. With ``--llm`` and a model configured as the CLI's (``LIVING_MEMORY_LLM_URL``, ``_MODEL``…):
   the labelled pairs once more with the model as the scanner's judge, written apart.

Results: ``bench/results/contradictions.json`` (``contradictions-llm.json`` with ``--llm``,
``contradictions-oracle.json`` with ``--oracle``, ``contradictions-host-oracle.json`` with
``--host-oracle``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import (
    BENCH_DIR,
    CACHE_DIR,
    log,
    machine,
    machine_line,
    make_embedder,
    summarize_ms,
    write_result,
)

PAIRS = BENCH_DIR / "data" / "contradiction_pairs.json"
SPLITS = ("tune", "heldout", "fresh", "unseen", "all")
"""The labelled splits; ``all`` is every pair."""
THIS_REPO = BENCH_DIR.parent
ADR_DATA = THIS_REPO.parent / "shared" / "data" / "adr"
"""Real decision records (``../shared/data/adr`` beside the repository), when present."""
DAY = 86400.0
BASE = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()


def _at(date: str | None, fallback: float) -> float:
    if not date:
        return fallback
    return datetime.fromisoformat(date).replace(tzinfo=timezone.utc).timestamp()


def load_pairs(split: str) -> list[dict[str, Any]]:
    pairs = json.loads(PAIRS.read_text())["pairs"]
    return [p for p in pairs if split == "all" or p["split"] == split]


def build(store: Any, pairs: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Each pair's texts as memories; answers pair id → (memory a, memory b)."""
    from predictive.conflicts import analyse
    from storage import Kind, NewMemory

    ids: dict[int, tuple[int, int]] = {}
    for p in pairs:
        t_a = _at(p.get("time_a"), BASE + p["id"] * DAY)
        t_b = _at(p.get("time_b"), t_a + DAY)
        got = []
        for side, at in (("a", t_a), ("b", t_b)):
            text = p[f"text_{side}"]
            number = analyse(text).number
            r = store.add(
                NewMemory(
                    text=text,
                    kind=Kind(p[f"kind_{side}"]),
                    source="bench",
                    source_id=f"pair{p['id']}:{side}",
                    created_at=at,
                    valid_from=at,
                    metadata={"number": number} if number is not None else {},
                )
            )
            got.append(r.id)
        ids[p["id"]] = (got[0], got[1])
    store.embeddings.embed_pending()
    return ids


def candidate_recall(
    pairs: list[dict[str, Any]],
    ids: dict[int, tuple[int, int]],
    opened: dict[tuple[int, int], Any],
    proposed: set[tuple[int, int]],
) -> dict[str, Any]:
    """Of the labelled conflicts, the share flagged (by the rules, or with a judge by its
    verdicts) or reached by the candidates."""
    reached = flagged = 0
    missed = []
    conflicts = [p for p in pairs if p["label"] == "conflict"]
    for p in conflicts:
        a, b = ids[p["id"]]
        pair = (min(a, b), max(a, b))
        flagged += pair in opened
        if pair in opened or pair in proposed:
            reached += 1
        else:
            missed.append({"id": p["id"], "a": p["text_a"][:100], "b": p["text_b"][:100]})
    n = len(conflicts)
    return {
        "conflicts": n,
        "reached": reached,
        "candidateRecall": round(reached / n, 3) if n else None,
        "flagged": round(flagged / n, 3) if n else None,
        "missed": missed,
    }


def score(
    pairs: list[dict[str, Any]], ids: dict[int, tuple[int, int]], opened: dict[tuple[int, int], Any]
) -> dict[str, Any]:
    tp = fp = fn = tn = 0
    misses, alarms, by_type = [], [], {}
    for p in pairs:
        a, b = ids[p["id"]]
        c = opened.get((min(a, b), max(a, b)))
        conflict = p["label"] == "conflict"
        t = by_type.setdefault(p["type"], {"n": 0, "flagged": 0, "label": p["label"]})
        t["n"] += 1
        t["flagged"] += c is not None
        if conflict and c is not None:
            tp += 1
        elif conflict:
            fn += 1
            misses.append(
                {"id": p["id"], "type": p["type"], "a": p["text_a"][:120], "b": p["text_b"][:120]}
            )
        elif c is not None:
            fp += 1
            alarms.append({"id": p["id"], "type": p["type"], "reason": c.reason})
        else:
            tn += 1
    return {
        "pairs": len(pairs),
        "conflicts": tp + fn,
        "compatible": fp + tn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "byType": by_type,
        "missed": misses,
        "falseAlarms": alarms,
    }


def labelled(embedder_name: str, judge: Any = None, then: Any = None) -> dict[str, Any]:
    """The labelled pairs scanned one memory at a time, as each write scans what it added
    (with ``judge``: it has the last word on what the rules find and reads the candidates;
    ``then(store)`` runs after the scan, before the count)."""
    from predictive.conflicts import scan_and_record
    from storage import ContradictionStatus, MemoryStore

    pairs = load_pairs("all")
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "memory.db", embedder=make_embedder(embedder_name))
        ids = build(store, pairs)
        every = sorted({i for pair in ids.values() for i in pair})
        times = []
        for mid in every:  # one memory at a time, as each write scans what it added
            t0 = time.perf_counter()
            scan_and_record(store, [mid], judge=judge)
            times.append(time.perf_counter() - t0)
        if then is not None:
            then(store)
        opened = {  # a contradiction a judge dismissed is no finding
            (c.memory_a, c.memory_b): c
            for c in store.contradictions.query(None)
            if c.status is not ContradictionStatus.DISMISSED
        }
        proposed = {
            (min(a, b), max(a, b))
            for a, b in store.conn.execute("SELECT older, newer FROM conflict_candidates")
        }
        pending = store.conn.execute(
            "SELECT count(*) FROM conflict_candidates WHERE status = 'pending'"
        ).fetchone()[0]
        labelled_pairs = {(min(a, b), max(a, b)) for a, b in ids.values()}
        across = [
            {
                "reason": c.reason,
                "a": store.get(c.memory_a).text[:100],
                "b": store.get(c.memory_b).text[:100],
            }
            for key, c in opened.items()
            if key not in labelled_pairs
        ]
        store.close()
    out = {split: score(load_pairs(split), ids, opened) for split in SPLITS}
    for split in SPLITS:
        out[split]["candidates"] = candidate_recall(load_pairs(split), ids, opened, proposed)
    out["candidatePairs"] = {"proposed": len(proposed), "pending": pending, "memories": len(every)}
    out["acrossPairs"] = {"count": len(across), "sample": across[:15]}
    out["scanPerMemory"] = summarize_ms(times)
    return out


def _built(d: Path) -> bool:
    """Whether the cached store ``d`` is complete; if not, ``d`` is made anew and empty."""
    if (d / "ingested.json").exists():
        return True
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return False


def cached_store(
    name: str, root: Path, sources: list[str], embedder_name: str, paths: list[str] | None = None
) -> Path:
    """A store of ``root`` ingested once (``bench/.cache/contradictions-<name>-<embedder>``)."""
    from predictive.ingest import run
    from server.convert import to_wire
    from storage import MemoryStore

    d = CACHE_DIR / f"contradictions-{name}-{embedder_name}"
    if _built(d):
        return d
    log(f"{name}: ingesting {root} ({', '.join(sources)}) once into {d}")
    t0 = time.perf_counter()
    with MemoryStore(d / "memory.db", embedder=make_embedder(embedder_name)) as store:
        summary = to_wire(run(store, root=root, options={"sources": sources, "paths": paths or []}))
        store.embeddings.embed_pending()
    summary["wallSeconds"] = round(time.perf_counter() - t0, 1)
    (d / "ingested.json").write_text(json.dumps(summary, indent=1))
    return d


_SKIP_DOCS = ("/.venv/", "/node_modules/", "/tests/data/", "/bench/results/", "/.cache/", "/.git/")
_CODE_BLOCK = re.compile(r"```.*?```", re.S)
_PARAGRAPH = re.compile(r"\n\s*\n|\n(?=\s*[-*]\s)")


def doc_paragraphs(roots: list[Path]) -> list[tuple[str, str]]:
    """Every paragraph and list item (40-600 characters, no table, heading or code) of the
    Markdown files under ``roots``, with its file: statements of one project side by side."""
    out = []
    for root in roots:
        for f in sorted(root.rglob("*.md")):
            rel = "/" + str(f.relative_to(root))
            if any(part in rel for part in (*_SKIP_DOCS, "/.specstory/")):
                continue
            text = _CODE_BLOCK.sub(" ", f.read_text(encoding="utf-8", errors="replace"))
            for para in _PARAGRAPH.split(text):
                para = " ".join(para.split()).strip(" -*")
                if 40 <= len(para) <= 600 and not para.startswith(("|", "#")):
                    out.append((para, str(f.relative_to(root))))
    return out


def cached_docs(roots: list[Path], embedder_name: str) -> Path:
    """A store of the docs' paragraphs as facts, built once (``contradictions-docs-*``)."""
    from storage import Kind, MemoryStore, NewMemory

    d = CACHE_DIR / f"contradictions-docs-{embedder_name}"
    if _built(d):
        return d
    items = doc_paragraphs(roots)
    log(f"docs: {len(items)} paragraphs of {', '.join(map(str, roots))} once into {d}")
    with MemoryStore(d / "memory.db", embedder=make_embedder(embedder_name)) as store:
        for i, (text, path) in enumerate(items):
            at = BASE + i
            store.add(
                NewMemory(
                    text=text,
                    kind=Kind.FACT,
                    source="docs",
                    source_id=f"{path}#{i}",
                    created_at=at,
                    valid_from=at,
                )
            )
        store.embeddings.embed_pending()
    (d / "ingested.json").write_text(json.dumps({"paragraphs": len(items)}))
    return d


_REMEMBER = re.compile(r'remember --kind (\w+)(?: --anchor \S+)* "([^"]+)"')


def remember_demo(store: Any, root: Path) -> list[str]:
    """What the project's README tells a new user to ``remember`` (the issue's example: the
    demo's convention against a commit of the same repository), added as the user would."""
    from storage import Kind, NewMemory

    readme = root / "README.md"
    if not readme.is_file():
        return []
    out = []
    for kind, text in _REMEMBER.findall(readme.read_text(encoding="utf-8", errors="replace")):
        store.add(NewMemory(text=text, kind=Kind(kind)))
        out.append(f"{kind}: {text}")
    store.embeddings.embed_pending()
    return out


def whole_store(
    name: str,
    root: Path,
    sources: list[str],
    embedder_name: str,
    sample: int,
    paths: list[str] | None = None,
    docs: list[Path] | None = None,
) -> dict[str, Any]:
    """Every current memory of a real store scanned as its writes would (contradictions an
    earlier run opened are cleared first); ``docs``: the store is these folders' Markdown
    paragraphs (:func:`cached_docs`)."""
    from predictive.conflicts import record, scan
    from storage import MemoryStore

    if docs is not None:
        cached = cached_docs(docs, embedder_name)
    else:
        cached = cached_store(name, root, sources, embedder_name, paths)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(cached, copy)
        store = MemoryStore(copy / "memory.db", embedder=make_embedder(embedder_name))
        with store.conn:
            store.conn.execute("DELETE FROM contradictions")
            store.conn.execute("DELETE FROM edges WHERE type IN ('CONTRADICTS', 'EVOLVED_INTO')")
        remembered = remember_demo(store, root) if docs is None else []
        ids = [m for ids in store.current_ids_by_kind().values() for m in ids]
        times = []
        for mid in sorted(ids):
            t0 = time.perf_counter()
            record(store, scan(store, [mid]))
            times.append(time.perf_counter() - t0)
        found = store.contradictions.query(None)
        by_type: dict[str, int] = {}
        listed = []
        for c in found:
            kind = (c.reason or "?").split(":", 1)[0]
            by_type[kind] = by_type.get(kind, 0) + 1
        for c in found[:sample]:
            a, b = store.get(c.memory_a), store.get(c.memory_b)
            listed.append(
                {
                    "reason": c.reason,
                    "a": f"[{a.kind.value} {a.source}] {a.text[:140]}",
                    "b": f"[{b.kind.value} {b.source}] {b.text[:140]}",
                }
            )
        memories = store.stats().to_dict()
        store.close()
    return {
        "store": name,
        "root": str(root),
        "sources": sources,
        "memories": memories.get("memories"),
        "current": len(ids),
        "byKind": memories.get("by_kind"),
        "remembered": remembered,
        "opened": len(found),
        "openedByType": by_type,
        "scanPerMemory": summarize_ms(times),
        "sample": listed,
    }


def _log_store(r: dict[str, Any]) -> None:
    """One store's count and its sample on the terminal."""
    log(f"{r['store']}: {r['opened']} contradictions opened over {r['current']} memories")
    for s in r["sample"]:
        log(f"  {s['reason'][:160]}\n    a: {s['a'][:120]!r}\n    b: {s['b'][:120]!r}")


def _log_labelled(result: dict[str, Any], split: str) -> None:
    """Each split's scores, then the misses and false alarms of ``split`` (only the tuning
    split's unless asked: the others are for reporting)."""
    for name in SPLITS:
        s = result[name]
        log(
            f"{name:8} pairs {s['pairs']:3}  recall {s['recall']}  precision {s['precision']}  "
            f"(tp {s['tp']} fp {s['fp']} fn {s['fn']} tn {s['tn']})"
        )
    for name in SPLITS:
        c = result[name]["candidates"]
        log(
            f"{name:8} candidate recall {c['candidateRecall']} ({c['reached']}/{c['conflicts']}"
            f" conflicts reached; flagged {c['flagged']})"
        )
    log(f"candidate pairs: {result['candidatePairs']}")
    log(f"opened across pairs (unlabelled): {result['acrossPairs']['count']}")
    log(f"scan per memory: {result['scanPerMemory']}")
    for miss in result[split]["missed"]:
        log(f"  missed #{miss['id']} ({miss['type']}): {miss['a'][:60]!r} / {miss['b'][:60]!r}")
    for alarm in result[split]["falseAlarms"]:
        log(f"  false alarm #{alarm['id']} ({alarm['type']}): {alarm['reason'][:150]}")


def with_llm(embedder_name: str, split: str) -> int:
    """The labelled pairs with the configured model as judge (nothing without one)."""
    from predictive.llm import client_for
    from predictive.llm_config import config_from_env
    from predictive.llm_judge import scanner_judge

    config, problems = config_from_env()
    for problem in problems:
        log(f"LLM setting: {problem}")
    client = client_for(None, config)
    if client is None:
        log("no LLM configured: set LIVING_MEMORY_LLM_URL and LIVING_MEMORY_LLM_MODEL")
        return 2
    log(f"judge: {client.config.model} at {client.config.url}")
    result = labelled(embedder_name, judge=scanner_judge(client))
    _log_labelled(result, split)
    refused = client.stats().get("refused_budget", 0)
    if refused:
        log(
            f"{refused} pairs were left to the local rules by the run's budget: raise "
            "LIVING_MEMORY_LLM_MAX_CALLS_PER_RUN (and _MAX_TOKENS_PER_RUN) to judge them all"
        )
    write_result(
        "contradictions-llm",
        {
            "machine": machine(),
            "embedder": embedder_name,
            "labelled": result,
            "llm": client.stats(),
        },
    )
    return 0


def oracle_reply(pairs: list[dict[str, Any]]) -> Any:
    """A scripted judge's answer from the labels: the texts of a labelled conflict (the
    judge reads the first 2,000 characters of each) are a conflict, quoted from each side,
    anything else is compatible."""
    from predictive.llm_judge import TEXT_CHARS

    conflicts = {
        frozenset((p["text_a"][:TEXT_CHARS], p["text_b"][:TEXT_CHARS]))
        for p in pairs
        if p["label"] == "conflict"
    }

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        a, _, b = prompt.removeprefix("A:\n").partition("\n\nB:\n")
        if frozenset((a, b)) in conflicts:
            verdict = {
                "verdict": "contradicts",
                "reason": "labelled a conflict",
                "confidence": 0.9,
                "quote_a": a[:40],
                "quote_b": b[:40],
            }
        else:
            verdict = {
                "verdict": "compatible",
                "reason": "not labelled a conflict",
                "confidence": 0.9,
            }
        return json.dumps(verdict)

    return reply


def with_oracle(embedder_name: str, split: str) -> int:
    """The labelled pairs through the real judge path, the judge a local OpenAI-protocol
    server answering from the labels."""
    import sys

    from predictive.llm import LlmClient
    from predictive.llm_config import LlmConfig
    from predictive.llm_judge import scanner_judge

    sys.path.insert(0, str(THIS_REPO))
    from tests.llm_server import FakeLlm

    server = FakeLlm(replies=[oracle_reply(load_pairs("all"))])
    try:
        config = LlmConfig(
            url=server.url, model="oracle", max_calls_per_run=100_000, max_tokens_per_run=10**9
        )
        config = dataclasses.replace(config, max_tokens_per_day=10**9)
        client = LlmClient(config)
        log(f"judge: a scripted oracle at {server.url} (answers from the labels)")
        result = labelled(embedder_name, judge=scanner_judge(client))
        calls = len(server.requests)
    finally:
        server.close()
    _log_labelled(result, split)
    log(f"judge calls: {calls} for {result['candidatePairs']['memories']} memories")
    write_result(
        "contradictions-oracle",
        {"machine": machine(), "embedder": embedder_name, "judgeCalls": calls, "labelled": result},
    )
    return 0


def with_host_oracle(embedder_name: str, split: str) -> int:
    """The labelled pairs scanned without a judge (the candidates wait, as in an editor with no
    endpoint configured), then the waiting pairs put to the chain of judges
    (:mod:`predictive.judges`) with the editor's models offered — a host's model that answers
    from the labels — a few pairs a run, as the language server asks them."""
    from predictive import judges
    from predictive.llm import LlmClient
    from predictive.llm_config import LlmConfig

    reply = oracle_reply(load_pairs("all"))
    calls = runs = 0

    def send(messages: list[dict[str, str]], max_tokens: int) -> str:
        nonlocal calls
        calls += 1
        return str(reply({"messages": messages}))

    config = LlmConfig(max_calls_per_run=100_000, max_tokens_per_run=10**9)
    config = dataclasses.replace(config, max_tokens_per_day=10**9)

    def judge_all(store: Any) -> None:
        nonlocal runs
        while True:
            client = LlmClient(config, store=store, send=send, host=judges.EDITOR)
            run = judges.judge_waiting_pairs(store, judges.Choice(judges.EDITOR, client))
            runs += 1
            if run.left == 0 or run.judged.conflicts + run.judged.compatible == 0:
                return

    log("judge: the editor's models relay (predictive.judges), answering from the labels")
    result = labelled(embedder_name, then=judge_all)
    _log_labelled(result, split)
    log(f"judge calls: {calls} in {runs} runs of at most {judges.HOST_PAIRS} pairs")
    write_result(
        "contradictions-host-oracle",
        {
            "machine": machine(),
            "embedder": embedder_name,
            "judgeCalls": calls,
            "judgeRuns": runs,
            "labelled": result,
        },
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedder", default="real", choices=("real", "hashing"))
    ap.add_argument("--no-stores", action="store_true", help="only the labelled pairs")
    ap.add_argument("--sample", type=int, default=12)
    ap.add_argument(
        "--split", default="tune", choices=SPLITS, help="the split whose misses are printed"
    )
    ap.add_argument("--devset-ws", type=Path, default=CACHE_DIR / "devset-ws-twat-search")
    ap.add_argument(
        "--llm", action="store_true", help="the labelled pairs with the configured LLM as judge"
    )
    ap.add_argument(
        "--oracle", action="store_true", help="the labelled pairs with a judge that knows them"
    )
    ap.add_argument(
        "--host-oracle",
        action="store_true",
        help="the labelled pairs left pending, then judged by a host's model that knows them",
    )
    args = ap.parse_args(argv)
    m = machine()
    log(machine_line(m))
    if args.host_oracle:
        return with_host_oracle(args.embedder, args.split)
    if args.oracle:
        return with_oracle(args.embedder, args.split)
    if args.llm:
        return with_llm(args.embedder, args.split)
    result: dict[str, Any] = {"embedder": args.embedder, "labelled": labelled(args.embedder)}
    _log_labelled(result["labelled"], args.split)
    if not args.no_stores:
        stores: list[tuple[str, Path, list[str], list[str] | None]] = []
        if (args.devset_ws / ".git").is_dir():
            stores.append(("devset", args.devset_ws, ["all"], None))
        else:
            log(f"no dev-set workspace at {args.devset_ws}: run bench.bench_devset once")
        stores.append(("this-repo", THIS_REPO, ["git", "adr", "rules"], None))
        if ADR_DATA.is_dir():
            for folder in sorted(p for p in ADR_DATA.iterdir() if p.is_dir()):
                stores.append((f"adr-{folder.name}", folder, ["adr"], [str(folder)]))
        result["stores"] = []
        for name, root, sources, paths in stores:
            r = whole_store(name, root, sources, args.embedder, args.sample, paths)
            result["stores"].append(r)
            _log_store(r)
        # the docs of this repository and the dev set, a paragraph a fact: many statements
        # of one project side by side, worded alike (the false alarms of parallel prose)
        roots = [THIS_REPO, *([args.devset_ws] if (args.devset_ws / ".git").is_dir() else [])]
        r = whole_store("docs", THIS_REPO, ["docs"], args.embedder, args.sample, docs=roots)
        result["stores"].append(r)
        _log_store(r)
    result["machine"] = m
    path = write_result("contradictions", result)
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
