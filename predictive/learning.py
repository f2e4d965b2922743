"""What a project session has learned of its project so far, while it is still learning.

The first ingestion of a new project and the embedding of memories that lack a vector run on
a thread of their own (``ProjectSession.prepare``); answers given before they finish carry a
``learning`` note built from this record, so an agent knows an empty or thin answer may only
mean "not learned yet". The record keeps, per source, how many units are done and how many
there are in all (when that is known), from the progress reports of the ingestion
(``predictive.ingest``: ``(done, total, message)``) and of the embedding (``(done, total)``).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

# A source's progress message names it first ("git: 340 of 2790 commits", "decision records:
# 3 of 12", "rules: CLAUDE.md"); what each is called, and what its units are.
_SOURCES = {
    "git": ("git", "commits"),
    "adr": ("adr", "decision records"),
    "decision records": ("adr", "decision records"),
    "rules": ("rules", "rule files"),
    "chats": ("chats", "conversations"),
}
_COUNTED = re.compile(r"(?P<done>\d+) of (?P<total>\d+)\b")
_READING = re.compile(r"reading (?P<total>\d+)\b")
_CONVERSATIONS = re.compile(r"(?P<done>\d+) conversations")
VECTORS = ("vectors", "memories embedded")
PASSAGES = ("passages", "passages embedded")
_LEARNING = re.compile(r"(?P<done>[\d,]+) of (?P<total>[\d,]+) (?P<unit>memories|passages)")
STARTING_WAIT_S = 0.25
"""How long an answer given before the preparation has said what it does waits for it to say:
a learned store's check is over milliseconds after the model is in, and "learning: starting"
on a store with nothing to learn would send an agent looking for what is missing."""


@dataclass(frozen=True)
class Step:
    """One source's progress: ``done`` of ``total`` ``unit`` (``total`` None: not known)."""

    source: str
    unit: str
    done: int = 0
    total: int | None = None

    @property
    def counted(self) -> bool:
        return self.done > 0 or self.total is not None

    def __str__(self) -> str:
        if self.total is not None:
            return f"{self.done:,} of {self.total:,} {self.unit}"
        if self.done:
            return f"{self.done:,} {self.unit}"
        return f"reading {self.unit}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "unit": self.unit, "done": self.done}
        if self.total is not None:
            out["total"] = self.total
        return out


class Learning:
    """Thread-safe progress of one store's preparation; ``note()`` is None once it is done
    (or when it never started)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._said = threading.Condition(self._lock)  # a step reported, or the end
        self._active = False
        self._steps: dict[str, Step] = {}

    def start(self) -> None:
        """Preparation begins (nothing counted yet)."""
        with self._lock:
            self._active = True

    def finish(self) -> None:
        """Preparation is over (done or failed): answers carry no note any more."""
        with self._lock:
            self._active = False
            self._steps.clear()
            self._said.notify_all()

    @property
    def active(self) -> bool:
        with self._lock:
            return self._active

    def ingest_progress(self, done: int, total: int, message: str | None = None) -> None:
        """An ingestion progress report (``predictive.ingest.Progress``); never raises, so
        it never cancels the ingestion."""
        name, _, rest = (message or "").partition(": ")
        known = _SOURCES.get(name.strip())
        if known is None:
            return
        source, unit = known
        with self._lock:
            if not self._active:
                return
            if source not in self._steps:  # a new source: the one before it said all it could
                self._steps = {k: s for k, s in self._steps.items() if s.counted}
            step = self._steps.get(source) or Step(source, unit)
            if m := _COUNTED.search(rest):
                step = Step(source, unit, int(m["done"]), int(m["total"]))
            elif m := _READING.search(rest):
                step = Step(source, unit, 0, int(m["total"]))
            elif m := _CONVERSATIONS.search(rest):
                step = Step(source, unit, int(m["done"]), step.total)
            elif source == "rules" and rest.strip() != "reading":  # one report per rule file
                step = Step(source, unit, step.done + 1, step.total)
            self._steps[source] = step
            self._said.notify_all()

    def embedding(self, done: int, total: int) -> None:
        """An embedding progress report: ``done`` of ``total`` memories have their vector."""
        with self._lock:
            if self._active:
                self._steps[VECTORS[0]] = Step(*VECTORS, done, total)
                self._said.notify_all()

    def learning_progress(self, done: int, total: int, message: str | None = None) -> None:
        """A report of :func:`predictive.ingest.learn_vectors` ("learning: 40 of 90
        passages"); never raises."""
        m = _LEARNING.search(message or "")
        if m is None:
            return
        if m["unit"] == "memories":
            self.embedding(done, total)
            return
        with self._lock:
            if self._active:
                self._steps[PASSAGES[0]] = Step(*PASSAGES, done, total)
                self._said.notify_all()

    def note(self, wait: float = STARTING_WAIT_S) -> dict[str, Any] | None:
        """What an answer given now says of the learning still going on, or None; while the
        preparation has said nothing yet, after waiting up to ``wait`` seconds for it to."""
        with self._lock:
            if self._active and not self._steps and wait > 0:
                self._said.wait_for(lambda: not self._active or bool(self._steps), wait)
            if not self._active:
                return None
            steps = list(self._steps.values())
        said = ", ".join(map(str, steps)) if steps else "starting"
        return {
            "message": f"learning: {said} — answers may miss what is not learned yet",
            "steps": [s.to_dict() for s in steps],
        }
