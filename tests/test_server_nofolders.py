"""A client that opens no workspace folder (a single file, an editor without folders): the
file's git repository becomes its project; files outside any repository are ignored."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities
from server_support import config, make_repo, mark, next_context, open_doc, uri

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("nofolders")
    lsp_client.repo = make_repo(base / "repo", files={"pkg/mod.py": "M = 1\n"})  # type: ignore[attr-defined]
    (base / "loose").mkdir()
    (base / "loose" / "x.py").write_text("X = 1\n")
    lsp_client.base = base  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            initialization_options={"dataDirectory": str(base / "data"), "debounceMs": 20},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_a_file_in_a_repository_gets_the_repository_as_its_project(
    client: LanguageClient,
):
    repo = client.repo  # type: ignore[attr-defined]
    since = mark(client)
    u = open_doc(client, repo / "pkg" / "mod.py")
    ctx = await next_context(client, since, u)
    assert ctx["folder"] == uri(repo) and ctx["path"] == "pkg/mod.py"


async def test_a_file_outside_any_repository_is_ignored(client: LanguageClient):
    since = mark(client)
    open_doc(client, client.base / "loose" / "x.py")  # type: ignore[attr-defined]
    await asyncio.sleep(0.4)
    assert client.updates[since:] == []  # type: ignore[attr-defined]
