"""Signals: the dataclasses, diagnostics parsing with bad input, activity inference."""

from __future__ import annotations

import dataclasses
import json

import pytest

from predictive.signals import (
    Activity,
    ActivityOverride,
    BranchChanged,
    Diagnostic,
    DiagnosticsChanged,
    DocumentSaved,
    FileOpened,
    diagnostics_from_json,
    infer_activity,
    parse_activity,
)

LSP_DIAG = {
    "severity": 1,
    "message": 'Cannot access attribute "foo" for class "Bar"',
    "code": "reportAttributeAccessIssue",
    "source": "Pyright",
    "range": {"start": {"line": 41, "character": 7}, "end": {"line": 41, "character": 10}},
}


def _err(path: str = "a.py") -> Diagnostic:
    return Diagnostic(path=path, severity=1, message="boom")


def _warn(path: str = "a.py") -> Diagnostic:
    return Diagnostic(path=path, severity=2, message="meh")


# ------------------------------------------------------------------------------ dataclasses


def test_activity_values_and_str() -> None:
    assert [a.value for a in Activity] == [
        "debugging",
        "feature",
        "review",
        "refactor",
        "deploy",
        "general",
    ]
    assert Activity("debugging") is Activity.DEBUGGING
    assert str(Activity.FEATURE) == "feature"
    assert f"{Activity.DEPLOY}" == "deploy"
    assert Activity.REVIEW == "review"


def test_signals_are_frozen_and_hashable() -> None:
    signals = [
        FileOpened("a.py", "x = 1", "python"),
        DocumentSaved("a.py"),
        BranchChanged("feat/x", "main"),
        DiagnosticsChanged("a.py", (_err(),)),
        ActivityOverride(Activity.REVIEW),
        ActivityOverride(None),
    ]
    assert len(set(signals)) == len(signals)
    with pytest.raises(dataclasses.FrozenInstanceError):
        signals[0].path = "b.py"  # type: ignore[misc]
    assert FileOpened("a.py").text is None and FileOpened("a.py").language_id is None
    assert BranchChanged(None).previous is None


def test_diagnostics_changed_stores_a_tuple() -> None:
    changed = DiagnosticsChanged("a.py", [_err(), _warn()])  # type: ignore[arg-type]
    assert isinstance(changed.diagnostics, tuple)
    assert hash(changed) == hash(DiagnosticsChanged("a.py", (_err(), _warn())))
    assert DiagnosticsChanged("a.py").diagnostics == ()


# ---------------------------------------------------------------------------- from_dict


def test_from_dict_lsp_shape() -> None:
    d = Diagnostic.from_dict(LSP_DIAG, default_path="src/a.py")
    assert d == Diagnostic(
        path="src/a.py",
        severity=1,
        message='Cannot access attribute "foo" for class "Bar"',
        code="reportAttributeAccessIssue",
        source="Pyright",
        line=41,
        character=7,
    )
    assert d.is_error


def test_from_dict_flat_shape_and_defaults() -> None:
    d = Diagnostic.from_dict({"message": "x", "line": 3, "column": 4, "code": 2339})
    assert (d.path, d.severity, d.line, d.character, d.code, d.source) == (
        "",
        1,
        3,
        4,
        "2339",
        None,
    )


