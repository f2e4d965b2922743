"""The ``living-memory hook`` command: answer an agent's hook event, run the warm daemon, or
install the hooks into a client's settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ACTIONS = "EVENT | install | uninstall | serve [--stop] | status"


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        metavar="ACTION",
        help=f"{ACTIONS}: an event name (SessionStart, UserPromptSubmit, PostToolUse, Stop, "
        "SessionEnd, PreCompact; Cursor's beforeSubmitPrompt, afterFileEdit, …) reads the "
        "agent's JSON on stdin and answers on stdout",
    )
    p.add_argument("payload", nargs="?", help=argparse.SUPPRESS)  # Codex notify's JSON
    p.add_argument("--client", choices=["claude", "cursor", "codex"], default=None)
    p.add_argument("--budget", type=int, metavar="TOKENS", help="a prompt's answer (1500)")
    p.add_argument(
        "--scope",
        choices=["project", "user"],
        default="project",
        help="install/uninstall: the project's settings file (default) or the user's",
    )
    p.add_argument("--root", type=Path, dest="hook_root", metavar="DIR", help="the project")
    p.add_argument("--dry-run", action="store_true", help="install/uninstall: print the diff")
    p.add_argument("--idle", type=float, default=1800.0, help="serve: leave after idle seconds")
    p.add_argument("--stop", action="store_true", help="serve: stop the running daemon")
    p.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)  # event on stdin


def add_parser(sub: Any) -> None:
    """Register ``hook`` on the CLI's subparsers."""
    p = sub.add_parser(
        "hook",
        help="agent hooks: answer an event (Claude Code, Cursor, Codex), run the warm daemon, "
        "or install/uninstall the hooks",
    )
    _arguments(p)
    p.set_defaults(run=run)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="living-memory hook")
    _arguments(p)
    return run(p.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    action = args.action
    if action in ("install", "uninstall"):
        return _install(args, remove=action == "uninstall")
    if action == "serve" and args.stop:
        return _stop()
    if action == "serve":
        from server.hooks.daemon import serve

        if args.idle <= 0:
            print("error: --idle must be a positive number of seconds", file=sys.stderr)
            return 2
        return serve(idle=args.idle, warm=_warm_event() if args.warm else None)
    if action == "status":
        return _status()
    from server.hooks.client import answer

    argv = [action, "--client", args.client or "claude"]
    if args.budget:
        argv += ["--budget", str(args.budget)]
    if args.payload:
        argv.append(args.payload)
    return answer(argv)


def _warm_event() -> dict[str, Any] | None:
    """The event that started the daemon, handed over on stdin."""
    import json

    try:
        value = json.loads(sys.stdin.buffer.read(8_000_000).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _control(what: str) -> dict[str, Any] | None:
    """The daemon's answer to a control request; None when no daemon answers."""
    import json

    from server.hooks.client import ask_daemon

    try:
        out = ask_daemon({"control": what}, 5.0)
    except (OSError, ValueError):
        return None
    if out is None:
        return None
    try:
        value = json.loads(out)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _status() -> int:
    from server.hooks import where

    path = where.socket_path()
    status = _control("status")
    if status is None:
        print(f"daemon  not running ({path})")
    else:
        idle = status.get("idle_seconds", "?")
        print(f"daemon  running, pid {status.get('pid', '?')}, idle {idle} s ({path})")
        for project in status.get("projects") or []:
            print(f"        {project}")
        if status.get("mcp_sessions"):
            print(f"        serving {status['mcp_sessions']} MCP session(s)")
    print(f"log     {where.log_path()}")
    return 0


def _stop() -> int:
    from server.hooks import where

    stopping = _control("stop")
    if stopping is None:
        print(f"no hook daemon runs ({where.socket_path()})")
        return 0
    print(f"hook daemon {stopping.get('stopping', '')} stops (it finishes what it is learning)")
    return 0


def _install(args: argparse.Namespace, *, remove: bool) -> int:
    from predictive.operations import ArgumentError
    from predictive.session import find_root
    from server.hooks.install import InstallError, install, uninstall
    from server.mcp_server.install import InstallError as ConfigError

    if args.client is None:
        print("error: --client is required (claude, cursor or codex)", file=sys.stderr)
        return 2
    try:
        root = find_root(args.hook_root)
    except ArgumentError as e:
        print(f"error: --root: {e.message}", file=sys.stderr)
        return 2
    try:
        change = (uninstall if remove else install)(
            args.client, args.scope, root, dry_run=args.dry_run
        )
    except (InstallError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if change.status == "unchanged":
        what = "not installed" if remove else "already installed"
        print(f"{change.path}: Living Memory hooks are {what}; nothing to change")
        return 0
    print(change.diff(), end="")
    if args.dry_run:
        print(f"(dry run: {change.path} was not changed)")
    else:
        print(f"{change.path}: Living Memory hooks {change.status} ({args.client}, {args.scope})")
        if args.client == "codex" and not remove:
            print(
                "Codex asks you to trust new hooks (/hooks in Codex); a Codex whose hooks are "
                "still experimental needs `codex_hooks = true` under [features] in its "
                "config.toml (left for you to set)."
            )
    return 0
