"""Ingestion throughput on a project: git history, decision records and rule files.

    python -m bench.bench_ingest [--commits 2000] [--embedder real|hashing] [--repeat 3]

A linear history of ``--commits`` commits (three files each) is written with ``git
fast-import``, plus the real decision records of ``tests/data/adr`` and one rule file of
every kind. Each repeat ingests it into a fresh store and times the whole run (embedding
included), then a second run that finds nothing new. Reading alone (``git log`` parsing) and
extraction alone are timed separately. Conversations are measured by ``bench.bench_sessions``
on LoCoMo.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import (
    log,
    machine,
    machine_line,
    make_embedder,
    summarize_ms,
    table,
    write_result,
)

ADR_DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "adr"


def build_project(root: Path, commits: int) -> Path:
    from tests.project_fixtures import make_big_repo, make_rule_files

    repo = make_big_repo(root / "repo", commits)
    make_rule_files(repo.root)
    for folder in ("cisagov-manage.get.gov", "alphagov-govuk-aws"):
        dest = repo.root / "docs" / "adr" / folder
        shutil.copytree(ADR_DATA / folder, dest)
    return repo.root


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--commits", type=int, default=2000)
    p.add_argument("--embedder", default="real", choices=["real", "hashing"])
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)

    from predictive.extract import from_commit
    from predictive.ingest import run
    from storage import MemoryStore
    from storage.sources import git
    from storage.sources.records import SkipLog

    embedder = make_embedder(a.embedder)
    embedder.embed(["warm up"])
    work = Path(tempfile.mkdtemp(prefix="lm-bench-ingest-"))
    try:
        t0 = time.perf_counter()
        root = build_project(work, a.commits)
        log(f"project with {a.commits} commits built in {time.perf_counter() - t0:.1f} s")
        import psutil

        process = psutil.Process()
        growth: list[dict[str, float]] = []
        read_s, extract_s, full_s, rerun_s = [], [], [], []
        added = {}
        for r in range(a.repeat):
            t0 = time.perf_counter()
            commits = list(git.read_commits(root, skips=SkipLog()))
            read_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for c in commits:
                from_commit(c, str(root))
            extract_s.append(time.perf_counter() - t0)
            db = work / f"store{r}" / "memory.db"
            store = MemoryStore(db, embedder=embedder)
            rss: dict[int, float] = {}

            def sample(done: int, total: int, message: str | None = None) -> None:
                if message and message.startswith("git:") and done:
                    rss[done] = process.memory_info().rss / 2**20  # noqa: B023

            t0 = time.perf_counter()
            summary = run(
                store, root=root, options={"sources": ["git", "adr", "rules"]}, progress=sample
            ).to_dict()
            full_s.append(time.perf_counter() - t0)
            marks = sorted(rss)
            if marks:  # memory as the history grows: should stay flat
                quarter = [marks[min(len(marks) - 1, len(marks) * q // 4)] for q in (1, 2, 3, 4)]
                growth.append({f"{n} commits": round(rss[n], 1) for n in quarter})
                log(f"RSS (MB) by commits read: {growth[-1]}")
            added = {k: v["added"] for k, v in summary["sources"].items()}
            t0 = time.perf_counter()
            again = run(store, root=root, options={"sources": ["git", "adr", "rules"]}).to_dict()
            rerun_s.append(time.perf_counter() - t0)
            assert again["added"] == 0, again
            store.close()
            log(f"run {r + 1}: {sum(added.values())} memories in {full_s[-1]:.1f} s")
        total = sum(added.values())
        rates = sorted(total / s for s in full_s)
        res = {
            "machine": machine(),
            "load_avg": os.getloadavg(),
            "embedder": a.embedder,
            "commits": a.commits,
            "added": added,
            "full_run": summarize_ms(full_s),
            "memories_per_s_median": round(rates[len(rates) // 2], 1),
            "memories_per_s_min": round(rates[0], 1),
            "git_read": summarize_ms(read_s),
            "commits_read_per_s": round(a.commits / sorted(read_s)[len(read_s) // 2], 1),
            "extract": summarize_ms(extract_s),
            "rerun_nothing_new": summarize_ms(rerun_s),
            "rss_mb_by_commits_read": growth,
        }
        print(machine_line())
        print(f"load average {res['load_avg']}; embedder {a.embedder}; added {added}")
        print(
            table(
                ["step", "p50", "p95", "throughput"],
                [
                    (
                        "full ingest (embedding included)",
                        f"{res['full_run']['p50_ms'] / 1000:.1f} s",
                        f"{res['full_run']['p95_ms'] / 1000:.1f} s",
                        f"{res['memories_per_s_median']} memories/s",
                    ),
                    (
                        "git log read + parse",
                        f"{res['git_read']['p50_ms']:.0f} ms",
                        f"{res['git_read']['p95_ms']:.0f} ms",
                        f"{res['commits_read_per_s']} commits/s",
                    ),
                    (
                        "extraction of commits",
                        f"{res['extract']['p50_ms']:.0f} ms",
                        f"{res['extract']['p95_ms']:.0f} ms",
                        "",
                    ),
                    (
                        "re-run, nothing new",
                        f"{res['rerun_nothing_new']['p50_ms']:.0f} ms",
                        f"{res['rerun_nothing_new']['p95_ms']:.0f} ms",
                        "",
                    ),
                ],
            )
        )
        write_result(f"ingest-{a.embedder}", res)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
