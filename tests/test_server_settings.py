"""Settings end to end: initializationOptions, workspace/configuration (global and per
folder), didChangeConfiguration, and invalid values (shown once, defaults used)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient
from server_support import (
    config,
    initialize,
    make_repo,
    mark,
    next_context,
    open_doc,
    run,
    switch_to,
    uri,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

AGENTS = ".living-memory/context.md"
CURSOR = ".cursor/rules/living-memory.mdc"


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("settings")
    one = make_repo(base / "one", files={"a.py": "A = 1\n", "b.py": "B = 1\n", "c.py": "C = 1\n"})
    two = make_repo(base / "two", files={"z.py": "Z = 1\n"})
    lsp_client.one, lsp_client.two, lsp_client.base = one, two, base  # type: ignore[attr-defined]
    # the pulled configuration wins over initializationOptions; folder two has its own budget
    lsp_client.set_configuration(
        {"budget": 1000, "injectionTargets": ["agents"]}, section="livingMemory"
    )
    lsp_client.set_configuration({"budget": 3000}, section="livingMemory", scope_uri=uri(two))
    await initialize(
        lsp_client,
        [one, two],
        {"budget": 5000, "dataDirectory": str(base / "data"), "debounceMs": 20},
    )
    yield
    await lsp_client.shutdown_session()


def folder(client: LanguageClient, name: str) -> Path:
    return getattr(client, name)


async def context_of(client: LanguageClient, path: Path) -> dict[str, Any]:
    since = mark(client)
    u = open_doc(client, path)
    switch_to(client, u)
    return await next_context(client, since, u)


async def reconfigure(client: LanguageClient, **values: Any) -> None:
    current = client.get_configuration(section="livingMemory") or {}
    client.set_configuration({**current, **values}, section="livingMemory")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def test_pulled_configuration_overrides_initialization_options(client: LanguageClient):
    ctx = await context_of(client, folder(client, "one") / "a.py")
    assert ctx["tokens"]["budget"] == 1000


async def test_initialization_options_still_apply_where_not_overridden(client: LanguageClient):
    stats = await run(client, "stats", {"folder": uri(folder(client, "one"))})
    assert stats["dbPath"].startswith(str(folder(client, "base") / "data"))


async def test_a_folder_can_have_its_own_settings(client: LanguageClient):
    ctx = await context_of(client, folder(client, "two") / "z.py")
    assert ctx["tokens"]["budget"] == 3000


async def test_only_configured_injection_targets_are_written(client: LanguageClient):
    ctx = await context_of(client, folder(client, "one") / "b.py")
    assert ctx["injected"] == [str(folder(client, "one") / AGENTS)]
    assert not (folder(client, "one") / CURSOR).exists()


async def test_changed_configuration_applies_to_the_next_context(client: LanguageClient):
    await reconfigure(client, budget=2000, injectionTargets=["agents", "cursor"])
    one = folder(client, "one")
    await wait_for(lambda: (one / CURSOR).exists(), what="the cursor rule")
    ctx = await context_of(client, one / "c.py")
    assert ctx["tokens"]["budget"] == 2000
    assert sorted(ctx["injected"]) == sorted([str(one / AGENTS), str(one / CURSOR)])


async def test_a_dropped_target_loses_its_generated_file(client: LanguageClient):
    one = folder(client, "one")
    await context_of(client, one / "a.py")
    await wait_for(lambda: (one / AGENTS).exists(), what="context.md")
    await reconfigure(client, injectionTargets=["cursor"])
    await wait_for(lambda: not (one / AGENTS).exists(), what="context.md to go")


async def test_invalid_settings_are_shown_once_and_defaults_used(client: LanguageClient):
    await reconfigure(client, budget="lots", debounceMs=-5)
    await wait_for(
        lambda: any("livingMemory.budget" in m.message for m in client.messages),
        what="a message about the budget",
    )
    ctx = await context_of(client, folder(client, "one") / "b.py")
    assert ctx["tokens"]["budget"] == 8000  # the default, not "lots"
    await reconfigure(client, budget="lots", debounceMs=-5)  # the same mistake again
    await context_of(client, folder(client, "one") / "c.py")
    shown = [m for m in client.messages if "livingMemory.budget" in m.message]
    assert len(shown) == 1 and shown[0].type == types.MessageType.Warning
    assert any("debounceMs" in m.message for m in client.messages)


async def test_an_out_of_range_value_is_reported_under_its_own_name():
    from server.settings import Settings, load

    settings, problems = load({"budget": 5, "debounceMs": 20})
    assert settings.budget == Settings().budget and settings.debounce_ms == 20
    assert problems == [
        "livingMemory.budget: budget must be between 200 and 1000000 tokens — using the default"
    ]
