"""The language server end to end: editor events → contextUpdated (pytest-lsp, real process)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient
from server_support import (
    change_doc,
    config,
    error,
    eventually,
    initialize,
    make_repo,
    mark,
    next_context,
    open_doc,
    run,
    send_diagnostics,
    show_doc,
    switch_to,
    uri,
)

from predictive.file_facts import error_signature

pytestmark = pytest.mark.asyncio(loop_scope="module")

AUTH = "import os\n\n\ndef login(user):\n    return os.environ['SECRET_KEY_NAME']\n"


def ws(client: LanguageClient) -> Any:
    return client.ws  # type: ignore[attr-defined]


class Workspace:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.alpha = make_repo(
            base / "alpha",
            files={
                "src/auth.py": AUTH,
                "src/billing.py": "x = 1\n",
                **{f"src/tab{i}.py": f"def tab{i}():\n    return {i}\n" for i in range(60)},
            },
        )
        self.beta = base / "beta"
        (self.beta / "lib").mkdir(parents=True)
        (self.beta / "lib" / "util.py").write_text("def helper():\n    return 1\n")
        (base / "elsewhere").mkdir()
        (base / "elsewhere" / "loose.py").write_text("y = 2\n")


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    w = Workspace(tmp_path_factory.mktemp("events"))
    lsp_client.ws = w  # type: ignore[attr-defined]
    lsp_client.init_result = await initialize(  # type: ignore[attr-defined]
        lsp_client,
        [w.alpha, w.beta],
        {
            "dataDirectory": str(w.base / "data"),
            "debounceMs": 30,
            "changeDebounceMs": 60,
            "gitPollSeconds": 0.2,
        },
    )
    yield
    await lsp_client.shutdown_session()


async def test_initialize_advertises_text_sync_and_every_command(client: LanguageClient):
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    sync = caps.text_document_sync
    assert sync.open_close is True
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert sync.save.include_text is True
    commands = set(caps.execute_command_provider.commands)
    for name in (
        "assembleContext remember search recall explore cite ignore forget restore "
        "contradictions resolveContradiction ingest consolidate stats enableClaudeImport"
    ).split():
        assert f"livingMemory.{name}" in commands


async def test_did_open_sends_context_updated(client: LanguageClient):
    await run(
        client,
        "remember",
        {
            "text": "Login reads SECRET_KEY_NAME from the environment; never hard-code it.",
            "kind": "decision",
            "anchors": ["file:src/auth.py"],
        },
    )
    since = mark(client)
    u = open_doc(client, ws(client).alpha / "src" / "auth.py")
    ctx = await next_context(client, since, u)
    assert ctx["folder"] == uri(ws(client).alpha)
    assert ctx["path"] == "src/auth.py"
    assert ctx["branch"] == "main"
    assert set(ctx["tokens"]["tiers"]) == {"critical", "relevant", "background", "index"}
    assert 0 < ctx["tokens"]["total"] <= ctx["tokens"]["budget"] == 8000
    assert any(i["tier"] == "critical" and i["kind"] == "decision" for i in ctx["items"])
    assert {Path(p).name for p in ctx["injected"]} == {
        "living-memory.mdc",
        "living-memory.instructions.md",
        "context.md",
    }


async def test_what_was_served_is_logged_once_the_editor_is_quiet(client: LanguageClient):
    made = await run(
        client,
        "remember",
        {
            "text": "Totals in the forty-first tab are kept in cents.",
            "kind": "decision",
            "anchors": ["file:src/tab41.py"],
        },
    )
    mid = made["id"]

    async def retrieved() -> int:
        return int((await run(client, "recall", {"id": mid}))["usage"]["retrieved"])

    before = await retrieved()
    since = mark(client)
    u = open_doc(client, ws(client).alpha / "src" / "tab41.py")
    ctx = await next_context(client, since, u)
    assert any(i["memoryId"] == mid for i in ctx["items"])
    # logged after the client has its context, when no other file was asked for meanwhile
    await eventually(retrieved, lambda n: n == before + 1, what="the retrieval logged")


async def test_did_change_uses_the_edited_text(client: LanguageClient):
    await run(
        client,
        "remember",
        {"text": "Payments go through the ledger module only.", "anchors": ["module:ledger"]},
    )
    path = ws(client).alpha / "src" / "billing.py"
    opened = mark(client)
    u = open_doc(client, path)
    ctx = await next_context(client, opened, u)
    assert not any(i["kind"] == "fact" and i["tier"] != "index" for i in ctx["items"])
    since = mark(client)
    change_doc(client, u, "import ledger\n\nx = ledger.total()\n", 2)
    ctx = await next_context(client, since, u)
    assert any(i["tier"] in ("critical", "relevant") and i["kind"] == "fact" for i in ctx["items"])


async def test_did_save_refreshes_the_context(client: LanguageClient):
    path = ws(client).alpha / "src" / "tab1.py"
    opened = mark(client)
    u = open_doc(client, path)
    await next_context(client, opened, u)
    since = mark(client)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=u), text="import ledger\n"
        )
    )
    ctx = await next_context(client, since, u)
    assert any(i["kind"] == "fact" and i["tier"] != "index" for i in ctx["items"])


async def test_did_close_drops_the_editor_copy(client: LanguageClient):
    path = ws(client).alpha / "src" / "tab2.py"
    opened = mark(client)
    u = open_doc(client, path, text="import ledger\n")
    ctx = await next_context(client, opened, u)
    assert any(i["kind"] == "fact" and i["tier"] != "index" for i in ctx["items"])
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=u))
    )
    show_doc(client, ws(client).alpha / "src" / "tab3.py")
    since = mark(client)
    switch_to(client, u)  # back to the closed file: its text now comes from disk
    ctx = await next_context(client, since, u)
    assert not any(i["kind"] == "fact" and i["tier"] != "index" for i in ctx["items"])


async def test_active_editor_changed_switches_the_context(client: LanguageClient):
    a = show_doc(client, ws(client).alpha / "src" / "tab4.py")
    opened = mark(client)
    b = show_doc(client, ws(client).alpha / "src" / "tab5.py")
    await next_context(client, opened, b)
    since = mark(client)
    switch_to(client, a)
    ctx = await next_context(client, since)
    assert ctx["uri"] == a and ctx["path"] == "src/tab4.py"


async def test_branch_changed_notification_switches_branch(client: LanguageClient):
    opened = mark(client)
    u = show_doc(client, ws(client).alpha / "src" / "tab6.py")
    await next_context(client, opened, u)
    since = mark(client)
    client.protocol.notify(
        "livingMemory/branchChanged",
        {"folder": uri(ws(client).alpha), "branch": "feature/ledger", "previous": "main"},
    )
    ctx = await next_context(client, since, u)
    assert ctx["branch"] == "feature/ledger"
    assert ctx["activity"] == "feature"


async def test_git_head_is_polled_when_no_notification_comes(client: LanguageClient):
    beta = ws(client).beta  # alpha's branch comes from the client now (see above)
    opened = mark(client)
    u = show_doc(client, beta / "lib" / "util.py", text="def helper():\n    return 2\n")
    await next_context(client, opened, u)
    since = mark(client)
    make_repo(beta, branch="fix/login-crash")
    ctx = await next_context(client, since, u, lambda c: c["branch"] == "fix/login-crash")
    assert ctx["activity"] == "debugging"


async def test_diagnostics_changed_brings_errors_into_the_context(client: LanguageClient):
    path = ws(client).alpha / "src" / "tab8.py"
    opened = mark(client)
    u = show_doc(client, path)
    await next_context(client, opened, u)
    signature = error_signature("KeyError: 'SECRET_KEY_NAME'", None, "pyright")
    await run(
        client,
        "remember",
        {
            "text": "KeyError SECRET_KEY_NAME: export it in .envrc before running tests",
            "kind": "solution",
            "anchors": [f"error:{signature}"],
        },
    )
    since = mark(client)
    send_diagnostics(client, u, [error("KeyError: 'SECRET_KEY_NAME'")])
    ctx = await next_context(client, since, u)
    assert ctx["activity"] == "debugging"
    assert any(i["kind"] == "solution" and i["tier"] == "critical" for i in ctx["items"])


async def test_non_file_uris_are_ignored(client: LanguageClient):
    since = mark(client)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri="untitled:Untitled-1", language_id="python", version=1, text="import ledger"
            )
        )
    )
    switch_to(client, "vscode-notebook-cell:/x.ipynb#1")
    await asyncio.sleep(0.3)
    assert client.updates[since:] == []  # type: ignore[attr-defined]
    assert (await run(client, "stats"))["memories"] >= 1


async def test_files_outside_the_workspace_folders_are_ignored(client: LanguageClient):
    since = mark(client)
    show_doc(client, ws(client).base / "elsewhere" / "loose.py")
    await asyncio.sleep(0.3)
    assert client.updates[since:] == []  # type: ignore[attr-defined]


async def test_injected_files_are_never_input(client: LanguageClient):
    opened = mark(client)
    u = show_doc(client, ws(client).alpha / "src" / "tab9.py")
    await next_context(client, opened, u)
    since = mark(client)
    for rel in (".living-memory/context.md", ".cursor/rules/living-memory.mdc"):
        path = ws(client).alpha / rel
        open_doc(client, path)
        switch_to(client, uri(path))
        send_diagnostics(client, uri(path), [error("bad markdown")])
    await asyncio.sleep(0.3)
    assert client.updates[since:] == []  # type: ignore[attr-defined]


async def test_each_folder_has_its_own_store(client: LanguageClient):
    opened = mark(client)
    u = show_doc(client, ws(client).beta / "lib" / "util.py")
    ctx = await next_context(client, opened, u)
    assert ctx["folder"] == uri(ws(client).beta)
    assert ctx["path"] == "lib/util.py"
    alpha = await run(client, "stats", {"folder": uri(ws(client).alpha)})
    beta = await run(client, "stats", {"folder": uri(ws(client).beta)})
    assert alpha["dbPath"] != beta["dbPath"]
    assert beta["memories"] == 0 < alpha["memories"]


async def test_an_edit_elsewhere_does_not_steal_the_active_file(client: LanguageClient):
    x = open_doc(client, ws(client).alpha / "src" / "tab60.py", text="X = 1\n")
    y = open_doc(client, ws(client).alpha / "src" / "tab61.py", text="Y = 1\n")
    since = mark(client)
    switch_to(client, x)  # this client reports the active editor itself
    await next_context(client, since, x)
    since = mark(client)
    change_doc(client, y, "import ledger\n", 2)  # say, a rename touching another file
    await asyncio.sleep(0.4)
    assert all(u["uri"] != y for u in client.updates[since:])  # type: ignore[attr-defined]


async def test_a_workspace_folder_can_be_added(client: LanguageClient):
    gamma = make_repo(ws(client).base / "gamma", files={"g.py": "G = 1\n"})
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=uri(gamma), name="gamma")], removed=[]
            )
        )
    )
    since = mark(client)
    u = show_doc(client, gamma / "g.py")
    ctx = await next_context(client, since, u)
    assert ctx["folder"] == uri(gamma) and ctx["path"] == "g.py"


async def test_a_removed_workspace_folder_is_ignored(client: LanguageClient):
    delta = make_repo(ws(client).base / "delta", files={"d.py": "D = 1\n", "e.py": "E = 1\n"})
    folder = types.WorkspaceFolder(uri=uri(delta), name="delta")

    def change(added: list, removed: list) -> None:
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(added=added, removed=removed)
            )
        )

    change([folder], [])
    since = mark(client)
    await next_context(client, since, show_doc(client, delta / "d.py"))
    change([], [folder])
    await asyncio.sleep(0.2)
    since = mark(client)
    show_doc(client, delta / "e.py")
    await asyncio.sleep(0.4)
    assert client.updates[since:] == []  # type: ignore[attr-defined]
    message = await expect_error(run(client, "stats", {"folder": uri(delta)}))
    assert "folder" in message


async def expect_error(coro: Any) -> str:
    from pygls.exceptions import JsonRpcException

    with pytest.raises(JsonRpcException) as info:
        await coro
    return info.value.message


async def test_rapid_tab_switching_ends_with_the_last_file_and_no_backlog(
    client: LanguageClient,
):
    uris = [open_doc(client, ws(client).alpha / "src" / f"tab{i}.py") for i in range(10, 60)]
    await next_context(client, 0, show_doc(client, ws(client).alpha / "src" / "tab9.py"))
    since = mark(client)
    for u in uris:  # 50 switches within about a second
        switch_to(client, u)
        await asyncio.sleep(0.01)
    last = await next_context(client, since, uris[-1])
    await asyncio.sleep(0.5)  # nothing stale arrives after the last file's context
    after = client.updates[since:]  # type: ignore[attr-defined]
    assert after[-1]["uri"] == uris[-1] == last["uri"]
    assert len(after) < 25  # debounced: most switches never cost an assembly


def send_raw(client: LanguageClient, body: bytes | dict[str, Any]) -> None:
    """Put a message on the wire as is, bypassing the client's own type checks."""
    if isinstance(body, dict):
        body = json.dumps({"jsonrpc": "2.0", **body}).encode()
    client._server.stdin.write(  # type: ignore[union-attr]
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )


async def test_malformed_notifications_do_not_take_the_server_down(client: LanguageClient):
    auth = uri(ws(client).alpha / "src/auth.py")
    for method, params in [
        ("textDocument/didOpen", {"textDocument": {"uri": 42}}),
        ("textDocument/didChange", {"nonsense": True}),
        ("textDocument/didSave", None),
        ("livingMemory/activeEditorChanged", {"uri": ["not", "a", "string"]}),
        ("livingMemory/activeEditorChanged", "just a string"),
        ("livingMemory/branchChanged", {"folder": 3, "branch": {}}),
        ("livingMemory/diagnosticsChanged", {"uri": auth}),
        ("livingMemory/diagnosticsChanged", {"uri": auth, "diagnostics": [{"severity": "x"}, 7]}),
        ("livingMemory/noSuchNotification", {"x": 1}),
    ]:
        send_raw(client, {"method": method, "params": params})
    send_raw(client, b"{this is not json")
    await asyncio.sleep(0.3)
    stats = await run(client, "stats")
    assert stats["memories"] >= 1
    opened = mark(client)
    u = show_doc(client, ws(client).alpha / "src" / "tab0.py")
    await next_context(client, opened, u)
