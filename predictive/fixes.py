"""Error → fix capture: an error that disappears after an edit becomes a solution memory.

The server feeds every diagnostics update of a file, with the file's text at that moment, to
:class:`FixTracker`. When an error (severity 1) that was present is gone and the text changed
since it appeared, the tracker returns a :class:`CapturedFix`: the error (message, code,
source, normalised signature), the file, and the lines the edit changed (before/after).
:func:`record_fix` stores it as a ``solution`` memory anchored to the file and to
``error:<signature>``; when the same error is fixed again in the same file the memory is
updated (latest fix, occurrence count) rather than duplicated.

No LSP types: plain :class:`predictive.signals.Diagnostic` values and strings.
"""

from __future__ import annotations

import difflib
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from predictive.extract import solution_from_error
from predictive.file_facts import error_signature, language_for
from predictive.signals import Diagnostic
from storage import InvalidInput, MemoryStore

SOURCE = "editor-fix"
MAX_CHANGED_LINES = 40  # a bigger edit is not a focused fix
NEAR_LINES = 8  # changes this close to the error line belong to its fix
MAX_FIXES_PER_UPDATE = 3  # one edit that clears many errors is a refactor, not N fixes
MAX_TRACKED_TEXT = 2_000_000
MAX_TRACKED_FILES = 500  # files with open errors whose text is kept (least recent dropped)
MAX_SNIPPET_CHARS = 4000


@dataclass(frozen=True)
class CapturedFix:
    """An error that went away, and the edit that made it go."""

    path: str
    message: str
    code: str | None
    source: str | None
    signature: str
    line: int | None  # 0-based line of the error when it appeared
    before: str  # the changed lines as they were
    after: str  # the same region now
    before_line: int  # 1-based first line of ``before``
    after_line: int  # 1-based first line of ``after``
    first_seen: float
    fixed_at: float

    @property
    def source_id(self) -> str:
        return f"{self.path}::{self.signature}"

    def summary(self) -> str:
        """One line saying what the edit did."""
        b = [x for x in self.before.splitlines() if x.strip()]
        a = [x for x in self.after.splitlines() if x.strip()]
        if len(b) == 1 and len(a) == 1:
            return f"changed `{_clip(b[0].strip())}` to `{_clip(a[0].strip())}`"
        if not b:
            first = f": `{_clip(a[0].strip())}`" if a else ""
            return f"added {len(a)} line{'s' * (len(a) != 1)}{first}"
        if not a:
            return f"removed {len(b)} line{'s' * (len(b) != 1)}: `{_clip(b[0].strip())}`"
        return f"rewrote {len(b)} line{'s' * (len(b) != 1)} as {len(a)} near line {self.after_line}"

    def text(self) -> str:
        where = f"{self.path}:{self.line + 1}" if self.line is not None else self.path
        origin = " ".join(x for x in (self.source, self.code) if x)
        lang = language_for(self.path) or ""
        parts = [
            f"Error in {where}: {_one_line(self.message)}" + (f" [{origin}]" if origin else ""),
            f"Fix: {self.summary()}.",
            "",
            f"Before (line {self.before_line}):",
            f"```{lang}",
            self.before.rstrip("\n") or "(nothing)",
            "```",
            f"After (line {self.after_line}):",
            f"```{lang}",
            self.after.rstrip("\n") or "(nothing)",
            "```",
        ]
        return "\n".join(parts)

    def metadata(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "code": self.code,
                "source": self.source,
                "signature": self.signature,
                "line": self.line,
            },
            "fix": {
                "before": self.before,
                "after": self.after,
                "before_line": self.before_line,
                "after_line": self.after_line,
            },
            "first_seen": self.first_seen,
            "fixed_at": self.fixed_at,
        }


@dataclass
class _Open:
    diagnostic: Diagnostic
    text: str | None
    since: float


