"""The MCP SDK's server layer, imported for a fast start.

Imported the ordinary way, ``mcp.server.mcpserver`` first runs the ``mcp`` package's
``__init__``, which imports the SDK's client as well (some 25 modules a server never uses), and
pydantic builds the validator of every one of the protocol's ~500 models, though a session uses
a few dozen. :func:`server_class` imports the server layer without the package's ``__init__``
and lets pydantic build each of those models' validators when it is first used. The package is
completed (its ``__init__`` run) as soon as anything asks it for a name it lacks
(``from mcp import Client``), so ``mcp`` still offers everything it always did. An SDK laid out
otherwise is imported the ordinary way (``tests/test_mcp_sdk.py`` says so loudly)."""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

PACKAGE = "mcp"
SERVER_LAYER = ("server", "mcpserver", "__init__.py")
"""Where the server layer lives inside the package."""

_lock = threading.Lock()


def server_class() -> type[MCPServer]:
    """The SDK's ``MCPServer``, imported as this module says."""
    with _lock:
        if PACKAGE not in sys.modules:
            spec = bare_package_spec()
            if spec is not None:
                sys.modules[PACKAGE] = _bare_package(spec)
    with validators_deferred():
        from mcp.server.mcpserver import MCPServer
    return MCPServer


def bare_package_spec() -> ModuleSpec | None:
    """The ``mcp`` package's spec if it is laid out as :func:`server_class` expects (a source
    package with the server layer inside), else None."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return None
    if not hasattr(spec.loader, "exec_module"):
        return None
    folders = [Path(p) for p in spec.submodule_search_locations]
    if not any(f.joinpath(*SERVER_LAYER).is_file() for f in folders):
        return None
    return spec


def _bare_package(spec: ModuleSpec) -> ModuleType:
    """The package module with its attributes set but its ``__init__`` not run; the first
    lookup of a name it lacks runs it, once (other threads wait for it; the ``__init__``'s own
    lookups find what it has defined so far, as in any import)."""
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader
    assert loader is not None
    state = {"running": False, "done": False}
    guard = threading.RLock()

    def complete(name: str) -> Any:
        with guard:
            if not state["done"]:
                if state["running"]:  # the ``__init__`` asks before it defines the name
                    raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r} yet")
                state["running"] = True
                try:
                    loader.exec_module(package)
                finally:
                    state["running"] = False
                    state["done"] = True
                    package.__dict__.pop("__getattr__", None)
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}") from None

    package.__dict__["__getattr__"] = complete
    return package


@contextmanager
def validators_deferred() -> Iterator[None]:
    """pydantic models defined meanwhile build their validators on first use (their
    ``defer_build``), by pydantic's default for it; where that default is not found,
    nothing changes."""
    try:
        from pydantic._internal._config import config_defaults
    except ImportError:
        yield
        return
    defaults: Any = config_defaults
    if not isinstance(defaults, dict) or defaults.get("defer_build") is not False:
        yield
        return
    defaults["defer_build"] = True
    try:
        yield
    finally:
        defaults["defer_build"] = False
