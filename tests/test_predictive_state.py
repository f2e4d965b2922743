"""EditorState: signals in, context requests out only when the active context changes."""

from __future__ import annotations

import pytest

from predictive.engine import ContextRequest
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
from predictive.state import EditorState


class Editor:
    """An editor in front of an EditorState: a signal's text is the document's in the editor's
    workspace first (as pygls' is when the language server's handler runs), and the state
    reads it from there."""

    def __init__(self, **kw: object) -> None:
        self.documents: dict[str, str] = {}
        self.state = EditorState(documents=self.documents.get, **kw)  # type: ignore[arg-type]

    def apply(self, signal: Signal) -> ContextRequest | None:
        text = getattr(signal, "text", None)
        if text is not None:
            self.documents[signal.path] = text  # type: ignore[union-attr]
        return self.state.apply(signal)

    def request(self) -> ContextRequest | None:
        return self.state.request()

    def forget(self, path: str) -> None:
        self.documents.pop(path, None)
        self.state.forget(path)


def test_nothing_to_assemble_before_a_file_is_open() -> None:
    s = Editor()
    assert s.apply(BranchChanged("main")) is None
    assert s.request() is None


def test_open_switch_and_save() -> None:
    s = Editor(root="/repo", budget=4000)
    r = s.apply(FileOpened("a.py", "import os\n", "python"))
    assert r is not None and r.path == "a.py" and r.text == "import os\n"
    assert r.root == "/repo" and r.budget == 4000 and r.language_id == "python"
    r = s.apply(FileOpened("b.py"))
    assert r is not None and r.path == "b.py" and r.text is None
    assert s.apply(DocumentSaved("a.py", "import sys\n")) is None  # not the active file
    r = s.apply(FileOpened("a.py"))
    assert r is not None and r.text == "import sys\n"
    assert s.apply(DocumentSaved("a.py")) is not None


def test_a_background_open_keeps_the_active_file() -> None:
    s = Editor()
    s.apply(FileOpened("storage/db.py"))  # the file on screen, its text not yet known
    assert s.apply(DocumentOpened("package.json", "{}", "json")) is None
    r = s.request()
    assert r is not None and r.path == "storage/db.py"
    r = s.apply(DocumentOpened("storage/db.py", "import apsw\n", "python"))
    assert r is not None and r.path == "storage/db.py" and r.text == "import apsw\n"
    assert s.apply(DocumentOpened("storage/db.py", "import apsw\n")) is None  # same text
    r = s.apply(FileOpened("package.json"))  # switching to it later uses the text it had
    assert r is not None and r.text == "{}" and r.language_id == "json"


def test_branch_change_reassembles_once() -> None:
    s = Editor()
    s.apply(FileOpened("a.py"))
    r = s.apply(BranchChanged("feature/auth", "main"))
    assert r is not None and r.branch == "feature/auth"
    assert s.apply(BranchChanged("feature/auth", "main")) is None


def test_diagnostics_only_matter_for_the_active_file() -> None:
    s = Editor()
    s.apply(FileOpened("a.py"))
    err = Diagnostic("b.py", 1, "boom")
    assert s.apply(DiagnosticsChanged("b.py", (err,))) is None
    r = s.apply(FileOpened("b.py"))
    assert r is not None and r.diagnostics == (err,)
    assert s.apply(DiagnosticsChanged("b.py", (err,))) is None  # unchanged
    r = s.apply(DiagnosticsChanged("b.py", ()))
    assert r is not None and r.diagnostics == ()


def test_activity_override() -> None:
    s = Editor()
    s.apply(FileOpened("a.py"))
    r = s.apply(ActivityOverride(Activity.REVIEW))
    assert r is not None and r.activity is Activity.REVIEW
    assert s.apply(ActivityOverride(Activity.REVIEW)) is None
    r = s.apply(ActivityOverride(None))
    assert r is not None and r.activity is None


def test_forget_drops_text_and_unknown_signals_are_refused() -> None:
    s = Editor()
    s.apply(FileOpened("a.py", "x = 1\n"))
    s.forget("a.py")
    req = s.request()
    assert req is not None and req.text is None
    with pytest.raises(TypeError, match="not an editor signal"):
        s.apply("didOpen")  # type: ignore[arg-type]
