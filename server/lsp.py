"""A light entry point for the language server: ``python -m server.lsp [--stdio | --tcp
HOST:PORT] [--log-level L]`` (also ``python -m server serve`` and ``living-memory serve``).

It imports only pygls before it starts reading the protocol; the store side loads in the
background once ``initialize`` has been answered.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

LOG_LEVELS = ("error", "warning", "info", "debug")


def host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    p.add_argument("--tcp", type=host_port, metavar="HOST:PORT", help="listen on TCP instead")
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="until the client's livingMemory.logLevel setting arrives (default %(default)s)",
    )
    p.add_argument("--clientProcessId", help=argparse.SUPPRESS)  # sent by some LSP clients


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="living-memory serve", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    p.add_argument("--db", help="one database for every folder (default: one per project)")
    p.add_argument("--model-dir", help="embedding model directory (model.onnx + tokenizer.json)")
    args = p.parse_args(argv)
    if args.db:
        os.environ["LIVING_MEMORY_DB"] = args.db
    if args.model_dir:
        os.environ["LIVING_MEMORY_MODEL_DIR"] = args.model_dir
    from server.app import serve

    return serve(tcp=args.tcp, log_level=args.log_level)


if __name__ == "__main__":
    sys.exit(main())
