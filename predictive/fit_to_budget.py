"""Results that fit a token budget: whole items are dropped from the end (or the deepest nodes
of a tree), then the longest texts are cut; a result never exceeds its budget."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from predictive.tokens import count_tokens, truncate_to_tokens


class BudgetTooSmall(ValueError):
    """Not even the result's frame fits the budget."""


def dumps(value: Any) -> str:
    """The compact JSON text of a result, as it is sent and counted."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def tokens_of(value: Any) -> int:
    """Tokens of a result's JSON text (o200k)."""
    return count_tokens(dumps(value))


def _largest(lo: int, hi: int, fits: Any) -> int:
    """The largest n in [lo, hi] with ``fits(n)`` (monotone), or lo - 1 when none."""
    best = lo - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def _cut_texts(payload: dict[str, Any], keys: Sequence[str], budget: int) -> dict[str, Any]:
    """``payload`` with its longest text fields (top level) cut until it fits."""
    out = dict(payload)
    for key in sorted(
        (k for k in keys if isinstance(out.get(k), str) and out[k]),
        key=lambda k: -len(out[k]),
    ):
        if tokens_of(out) <= budget:
            break
        text = out[key]
        whole = count_tokens(text)
        n = _largest(0, whole, lambda n, k=key, t=text: tokens_of({**out, k: _cut(t, n)}) <= budget)
        out[key] = _cut(text, max(n, 0))
        out["truncated"] = True
    return out


def _cut(text: str, n: int) -> str:
    return truncate_to_tokens(text, n) if n > 0 else ""


def fit_items(
    payload: dict[str, Any],
    budget: int,
    *,
    items: str = "items",
    texts: Sequence[str] = ("text", "content", "markdown"),
) -> dict[str, Any]:
    """``payload`` within ``budget`` tokens: the list ``payload[items]`` keeps its first items
    that fit (``omitted`` counts the rest), then top-level ``texts`` are cut."""
    out = {**payload, "budget": budget, "truncated": bool(payload.get("truncated"))}
    if tokens_of(out) <= budget:
        return out
    listed = list(out.get(items) or [])
    if listed:

        def with_n(n: int) -> dict[str, Any]:
            return {**out, items: listed[:n], "truncated": True, "omitted": len(listed) - n}

        n = _largest(0, len(listed), lambda n: tokens_of(with_n(n)) <= budget)
        if n >= 0:
            kept = with_n(n)
            if n < len(listed):
                kept = _with_cut_item(kept, items, listed[n], texts, budget) or kept
            return kept
        out = with_n(0)
    out = _cut_texts(out, texts, budget)
    if tokens_of(out) > budget:
        raise BudgetTooSmall(
            f"a budget of {budget} tokens is too small for this result "
            f"(it needs at least {tokens_of(out)})"
        )
    return out


def _with_cut_item(
    kept: dict[str, Any], items: str, item: Any, texts: Sequence[str], budget: int
) -> dict[str, Any] | None:
    """``kept`` plus ``item`` with its longest text cut to fit, when a useful part fits."""
    if not isinstance(item, dict):
        return None
    candidate = {**kept, items: [*kept[items], item], "omitted": kept["omitted"] - 1}
    keys = [k for k in texts if isinstance(item.get(k), str)]
    if not keys:
        return None
    key = max(keys, key=lambda k: len(item[k]))
    text = item[key]

    def attempt(n: int) -> dict[str, Any]:
        cut = {**item, key: _cut(text, n), "truncated": True}
        return {**candidate, items: [*kept[items], cut]}

    n = _largest(0, count_tokens(text), lambda n: tokens_of(attempt(n)) <= budget)
    return attempt(n) if n >= 20 else None


def fit_tree(
    payload: dict[str, Any], budget: int, *, roots: str = "roots", children: str = "children"
) -> dict[str, Any]:
    """``payload`` within ``budget`` tokens: a forest under ``payload[roots]`` keeps its nodes
    in breadth-first order (roots first, the deepest dropped first)."""
    out = {**payload, "budget": budget, "truncated": bool(payload.get("truncated"))}
    if tokens_of(out) <= budget:
        return out
    order: list[int] = []
    queue: list[tuple[dict[str, Any], int]] = [(r, 0) for r in out.get(roots) or []]
    ids: dict[int, dict[str, Any]] = {}
    while queue:
        node, _ = queue.pop(0)
        ids[id(node)] = node
        order.append(id(node))
        queue.extend((c, 0) for c in node.get(children) or [])
    total = len(order)

    def prune(node: dict[str, Any], keep: set[int]) -> dict[str, Any]:
        kids = [prune(c, keep) for c in node.get(children) or [] if id(c) in keep]
        return {**node, children: kids}

    def with_n(n: int) -> dict[str, Any]:
        keep = set(order[:n])
        forest = [prune(r, keep) for r in out.get(roots) or [] if id(r) in keep]
        return {**out, roots: forest, "truncated": True, "omitted": total - n}

    n = _largest(0, total, lambda n: tokens_of(with_n(n)) <= budget)
    if n < 0:
        raise BudgetTooSmall(f"a budget of {budget} tokens is too small for this result")
    return with_n(n)
