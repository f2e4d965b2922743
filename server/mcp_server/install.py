"""``living-memory mcp install``: add the server to an MCP client's configuration (Claude Code,
Cursor, VS Code, Codex) without disturbing anything else in it.

Other servers and keys are kept as they are; a file that cannot be parsed is refused, never
overwritten; installing twice changes nothing; ``--dry-run`` prints the change as a diff."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVER_NAME = "living-memory"
CLIENTS = ("claude", "cursor", "vscode", "codex")
SCOPES = ("project", "user")


class InstallError(Exception):
    """The configuration cannot be changed safely; the message says why and what to do."""


@dataclass(frozen=True)
class Target:
    """Where a client keeps its MCP servers: the file, its format and the servers' key."""

    client: str
    scope: str
    path: Path
    key: str  # "mcpServers", "servers" (VS Code) or "mcp_servers" (Codex, TOML)

    @property
    def toml(self) -> bool:
        return self.path.suffix == ".toml"


@dataclass(frozen=True)
class Outcome:
    """What install did (or, dry, would do)."""

    target: Target
    status: str  # "added" | "updated" | "unchanged"
    before: str
    after: str

    def diff(self) -> str:
        return file_diff(self.target.path, self.before, self.after, f"with {SERVER_NAME}")


def file_diff(path: Path, before: str, after: str, label: str = "after") -> str:
    """A unified diff of a settings file now and after a change."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"{path} (now)",
            tofile=f"{path} ({label})",
        )
    )


def vscode_user_dir() -> Path:
    """VS Code's user settings folder on this platform."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Code" / "User"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home())) / "Code" / "User"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "Code" / "User"


def target_for(client: str, scope: str, root: Path) -> Target:
    """The configuration file of ``client`` at ``scope`` (project files under ``root``)."""
    if client not in CLIENTS:
        raise InstallError(f"unknown client {client!r} (choose from {', '.join(CLIENTS)})")
    if scope not in SCOPES:
        raise InstallError(f"unknown scope {scope!r} (choose from {', '.join(SCOPES)})")
    home = Path.home()
    project = scope == "project"
    if client == "claude":
        path = root / ".mcp.json" if project else home / ".claude.json"
        return Target(client, scope, path, "mcpServers")
    if client == "cursor":
        path = (root if project else home) / ".cursor" / "mcp.json"
        return Target(client, scope, path, "mcpServers")
    if client == "vscode":
        path = root / ".vscode" / "mcp.json" if project else vscode_user_dir() / "mcp.json"
        return Target(client, scope, path, "servers")
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    path = root / ".codex" / "config.toml" if project else codex_home / "config.toml"
    return Target(client, scope, path, "mcp_servers")


