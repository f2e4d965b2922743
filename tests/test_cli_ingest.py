"""``living-memory ingest``, ``search --sessions`` and the first ``context`` in a fresh store,
run as real subprocesses against real git repositories and chat files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.chat_fixtures import build_all_chats, write_claude_session
from tests.project_fixtures import make_adr_records, make_git_repo, make_rule_files
from tests.test_cli import fails, ok, run


def project(tmp_path: Path) -> Path:
    repo = make_git_repo(tmp_path)
    make_adr_records(repo.root)
    make_rule_files(repo.root)
    return repo.root


def test_ingest_prints_a_summary_of_every_source(env: dict[str, str], tmp_path: Path) -> None:
    root = project(tmp_path)
    home = tmp_path / "home"
    build_all_chats(tmp_path, root, home=home)
    env["HOME"] = str(home)
    out = ok(["ingest"], env, cwd=root)
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "8 read, 7 added" in lines["git"]  # the merge is left out
    assert "1 merge ignored" in lines["git"]
    assert "3 added" in lines["adr"]
    assert "conversations" in lines["chats"]
    assert "skipped" in out or "memories added" in out
    again = json.loads(ok(["ingest", "--json"], env, cwd=root))
    assert again["added"] == 0


def test_ingest_one_source_with_dry_run_and_json(env: dict[str, str], tmp_path: Path) -> None:
    root = project(tmp_path)
    s = json.loads(ok(["ingest", "git", "--dry-run", "--json"], env, cwd=root))
    assert list(s["sources"]) == ["git"] and s["dryRun"] and s["added"] == 7
    assert s["sources"]["git"]["ignored"] == {"merge": 1}
    flags = ["--include-merges", "--include-bots", "--include-trivial"]
    s = json.loads(ok(["ingest", "git", "--dry-run", "--json", *flags], env, cwd=root))
    assert s["added"] == 8 and "ignored" not in s["sources"]["git"]
    stats = json.loads(ok(["stats", "--json"], env, cwd=root))
    assert stats["active"] == 0


def test_ingest_chats_of_one_tool_from_a_path(env: dict[str, str], tmp_path: Path) -> None:
    root = project(tmp_path)
    fx = write_claude_session(tmp_path, root, home=tmp_path / "home")
    s = json.loads(
        ok(["ingest", "--source", "claude", "--path", str(fx.path), "--json"], env, cwd=root)
    )
    assert list(s["sources"]) == ["chats"]
    assert s["sources"]["chats"]["sessions"] == 1


def test_ingest_bad_arguments_are_one_line_errors(env: dict[str, str], tmp_path: Path) -> None:
    root = project(tmp_path)
    assert "since" in fails(["ingest", "--since", "last tuesday"], env, cwd=root)
    assert "does not exist" in fails(["ingest", "--path", str(tmp_path / "nope")], env, cwd=root)
    assert "invalid choice" in fails(["ingest", "email"], env, cwd=root)
    assert "--root" in fails(["ingest", "--root", str(tmp_path / "nope")], env, cwd=root)


def test_search_sessions_finds_the_conversation(env: dict[str, str], tmp_path: Path) -> None:
    root = project(tmp_path)
    home = tmp_path / "home"
    build_all_chats(tmp_path, root, home=home)
    env["HOME"] = str(home)
    ok(["ingest", "chats"], env, cwd=root)
    word = _a_word_said_in_a_chat(env, root)
    res = json.loads(ok(["search", "--sessions", word, "--json"], env, cwd=root))
    assert res["hits"] and res["sessions"]
    assert word.lower() in res["hits"][0]["text"].lower() or res["hits"][0]["neighbours"]
    human = ok(["search", "--sessions", word], env, cwd=root)
    assert "session" in human and "->" in human


def _a_word_said_in_a_chat(env: dict[str, str], root: Path) -> str:
    from storage import MemoryStore

    store = MemoryStore(env["LIVING_MEMORY_DB"])
    try:
        (text,) = store.conn.execute("SELECT text FROM messages ORDER BY id LIMIT 1").fetchone()
    finally:
        store.close()
    return max(text.split(), key=len).strip(".,:;!?`'\"()")


def test_first_context_in_a_fresh_store_learns_the_project(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = project(tmp_path)
    r = run(["context", "src/api.py"], env, cwd=root)
    assert r.returncode == 0, r.stderr
    assert "First run" in r.stderr and "learned" in r.stderr
    assert "Add the API module" in r.stdout or "token auth" in r.stdout
    again = run(["context", "src/api.py"], env, cwd=root)
    assert "First run" not in again.stderr


def test_watch_follows_new_conversations(env: dict[str, str], tmp_path: Path) -> None:
    root = project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env["HOME"] = str(home)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "server",
            "ingest",
            "chats",
            "--watch",
            "--interval",
            "0.3",
            "--json",
        ],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = json.loads(proc.stdout.readline())
        assert first["sources"]["chats"].get("sessions", 0) == 0
        write_claude_session(tmp_path, root, home=home)
        deadline = time.monotonic() + 60
        found = None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            summary = json.loads(line)
            if summary["sources"]["chats"].get("sessions"):
                found = summary
                break
        assert found is not None, proc.stderr.read() if proc.poll() is not None else "timeout"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_consolidate_previews_then_merges_duplicates(env: dict[str, str]) -> None:
    ok(["remember", "Releases are cut on Thursdays after the freeze."], env)
    ok(["remember", "Releases are cut on Thursdays after the freeze!"], env)
    preview = json.loads(ok(["consolidate", "--dry-run", "--json"], env))
    assert preview["dryRun"] and preview["merged"] == 1
    listed = ok(["consolidate", "--dry-run"], env)
    assert "merge #2 ← #1: the same text but for case" in listed
    assert "Releases are cut on Thursdays" in listed
    ok(["consolidate"], env)
    assert json.loads(ok(["consolidate", "--json"], env))["merged"] == 0


def test_a_long_history_shows_its_progress_on_a_terminal(env: dict[str, str], tmp_path: Path):
    """stderr is a terminal: the count of commits read out of the total appears as it grows."""
    import os
    import pty

    from tests.project_fixtures import make_big_repo

    repo = make_big_repo(tmp_path / "big", 300)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "ingest", "git", "--root", str(repo.root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=120)
    os.close(master)
    assert proc.returncode == 0
    assert b"300 read, 300 added" in out
    shown = [int(n) for n in re.findall(rb"git: (\d+) of 300 commits", seen)]
    assert shown[0] < shown[-1] == 300 and len(shown) >= 4
    assert shown == sorted(shown)
