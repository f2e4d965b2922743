"""How an item handed to an agent cites itself: its memory id and where it came from."""

from __future__ import annotations

from typing import Any

from predictive.retrieval import Provenance, unit_of
from storage import Memory


def provenance_of(m: Memory) -> Provenance:
    """Where a memory comes from (commit, decision record, rule file, conversation, memory)."""
    return unit_of(m, {})[1]


def citation(m: Memory) -> dict[str, Any]:
    """``id``, ``kind`` and provenance of a memory, the fields every cited item carries."""
    p = provenance_of(m)
    out: dict[str, Any] = {"id": m.id, "kind": m.kind.value, "source": p.source}
    out["provenance"] = f"{p.kind}: {p}" if p.kind != "memory" or p.path else f"memory #{m.id}"
    if m.archived:
        out["archived"] = True
    if m.superseded_by:
        out["superseded_by"] = m.superseded_by
    return out
