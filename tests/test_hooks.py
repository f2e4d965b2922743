"""``living-memory hook``: each client's recorded event shapes (tests/data/hooks) driven
through the real command as a subprocess; answers checked against what the client accepts;
bad input never reaches the agent; a live session and its later ingestion are one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from project_fixtures import GitRepo

from storage import MemoryStore
from storage.embeddings import HashingEmbedder
from storage.sessions import sessions_of
from storage.sources.records import INJECTED_CLOSE, INJECTED_OPEN

ROOT = Path(__file__).resolve().parents[1]
SHAPES = Path(__file__).resolve().parent / "data" / "hooks"
SESSION = "5d1c3e0a-8b7f-4c51-9a3e-2f6d0b9c4e11"
PROMPT = "Why does the payment retry loop give up after the retries in src/retry.py?"
HOOK = [sys.executable, "-P", "-m", "server", "hook"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = GitRepo.init(tmp_path / "proj")
    repo.commit(
        "Retry payments with exponential backoff\n\nThe payment gateway drops idle "
        "connections; retry loop gives up after five retries with exponential backoff.",
        {"src/retry.py": "RETRIES = 3\n\ndef retry(call):\n    return call()\n"},
    )
    repo.commit(
        "Document the release checklist",
        {
            "AGENTS.md": "# Conventions\n\n- Always run ruff and mypy before committing.\n",
            "CLAUDE.md": "# Tooling\n\n- Dependencies are managed with uv; never call pip.\n",
        },
    )
    return repo.root


@pytest.fixture
def hook_env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY")}
    e["LIVING_MEMORY_DATA_DIR"] = str(tmp_path / "data")
    e["LIVING_MEMORY_EMBEDDER"] = "hashing"
    e["LIVING_MEMORY_HOOK_SYNC"] = "1"  # learn before exiting, so the test can look
    e["LIVING_MEMORY_HOOK_DAEMON"] = "0"
    e["HOME"] = str(tmp_path / "home")
    e["PYTHONPATH"] = str(ROOT)
    return e


def shape(client: str, event: str, **values: str) -> dict[str, Any]:
    """A recorded event with its placeholders (@CWD@, @SESSION@, …) filled in."""
    text = (SHAPES / client / f"{event}.json").read_text(encoding="utf-8")
    defaults = {"SESSION": SESSION, "PROMPT": PROMPT, "TEXT": "Done.", "TRANSCRIPT": ""}
    for key, value in {**defaults, **values}.items():
        text = text.replace(f"@{key}@", json.dumps(value)[1:-1])
    return json.loads(text)


def run(
    env: dict[str, str],
    client: str,
    event: str,
    payload: Any,
    cwd: Path,
    *,
    arg: str | None = None,
) -> subprocess.CompletedProcess[str]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    cmd = [*HOOK, event, "--client", client, *([arg] if arg else [])]
    return subprocess.run(
        cmd, input=data, capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def db_of(env: dict[str, str]) -> Path:
    (db,) = Path(env["LIVING_MEMORY_DATA_DIR"]).glob("projects/*/memory.db")
    return db


def open_store(env: dict[str, str]) -> MemoryStore:
    return MemoryStore(db_of(env), embedder=HashingEmbedder())


def log_text(env: dict[str, str]) -> str:
    path = Path(env["LIVING_MEMORY_DATA_DIR"]) / "hooks" / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def claude_context(out: str, event: str) -> str:
    """The additionalContext of a Claude Code answer, checked against its schema: an object
    with only ``hookSpecificOutput``, which has exactly the event's name and the text."""
    data = json.loads(out)
    assert set(data) == {"hookSpecificOutput"}
    spec = data["hookSpecificOutput"]
    assert set(spec) == {"hookEventName", "additionalContext"}
    assert spec["hookEventName"] == event
    assert isinstance(spec["additionalContext"], str) and spec["additionalContext"]
    return str(spec["additionalContext"])


