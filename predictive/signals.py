"""Editor signals the engine reacts to, diagnostics parsing and activity inference.

Plain data, no LSP types: the server translates protocol messages into these.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = [
    "Activity",
    "ActivityOverride",
    "BranchChanged",
    "Diagnostic",
    "DiagnosticsChanged",
    "DocumentSaved",
    "FileOpened",
    "Signal",
    "diagnostics_from_json",
    "infer_activity",
    "parse_activity",
]


class Activity(str, enum.Enum):
    """What the developer is doing; it rebalances the budget."""

    DEBUGGING = "debugging"
    FEATURE = "feature"
    REVIEW = "review"
    REFACTOR = "refactor"
    DEPLOY = "deploy"
    GENERAL = "general"

    def __str__(self) -> str:
        """The plain value, the same on every Python version."""
        return self.value


ERROR, WARNING, INFORMATION, HINT = 1, 2, 3, 4

_SEVERITY_NAMES = {
    "error": ERROR,
    "warning": WARNING,
    "warn": WARNING,
    "information": INFORMATION,
    "info": INFORMATION,
    "hint": HINT,
}


@dataclass(frozen=True)
class FileOpened:
    """A file was opened or became the active editor."""

    path: str
    text: str | None = None
    language_id: str | None = None


@dataclass(frozen=True)
class DocumentOpened:
    """A document was opened that is not the file on screen (a background open by another
    extension, an open re-sent after a restart): its text is known, the active file stays."""

    path: str
    text: str | None = None
    language_id: str | None = None


@dataclass(frozen=True)
class DocumentSaved:
    """A document was saved."""

    path: str
    text: str | None = None


@dataclass(frozen=True)
class BranchChanged:
    """The git branch changed (``new`` is None on a detached HEAD)."""

    new: str | None
    previous: str | None = None


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic; ``severity`` uses LSP numbering (1 error, 2 warning, 3 info, 4 hint)."""

    path: str
    severity: int
    message: str
    code: str | None = None
    source: str | None = None
    line: int | None = None
    character: int | None = None

    @property
    def is_error(self) -> bool:
        """True for severity 1."""
        return self.severity == ERROR

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], default_path: str | None = None) -> Diagnostic:
        """Build from an LSP-like dict; raises ValueError naming what is wrong.

        Accepts ``range.start.{line,character}`` or flat ``line``/``character`` (``column``);
        ``path``/``file``/``uri`` in the dict win over ``default_path`` (else ``""``).
        A missing severity means error, as LSP clients treat it.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"diagnostic must be an object, got {type(d).__name__}")
        message = d.get("message")
        if not isinstance(message, str) or not message.strip():
            raise ValueError("diagnostic needs a non-empty string 'message'")
        line, character = _position(d)
        return cls(
            path=_path_of(d, default_path),
            severity=_severity(d.get("severity", ERROR)),
            message=message,
            code=_code(d.get("code")),
            source=_optional_str(d.get("source"), "source"),
            line=line,
            character=character,
        )


@dataclass(frozen=True)
class DiagnosticsChanged:
    """The full, current set of diagnostics of one file (empty when cleared)."""

    path: str
    diagnostics: tuple[Diagnostic, ...] = ()

    def __post_init__(self) -> None:
        """Store any iterable of diagnostics as a tuple so the signal stays hashable."""
        object.__setattr__(self, "diagnostics", tuple(self.diagnostics))


@dataclass(frozen=True)
class ActivityOverride:
    """The user set the activity by hand; None returns to inference."""

    activity: Activity | None


Signal = (
    FileOpened
    | DocumentOpened
    | DocumentSaved
    | BranchChanged
    | DiagnosticsChanged
    | ActivityOverride
)


def _severity(value: Any) -> int:
    """LSP severity from an int 1-4 or a name such as "error"."""
    if isinstance(value, str):
        name = value.strip().lower()
        if name in _SEVERITY_NAMES:
            return _SEVERITY_NAMES[name]
        if name.isdigit():
            value = int(name)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4:
        raise ValueError(
            f"diagnostic severity must be 1-4 (error, warning, information, hint), got {value!r}"
        )
    return value


def _code(value: Any) -> str | None:
    """The code as text; VS Code's ``{"value": ..., "target": ...}`` form is unwrapped."""
    if isinstance(value, Mapping):
        value = value.get("value")
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"diagnostic code must be a string or integer, got {value!r}")
    return str(value)


def _optional_str(value: Any, field: str) -> str | None:
    """None or a non-empty string."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"diagnostic {field} must be a string, got {value!r}")
    return value


def _position(d: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Zero-based (line, character) from ``range.start`` or flat keys."""
    rng = d.get("range")
    if rng is not None:
        start = rng.get("start") if isinstance(rng, Mapping) else None
        if not isinstance(start, Mapping):
            raise ValueError("diagnostic 'range' must look like {'start': {'line', 'character'}}")
        line, char = start.get("line"), start.get("character")
    else:
        line, char = d.get("line"), d.get("character", d.get("column"))
    return _index(line, "line"), _index(char, "character")


