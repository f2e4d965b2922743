"""A scripted judge's verdict on a pair: what the fake models of the judge tests answer."""

from __future__ import annotations

from typing import Any


def oracle_verdict(prompt: str, conflicts: set[frozenset[str]]) -> dict[str, Any]:
    """The verdict on the pair in a judge ``prompt`` ("A:\\n…\\n\\nB:\\n…"): the later replaces
    the earlier when the pair is among ``conflicts``, both hold otherwise."""
    a, b = prompt.removeprefix("A:\n").split("\n\nB:\n", 1)
    if frozenset((a, b)) in conflicts:
        return {
            "verdict": "supersedes",
            "reason": "the later one replaces the earlier",
            "confidence": 0.9,
            "quote_a": a[:20],
            "quote_b": b[:20],
        }
    return {"verdict": "compatible", "reason": "both hold", "confidence": 0.8}
