"""Documents: ``textDocument/didOpen|didChange|didSave|didClose`` and the extension's
``livingMemory/activeEditorChanged {uri}`` (switching tabs sends no didOpen).

Each becomes an editor signal; when it changes what the active file's context depends on,
the context is refreshed (debounced; edits wait longer than opens and switches).

The file on screen: a client that reports its active editor (it sent
``activeEditorChanged``, or said so in ``initializationOptions.activeEditor``) decides which
file is active; a ``didOpen`` then only tells the server a document's text (other extensions
open documents in the background, a restarted server gets every open document re-sent).
For a plain LSP client the last opened or edited file is the active one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from server.convert import ConversionError, structure

if TYPE_CHECKING:
    from server.features.host import Server

log = logging.getLogger("living_memory.documents")

ACTIVE_EDITOR_CHANGED = "livingMemory/activeEditorChanged"


@dataclass(frozen=True)
class ActiveEditorParams:
    uri: str


@dataclass(frozen=True)
class ClientActiveEditor:
    """``initializationOptions.activeEditor``: the client reports the active editor itself;
    ``uri`` is the one on screen at launch (None: none, or not a file)."""

    uri: str | None = None


def client_active_editor(options: Any) -> ClientActiveEditor | None:
    """What ``initializationOptions`` say about the active editor (None: nothing, so the
    client may never report it)."""
    raw = options.get("activeEditor", None) if isinstance(options, dict) else None
    if raw is None:
        return None
    if raw is True:
        return ClientActiveEditor()
    try:
        return structure(raw, ClientActiveEditor)
    except ConversionError as e:
        log.warning("initializationOptions.activeEditor: ignored: %s", e)
        return None


def setup(server: Server) -> None:  # noqa: C901
    from predictive.operations import (  # light: only the signals are imported
        DocumentOpened,
        DocumentSaved,
        FileOpened,
    )

    launch: dict[str, str | None] = {"uri": None}

    def refresh(project: Any, request: Any, delay_ms: int | None = None) -> None:
        if request is not None and server.context is not None:
            server.context.request(project, delay_ms, leading=delay_ms is None)

    @server.on(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        assert server.registry is not None
        doc = params.text_document
        found = server.registry.locate(doc.uri)
        if found is None:
            return
        project, _, rel = found
        if server.active_from_client:
            # the client decides what is on screen: a background or re-sent open only
            # tells us the text (and refreshes when it is the active file's)
            signal: Any = DocumentOpened(rel, doc.text, doc.language_id)
        else:
            signal = FileOpened(rel, doc.text, doc.language_id)
        refresh(project, project.state.apply(signal))

    @server.on(types.INITIALIZE, wait=False)
    def initialize(params: types.InitializeParams) -> None:
        reported = client_active_editor(params.initialization_options)
        if reported is not None:
            server.active_from_client = True
            launch["uri"] = reported.uri

    @server.on(types.INITIALIZED)
    def initialized(params: Any) -> None:
        """The editor on screen at launch is the active file before any didOpen arrives."""
        uri = launch.pop("uri", None)
        if uri is None or server.registry is None:
            return
        found = server.registry.locate(uri)
        if found is None:
            return
        project, _, rel = found
        from server.projects import open_text

        refresh(project, project.state.apply(FileOpened(rel, open_text(server, uri))))

    @server.on(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        assert server.registry is not None
        uri = params.text_document.uri
        found = server.registry.locate(uri)
        if found is None:
            return
        project, _, rel = found
        from server.projects import open_text

        text = open_text(server, uri)
        if server.active_from_client:
            # the client says which editor is active: an edit elsewhere (a rename across
            # files, a formatter) updates that file's text without making it active
            request = project.state.apply(DocumentSaved(rel, text))
        else:  # a plain LSP client: the file being typed in is the active one
            request = project.state.apply(FileOpened(rel, text))
        refresh(project, request, project.settings.change_debounce_ms)

    @server.on(types.TEXT_DOCUMENT_DID_SAVE, options=types.SaveOptions(include_text=True))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        assert server.registry is not None
        uri = params.text_document.uri
        found = server.registry.locate(uri)
        if found is None:
            return
        project, _, rel = found
        from server.projects import open_text

        text = open_text(server, uri)
        if params.text is not None and params.text != text:
            # what was saved is the document's text: a client that sends no edits (or sends
            # them late) gives it only here, and the workspace is where the text is kept
            doc = server.workspace.text_documents.get(unquote(uri))
            if doc is not None:
                server.workspace.update_text_document(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version or 0),
                    types.TextDocumentContentChangeWholeDocument(text=params.text),
                )
            text = params.text
        refresh(project, project.state.apply(DocumentSaved(rel, text)))

    @server.on(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        assert server.registry is not None
        found = server.registry.locate(params.text_document.uri)
        if found is None:
            return
        project, _, rel = found
        project.state.forget(rel)

    @server.on(ACTIVE_EDITOR_CHANGED)
    def active_editor_changed(params: Any) -> None:
        assert server.registry is not None
        try:
            p = structure(params, ActiveEditorParams)
        except ConversionError as e:
            log.warning("%s: ignored malformed parameters: %s", ACTIVE_EDITOR_CHANGED, e)
            return
        server.active_from_client = True
        found = server.registry.locate(p.uri)
        if found is None:
            return
        project, _, rel = found
        from server.projects import open_text

        request = project.state.apply(FileOpened(rel, open_text(server, p.uri)))
        refresh(project, request)
