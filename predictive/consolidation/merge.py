"""Which memories fold into one: the same text but for case and punctuation (any kind), and
series of short episodes that differ only in numbers, versions or hashes (release bots).

Memories with an open contradiction are left to the user. Everything else that merely looks
alike — two decisions about different services, two
settings with different values — is at most linked as similar, never merged.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from predictive.consolidation.plan import Change
from storage.upkeep import Brief

SIMILAR = 0.95
"""Cosine similarity from which two memories of one kind are linked as near duplicates."""
MAX_PAIRING = 20_000
"""Kinds with more current memories than this are not paired (exact pairing is quadratic)."""
BLOCK = 1024
SERIES_MAX_CHARS = 300
"""Only short episodes (a bot's one-line message) can be a series."""
CURATED = ("rules", "adr")

_WORD = re.compile(r"[a-z0-9]+")
_VARIABLE = re.compile(
    r"(?<![a-z0-9])(?:v?\d+(?:[._-]\d+)*(?:[._-]?(?:rc|alpha|beta|dev|post|a|b)\d*)?"
    r"|[0-9a-f]{7,40})(?![a-z0-9])",
    re.IGNORECASE,
)
PLACEHOLDER = "0"


def exact_key(text: str) -> str:
    """The words of a text, lower-cased, without punctuation or spacing."""
    return " ".join(_WORD.findall(text.lower()))


def template_key(text: str) -> str:
    """The words of a text with every number, version and hash replaced by one placeholder."""
    return " ".join(_WORD.findall(_VARIABLE.sub(f" {PLACEHOLDER} ", text.lower())))


def _survivor(group: Sequence[Brief]) -> Brief:
    """Curated sources first, then the most cited and used, then the newest."""
    return max(
        group,
        key=lambda b: (
            b.source in CURATED,
            b.citation_count,
            b.retrieval_count,
            b.valid_from,
            b.id,
        ),
    )


def merge_groups(
    current: Sequence[Brief], sessions: dict[int, set[int]]
) -> list[tuple[Brief, list[Brief], str]]:
    """(survivor, absorbed, reason) for every group that folds into one memory."""
    by_exact: dict[tuple[str, str], list[Brief]] = defaultdict(list)
    for b in current:
        key = exact_key(b.text)
        if key:
            by_exact[(b.kind, key)].append(b)
    groups: list[tuple[list[Brief], str]] = []
    grouped: set[int] = set()
    for (kind, _), members in by_exact.items():
        if len(members) > 1 and _may_fold(kind, members, sessions):
            groups.append((members, "the same text but for case, spacing or punctuation"))
            grouped.update(b.id for b in members)
    by_template: dict[tuple[str, str], list[Brief]] = defaultdict(list)
    for b in current:
        if b.kind != "episode" or b.id in grouped or len(b.text) > SERIES_MAX_CHARS:
            continue
        key = template_key(b.text)
        words = key.split()
        if PLACEHOLDER in words and any(w != PLACEHOLDER for w in words):
            by_template[(b.source, key)].append(b)
    for (_, key), members in by_template.items():
        if len(members) > 1 and _may_fold("episode", members, sessions):
            shown = key.replace(f" {PLACEHOLDER}", " …")
            groups.append((members, f"a series of {len(members)} like «{shown}»"))
    out = []
    for members, reason in groups:
        keep = _survivor(members)
        rest = sorted((b for b in members if b.id != keep.id), key=lambda b: b.id)
        out.append((keep, rest, reason))
    return out


def _may_fold(kind: str, members: Sequence[Brief], sessions: dict[int, set[int]]) -> bool:
    """Episodes of different conversations are different events: they never fold."""
    if kind != "episode":
        return True
    seen = {frozenset(sessions.get(b.id, ())) for b in members}
    return len(seen) == 1


def similar_pairs(
    vectors_for: Callable[[list[int]], dict[int, np.ndarray]], ids: list[int]
) -> list[tuple[int, int, float]]:
    """Pairs (a < b) among ``ids`` whose vectors have cosine ≥ :data:`SIMILAR`."""
    vectors = vectors_for(ids)
    have = [i for i in ids if i in vectors]
    if len(have) < 2:
        return []
    mat = np.stack([vectors[i] for i in have]).astype(np.float32)
    out: list[tuple[int, int, float]] = []
    for start in range(0, len(have), BLOCK):
        sims = mat[start : start + BLOCK] @ mat.T
        rows, cols = np.nonzero(sims >= SIMILAR)
        for r, c in zip(rows.tolist(), cols.tolist()):
            a, b = start + r, c
            if a < b:
                out.append((have[a], have[b], float(sims[r, c])))
    return out


def plan_merges(
    current: Sequence[Brief], sessions: dict[int, set[int]], label: Callable[[Brief], str]
) -> list[Change]:
    """One ``merge`` change per group that folds."""
    return [
        Change(
            "merge",
            (keep.id, *(b.id for b in absorbed)),
            (label(keep), *(label(b) for b in absorbed)),
            reason,
        )
        for keep, absorbed, reason in merge_groups(current, sessions)
    ]
