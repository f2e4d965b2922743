"""The ``living-memory mcp`` command: run the MCP server, or ``mcp install`` it into a client."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``mcp`` (and ``mcp install``) on the CLI's subparsers."""
    p = sub.add_parser(
        "mcp", help="run the MCP server for agents (stdio; --http PORT for streamable HTTP)"
    )
    p.add_argument(
        "--root", type=Path, metavar="DIR", help="the project folder (default: the git root here)"
    )
    p.add_argument(
        "--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT"
    )
    p.add_argument(
        "--no-auth",
        action="store_true",
        help="with --http: accept requests without the bearer token (any local user can then "
        "read and write the memory)",
    )
    p.add_argument(
        "--no-ingest",
        action="store_true",
        help="do not learn a new project's history on start (the language server or "
        "'living-memory ingest' does it)",
    )
    msub = p.add_subparsers(dest="mcp_command", metavar="install", parser_class=type(p))
    i = msub.add_parser("install", help="add the MCP server to a client's configuration")
    i.add_argument("--client", required=True, choices=["claude", "cursor", "vscode", "codex"])
    i.add_argument(
        "--scope",
        choices=["project", "user"],
        help="project (default; codex: user) writes the project's file, user the client's own",
    )
    i.add_argument(
        "--root", type=Path, dest="install_root", metavar="DIR", help="the project folder"
    )
    i.add_argument(
        "--http",
        type=int,
        dest="install_http",
        metavar="PORT",
        help="configure the HTTP server on 127.0.0.1:PORT (with its bearer token) instead of "
        "a command the client starts",
    )
    i.add_argument(
        "--no-auth",
        action="store_true",
        dest="install_no_auth",
        help="with --http: the server runs with --no-auth (no token in the configuration)",
    )
    i.add_argument("--dry-run", action="store_true", help="print the change; write nothing")
    p.set_defaults(run=run)


def _root(given: Path | None) -> Path:
    from predictive.operations import ArgumentError
    from predictive.session import find_root

    try:
        return find_root(given)
    except ArgumentError as e:
        raise SystemExit(f"error: --root: {e.message}") from None


def run(args: argparse.Namespace) -> int:
    """Run the server (stdout is the protocol: logs go to stderr) or install it."""
    if getattr(args, "mcp_command", None) == "install":
        return _install(args)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.http is None:
        from server.mcp_server.relay import hand_over

        served = hand_over(args.root, args.db, args.model_dir, ingest=not args.no_ingest)
        if served is not None:  # the warm daemon served the session
            return served
    from storage.paths import default_db_path

    root = _root(args.root)
    db = args.db or default_db_path(root)
    if args.http is not None and not 0 < args.http < 65536:
        print(f"error: --http: not a port: {args.http}", file=sys.stderr)
        return 2
    token = None
    if args.http is not None and not args.no_auth:
        from server.mcp_server.http_guard import load_or_create_token, token_path

        try:
            token = load_or_create_token(db)
        except OSError as e:
            print(f"error: cannot keep the HTTP token at {token_path(db)}: {e}", file=sys.stderr)
            return 2
        print(
            f"living-memory MCP on http://127.0.0.1:{args.http}/mcp; send "
            f"'Authorization: Bearer <token>' (the token is in {token_path(db)})",
            file=sys.stderr,
        )
    from server.mcp_server.app import Backend, serve

    backend = Backend(root=root, db_path=db, model_dir=args.model_dir)
    return serve(backend, http_port=args.http, ingest=not args.no_ingest, token=token)


def _install(args: argparse.Namespace) -> int:
    from server.mcp_server.install import HttpServer, InstallError, install

    root = _root(args.install_root or args.root)
    http = None
    port = args.install_http
    if port is not None:
        if not 0 < port < 65536:
            print(f"error: --http: not a port: {port}", file=sys.stderr)
            return 2
        token = None
        if not args.install_no_auth:
            from server.mcp_server.http_guard import load_or_create_token
            from storage.paths import default_db_path

            try:
                token = load_or_create_token(args.db or default_db_path(root))
            except OSError as e:
                print(f"error: cannot make the HTTP token: {e}", file=sys.stderr)
                return 2
        http = HttpServer(f"http://127.0.0.1:{port}/mcp", token)
    try:
        outcome = install(args.client, args.scope, root, dry_run=args.dry_run, http=http)
    except InstallError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    path = outcome.target.path
    if outcome.status == "unchanged":
        print(f"{path}: living-memory is already configured; nothing to change")
    elif args.dry_run:
        print(outcome.diff(), end="")
        print(f"(dry run: {path} was not changed)")
    else:
        print(
            f"{path}: living-memory {outcome.status} ({outcome.target.client}, "
            f"{outcome.target.scope} scope)"
        )
    if http is not None and http.token and not args.dry_run:
        print(
            f"{path} now holds the server's bearer token (Authorization: Bearer …): keep it "
            "out of version control; start the server with "
            f"'living-memory mcp --http {port}' in {root}"
        )
    sys.stdout.flush()
    return 0
