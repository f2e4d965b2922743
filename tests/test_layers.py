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


# ---- the front doors' one door into predictive --------------------------------------------

DOORS = ("predictive.operations", "predictive.session")
"""What ``server/`` may import from ``predictive``: these modules and (the operations') their
submodules; the operations package re-exports what a front door needs."""


def predictive_imports(path: Path) -> set[str]:
    """The ``predictive`` modules (or ``predictive.name`` for ``from predictive import name``)
    a file imports, wherever the import stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "predictive")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "predictive":
                found.update(f"predictive.{a.name}" for a in node.names)
            elif node.module.split(".")[0] == "predictive":
                found.add(node.module)
    return found


def outside_the_doors(modules: set[str]) -> set[str]:
    return {m for m in modules if not any(m == d or m.startswith(d + ".") for d in DOORS)}


def test_server_reaches_predictive_only_through_operations_and_the_session() -> None:
    files = sorted((ROOT / "server").rglob("*.py"))
    wrong = {
        str(f.relative_to(ROOT)): sorted(outside_the_doors(predictive_imports(f))) for f in files
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_door_check_sees_every_spelling(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        "import predictive.engine\n"
        "from predictive import operations, signals\n"
        "from predictive.operations.requests import SearchArgs\n"
        "def f():\n    from predictive.session import ProjectSession\n"
        "    from predictive.sessions import x\n"
    )
    assert outside_the_doors(predictive_imports(f)) == {
        "predictive.engine",
        "predictive.signals",
        "predictive.sessions",
    }


# ---- import cycles ---------------------------------------------------------------------------

PACKAGES = ("storage", "predictive", "server")

# Import cycles that exist today, each as the set of modules that import one another (type-
# checking and function-level imports count). This list may only shrink: a new cycle, or a
# module joining one of these, fails the test; breaking one means taking it off here.
KNOWN_CYCLES: list[set[str]] = []


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Which of the packages' modules each module imports, wherever the import stands (in a
    function, under ``if TYPE_CHECKING:``). ``from p import x`` is an import of ``p.x`` when
    that is a module, else of ``p``."""
    files = {module_name(f, root): f for p in packages for f in sorted((root / p).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                for a in node.names:
                    found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base)
        graph[name] = {m for m in found if m in files and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def a_cycle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """One import path that returns to where it started, through modules of ``group``."""
    start = min(group)
    paths = {start: [start]}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & group):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                todo.append(w)
    return []


def test_no_new_import_cycles() -> None:
    graph = module_graph(ROOT, PACKAGES)
    new = [
        " → ".join(a_cycle(graph, group))
        for group in cycles(graph)
        if not any(group <= known for known in KNOWN_CYCLES)
    ]
    assert new == [], "new import cycles (break them: a narrower type, a protocol, a move)"


def test_the_known_cycles_only_shrink() -> None:
    found = cycles(module_graph(ROOT, PACKAGES))
    gone = [sorted(known) for known in KNOWN_CYCLES if known not in found]
    assert gone == [], "these cycles are no longer as listed: shrink KNOWN_CYCLES to what is left"


def test_the_cycle_check_sees_type_checking_and_local_imports(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from . import a\n")
    (tmp_path / "pkg" / "c.py").write_text("from pkg import a, b\n")
    graph = module_graph(tmp_path, ("pkg",))
    assert graph["pkg.c"] == {"pkg.a", "pkg.b"}
    assert cycles(graph) == [{"pkg.a", "pkg.b"}]
    assert a_cycle(graph, {"pkg.a", "pkg.b"}) == ["pkg.a", "pkg.b", "pkg.a"]


def test_every_name_the_operations_export_resolves() -> None:
    import importlib
    import types

    import predictive.operations as ops

    for module in ("search", "contradictions", "locked_contexts"):  # named like their function
        importlib.import_module(f"predictive.operations.{module}")
    assert sorted(ops.__all__) == sorted(ops._EXPORTS)
    for name in ops.__all__:
        value = getattr(ops, name)
        assert value is not None
        assert not isinstance(value, types.ModuleType) or ops._EXPORTS[name][1] is None, name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = ops.nothing_here
