"""``living-memory hook install|uninstall --client claude|cursor|codex``: the hook entries in a
client's settings file, merged in beside the user's own hooks and taken out again.

Files: Claude Code ``.claude/settings.json`` (user: ``~/.claude/settings.json``), Cursor
``.cursor/hooks.json`` (user: ``~/.cursor/hooks.json``), Codex ``.codex/hooks.json`` (user:
``$CODEX_HOME/hooks.json``). An entry is ours when its command runs ``-m server hook``; every
other hook, key and event is kept as it was. Installing twice changes nothing; uninstalling
gives back the file's data as it was before (byte for byte when it was written as two-space
indented JSON). The command names this installation's interpreter by its absolute path (a
virtual environment's ``python`` is not resolved, so the environment stays in force) and runs
:mod:`server.hooks.launch` by its path without ``site`` (``python -S``), the fastest start;
an entry written as ``-m server hook`` (an older install) is ours too and is replaced.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.mcp_server.install import InstallError, _read, _write, file_diff

__all__ = ["EVENTS", "Change", "InstallError", "hook_command", "install", "settings_path"]

CLAUDE_EVENTS: dict[str, str | None] = {  # event → matcher (None: the event takes none)
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PostToolUse": "Edit|Write|MultiEdit|NotebookEdit",
    "Stop": None,
    "SessionEnd": None,
    "PreCompact": None,
}
CODEX_EVENTS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PostToolUse": "apply_patch|Edit|Write",
    "Stop": None,
}
CURSOR_EVENTS = (
    "sessionStart",
    "beforeSubmitPrompt",
    "postToolUse",
    "afterFileEdit",
    "afterAgentResponse",
    "stop",
    "sessionEnd",
)
EVENTS = {"claude": tuple(CLAUDE_EVENTS), "codex": tuple(CODEX_EVENTS), "cursor": CURSOR_EVENTS}
PROMPT_TIMEOUT = 10  # seconds the agent waits for a prompt's answer before going on without
OURS = re.compile(r"(?:^|\s)-m\s+server\s+hook(?:\s|$)|server[/\\]hooks[/\\]launch\.py\b")
LAUNCHER = Path(__file__).resolve().with_name("launch.py")


@dataclass(frozen=True)
class Change:
    path: Path
    status: str  # "added" | "updated" | "removed" | "unchanged"
    before: str
    after: str

    def diff(self) -> str:
        return file_diff(self.path, self.before, self.after)


def settings_path(client: str, scope: str, root: Path) -> Path:
    home = Path.home()
    project = scope == "project"
    if client == "claude":
        return (root if project else home) / ".claude" / "settings.json"
    if client == "cursor":
        return (root if project else home) / ".cursor" / "hooks.json"
    if client == "codex":
        codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
        return root / ".codex" / "hooks.json" if project else codex_home / "hooks.json"
    raise InstallError(f"unknown client {client!r} (choose from claude, cursor, codex)")


def hook_command(client: str, event: str, python: str | None = None) -> str:
    """The shell command a client runs for ``event``."""
    exe = python or str(Path(sys.executable).absolute())
    isolate = ["-P"] if sys.version_info >= (3, 11) else []
    return shlex.join([exe, "-S", *isolate, str(LAUNCHER), event, "--client", client])


def _is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and bool(OURS.search(str(handler.get("command", ""))))


def _load(path: Path, text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise InstallError(
            f"{path} is not plain JSON ({e.msg} at line {e.lineno}); it was left untouched"
        ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; it was left untouched")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f'"hooks" in {path} is not an object; it was left untouched')
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            raise InstallError(f'"hooks.{event}" in {path} is not a list; it was left untouched')
    return data


def _without_ours(client: str, hooks: dict[str, Any]) -> dict[str, Any]:
    """``hooks`` with our entries taken out (an emptied group or event goes too)."""
    out: dict[str, Any] = {}
    for event, entries in hooks.items():
        kept = []
        for entry in entries:
            if client == "cursor":
                if not _is_ours(entry):
                    kept.append(entry)
                continue
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            if not isinstance(inner, list):
                kept.append(entry)
                continue
            mine = [h for h in inner if _is_ours(h)]
            if not mine:
                kept.append(entry)
            elif len(mine) < len(inner):
                kept.append({**entry, "hooks": [h for h in inner if not _is_ours(h)]})
        if kept or not entries:
            out[event] = kept
    return out


def _ours(client: str, python: str | None) -> dict[str, list[Any]]:
    if client == "cursor":
        return {e: [{"command": hook_command("cursor", e, python)}] for e in CURSOR_EVENTS}
    events = CLAUDE_EVENTS if client == "claude" else CODEX_EVENTS
    out: dict[str, list[Any]] = {}
    for event, matcher in events.items():
        handler: dict[str, Any] = {
            "type": "command",
            "command": hook_command(client, event, python),
        }
        if event in ("UserPromptSubmit", "SessionStart"):
            handler["timeout"] = PROMPT_TIMEOUT
        group: dict[str, Any] = {"hooks": [handler]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        out[event] = [group]
    return out


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _plan(client: str, scope: str, root: Path, *, remove: bool, python: str | None) -> Change:
    path = settings_path(client, scope, root)
    before = _read(path)
    data = _load(path, before)
    had_hooks = "hooks" in data
    current = data.get("hooks", {})
    hooks = _without_ours(client, current)
    if not remove:
        for event, entries in _ours(client, python).items():
            hooks[event] = [*hooks.get(event, []), *entries]
    if hooks == current:
        return Change(path, "unchanged", before, before)
    new = dict(data)
    if hooks or (had_hooks and not remove):
        new["hooks"] = hooks
    else:
        new.pop("hooks", None)  # the key install brought goes with it
    if remove:
        # a file left holding nothing but what install wrote is the file install made
        leftover = {k: v for k, v in new.items() if not (client == "cursor" and k == "version")}
        return Change(path, "removed", before, _dump(new) if leftover else "")
    if client == "cursor" and "version" not in new:
        new = {"version": 1, **new}
    status = "updated" if _without_ours(client, current) != current else "added"
    return Change(path, status, before, _dump(new))


def install(
    client: str,
    scope: str,
    root: Path,
    *,
    dry_run: bool = False,
    python: str | None = None,
) -> Change:
    """Merge our hook entries into ``client``'s settings (``dry_run``: write nothing)."""
    change = _plan(client, scope, root, remove=False, python=python)
    if not dry_run and change.status != "unchanged":
        _save(change)
    return change


def uninstall(client: str, scope: str, root: Path, *, dry_run: bool = False) -> Change:
    """Take our hook entries out of ``client``'s settings, keeping everything else."""
    change = _plan(client, scope, root, remove=True, python=None)
    if not dry_run and change.status != "unchanged":
        _save(change)
    return change


def _save(change: Change) -> None:
    try:
        if not change.after:
            change.path.unlink(missing_ok=True)
            return
        _write(change.path, change.after)
    except OSError as e:
        raise InstallError(f"cannot write {change.path}: {e}") from None
