"""False forgetting on the dev set: replay its history in time order with consolidation between
events, on a simulated clock, and count the memories a later question or file-open case needs
that consolidation had archived by then.

    python -m bench.bench_forgetting [--devset DIR] [--rebuild] [--opens N]

The dev set's workspace is ingested once as ``bench.bench_devset`` does (hashing embedder,
cached). Its memories are then added to a fresh store in the order they came into being
(commits at their commit time, conversations at their start, rule files at the date of the
commit that last changed them — sources.jsonl). After each event the developer's work is
simulated: the files the new memories concern are opened (the context for each is assembled
and its use logged, as the editor would) — at most ``--opens`` files per event — and then
the store is consolidated at that time. Storage's clock is the simulated one, so 90 days of
disuse pass as they did in the project (2025-02-13 → 2025-08-23).

"Needed" comes from the set's labels, mapped to memories the way bench_devset scores them
(the memory's provenance contains the source id): a question needs the memories of its
expected sources, at the end of the replay; a file-open case needs the memories of its needed
sessions, just before its ``as_of``. A needed memory is falsely forgotten when it is archived
by forgetting, or merged into a memory that is. Merged memories whose survivor is current are
counted apart (their provenance lives on in the survivor). Target: < 1 %.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ["TZ"] = "Europe/Paris"
time.tzset()

from bench.bench_devset import DEFAULT_DEVSET, ingest, workspace  # noqa: E402
from bench.common import machine_line, summarize_ms, write_result  # noqa: E402

DAY = 86_400.0


def simulate_clock(real: Any, simulated: Any) -> None:
    """Every loaded storage and predictive module reads ``simulated`` where it read ``real``."""
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith(("storage", "predictive")):
            for name in ("now", "_now"):
                if getattr(module, name, None) is real:
                    setattr(module, name, simulated)


def source_of(prov: str, ids: list[str]) -> str | None:
    """The longest source id a provenance string contains (as the set's score.py maps)."""
    found = [i for i in ids if i in prov or i.removesuffix(".md") in prov]
    return max(found, key=len) if found else None


def provenance_map(store: Any, ids: list[str]) -> dict[int, str]:
    """Original memory id → the dev-set source it belongs to (those that map)."""
    from predictive.retrieval import _origins, unit_of
    from storage import MemoryFilter

    origins = _origins(store)
    out: dict[int, str] = {}
    for m in store.list(MemoryFilter(include_archived=True), limit=1_000_000, order="id"):
        _, prov = unit_of(m, origins)
        sid = source_of(prov.path or prov.commit or "", ids)
        if sid is not None:
            out[m.id] = sid
    return out


def entry_times(mems: list[Any], sources: list[dict[str, Any]], end: float) -> dict[int, float]:
    """When each memory came into being: its own time, or its rule file's snapshot date."""
    rule_dates = {
        s["path"]: datetime.fromisoformat(s["created_at"]).timestamp()
        for s in sources
        if s["kind"] == "cursor-rule"
    }
    out = {}
    for m in mems:
        t = m.created_at
        if m.source == "rules" and m.source_id:
            t = rule_dates.get(m.source_id.rsplit(":", 1)[0], min(t, end))
        out[m.id] = min(t, end)
    return out


def copy_of(m: Any, at: float) -> Any:
    from storage import NewMemory

    return NewMemory(
        text=m.text,
        kind=m.kind,
        summary=m.summary,
        compressed=m.compressed,
        index_label=m.index_label,
        anchors=list(m.anchors),
        artifacts=list(m.artifacts),
        scope=m.scope,
        source=m.source,
        source_id=m.source_id,
        importance=m.importance,
        confidence=m.confidence,
        valid_from=min(m.valid_from, at),
        created_at=at,
        fact_key=m.fact_key,
        fact_value=m.fact_value,
        metadata={**m.metadata, "replayOf": m.id},
    )


def status(store: Any, new_id: int) -> str:
    """current | forgotten | merged (into a current memory) | superseded."""
    m = store.get(new_id)
    seen = set()
    while m.archived:
        reason = m.archive_reason or ""
        if not reason.startswith("merged into #") or m.id in seen:
            return "forgotten"
        seen.add(m.id)
        m = store.get(int(reason.split("#", 1)[1].split(":", 1)[0].split()[0]))
        if not m.archived:
            return "merged"
    return "current"


def main(argv: list[str] | None = None) -> int:  # noqa: C901
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--devset", type=Path, default=DEFAULT_DEVSET)
    ap.add_argument("--rebuild", action="store_true", help="rebuild the workspace and store")
    ap.add_argument("--opens", type=int, default=5, help="files opened per event")
    ap.add_argument(
        "--passed-over",
        type=int,
        help="override forget.PASSED_OVER (openings of its files without it) to see the "
        "trade-off; PASSED_OVER_ANYWHERE scales with it",
    )
    a = ap.parse_args(argv)
    import predictive.consolidation.forget as forget

    if a.passed_over is not None:
        scale = forget.PASSED_OVER_ANYWHERE / forget.PASSED_OVER
        forget.PASSED_OVER = a.passed_over
        forget.PASSED_OVER_ANYWHERE = round(a.passed_over * scale)

    import storage.rows as rows
    from predictive.consolidate import run as consolidate
    from predictive.engine import ContextEngine, ContextRequest
    from storage import MemoryFilter, MemoryStore
    from storage.embeddings import HashingEmbedder

    ws = workspace(a.devset, a.rebuild)
    source, _ = ingest(ws, a.devset.name, "hashing", a.rebuild)
    sources = [json.loads(x) for x in (a.devset / "sources.jsonl").read_text().splitlines()]
    questions = [json.loads(x) for x in (a.devset / "questions.jsonl").read_text().splitlines()]
    cases = [json.loads(x) for x in (a.devset / "prefetch.jsonl").read_text().splitlines()]
    ids = [s["id"] for s in sources]
    prov = provenance_map(source, ids)
    mems = source.list(MemoryFilter(include_archived=True), limit=1_000_000, order="id")
    source.close()
    end = datetime.fromisoformat("2025-08-23T23:59:59+02:00").timestamp()
    enter = entry_times(mems, sources, end)
    events: dict[float, list[Any]] = {}
    for m in sorted(mems, key=lambda m: (enter[m.id], m.id)):
        events.setdefault(enter[m.id], []).append(m)
    case_at = sorted(
        ((datetime.fromisoformat(c["as_of"]).timestamp(), c) for c in cases), key=lambda x: x[0]
    )

    clock = [0.0]
    simulate_clock(rows.now, lambda: clock[0])
    tmp = Path(tempfile.mkdtemp(prefix="bench-forgetting-"))
    store = MemoryStore(tmp / "memory.db", embedder=HashingEmbedder())
    engine = ContextEngine(store, root=ws)
    new_of: dict[int, int] = {}
    checks: list[dict[str, Any]] = []
    totals: Counter[str] = Counter()
    link_reasons: Counter[str] = Counter()
    forgotten_log: list[dict[str, Any]] = []
    cons_times: list[float] = []
    opens = 0

    def check(what: str, case_id: str, needed_sources: list[str]) -> None:
        for old, sid in prov.items():
            if sid in needed_sources and old in new_of:
                st = status(store, new_of[old])
                checks.append({"what": what, "id": case_id, "source": sid, "status": st})

    t0 = time.perf_counter()
    pending_cases = list(case_at)
    for at, batch in sorted(events.items()):
        while pending_cases and pending_cases[0][0] <= at:
            when, case = pending_cases.pop(0)
            clock[0] = when
            check("prefetch", case["id"], case["needed"])
        clock[0] = at
        added = store.add_many([copy_of(m, at) for m in batch])
        for m, r in zip(batch, added):
            new_of[m.id] = r.id
        files = []
        for m in batch:
            for anc in m.anchors:
                if anc.type.value == "file" and (ws / anc.value).is_file():
                    files.append(anc.value)
        for path in list(dict.fromkeys(files))[: a.opens]:
            clock[0] += 1
            engine.assemble(ContextRequest(path=path, root=str(ws), as_of=clock[0] + 1))
            opens += 1
        clock[0] += 60
        t1 = time.perf_counter()
        out = consolidate(store, now=clock[0]).to_dict()
        cons_times.append(time.perf_counter() - t1)
        for c in out["changes"]:
            totals[c["action"]] += 1
            if c["action"] == "link":
                why = re.sub(r"\d+", "N", c["reason"].split(":")[0].split(" (")[0])
                link_reasons[why] += 1
            if c["action"] == "forget":
                forgotten_log.append(
                    {
                        "at": datetime.fromtimestamp(clock[0]).isoformat(timespec="minutes"),
                        "ids": c["ids"],
                        "label": c["labels"][0],
                        "reason": c["reason"],
                    }
                )
    for when, case in pending_cases:
        clock[0] = when
        check("prefetch", case["id"], case["needed"])
    clock[0] = end
    out = consolidate(store, now=end).to_dict()
    for c in out["changes"]:
        totals[c["action"]] += 1
    for q in questions:
        check("question", q["id"], q["expected"])
    wall = time.perf_counter() - t0

    def rate(rows: list[dict[str, Any]], st: str) -> float:
        return round(sum(r["status"] == st for r in rows) / len(rows), 4) if rows else 0.0

    groups = {
        "all": checks,
        "questions": [c for c in checks if c["what"] == "question"],
        "prefetch": [c for c in checks if c["what"] == "prefetch"],
    }
    report: dict[str, Any] = {
        "devset": str(a.devset),
        "passed_over": [forget.PASSED_OVER, forget.PASSED_OVER_ANYWHERE],
        "opens_per_event": a.opens,
        "memories": len(mems),
        "events": len(events),
        "files_opened": opens,
        "consolidations": len(cons_times) + 1,
        "span": [
            datetime.fromtimestamp(min(events)).isoformat(timespec="minutes"),
            datetime.fromtimestamp(end).isoformat(timespec="minutes"),
        ],
        "changes": dict(totals),
        "links_by_reason": dict(link_reasons),
        "archived_at_end": store.count(MemoryFilter(include_archived=True)) - store.count(),
        "needed_checks": {k: len(v) for k, v in groups.items()},
        "false_forgetting": {k: rate(v, "forgotten") for k, v in groups.items()},
        "merged_into_current": {k: rate(v, "merged") for k, v in groups.items()},
        "forgotten_needed": [c for c in checks if c["status"] == "forgotten"],
        "forgotten": forgotten_log,
        "consolidate_ms": summarize_ms(cons_times),
        "wall_s": round(wall, 1),
        "target": "false forgetting < 1 %",
    }
    store.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print(machine_line())
    print(
        f"{report['memories']} memories, {report['events']} events, {opens} files opened, "
        f"{report['consolidations']} consolidations over {report['span'][0]} → {report['span'][1]}"
    )
    print(f"changes: {dict(totals)}; archived at the end: {report['archived_at_end']}")
    print(f"links by reason: {dict(link_reasons)}")
    for k, v in groups.items():
        print(
            f"{k}: {len(v)} needed memory checks, false forgetting "
            f"{report['false_forgetting'][k]:.2%}, merged into a current memory "
            f"{report['merged_into_current'][k]:.2%}"
        )
    print(f"consolidation ms: {report['consolidate_ms']}")
    name = "forgetting-devset" + (f"-passed{a.passed_over}" if a.passed_over is not None else "")
    print(f"wrote {write_result(name, report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
