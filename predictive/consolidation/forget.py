"""What consolidation forgets (archives, restorably, with the reason recorded).

- **superseded**: a memory replaced by another more than :data:`UNUSED_DAYS` days ago and not
  used since (it stays reachable through its successor's SUPERSEDES edge);
- **unused**: an episode neither cited ever nor served, changed or created in the last
  :data:`UNUSED_DAYS` days, although it was passed over since: the files it concerns were
  opened (a context served for them) :data:`PASSED_OVER` times, or — for a memory tied to no
  file — :data:`PASSED_OVER_ANYWHERE` contexts were served. Without that evidence (a project
  nobody opened, files nobody works on, a history just learned) nothing is unused.

Never forgotten this way: decisions, conventions, rules and every kind but episodes while
they still apply (only supersession ends them), anything important (importance ≥
:data:`KEEP_IMPORTANCE`), anything cited, and anything with an open contradiction.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Container, Mapping, Sequence
from datetime import datetime, timezone

from predictive.consolidation.plan import Change
from storage.upkeep import Brief

DAY = 86_400.0
UNUSED_DAYS = 90.0
PASSED_OVER = 10
"""Contexts served for a memory's files since it was last used, created or changed before it
counts as unused."""
PASSED_OVER_ANYWHERE = 50
"""The same for a memory tied to no file: contexts served for any file."""
KEEP_IMPORTANCE = 0.8
FORGETTABLE_KINDS = frozenset({"episode"})
"""Kinds that are forgotten when unused; the others only when superseded."""


def _date(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d")


def plan_forgetting(
    live: Sequence[Brief],
    *,
    now: float,
    served_at: Mapping[str, Sequence[float]],
    files: Mapping[int, set[str]],
    protected: Container[int],
    label: Callable[[Brief], str],
) -> list[Change]:
    """One ``forget`` change per memory to archive; ``protected`` ids are kept whatever
    (open contradictions, memories another change is about)."""
    horizon = now - UNUSED_DAYS * DAY
    out: list[Change] = []
    for b in live:
        if b.id in protected or b.citation_count > 0 or b.importance >= KEEP_IMPORTANCE:
            continue
        last_use = b.last_accessed or 0.0
        if b.superseded_by is not None:
            ended = b.valid_to if b.valid_to is not None else b.updated_at
            if ended <= horizon and last_use <= horizon:
                out.append(
                    Change(
                        "forget",
                        (b.id, b.superseded_by),
                        (label(b),),
                        f"superseded by #{b.superseded_by} on {_date(ended)}, "
                        f"unused for {UNUSED_DAYS:.0f} days since",
                        {"kind": "superseded"},
                    )
                )
            continue
        if b.kind not in FORGETTABLE_KINDS:
            continue
        since = max(b.created_at, b.updated_at, last_use)
        if since > horizon:
            continue
        own = files.get(b.id)
        lists = [served_at.get(f, ()) for f in own] if own else [served_at.get("", ())]
        passed = sum(len(t) - bisect.bisect_right(t, since) for t in lists)
        if passed < (PASSED_OVER if own else PASSED_OVER_ANYWHERE):
            continue
        used = "never used" if b.last_accessed is None else f"last used {_date(last_use)}"
        out.append(
            Change(
                "forget",
                (b.id,),
                (label(b),),
                f"unused for {UNUSED_DAYS:.0f} days ({used}; passed over in {passed} "
                f"contexts served {'for its files' if own else 'since'})",
                {"kind": "unused"},
            )
        )
    return out
