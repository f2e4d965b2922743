"""What every ``living-memory`` command line shares: the global options (before the command's
name), the one-line usage errors, the optional model's configuration."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn


class UsageError(Exception):
    """A command line argparse refused: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError`, not an exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def add_global_options(p: argparse.ArgumentParser) -> None:
    """The options every command takes before its name."""
    from storage.embeddings import ENV_MODEL_DIR

    p.add_argument(
        "--db",
        type=Path,
        help="database file (default: $LIVING_MEMORY_DB, else the user data dir keyed by the "
        "git root of the current directory)",
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        default=os.environ.get(ENV_MODEL_DIR) or None,
        help="embedding model directory with model.onnx + tokenizer.json "
        f"(default: ${ENV_MODEL_DIR}, else the packaged all-MiniLM-L6-v2)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")


def configure_llm() -> None:
    """The optional model of ``LIVING_MEMORY_LLM_*`` (README), its problems warned about."""
    from predictive.operations import llm_config

    llm, problems = llm_config.config_from_env()
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    llm_config.configure(llm)
