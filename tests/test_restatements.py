"""Restatements: the union prefilter answers as comparing every pair would."""

from __future__ import annotations

import random

from predictive.restatements import MIN_SHINGLES, RESTATED, restated, shingles


def every_pair(ranked: list[tuple[int, str]], keep: set[int]) -> set[int]:
    kept: list[frozenset[int]] = []
    out: set[int] = set()
    for mid, text in ranked:
        s = shingles(text)
        if (
            mid not in keep
            and len(s) >= MIN_SHINGLES
            and any(len(s & k) >= RESTATED * len(s) for k in kept)
        ):
            out.add(mid)
            continue
        kept.append(s)
    return out


def test_restated_is_what_comparing_every_pair_finds() -> None:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(12)]
    found = 0
    for _ in range(1500):
        bases = [[rng.choice(words) for _ in range(rng.randint(2, 20))] for _ in range(4)]
        ranked = []
        for i in range(rng.randint(1, 25)):
            w = list(rng.choice(bases))
            for _ in range(rng.randint(0, 3)):  # a word dropped or added here and there
                if w and rng.random() < 0.5:
                    w.pop(rng.randrange(len(w)))
                else:
                    w.insert(rng.randint(0, len(w)), rng.choice(words))
            ranked.append((i, " ".join(w)))
        keep = set(rng.sample(range(len(ranked)), min(2, len(ranked))))
        expected = every_pair(ranked, keep)
        assert restated(ranked, keep) == expected
        found += bool(expected)
    assert found > 300  # the cases exercise both answers
