"""SQL lives in storage/: the engine and the front doors ask the store, never its connection."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SQL_CALLS = {"execute", "executemany", "executescript"}


def sql_calls(path: Path) -> list[int]:
    """Lines of ``path`` that call a connection's or cursor's execute methods."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in SQL_CALLS
    )


def test_no_sql_outside_storage() -> None:
    found = {
        str(f.relative_to(ROOT)): lines
        for package in ("predictive", "server")
        for f in sorted((ROOT / package).rglob("*.py"))
        if (lines := sql_calls(f))
    }
    assert found == {}


def test_the_check_sees_sql_wherever_it_is_called(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        "def f(store):\n"
        "    return store.conn.execute('SELECT 1').fetchone()\n"
        "g = lambda c: c.executemany('INSERT', [])\n"
    )
    assert sql_calls(f) == [2, 3]
