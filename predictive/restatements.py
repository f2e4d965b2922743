"""Memories that say again what a better one in the same context already says (a squashed
commit repeating its parent's message, a rule restated in a commit): the context shows it once."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

_WORD = re.compile(r"\w+")
MIN_SHINGLES = 6
"""A text of fewer word triples ("up", "fix typo") is too short to call a restatement."""
RESTATED = 0.8
"""The share of a text's word triples another text must hold for it to be a restatement."""


def shingles(text: str) -> frozenset[int]:
    """The text's word triples, lowercased, each kept as its hash: sets of integers intersect
    without hashing every triple again, as sets of tuples (whose hash is not stored) would."""
    w = _WORD.findall(text.lower())
    return frozenset(map(hash, zip(w, w[1:], w[2:], strict=False)))


def restated(ranked: Iterable[tuple[int, str]], keep: Collection[int] = ()) -> set[int]:
    """The ids (best first in ``ranked``) whose text a better-ranked one already holds; ``keep``
    (two sides of an open contradiction: one changed word is the point) are never dropped.

    A text is compared with each kept one only when all kept texts together hold enough of its
    triples: no single one can hold more than they all do, and most texts share few triples with
    any other, so one intersection with their union settles them."""
    kept: list[frozenset[int]] = []
    union: set[int] = set()
    out: set[int] = set()
    for mid, text in ranked:
        s = shingles(text)
        if mid not in keep and len(s) >= MIN_SHINGLES:
            need = RESTATED * len(s)
            if len(s & union) >= need and any(len(s & k) >= need for k in kept):
                out.add(mid)
                continue
        kept.append(s)
        union |= s
    return out
