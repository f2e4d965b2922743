"""What the editor shows now, kept from the stream of signals, as a context request."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from predictive.signals import (
    Activity,
    ActivityOverride,
    BranchChanged,
    Diagnostic,
    DiagnosticsChanged,
    DocumentOpened,
    DocumentSaved,
    FileOpened,
    Signal,
)

if TYPE_CHECKING:
    from predictive.engine import ContextRequest


def _no_documents(path: str) -> str | None:
    return None


@dataclass
class EditorState:
    """The active file, the branch, everyone's diagnostics, the activity override.

    ``apply`` returns the request to assemble when a signal changes what the active file's
    context depends on, else None (diagnostics of a background file, a save of another file).

    Documents' text is the editor's, not kept here: ``documents`` reads an open document's
    text by its path in the project (the language server reads pygls' workspace), when a
    request is made; the signals' text only tells whether it changed.
    """

    root: str | None = None
    budget: int | None = None
    active: str | None = None
    documents: Callable[[str], str | None] = _no_documents
    languages: dict[str, str | None] = field(default_factory=dict)
    branch: str | None = None
    diagnostics: dict[str, tuple[Diagnostic, ...]] = field(default_factory=dict)
    activity: Activity | None = None
    _seen: dict[str, int] = field(default_factory=dict, repr=False)  # path → hash of its text
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def apply(self, signal: Signal) -> ContextRequest | None:
        with self._lock:
            changed = self._apply(signal)
            return self._request() if changed else None

    def _apply(self, signal: Signal) -> bool:
        if isinstance(signal, FileOpened):
            if signal.text is not None:  # a tab switch carries none
                self._seen[signal.path] = hash(signal.text)
            if signal.language_id is not None or signal.path not in self.languages:
                self.languages[signal.path] = signal.language_id
            switched = signal.path != self.active
            self.active = signal.path
            return switched or signal.text is not None
        if isinstance(signal, DocumentOpened):
            # known text, same active file: only the active file's own text matters
            before = self._seen.get(signal.path)
            self._seen[signal.path] = hash(signal.text)
            if signal.language_id is not None or signal.path not in self.languages:
                self.languages[signal.path] = signal.language_id
            return signal.path == self.active and hash(signal.text) != before
        if isinstance(signal, DocumentSaved):
            if signal.text is not None:
                self._seen[signal.path] = hash(signal.text)
            return signal.path == self.active
        if isinstance(signal, BranchChanged):
            if signal.new == self.branch:
                return False
            self.branch = signal.new
            return self.active is not None
        if isinstance(signal, DiagnosticsChanged):
            shown = self.diagnostics.get(signal.path, ())
            self.diagnostics[signal.path] = tuple(signal.diagnostics)
            return signal.path == self.active and shown != tuple(signal.diagnostics)
        if isinstance(signal, ActivityOverride):
            if signal.activity == self.activity:
                return False
            self.activity = signal.activity
            return self.active is not None
        raise TypeError(f"not an editor signal: {signal!r}")

    def request(self) -> ContextRequest | None:
        """The request for the active file now (None before any file was opened)."""
        with self._lock:
            return self._request()

    def request_for(self, path: str) -> ContextRequest:
        """The request for ``path`` with what the editor knows of it (open or not)."""
        with self._lock:
            return self._request_for(path)

    def _request(self) -> ContextRequest | None:
        return None if self.active is None else self._request_for(self.active)

    def _request_for(self, path: str) -> ContextRequest:
        from predictive.engine import ContextRequest  # an editor's state is kept without it

        return ContextRequest(
            path=path,
            text=self.documents(path),
            language_id=self.languages.get(path),
            branch=self.branch,
            diagnostics=self.diagnostics.get(path, ()),
            activity=self.activity,
            budget=self.budget,
            root=self.root,
        )

    def forget(self, path: str) -> None:
        """A closed document: forget its language (its diagnostics may still come from
        others; its text is gone from the editor)."""
        with self._lock:
            self._seen.pop(path, None)
            self.languages.pop(path, None)
