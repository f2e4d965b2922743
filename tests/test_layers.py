"""One direction of dependency: server → predictive → storage. Neither lower layer imports an
editor or protocol library, and storage knows nothing of predictive or server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "storage": {"predictive", "server", "pygls", "lsprotocol", "mcp", "bench"},
    "predictive": {"server", "pygls", "lsprotocol", "mcp", "bench"},
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_never_import_upper_ones(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no modules found under {package}/"
    wrong = {str(f.relative_to(ROOT)): sorted(imports_of(f) & FORBIDDEN[package]) for f in files}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from server.cli import main\n    import pygls.server\n")
    assert imports_of(f) == {"server", "pygls"}
