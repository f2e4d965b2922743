"""Contradictions between memories, found locally and, when one is configured, by a judge.

- :mod:`~predictive.conflicts.wording`: the words of a statement (stems, content words);
- :mod:`~predictive.conflicts.markers`: the phrases statements are read by;
- :mod:`~predictive.conflicts.statement`: reading one statement (:func:`analyse`);
- :mod:`~predictive.conflicts.rules`: the rules that compare two statements (:func:`detect`);
- :mod:`~predictive.conflicts.scanning`: the scan over a store (:func:`scan`, :func:`record`).
"""

from predictive.conflicts.rules import Finding, detect, written_at
from predictive.conflicts.scanning import (
    Bounds,
    Conflict,
    Judge,
    Judged,
    Verdict,
    hold_backlog,
    judge_pending,
    judge_waiting,
    mark_scanned,
    pending_scan,
    record,
    scan,
    scan_and_record,
    scan_backlog,
    status_for,
)
from predictive.conflicts.statement import analyse, decision_part
from predictive.conflicts.wording import content_words

__all__ = [
    "Bounds",
    "Conflict",
    "Finding",
    "Judge",
    "Judged",
    "Verdict",
    "analyse",
    "content_words",
    "decision_part",
    "detect",
    "hold_backlog",
    "judge_pending",
    "judge_waiting",
    "mark_scanned",
    "pending_scan",
    "record",
    "scan",
    "scan_and_record",
    "scan_backlog",
    "status_for",
    "written_at",
]
