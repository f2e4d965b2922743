"""The tier budget: splits, flow between tiers, level choice, and the never-over guarantee."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from predictive.budget import (
    DEFAULT_PROFILES,
    TIERS,
    BudgetConfig,
    Candidate,
    Tier,
    fit_tiers,
)
from predictive.signals import Activity
from predictive.tokens import count_tokens
from storage import Level

HEADERS = {t: f"## {t.value}" for t in TIERS}


def cand(key: str, score: float, words: int) -> Candidate:
    text = " ".join(f"word{i}" for i in range(words))
    return Candidate(
        key,
        score,
        {
            Level.FULL: f"- {key} full {text}",
            Level.SUMMARY: f"- {key} summary {text[: max(1, len(text) // 3)]}",
            Level.COMPRESSED: f"- {key} short",
            Level.INDEX: f"- {key}",
        },
    )


def test_default_split_is_25_375_25_125() -> None:
    split = BudgetConfig().split()
    assert split == {
        Tier.CRITICAL: 2000,
        Tier.RELEVANT: 3000,
        Tier.BACKGROUND: 2000,
        Tier.INDEX: 1000,
    }


def test_debugging_profile_widens_critical() -> None:
    split = BudgetConfig().split(Activity.DEBUGGING)
    assert split == {
        Tier.CRITICAL: 3000,
        Tier.RELEVANT: 2500,
        Tier.BACKGROUND: 1500,
        Tier.INDEX: 1000,
    }


@given(st.integers(min_value=50, max_value=100_000), st.sampled_from([None, *DEFAULT_PROFILES]))
def test_split_sums_exactly(total: int, activity: Activity | None) -> None:
    split = BudgetConfig().split(activity, total)
    assert sum(split.values()) == total
    assert all(v >= 0 for v in split.values())


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"total": 10}, "between"),
        ({"shares": (0.5, 0.5, 0.5, 0.5)}, "add up to 1"),
        ({"shares": (1.0, 0.0, 0.0)}, "four tier shares"),
        ({"shares": (1.5, -0.5, 0.0, 0.0)}, "non-negative"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        BudgetConfig(**kwargs)


def test_unused_budget_flows_down() -> None:
    budgets = BudgetConfig().split(total=1000)
    fills = fit_tiers(
        {Tier.CRITICAL: [], Tier.RELEVANT: [cand(f"r{i}", 1 - i / 100, 60) for i in range(40)]},
        budgets,
        HEADERS,
        count_tokens,
    )
    assert fills[Tier.CRITICAL].used == 0
    assert fills[Tier.RELEVANT].budget >= budgets[Tier.CRITICAL] + budgets[Tier.RELEVANT]
    assert fills[Tier.RELEVANT].used > budgets[Tier.RELEVANT]


def test_leftover_flows_back_up() -> None:
    budgets = BudgetConfig().split(total=2000)
    many = [cand(f"c{i}", 1 - i / 100, 80) for i in range(60)]
    fills = fit_tiers({Tier.CRITICAL: many}, budgets, HEADERS, count_tokens)
    # nothing below Critical wanted anything, so Critical may use (nearly) all of it
    assert fills[Tier.CRITICAL].used > budgets[Tier.CRITICAL]
    assert fills[Tier.CRITICAL].used <= 2000


def test_richest_level_that_fits() -> None:
    budgets = BudgetConfig().split(total=4000)
    one = cand("solo", 1.0, 20)
    fills = fit_tiers({Tier.CRITICAL: [one]}, budgets, HEADERS, count_tokens)
    assert [p.level for p in fills[Tier.CRITICAL].placed] == [Level.FULL]
    big = cand("big", 1.0, 3000)  # its full text cannot fit anywhere
    fills = fit_tiers(
        {Tier.CRITICAL: [big]}, BudgetConfig().split(total=800), HEADERS, count_tokens
    )
    assert fills[Tier.CRITICAL].placed[0].level in (Level.SUMMARY, Level.COMPRESSED)


def test_nothing_appears_twice() -> None:
    shared = [cand(f"m{i}", 1.0 - i / 10, 5) for i in range(5)]
    fills = fit_tiers(
        {Tier.CRITICAL: shared, Tier.RELEVANT: shared, Tier.INDEX: shared},
        BudgetConfig().split(total=4000),
        HEADERS,
        count_tokens,
    )
    keys = [p.candidate.key for t in TIERS for p in fills[t].placed]
    assert len(keys) == len(set(keys)) == 5
    assert all(p.candidate.key.startswith("m") for p in fills[Tier.CRITICAL].placed)


def test_empty_tier_costs_nothing() -> None:
    fills = fit_tiers({}, BudgetConfig().split(total=1000), HEADERS, count_tokens)
    assert all(f.used == 0 and not f.placed for f in fills.values())


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=400)
candidate_lists = st.lists(
    st.tuples(st.floats(0, 2), texts, texts, texts, texts), min_size=0, max_size=25
)


@settings(max_examples=60, deadline=None)
@given(
    total=st.integers(min_value=200, max_value=32_000),
    activity=st.sampled_from([None, *DEFAULT_PROFILES]),
    per_tier=st.tuples(candidate_lists, candidate_lists, candidate_lists, candidate_lists),
)
def test_fit_never_exceeds_budget_and_each_tier_its_share(
    total: int, activity: Activity | None, per_tier: tuple
) -> None:
    budgets = BudgetConfig().split(activity, total)
    cands = {
        t: [
            Candidate(
                f"{t.value}{i}",
                score,
                {Level.FULL: a, Level.SUMMARY: b, Level.COMPRESSED: c, Level.INDEX: d},
            )
            for i, (score, a, b, c, d) in enumerate(lst)
        ]
        for t, lst in zip(TIERS, per_tier)
    }
    fills = fit_tiers(cands, budgets, HEADERS, count_tokens)
    assert sum(f.used for f in fills.values()) <= total
    carry = 0
    for t in TIERS:
        assert fills[t].used <= fills[t].budget
        allowed_first_pass = budgets[t] + carry
        carry = max(0, allowed_first_pass - fills[t].used)
    for t in TIERS:
        for p in fills[t].placed:
            assert p.tokens == count_tokens(p.text + "\n")
