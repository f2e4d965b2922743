"""Text first, meaning behind: ``living-memory ingest`` of real projects, this code beside an
older checkout, one after the other on one machine.

    python -m bench.bench_learning [--project DIR ...] [--devset NAME ...] [--before DIR]
                                   [--commits N ...] [--chat-scale K ...]
                                   [--embedder real|hashing] [--passages N]

Each project (a dev set's workspace, built as ``bench_devset`` builds it, or any git folder)
is ingested by ``living-memory ingest --json`` in a subprocess with a fresh store, for this
code and, with ``--before``, for the code of another checkout (``git worktree add DIR REV``).
``--commits N`` adds a generated history of N commits (``bench_ingest``'s project: three files
a commit, the decision records of ``tests/data/adr``, one rule file of every kind);
``--chat-scale K`` adds the dev set's workspace with its SpecStory conversations copied K
times (each copy its own file and title, every paragraph marked with its copy so that none is
embedded once for all copies; the git history as it is): the dev set's shape at K times its
chat volume.
Reported per run: time to searchable (text and keyword index committed: the summary's
``searchableSeconds``; an older ingest that embedded inline is searchable only at its end),
time to fully embedded (the process exits with no memory or passage left without a vector),
the process's CPU time (user + system, ``wait4``) beside them — on a shared machine the wall
times stretch with the load, CPU time much less —, peak RSS of the process, memories/s to
searchable, passages/s to fully embedded, and the load average before and after.

``--passages N`` also times the embedding model alone on N real passages of the first project
(each checkout's embedder in its own process): texts/s and peak RSS.
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

from bench.common import CACHE_DIR, log, machine, machine_line, table, write_result

HERE = Path(__file__).resolve().parents[1]

_EMBED = """
import json, resource, sys, time
import apsw
from storage.embeddings import embedder_from_env
conn = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY)
texts = [t for (t,) in conn.execute(
    "SELECT text FROM passages ORDER BY id LIMIT ?", (int(sys.argv[2]),))]
emb = embedder_from_env()
emb.embed(["warm up"])
t0 = time.perf_counter()
for i in range(0, len(texts), 128):
    emb.embed(texts[i:i + 128])
print(json.dumps({"texts": len(texts), "seconds": time.perf_counter() - t0}))
"""


def _run(code: Path, args: list[str], env: dict[str, str]) -> tuple[float, int, str, str, float]:
    """Run ``python -c`` or ``-m`` with ``code`` first on the path; (seconds, peak RSS bytes,
    stdout, stderr, CPU seconds: user + system)."""
    env = {**env, "PYTHONPATH": str(code)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args],
        env=env,
        cwd=code,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = b"", b""
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed ({proc.returncode}): {err.decode()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, usage.ru_maxrss * 1024, out.decode(), err.decode(), cpu


def _counts(db: Path) -> dict[str, int]:
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:

        def one(sql: str) -> int:
            return int(conn.execute(sql).fetchone()[0])

        return {
            "memories": one("SELECT count(*) FROM memories"),
            "memories_without_vector": one(
                "SELECT count(*) FROM memories m WHERE NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.memory_id = m.id)"
            ),
            "passages": one("SELECT count(*) FROM passages"),
            "passages_with_vector": one(
                "SELECT count(*) FROM passages WHERE embedding IS NOT NULL"
            ),
            "passages_without_vector": one("SELECT count(*) FROM passages WHERE model_id IS NULL"),
        }
    finally:
        conn.close()


def ingest(code: Path, label: str, root: Path, env: dict[str, str], work: Path) -> dict[str, Any]:
    db = work / f"{label}-{root.name}" / "memory.db"
    env = {**env, "LIVING_MEMORY_DB": str(db)}
    load = os.getloadavg()
    args = ["-m", "server", "ingest", "--root", str(root), "--json"]
    seconds, peak, out, _, cpu = _run(code, args, env)
    summary = json.loads(out)
    searchable = summary.get("searchableSeconds", seconds)
    c = _counts(db)
    passages = c["passages"]
    row = {
        "code": label,
        "project": root.name,
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "searchable_s": round(searchable, 1),
        "embedded_s": round(seconds, 1),
        "cpu_s": round(cpu, 1),
        "peak_rss_mb": round(peak / 2**20),
        "memories": c["memories"],
        "passages": passages,
        "passages_with_vector": c["passages_with_vector"],
        "left_without_vector": c["memories_without_vector"] + c["passages_without_vector"],
        "memories_per_s": round(c["memories"] / searchable, 1) if searchable else None,
        "passages_per_s": round(passages / seconds, 1) if passages else None,
        "db": str(db),
    }
    log(f"{label} {root.name}: {row}")
    return row


def embed_alone(code: Path, label: str, db: Path, n: int, env: dict[str, str]) -> dict[str, Any]:
    load = os.getloadavg()
    _, peak, out, _, _ = _run(code, ["-c", _EMBED, str(db), str(n)], env)
    got = json.loads(out)
    row = {
        "code": label,
        "load_before": [round(x, 2) for x in load],
        "texts": got["texts"],
        "texts_per_s": round(got["texts"] / got["seconds"], 1),
        "peak_rss_mb": round(peak / 2**20),
    }
    log(f"{label} embedding alone: {row}")
    return row


def devset_workspace(name: str) -> Path:
    from bench.bench_devset import DEVSETS, workspace

    return workspace(DEVSETS / name, rebuild=False)


def generated_history(commits: int) -> Path:
    """``bench_ingest``'s generated project of ``commits`` commits (built once, cached)."""
    from bench.bench_ingest import build_project

    folder = CACHE_DIR / f"learning-history-{commits}"
    if not (folder / "repo" / ".git").is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        log(f"generating a history of {commits} commits")
        build_project(folder, commits)
    return folder / "repo"


