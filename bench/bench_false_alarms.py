"""False contradictions on whole stores (issue 19): how many a reader would see.

    python -m bench.bench_false_alarms --defaults
    python -m bench.bench_false_alarms [--store NAME=FILE.db ...] [--folder NAME=DIR[@SOURCES] ...]

Labelled pairs say little about this: a whole store holds hundreds of look-alike pairs no
labelled set has (two sections of one guide, a commit and the rule it implements, the commit
that added a record and the record). So each store is taken whole:

- ``--store NAME=FILE``: an existing store. Its database (and WAL, if any) is copied into a
  scratch folder first; the input is never opened, let alone changed. Its vectors' model is
  used again (the packaged model, or the hashing embedder a ``hashing-N`` store was made with).
- ``--folder NAME=DIR[@SOURCES]``: a store built from a folder by ``living-memory ingest``
  (``SOURCES`` comma-separated, default ``git,adr,rules``; ``adr`` alone reads the folder
  itself as decision records), in a scratch folder, with ``LIVING_MEMORY_EMBEDDER=hashing``.

In the scratch copy every contradiction is cleared, then every current memory is scanned as
its write would be (``scan`` then ``record``, one memory at a time, oldest first) and the
``fact_key`` conflicts consolidation opens are opened. Per store: memories (current ones, the
ones scanned), open and suspected contradictions (by type), the candidate pairs by subject
left pending (no judge: never opened, never in a context), open per 200 memories, and every
open one with both sides in full and its reason, so a reader can judge whether it is real
(the target: at most 1 open per 200 memories, each one real). A sample of the suspected ones
is listed too: they go to the review list, never into a context.

``--defaults``: the issue's stores — a copy of the real-model dd-trace-py store
(``/work/gold-work/dd0-copy.db``, copied to ``bench/.cache/false-alarms/`` first), each
folder of decision records under ``../shared/data/adr``, and this repository (git, decision
records, rules, plus the two memories its README tells a new user to remember: this
repository has no rule file or record of its own, and commits are compared only with such
memories).

A reader's verdicts on open contradictions are kept in ``bench/data/false_alarm_verdicts.json``
(store, the two sides' files or commits, real or not, why); an open one without a verdict
counts as false. ``falseOpenPer200`` is what the target holds to.

Results: ``bench/results/false_alarms.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, CACHE_DIR, log, machine_line, summarize_ms, write_result

THIS_REPO = BENCH_DIR.parent
ADR_DATA = THIS_REPO.parent / "shared" / "data" / "adr"
DD_TRACE = Path("/work/gold-work/dd0-copy.db")
"""The real-model store of dd-trace-py (1,500 commits, 111 rule sections) the issue names."""
OWN_COPIES = CACHE_DIR / "false-alarms"
VERDICTS = BENCH_DIR / "data" / "false_alarm_verdicts.json"
TARGET_PER_200 = 1.0
SIDE_CHARS = 600
SUSPECTED_SAMPLE = 12


def copy_database(src: Path, dest_dir: Path) -> Path:
    """``src`` (and its WAL) copied byte for byte into ``dest_dir``; ``src`` is only read."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / "memory.db"
    shutil.copyfile(src, dest)
    wal = Path(str(src) + "-wal")
    if wal.is_file():
        shutil.copyfile(wal, Path(str(dest) + "-wal"))
    return dest


def embedder_for(db: Path) -> Any:
    """The embedder a store's vectors were made with: ``hashing-N`` or the packaged model."""
    import sqlite3

    from storage.embeddings import HashingEmbedder, load_embedder

    conn = sqlite3.connect(db)  # the scratch copy
    try:
        row = conn.execute(
            "SELECT model_id, count(*) FROM embeddings GROUP BY model_id ORDER BY 2 DESC"
        ).fetchone()
    finally:
        conn.close()
    model = row[0] if row else "hashing-64"
    if model.startswith("hashing-") and model.rsplit("-", 1)[1].isdigit():
        return HashingEmbedder(dim=int(model.rsplit("-", 1)[1]))
    return load_embedder()


