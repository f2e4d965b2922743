"""``ingest git`` of a long history, alone and beside other writers on the same store.

    python -m bench.bench_ingest_under_load [--commits 2500] [--writers 3] [--timeout 900]
                                            [--embedder hashing|real]

The repository is made with real ``git fast-import``: ``--commits`` commits whose messages are
real ones (the dd-trace-py clone in ``/work/gold-work``, this repository, the dev set's
twat-search), taken in turn until there are enough (a message used again gets a backport
prefix), each commit changing one source file. Two runs, each on a fresh store that first
holds ``--seed`` conventions and decisions (so that the contradiction scan after the ingest
has something to compare every commit with, as it has in a project with notes or rules):

1. **alone**: ``living-memory ingest git`` on the store;
2. **under load**: first an MCP server (``living-memory mcp`` over stdio, driven by the official
   SDK client) and ``--writers`` CLI loops start writing conventions and decisions into the
   same store (``remember``, one after another, as fast as they go); then the same ingest.

Each reports its wall time (or that it did not finish within ``--timeout``), the writers'
writes and errors during the ingest, and the ingest's own summary (the contradiction scan's
share: memories scanned, where it stopped). Results: ``bench/results/ingest_under_load.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, log, machine, machine_line, write_result

THIS_REPO = BENCH_DIR.parent
MESSAGE_SOURCES = (
    Path("/work/gold-work/dd-trace-py"),
    THIS_REPO,
    BENCH_DIR / ".cache" / "devset-ws-twat-search",
)
TOPICS = (
    "the tracer",
    "span sampling",
    "the profiler",
    "the CI matrix",
    "logging",
    "the config loader",
    "the HTTP client",
    "database access",
    "the release process",
    "error handling",
)


def real_messages() -> list[str]:
    """Commit messages of the repositories on this machine (first line and body)."""
    out: list[str] = []
    for repo in MESSAGE_SOURCES:
        if not (repo / ".git").exists():
            continue
        done = subprocess.run(
            ["git", "-C", str(repo), "log", "--no-merges", "--format=%B%x00"],
            capture_output=True,
            text=True,
            check=False,
        )
        out += [m.strip() for m in done.stdout.split("\x00") if len(m.strip()) > 20]
    return out


def make_repo(dest: Path, commits: int) -> int:
    """A git repository of ``commits`` commits made with ``git fast-import``."""
    messages = real_messages()
    if not messages:
        raise SystemExit("no repository with commit messages on this machine")
    dest.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
    t0 = 1_600_000_000
    chunks: list[bytes] = []
    for i in range(commits):
        text = messages[i % len(messages)]
        if i >= len(messages):
            text = f"[backport {i // len(messages)}.x] {text}"
        body = f"# module {i % 60}\nVALUE_{i} = {i}\n".encode()
        msg = text.encode()
        at = t0 + i * 3600
        chunks.append(
            b"commit refs/heads/main\n"
            + f"mark :{i + 1}\n".encode()
            + f"author Dev {i % 7} <dev{i % 7}@example.com> {at} +0000\n".encode()
            + f"committer Dev {i % 7} <dev{i % 7}@example.com> {at} +0000\n".encode()
            + f"data {len(msg)}\n".encode()
            + msg
            + b"\n"
            + (f"from :{i}\n".encode() if i else b"")
            + f"M 100644 inline src/mod{i % 60}.py\ndata {len(body)}\n".encode()
            + body
            + b"\n"
        )
    subprocess.run(
        ["git", "-C", str(dest), "fast-import", "--quiet"], input=b"".join(chunks), check=True
    )
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", "main"], check=True)
    n = subprocess.run(
        ["git", "-C", str(dest), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(n.stdout)


def env_for(data: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
    env.update(LIVING_MEMORY_DATA_DIR=str(data), PYTHONPATH=str(THIS_REPO))
    if embedder == "hashing":
        env["LIVING_MEMORY_EMBEDDER"] = "hashing"
    return env


def cli(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "server.cli", "--db", str(db), *args]


def statement(writer: str, i: int) -> tuple[str, str]:
    """A convention or decision a writer adds (varied, about the repository's topics)."""
    topic = TOPICS[i % len(TOPICS)]
    if i % 2:
        return "convention", f"{writer} note {i}: always log retries in {topic} at debug level"
    return "decision", f"{writer} decision {i}: {topic} keeps a timeout of {10 + i % 50} seconds"


class Writers:
    """CLI loops and an MCP client writing into one store until stopped."""

    def __init__(self, db: Path, repo: Path, data: Path, env: dict[str, str], n: int) -> None:
        self.db, self.repo, self.data, self.env, self.n = db, repo, data, env, n
        self.stop = threading.Event()
        self.writes: dict[str, int] = {}
        self.errors: dict[str, list[str]] = {}
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for w in range(self.n):
            t = threading.Thread(target=self._cli_loop, args=(f"cli{w}",), daemon=True)
            self.threads.append(t)
        self.threads.append(threading.Thread(target=self._mcp_thread, daemon=True))
        for t in self.threads:
            t.start()

    def counts(self) -> dict[str, int]:
        return dict(self.writes)

    def _done(self, name: str, ok: bool, why: str = "") -> None:
        if ok:
            self.writes[name] = self.writes.get(name, 0) + 1
        else:
            self.errors.setdefault(name, []).append(why[-300:])

    def _cli_loop(self, name: str) -> None:
        i = 0
        while not self.stop.is_set():
            kind, text = statement(name, i)
            done = subprocess.run(
                cli(self.db, "remember", "--kind", kind, text),
                cwd=self.repo,
                env=self.env,
                capture_output=True,
                text=True,
                check=False,
            )
            self._done(name, done.returncode == 0, done.stderr)
            i += 1

    def _mcp_thread(self) -> None:
        asyncio.run(self._mcp_loop())

    async def _mcp_loop(self) -> None:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "server", "mcp", "--no-ingest", "--root", str(self.repo)],
            env=self.env,
            cwd=str(self.repo),
        )
        with open(self.data / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                i = 0
                while not self.stop.is_set():
                    kind, text = statement("mcp", i)
                    res = await session.call_tool("remember", {"text": text, "kind": kind})
                    why = "" if not res.is_error else str(res.content[0])
                    self._done("mcp", not res.is_error, why)
                    i += 1

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)


