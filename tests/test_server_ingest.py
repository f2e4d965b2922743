"""The language server learns a project it opens with an empty store: git history, decision
records and rule files, without being asked, then refreshes the open file's context."""

from __future__ import annotations

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.project_fixtures import make_adr_records, make_git_repo, make_rule_files
from tests.server_support import config, eventually, initialize, mark, next_context, open_doc, run

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("first-open")
    repo = make_git_repo(base)
    make_adr_records(repo.root)
    make_rule_files(repo.root)
    lsp_client.root = repo.root  # type: ignore[attr-defined]
    await initialize(
        lsp_client, [repo.root], {"dataDirectory": str(base / "data"), "debounceMs": 20}
    )
    yield
    await lsp_client.shutdown_session()


async def test_a_fresh_store_learns_the_project_on_open(client: LanguageClient):
    stats = await eventually(
        lambda: run(client, "stats"),
        lambda s: {"git", "adr", "rules"} <= set(s.get("bySource", {})),
        timeout=60,
        what="first ingestion",
    )
    assert stats["bySource"]["git"] == 7  # 8 commits, the merge left out
    assert stats["bySource"]["adr"] == 3


async def test_the_open_file_gets_the_learned_context(client: LanguageClient):
    root = client.root  # type: ignore[attr-defined]
    since = mark(client)
    u = open_doc(client, root / "src" / "api.py")
    update = await next_context(
        client,
        since,
        u,
        predicate=lambda p: any(i.get("kind") == "episode" for i in p["items"]),
        timeout=60,
    )
    assert update["tokens"]["total"] <= update["tokens"]["budget"]
    kinds = {i.get("kind") for i in update["items"]}
    # what is tied to the file: its commit, the rules; decisions about other files stay out
    assert {"episode", "convention"} <= kinds
    context = await run(client, "assembleContext", {"uri": u})
    assert "Add the API module" in context["markdown"]


async def test_the_glob_rule_for_the_api_ranks_higher_in_its_files(client: LanguageClient):
    root = client.root  # type: ignore[attr-defined]
    found = await eventually(  # the first open's learning may still be under way
        lambda: run(client, "search", {"query": "handler returns JSON", "limit": 1}),
        lambda f: bool(f["results"]),
        timeout=60,
        what="the rule files learned",
    )
    rule_id = found["results"][0]["id"]

    async def score(rel: str) -> float:
        ctx = await run(client, "assembleContext", {"uri": (root / rel).as_uri()})
        return next((i["score"] for i in ctx["items"] if i.get("memoryId") == rule_id), 0.0)

    # in its files it ranks high; elsewhere it is lower, or (not its glob) not there at all
    assert await score("src/api/users.py") > max(0.0, await score("docs/notes.py"))
