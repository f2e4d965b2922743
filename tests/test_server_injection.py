"""Context injection end to end: the files AI tools read appear, update, stay untouched when
nothing changed, and a user's own file at one of those paths is never overwritten."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

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
    switch_to,
    wait_for,
)

from server.injection import GENERATED_MARKER

pytestmark = pytest.mark.asyncio(loop_scope="module")

CURSOR = ".cursor/rules/living-memory.mdc"
COPILOT = ".github/instructions/living-memory.instructions.md"
AGENTS = ".living-memory/context.md"
USER_TEXT = "---\napplyTo: '**'\n---\nMy own Copilot instructions. Hands off.\n"


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("inject")
    repo = make_repo(base / "repo", files={"src/a.py": "A = 1\n", "src/b.py": "B = 2\n"})
    mine = make_repo(base / "mine", files={"app.py": "print(1)\n", COPILOT: USER_TEXT})
    hostile = make_hostile(base)
    lsp_client.repo, lsp_client.mine, lsp_client.hostile = repo, mine, hostile  # type: ignore[attr-defined]
    await initialize(
        lsp_client,
        [repo, mine, hostile],
        {"dataDirectory": str(base / "data"), "debounceMs": 20},
    )
    yield
    await lsp_client.shutdown_session()


OUTSIDE_EXCLUDE = "# someone else's file outside the workspace\nsecret-looking-line\n"
QUOTING = (
    "# My Cursor rules\n\nOur tool writes files that start with "
    f"`{GENERATED_MARKER} -->`; this file is mine.\n"
)


def make_hostile(base: Path) -> Path:
    """A workspace whose .cursor, .github and .living-memory and .git/info/exclude are symlinks
    to places outside it, and one whose Cursor rule file quotes the marker."""
    outside = base / "outside"
    for d in ("cursor", "github", "lm"):
        (outside / d).mkdir(parents=True)
    (outside / "exclude").write_text(OUTSIDE_EXCLUDE)
    hostile = make_repo(base / "hostile", files={"h.py": "H = 1\n"})
    (hostile / ".cursor").symlink_to(outside / "cursor", target_is_directory=True)
    (hostile / ".github").symlink_to(outside / "github", target_is_directory=True)
    (hostile / ".living-memory").symlink_to(outside / "lm", target_is_directory=True)
    (hostile / ".git" / "info" / "exclude").symlink_to(outside / "exclude")
    return hostile


def repo(client: LanguageClient) -> Path:
    return client.repo  # type: ignore[attr-defined]


async def written(folder: Path, rel: str, text: str) -> str:
    """The file once it holds ``text`` (the files are written right after the context is
    sent)."""

    def holding() -> str | None:
        with_text = (folder / rel).read_text() if (folder / rel).exists() else ""
        return with_text if text in with_text else None

    return await wait_for(holding, what=f"{rel} to hold {text!r}")


async def test_injection_files_appear_where_ai_tools_read(client: LanguageClient):
    opened = mark(client)
    u = open_doc(client, repo(client) / "src" / "a.py")
    ctx = await next_context(client, opened, u)
    assert sorted(ctx["injected"]) == sorted(
        str(repo(client) / p) for p in (CURSOR, COPILOT, AGENTS)
    )
    heading = "# Project memory for `src/a.py`"
    cursor = await written(repo(client), CURSOR, heading)
    assert cursor.startswith("---\n") and "\nalwaysApply: true\n---\n" in cursor
    copilot = await written(repo(client), COPILOT, heading)
    assert copilot.startswith('---\napplyTo: "**"\n---\n')
    for rel in (CURSOR, COPILOT, AGENTS):
        assert GENERATED_MARKER in await written(repo(client), rel, heading)


async def test_injection_files_follow_the_active_file(client: LanguageClient):
    since = mark(client)
    b = open_doc(client, repo(client) / "src" / "b.py")
    await next_context(client, since, b)
    for rel in (CURSOR, COPILOT, AGENTS):
        await written(repo(client), rel, "# Project memory for `src/b.py`")


async def test_an_unchanged_context_leaves_the_files_untouched(client: LanguageClient):
    opened = mark(client)
    u = open_doc(client, repo(client) / "src" / "a.py")
    await next_context(client, opened, u)
    for rel in (CURSOR, COPILOT, AGENTS):
        await written(repo(client), rel, "# Project memory for `src/a.py`")
    past = 1_000_000_000
    for rel in (CURSOR, COPILOT, AGENTS):
        os.utime(repo(client) / rel, (past, past))
    since = mark(client)
    client.text_document_did_save(  # same text: the same context is assembled again
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=u), text="A = 1\n"
        )
    )
    ctx = await next_context(client, since, u)
    assert len(ctx["injected"]) == 3
    deadline = time.monotonic() + 1.0  # a write, were one made, takes milliseconds
    while time.monotonic() < deadline:
        for rel in (CURSOR, COPILOT, AGENTS):
            assert (repo(client) / rel).stat().st_mtime == past
        await asyncio.sleep(0.05)


async def test_a_users_file_at_a_target_path_is_never_overwritten(client: LanguageClient):
    mine = client.mine  # type: ignore[attr-defined]
    opened = mark(client)
    u = open_doc(client, mine / "app.py")
    ctx = await next_context(client, opened, u)
    assert str(mine / COPILOT) in ctx["refused"]
    assert str(mine / COPILOT) not in ctx["injected"]
    await written(mine, CURSOR, "# Project memory for `app.py`")
    await written(mine, AGENTS, "# Project memory for `app.py`")
    assert (mine / COPILOT).read_text() == USER_TEXT
    await wait_for(lambda: any(COPILOT in m.message for m in client.messages), what="a warning")
    since = mark(client)
    switch_to(client, open_doc(client, mine / "other.py", text="x = 2\n"))
    await next_context(client, since)
    assert sum(COPILOT in m.message for m in client.messages) == 1  # said once
    assert (mine / COPILOT).read_text() == USER_TEXT


async def test_generated_files_stay_out_of_version_control(client: LanguageClient):
    await next_context(client, 0, None, lambda c: c["injected"])
    await wait_for(lambda: (repo(client) / ".living-memory" / ".gitignore").exists())
    ignore = (repo(client) / ".living-memory" / ".gitignore").read_text().splitlines()
    assert "*" in ignore and ignore[-2:] == ["!shared/", "!shared/**"]  # shared memory is not
    exclude = (repo(client) / ".git" / "info" / "exclude").read_text().splitlines()
    assert f"/{CURSOR}" in exclude and f"/{COPILOT}" in exclude


async def test_symlinked_target_folders_are_never_written_through(client: LanguageClient):
    hostile = client.hostile  # type: ignore[attr-defined]
    outside = hostile.parent / "outside"
    opened = mark(client)
    u = open_doc(client, hostile / "h.py")
    switch_to(client, u)
    ctx = await next_context(client, opened, u)
    assert ctx["injected"] == []
    assert sorted(ctx["refused"]) == sorted(str(hostile / p) for p in (CURSOR, COPILOT, AGENTS))
    assert [p for p in outside.rglob("*") if p.is_file()] == [outside / "exclude"]
    assert (outside / "exclude").read_text() == OUTSIDE_EXCLUDE
    assert (hostile / ".git" / "info" / "exclude").is_symlink()
