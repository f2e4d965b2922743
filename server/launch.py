"""The ``living-memory`` command's entry point: ``mcp`` is parsed by the global options and its
own parser alone and runs without importing the rest of the command line (an agent's client
starts it and waits for its first answer); every other command goes to :mod:`server.cli`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from server.options import Parser, UsageError, add_global_options, configure_llm

EXIT_ERROR = 2


def global_spellings() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The global options' spellings (:func:`add_global_options`): those that take a value
    (``--db PATH`` or ``--db=PATH``), and the flags."""
    p = Parser(add_help=False)
    add_global_options(p)
    valued = tuple(o for a in p._actions if a.nargs != 0 for o in a.option_strings)
    flags = tuple(o for a in p._actions if a.nargs == 0 for o in a.option_strings)
    return valued, flags


def command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names after the global options, or None when it names none
    or spells an option in a way this does not read (an abbreviation): the full parser then
    decides."""
    valued, flags = global_spellings()
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in valued:
            i += 2
        elif word in flags or word.startswith(tuple(f"{o}=" for o in valued)):
            i += 1
        else:
            return None if word.startswith("-") else word
    return None


def mcp_parser() -> Parser:
    """The global options and the ``mcp`` command, as the full command line defines them."""
    from server.mcp_server.command import add_parser

    p = Parser(prog="living-memory", description="Project memory for AI-assisted coding.")
    add_global_options(p)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    add_parser(sub)
    return p


def run_mcp(argv: Sequence[str]) -> int:
    """``living-memory [global options] mcp …``: the MCP server (or ``mcp install``)."""
    try:
        args = mcp_parser().parse_args(list(argv))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    configure_llm()
    return int(args.run(args))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if command_of(args) == "mcp":
        return run_mcp(args)
    from server.cli import main as cli_main

    return cli_main(args)