def ingest(db: Path, repo: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """``living-memory ingest git`` on ``db``: wall seconds and its summary (or a timeout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cli(db, "ingest", "git", "--root", str(repo), "--json"),
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"finished": False, "seconds": round(time.perf_counter() - t0, 1)}
    seconds = round(time.perf_counter() - t0, 1)
    if proc.returncode != 0:
        return {"finished": False, "seconds": seconds, "error": err.strip()[-400:]}
    summary = json.loads(out)
    keep = ("added", "existing", "contradictionsOpened", "contradictionsSuspected")
    keep += ("contradictionScan",)
    return {"finished": True, "seconds": seconds, **{k: summary.get(k) for k in keep}}


def seed(db: Path, n: int, embedder: str) -> None:
    """``n`` conventions and decisions in the store before the ingest (the embedder the CLI
    uses under the same setting)."""
    from storage import Kind, MemoryStore, NewMemory
    from storage.embeddings import HashingEmbedder, load_embedder

    emb = HashingEmbedder() if embedder == "hashing" else load_embedder()
    with MemoryStore(db, embedder=emb) as store:
        for i in range(n):
            kind, text = statement("seed", i)
            store.add(NewMemory(text=text, kind=Kind(kind)))
        store.embeddings.embed_pending()


def run(
    repo: Path, tmp: Path, name: str, writers: int, timeout: float, embedder: str, seeded: int
) -> dict:
    data = tmp / name
    data.mkdir()
    env = env_for(data, embedder)
    # the MCP server keeps the project's store in its data folder: every run uses that file
    from storage.paths import project_key

    db = data / "projects" / project_key(repo) / "memory.db"
    db.parent.mkdir(parents=True)
    seed(db, seeded, embedder)
    load: Writers | None = None
    if writers:
        load = Writers(db, repo, data, env, writers)
        load.start()
        time.sleep(15)  # every writer is up and writing
    before = load.counts() if load else {}
    uptime = os.getloadavg()
    result = ingest(db, repo, env, timeout)
    if load is not None:
        during = {k: v - before.get(k, 0) for k, v in load.counts().items()}
        load.close()
        result["writesDuringIngest"] = during
        result["writerErrors"] = {k: len(v) for k, v in load.errors.items()}
        result["writerErrorSample"] = [e for v in load.errors.values() for e in v[:2]]
    result["loadAverageAtStart"] = [round(x, 2) for x in uptime]
    result["loadAverageAtEnd"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=2500)
    ap.add_argument("--writers", type=int, default=3, help="CLI writer loops beside the MCP one")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before giving up")
    ap.add_argument("--embedder", default="hashing", choices=("hashing", "real"))
    ap.add_argument("--only", choices=("alone", "load"), help="one of the two runs")
    ap.add_argument("--seed", type=int, default=40, help="conventions and decisions first")
    args = ap.parse_args(argv)
    m = machine()
    log(machine_line(m))
    out: dict[str, Any] = {"machine": m, "embedder": args.embedder, "seeded": args.seed}
    with tempfile.TemporaryDirectory(prefix="ingest-load-") as tmp_name:
        tmp = Path(tmp_name)
        repo = tmp / "repo"
        out["commits"] = make_repo(repo, args.commits)
        log(f"repository: {out['commits']} commits (git fast-import, real messages)")
        for name, writers in (("alone", 0), ("load", args.writers)):
            if args.only and args.only != name:
                continue
            log(f"{name}: ingest git of {out['commits']} commits ({writers} CLI writers + MCP)")
            r = run(repo, tmp, name, writers, args.timeout, args.embedder, args.seed)
            out[name] = r
            state = f"{r['seconds']} s" if r["finished"] else f"NOT FINISHED after {r['seconds']} s"
            log(f"{name}: {state}; {json.dumps({k: v for k, v in r.items() if k != 'seconds'})}")
    path = write_result("ingest_under_load", out)
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
