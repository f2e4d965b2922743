"""Agent hooks replayed on a dev set: the set's conversations arrive through the hook events in
time order, as a Claude Code session would send them.

    python -m bench.bench_hooks [--set twat-search] [--embedder real|hashing]
                                [--sessions N] [--latency N] [--budget TOKENS] [--rebuild]

For each conversation (SpecStory exports, oldest first) the store starts from the project's
first run (git history, decision records, rule files: what ``SessionStart`` learns in a new
project) and the conversations before it, each captured turn by turn. Each user message is a
``UserPromptSubmit``: the answer (:meth:`ProjectSession.answer_prompt`, as of the message's
time) is scored against what the rest of the conversation shows was needed — the project
files its later messages work on (named by the assistant or its tools). An answer hits when
one of its memories is anchored to such a file. The baseline injects the file-open context of
the last file the conversation worked on before the prompt (nothing at a conversation's first
prompt), cut to the same budget. After each turn the transcript so far is written in Claude
Code's format and a ``Stop`` captures it (:func:`capture_transcript`); the session must then
be found by a search for the prompt.

Latency: a sample of the prompts is sent through the real command (``python -m server hook
UserPromptSubmit``) as a subprocess, process start included: answered in the process (no
daemon wanted, ``LIVING_MEMORY_HOOK_DAEMON=0``), the fallback while a daemon is starting (it
answers nothing), then warm (with ``hook serve`` running), and a ``Stop`` sent to the warm
daemon (its learning runs after the answer); the load average is written beside the numbers.
The project's first run is built once per set and embedder and copied for each replay
(``--rebuild`` learns it again); each scored prompt is appended to ``rows.jsonl`` in the
replay's folder as it happens, so a long replay can be read while it runs (``--latency 0``
skips the subprocess timings).
SpecStory's old layout carries no time per message: message ``i`` of a conversation is dated
its header time plus ``i`` seconds.
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

os.environ["TZ"] = "Europe/Paris"  # the set's SpecStory headers are local times (README)
time.tzset()

from bench.bench_devset import DEVSETS, CachedEmbedder, workspace  # noqa: E402
from bench.common import (  # noqa: E402
    CACHE_DIR,
    log,
    make_embedder,
    summarize_ms,
    table,
    write_result,
)

ROOT = Path(__file__).resolve().parents[1]


def _turns(messages: list[Any]) -> list[tuple[int, int]]:
    """(first, end) message indexes of each turn: a user message and what follows it."""
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    return [
        (s, starts[n + 1] if n + 1 < len(starts) else len(messages)) for n, s in enumerate(starts)
    ]


def _transcript(path: Path, sid: str, cwd: Path, messages: list[Any], t0: float) -> None:
    """Claude Code's transcript of ``messages`` (a tool step is the assistant's text)."""
    lines = []
    parent = None
    for i, m in enumerate(messages):
        role = "user" if m.role == "user" else "assistant"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + i)) + ".000Z"
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": m.text}]}
        if role == "assistant":
            message["id"] = f"msg_{sid}_{i}"
        lines.append(
            json.dumps(
                {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "type": role,
                    "uuid": f"{sid}-{i}",
                    "sessionId": sid,
                    "cwd": str(cwd),
                    "timestamp": stamp,
                    "message": message,
                }
            )
        )
        parent = f"{sid}-{i}"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _files_of(ids: list[int], store: Any) -> list[set[str]]:
    from storage import AnchorType

    return [{a.value for a in m.anchors if a.type is AnchorType.FILE} for m in store.get_many(ids)]


def first_run(ws: Path, store: Any) -> None:
    """What ``SessionStart`` learns in a new project (git, decision records, rule files)."""
    from predictive.session import ProjectSession

    session = ProjectSession(ws, store, owns_store=False)
    t0 = time.perf_counter()
    session.first_run()
    session.embed_pending()
    session.fill_levels()
    log(f"first run in {time.perf_counter() - t0:.0f} s: {store.count()} memories")


def replay(
    ws: Path,
    store: Any,
    convs: list[Any],
    budget: int,
    folder: Path,
    progress: Path | None = None,
) -> dict[str, Any]:
    """Play ``convs`` through the hook events; ``progress``: each prompt's row is appended
    there as it is scored (a long replay can be read before it ends)."""
    from predictive.engine import ContextRequest
    from predictive.mentions import count as count_mentions
    from predictive.operations.capture import capture_transcript, note_files
    from predictive.operations.prompt import BriefArgs, PromptArgs, project_files
    from predictive.retrieval import find
    from predictive.session import ProjectSession
    from predictive.tokens import count_tokens

    session = ProjectSession(ws, store, owns_store=False)
    files = project_files(ws)
    folder.mkdir(exist_ok=True)
    rows: list[dict[str, Any]] = []
    stops: list[float] = []
    answers: list[float] = []
    searchable = found_after_stop = 0
    brief_tokens: list[int] = []
    for n, conv in enumerate(convs):
        msgs = list(conv.messages)
        start = conv.started_at or 0.0
        sid = f"{conv.external_id}"
        brief = session.brief(BriefArgs(as_of=start))
        brief_tokens.append(brief.tokens)
        path = folder / f"{n:03d}.jsonl"
        worked: list[str] = []
        for first, end in _turns(msgs):
            at = start + first
            prompt = msgs[first].text
            later = [m.text for m in msgs[first + 1 :] if m.role != "user"]
            needed = set(count_mentions(later, files))
            t = time.perf_counter()
            ours = session.answer_prompt(
                PromptArgs(prompt, conversation=sid, budget=budget, as_of=at, record=False)
            )
            answers.append(time.perf_counter() - t)
            ours_hit = any(set(i.files) & needed for i in ours.items)
            base_hit, base_tokens = False, 0
            if worked:
                ctx = session.engine.assemble(
                    ContextRequest(path=worked[-1], budget=budget, root=str(ws), as_of=at),
                    record=False,
                )
                base_tokens = count_tokens(ctx.markdown)
                base_hit = any(f & needed for f in _files_of(ctx.memory_ids, store))
            rows.append(
                {
                    "session": n,
                    "turn": first,
                    "needed": len(needed),
                    "ours_hit": ours_hit,
                    "ours_tokens": ours.tokens,
                    "ours_items": len(ours.items),
                    "base_hit": base_hit,
                    "base_tokens": base_tokens,
                }
            )
            if progress is not None:
                with progress.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(rows[-1]) + "\n")
            turn_files = list(count_mentions([m.text for m in msgs[first + 1 : end]], files))
            note_files(store, "claude", sid, turn_files)  # PostToolUse
            worked += [f for f in turn_files if f not in worked[-1:]]
            _transcript(path, sid, ws, msgs[:end], start)
            t = time.perf_counter()
            done = capture_transcript(store, ws, "claude", sid, path)  # Stop
            if done.added:  # as the hook's learning does (server.hooks.handler.run_background)
                session.fill_levels()
            stops.append(time.perf_counter() - t)
            live = find(store, prompt[:2000], k=10)
            searchable += 1
            found_after_stop += any(f.unit == f"session:claude:{sid}" for f in live)
        log(f"session {n + 1}/{len(convs)}: {len(_turns(msgs))} prompts, {store.count()} memories")
    scored = [r for r in rows if r["needed"]]

    def rate(key: str) -> float:
        return round(sum(r[key] for r in scored) / len(scored), 3) if scored else 0.0

    def mean(key: str, rs: list[dict[str, Any]]) -> float:
        return round(sum(r[key] for r in rs) / len(rs), 1) if rs else 0.0

    return {
        "prompts": len(rows),
        "prompts_with_evidence": len(scored),
        "hit_rate": {"hooks": rate("ours_hit"), "baseline_last_file": rate("base_hit")},
        "tokens_per_prompt": {
            "hooks": mean("ours_tokens", rows),
            "baseline_last_file": mean("base_tokens", rows),
            "hooks_when_something_said": mean("ours_tokens", [r for r in rows if r["ours_tokens"]]),
        },
        "prompts_answered": sum(1 for r in rows if r["ours_items"]),
        "brief_tokens_mean": round(sum(brief_tokens) / max(1, len(brief_tokens)), 1),
        "session_found_after_stop": round(found_after_stop / max(1, searchable), 3),
        "answer_in_process": summarize_ms(answers),
        "stop_capture_in_process": summarize_ms(stops),
        "rows": rows,
    }


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _children_cpu() -> float:
    """CPU seconds (user and system) of the waited-for child processes so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _process_cpu(pid: int) -> float:
    """CPU seconds (user and system, all threads) a running process has used (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latency(
    ws: Path,
    db: Path,
    prompts: list[str],
    embedder: str,
    transcript: str,
    *,
    cold_too: bool = True,
    form: str = "installed",
) -> dict[str, Any]:
    """The real command as a subprocess: cold (no daemon), then warm (daemon running), wall
    time and CPU time (the client's own, and the daemon's while it answered)."""
    data = Path(tempfile.mkdtemp(prefix="lm-hooks-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY")}
    env.update(
        LIVING_MEMORY_DB=str(db),
        LIVING_MEMORY_DATA_DIR=str(data),
        LIVING_MEMORY_HOOK_DAEMON="0",
        PYTHONPATH=str(ROOT),
    )
    if embedder == "hashing":
        env["LIVING_MEMORY_EMBEDDER"] = "hashing"
    import shlex

    from server.hooks.install import hook_command

    def cmd(event: str) -> list[str]:
        """The command as installed (``form="installed"``) or as ``python -m server hook``."""
        if form == "module":
            return [sys.executable, "-P", "-m", "server", "hook", event, "--client", "claude"]
        return shlex.split(hook_command("claude", event, sys.executable))

    cpu: dict[str, list[float]] = {"client": [], "daemon": []}
    daemon_pid: list[int] = []

    def once(e: dict[str, str], prompt: str, event: str = "UserPromptSubmit") -> tuple[float, int]:
        """Wall seconds and characters said; the client's and the daemon's CPU go to ``cpu``."""
        payload = {
            "session_id": "bench-latency",
            "transcript_path": transcript,
            "cwd": str(ws),
            "permission_mode": "default",
            "hook_event_name": event,
            "prompt": prompt,
        }
        c0 = _children_cpu()
        d0 = _process_cpu(daemon_pid[0]) if daemon_pid else 0.0
        t = time.perf_counter()
        out = subprocess.run(
            cmd(event),
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=e,
            cwd=ws,
        )
        took = time.perf_counter() - t
        cpu["client"].append(_children_cpu() - c0)
        if daemon_pid:
            cpu["daemon"].append(_process_cpu(daemon_pid[0]) - d0)
        return took, len(out.stdout)

    out: dict[str, Any] = {"load_before": _load(), "command": shlex.join(cmd("EVENT"))}
    if cold_too:
        cold = [once(env, p)[0] for p in prompts]
        out["cold"] = summarize_ms(cold)
        out["load_after_cold"] = _load()
    warm_env = {**env, "LIVING_MEMORY_HOOK_DAEMON": "1"}
    # no daemon yet, one starting (its lock is fresh, so none is started here): nothing said
    (data / "hooks").mkdir(parents=True, exist_ok=True)
    starting = data / "hooks" / "daemon.starting"
    fallback = []
    for p in prompts[:10]:
        starting.touch()
        took, said = once(warm_env, p)
        fallback.append(took)
        out.setdefault("fallback_said_chars", 0)
        out["fallback_said_chars"] += said
    starting.unlink()
    out["fallback_no_daemon"] = summarize_ms(fallback)
    t_spawn = time.perf_counter()
    daemon = subprocess.Popen(
        [sys.executable, "-P", "-m", "server", "hook", "serve", "--idle", "600"],
        env=warm_env,
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        sock = data / "hooks" / "daemon.sock"
        deadline = time.monotonic() + 120
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        hooks_log = data / "hooks" / "hooks.log"
        warmed = ("warm after", "warming up failed", "no project memory")
        while time.monotonic() < deadline and not any(
            w in (hooks_log.read_text(encoding="utf-8") if hooks_log.exists() else "")
            for w in warmed
        ):
            time.sleep(0.2)  # the daemon opens the store and loads the model once
        # a new daemon's start: until it answers with what it knows (the prompts before it get
        # nothing, at once)
        out["daemon_spawn_to_warm_ms"] = round(1e3 * (time.perf_counter() - t_spawn), 1)
        once(warm_env, prompts[0])
        daemon_pid.append(daemon.pid)
        cpu["client"].clear()
        out["load_before_warm"] = _load()
        warm = [once(warm_env, p)[0] for p in prompts]
        out["warm"] = summarize_ms(warm)
        out["warm_cpu_client"] = summarize_ms(cpu["client"])
        out["warm_cpu_daemon"] = summarize_ms(cpu["daemon"])
        out["load_after_warm"] = _load()
        out["warm_stop"] = summarize_ms([once(warm_env, "", "Stop")[0] for _ in prompts[:10]])
        bare = []
        for _ in range(min(10, len(prompts))):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-P", "-c", "pass"], env=env)
            bare.append(time.perf_counter() - t)
        out["python_start_only"] = summarize_ms(bare)
        bare_s = []
        for _ in range(min(10, len(prompts))):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-S", "-P", "-c", "pass"], env=env)
            bare_s.append(time.perf_counter() - t)
        out["python_start_without_site"] = summarize_ms(bare_s)
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        out["load_after"] = _load()
        shutil.rmtree(data, ignore_errors=True)
    return out


def latency_only(ws: Path, a: argparse.Namespace, convs: list[Any]) -> int:
    """The warm ``UserPromptSubmit`` over the whole set's store (every conversation learned):
    ``--latency`` prompts of the set, evenly spread, through the real command."""
    from bench.bench_devset import ingest
    from predictive.session import ProjectSession

    store, _ = ingest(ws, a.set, a.embedder, False)
    ProjectSession(ws, store, owns_store=False).fill_levels()  # as a prepared store has them
    store.close()
    db = CACHE_DIR / f"devset-store-{a.set}-{a.embedder}" / "memory.db"
    prompts = [m.text for c in convs for m in c.messages if m.role == "user" and m.text.strip()]
    step = max(1, len(prompts) // max(1, a.latency))
    sample = prompts[::step][: a.latency]
    transcript = str(Path(tempfile.mkdtemp(prefix="lm-hooks-t-")) / "none.jsonl")
    lat = latency(ws, db, sample, a.embedder, transcript, cold_too=False, form=a.form)
    payload = {"set": a.set, "embedder": a.embedder, "prompts": len(sample), "latency": lat}
    path = write_result(f"hooks-latency-{a.set}-{a.embedder}-{a.form}", payload)
    w, cc, dc = lat["warm"], lat["warm_cpu_client"], lat["warm_cpu_daemon"]
    print(
        f"warm UserPromptSubmit wall p50 {w['p50_ms']:.0f} / p95 {w['p95_ms']:.0f} ms; "
        f"CPU client p50 {cc['p50_ms']:.0f} / p95 {cc['p95_ms']:.0f} ms, "
        f"daemon p50 {dc['p50_ms']:.0f} / p95 {dc['p95_ms']:.0f} ms; "
        f"warm Stop p50 {lat['warm_stop']['p50_ms']:.0f} ms; "
        f"python start {lat['python_start_only']['p50_ms']:.0f} ms; "
        f"a new daemon warm {lat['daemon_spawn_to_warm_ms']:.0f} ms after its spawn "
        f"(prompts before it: nothing, p50 {lat['fallback_no_daemon']['p50_ms']:.0f} ms); "
        f"load {lat['load_before_warm']} -> {lat['load_after_warm']}"
    )
    print(f"written {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--set", default="twat-search")
    ap.add_argument("--embedder", default="real", choices=["real", "hashing"])
    ap.add_argument("--sessions", type=int, help="only the first N conversations")
    ap.add_argument("--latency", type=int, default=30, help="prompts timed (0: none)")
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("--rebuild", action="store_true", help="learn the project's first run again")
    ap.add_argument(
        "--form",
        choices=["installed", "module"],
        default="installed",
        help="the command timed: as `hook install` writes it, or `python -P -m server hook`",
    )
    ap.add_argument(
        "--latency-only",
        action="store_true",
        help="only the warm command's latency, over the set ingested whole (bench_devset's store)",
    )
    a = ap.parse_args(argv)

    from storage import MemoryStore
    from storage.sources.chats import read_all
    from storage.sources.records import SkipLog

    devset = DEVSETS / a.set
    ws = workspace(devset, rebuild=False)
    convs = sorted(
        read_all(ws, tools=("specstory",), skips=SkipLog()), key=lambda c: c.started_at or 0
    )[: a.sessions]
    if a.latency_only:
        return latency_only(ws, a, convs)
    d = CACHE_DIR / f"hooks-{a.set}-{a.embedder}"
    shutil.rmtree(d, ignore_errors=True)
    emb = make_embedder(a.embedder)
    if a.embedder == "real":
        emb = CachedEmbedder(emb)
    # the project's first run is the same for every replay of a set: built once, copied after
    built = CACHE_DIR / f"hooks-{a.set}-{a.embedder}-first-run"
    if a.rebuild or not (built / "done").exists():
        shutil.rmtree(built, ignore_errors=True)
        built.mkdir(parents=True)
        with MemoryStore(built / "memory.db", embedder=emb) as first:
            first_run(ws, first)
        (built / "done").write_text(time.strftime("%Y-%m-%dT%H:%M:%S"), encoding="utf-8")
    shutil.copytree(built, d, ignore=shutil.ignore_patterns("done"))
    log(f"first run's store copied from {built}")
    store = MemoryStore(d / "memory.db", embedder=emb)
    try:
        t0 = time.perf_counter()
        result = replay(ws, store, convs, a.budget, d / "transcripts", d / "rows.jsonl")
        result["replay_seconds"] = round(time.perf_counter() - t0, 1)
    finally:
        store.close()
    step = max(1, len(result["rows"]) // max(1, a.latency))
    sample = [convs[r["session"]].messages[r["turn"]].text for r in result["rows"][::step]]
    last = sorted((d / "transcripts").glob("*.jsonl"))[-1]
    if a.latency > 0:
        result["latency"] = latency(ws, d / "memory.db", sample[: a.latency], a.embedder, str(last))
    rows = result.pop("rows")
    payload = {
        "set": a.set,
        "embedder": a.embedder,
        "budget": a.budget,
        "conversations": len(convs),
        **result,
        "rows": rows,
    }
    path = write_result(f"hooks-{a.set}-{a.embedder}", payload)
    print(
        table(
            ["measure", "hooks", "baseline (last file's context)"],
            [
                ["hit rate", result["hit_rate"]["hooks"], result["hit_rate"]["baseline_last_file"]],
                [
                    "tokens per prompt",
                    result["tokens_per_prompt"]["hooks"],
                    result["tokens_per_prompt"]["baseline_last_file"],
                ],
            ],
        )
    )
    print(
        f"prompts {result['prompts']} ({result['prompts_with_evidence']} with evidence), "
        f"answered {result['prompts_answered']}, session found after Stop "
        f"{result['session_found_after_stop']}"
    )
    lat = result.get("latency")
    if lat:
        print(
            f"latency cold p50 {lat['cold']['p50_ms']:.0f} / p95 {lat['cold']['p95_ms']:.0f} ms; "
            f"no daemon yet p50 {lat['fallback_no_daemon']['p50_ms']:.0f} ms; "
            f"warm p50 {lat['warm']['p50_ms']:.0f} / p95 {lat['warm']['p95_ms']:.0f} ms; "
            f"warm Stop p50 {lat['warm_stop']['p50_ms']:.0f} ms; "
            f"python start {lat['python_start_only']['p50_ms']:.0f} ms; load {lat['load_before']}"
        )
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
