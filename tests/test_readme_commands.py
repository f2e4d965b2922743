"""Every command of the CLI is shown in README.md, the way a user would type it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from server.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    """Every command and subcommand of ``parser`` ("mcp", "mcp install", …)."""
    out: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(f"{prefix}{name}")
                out.extend(commands(sub, f"{prefix}{name} "))
    return out


def test_every_command_is_in_the_readme() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    names = commands(build_parser())
    assert len(names) >= 15
    missing = [n for n in names if not re.search(rf"living-memory {re.escape(n)}\b", text)]
    assert missing == []
