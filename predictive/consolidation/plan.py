"""A consolidation plan: typed changes, each naming its memories, their labels and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["merge", "compress", "forget", "link", "rerank", "contradiction"]


@dataclass(frozen=True)
class Change:
    """One change consolidation makes (or, dry, would make).

    ``ids[0]`` is the memory the change is about (a merge's survivor, a link's source);
    ``detail`` carries what applying it needs (edge type and strength, new score, …)."""

    action: Action
    ids: tuple[int, ...]
    labels: tuple[str, ...]
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "ids": list(self.ids),
            "labels": list(self.labels),
            "reason": self.reason,
            **({"detail": self.detail} if self.detail else {}),
        }


def describe(change: Change) -> str:
    """One line for people: ``merge #3 ← #7 #9: release series "release: #" (…)``."""
    ids = [f"#{i}" for i in change.ids]
    head = {
        "merge": f"{ids[0]} ← {' '.join(ids[1:])}",
        "link": " ↔ ".join(ids),
    }.get(change.action, " ".join(ids))
    label = change.labels[0] if change.labels else ""
    return f"{change.action} {head}: {change.reason}" + (f" — {label}" if label else "")
