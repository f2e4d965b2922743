"""``living-memory mcp install``: each client's file gets the server without losing what was
there; a file that cannot be parsed is refused and left as it was; twice changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from server.mcp_server.install import InstallError, install, target_for

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["/opt/venv/bin/living-memory", "mcp"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(h / ".config"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    return p


@pytest.mark.parametrize(
    ("client", "rel", "key"),
    [
        ("claude", ".mcp.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("vscode", ".vscode/mcp.json", "servers"),
    ],
)
def test_a_project_file_gets_the_server_under_the_clients_key(
    project: Path, client: str, rel: str, key: str
) -> None:
    out = install(client, "project", project, command=COMMAND)
    data = json.loads((project / rel).read_text())
    entry = data[key]["living-memory"]
    assert out.status == "added"
    assert entry["command"] == COMMAND[0]
    assert entry["args"][:1] == ["mcp"] and "--root" in entry["args"]


def test_other_servers_and_keys_are_kept(project: Path) -> None:
    f = project / ".mcp.json"
    f.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "extra": [1, 2]}))
    install("claude", "project", project, command=COMMAND)
    data = json.loads(f.read_text())
    assert data["mcpServers"]["other"] == {"command": "x"}
    assert data["extra"] == [1, 2]
    assert "living-memory" in data["mcpServers"]


def test_installing_twice_changes_nothing(project: Path) -> None:
    install("cursor", "project", project, command=COMMAND)
    f = project / ".cursor" / "mcp.json"
    before = f.read_bytes()
    assert install("cursor", "project", project, command=COMMAND).status == "unchanged"
    assert f.read_bytes() == before


def test_a_changed_command_updates_only_our_entry(project: Path) -> None:
    install("claude", "project", project, command=["/old/living-memory", "mcp"])
    out = install("claude", "project", project, command=COMMAND)
    data = json.loads((project / ".mcp.json").read_text())
    assert out.status == "updated"
    assert data["mcpServers"]["living-memory"]["command"] == COMMAND[0]


def test_an_unparseable_file_is_refused_and_left_untouched(project: Path) -> None:
    f = project / ".vscode" / "mcp.json"
    f.parent.mkdir()
    text = '{\n  // my servers\n  "servers": {"a": {"command": "x"}},\n}\n'
    f.write_text(text)
    with pytest.raises(InstallError, match="not plain JSON"):
        install("vscode", "project", project, command=COMMAND)
    assert f.read_text() == text


def test_a_servers_key_that_is_not_an_object_is_refused(project: Path) -> None:
    f = project / ".mcp.json"
    f.write_text('{"mcpServers": []}')
    with pytest.raises(InstallError, match="not an object"):
        install("claude", "project", project, command=COMMAND)
    assert f.read_text() == '{"mcpServers": []}'


def test_dry_run_writes_nothing_and_shows_the_entry(project: Path) -> None:
    out = install("claude", "project", project, dry_run=True, command=COMMAND)
    assert not (project / ".mcp.json").exists()
    assert '"living-memory"' in out.diff() and COMMAND[0] in out.diff()


def test_vscode_project_entry_names_the_workspace_folder(project: Path) -> None:
    install("vscode", "project", project, command=COMMAND)
    entry = json.loads((project / ".vscode" / "mcp.json").read_text())["servers"]["living-memory"]
    assert entry["type"] == "stdio"
    assert entry["args"][-2:] == ["--root", "${workspaceFolder}"]


def test_codex_goes_to_the_users_config_toml_keeping_other_tables(
    project: Path, home: Path
) -> None:
    f = home / ".codex" / "config.toml"
    f.parent.mkdir()
    f.write_text('model = "o3"\n\n[mcp_servers.other]\ncommand = "x"\nargs = ["a"]\n')
    out = install("codex", None, project, command=COMMAND)
    data = tomllib.loads(f.read_text())
    assert out.target.scope == "user" and out.status == "added"
    assert data["model"] == "o3"
    assert data["mcp_servers"]["other"] == {"command": "x", "args": ["a"]}
    assert data["mcp_servers"]["living-memory"] == {"command": COMMAND[0], "args": ["mcp"]}


def test_codex_twice_is_unchanged_and_an_old_entry_is_replaced(project: Path, home: Path) -> None:
    f = home / ".codex" / "config.toml"
    f.parent.mkdir()
    f.write_text(
        '[mcp_servers.living-memory]\ncommand = "/old"\n\n'
        '[mcp_servers.living-memory.env]\nA = "1"\n\n[other]\nx = 1\n'
    )
    assert install("codex", None, project, command=COMMAND).status == "updated"
    data = tomllib.loads(f.read_text())
    assert data["mcp_servers"]["living-memory"] == {"command": COMMAND[0], "args": ["mcp"]}
    assert data["other"] == {"x": 1}
    before = f.read_text()
    assert install("codex", None, project, command=COMMAND).status == "unchanged"
    assert f.read_text() == before


def test_invalid_toml_is_refused(project: Path, home: Path) -> None:
    f = home / ".codex" / "config.toml"
    f.parent.mkdir()
    f.write_text("[mcp_servers\n")
    with pytest.raises(InstallError, match="not valid TOML"):
        install("codex", None, project, command=COMMAND)
    assert f.read_text() == "[mcp_servers\n"


def test_user_scope_paths(project: Path, home: Path) -> None:
    assert target_for("claude", "user", project).path == home / ".claude.json"
    assert target_for("cursor", "user", project).path == home / ".cursor" / "mcp.json"
    assert target_for("vscode", "user", project).path == home / ".config/Code/User/mcp.json"


def test_the_cli_installs_with_an_absolute_command_and_says_so(project: Path, home: Path) -> None:
    env = {"HOME": str(home), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "server",
            "mcp",
            "install",
            "--client",
            "cursor",
            "--root",
            str(project),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "added" in done.stdout
    entry = json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert Path(entry["living-memory"]["command"]).is_absolute()


def test_the_cli_refuses_a_broken_file_with_one_line(project: Path, home: Path) -> None:
    (project / ".mcp.json").write_text("{nope")
    env = {"HOME": str(home), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "server",
            "mcp",
            "install",
            "--client",
            "claude",
            "--root",
            str(project),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "left untouched" in done.stderr
    assert (project / ".mcp.json").read_text() == "{nope"


@pytest.mark.parametrize("client", ["claude", "cursor", "vscode", "codex"])
def test_the_cli_installs_the_http_server_with_the_token_it_asks_for(
    project: Path, home: Path, tmp_path: Path, client: str
) -> None:
    import stat

    from server.mcp_server.install import target_for

    data = tmp_path / "data"
    env = {
        "HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "LIVING_MEMORY_DATA_DIR": str(data),
    }

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = ["mcp", "install", "--client", client, "--root", str(project), *extra]
        return subprocess.run(
            [sys.executable, "-m", "server", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    done = run("--http", "18765")
    assert done.returncode == 0, done.stderr
    assert "bearer token" in done.stdout
    tokens = list(data.rglob("mcp-token"))
    assert len(tokens) == 1 and stat.S_IMODE(tokens[0].stat().st_mode) == 0o600
    token = tokens[0].read_text().strip()
    path = target_for(client, "user" if client == "codex" else "project", project).path
    if client == "codex":
        entry = tomllib.loads(path.read_text())["mcp_servers"]["living-memory"]
        headers = entry["http_headers"]
    else:
        key = "servers" if client == "vscode" else "mcpServers"
        entry = json.loads(path.read_text())[key]["living-memory"]
        headers = entry["headers"]
        assert entry.get("type") == (None if client == "cursor" else "http")
    assert entry["url"] == "http://127.0.0.1:18765/mcp"
    assert headers == {"Authorization": f"Bearer {token}"}
    assert "command" not in entry
    assert "already configured" in run("--http", "18765").stdout  # the same token again
    plain = run("--http", "18765", "--no-auth")
    assert plain.returncode == 0 and token not in path.read_text()
