"""What earns a place in a file's context, and in which tier.

The context is paid for on every request, so the budget is a ceiling, not a quota: a memory
gets in because something ties it to the file on screen (an anchor on the file, its module,
package, imports or symbols, a rule glob that matches it, the error in it, the branch), or
because it matches the file's topic strongly; never to fill space. The project's own rules
are part of it, also those an AI tool loads by itself: :func:`loaded_by` names those tools, so
only the file injected for that tool leaves them out. Commits count only for the files they
touched.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from predictive.budget import Tier
from storage import Kind, Memory

# Reasons that tie a memory to the file itself rather than to words it shares with it.
TIES = frozenset(
    {
        "file",
        "paired",
        "module",
        "package",
        "import",
        "symbol",
        "glob",
        "glob-any",
        "path",
        "topic",
        "named",
        "error",
    }
)
LOCAL = frozenset({"file", "paired", "module", "package", "symbol", "glob", "path"})
UNTIED_FLOOR = 0.55
"""An untied memory (found by words or meaning alone) must be at least this relevant."""
MAX_UNTIED = 6
UNTIED_PER_TIED = 4
"""One untied memory at most for this many tied ones."""
MAX_PROJECT_WIDE = 3
"""Project-wide conventions and preferences not tied to the file: at most this many."""
COMMIT_WEIGHT = 0.6
"""History ranks after predicted knowledge (conversations, fixes, decisions) of equal tie."""
LOADED_BY: dict[str, frozenset[str]] = {
    "claude": frozenset({"claude"}),
    "agents": frozenset({"cursor", "copilot", "codex"}),
    "cursorrules": frozenset({"cursor"}),
    "cursor-mdc": frozenset({"cursor"}),
    "copilot": frozenset({"copilot"}),
    "copilot-instructions": frozenset({"copilot"}),
}
"""The AI tools that read each kind of always-applied rule file themselves."""


MANY_FILES = 8
"""A commit that touched more files than this says less about any one of them."""


@dataclass(frozen=True)
class Choice:
    tier: Tier
    weight: float = 1.0


def loaded_by(m: Memory) -> frozenset[str]:
    """The AI tools that read this rule from its own file on every request (a root
    ``CLAUDE.md``, ``AGENTS.md``, ``.cursorrules``, Copilot's instructions, an always-applied
    Cursor rule); none for a nested or glob-scoped rule, which tools load only once they
    touch its folder or files."""
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    if m.source != "rules" or not meta.get("alwaysApply"):
        return frozenset()
    return LOADED_BY.get(str(meta.get("kind")), frozenset())


def commit_weight(m: Memory) -> float:
    """How much a commit says about each file it touched: less the more files it touched (a
    sweep, a shallow clone's boundary), more when its message explains (a body, a fix, a
    revert)."""
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    count = meta.get("fileCount")
    n = count if isinstance(count, int) and count > 0 else 1
    spread = 1.0 / (1.0 + max(0.0, math.log(n / MANY_FILES)))
    says = 1.0 if "\n" in m.text.strip() else 0.75
    if meta.get("reverts") or meta.get("conventional") in ("fix", "revert", "perf"):
        says = min(1.0, says + 0.15)
    return COMMIT_WEIGHT * spread * says


def tied(reasons: Iterable[str]) -> bool:
    return not TIES.isdisjoint(reasons)


def one_off(m: Memory) -> bool:
    """Commands run in one message of one conversation: how that task went, not how the
    project works, so it belongs to the files it touched, never to every file."""
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    return (
        m.kind is Kind.WORKFLOW and m.source.startswith("chat:") and meta.get("rule") == "workflow"
    )


def admit(
    candidates: Iterable[tuple[Memory, float, frozenset[str]]],
) -> set[int]:
    """The ids of the candidates (memory, relevance, reasons) that earn a place."""
    untied: list[tuple[float, int]] = []
    wide: list[tuple[float, int]] = []
    kept: set[int] = set()
    for m, relevance, reasons in candidates:
        if m.source == "git":  # a commit belongs to the files it touched (or the error)
            if reasons & {"file", "paired", "error", "branch", "named", "session"}:
                kept.add(m.id)  # or a commit whose message names the file or its names
            continue
        if tied(reasons) or "branch" in reasons:
            kept.add(m.id)
        elif relevance >= UNTIED_FLOOR:
            untied.append((relevance, m.id))
        elif reasons & {"background", "preference"} and m.source != "rules" and not one_off(m):
            wide.append((m.importance, m.id))  # a rule section gets in by its topic instead
    # what is found by words alone is at most a quarter of what is tied to the file (one at
    # least: a new file has nothing tied yet); project-wide conventions apply to every file
    room = max(1, len(kept) // UNTIED_PER_TIED)
    kept.update(i for _, i in sorted(untied, reverse=True)[: min(MAX_UNTIED, room)])
    kept.update(i for _, i in sorted(wide, reverse=True)[:MAX_PROJECT_WIDE])
    return kept


def place(m: Memory, reasons: frozenset[str], *, recent_fix: bool) -> Choice:
    """The tier a memory goes to, and the weight its score gets there."""
    local = bool(reasons & LOCAL)
    if "error" in reasons or (m.kind is Kind.SOLUTION and "file" in reasons and recent_fix):
        return Choice(Tier.CRITICAL)
    if m.kind is Kind.DECISION and local:
        return Choice(Tier.CRITICAL)
    if m.kind is Kind.CONVENTION and m.source == "rules" and local:
        return Choice(Tier.CRITICAL)  # a rule scoped to this file (glob, folder)
    if m.source == "git":
        return Choice(Tier.RELEVANT, commit_weight(m))
    if m.kind in (Kind.CONVENTION, Kind.WORKFLOW, Kind.SUMMARY, Kind.PREFERENCE) and not local:
        return Choice(Tier.BACKGROUND)
    return Choice(Tier.RELEVANT)
