"""The ``living-memory`` entry point: ``mcp`` is read by its own small parser (the global
options and the command as the full command line defines them) and runs without the rest of
the command line; everything else is the full command line's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from server.cli import build_parser
from server.cli import main as cli_main
from server.launch import command_of, main, mcp_parser

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["mcp"], "mcp"),
        (["--db", "mcp", "search", "x"], "search"),  # a database file called mcp
        (["--db=x.db", "-v", "mcp", "--no-ingest"], "mcp"),
        (["--model-dir", "/m", "--verbose", "mcp", "install"], "mcp"),
        (["--d", "x.db", "mcp"], None),  # an abbreviation: the full parser decides
        (["--help"], None),
        ([], None),
        (["--db"], None),
    ],
)
def test_the_command_is_found_after_the_global_options(
    argv: list[str], command: str | None
) -> None:
    assert command_of(argv) == command


@pytest.mark.parametrize(
    "argv",
    [
        ["mcp"],
        ["--db", "x.db", "-v", "mcp", "--no-ingest", "--root", "."],
        ["--model-dir", "/models", "mcp", "--http", "8765", "--no-auth"],
        ["mcp", "install", "--client", "cursor", "--scope", "user", "--dry-run"],
        ["mcp", "install", "--client", "codex", "--http", "9000", "--root", "/p"],
    ],
)
def test_mcp_is_parsed_as_the_full_command_line_parses_it(argv: list[str]) -> None:
    assert vars(mcp_parser().parse_args(argv)) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize(
    "argv",
    [
        ["mcp", "--bogus"],
        ["mcp", "--http", "eighty"],
        ["mcp", "install", "--client", "emacs"],
        ["--db", "x.db", "mcp", "install"],
    ],
)
def test_bad_mcp_arguments_get_the_full_command_lines_one_line_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    lean = capsys.readouterr()
    assert cli_main(argv) == 2
    full = capsys.readouterr()
    assert lean.err == full.err
    assert lean.err.startswith("error: living-memory") and lean.err.count("\n") == 1
    assert lean.out == ""


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_a_port_out_of_range_is_refused_in_one_line() -> None:
    got = run_module("mcp", "--http", "70000")
    assert got.returncode == 2
    assert got.stderr == "error: --http: not a port: 70000\n"
    assert got.stdout == ""


def test_mcp_runs_without_importing_the_rest_of_the_command_line(tmp_path: Path) -> None:
    """The command's ``run`` is replaced by one that reports what it was given and whether the
    full command line was imported."""
    script = (
        "import sys\n"
        "import server.mcp_server.command as command\n"
        "command.run = lambda a: print(a.command, a.db, a.no_ingest, a.root, "
        "'server.cli' in sys.modules) or 0\n"
        "from server.launch import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", script, "--db", "x.db", "mcp", "--no-ingest", "--root", "p"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout == "mcp x.db True p False\n"


def test_other_commands_are_the_full_command_lines(tmp_path: Path) -> None:
    got = run_module("--db", str(tmp_path / "m.db"), "stats", "--json")
    assert got.returncode == 0, got.stderr
    assert '"memories": 0' in got.stdout