def claude_line(record: dict[str, Any], n: int, parent: str | None) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": record["type"],
        "uuid": f"u{n}",
        "sessionId": SESSION,
        "cwd": record["cwd"],
        "gitBranch": "main",
        "timestamp": record["timestamp"],
        "message": record["message"],
    }


def write_transcript(path: Path, turns: list[tuple[str, Any]], cwd: Path, t0: float) -> None:
    """A Claude Code transcript (FORMATS.md shape) of ``turns`` (role, content), one second
    apart from ``t0``."""
    lines = []
    parent = None
    for n, (role, content) in enumerate(turns):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + n)) + ".000Z"
        message: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            message["id"] = f"msg_{n}"
            message["model"] = "claude-sonnet-4"
        rec = {"type": role, "cwd": str(cwd), "timestamp": stamp, "message": message}
        lines.append(json.dumps(claude_line(rec, n, parent)))
        parent = f"u{n}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def tree(folder: Path, *, leave: Path | None = None) -> dict[str, bytes]:
    """Every file under ``folder`` (git's own folder and ``leave`` left out)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file()
        and ".git" not in p.relative_to(folder).parts
        and (leave is None or leave not in p.parents)
    }


def outside_data(env: dict[str, str]) -> dict[str, bytes]:
    """Every file of the test's folders (the project, HOME, …) but the data directory."""
    data = Path(env["LIVING_MEMORY_DATA_DIR"])
    return tree(data.parent, leave=data)


# ---- Claude Code -----------------------------------------------------------------------------


