"""The four-tier token budget: shares per activity, flow of unused budget, level choice.

Fitting is exact: every piece is measured with the o200k tokenizer, and the caller verifies
the rendered whole (see :func:`predictive.render.render_markdown`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from predictive.signals import Activity
from storage import Level


class Tier(str, enum.Enum):
    CRITICAL = "critical"
    RELEVANT = "relevant"
    BACKGROUND = "background"
    INDEX = "index"


TIERS: tuple[Tier, ...] = (Tier.CRITICAL, Tier.RELEVANT, Tier.BACKGROUND, Tier.INDEX)
DEFAULT_BUDGET = 8000
DEFAULT_SHARES: tuple[float, float, float, float] = (0.25, 0.375, 0.25, 0.125)
# Seed 003 scenario 2: debugging widens Critical (3,000 / 2,500 / 1,500 / 1,000 of 8,000).
DEFAULT_PROFILES: dict[Activity, tuple[float, float, float, float]] = {
    Activity.DEBUGGING: (0.375, 0.3125, 0.1875, 0.125),
    Activity.FEATURE: (0.25, 0.375, 0.25, 0.125),
    Activity.REVIEW: (0.3, 0.35, 0.25, 0.1),
    Activity.REFACTOR: (0.25, 0.4, 0.25, 0.1),
    Activity.DEPLOY: (0.3, 0.25, 0.35, 0.1),
}
MIN_BUDGET = 50
MAX_BUDGET = 1_000_000


@dataclass(frozen=True)
class BudgetConfig:
    """Total tokens and the tier split, with per-activity profiles."""

    total: int = DEFAULT_BUDGET
    shares: tuple[float, float, float, float] = DEFAULT_SHARES
    profiles: dict[Activity, tuple[float, float, float, float]] = field(
        default_factory=lambda: dict(DEFAULT_PROFILES)
    )

    def __post_init__(self) -> None:
        if not MIN_BUDGET <= self.total <= MAX_BUDGET:
            raise ValueError(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} tokens")
        for name, shares in [("shares", self.shares), *self.profiles.items()]:
            check_shares(shares, str(getattr(name, "value", name)))

    def shares_for(self, activity: Activity | None) -> tuple[float, float, float, float]:
        if activity is not None and activity in self.profiles:
            return self.profiles[activity]
        return self.shares

    def split(self, activity: Activity | None = None, total: int | None = None) -> dict[Tier, int]:
        """Integer budgets per tier, summing exactly to the total."""
        total = self.total if total is None else total
        shares = self.shares_for(activity)
        raw = [total * s / sum(shares) for s in shares]
        out = [int(r) for r in raw]
        # largest remainders get the tokens lost to rounding
        for i in sorted(range(4), key=lambda i: raw[i] - out[i], reverse=True)[: total - sum(out)]:
            out[i] += 1
        return dict(zip(TIERS, out))


def check_shares(shares: Sequence[float], name: str = "shares") -> None:
    if len(shares) != 4:
        raise ValueError(f"{name}: four tier shares are needed, got {len(shares)}")
    if any(s < 0 for s in shares) or sum(shares) <= 0:
        raise ValueError(f"{name}: shares must be non-negative and not all zero")
    if abs(sum(shares) - 1.0) > 0.01:
        raise ValueError(f"{name}: shares must add up to 1 (they add up to {sum(shares):.3f})")


LEVEL_ORDER: tuple[Level, ...] = (Level.FULL, Level.SUMMARY, Level.COMPRESSED, Level.INDEX)
MIN_LINE_TOKENS = 3  # no rendered line ("- #1 x" + newline) costs less


@dataclass
class Candidate:
    """Something that may go into a tier: its score and its rendering at each level."""

    key: str  # unique across tiers ("m12", "c3", "topics")
    score: float
    renderings: dict[Level, str]  # already-formatted lines, richest first
    memory_id: int | None = None
    _levels: tuple[Level, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        self._levels = tuple(lv for lv in LEVEL_ORDER if self.renderings.get(lv))

    def levels(self) -> tuple[Level, ...]:
        return self._levels


@dataclass
class Placed:
    candidate: Candidate
    level: Level
    tokens: int  # of the line with its newline

    @property
    def text(self) -> str:
        return self.candidate.renderings[self.level]


@dataclass
class TierFill:
    tier: Tier
    budget: int  # share after flow (what it was allowed to use)
    header: str
    header_tokens: int
    placed: list[Placed] = field(default_factory=list)

    @property
    def used(self) -> int:
        if not self.placed:
            return 0
        return self.header_tokens + sum(p.tokens for p in self.placed)


def _fit_tier(
    fill: TierFill,
    candidates: Sequence[Candidate],
    allowance: int,
    count: Callable[[str], int],
    taken: set[str],
) -> None:
    """Place candidates into ``fill`` within ``allowance`` tokens (header included).

    Pass 1 admits items best-score first at their leanest level above the bare index
    label (so many items fit); then rounds enrich every placed item, best first, one level
    at a time while it fits. Items placed elsewhere are skipped: nothing appears twice.
    """
    header_cost = 0 if fill.placed else fill.header_tokens
    remaining = allowance - fill.used - header_cost
    if remaining <= 0:
        return
    fresh = [c for c in candidates if c.key not in taken and c.levels()]
    fresh.sort(key=lambda c: (-c.score, c.key))
    admitted: list[Placed] = []
    for c in fresh:
        if remaining < MIN_LINE_TOKENS:
            break
        levels = c.levels()
        lean: list[Level] = [lv for lv in levels if lv is not Level.INDEX] or list(levels)
        for lv in reversed(lean):  # leanest first
            t = count(c.renderings[lv] + "\n")
            if t <= remaining:
                admitted.append(Placed(c, lv, t))
                remaining -= t
                taken.add(c.key)
                break
    if not admitted and not fill.placed:
        return  # an empty tier costs nothing, not even its header
    fill.placed.extend(admitted)
    # Enrich in rounds, best first: every item one level richer before any item two, so a
    # full tier shows more items with what matters in them rather than a few whole ones.
    grew = True
    while grew and remaining > 0:
        grew = False
        for p in sorted(fill.placed, key=lambda p: (-p.candidate.score, p.candidate.key)):
            richer = [
                lv
                for lv in p.candidate.levels()
                if LEVEL_ORDER.index(lv) < LEVEL_ORDER.index(p.level)
            ]
            for lv in reversed(richer):  # the next richer level that fits
                t = count(p.candidate.renderings[lv] + "\n")
                if t - p.tokens <= remaining:
                    remaining -= t - p.tokens
                    p.level, p.tokens = lv, t
                    grew = True
                    break


def fit_tiers(
    candidates: Mapping[Tier, Sequence[Candidate]],
    budgets: dict[Tier, int],
    headers: dict[Tier, str],
    count: Callable[[str], int],
) -> dict[Tier, TierFill]:
    """Fill tiers in order; unused budget flows down, then what is left flows back up.

    Costs are those of the rendered form (see :func:`predictive.render.render_markdown`):
    each item is a line with its newline, each tier header a blank line, the header and its
    newline, so the parts add up to the document."""
    fills = {t: TierFill(t, 0, headers[t], count("\n" + headers[t] + "\n")) for t in TIERS}
    taken: set[str] = set()
    carry = 0
    for t in TIERS:
        allowance = budgets[t] + carry
        fills[t].budget = allowance
        _fit_tier(fills[t], candidates.get(t, ()), allowance, count, taken)
        carry = allowance - fills[t].used
    # What is left at the end flows back up, most important tier first.
    for t in TIERS:
        if carry <= 0:
            break
        before = fills[t].used
        allowance = before + carry
        _fit_tier(fills[t], candidates.get(t, ()), allowance, count, taken)
        gained = fills[t].used - before
        if gained:
            fills[t].budget = max(fills[t].budget, allowance)
        carry -= gained
    return fills
