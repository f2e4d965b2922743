"""Error → fix capture: predictive.fixes on its own, and end to end through the server
(diagnostics from livingMemory/diagnosticsChanged, edits from didChange)."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient
from server_support import (
    change_doc,
    config,
    error,
    eventually,
    initialize,
    make_repo,
    open_doc,
    run,
    send_diagnostics,
    uri,
)

from predictive.file_facts import error_signature
from predictive.fixes import FixTracker, record_fix
from predictive.signals import Diagnostic
from storage import Anchor, AnchorType, MemoryStore

BROKEN = "import os\n\n\ndef home():\n    return os.environ['HOME'].lowr()\n"
FIXED = "import os\n\n\ndef home():\n    return os.environ['HOME'].lower()\n"
MESSAGE = 'Cannot access attribute "lowr" for class "str"'


def diag(message: str = MESSAGE, line: int = 4, severity: int = 1) -> Diagnostic:
    return Diagnostic(
        "src/home.py", severity, message, "reportAttributeAccessIssue", "pyright", line
    )


# ---- the tracker ----------------------------------------------------------------------------


def test_an_error_gone_after_an_edit_is_a_fix():
    t = FixTracker()
    assert t.observe("src/home.py", [diag()], BROKEN, now=1.0) == []
    (fix,) = t.observe("src/home.py", [], FIXED, now=2.0)
    assert fix.before.strip() == "return os.environ['HOME'].lowr()"
    assert fix.after.strip() == "return os.environ['HOME'].lower()"
    assert fix.signature == error_signature(MESSAGE, "reportAttributeAccessIssue", "pyright")
    assert (fix.first_seen, fix.fixed_at, fix.before_line) == (1.0, 2.0, 5)
    assert "Fix: changed `return os.environ['HOME'].lowr()`" in fix.text()


def test_an_error_gone_without_an_edit_is_not_a_fix():
    t = FixTracker()
    t.observe("src/home.py", [diag()], BROKEN)
    assert t.observe("src/home.py", [], BROKEN) == []


def test_warnings_are_not_tracked():
    t = FixTracker()
    t.observe("src/home.py", [diag(severity=2)], BROKEN)
    assert t.observe("src/home.py", [], FIXED) == []


def test_an_error_that_stays_is_not_a_fix():
    t = FixTracker()
    t.observe("src/home.py", [diag()], BROKEN)
    assert t.observe("src/home.py", [diag(line=4)], FIXED) == []
    assert t.open_errors("src/home.py")


def test_an_edit_that_clears_many_errors_is_not_n_fixes():
    t = FixTracker()
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]  # five distinct signatures
    t.observe("src/home.py", [diag(f"{w} is broken", line=4) for w in words], BROKEN)
    assert t.observe("src/home.py", [], FIXED) == []


def test_a_huge_edit_is_not_a_focused_fix():
    t = FixTracker()
    t.observe("src/home.py", [diag()], BROKEN)
    rewritten = "\n".join(f"line {i}" for i in range(200))
    assert t.observe("src/home.py", [], rewritten) == []


def test_a_closed_file_forgets_its_errors():
    t = FixTracker()
    t.observe("src/home.py", [diag()], BROKEN)
    t.forget("src/home.py")
    assert t.observe("src/home.py", [], FIXED) == []


def test_the_tracker_keeps_a_bounded_number_of_files(monkeypatch: pytest.MonkeyPatch):
    import predictive.fixes as fixes

    monkeypatch.setattr(fixes, "MAX_TRACKED_FILES", 3)
    t = FixTracker()
    for i in range(5):
        t.observe(f"f{i}.py", [Diagnostic(f"f{i}.py", 1, "bad")], "x = 1\n")
    assert [p for p in (f"f{i}.py" for i in range(5)) if t.open_errors(p)] == [
        "f2.py",
        "f3.py",
        "f4.py",
    ]


def test_the_fix_is_taken_near_the_error_line():
    t = FixTracker()
    text = "\n".join(f"x{i} = {i}" for i in range(60)) + "\n"
    t.observe("m.py", [Diagnostic("m.py", 1, "bad", line=50)], text)
    edited = text.replace("x2 = 2", "x2 = 22").replace("x50 = 50", "x50 = 500")
    (fix,) = t.observe("m.py", [], edited)
    assert fix.before == "x50 = 50" and fix.after == "x50 = 500"


def test_record_fix_stores_a_solution_anchored_to_file_and_error(store: MemoryStore):
    t = FixTracker()
    t.observe("src/home.py", [diag()], BROKEN)
    (fix,) = t.observe("src/home.py", [], FIXED)
    mid, created = record_fix(store, fix)
    m = store.get(mid)
    assert created and m.kind.value == "solution" and m.source == "editor-fix"
    assert Anchor(AnchorType.FILE, "src/home.py") in m.anchors
    assert Anchor(AnchorType.ERROR, fix.signature) in m.anchors
    assert m.metadata["occurrences"] == 1 and m.metadata["fix"]["after"] == fix.after


def test_a_recurrence_updates_instead_of_duplicating(store: MemoryStore):
    t = FixTracker()
    t.observe("src/home.py", [diag()], BROKEN, now=1.0)
    first, _ = record_fix(store, t.observe("src/home.py", [], FIXED, now=2.0)[0])
    t.observe("src/home.py", [diag()], BROKEN, now=3.0)
    other_fix = FIXED.replace(".lower()", ".casefold()")
    again, created = record_fix(store, t.observe("src/home.py", [], other_fix, now=4.0)[0])
    assert again == first and not created
    assert store.count() == 1
    m = store.get(first)
    assert m.metadata["occurrences"] == 2 and m.metadata["first_seen"] == 1.0
    assert "casefold" in m.text


# ---- end to end ------------------------------------------------------------------------------


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("fixes")
    repo = make_repo(base / "repo", files={"src/home.py": BROKEN})
    lsp_client.repo = repo  # type: ignore[attr-defined]
    await initialize(lsp_client, [repo], {"dataDirectory": str(base / "data"), "debounceMs": 20})
    yield
    await lsp_client.shutdown_session()


def solutions(client: LanguageClient) -> Awaitable[dict]:
    query = {"query": "lowr attribute", "kinds": ["solution"], "mode": "keyword"}
    return run(client, "search", query)


@pytest.mark.asyncio(loop_scope="module")
async def test_an_error_fixed_in_the_editor_becomes_a_solution_memory(client: LanguageClient):
    path: Path = client.repo / "src" / "home.py"  # type: ignore[attr-defined]
    u = open_doc(client, path)
    send_diagnostics(client, u, [error(MESSAGE, 4, "reportAttributeAccessIssue")])
    change_doc(client, u, FIXED, 2)
    send_diagnostics(client, u, [])
    found = await eventually(lambda: solutions(client), lambda r: r["results"], what="a fix")
    (memory,) = found["results"]
    sig = error_signature(MESSAGE, "reportAttributeAccessIssue", "pyright")
    assert f"error:{sig}" in memory["anchors"] and "file:src/home.py" in memory["anchors"]
    full = await run(client, "recall", {"id": memory["id"], "level": "full"})
    assert ".lowr()" in full["text"] and ".lower()" in full["text"]
    assert full["text"].startswith(f"Error in src/home.py:5: {MESSAGE}")
    client.fix_id = memory["id"]  # type: ignore[attr-defined]


@pytest.mark.asyncio(loop_scope="module")
async def test_the_same_error_fixed_again_updates_the_memory(client: LanguageClient):
    u = uri(client.repo / "src" / "home.py")  # type: ignore[attr-defined]
    before = (await run(client, "stats"))["memories"]
    change_doc(client, u, BROKEN, 3)
    send_diagnostics(client, u, [error(MESSAGE, 4, "reportAttributeAccessIssue")])
    change_doc(client, u, FIXED.replace(".lower()", ".casefold()"), 4)
    send_diagnostics(client, u, [])
    fix_id = client.fix_id  # type: ignore[attr-defined]
    await eventually(
        lambda: run(client, "recall", {"id": fix_id, "level": "full"}),
        lambda got: "casefold" in got["text"],
        what="the updated fix",
    )
    assert (await run(client, "stats"))["memories"] == before