def test_claude_session_from_start_to_end(project: Path, hook_env: dict[str, str]) -> None:
    before = outside_data(hook_env)
    transcript = Path(hook_env["HOME"]) / ".claude" / "projects" / "p" / f"{SESSION}.jsonl"
    values = {"CWD": str(project), "TRANSCRIPT": str(transcript)}

    first = run(
        hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project
    )
    assert first.returncode == 0 and first.stderr == ""
    # a new project's history is learned on its first session (here before exiting)
    start = run(
        hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project
    )
    brief = claude_context(start.stdout, "SessionStart")
    assert "ruff and mypy" in brief  # a project-wide convention (AGENTS.md)
    assert "managed with uv" not in brief  # Claude Code reads CLAUDE.md itself
    assert brief.startswith(INJECTED_OPEN) and brief.rstrip().endswith(INJECTED_CLOSE)

    asked = run(
        hook_env,
        "claude",
        "UserPromptSubmit",
        shape("claude", "UserPromptSubmit", **values),
        project,
    )
    assert asked.returncode == 0 and asked.stderr == ""
    answer = claude_context(asked.stdout, "UserPromptSubmit")
    assert "exponential backoff" in answer  # the commit about the file the prompt names
    with open_store(hook_env) as store:
        commit = next(m for m in store.list() if m.source == "git" and "backoff" in m.text)
        assert f"#{commit.id}" in answer
        assert commit.retrieval_count >= 1  # what was injected is in the usage log

    edit = run(
        hook_env,
        "claude",
        "PostToolUse",
        shape("claude", "PostToolUse", FILE=str(project / "src" / "retry.py"), **values),
        project,
    )
    assert edit.returncode == 0 and edit.stdout == ""

    t0 = time.time()
    turns: list[tuple[str, Any]] = [
        ("user", PROMPT + f"\n\n{INJECTED_OPEN}\nleaked block about #999\n{INJECTED_CLOSE}"),
        ("assistant", [{"type": "text", "text": f"Per #{commit.id} the loop uses backoff."}]),
    ]
    write_transcript(transcript, turns, project, t0)
    stop = run(hook_env, "claude", "Stop", shape("claude", "Stop", **values), project)
    assert stop.returncode == 0 and stop.stdout == ""
    with open_store(hook_env) as store:
        sessions = sessions_of(store)
        live = sessions.find("claude", SESSION)
        assert live is not None  # after Stop the session is searchable
        texts = [m.text for m in sessions.messages(live.id)]
        assert all("leaked block" not in t and INJECTED_OPEN not in t for t in texts)
        cited = store.get(commit.id)
        assert cited.citation_count == 1  # the agent cited what it was handed

    # the transcript grows; the next events learn only what is new, in the same conversation
    turns += [
        ("user", "Now raise the retries to five."),
        ("assistant", [{"type": "text", "text": "Raised RETRIES to 5 in src/retry.py."}]),
    ]
    write_transcript(transcript, turns, project, t0)
    for event in ("PreCompact", "SessionEnd"):
        done = run(hook_env, "claude", event, shape("claude", event, **values), project)
        assert done.returncode == 0 and done.stdout == ""
    with open_store(hook_env) as store:
        sessions = sessions_of(store)
        assert len(sessions.list(tool="claude")) == 1
        live = sessions.find("claude", SESSION)
        assert live is not None and len(sessions.messages(live.id)) == 4
    assert "unchanged" in log_text(hook_env)  # SessionEnd found nothing new after PreCompact

    # the same transcript ingested later is the same conversation, not a second one
    env = {**hook_env, "LIVING_MEMORY_DB": str(db_of(hook_env))}
    ingested = subprocess.run(
        [
            sys.executable,
            "-m",
            "server",
            "ingest",
            "chats",
            "--source",
            "claude",
            "--path",
            str(transcript),
            "--root",
            str(project),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=120,
    )
    assert ingested.returncode == 0, ingested.stderr
    report = json.loads(ingested.stdout)["sources"]["chats"]
    assert report["unchanged"] == 1 and report.get("sessions", 0) == 0
    with open_store(hook_env) as store:
        assert len(sessions_of(store).list(tool="claude")) == 1

    # a hook writes nothing outside the data directory (the transcript is the test's)
    after = outside_data(hook_env)
    after.pop(transcript.relative_to(Path(hook_env["HOME"]).parent).as_posix())
    assert after == before


def test_a_prompt_with_nothing_relevant_gets_nothing(
    project: Path, hook_env: dict[str, str]
) -> None:
    values = {"CWD": str(project)}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    for prompt in ("yes", "ok go on", ""):
        out = run(
            hook_env,
            "claude",
            "UserPromptSubmit",
            shape("claude", "UserPromptSubmit", PROMPT=prompt, **values),
            project,
        )
        assert out.returncode == 0 and out.stdout == "" and out.stderr == ""


def test_the_budget_bounds_the_answer(project: Path, hook_env: dict[str, str]) -> None:
    from predictive.tokens import count_tokens

    values = {"CWD": str(project)}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    payload = shape("claude", "UserPromptSubmit", **values)
    small = run(hook_env, "claude", "UserPromptSubmit", payload, project, arg=None)
    text = claude_context(small.stdout, "UserPromptSubmit")
    assert count_tokens(text) <= 1500
    tight = subprocess.run(
        [*HOOK, "UserPromptSubmit", "--client", "claude", "--budget", "60"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=hook_env,
        cwd=project,
        timeout=120,
    )
    if tight.stdout:
        assert count_tokens(claude_context(tight.stdout, "UserPromptSubmit")) <= 60
    assert len(tight.stdout) < len(small.stdout)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "   ",
        "not json at all",
        "[1, 2, 3]",
        '{"hook_event_name": "UserPromptSubmit"}',
        '{"session_id": 5, "prompt": 7}',
        "\x00\xff{{{",
    ],
)
def test_bad_input_is_logged_never_shown(
    project: Path, hook_env: dict[str, str], garbage: str
) -> None:
    out = run(hook_env, "claude", "UserPromptSubmit", garbage, project)
    assert out.returncode == 0
    assert out.stdout == "" and out.stderr == ""
    assert "failed" in log_text(hook_env)  # one line saying why, in the data directory


