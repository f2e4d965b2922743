"""What a project declares: its dependencies (pyproject.toml, requirements files,
package.json, Cargo.toml, go.mod), its npm scripts and its make targets."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

try:
    import tomllib
except ImportError:  # Python 3.10: a line-based reading of the same tables
    tomllib = None  # type: ignore[assignment]

MANIFEST_NAMES = frozenset(
    {
        "pyproject.toml",
        "package.json",
        "Cargo.toml",
        "go.mod",
        "Pipfile",
        "setup.cfg",
        "Makefile",
        "makefile",
        "GNUmakefile",
    }
)
_REQUIREMENTS = re.compile(r"^requirements[\w.-]*\.(txt|in)$", re.I)
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", re.M)
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([\w.-]+\.[\w.-]+/[\w./-]+)\s+v", re.M)
MAX_DEPTH = 3  # manifests this deep in the tree at most (a monorepo's packages)


def normalise(name: str) -> str:
    """A package name as registries compare it (PEP 503: case, ``-``/``_``/``.`` alike)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_manifest(path: str) -> bool:
    p = PurePosixPath(path)
    if len(p.parts) > MAX_DEPTH or "node_modules" in p.parts:
        return False
    return p.name in MANIFEST_NAMES or bool(_REQUIREMENTS.match(p.name))


@dataclass
class Declared:
    """Everything the manifests of one tree declare."""

    dependencies: set[str] = field(default_factory=set)  # normalised names
    scripts: set[str] = field(default_factory=set)  # npm scripts
    targets: set[str] = field(default_factory=set)  # make targets

    def has_command(self, command: str) -> bool:
        tool, _, name = command.partition(" ")
        return name in (self.targets if tool == "make" else self.scripts)


def _requirement_names(items: Iterable[Any]) -> Iterable[str]:
    for item in items:
        if isinstance(item, str):
            m = _REQ_NAME.match(item)
            if m:
                yield m.group(1)


def _toml(text: str) -> dict[str, Any] | None:
    """A TOML document; without ``tomllib``, its tables' keys and string arrays only."""
    if tomllib is not None:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
    data: dict[str, Any] = {}
    table = data
    for block in re.finditer(r"(?ms)^\[([^\]\n]+)\]\s*$|^([\w.-]+)\s*=\s*(\[.*?\]|[^\n]*)", text):
        if block.group(1):
            table = data
            for part in block.group(1).strip().split("."):
                table = table.setdefault(part.strip().strip('"'), {})
        else:
            value = block.group(3)
            table[block.group(2)] = (
                re.findall(r"[\"']([^\"']+)[\"']", value) if value.startswith("[") else value
            )
    return data


def _pyproject(text: str, out: Declared) -> None:
    data = _toml(text)
    if data is None:
        return
    found = data.get("project")
    project: dict[str, Any] = found if isinstance(found, dict) else {}
    names: list[str] = list(_requirement_names(project.get("dependencies") or []))
    for group in (project.get("optional-dependencies") or {}).values():
        names += _requirement_names(group if isinstance(group, list) else [])
    for group in (data.get("dependency-groups") or {}).values():
        names += _requirement_names(group if isinstance(group, list) else [])
    poetry = (data.get("tool") or {}).get("poetry") or {}
    if isinstance(poetry, dict):
        for key in ("dependencies", "dev-dependencies"):
            section = poetry.get(key)
            if isinstance(section, Mapping):
                names += [str(k) for k in section]
        for group in (poetry.get("group") or {}).values():
            if isinstance(group, Mapping) and isinstance(group.get("dependencies"), Mapping):
                names += [str(k) for k in group["dependencies"]]
    out.dependencies.update(normalise(n) for n in names if n.lower() != "python")


def _package_json(text: str, out: Declared) -> None:
    try:
        data = json.loads(text)
    except ValueError:
        return
    if not isinstance(data, dict):
        return
    for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
        section = data.get(key)
        if isinstance(section, dict):
            out.dependencies.update(normalise(str(k)) for k in section)
    scripts = data.get("scripts")
    if isinstance(scripts, dict):
        out.scripts.update(str(k) for k in scripts)


def _cargo(text: str, out: Declared) -> None:
    data = _toml(text)
    if data is None:
        return
    for key in ("dependencies", "dev-dependencies", "build-dependencies"):
        section = data.get(key)
        if isinstance(section, dict):
            out.dependencies.update(normalise(str(k)) for k in section)


def _setup_cfg(text: str, out: Declared) -> None:
    block = re.search(r"install_requires\s*=\s*\n((?:[ \t]+.*\n?)*)", text)
    if block:
        out.dependencies.update(
            normalise(n) for n in _requirement_names(block.group(1).splitlines())
        )


def read_manifests(texts: Mapping[str, str]) -> Declared:
    """What the manifests ``path → text`` declare together."""
    out = Declared()
    for path, text in texts.items():
        name = PurePosixPath(path).name
        if name == "pyproject.toml":
            _pyproject(text, out)
        elif name == "package.json":
            _package_json(text, out)
        elif name == "Cargo.toml":
            _cargo(text, out)
        elif name == "go.mod":
            out.dependencies.update(normalise(m) for m in _GO_REQUIRE.findall(text))
        elif name == "setup.cfg":
            _setup_cfg(text, out)
        elif name in ("Makefile", "makefile", "GNUmakefile"):
            out.targets.update(t for t in _MAKE_TARGET.findall(text) if not t.startswith("."))
        elif name == "Pipfile":
            _cargo(text.replace("[dev-packages]", "[dev-dependencies]"), out)
            packages = (_toml(text) or {}).get("packages")
            if isinstance(packages, dict):
                out.dependencies.update(normalise(str(k)) for k in packages)
        else:
            lines = [ln.split("#", 1)[0] for ln in text.splitlines()]
            out.dependencies.update(
                normalise(n)
                for n in _requirement_names(ln for ln in lines if ln.strip()[:1] != "-")
            )
    return out
