"""How MCP answers read to an agent: search results in their richest form the budget allows,
and the context's pointers to the MCP tools rather than to the command line.

A search result's text comes in whole forms only, richest first: the full text, then the
summary, then the compressed line (a form that is itself cut, ending in "…", is never used),
and last none at all (the result's label stays). Every result starts at its shortest form;
then, best result first, each takes the richest form that still fits the budget. Nothing is
cut in the middle of a sentence; a result given shorter than in full says so (``shortened``:
the form it was given in), and ``recall`` gives its whole text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from predictive.operations import Found, count_tokens, dumps, fill_levels, fit_items, tokens_of
from storage import Memory, MemoryStore, passages

Form = tuple[str, str | None]
"""(level, text) of one form of a result's text: ``full``, ``summary``, ``compressed``, or
``label`` with no text."""

LABEL_ONLY: Form = ("label", None)
EXPAND = 'recall(id, level="full") gives a shortened result\'s whole text'

_CLI_EXPAND = re.compile(r"`living-memory show ID`")
_MCP_EXPAND = "the `recall` tool (id, level)"


def for_agents(markdown: str) -> str:
    """The context's markdown with its expansion hint naming the MCP ``recall`` tool instead
    of the CLI command (the title is rendered for every front door alike)."""
    return _CLI_EXPAND.sub(_MCP_EXPAND, markdown)


def _whole(text: str | None) -> bool:
    """Whether a shorter form can stand as it is (not cut off with an ellipsis)."""
    t = (text or "").rstrip()
    return bool(t) and not t.endswith(("…", "..."))


def memory_forms(m: Memory) -> list[Form]:
    """A memory's forms, richest first, each shorter than the one before."""
    levels = fill_levels(m) if not (m.summary and m.compressed) else {}
    candidates = [
        ("summary", m.summary or levels.get("summary")),
        ("compressed", m.compressed or levels.get("compressed")),
    ]
    return _shorter_first([("full", m.text), *candidates])


def passage_forms(text: str | None, snippet: str) -> list[Form]:
    """A conversation passage (no memory of its own): in full (else the search's snippet of
    it, which says so), or only by its label."""
    return [("full", text) if text else ("snippet", snippet), LABEL_ONLY]


def _shorter_first(forms: Sequence[tuple[str, str | None]]) -> list[Form]:
    """The forms that are whole and each shorter than the last kept one, then label only."""
    out: list[Form] = []
    last = None
    for level, text in forms:
        if text is None or (level != "full" and not _whole(text)):
            continue
        n = count_tokens(text)
        if last is None or n < last:
            out.append((level, text))
            last = n
    return [*out, LABEL_ONLY]


def passage_texts(store: MemoryStore, found: Sequence[Found]) -> dict[int, str]:
    """Full texts of the best passage of each result that has no memory."""
    ids = [r.passage_ids[0] for r in found if r.memory is None and r.passage_ids]
    if not ids:
        return {}
    return passages.texts(store.conn, ids)


def _with_form(item: dict[str, Any], form: Form) -> dict[str, Any]:
    level, text = form
    out = {k: v for k, v in item.items() if k not in ("text", "shortened")}
    if text is not None:
        out["text"] = text
    if level != "full":
        out["shortened"] = level
    return out


def fit_richest(
    payload: dict[str, Any], budget: int, forms: Sequence[Sequence[Form]], *, items: str = "items"
) -> dict[str, Any]:
    """``payload`` within ``budget`` tokens, each of ``payload[items]`` (``forms[i]``: its
    forms, richest first, the last one the shortest) in the richest form that fits, best
    item first; items that do not fit even in their shortest form are dropped from the end
    (``omitted``). Shortened items are listed by id in ``shortened``."""
    listed = list(payload.get(items) or [])
    chosen = [len(f) - 1 for f in forms]
    shortest = [_with_form(it, f[-1]) for it, f in zip(listed, forms)]
    # the frame as its largest: every kept item shortened (the list and the note only shrink)
    frame = {**payload, items: shortest, **_shortened_keys(shortest)}
    out = fit_items(frame, budget, items=items, texts=())
    kept: list[dict[str, Any]] = list(out[items])
    used = tokens_of(out)
    upgraded: list[tuple[int, int]] = []  # (item, its form before), in the order taken
    for i, item in enumerate(kept):
        cost = count_tokens(dumps(item))
        for j, form in enumerate(forms[i][: chosen[i]]):
            richer = _with_form(item, form)
            extra = count_tokens(dumps(richer)) - cost
            if used + extra <= budget:
                upgraded.append((i, chosen[i]))
                kept[i], chosen[i], used = richer, j, used + extra
                break

    def assemble() -> dict[str, Any]:
        body = {k: v for k, v in out.items() if k not in ("shortened", "expand")}
        cut = bool(out.get("omitted")) or any("shortened" in it for it in kept)
        return {**body, items: list(kept), **_shortened_keys(kept), "truncated": cut}

    result = assemble()
    while tokens_of(result) > budget and upgraded:  # counts of parts are nearly additive
        i, before = upgraded.pop()
        kept[i], chosen[i] = _with_form(kept[i], forms[i][before]), before
        result = assemble()
    return result


def _shortened_keys(listed: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``shortened``: the ids of the items given shorter than in full, and how to expand."""
    ids = [it["id"] for it in listed if "shortened" in it and it.get("id") is not None]
    return {"shortened": ids, "expand": EXPAND} if ids else {}