def chat_scaled(name: str, scale: int) -> Path:
    """The dev set ``name``'s workspace with its SpecStory conversations copied ``scale``
    times (built once, cached): copy k of a conversation has its own file name, and its title
    and first line say which copy it is, so each is a conversation of its own."""
    source = devset_workspace(name)
    folder = CACHE_DIR / f"learning-{name}-chats-x{scale}"
    if (folder / ".git").is_dir():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    log(f"copying {name}'s conversations {scale} times")
    subprocess.run(["git", "clone", "-q", str(source), str(folder)], check=True)
    history = source / ".specstory" / "history"
    target = folder / ".specstory" / "history"
    target.mkdir(parents=True, exist_ok=True)
    for f in sorted(history.glob("*.md")):
        if f.name.startswith("."):  # SpecStory's note on what the folder is
            continue
        text = f.read_text(encoding="utf-8")
        for k in range(scale):
            copy = text if k == 0 else _nth_copy(text, k)
            name_k = f.name if k == 0 else f"{f.stem}-copy{k}{f.suffix}"
            (target / name_k).write_text(copy, encoding="utf-8")
    return folder


def _nth_copy(text: str, k: int) -> str:
    """A SpecStory conversation as its ``k``-th copy: ``(copy k)`` after its title (the
    ``## Title (date)`` line) and at the end of the first line of every paragraph, code
    blocks' inner paragraphs too, so no passage of a copy repeats a passage of the original
    (identical texts are embedded once, and the copies are there to cost what new ones would)."""
    lines = text.split("\n")
    titled = False
    for i, line in enumerate(lines):
        if not titled and line.startswith("## ") and "(" in line and line != "## SpecStory":
            title, _, when = line.rpartition(" (")
            lines[i] = f"{title} (copy {k}) ({when}"
            titled = True
            continue
        starts = i == 0 or not lines[i - 1].strip() or lines[i - 1].lstrip().startswith("```")
        if starts and line.strip() and not line.lstrip().startswith(("```", "#", "_**")):
            lines[i] = f"{line} (copy {k})"
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--project", type=Path, action="append", default=[])
    p.add_argument("--devset", action="append", default=[])
    p.add_argument("--before", type=Path, help="a checkout of the older code to compare")
    p.add_argument("--embedder", default="real", choices=["real", "hashing"])
    p.add_argument("--passages", type=int, default=0)
    p.add_argument("--commits", type=int, action="append", default=[])
    p.add_argument("--chat-scale", type=int, action="append", default=[])
    p.add_argument("--chat-set", default="twat-search", help="the dev set --chat-scale copies")
    p.add_argument("--keep-stores", action="store_true", help="keep the ingested stores")
    a = p.parse_args(argv)

    roots = [devset_workspace(n) for n in a.devset] + [r.resolve() for r in a.project]
    roots += [generated_history(n) for n in a.commits]
    roots += [chat_scaled(a.chat_set, k) for k in a.chat_scale]
    if not roots:
        roots = [devset_workspace("twat-search")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY")}
    env["TZ"] = "Europe/Paris"  # as bench_devset reads the SpecStory headers
    if a.embedder == "hashing":
        env["LIVING_MEMORY_EMBEDDER"] = "hashing"
    codes = [("after", HERE)] + ([("before", a.before.resolve())] if a.before else [])
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="learning-", dir=CACHE_DIR))
    runs = [ingest(code, label, root, env, work) for root in roots for label, code in codes]
    alone = []
    if a.passages:
        db = Path(runs[0]["db"])
        alone = [embed_alone(code, label, db, a.passages, env) for label, code in codes]
    if not a.keep_stores:  # a 10x chat volume's store is large
        shutil.rmtree(work, ignore_errors=True)
    res = {"machine": machine(), "embedder": a.embedder, "runs": runs, "embedding": alone}
    print(machine_line())
    print(f"embedder {a.embedder}")
    print(
        table(
            [
                "project",
                "code",
                "searchable",
                "embedded",
                "CPU (user+sys)",
                "peak RSS",
                "memories/s",
                "passages/s",
                "memories",
                "passages",
                "load (1 min) before→after",
            ],
            [
                (
                    r["project"],
                    r["code"],
                    f"{r['searchable_s']} s",
                    f"{r['embedded_s']} s",
                    f"{r['cpu_s']} s",
                    f"{r['peak_rss_mb']} MB",
                    r["memories_per_s"],
                    r["passages_per_s"],
                    r["memories"],
                    f"{r['passages']} ({r['passages_with_vector']} vectors)",
                    f"{r['load_before'][0]}→{r['load_after'][0]}",
                )
                for r in runs
            ],
        )
    )
    if alone:
        print(
            table(
                ["code", "passages", "passages/s", "peak RSS", "load (1 min)"],
                [
                    (
                        r["code"],
                        r["texts"],
                        r["texts_per_s"],
                        f"{r['peak_rss_mb']} MB",
                        r["load_before"][0],
                    )
                    for r in alone
                ],
            )
        )
    write_result(f"learning-{a.embedder}", res)


if __name__ == "__main__":
    main()
