"""Rendering: memory lines at each level, the Markdown document and its JSON account."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from predictive.budget import TIERS, Tier, TierFill
from storage import Contradiction, Level, Memory

TIER_TITLES: dict[Tier, str] = {
    Tier.CRITICAL: "## Critical — decisions, contradictions and errors for this file",
    Tier.RELEVANT: "## Relevant — what this file, its imports and the branch predict",
    Tier.BACKGROUND: "## Background — conventions, history, workflow",
    Tier.INDEX: "## Index — ask me about",
}


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d")


def provenance(m: Memory) -> str:
    """Where a memory came from: ADR file, commit, chat session, or its source."""
    for a in m.artifacts:
        if a.type == "commit":
            return f"commit {a.ref[:10]}"
        if a.type in ("adr", "file"):
            return f"{a.type} {a.ref}"
        if a.type in ("session", "chat"):
            return f"chat {a.ref}"
        return f"{a.type} {a.ref}"
    if m.source_id:
        return f"{m.source} {m.source_id}"
    return m.source


def _flat(text: str) -> str:
    return " ".join(text.split())


def memory_renderings(m: Memory, levels: dict[str, str]) -> dict[Level, str]:
    """One Markdown list item per level; ``levels`` supplies texts the memory lacks."""
    summary = m.summary or levels.get("summary")
    compressed = m.compressed or levels.get("compressed")
    label = m.index_label or levels.get("index_label")
    head = f"{m.kind.value} #{m.id} · {provenance(m)} · since {_date(m.valid_from)}"
    body = m.text.strip()
    full = f"- [{head}]\n" + "\n".join("  " + line for line in body.splitlines())
    out: dict[Level, str] = {Level.FULL: full}
    if summary:
        out[Level.SUMMARY] = f"- [{head}] {_flat(summary)}"
    if compressed:
        out[Level.COMPRESSED] = f"- [{head}] {_flat(compressed)}"
    if label:
        out[Level.INDEX] = f"- #{m.id} {_flat(label)}"
    return out


def contradiction_renderings(
    c: Contradiction, a: Memory, b: Memory, short: Callable[[Memory], str]
) -> dict[Level, str]:
    """An open contradiction: both sides, so the assistant does not pick one blindly."""
    reason = f" ({_flat(c.reason)})" if c.reason else ""
    return {
        Level.SUMMARY: (
            f"- ⚠ open contradiction c{c.id}{reason}: #{a.id} «{_flat(short(a))}» vs "
            f"#{b.id} «{_flat(short(b))}» — ask before relying on either"
        ),
        Level.COMPRESSED: f"- ⚠ contradiction c{c.id}: #{a.id} vs #{b.id}{reason}",
        Level.INDEX: f"- ⚠ c{c.id}: #{a.id} vs #{b.id}",
    }


def topic_renderings(topics: list[tuple[str, int, list[int]]]) -> dict[Level, str]:
    """The topic index at four sizes ("auth (12)"): what else to ask about. Its memories are
    this context's own candidates, shown above or pointed at by id, so no ids are repeated."""
    if not topics:
        return {}

    def line(n: int) -> str:
        return "Ask me about: " + ", ".join(f"{label} ({count})" for label, count, _ in topics[:n])

    return {
        Level.FULL: line(30),
        Level.SUMMARY: line(15),
        Level.COMPRESSED: line(10),
        Level.INDEX: line(4),
    }


def title(path: str, branch: str | None, activity: str) -> str:
    bits = [f"# Project memory for `{path}`"]
    ctx = [f"activity: {activity}"]
    if branch:
        ctx.insert(0, f"branch: {branch}")
    bits.append("_" + " · ".join(ctx) + " · expand any #id with `living-memory show ID`_")
    return "\n".join(bits)


def render_markdown(doc_title: str, fills: dict[Tier, TierFill]) -> str:
    """Title line(s), then per non-empty tier: a blank line, its header, one line per item.

    Pieces are laid out exactly as :func:`predictive.budget.fit_tiers` costs them."""
    parts = [doc_title + "\n"]
    for t in TIERS:
        f = fills[t]
        if f.placed:
            parts.append("\n" + f.header + "\n")
            parts.extend(p.text + "\n" for p in f.placed)
    return "".join(parts)


def account(fills: dict[Tier, TierFill], total: int, budget: int) -> dict[str, Any]:
    """Tokens per tier and the items with their level and score."""
    return {
        "total": total,
        "budget": budget,
        "tiers": {
            t.value: {
                "used": fills[t].used,
                "budget": fills[t].budget,
                "items": len(fills[t].placed),
            }
            for t in TIERS
        },
    }
