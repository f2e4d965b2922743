"""``living-memory hook install|uninstall``: the user's own hooks are kept, a second install
changes nothing, uninstall gives the file back, the command names this interpreter."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from server.hooks.install import EVENTS, LAUNCHER, InstallError, install, uninstall

ROOT = Path(__file__).resolve().parents[1]
PYTHON = "/opt/tools/venv/bin/python"
LAUNCH = str(LAUNCHER)  # server/hooks/launch.py, run without site (python -S)


def ours_of(command: str) -> bool:
    return LAUNCH in command


CLAUDE_USER_HOOKS = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": 'npx prettier --write "$FILE"'}],
            }
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send Claude"}]}],
    },
}
CURSOR_USER_HOOKS = {
    "version": 1,
    "hooks": {
        "afterFileEdit": [{"command": "./hooks/format.sh"}],
        "beforeShellExecution": [{"command": "./hooks/audit.sh"}],
    },
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    return p


def write(path: Path, data: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps(data, indent=2) + "\n").encode()
    path.write_bytes(raw)
    return raw


def commands(data: dict[str, object], client: str) -> dict[str, list[str]]:
    """Every hook command by event."""
    out: dict[str, list[str]] = {}
    hooks = data["hooks"]
    assert isinstance(hooks, dict)
    for event, entries in hooks.items():
        for entry in entries:
            inner = [entry] if client == "cursor" else entry["hooks"]
            out.setdefault(event, []).extend(h["command"] for h in inner)
    return out


def test_claude_keeps_the_users_hooks_and_uninstall_restores_the_file(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    original = write(path, CLAUDE_USER_HOOKS)
    first = install("claude", "project", project, python=PYTHON)
    assert first.status == "added"
    data = json.loads(path.read_text())
    assert data["permissions"] == CLAUDE_USER_HOOKS["permissions"]
    got = commands(data, "claude")
    assert got["Notification"] == ["notify-send Claude"]
    assert got["PostToolUse"][0] == 'npx prettier --write "$FILE"'  # theirs first, as it was
    for event in EVENTS["claude"]:
        ours = [c for c in got[event] if ours_of(c)]
        assert ours == [shlex.join([PYTHON, "-S", "-P", LAUNCH, event, "--client", "claude"])]
    ours_edit = next(g for g in data["hooks"]["PostToolUse"] if ours_of(g["hooks"][0]["command"]))
    assert ours_edit["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    prompt = data["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert prompt["type"] == "command" and prompt["timeout"] == 10

    after_first = path.read_bytes()
    second = install("claude", "project", project, python=PYTHON)
    assert second.status == "unchanged" and path.read_bytes() == after_first

    removed = uninstall("claude", "project", project)
    assert removed.status == "removed"
    assert path.read_bytes() == original  # byte for byte
    assert uninstall("claude", "project", project).status == "unchanged"


def test_cursor_keeps_the_users_hooks_and_uninstall_restores_the_file(project: Path) -> None:
    path = project / ".cursor" / "hooks.json"
    original = write(path, CURSOR_USER_HOOKS)
    install("cursor", "project", project, python=PYTHON)
    data = json.loads(path.read_text())
    assert data["version"] == 1
    got = commands(data, "cursor")
    assert got["afterFileEdit"][0] == "./hooks/format.sh"
    assert got["beforeShellExecution"] == ["./hooks/audit.sh"]
    for event in EVENTS["cursor"]:
        assert [c for c in got[event] if ours_of(c)] == [
            shlex.join([PYTHON, "-S", "-P", LAUNCH, event, "--client", "cursor"])
        ]
    before = path.read_bytes()
    assert install("cursor", "project", project, python=PYTHON).status == "unchanged"
    assert path.read_bytes() == before
    uninstall("cursor", "project", project)
    assert path.read_bytes() == original


def test_a_file_install_made_is_gone_after_uninstall(project: Path, home: Path) -> None:
    path = home / ".claude" / "settings.json"
    install("claude", "user", project, python=PYTHON)
    assert path.exists()
    uninstall("claude", "user", project)
    assert not path.exists()


def test_a_new_interpreter_updates_only_our_entries(project: Path) -> None:
    path = project / ".cursor" / "hooks.json"
    write(path, CURSOR_USER_HOOKS)
    install("cursor", "project", project, python=PYTHON)
    moved = install("cursor", "project", project, python="/elsewhere/bin/python3")
    assert moved.status == "updated"
    got = commands(json.loads(path.read_text()), "cursor")
    assert all(PYTHON not in c for cs in got.values() for c in cs)
    assert sum(ours_of(c) for cs in got.values() for c in cs) == len(EVENTS["cursor"])
    assert got["afterFileEdit"][0] == "./hooks/format.sh"


def test_an_older_install_is_replaced_and_removed(project: Path) -> None:
    """Entries an earlier version wrote (``python -m server hook``) are ours: an install
    replaces them, an uninstall takes them out."""
    path = project / ".claude" / "settings.json"
    older = json.loads(json.dumps(CLAUDE_USER_HOOKS))
    old = shlex.join([PYTHON, "-P", "-m", "server", "hook", "Stop", "--client", "claude"])
    older["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": old}]}]
    write(path, older)
    assert install("claude", "project", project, python=PYTHON).status == "updated"
    got = commands(json.loads(path.read_text()), "claude")
    assert got["Stop"] == [shlex.join([PYTHON, "-S", "-P", LAUNCH, "Stop", "--client", "claude"])]
    uninstall("claude", "project", project)
    assert json.loads(path.read_text()) == CLAUDE_USER_HOOKS


def test_codex_user_scope_follows_codex_home(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    install("codex", "user", project, python=PYTHON)
    data = json.loads((tmp_path / "codex" / "hooks.json").read_text())
    assert set(data["hooks"]) == set(EVENTS["codex"])
    assert data["hooks"]["PostToolUse"][0]["matcher"] == "apply_patch|Edit|Write"


def test_a_file_that_is_not_json_is_left_alone(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {}, // a comment\n}')
    with pytest.raises(InstallError, match="not plain JSON"):
        install("claude", "project", project, python=PYTHON)
    assert path.read_text() == '{"hooks": {}, // a comment\n}'


def test_the_command_line_shows_a_diff_and_dry_run_writes_nothing(
    project: Path, home: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    path = project / ".claude" / "settings.json"
    original = write(path, CLAUDE_USER_HOOKS)
    cmd = [
        sys.executable,
        "-m",
        "server",
        "hook",
        "install",
        "--client",
        "claude",
        "--root",
        str(project),
    ]
    dry = subprocess.run([*cmd, "--dry-run"], capture_output=True, text=True, env=env, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert "+" in dry.stdout and "UserPromptSubmit" in dry.stdout and "dry run" in dry.stdout
    assert path.read_bytes() == original
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "added" in done.stdout
    data = json.loads(path.read_text())
    command = data["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert shlex.split(command)[0] == str(Path(sys.executable).absolute())  # this interpreter
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert "nothing to change" in again.stdout
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "server",
            "hook",
            "uninstall",
            "--client",
            "claude",
            "--root",
            str(project),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0 and path.read_bytes() == original
    bad = subprocess.run(
        [sys.executable, "-m", "server", "hook", "install", "--root", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "--client" in bad.stderr
