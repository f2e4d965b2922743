"""Team memory through the language server: review commands (list, approve, edit, reject),
share, and the shared folder read back when its files change (pytest-lsp, real server)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient
from server_support import config, eventually, initialize, run

pytestmark = pytest.mark.asyncio(loop_scope="module")

SHARED = ".living-memory/shared"
CAROL = """---
id: c0ffee01
kind: convention
status: approved
created: 2026-01-05T09:00:00Z
valid_from: 2026-01-05T09:00:00Z
anchors:
  - file:src/api.py
---

# Handlers validate input with pydantic models

Handlers validate input with pydantic models, never by hand.
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("team")
    repo = base / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "config", "user.name", "Carol")
    git(repo, "config", "user.email", "carol@example.com")
    (repo / "src").mkdir()
    (repo / "src" / "api.py").write_text("def handler():\n    return 1\n")
    (repo / SHARED / "conventions").mkdir(parents=True)
    (repo / SHARED / "conventions" / "handlers-validate-input-c0ffee01.md").write_text(CAROL)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Share a convention")
    lsp_client.repo = repo  # type: ignore[attr-defined]
    await initialize(
        lsp_client,
        [repo],
        {"dataDirectory": str(base / "data"), "gitPollSeconds": 0.2, "ingestOnFirstOpen": False},
    )
    yield
    await lsp_client.shutdown_session()


def repo(client: LanguageClient) -> Path:
    return client.repo  # type: ignore[attr-defined]


async def search(client: LanguageClient, query: str) -> list[dict[str, Any]]:
    return [
        r
        for r in (await run(client, "search", {"query": query}))["results"]
        if r["source"]["kind"] != "commit"
    ]


async def test_the_shared_folder_is_read_when_the_project_opens_with_its_author(
    client: LanguageClient,
) -> None:
    found = await eventually(
        lambda: search(client, "pydantic handlers validate"),
        lambda r: bool(r),
        what="the shared convention",
    )
    assert found[0]["source"]["author"] == "Carol"
    assert "shared by Carol" in found[0]["provenance"]


async def test_review_approve_edit_reject_and_share_through_commands(
    client: LanguageClient,
) -> None:
    ids = {}
    for name, text in (
        ("keep", "Retry webhooks three times with backoff."),
        ("fix", "Log in UTC only."),
        ("drop", "Always use tabs everywhere."),
    ):
        ids[name] = (
            await run(client, "remember", {"text": text, "kind": "convention", "source": "mcp"})
        )["id"]
    listed = await run(client, "reviewList", {})
    assert {i["id"] for i in listed["items"]} == set(ids.values())
    assert all(i["review"] == "proposed" for i in listed["items"])

    assert (await run(client, "approve", {"ids": [ids["keep"]]}))["changed"] == [ids["keep"]]
    edited = await run(client, "edit", {"id": ids["fix"], "text": "Log timestamps in UTC only."})
    assert edited["id"] != ids["fix"] and edited["created"] is True
    assert (await run(client, "reject", {"ids": [ids["drop"]]}))["changed"] == [ids["drop"]]
    assert (await run(client, "reviewList", {}))["items"] == []
    assert not [r for r in await search(client, "tabs everywhere") if "tabs" in r["text"]]

    shared = await run(client, "share", {})
    assert len(shared["written"]) == 2
    folder = repo(client) / SHARED
    texts = sorted((folder / p).read_text().split("\n\n", 2)[2].strip() for p in shared["written"])
    assert texts == ["Log timestamps in UTC only.", "Retry webhooks three times with backoff."]
    again = await run(client, "share", {})
    assert again["written"] == [] and again["unchanged"] == 2 and again["files"] == 3


async def test_a_file_changed_on_disk_is_read_again_without_a_command(
    client: LanguageClient,
) -> None:
    path = repo(client) / SHARED / "conventions" / "handlers-validate-input-c0ffee01.md"
    path.write_text(CAROL.replace("never by hand", "never with hand-written checks"))
    found = await eventually(
        lambda: search(client, "pydantic handlers validate"),
        lambda r: bool(r) and "hand-written checks" in r[0]["text"],
        what="the edited convention",
    )
    assert found[0]["kind"] == "convention"
    path.unlink()
    await eventually(
        lambda: search(client, "pydantic handlers validate"),
        lambda r: not [x for x in r if "pydantic" in x["text"]],
        what="the deleted convention archived",
    )


async def test_bad_arguments_are_invalid_params(client: LanguageClient) -> None:
    from pygls.exceptions import JsonRpcException

    with pytest.raises(JsonRpcException) as info:
        await run(client, "approve", {"ids": []})
    assert info.value.code == -32602 and "ids" in info.value.message
    with pytest.raises(JsonRpcException) as info:
        await run(client, "edit", {"id": 999999, "text": "x"})
    assert info.value.code == -32602 and "no memory #999999" in info.value.message
