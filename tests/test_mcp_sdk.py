"""The SDK's server layer imported for a fast start (:mod:`server.mcp_server.sdk`): the SDK
and pydantic are laid out as it expects (these fail loudly when an upgrade changes that), the
package it leaves bare becomes the whole ``mcp`` package when asked for anything else, and the
models whose validators wait for their first use validate as they always do."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

from server.mcp_server.sdk import bare_package_spec, validators_deferred

ROOT = Path(__file__).resolve().parents[1]


def test_the_sdk_has_its_server_layer_inside_a_source_package() -> None:
    assert bare_package_spec() is not None, "the mcp package is laid out otherwise: see sdk.py"


def test_pydantic_keeps_the_default_that_defers_validators() -> None:
    from pydantic._internal._config import config_defaults

    assert config_defaults.get("defer_build") is False, "pydantic moved its defaults: sdk.py"

    with validators_deferred():
        assert config_defaults.get("defer_build") is True

        class Deferred(BaseModel):
            n: int

    assert config_defaults.get("defer_build") is False
    assert Deferred.__pydantic_complete__ is False
    assert Deferred.model_validate({"n": "3"}).n == 3
    assert Deferred.__pydantic_complete__ is True


def test_the_default_is_restored_when_the_import_fails() -> None:
    from pydantic._internal._config import config_defaults

    with pytest.raises(ImportError), validators_deferred():
        raise ImportError("no such SDK")
    assert config_defaults.get("defer_build") is False


FRESH = """
import sys

from server.mcp_server.sdk import server_class

MCPServer = server_class()
assert "mcp.client" not in sys.modules, "the SDK's client was imported"
from pydantic._internal._config import config_defaults

assert config_defaults["defer_build"] is False
import mcp_types

request = mcp_types.InitializeRequest.model_validate(
    {
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
)
assert request.params.client_info.name == "t"
try:
    mcp_types.Implementation.model_validate({"name": 3})
except Exception as e:
    assert "name" in str(e), e
else:
    raise AssertionError("a bad value was accepted")

from mcp import Client, ClientSession  # the whole package, asked for

import mcp
import mcp.client.client
from mcp.server.mcpserver import MCPServer as Again

assert mcp.Client is Client is mcp.client.client.Client
assert Again is MCPServer
assert "__getattr__" not in vars(mcp)
try:
    from mcp import NoSuchName  # noqa: F401
except ImportError:
    pass
else:
    raise AssertionError("a name the package lacks was found")
print("ok")
"""


def test_a_fresh_process_gets_the_server_layer_then_the_whole_package() -> None:
    got = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FRESH)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout == "ok\n"


def test_an_sdk_imported_already_is_used_as_it_is() -> None:
    import mcp
    from mcp.server.mcpserver import MCPServer

    from server.mcp_server.sdk import server_class

    assert server_class() is MCPServer
    assert sys.modules["mcp"] is mcp