def test_from_dict_accepts_names_code_objects_and_paths() -> None:
    d = Diagnostic.from_dict(
        {
            "message": "unused",
            "severity": "Warning",
            "code": {"value": "no-unused-vars", "target": "https://eslint.org"},
            "uri": "file:///home/me/proj/src/a%20b.ts",
        },
        default_path="ignored.ts",
    )
    assert (d.severity, d.code, d.path) == (2, "no-unused-vars", "/home/me/proj/src/a b.ts")
    assert Diagnostic.from_dict({"message": "m", "severity": "hint", "path": "p.py"}).path == "p.py"
    assert Diagnostic.from_dict({"message": "m", "severity": "4"}).severity == 4
    windows = Diagnostic.from_dict({"message": "m", "uri": "file:///c%3A/proj/a.cs"})
    assert windows.path == "c:/proj/a.cs"


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ([1, 2], "must be an object"),
        ("oops", "must be an object"),
        ({"severity": 1}, "message"),
        ({"message": "   "}, "message"),
        ({"message": 5}, "message"),
        ({"message": "m", "severity": 0}, "severity must be 1-4"),
        ({"message": "m", "severity": 5}, "severity must be 1-4"),
        ({"message": "m", "severity": "fatal"}, "severity must be 1-4"),
        ({"message": "m", "severity": True}, "severity must be 1-4"),
        ({"message": "m", "severity": 1.0}, "severity must be 1-4"),
        ({"message": "m", "line": -1}, "line"),
        ({"message": "m", "line": "3"}, "line"),
        ({"message": "m", "range": {"end": {}}}, "range"),
        ({"message": "m", "range": [0, 1]}, "range"),
        ({"message": "m", "range": {"start": {"line": 1, "character": -2}}}, "character"),
        ({"message": "m", "code": ["x"]}, "code"),
        ({"message": "m", "source": 3}, "source"),
        ({"message": "m", "path": 3}, "path"),
    ],
)
def test_from_dict_rejects_bad_input(bad: object, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        Diagnostic.from_dict(bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ from_json


def test_diagnostics_from_json_list_text() -> None:
    text = json.dumps([LSP_DIAG, {"message": "w", "severity": 2, "line": 1}])
    diags = diagnostics_from_json(text, "src/a.py")
    assert isinstance(diags, tuple) and len(diags) == 2
    assert [d.path for d in diags] == ["src/a.py", "src/a.py"]
    assert [d.severity for d in diags] == [1, 2]


def test_diagnostics_from_json_object_forms() -> None:
    wrapped = {"path": "b.go", "diagnostics": [{"message": "undefined: x"}]}
    assert diagnostics_from_json(wrapped, "a.go")[0].path == "b.go"
    assert diagnostics_from_json(json.dumps(wrapped).encode(), "a.go")[0].message == "undefined: x"
    assert diagnostics_from_json({"diagnostics": []}, "a.go") == ()
    assert diagnostics_from_json("[]", "a.go") == ()
    single = diagnostics_from_json({"message": "one", "severity": 3}, "a.go")
    assert single == (Diagnostic("a.go", 3, "one"),)
    assert diagnostics_from_json([LSP_DIAG], "x.py")[0].line == 41


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("[{", "malformed diagnostics JSON"),
        ("not json", "malformed diagnostics JSON"),
        ("", "empty"),
        ("   ", "empty"),
        ("3", "must be a list"),
        ('"x"', "must be a list"),
        ('{"foo": 1}', "'diagnostics' list"),
        ('{"diagnostics": 3}', "must be a list"),
        (b"\xff\xfe", "UTF-8"),
        ('[{"message": "ok"}, {"message": "m", "severity": 9}]', "diagnostic #1"),
        ("[1]", "diagnostic #0: diagnostic must be an object"),
    ],
)
def test_diagnostics_from_json_rejects_bad_input(bad: object, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        diagnostics_from_json(bad, "a.py")


# ------------------------------------------------------------------------------ activity


def test_override_wins_over_errors_and_branch() -> None:
    assert infer_activity("fix/login", [_err()], Activity.REVIEW) is Activity.REVIEW
    assert infer_activity("fix/login", [_err()], "Deploy") is Activity.DEPLOY
    assert infer_activity(None, (), "debug") is Activity.DEBUGGING
    assert infer_activity("feat/x", (), None) is Activity.FEATURE
    assert infer_activity("feat/x", (), "") is Activity.FEATURE


def test_bad_override_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown activity 'sleeping'.*debugging"):
        infer_activity(None, (), "sleeping")
    with pytest.raises(ValueError, match="must be a string"):
        parse_activity(3)  # type: ignore[arg-type]


def test_errors_mean_debugging_but_warnings_do_not() -> None:
    assert infer_activity("feature/auth", [_warn(), _err()]) is Activity.DEBUGGING
    assert infer_activity("feature/auth", [_warn()]) is Activity.FEATURE
    assert infer_activity(None, iter([_err()])) is Activity.DEBUGGING
    assert infer_activity(None, [_warn()]) is Activity.GENERAL


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        ("fix/login", Activity.DEBUGGING),
        ("bugfix/JIRA-1", Activity.DEBUGGING),
        ("hotfix/prod-crash", Activity.DEBUGGING),
        ("HotFix/Prod", Activity.DEBUGGING),
        ("fix-login", Activity.DEBUGGING),
        ("fix_login", Activity.DEBUGGING),
        ("alice/fix-login", Activity.DEBUGGING),
        ("refs/heads/hotfix/x", Activity.DEBUGGING),
        ("feat/auth-refresh", Activity.FEATURE),
        ("feature/auth-refresh", Activity.FEATURE),
        ("Feature-Auth", Activity.FEATURE),
        ("refactor/split-models", Activity.REFACTOR),
        ("release/1.2.0", Activity.DEPLOY),
        ("deploy/eu-west", Activity.DEPLOY),
        ("review/bob-pr", Activity.REVIEW),
        ("pr/123", Activity.REVIEW),
        ("main", Activity.GENERAL),
        ("fixture-loader", Activity.GENERAL),
        ("prefix/thing", Activity.GENERAL),
        ("chore/deps", Activity.GENERAL),
        ("", Activity.GENERAL),
        (None, Activity.GENERAL),
    ],
)
def test_branch_prefixes(branch: str | None, expected: Activity) -> None:
    assert infer_activity(branch) is expected


def test_parse_activity_accepts_values_names_and_aliases() -> None:
    assert parse_activity("REFACTOR") is Activity.REFACTOR
    assert parse_activity(" review ") is Activity.REVIEW
    assert parse_activity("feat") is Activity.FEATURE
    assert parse_activity(Activity.GENERAL) is Activity.GENERAL
