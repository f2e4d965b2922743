"""Budgeted results: never more tokens than the budget; whole items go first (from the end,
or the deepest nodes of a tree), then long texts are cut."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from predictive.fit_to_budget import BudgetTooSmall, fit_items, fit_tree, tokens_of


def items(n: int, words: int = 30) -> list[dict[str, Any]]:
    return [{"id": i, "text": " ".join(f"word{i}_{j}" for j in range(words))} for i in range(n)]


def test_a_result_that_fits_is_unchanged_but_for_its_budget() -> None:
    out = fit_items({"items": items(2)}, 5000)
    assert out["items"] == items(2)
    assert out["budget"] == 5000 and out["truncated"] is False


def test_items_are_dropped_from_the_end_and_counted() -> None:
    out = fit_items({"items": items(50)}, 400)
    kept = [i["id"] for i in out["items"]]
    assert tokens_of(out) <= 400
    assert kept == list(range(len(kept))) and 0 < len(kept) < 50
    assert out["truncated"] is True and out["omitted"] >= 50 - len(kept) - 1


def test_one_huge_text_is_cut_to_fit() -> None:
    out = fit_items({"id": 1, "text": "lorem ipsum " * 5000}, 200, texts=("text",))
    assert tokens_of(out) <= 200
    assert out["text"].startswith("lorem ipsum") and out["truncated"] is True


def test_a_frame_larger_than_the_budget_is_refused_clearly() -> None:
    with pytest.raises(BudgetTooSmall, match="too small"):
        fit_items({"name": "x" * 3000, "items": []}, 100, texts=())


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 40),
    words=st.integers(1, 80),
    budget=st.integers(150, 3000),
)
def test_never_over_budget(n: int, words: int, budget: int) -> None:
    out = fit_items({"query": "q", "items": items(n, words)}, budget)
    assert tokens_of(out) <= budget


def tree(depth: int, fan: int, prefix: str = "n") -> dict[str, Any]:
    kids = [] if depth == 0 else [tree(depth - 1, fan, f"{prefix}.{i}") for i in range(fan)]
    return {"id": prefix, "text": f"node {prefix} " * 5, "children": kids}


def ids_of(forest: list[dict[str, Any]]) -> list[str]:
    out = []
    for n in forest:
        out.append(n["id"])
        out.extend(ids_of(n["children"]))
    return out


def test_a_tree_loses_its_deepest_nodes_first() -> None:
    out = fit_tree({"roots": [tree(3, 3)]}, 300)
    kept = ids_of(out["roots"])
    assert tokens_of(out) <= 300
    assert "n" in kept and out["truncated"] is True and out["omitted"] > 0
    deepest_kept = max(k.count(".") for k in kept)
    shallow_dropped = [k for k in ids_of([tree(3, 3)]) if k not in kept and k.count(".") < 2]
    assert deepest_kept <= 2 or not shallow_dropped


def test_a_tree_that_fits_keeps_every_node() -> None:
    out = fit_tree({"roots": [tree(2, 2)]}, 5000)
    assert ids_of(out["roots"]) == ids_of([tree(2, 2)])
    assert out["truncated"] is False
