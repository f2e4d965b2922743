"""Rendering: memory lines at each level, the Markdown document and its JSON account."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from predictive.budget import TIERS, Tier, TierFill
from predictive.chat_excerpts import Said
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
    """Where a memory came from: ADR file, commit, chat session, a teammate, or its source."""
    shared = m.metadata.get("shared")
    if isinstance(shared, dict) and shared.get("path"):
        by = f" by {shared['by']}" if shared.get("by") else ""
        when = f" {_date(shared['at'])}" if isinstance(shared.get("at"), int | float) else ""
        return f"shared{by}{when} ({shared['path']})"
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


_BLOCK_START = re.compile(r"\s*(?:[-*+]\s|\d+[.)]\s|#{1,6}\s|\||>|```)")


def unwrapped(text: str) -> str:
    """``text`` with its hard-wrapped paragraphs and list items joined into one line each
    (a commit body wrapped at 72 columns), code blocks, headings and tables as they are."""
    out: list[str] = []
    in_code = False
    for line in text.splitlines():
        fence = line.strip().startswith("```")
        joins = (
            not in_code
            and not fence
            and line.strip()
            and out
            and out[-1].strip()
            and not _BLOCK_START.match(line)
            and not re.match(r"\s*(?:#{1,6}\s|\||```)", out[-1])
        )
        if joins:
            out[-1] = f"{out[-1].rstrip()} {line.strip()}"
        else:
            out.append(line)
        if fence:
            in_code = not in_code
    return "\n".join(out)


_SENTENCE_END = re.compile(r"[.!?][)\]\"'`*]*(?=\s)")
MAX_POINTER_CHARS = 140


def whole(text: str | None) -> str | None:
    """``text`` when it is whole; a short form cut mid-phrase (ending in "…", or starting
    with "→" after its subject was dropped) is cut back to its last whole sentence, or is
    None when it has none."""
    if not text:
        return None
    t = _flat(text)
    if t.startswith("→"):
        return None
    if not t.endswith("…"):
        return t
    ends = [m.end() for m in _SENTENCE_END.finditer(t)]
    return t[: ends[-1]] if ends else None


def pointer(m: Memory, label: str | None) -> str | None:
    """The few words an Index line names a memory with: its label when whole, else the
    first line of its text (a commit's subject, a section's heading) when short enough."""
    if label and not _flat(label).endswith("…"):
        return _flat(label)
    first = _flat(m.text.strip().split("\n", 1)[0]) if m.text.strip() else ""
    if first and len(first) <= MAX_POINTER_CHARS:
        return first
    return whole(label) or _lead(label or first)


def _lead(text: str) -> str | None:
    """The words of a cut label up to its last clause mark ("Billing note 3: Invoice 3-0…" →
    "Billing note 3"), or None when that leaves fewer than two words."""
    t = _flat(text).rstrip("…").rstrip()
    marks = [m.start() for m in re.finditer(r"[:;,(]|\s[—–-]\s", t)]
    for end in reversed(marks):
        lead = t[:end].strip()
        if len(lead.split()) >= 2:
            return lead
    return None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def restated(subject: str, body: str) -> tuple[str, str]:
    """A subject that is the start of the body run into one line (some tools write a commit
    message twice: flattened, then as lines) as the body's first line, which the body then no
    longer repeats; any other subject and body as they are."""
    text = body.strip()
    first, _, rest = text.partition("\n")
    said = _words(subject)
    if not rest.strip() or len(said) <= len(_words(first)) or _words(text)[: len(said)] != said:
        return subject, body
    return _flat(first), rest.lstrip("\n")


def commit_renderings(
    m: Memory,
    lines: list[str],
    label: str | None,
    body: str | None = None,
    *,
    complete: bool = True,
) -> dict[Level, str]:
    """A commit: its whole message (``body``: the part of its body to show; not when
    ``complete`` is false); its subject with the sentences of its body that matter for the file
    (``lines``); its subject alone. The subject is never cut."""
    head = f"commit {provenance(m).removeprefix('commit ')} · #{m.id} · {_date(m.valid_from)}"
    subject, _, whole = m.text.strip().partition("\n")
    body = whole if body is None else body
    subject, body = restated(_flat(subject), body)
    lines = [x for x in lines if _words(x) != _words(subject)]
    out: dict[Level, str] = {}
    if body.strip():
        if complete:
            out[Level.FULL] = f"- [{head}] {subject}\n" + "\n".join(
                "  " + line for line in unwrapped(body.strip()).splitlines()
            )
        if lines:
            out[Level.SUMMARY] = f"- [{head}] {subject}" + "".join(
                f"\n  - {_flat(x)}" for x in lines
            )
    else:
        out[Level.FULL] = f"- [{head}] {subject}"
    out[Level.COMPRESSED] = f"- [{head}] {subject}"
    short = pointer(m, label)
    if short:
        out[Level.INDEX] = f"- #{m.id} {short}"
    return out


def chat_renderings(
    m: Memory, said: Sequence[Said], short: int, label: str | None
) -> dict[Level, str]:
    """A conversation tied to the file: what was said about the file (the requests, the
    decisions, the diagnoses and fixes), all of it or the ``short`` best, or its title."""
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    title = _flat(str(meta.get("sessionTitle") or meta.get("session") or "conversation"))
    head = f"conversation #{m.id} · {meta.get('tool') or m.source} · {_date(m.valid_from)}"

    def lines(chosen: Sequence[Said]) -> str:
        return "".join(f"\n  - {x.role}: {_flat(x.text)}" for x in chosen)

    best = sorted(sorted(said, key=lambda x: -x.score)[:short], key=lambda x: x.idx)
    out = {
        Level.FULL: f"- [{head}] {title}{lines(said)}",
        Level.SUMMARY: f"- [{head}] {title}{lines(best)}",
        Level.COMPRESSED: f"- [{head}] {title}",
    }
    if label:
        out[Level.INDEX] = f"- #{m.id} {label}"
    return out


def memory_renderings(m: Memory, levels: dict[str, str]) -> dict[Level, str]:
    """One Markdown list item per level; ``levels`` supplies texts the memory lacks. A short
    form cut mid-phrase is cut back to a whole sentence or left out."""
    summary = whole(m.summary or levels.get("summary"))
    compressed = whole(m.compressed or levels.get("compressed"))
    label = pointer(m, m.index_label or levels.get("index_label"))
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
