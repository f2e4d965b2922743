"""The MCP server and the language server on one project at once: both write the same store
(WAL, busy timeout) and nothing is lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_lsp
from mcp_support import call, db_of, mcp_session
from project_fixtures import make_git_repo
from pytest_lsp import LanguageClient
from server_support import config, initialize, run, uri

from storage import MemoryStore

pytestmark = pytest.mark.asyncio

N = 25


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, tmp_path: Path):
    repo = make_git_repo(tmp_path).root
    lsp_client.repo, lsp_client.data = repo, tmp_path / "data"  # type: ignore[attr-defined]
    await initialize(lsp_client, [repo], {"dataDirectory": str(tmp_path / "data")})
    yield
    await lsp_client.shutdown_session()


async def test_both_servers_write_the_same_store_at_once_without_loss(
    client: LanguageClient,
) -> None:
    repo: Path = client.repo  # type: ignore[attr-defined]
    data: Path = client.data  # type: ignore[attr-defined]
    folder = uri(repo)

    async def from_editor() -> list[int]:
        return [
            (await run(client, "remember", {"text": f"editor finding {i}", "folder": folder}))["id"]
            for i in range(N)
        ]

    async with mcp_session(repo, data, ingest=True) as s:

        async def from_agent() -> list[int]:
            return [(await call(s, "remember", text=f"agent finding {i}"))["id"] for i in range(N)]

        editor_ids, agent_ids = await asyncio.gather(from_editor(), from_agent())
        seen_by_agent = await call(s, "search", query="editor finding 7", limit=50)

    stats = await run(client, "stats", {"folder": folder})
    assert Path(stats["dbPath"]) == db_of(repo, data)
    with MemoryStore(db_of(repo, data)) as store:
        texts = {m.text for m in store.get_many(editor_ids + agent_ids)}
    assert len(set(editor_ids) | set(agent_ids)) == 2 * N
    assert texts == {f"editor finding {i}" for i in range(N)} | {
        f"agent finding {i}" for i in range(N)
    }
    assert set(editor_ids) & {i["id"] for i in seen_by_agent["items"]}