class FixTracker:
    """Remembers each file's open errors and the text they appeared in; thread-safe."""

    def __init__(
        self,
        *,
        max_changed_lines: int = MAX_CHANGED_LINES,
        near_lines: int = NEAR_LINES,
        max_fixes_per_update: int = MAX_FIXES_PER_UPDATE,
    ) -> None:
        self.max_changed_lines = max_changed_lines
        self.near_lines = near_lines
        self.max_fixes_per_update = max_fixes_per_update
        self._open: OrderedDict[str, dict[str, _Open]] = OrderedDict()
        self._lock = threading.Lock()

    def observe(
        self,
        path: str,
        diagnostics: Iterable[Diagnostic],
        text: str | None,
        now: float | None = None,
    ) -> list[CapturedFix]:
        """Take the full current diagnostics of ``path`` and its text; return the fixes."""
        now = time.time() if now is None else now
        if text is not None and len(text) > MAX_TRACKED_TEXT:
            text = None
        errors: dict[str, Diagnostic] = {}
        for d in diagnostics:
            if d.is_error:
                errors.setdefault(error_signature(d.message, d.code, d.source), d)
        with self._lock:
            before = self._open.get(path, {})
            now_open = {sig: before.get(sig) or _Open(d, text, now) for sig, d in errors.items()}
            if now_open:
                self._open[path] = now_open
                self._open.move_to_end(path)
                while len(self._open) > MAX_TRACKED_FILES:
                    self._open.popitem(last=False)
            else:
                self._open.pop(path, None)
            gone = [(sig, o) for sig, o in before.items() if sig not in errors]
        fixes = []
        for sig, o in gone:
            fix = self._fix(path, sig, o, text, now)
            if fix is not None:
                fixes.append(fix)
        if len(fixes) > self.max_fixes_per_update:
            return []
        return fixes

    def forget(self, path: str) -> None:
        """The file was closed or deleted: its errors no longer say anything about fixes."""
        with self._lock:
            self._open.pop(path, None)

    def open_errors(self, path: str) -> list[str]:
        with self._lock:
            return sorted(self._open.get(path, {}))

    def _fix(
        self, path: str, sig: str, o: _Open, text: str | None, now: float
    ) -> CapturedFix | None:
        if text is None or o.text is None or text == o.text:
            return None  # no edit (or unknown text): the error went away by itself
        old, new = o.text.splitlines(), text.splitlines()
        ops = [
            op
            for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
            if op[0] != "equal"
        ]
        if not ops:
            return None
        line = o.diagnostic.line
        if line is not None:
            near = [op for op in ops if op[1] - self.near_lines <= line < op[2] + self.near_lines]
            if not near:
                near = [min(ops, key=lambda op: min(abs(line - op[1]), abs(line - op[2])))]
        else:
            near = ops
        i1, i2 = min(op[1] for op in near), max(op[2] for op in near)
        j1, j2 = min(op[3] for op in near), max(op[4] for op in near)
        if max(i2 - i1, j2 - j1) > self.max_changed_lines:
            return None
        before, after = "\n".join(old[i1:i2]), "\n".join(new[j1:j2])
        if not before.strip() and not after.strip():
            return None
        d = o.diagnostic
        return CapturedFix(
            path=path,
            message=d.message,
            code=d.code,
            source=d.source,
            signature=sig,
            line=line,
            before=before[:MAX_SNIPPET_CHARS],
            after=after[:MAX_SNIPPET_CHARS],
            before_line=i1 + 1,
            after_line=j1 + 1,
            first_seen=o.since,
            fixed_at=now,
        )


def record_fix(store: MemoryStore, fix: CapturedFix) -> tuple[int, bool]:
    """Store ``fix`` as a solution memory; a recurrence updates it. Returns (id, created)."""
    existing = store.find_by_source(SOURCE, fix.source_id)
    meta = fix.metadata()
    if existing is None:
        candidate = solution_from_error(
            text=fix.text(),
            path=fix.path,
            message=fix.message,
            code=fix.code,
            source=fix.source,
            source_name=SOURCE,
            source_id=fix.source_id,
            metadata={**meta, "occurrences": 1},
        )
        result = store.add(candidate.memory)
        return result.id, result.created
    occurrences = int(existing.metadata.get("occurrences", 1) or 1) + 1
    meta = {**meta, "occurrences": occurrences, "first_seen": existing.metadata.get("first_seen")}
    fields: dict[str, Any] = {"metadata": meta}
    text = fix.text()
    if text != existing.text:
        fields["text"] = text
        # the levels described the old fix; they are recomputed from the new text
        fields.update(summary=None, compressed=None, index_label=None)
    try:
        store.update(existing.id, **fields)
    except InvalidInput:  # the new text is already another memory: keep ours, count it
        store.update(existing.id, metadata=meta)
    return existing.id, False


def _clip(s: str, n: int = 80) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _one_line(s: str) -> str:
    return _clip(" ".join(s.split()), 300)


__all__ = ["SOURCE", "CapturedFix", "FixTracker", "record_fix"]
