"""Serving old episodes shorter: older than :data:`SUMMARY_AFTER_DAYS` days an episode is
served at most at its summary, older than :data:`COMPRESSED_AFTER_DAYS` at most at its
compressed line. The full text stays stored and is one ``recall`` away."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from predictive.consolidation.plan import Change
from storage.models import Kind, Level
from storage.upkeep import Brief

DAY = 86_400.0
SUMMARY_AFTER_DAYS = 7.0
COMPRESSED_AFTER_DAYS = 30.0
_ORDER = (Level.FULL, Level.SUMMARY, Level.COMPRESSED, Level.INDEX)


def serving_level(kind: Kind | str, created_at: float, now: float) -> Level:
    """The richest level a memory of this kind and age is served at."""
    if Kind(kind) is not Kind.EPISODE:
        return Level.FULL
    age = (now - created_at) / DAY
    if age > COMPRESSED_AFTER_DAYS:
        return Level.COMPRESSED
    if age > SUMMARY_AFTER_DAYS:
        return Level.SUMMARY
    return Level.FULL


def cap_renderings(renderings: dict[Level, str], cap: Level) -> dict[Level, str]:
    """``renderings`` without the levels richer than ``cap`` (unchanged when nothing at or
    below ``cap`` besides the bare index label would be left)."""
    if cap is Level.FULL:
        return renderings
    limit = _ORDER.index(cap)
    kept = {lv: r for lv, r in renderings.items() if _ORDER.index(lv) >= limit}
    if not any(lv is not Level.INDEX for lv in kept):
        return renderings
    return kept


def plan_compression(
    current: Sequence[Brief], *, now: float, since: float | None, label: Callable[[Brief], str]
) -> list[Change]:
    """A ``compress`` change per episode whose serving level got shorter since ``since`` (the
    previous consolidation; None: ever)."""
    out = []
    for b in current:
        if b.kind != Kind.EPISODE.value:
            continue
        level = serving_level(b.kind, b.created_at, now)
        before = Level.FULL if since is None else serving_level(b.kind, b.created_at, since)
        if level is before:
            continue
        days = COMPRESSED_AFTER_DAYS if level is Level.COMPRESSED else SUMMARY_AFTER_DAYS
        out.append(
            Change(
                "compress",
                (b.id,),
                (label(b),),
                f"older than {days:.0f} days: served at its {level.value} level (full text kept)",
                {"level": level.value},
            )
        )
    return out
