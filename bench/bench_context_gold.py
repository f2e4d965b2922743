"""The context as its reader needs it: ../shared/data/context-gold, scored by its own score.py.

    python -m bench.bench_context_gold [--repos twat-search,dd-trace-py] [--work DIR] [--fresh]

Builds each repository's workspace offline (its ``extract.sh``), runs the scorer against this
checkout's ``living-memory`` (one ingest into an empty database per repository and tool
version — the database is named after the commit, so a new commit ingests again — then one
``context FILE --json`` per case) and its BM25 baseline, and writes the summary lines, the
per-file rows and the recall by origin to ``bench/results/context_gold.json`` and a table to
stdout. Contexts are written to ``<work>/out-<repo>-<commit>/`` to be read.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import log, write_result

HERE = Path(__file__).resolve().parent
SHARED = next(
    (p for p in (HERE.parents[1] / "shared", Path("/work/shared")) if p.is_dir()),
    HERE.parents[1] / "shared",
)
GOLD = SHARED / "data" / "context-gold"
EXTRACT = {
    "twat-search": SHARED / "data" / "devset" / "twat-search" / "extract.sh",
    "dd-trace-py": GOLD / "extract.sh",
}
_SUMMARY = re.compile(r"^(gold|baseline): (.*)$")
_PAIR = re.compile(r"(\w+)=([\d.]+)")


def commit() -> str:
    out = subprocess.run(
        ["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() or "unknown"


def workspace(repo: str, work: Path) -> Path:
    ws = work / repo
    if not (ws / ".git").exists():
        log(f"building the {repo} workspace in {ws}")
        subprocess.run(["bash", str(EXTRACT[repo]), str(ws)], check=True, cwd=HERE.parent)
    return ws


def score(repo: str, ws: Path, args: list[str], env: dict[str, str] | None = None) -> str:
    import os

    cmd = [sys.executable, str(GOLD / "score.py"), repo, str(ws), *args]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"score.py failed for {repo}: {proc.stderr[-2000:]}")
    return proc.stdout


def parse(out: str) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    rows = []
    origin = ""
    for line in out.splitlines():
        m = _SUMMARY.match(line)
        if m:
            summary = {k: float(v) for k, v in _PAIR.findall(m.group(2))}
        elif line.startswith("# by origin"):
            origin = line.removeprefix("# by origin:").strip()
        elif re.match(r"^[AB]\d+\s", line):
            rows.append(" ".join(line.split()))
    return {"summary": summary, "by_origin": origin, "files": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repos", default="twat-search,dd-trace-py")
    ap.add_argument("--work", type=Path, default=HERE.parents[1] / "gold-work")
    ap.add_argument("--fresh", action="store_true", help="ingest again even if the db exists")
    a = ap.parse_args()
    tool = str(Path(sys.executable).parent / "living-memory")
    version = commit()
    results: dict[str, Any] = {"commit": version, "repos": {}}
    for repo in [r.strip() for r in a.repos.split(",") if r.strip()]:
        ws = workspace(repo, a.work)
        db = a.work / f"{repo}-{version}.db"
        if a.fresh:
            for p in a.work.glob(f"{repo}-{version}.db*"):
                p.unlink()
        out_dir = a.work / f"out-{repo}-{version}"
        t0 = time.perf_counter()
        mine = parse(
            score(repo, ws, [tool, "-v", "--out", str(out_dir)], {"LIVING_MEMORY_DB": str(db)})
        )
        mine["seconds"] = round(time.perf_counter() - t0, 1)
        base = parse(score(repo, ws, ["--baseline"]))
        results["repos"][repo] = {
            "tool": mine,
            "baseline": base,
            "contexts": str(out_dir),
            "commit": version,
        }
        log(f"{repo}: {mine['summary']} (baseline {base['summary']})")
    # repositories measured in an earlier run (another commit) stay, each with its commit
    earlier = HERE / "results" / "context_gold.json"
    if earlier.exists():
        try:
            kept = json.loads(earlier.read_text()).get("repos", {})
        except (OSError, json.JSONDecodeError):
            kept = {}
        for repo, r in kept.items():
            results["repos"].setdefault(repo, r)
    for r in results["repos"].values():
        r.setdefault("commit", version)
    write_result("context_gold", results)
    print("| repo | system | quote_recall | must_not | false_contradictions | fragments | tokens |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for repo, r in results["repos"].items():
        for name in ("tool", "baseline"):
            s = r[name]["summary"]
            print(
                f"| {repo} | {name} | {s.get('quote_recall', 0):.2f} | {s.get('must_not', 0):.0f} "
                f"| {s.get('false_contradictions', 0):.0f} | {s.get('fragments', 0):.0f} "
                f"| {s.get('tokens_mean', 0):.0f} |"
            )


if __name__ == "__main__":
    main()