def test_the_cli_entry_point_answers_too(project: Path, hook_env: dict[str, str]) -> None:
    values = {"CWD": str(project)}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "hook", "UserPromptSubmit", "--client", "claude"],
        input=json.dumps(shape("claude", "UserPromptSubmit", **values)),
        capture_output=True,
        text=True,
        env=hook_env,
        cwd=project,
        timeout=120,
    )
    assert out.returncode == 0 and out.stderr == ""
    assert "exponential backoff" in claude_context(out.stdout, "UserPromptSubmit")


def test_a_stop_learns_in_the_background(project: Path, hook_env: dict[str, str]) -> None:
    env = {**hook_env, "LIVING_MEMORY_HOOK_SYNC": "0"}
    transcript = project.parent / "t" / f"{SESSION}.jsonl"
    values = {"CWD": str(project), "TRANSCRIPT": str(transcript)}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    write_transcript(
        transcript,
        [
            ("user", "How is the retry budget chosen?"),
            ("assistant", [{"type": "text", "text": "Five retries with exponential backoff."}]),
        ],
        project,
        time.time(),
    )
    started = time.monotonic()
    stop = run(env, "claude", "Stop", shape("claude", "Stop", **values), project)
    assert stop.returncode == 0 and stop.stdout == ""
    assert time.monotonic() - started < 30  # the agent did not wait for the learning
    deadline = time.monotonic() + 90
    found = None
    while time.monotonic() < deadline and found is None:
        time.sleep(0.5)
        with open_store(hook_env) as store:
            found = sessions_of(store).find("claude", SESSION)
    assert found is not None


# ---- Cursor ----------------------------------------------------------------------------------