def ingest_folder(folder: Path, sources: list[str], dest_dir: Path) -> tuple[Path, float]:
    """A store of ``folder`` built by ``living-memory ingest`` (hashing embedder); its path
    and the seconds the ingestion took."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    db = dest_dir / "memory.db"
    env = {**os.environ, "LIVING_MEMORY_EMBEDDER": "hashing"}
    for key in [k for k in env if k.startswith("LIVING_MEMORY_LLM")]:
        env.pop(key)  # the local rules alone: no configured model judges
    cli = [sys.executable, "-m", "server.cli", "--db", str(db), "ingest", *sources]
    cli += ["--root", str(folder)]
    if sources == ["adr"]:
        cli += ["--path", str(folder)]
    t0 = time.perf_counter()
    done = subprocess.run(cli, cwd=THIS_REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ingesting {folder} failed: {done.stderr.strip()[-400:]}")
    return db, time.perf_counter() - t0


def side(m: Any) -> dict[str, Any]:
    """One side of a contradiction as a reader needs it."""
    where = m.metadata.get("file") or m.source_id or ""
    return {
        "id": m.id,
        "kind": m.kind.value,
        "source": m.source,
        "where": str(where)[:200],
        "text": m.text if len(m.text) <= SIDE_CHARS else m.text[: SIDE_CHARS - 1] + "…",
    }


def rescan(db: Path, embedder: Any) -> dict[str, Any]:
    """Every contradiction of the scratch store ``db`` cleared, every current memory scanned
    again as its write would be; what was opened and suspected."""
    from predictive.conflicts import scan_and_record
    from storage import ContradictionStatus, MemoryStore

    with MemoryStore(db, embedder=embedder) as store:
        with store.conn:
            store.conn.execute("DELETE FROM contradictions")
            store.conn.execute("DELETE FROM edges WHERE type IN ('CONTRADICTS', 'EVOLVED_INTO')")
        current: list[int] = []
        for group in store.current_ids_by_kind().values():
            current += group
        current.sort()
        times = []
        for mid in current:
            t0 = time.perf_counter()
            scan_and_record(store, [mid])  # no judge: candidates by subject wait as pending
            times.append(time.perf_counter() - t0)
        (pending,) = store.conn.execute(
            "SELECT count(*) FROM conflict_candidates WHERE status = 'pending'"
        ).fetchone()
        for a, b, key in store.contradictions.fact_conflicts():  # as consolidation opens them
            store.contradictions.add(a, b, reason=f"different values for {key}", confidence=0.8)
        found = store.contradictions.query(None)
        by_status: dict[str, dict[str, int]] = {"open": {}, "suspected": {}}
        for c in found:
            kind = (c.reason or "?").split(":", 1)[0]
            counts = by_status.setdefault(c.status.value, {})
            counts[kind] = counts.get(kind, 0) + 1
        opened = [c for c in found if c.status is ContradictionStatus.OPEN]
        suspected = [c for c in found if c.status is ContradictionStatus.SUSPECTED]
        side_ids = [i for c in found for i in (c.memory_a, c.memory_b)]
        sides = {m.id: m for m in store.get_many(side_ids)}

        def listed(c: Any) -> dict[str, Any]:
            return {
                "id": c.id,
                "reason": c.reason,
                "a": side(sides[c.memory_a]),
                "b": side(sides[c.memory_b]),
            }

        stats = store.stats()
        return {
            "memories": stats.memories,
            "current": len(current),
            "byKind": stats.by_kind,
            "bySource": stats.by_source,
            "model": embedder.model_id,
            "open": len(opened),
            "suspected": len(suspected),
            "pendingCandidates": pending,
            "openPer200": round(200 * len(opened) / max(1, len(current)), 2),
            "byType": by_status,
            "scanPerMemory": summarize_ms(times),
            "openList": [listed(c) for c in opened],
            "suspectedSample": [listed(c) for c in suspected[:SUSPECTED_SAMPLE]],
        }


def run_store(name: str, db: Path, scratch: Path) -> dict[str, Any]:
    log(f"{name}: copying {db} into a scratch folder")
    copy = copy_database(db, scratch / name)
    result = rescan(copy, embedder_for(copy))
    return {"store": name, "input": str(db), "built": False, **result}


def run_folder(
    name: str, folder: Path, sources: list[str], scratch: Path, readme: bool = False
) -> dict[str, Any]:
    log(f"{name}: ingesting {', '.join(sources)} of {folder}")
    db, seconds = ingest_folder(folder, sources, scratch / name)
    remembered: list[str] = []
    if readme:  # what the README tells a new user to remember, added as the user would
        from bench.bench_contradictions import remember_demo
        from storage import MemoryStore

        embedder = embedder_for(db)
        with MemoryStore(db, embedder=embedder) as store:
            remembered = remember_demo(store, folder)
    result = rescan(db, embedder_for(db))
    return {
        "store": name,
        "input": str(folder),
        "built": True,
        "sources": sources,
        "remembered": remembered,
        "ingestSeconds": round(seconds, 1),
        **result,
    }


def judge(r: dict[str, Any], verdicts: list[dict[str, Any]]) -> None:
    """Each open contradiction with the reader's verdict (None: not judged yet, counted as
    false), and the false ones per 200 memories."""
    known = {
        (v["store"], frozenset((v["a"], v["b"]))): v for v in verdicts if v["store"] == r["store"]
    }
    false = 0
    for c in r["openList"]:
        v = known.get((r["store"], frozenset((c["a"]["where"], c["b"]["where"]))))
        c["real"] = None if v is None else bool(v["real"])
        c["verdict"] = None if v is None else v["why"]
        false += c["real"] is not True
    r["falseOpen"] = false
    r["falseOpenPer200"] = round(200 * false / max(1, r["current"]), 2)


def report(r: dict[str, Any]) -> None:
    verdict = "ok" if r["falseOpenPer200"] <= TARGET_PER_200 else "OVER TARGET"
    log(
        f"{r['store']}: {r['current']} current memories ({r['memories']} in all), "
        f"{r['open']} open ({r['falseOpen']} not judged real), {r['suspected']} suspected, "
        f"{r['pendingCandidates']} candidate pairs pending; "
        f"{r['openPer200']} open and {r['falseOpenPer200']} false open per 200 memories "
        f"[{verdict}]; by type {r['byType']}"
    )
    for c in r["openList"]:
        real = {True: "real", False: "FALSE", None: "NOT JUDGED"}[c["real"]]
        log(f"  open #{c['id']} ({real}): {c['reason'][:200]}")
        for key in ("a", "b"):
            s = c[key]
            text = " ".join(s["text"].split())[:160]
            log(f"    {key}: #{s['id']} {s['kind']} {s['source']} {s['where']}: {text}")


def _named(value: str) -> tuple[str, str]:
    name, sep, rest = value.partition("=")
    if not sep or not name or not rest:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {value!r}")
    return name, rest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=_named, action="append", default=[], metavar="NAME=FILE")
    ap.add_argument(
        "--folder", type=_named, action="append", default=[], metavar="NAME=DIR[@SOURCES]"
    )
    ap.add_argument("--defaults", action="store_true", help="the issue's stores (see above)")
    ap.add_argument("--no-write", action="store_true", help="print only; keep the results file")
    args = ap.parse_args(argv)
    stores: list[tuple[str, Path]] = [(n, Path(p)) for n, p in args.store]
    folders: list[tuple[str, Path, list[str], bool]] = []
    for n, spec in args.folder:
        path, _, sources = spec.partition("@")
        chosen = sources.split(",") if sources else ["git", "adr", "rules"]
        folders.append((n, Path(path), chosen, False))
    if args.defaults:
        if DD_TRACE.is_file():
            own = OWN_COPIES / "dd-trace-py.db"
            own.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(DD_TRACE, own)  # our own copy: the shared one is never opened
            stores.append(("dd-trace-py (real model)", own))
        else:
            log(f"{DD_TRACE} is not here: the dd-trace-py store is left out")
        for d in sorted(p for p in ADR_DATA.glob("*") if p.is_dir()):
            folders.append((f"adr/{d.name}", d, ["adr"], False))
        this_repo = ("living-memory (this repository)", THIS_REPO, ["git", "adr", "rules"], True)
        folders.append(this_repo)
    if not stores and not folders:
        ap.error("name a --store or a --folder, or ask for --defaults")
    log(machine_line())
    verdicts = json.loads(VERDICTS.read_text())["verdicts"] if VERDICTS.is_file() else []
    results = []
    with tempfile.TemporaryDirectory(prefix="false-alarms-") as tmp:
        scratch = Path(tmp)
        for name, db in stores:
            results.append(run_store(name, db, scratch))
            judge(results[-1], verdicts)
            report(results[-1])
        for name, folder, sources, readme in folders:
            results.append(run_folder(name, folder, sources, scratch, readme))
            judge(results[-1], verdicts)
            report(results[-1])
    worst = max(r["falseOpenPer200"] for r in results)
    summary = {
        "targetFalseOpenPer200": TARGET_PER_200,
        "worstFalseOpenPer200": worst,
        "worstOpenPer200": max(r["openPer200"] for r in results),
        "met": worst <= TARGET_PER_200,
        "stores": results,
    }
    if not args.no_write:
        out = write_result("false_alarms", summary)
        log(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
