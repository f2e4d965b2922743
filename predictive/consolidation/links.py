"""Links consolidation discovers between current memories (``RELATES_TO``, both ways):

- the same error signature (``error:`` anchors);
- the same files: at least :data:`MIN_SHARED_FILES` file anchors in common and a Jaccard
  overlap ≥ :data:`MIN_FILE_OVERLAP` (files that many memories touch, such as a README, do
  not count); for conversations this is "sessions that touch the same files";
- co-access: used together in at least :data:`MIN_CO_ACCESS` contexts, and at least
  :data:`MIN_LIFT` times as often as chance would put them together (memories served
  everywhere, such as project conventions, are not tied to each other by that);
- near duplicates (cosine ≥ :data:`predictive.consolidation.merge.SIMILAR`) that do not
  merge get ``SIMILAR_TO``.

Pairs already joined by any edge are left alone, and so are memories with
:data:`MAX_DEGREE` edges already; at most :data:`MAX_LINKS` new links a run, strongest first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from predictive.consolidation.plan import Change
from storage.upkeep import Brief, CoAccess

MIN_SHARED_FILES = 2
MIN_FILE_OVERLAP = 0.5
HUB = 50
"""A file anchored by more memories than this is a hub: sharing it says nothing (and pairing
its memories would be quadratic)."""
MAX_ERROR_GROUP = 20
MIN_CO_ACCESS = 5
MIN_LIFT = 3.0
MAX_DEGREE = 8
"""No link is added to a memory that already has this many (a hub links nothing)."""
MAX_CONTEXT = 12
"""Contexts serving more memories than this are not evidence of a tie between two of them."""
MAX_LINKS = 2000


def _pairs_sharing(groups: Iterable[set[int]]) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for ids in groups:
        ordered = sorted(ids)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                counts[(a, b)] += 1
    return counts


def plan_links(  # noqa: C901
    current: Mapping[int, Brief],
    *,
    files: Mapping[int, set[str]],
    errors: Mapping[int, set[str]],
    sessions: Mapping[int, set[int]],
    co_access: CoAccess,
    similar: Iterable[tuple[int, int, float]],
    linked: set[tuple[int, int]],
    excluded: set[int],
    label: Callable[[Brief], str],
) -> tuple[list[Change], int]:
    """``link`` changes, and how many more were found than :data:`MAX_LINKS` allows."""
    found: dict[tuple[int, int], tuple[str, float, str]] = {}

    def offer(a: int, b: int, edge: str, strength: float, reason: str) -> None:
        key = (min(a, b), max(a, b))
        if key in linked or a in excluded or b in excluded:
            return
        if a not in current or b not in current:
            return
        if key not in found or found[key][1] < strength:
            found[key] = (edge, round(min(1.0, strength), 4), reason)

    for a, b, sim in similar:
        if current[a].kind == current[b].kind:
            offer(a, b, "SIMILAR_TO", sim, f"near duplicates (cosine {sim:.3f})")

    by_error: dict[str, set[int]] = defaultdict(set)
    for mid, values in errors.items():
        for v in values:
            by_error[v].add(mid)
    for sig, ids in by_error.items():
        if 2 <= len(ids) <= MAX_ERROR_GROUP:
            for a, b in _pairs_sharing([ids]):
                offer(a, b, "RELATES_TO", 0.7, f"same error signature {sig}")

    by_file: dict[str, set[int]] = defaultdict(set)
    for mid, values in files.items():
        if mid in current:
            for v in values:
                by_file[v].add(mid)
    hub = HUB
    useful = [ids for ids in by_file.values() if 2 <= len(ids) <= hub]
    for (a, b), shared in _pairs_sharing(useful).items():
        if shared < MIN_SHARED_FILES:
            continue
        fa = {f for f in files[a] if len(by_file[f]) <= hub}
        fb = {f for f in files[b] if len(by_file[f]) <= hub}
        overlap = len(fa & fb) / max(1, len(fa | fb))
        if overlap < MIN_FILE_OVERLAP:
            continue
        common = sorted(fa & fb)
        named = ", ".join(common[:3]) + (f" and {len(common) - 3} more" if len(common) > 3 else "")
        what = "sessions touch" if sessions.get(a) and sessions.get(b) else "touch"
        offer(a, b, "RELATES_TO", 0.3 + 0.5 * overlap, f"{what} the same files: {named}")

    total = co_access.contexts
    for (a, b), n in co_access.pairs.items():
        if n < MIN_CO_ACCESS:
            continue
        lift = n * total / (co_access.single[a] * co_access.single[b])
        if lift >= MIN_LIFT:
            offer(a, b, "RELATES_TO", min(0.9, 0.3 + 0.1 * n), f"used together in {n} contexts")

    degree: dict[int, int] = defaultdict(int)
    for a, b in linked:
        degree[a] += 1
        degree[b] += 1
    ranked = []
    for (a, b), (edge, strength, reason) in sorted(
        found.items(), key=lambda kv: (-kv[1][1], kv[0])
    ):
        if degree[a] >= MAX_DEGREE or degree[b] >= MAX_DEGREE:
            continue
        degree[a] += 1
        degree[b] += 1
        ranked.append(
            Change(
                "link",
                (a, b),
                (label(current[a]), label(current[b])),
                reason,
                {"edge": edge, "strength": strength},
            )
        )
    return ranked[:MAX_LINKS], max(0, len(ranked) - MAX_LINKS)
