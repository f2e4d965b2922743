"""Documents: ``textDocument/didOpen|didChange|didSave|didClose`` and the extension's
``livingMemory/activeEditorChanged {uri}`` (switching tabs sends no didOpen).

Each becomes an editor signal; when it changes what the active file's context depends on,
the context is refreshed (debounced; edits wait longer than opens and switches).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from server.convert import ConversionError, structure

if TYPE_CHECKING:
    from server.app import LivingMemoryServer

log = logging.getLogger("living_memory.documents")

ACTIVE_EDITOR_CHANGED = "livingMemory/activeEditorChanged"


@dataclass(frozen=True)
class ActiveEditorParams:
    uri: str


def setup(server: LivingMemoryServer) -> None:
    from predictive.signals import DocumentSaved, FileOpened  # light: no store imports

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
        request = project.state.apply(FileOpened(rel, doc.text, doc.language_id))
        refresh(project, request)

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

        text = params.text if params.text is not None else open_text(server, uri)
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