def _index(value: Any, field: str) -> int | None:
    """None or a non-negative integer."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"diagnostic {field} must be a non-negative integer, got {value!r}")
    return value


def _path_of(d: Mapping[str, Any], default_path: str | None) -> str:
    """The file of a diagnostic: its own path/file/uri, else the default."""
    for key in ("path", "file", "uri"):
        value = d.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise ValueError(f"diagnostic {key} must be a string, got {value!r}")
        return uri_to_path(value) if key == "uri" or value.startswith("file:") else value
    return default_path or ""


def uri_to_path(uri: str) -> str:
    """``file:///a/b%20c.py`` → ``/a/b c.py``; Windows drives lose the leading slash."""
    if not uri.startswith("file:"):
        return uri
    path = unquote(urlparse(uri).path)
    if re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    return path


def diagnostics_from_json(text_or_obj: Any, default_path: str = "") -> tuple[Diagnostic, ...]:
    """Parse a JSON list of diagnostics (or ``{"diagnostics": [...]}``) into Diagnostics.

    ``text_or_obj`` may be JSON text/bytes or the already-decoded object; a single diagnostic
    object is accepted too. Raises ValueError saying which item is bad and why.
    """
    obj = text_or_obj
    if isinstance(obj, (bytes, bytearray)):
        try:
            obj = obj.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"diagnostics JSON is not valid UTF-8: {exc}") from None
    if isinstance(obj, str):
        if not obj.strip():
            raise ValueError("diagnostics JSON is empty; pass [] for no diagnostics")
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"malformed diagnostics JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from None
    if isinstance(obj, Mapping):
        if "diagnostics" in obj:
            default_path = _path_of(obj, default_path)
            obj = obj["diagnostics"]
        elif "message" in obj:
            obj = [obj]
        else:
            raise ValueError("diagnostics JSON object needs a 'diagnostics' list")
    if not isinstance(obj, list):
        raise ValueError(f"diagnostics JSON must be a list, got {type(obj).__name__}")
    out = []
    for i, item in enumerate(obj):
        try:
            out.append(Diagnostic.from_dict(item, default_path))
        except ValueError as exc:
            raise ValueError(f"diagnostic #{i}: {exc}") from None
    return tuple(out)


_ALIASES = {
    "debug": Activity.DEBUGGING,
    "bugfix": Activity.DEBUGGING,
    "fix": Activity.DEBUGGING,
    "feat": Activity.FEATURE,
    "reviewing": Activity.REVIEW,
    "refactoring": Activity.REFACTOR,
    "deployment": Activity.DEPLOY,
    "release": Activity.DEPLOY,
}


def parse_activity(value: Activity | str) -> Activity:
    """An Activity from its value, name or a common alias ("debug", "feat"); else ValueError."""
    if isinstance(value, Activity):
        return value
    if not isinstance(value, str):
        raise ValueError(f"activity must be a string, got {type(value).__name__}")
    key = value.strip().lower()
    for activity in Activity:
        if key == activity.value:
            return activity
    if key in _ALIASES:
        return _ALIASES[key]
    valid = ", ".join(a.value for a in Activity)
    raise ValueError(f"unknown activity {value!r}; expected one of: {valid}")


_BRANCH_ACTIVITY = {
    "fix": Activity.DEBUGGING,
    "bugfix": Activity.DEBUGGING,
    "hotfix": Activity.DEBUGGING,
    "bug": Activity.DEBUGGING,
    "feat": Activity.FEATURE,
    "feature": Activity.FEATURE,
    "features": Activity.FEATURE,
    "refactor": Activity.REFACTOR,
    "refactoring": Activity.REFACTOR,
    "release": Activity.DEPLOY,
    "releases": Activity.DEPLOY,
    "deploy": Activity.DEPLOY,
    "deployment": Activity.DEPLOY,
    "review": Activity.REVIEW,
    "pr": Activity.REVIEW,
    "pull": Activity.REVIEW,
}


def branch_activity(branch: str | None) -> Activity | None:
    """The activity a branch name implies (``fix/x``, ``alice/feat-y``), or None."""
    if not branch:
        return None
    name = re.sub(r"^(refs/heads/|refs/remotes/[^/]+/|origin/|upstream/)", "", branch.strip())
    for segment in name.lower().split("/"):
        lead = re.split(r"[-_.]", segment, maxsplit=1)[0]
        if lead in _BRANCH_ACTIVITY:
            return _BRANCH_ACTIVITY[lead]
    return None


def infer_activity(
    branch: str | None,
    diagnostics: Iterable[Diagnostic] = (),
    override: Activity | str | None = None,
) -> Activity:
    """Override, else DEBUGGING when any error is present, else the branch's type, else GENERAL."""
    if override is not None and override != "":
        return parse_activity(override)
    if any(d.severity == ERROR for d in diagnostics):
        return Activity.DEBUGGING
    return branch_activity(branch) or Activity.GENERAL