def cursor_json(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert out.returncode == 0 and out.stderr == "", out.stderr[-3000:]
    data = json.loads(out.stdout)
    assert isinstance(data, dict)
    return data


def test_cursor_events(project: Path, hook_env: dict[str, str]) -> None:
    before = outside_data(hook_env)
    values = {"CWD": str(project), "FILE": str(project / "src" / "retry.py")}
    start = cursor_json(
        run(hook_env, "cursor", "sessionStart", shape("cursor", "sessionStart", **values), project)
    )
    assert start == {}  # the first session of a project learns its history first
    start = cursor_json(
        run(hook_env, "cursor", "sessionStart", shape("cursor", "sessionStart", **values), project)
    )
    assert set(start) == {"additional_context"}
    assert "managed with uv" in start["additional_context"]
    assert "ruff and mypy" not in start["additional_context"]  # Cursor reads AGENTS.md itself

    asked = cursor_json(
        run(
            hook_env,
            "cursor",
            "beforeSubmitPrompt",
            shape("cursor", "beforeSubmitPrompt", **values),
            project,
        )
    )
    assert asked == {"continue": True}  # Cursor takes no context before a prompt
    tool = cursor_json(
        run(hook_env, "cursor", "postToolUse", shape("cursor", "postToolUse", **values), project)
    )
    assert (
        set(tool) == {"additional_context"} and "exponential backoff" in tool["additional_context"]
    )
    again = cursor_json(
        run(hook_env, "cursor", "postToolUse", shape("cursor", "postToolUse", **values), project)
    )
    assert again == {}  # handed over once

    for event, extra in (
        ("afterFileEdit", {}),
        ("afterAgentResponse", {"TEXT": "Raised RETRIES to 5 in src/retry.py."}),
        ("stop", {}),
    ):
        out = cursor_json(
            run(hook_env, "cursor", event, shape("cursor", event, **values, **extra), project)
        )
        assert out == {}
    with open_store(hook_env) as store:
        sessions = sessions_of(store)
        conv = sessions.find("cursor", SESSION)
        assert conv is not None
        texts = [m.text for m in sessions.messages(conv.id)]
        assert texts[0].startswith("Why does the payment retry loop")
        assert any("src/retry.py" in t for t in texts[1:])
        assert texts[-1] == "Raised RETRIES to 5 in src/retry.py."
    end = cursor_json(
        run(hook_env, "cursor", "sessionEnd", shape("cursor", "sessionEnd", **values), project)
    )
    assert end == {}
    assert outside_data(hook_env) == before  # nothing written outside the data directory


# ---- Codex -----------------------------------------------------------------------------------


def write_rollout(path: Path, cwd: Path, turns: list[tuple[str, str]]) -> None:
    """A Codex rollout (FORMATS.md shape)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    lines = [
        {
            "timestamp": stamp,
            "type": "session_meta",
            "payload": {"id": SESSION, "cwd": str(cwd), "timestamp": stamp},
        }
    ]
    for role, text in turns:
        kind = "input_text" if role == "user" else "output_text"
        lines.append(
            {
                "timestamp": stamp,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": role,
                    "content": [{"type": kind, "text": text}],
                },
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def test_codex_hooks_and_notify(project: Path, hook_env: dict[str, str]) -> None:
    home = Path(hook_env["HOME"])
    rollout = (
        home
        / ".codex"
        / "sessions"
        / "2026"
        / "11"
        / "26"
        / f"rollout-2026-11-26T04-00-00-{SESSION}.jsonl"
    )
    values = {"CWD": str(project), "TRANSCRIPT": str(rollout), "FILE": "src/retry.py"}
    run(hook_env, "codex", "SessionStart", shape("codex", "SessionStart", **values), project)
    start = run(
        hook_env, "codex", "SessionStart", shape("codex", "SessionStart", **values), project
    )
    assert "managed with uv" in claude_context(start.stdout, "SessionStart")
    asked = run(
        hook_env, "codex", "UserPromptSubmit", shape("codex", "UserPromptSubmit", **values), project
    )
    assert "exponential backoff" in claude_context(asked.stdout, "UserPromptSubmit")
    patch = run(hook_env, "codex", "PostToolUse", shape("codex", "PostToolUse", **values), project)
    assert patch.returncode == 0 and patch.stdout == ""
    with open_store(hook_env) as store:
        from predictive.hook_state import load

        assert load(store, "codex", SESSION).files == ["src/retry.py"]

    write_rollout(
        rollout, project, [("user", PROMPT), ("assistant", "Five retries, backoff doubling.")]
    )
    stop = run(hook_env, "codex", "Stop", shape("codex", "Stop", **values), project)
    assert stop.returncode == 0 and stop.stdout == ""
    with open_store(hook_env) as store:
        conv = sessions_of(store).find("codex", SESSION)
        assert conv is not None and len(sessions_of(store).messages(conv.id)) == 2

    # notify passes its JSON as the last argument and names no transcript: the rollout is found
    write_rollout(
        rollout,
        project,
        [
            ("user", PROMPT),
            ("assistant", "Five retries, backoff doubling."),
            ("user", "thanks"),
            ("assistant", "You are welcome."),
        ],
    )
    note = json.dumps(shape("codex", "notify", **values))
    done = subprocess.run(
        [*HOOK, "notify", "--client", "codex", note],
        capture_output=True,
        text=True,
        env=hook_env,
        cwd=project,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    with open_store(hook_env) as store:
        conv = sessions_of(store).find("codex", SESSION)
        assert conv is not None and len(sessions_of(store).messages(conv.id)) == 4


def test_the_installed_command_answers_as_the_module_does(
    project: Path, hook_env: dict[str, str]
) -> None:
    """What ``hook install`` writes (this interpreter without site, the launcher by its path)
    run through a shell as the agent runs it, with no PYTHONPATH: the same answer."""
    from server.hooks.install import install

    values = {"CWD": str(project)}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    payload = json.dumps(shape("claude", "UserPromptSubmit", **values))
    expected = run(hook_env, "claude", "UserPromptSubmit", payload, project)
    install("claude", "project", project, python=sys.executable)
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    env = {k: v for k, v in hook_env.items() if k != "PYTHONPATH"}
    got = subprocess.run(
        command, shell=True, input=payload, capture_output=True, text=True, env=env, cwd=project
    )
    assert got.returncode == 0 and got.stderr == ""
    answer = claude_context(got.stdout, "UserPromptSubmit")
    assert answer == claude_context(expected.stdout, "UserPromptSubmit")
    assert "exponential backoff" in answer


# ---- the warm daemon -------------------------------------------------------------------------


def test_the_daemon_answers_what_the_cold_path_answers(
    project: Path, hook_env: dict[str, str]
) -> None:
    values = {"CWD": str(project)}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    payload = shape("claude", "UserPromptSubmit", **values)
    cold = run(hook_env, "claude", "UserPromptSubmit", payload, project)
    env = {**hook_env, "LIVING_MEMORY_HOOK_DAEMON": "1"}
    daemon = subprocess.Popen(
        [*HOOK, "serve", "--idle", "60"],
        env=env,
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        sock = Path(env["LIVING_MEMORY_DATA_DIR"]) / "hooks" / "daemon.sock"
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sock.exists()
        assert oct(sock.stat().st_mode & 0o777) == "0o600"
        # started by hand in the project, it opens the project's memory before any event
        assert wait_for(lambda: "warm after" in log_text(env))
        warm = run(env, "claude", "UserPromptSubmit", payload, project)
        assert warm.returncode == 0 and warm.stderr == ""
        assert claude_context(warm.stdout, "UserPromptSubmit") == claude_context(
            cold.stdout, "UserPromptSubmit"
        )
        assert "warm claude UserPromptSubmit" in log_text(env)

        def recorded() -> bool:  # the daemon records what it handed over after answering
            from predictive.hook_state import load

            with open_store(env) as store:
                commit = next(m for m in store.list() if m.source == "git" and "backoff" in m.text)
                shots = load(store, "claude", SESSION).injected
                return commit.retrieval_count == 2 and len(shots) == 2

        assert wait_for(recorded, 30)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def hook_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOOK, *args], capture_output=True, text=True, env=env, timeout=120, cwd=env["HOME"]
    )


def wait_for(check: Any, seconds: float = 90) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_with_no_daemon_a_prompt_gets_nothing_at_once_and_the_daemon_starts(
    project: Path, hook_env: dict[str, str]
) -> None:
    values = {"CWD": str(project), "FILE": str(project / "src" / "retry.py")}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    env = {**hook_env, "LIVING_MEMORY_HOOK_DAEMON": "1", "LIVING_MEMORY_HOOK_SYNC": "0"}
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    sock = Path(env["LIVING_MEMORY_DATA_DIR"]) / "hooks" / "daemon.sock"
    assert not sock.exists()
    try:
        payload = shape("claude", "UserPromptSubmit", **values)
        first = run(env, "claude", "UserPromptSubmit", payload, project)
        assert first.returncode == 0 and first.stdout == "" and first.stderr == ""
        assert "no hook daemon yet" in log_text(env)
        # a Cursor event meanwhile is answered as Cursor expects and handled detached
        asked = run(
            env,
            "cursor",
            "beforeSubmitPrompt",
            shape("cursor", "beforeSubmitPrompt", **values),
            project,
        )
        assert cursor_json(asked) == {"continue": True}
        assert wait_for(sock.exists)  # the first event started the daemon
        assert wait_for(lambda: "warm after" in log_text(env))  # it opened the project
        warm = run(env, "claude", "UserPromptSubmit", payload, project)
        assert "exponential backoff" in claude_context(warm.stdout, "UserPromptSubmit")
        status = hook_command(env, "status")
        assert status.returncode == 0 and "daemon  running" in status.stdout
        assert str(project) in status.stdout
        with open_store(hook_env) as store:  # the detached process noted Cursor's prompt
            state = store.cursors.get(f"hook:cursor:{SESSION}")
            assert "payment retry loop" in state.get("turns", "")
    finally:
        stopped = hook_command(env, "serve", "--stop")
    assert stopped.returncode == 0 and "stops" in stopped.stdout
    assert wait_for(lambda: not sock.exists())
    assert wait_for(lambda: "hook daemon left" in log_text(env))  # after what it was learning
    assert "not running" in hook_command(env, "status").stdout
    assert "no hook daemon runs" in hook_command(env, "serve", "--stop").stdout


def test_the_daemon_leaves_when_idle(hook_env: dict[str, str]) -> None:
    env = {**hook_env, "LIVING_MEMORY_HOOK_DAEMON": "1"}
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    daemon = subprocess.Popen(
        [*HOOK, "serve", "--idle", "1"],
        env=env,
        cwd=env["HOME"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert daemon.wait(timeout=60) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
    assert "idle for 1 s" in log_text(env)
    assert not (Path(env["LIVING_MEMORY_DATA_DIR"]) / "hooks" / "daemon.sock").exists()


def test_secrets_never_reach_the_data_directory(project: Path, hook_env: dict[str, str]) -> None:
    secret = "AKIAIOSFODNN7QWERTYU"
    transcript = project.parent / "t" / f"{SESSION}.jsonl"
    values = {"CWD": str(project), "TRANSCRIPT": str(transcript), "FILE": "src/retry.py"}
    run(hook_env, "claude", "SessionStart", shape("claude", "SessionStart", **values), project)
    said = f"The retry job reads the key {secret} from the environment."
    write_transcript(
        transcript,
        [("user", said), ("assistant", [{"type": "text", "text": "Noted: " + said}])],
        project,
        time.time(),
    )
    run(
        hook_env,
        "claude",
        "UserPromptSubmit",
        shape("claude", "UserPromptSubmit", PROMPT=said, **values),
        project,
    )
    run(hook_env, "claude", "Stop", shape("claude", "Stop", **values), project)
    cursor = {**values, "PROMPT": said, "TEXT": said}
    for event in ("beforeSubmitPrompt", "afterAgentResponse", "stop"):
        run(hook_env, "cursor", event, shape("cursor", event, **cursor), project)
    with open_store(hook_env) as store:
        assert sessions_of(store).find("claude", SESSION) is not None
        assert sessions_of(store).find("cursor", SESSION) is not None
    stored = b"".join(
        p.read_bytes() for p in Path(hook_env["LIVING_MEMORY_DATA_DIR"]).rglob("*") if p.is_file()
    )
    assert secret.encode() not in stored


def test_the_fast_path_speaks_the_daemons_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm path writes its request and reads the reply without the json module: the
    same values as json gives, whatever the text holds."""
    from server.hooks import fast

    text = 'quotes " \\ back\\slash, tab\t, newline\n, é, 🙂, \x00, </script>'
    line = fast.encode_request("cursor", "beforeSubmitPrompt", text, "/a b/c", None, 900)
    assert line.endswith("\n")
    assert json.loads(line) == {
        "client": "cursor",
        "event": "beforeSubmitPrompt",
        "input": text,
        "cwd": "/a b/c",
        "db": None,
        "budget": 900,
    }
    for reply in ({"stdout": text}, {"stdout": ""}, {"stdout": text, "x": 1}):
        assert fast.stdout_of(json.dumps(reply).encode("utf-8")) == reply["stdout"]
        raw = json.dumps(reply, ensure_ascii=False).encode("utf-8")
        assert fast.stdout_of(raw) == reply["stdout"]
    with pytest.raises(ValueError):
        fast.stdout_of(b"{}")


@pytest.mark.parametrize("xdg", [None, "", "  ", "/srv/xdg", "relative/xdg", "~/xdg"])
def test_the_fast_path_finds_the_data_directory_where_platformdirs_does(
    xdg: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.hooks import fast, where

    monkeypatch.delenv("LIVING_MEMORY_DATA_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    guess = fast.data_dir()
    if sys.platform.startswith("linux") or sys.platform == "darwin":
        assert guess == str(where.data_dir())
    else:
        assert guess is None  # the full client finds it
    monkeypatch.setenv("LIVING_MEMORY_DATA_DIR", str(tmp_path / "d"))
    assert fast.data_dir() == str(where.data_dir()) == str(tmp_path / "d")
