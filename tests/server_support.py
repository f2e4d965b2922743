"""Helpers for the language server's end-to-end tests (tests/test_server_*.py): a pytest-lsp
client that keeps custom notifications as plain JSON, workspaces, waiting and commands."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from server.app import converter

SERVER = [sys.executable, "-m", "server", "serve"]
CONTEXT_UPDATED = "livingMemory/contextUpdated"


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=converter)
    register_lsp_features(client)
    client.updates = []  # type: ignore[attr-defined]

    @client.feature(CONTEXT_UPDATED)
    def context_updated(params: Any) -> None:
        client.updates.append(params)  # type: ignore[attr-defined]

    return client


def config(*, real_model: bool = False, **env: str) -> ClientServerConfig:
    server_env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY_")}
    if not real_model:
        server_env["LIVING_MEMORY_EMBEDDER"] = "hashing"
    server_env.update(env)
    return ClientServerConfig(
        server_command=SERVER, client_factory=make_client, server_env=server_env
    )


def make_repo(root: Path, branch: str = "main", files: dict[str, str] | None = None) -> Path:
    """A folder that looks like a git repository (``.git/HEAD``) with some files."""
    (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    for rel, text in (files or {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def uri(path: Path) -> str:
    u = from_fs_path(str(path))
    assert u is not None
    return u


async def initialize(
    client: LanguageClient,
    folders: list[Path],
    options: dict[str, Any] | None = None,
    *,
    capabilities: types.ClientCapabilities | None = None,
) -> types.InitializeResult:
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities or client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=uri(f), name=f.name) for f in folders],
            root_uri=uri(folders[0]) if folders else None,
            initialization_options=options,
        )
    )


async def wait_for(
    predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition"
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def eventually(
    get: Callable[[], Awaitable[Any]],
    ok: Callable[[Any], Any],
    timeout: float = 15.0,
    what: str = "condition",
) -> Any:
    """Await ``get()`` until ``ok(value)``; return that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = await get()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} (last: {value!r})")
        await asyncio.sleep(0.05)


async def next_context(
    client: LanguageClient,
    since: int,
    file_uri: str | None = None,
    predicate: Callable[[dict[str, Any]], bool] | None = None,
    timeout: float = 15.0,
) -> dict[str, Any]:
    """The first contextUpdated after index ``since`` (for ``file_uri``, matching)."""

    def find() -> dict[str, Any] | None:
        for u in client.updates[since:]:  # type: ignore[attr-defined]
            if file_uri is not None and u["uri"] != file_uri:
                continue
            if predicate is None or predicate(u):
                return u
        return None

    return await wait_for(find, timeout, f"contextUpdated for {file_uri}")


def mark(client: LanguageClient) -> int:
    return len(client.updates)  # type: ignore[attr-defined]


async def run(client: LanguageClient, command: str, args: Any = None, **kw: Any) -> Any:
    arguments = [] if args is None else [args]
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=f"livingMemory.{command}", arguments=arguments, **kw)
    )


def open_doc(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    u = uri(path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=u,
                language_id="python" if path.suffix == ".py" else "plaintext",
                version=version,
                text=path.read_text() if text is None else text,
            )
        )
    )
    return u


def change_doc(client: LanguageClient, u: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=u, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def switch_to(client: LanguageClient, u: str) -> None:
    client.protocol.notify("livingMemory/activeEditorChanged", {"uri": u})


def show_doc(client: LanguageClient, path: Path, text: str | None = None) -> str:
    """Open a file in an editor tab, as VS Code does: didOpen, then the active editor."""
    u = open_doc(client, path, text)
    switch_to(client, u)
    return u


def error(message: str, line: int = 0, code: str | None = None, source: str = "pyright") -> dict:
    return {
        "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 5}},
        "severity": 1,
        "message": message,
        "code": code,
        "source": source,
    }


def send_diagnostics(client: LanguageClient, u: str, diagnostics: list[Any]) -> None:
    client.protocol.notify(
        "livingMemory/diagnosticsChanged", {"uri": u, "diagnostics": diagnostics}
    )