def launch_command() -> list[str]:
    """The absolute command that starts this installation's server (works from a venv)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == SERVER_NAME and script.exists():
        return [str(script.resolve()), "mcp"]
    found = shutil.which(SERVER_NAME, path=str(Path(sys.executable).parent))
    if found:
        return [str(Path(found).resolve()), "mcp"]
    # -P: the client's working folder (a project with its own ``server`` package) must not
    # shadow ours.
    isolate = ["-P"] if sys.version_info >= (3, 11) else []
    return [str(Path(sys.executable).resolve()), *isolate, "-m", "server", "mcp"]


@dataclass(frozen=True)
class HttpServer:
    """A running ``living-memory mcp --http PORT``: its URL and the bearer token it asks for
    (None when it runs with ``--no-auth``)."""

    url: str
    token: str | None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def entry_for(
    target: Target, root: Path, command: list[str] | None = None, http: HttpServer | None = None
) -> dict[str, Any]:
    """The server entry for ``target``: project configurations name the project folder; with
    ``http``, the URL and the header that carries its token (every client here sends headers
    to HTTP servers; Codex calls them ``http_headers``)."""
    if http is not None:
        headers = http.headers()
        if target.client == "codex":
            return {"url": http.url, **({"http_headers": headers} if headers else {})}
        kind = {} if target.client == "cursor" else {"type": "http"}
        return {**kind, "url": http.url, **({"headers": headers} if headers else {})}
    cmd = command or launch_command()
    args = cmd[1:]
    if target.scope == "project":
        args = [*args, "--root", "${workspaceFolder}" if target.client == "vscode" else str(root)]
    if target.client == "vscode":
        return {"type": "stdio", "command": cmd[0], "args": args}
    if target.client == "codex":
        return {"command": cmd[0], "args": args}
    return {"type": "stdio", "command": cmd[0], "args": args, "env": {}}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as e:
        raise InstallError(f"cannot read {path}: {e}") from None


def _json_after(target: Target, before: str, entry: dict[str, Any]) -> tuple[str, str]:
    try:
        data = json.loads(before) if before.strip() else {}
    except json.JSONDecodeError as e:
        raise InstallError(
            f"{target.path} is not plain JSON ({e.msg} at line {e.lineno}; comments or trailing "
            f'commas?); it was left untouched. Add this under "{target.key}" by hand:\n'
            + json.dumps({SERVER_NAME: entry}, indent=2)
        ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{target.path} does not hold a JSON object; it was left untouched")
    servers = data.get(target.key, {})
    if not isinstance(servers, dict):
        raise InstallError(
            f'"{target.key}" in {target.path} is not an object; it was left untouched'
        )
    old = servers.get(SERVER_NAME)
    if old == entry:
        return before, "unchanged"
    data[target.key] = {**servers, SERVER_NAME: entry}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n", (
        "added" if old is None else "updated"
    )


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ "
            + ", ".join(f"{_toml_string(k)} = {_toml_value(v)}" for k, v in value.items())
            + " }"
        )
    return _toml_string(value)


def _toml_block(entry: dict[str, Any]) -> str:
    lines = "".join(f"{k} = {_toml_value(v)}\n" for k, v in entry.items())
    return f"[mcp_servers.{SERVER_NAME}]\n{lines}"


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _ours(header: str) -> bool:
    name = header.replace('"', "").replace("'", "").replace(" ", "")
    return name == f"mcp_servers.{SERVER_NAME}" or name.startswith(f"mcp_servers.{SERVER_NAME}.")


def _toml_parse(text: str, path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: no parser at hand; the text edit still is safe
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InstallError(f"{path} is not valid TOML ({e}); it was left untouched") from None


def _toml_after(target: Target, before: str, entry: dict[str, Any]) -> tuple[str, str]:
    parsed = _toml_parse(before, target.path)
    servers = parsed.get("mcp_servers", {})
    old = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if old is not None and old == entry:
        return before, "unchanged"
    kept: list[str] = []
    skipping = False
    for line in before.splitlines(keepends=True):
        m = _HEADER.match(line)
        if m:
            skipping = _ours(m.group(1))
        if not skipping:
            kept.append(line)
    text = "".join(kept).rstrip("\n")
    after = (text + "\n\n" if text else "") + _toml_block(entry)
    check = _toml_parse(after, target.path)
    if parsed and {k: v for k, v in check.items() if k != "mcp_servers"} != {
        k: v for k, v in parsed.items() if k != "mcp_servers"
    }:
        raise InstallError(f"{target.path}: the change would alter other settings; left untouched")
    return after, "added" if old is None else "updated"


def plan(target: Target, entry: dict[str, Any]) -> Outcome:
    """What installing ``entry`` into ``target`` changes (nothing is written)."""
    before = _read(target.path)
    after, status = (_toml_after if target.toml else _json_after)(target, before, entry)
    return Outcome(target, status, before, after)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def install(
    client: str,
    scope: str | None,
    root: Path,
    *,
    dry_run: bool = False,
    command: list[str] | None = None,
    http: HttpServer | None = None,
) -> Outcome:
    """Add (or update) the server in ``client``'s configuration (``http``: the HTTP server, else
    a command the client starts over stdio); ``dry_run`` writes nothing."""
    scope = scope or ("user" if client == "codex" else "project")
    target = target_for(client, scope, root)
    outcome = plan(target, entry_for(target, root, command, http))
    if not dry_run and outcome.status != "unchanged":
        try:
            _write(target.path, outcome.after)
        except OSError as e:
            raise InstallError(f"cannot write {target.path}: {e}") from None
    return outcome
