"""How MCP answers are shaped, without a server: search results in their richest whole form
the budget allows, and the context's expansion hint naming the MCP tool."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from predictive.fit_to_budget import tokens_of
from predictive.render import title
from server.mcp_server.shaping import (
    LABEL_ONLY,
    Form,
    fit_richest,
    for_agents,
    memory_forms,
    passage_forms,
)
from storage import MemoryStore, NewMemory

SENTENCE = "The nightly export retries each failed invoice once more before it alerts."


def results(n: int) -> tuple[dict[str, Any], list[list[Form]]]:
    items = [{"id": i + 1, "label": f"note {i + 1}"} for i in range(n)]
    full = " ".join([SENTENCE] * 12)
    forms: list[list[Form]] = [
        [
            ("full", full),
            ("summary", f"{SENTENCE} {SENTENCE}"),
            ("compressed", SENTENCE),
            LABEL_ONLY,
        ]
        for _ in items
    ]
    return {"query": "export", "count": n, "items": items}, forms


def test_best_results_come_in_full_and_the_rest_in_whole_shorter_forms() -> None:
    payload, forms = results(8)
    for budget in (120, 200, 400, 700, 1200, 3000):
        out = fit_richest(payload, budget, forms)
        assert tokens_of(out) <= budget, budget
        levels = [i.get("shortened", "full") for i in out["items"]]
        order = ["full", "summary", "compressed", "label"]
        assert [order.index(lv) for lv in levels] == sorted(order.index(lv) for lv in levels)
        for item in out["items"]:
            text = item.get("text")
            assert text is None or text.endswith(".")  # whole sentences only
        shortened = [i["id"] for i in out["items"] if "shortened" in i]
        assert out.get("shortened", []) == shortened
        assert out["truncated"] is bool(shortened or out.get("omitted"))
    roomy = fit_richest(payload, 3000, forms)
    assert all("shortened" not in i for i in roomy["items"]) and "expand" not in roomy


def test_forms_that_are_cut_are_never_offered(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.db") as store:
        m = store.get(
            store.add(NewMemory(text="Retry policy: queues are retried. Alerts go to ops.")).id
        )
    m = dataclasses.replace(
        m, summary="Retry policy: queues are retried.", compressed="Retry policy: queues…"
    )
    assert [lv for lv, _ in memory_forms(m)] == ["full", "summary", "label"]
    assert passage_forms(None, "…the snippet…") == [("snippet", "…the snippet…"), LABEL_ONLY]


def test_the_context_title_points_agents_to_the_recall_tool() -> None:
    line = for_agents(title("src/api.py", "main", "coding"))
    assert "expand any #id with the `recall` tool (id, level)" in line
    assert "living-memory show" not in line
