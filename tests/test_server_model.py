"""The language server with the real embedding model (all-MiniLM-L6-v2): it loads in the
background after initialize, and semantic search finds a paraphrase with no shared words."""

from __future__ import annotations

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient
from server_support import (
    config,
    initialize,
    make_repo,
    mark,
    next_context,
    open_doc,
    run,
    wait_for,
)

from storage import MemoryStore, NewMemory
from storage.paths import project_key

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=config(real_model=True))
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("model")
    repo = make_repo(base / "repo", files={"src/store.py": "import sqlite3\n"})
    lsp_client.repo = repo  # type: ignore[attr-defined]
    # memories stored without vectors (say, by an older version): embedded after start-up
    db = base / "data" / "projects" / project_key(repo) / "memory.db"
    db.parent.mkdir(parents=True)
    with MemoryStore(db) as store:
        store.add_many([NewMemory(text=f"Old note number {i} about caching") for i in range(30)])
    await initialize(lsp_client, [repo], {"dataDirectory": str(base / "data"), "debounceMs": 20})
    yield
    await lsp_client.shutdown_session()


async def test_semantic_search_with_the_real_model(client: LanguageClient):
    texts = [
        "SQLite waits up to five seconds for a writer (busy_timeout) before giving up.",
        "The marketing site is built with Astro and deployed to Netlify.",
        "Team lunches are on Thursdays.",
    ]
    ids = [(await run(client, "remember", {"text": t}))["id"] for t in texts]
    found = await run(
        client,
        "search",
        {"query": "what happens when the database is locked", "mode": "vector", "limit": 3},
    )
    assert found["results"][0]["id"] == ids[0]
    stats = await run(client, "stats")
    assert "MiniLM" in stats["modelId"]


async def test_memories_without_vectors_are_embedded_in_the_background(client: LanguageClient):
    def embedding_job() -> list:
        for reports in client.progress_reports.values():
            if reports and "embedding 30 memories" in (getattr(reports[0], "title", "") or ""):
                return reports
        return []

    reports = await wait_for(lambda: (r := embedding_job()) and r[-1].kind == "end" and r)
    assert reports[0].kind == "begin" and reports[-1].message == "embedded 30"
    assert (await run(client, "stats"))["pendingEmbeddings"] == 0


async def test_context_is_assembled_with_the_real_model(client: LanguageClient):
    since = mark(client)
    u = open_doc(client, client.repo / "src" / "store.py")  # type: ignore[attr-defined]
    ctx = await next_context(client, since, u)
    assert 0 < ctx["tokens"]["total"] <= 8000
