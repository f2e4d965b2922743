"""The file on screen (real server process): a client that reports its active editor decides
which file the context is for; documents opened in the background (VS Code's npm extension
opening package.json) and opens re-sent after a restart never take the context over; the
first ingestion refreshes the context of the file on screen without another event."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.project_fixtures import make_adr_records, make_git_repo
from tests.server_support import (
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

pytestmark = pytest.mark.asyncio(loop_scope="function")

FILES = {
    "storage/db.py": "import apsw\n\n\ndef connect(path):\n    return apsw.Connection(path)\n",
    "predictive/render.py": "def render(items):\n    return '\\n'.join(items)\n",
    "server/app.py": "from storage import db\n",
    "vscode-extension/package.json": '{"name": "demo", "scripts": {"test": "node x"}}\n',
}
QUIET_S = 0.6  # several debounce windows: anything still coming would have come


def workspace(base: Path) -> Path:
    return make_repo(base / "proj", files=FILES)


def updates(client: LanguageClient, since: int) -> list[dict[str, Any]]:
    return client.updates[since:]  # type: ignore[attr-defined]


async def remember_about_db(client: LanguageClient) -> None:
    await run(
        client,
        "remember",
        {
            "text": "Connections are opened through storage.db.connect only.",
            "kind": "decision",
            "anchors": ["file:storage/db.py"],
        },
    )


@pytest_lsp.fixture(config=config())
async def reporting(lsp_client: LanguageClient, tmp_path: Path):
    """A client like the extension of an earlier version: it reports the active editor by
    notification only (nothing in initializationOptions)."""
    root = workspace(tmp_path)
    lsp_client.root = root  # type: ignore[attr-defined]
    await initialize(
        lsp_client,
        [root],
        {"dataDirectory": str(tmp_path / "data"), "debounceMs": 30, "ingestOnFirstOpen": False},
    )
    yield
    await lsp_client.shutdown_session()


async def test_a_background_open_leaves_the_context_on_the_active_file(
    reporting: LanguageClient,
):
    client = reporting
    root: Path = client.root  # type: ignore[attr-defined]
    await remember_about_db(client)
    db = open_doc(client, root / "storage" / "db.py")
    since = mark(client)
    switch_to(client, db)
    ctx = await next_context(client, since, db)
    assert ctx["path"] == "storage/db.py"
    await asyncio.sleep(QUIET_S)  # the open and the switch may both be assembled

    since = mark(client)
    pkg = open_doc(client, root / "vscode-extension" / "package.json")  # the npm extension
    await asyncio.sleep(QUIET_S)
    assert [u["path"] for u in updates(client, since)] == []
    context = await run(client, "assembleContext")  # "the active file", as the server sees it
    assert context["file"] == "storage/db.py"
    injected = root / ".living-memory" / "context.md"
    await wait_for(
        lambda: injected.exists() and "# Project memory for `storage/db.py`" in injected.read_text()
    )

    since = mark(client)
    switch_to(client, pkg)  # now the user looks at it: it is the file on screen
    assert (await next_context(client, since, pkg))["path"] == "vscode-extension/package.json"


async def test_a_plain_lsp_client_still_follows_its_opens(reporting: LanguageClient):
    """Until a client reports an active editor, the opened file is the active one."""
    client = reporting
    root: Path = client.root  # type: ignore[attr-defined]
    since = mark(client)
    first = open_doc(client, root / "storage" / "db.py")
    await next_context(client, since, first)
    since = mark(client)
    second = open_doc(client, root / "predictive" / "render.py")
    assert (await next_context(client, since, second))["path"] == "predictive/render.py"


@pytest_lsp.fixture(config=config())
async def restarted(lsp_client: LanguageClient, tmp_path: Path):
    """A server started as the extension starts one after Restart Server: the editor on
    screen is named in initializationOptions, then every open document is re-sent."""
    root = workspace(tmp_path)
    lsp_client.root = root  # type: ignore[attr-defined]
    await initialize(
        lsp_client,
        [root],
        {
            "dataDirectory": str(tmp_path / "data"),
            "debounceMs": 30,
            "ingestOnFirstOpen": False,
            "activeEditor": {"uri": uri(root / "storage" / "db.py")},
        },
    )
    yield
    await lsp_client.shutdown_session()


async def test_re_sent_opens_after_a_restart_leave_the_context_on_the_active_file(
    restarted: LanguageClient,
):
    client = restarted
    root: Path = client.root  # type: ignore[attr-defined]
    db = uri(root / "storage" / "db.py")
    # the client re-sends its open documents; the one on screen is not the last
    since = mark(client)
    for rel in ("server/app.py", "storage/db.py", "vscode-extension/package.json"):
        open_doc(client, root / rel)
    open_doc(client, root / "predictive" / "render.py")
    ctx = await next_context(client, since, db)
    await asyncio.sleep(QUIET_S)
    seen = {u["path"] for u in updates(client, since)}
    assert seen == {"storage/db.py"}, seen
    assert ctx["uri"] == db
    # the extension re-sends the active editor once it is running: nothing moves
    since = mark(client)
    switch_to(client, db)
    await asyncio.sleep(QUIET_S)
    assert {u["path"] for u in updates(client, since)} <= {"storage/db.py"}
    context = await run(client, "assembleContext")
    assert context["file"] == "storage/db.py"


@pytest_lsp.fixture(config=config())
async def fresh(lsp_client: LanguageClient, tmp_path: Path):
    """A project the store has never seen, with its file on screen from the start."""
    repo = make_git_repo(tmp_path)
    make_adr_records(repo.root)
    lsp_client.root = repo.root  # type: ignore[attr-defined]
    lsp_client.since = mark(lsp_client)  # type: ignore[attr-defined]
    await initialize(
        lsp_client,
        [repo.root],
        {
            "dataDirectory": str(tmp_path / "data"),
            "debounceMs": 20,
            "activeEditor": {"uri": uri(repo.root / "src" / "api.py")},
        },
    )
    open_doc(lsp_client, repo.root / "src" / "api.py")
    yield
    await lsp_client.shutdown_session()


async def test_the_first_ingestion_refreshes_the_context_on_screen(fresh: LanguageClient):
    client = fresh
    root: Path = client.root  # type: ignore[attr-defined]
    api = uri(root / "src" / "api.py")
    first = await next_context(client, 0, api, timeout=60)
    assert not any(i.get("kind") == "episode" for i in first["items"])  # nothing learned yet
    # no further editor event: the context that follows the learning comes by itself
    learned = await next_context(
        client,
        0,
        api,
        predicate=lambda p: any(i.get("kind") == "episode" for i in p["items"]),
        timeout=90,
    )
    assert learned["tokens"]["total"] > first["tokens"]["total"]
    assert all(u["path"] == "src/api.py" for u in updates(client, 0))
    stats = await run(client, "stats")
    assert stats["bySource"].get("git", 0) > 0


async def test_one_context_everywhere(reporting: LanguageClient):
    """The status bar (contextUpdated), Copy Context and the view (assembleContext) and the
    injected files show the same context: one contextId, the same tokens, the same text."""
    client = reporting
    root: Path = client.root  # type: ignore[attr-defined]
    await remember_about_db(client)
    db = open_doc(client, root / "storage" / "db.py")
    since = mark(client)
    switch_to(client, db)
    announced = await next_context(client, since, db)
    assert isinstance(announced["contextId"], int) and announced["contextId"] > 0
    await asyncio.sleep(QUIET_S)  # the last announcement is the one to compare with
    announced = updates(client, since)[-1]

    copied = await run(client, "assembleContext", {"uri": db})
    shown = await run(client, "assembleContext", {"contextId": announced["contextId"]})
    for ctx in (copied, shown):
        assert ctx["contextId"] == announced["contextId"]
        assert ctx["tokens"] == announced["tokens"]
        assert [i["key"] for i in ctx["items"]] == [i["key"] for i in announced["items"]]
    injected = root / ".living-memory" / "context.md"
    await wait_for(lambda: injected.exists() and copied["markdown"].strip() in injected.read_text())

    # a what-if (another budget) is assembled on demand and says so
    other = await run(client, "assembleContext", {"uri": db, "budget": 500})
    assert other["contextId"] is None and other["tokens"]["budget"] == 500
    # the next context gets the next id
    since = mark(client)
    pkg = open_doc(client, root / "vscode-extension" / "package.json")
    switch_to(client, pkg)
    after = await next_context(client, since, pkg)
    assert after["contextId"] > announced["contextId"]
