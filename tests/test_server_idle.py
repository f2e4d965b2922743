"""Consolidation on a schedule: the real server consolidates a project's store once the
editor has been idle for ``consolidateWhenIdleMinutes``; 0 turns it off (per folder too)."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient
from server_support import config, eventually, initialize, make_repo, run, uri

pytestmark = pytest.mark.asyncio(loop_scope="module")

DUPLICATES = (
    "Deploys run from the release branch on Tuesdays.",
    "deploys run from the release branch on tuesdays!",
)


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("idle")
    on = make_repo(base / "on", files={"a.py": "A = 1\n"})
    off = make_repo(base / "off", files={"b.py": "B = 1\n"})
    lsp_client.on, lsp_client.off = uri(on), uri(off)  # type: ignore[attr-defined]
    lsp_client.set_configuration({"consolidateWhenIdleMinutes": 0.01}, section="livingMemory")
    lsp_client.set_configuration(
        {"consolidateWhenIdleMinutes": 0}, section="livingMemory", scope_uri=uri(off)
    )
    await initialize(
        lsp_client,
        [on, off],
        {"dataDirectory": str(base / "data"), "ingestOnFirstOpen": False},
    )
    yield
    await lsp_client.shutdown_session()


async def pending_merges(client: LanguageClient, folder: str) -> int:
    preview = await run(client, "consolidate", {"dryRun": True, "folder": folder})
    return preview["merged"]


async def test_an_idle_editor_gets_its_store_consolidated_and_zero_turns_it_off(
    client: LanguageClient,
):
    for folder in (client.on, client.off):  # type: ignore[attr-defined]
        for text in DUPLICATES:
            await run(client, "remember", {"text": text, "kind": "convention", "folder": folder})
    on, off = client.on, client.off  # type: ignore[attr-defined]
    await eventually(lambda: pending_merges(client, on), lambda n: n == 0, what="idle merge")
    await asyncio.sleep(1.5)  # several more idle checks
    assert await pending_merges(client, off) == 1
    found = await run(client, "search", {"query": "release branch Tuesdays", "folder": on})
    assert len([r for r in found["results"] if "release branch" in r["text"]]) == 1
