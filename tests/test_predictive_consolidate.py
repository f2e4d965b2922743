"""Consolidation: levels, decay, near-duplicate links and fact contradictions — and a dry run
that only counts."""

from __future__ import annotations

import pytest

from predictive.consolidate import run
from storage import MemoryStore, NewMemory
from storage.models import EdgeType, Kind
from tests.conftest import snapshot_of


def populate(store: MemoryStore) -> dict[str, int]:
    ids = {
        "a": store.add(NewMemory("Deploys run from the release branch every Tuesday.")).id,
        "a2": store.add(NewMemory("Deploys run from the release branch every Tuesday!")).id,
        "other": store.add(NewMemory("The billing export streams rows.", kind=Kind.DECISION)).id,
        "port1": store.add(
            NewMemory("API port is 8080", fact_key="api.port", fact_value="8080")
        ).id,
        "port2": store.add(
            NewMemory("API port is 9090", fact_key="api.port", fact_value="9090")
        ).id,
    }
    return ids


def test_a_dry_run_counts_and_writes_nothing(store: MemoryStore) -> None:
    populate(store)
    before = snapshot_of(store)
    out = run(store, options={"dryRun": True})
    assert out["dryRun"] is True
    assert out["levelsFilled"] == 5
    assert out["similarLinked"] == 1 and out["contradictionsOpened"] == 1
    assert snapshot_of(store) == before


def test_consolidation_links_near_duplicates_and_opens_fact_contradictions(
    store: MemoryStore,
) -> None:
    ids = populate(store)
    out = run(store)
    assert out["levelsFilled"] == 5 and out["decayUpdated"] >= 1
    assert out["similarLinked"] == 1 and out["contradictionsOpened"] == 1
    edges = store.graph.edges(ids["a"])
    assert [(e.target_id, e.type) for e in edges] == [(ids["a2"], EdgeType.SIMILAR_TO)]
    (c,) = store.contradictions.query()
    assert {c.memory_a, c.memory_b} == {ids["port1"], ids["port2"]}
    assert not store.get(ids["a2"]).archived  # linked, never merged or forgotten
    again = run(store)
    assert (again["levelsFilled"], again["similarLinked"], again["contradictionsOpened"]) == (
        0,
        0,
        0,
    )


def test_progress_is_reported_and_can_cancel(store: MemoryStore) -> None:
    populate(store)
    seen: list[str] = []

    class Stop(Exception):
        pass

    def progress(done: int, total: int, message: str | None = None) -> None:
        seen.append(message or "")
        if message == "near duplicates":
            raise Stop

    with pytest.raises(Stop):
        run(store, progress=progress)
    assert seen == ["levels", "decay", "near duplicates"]
    assert store.graph.edges(1) == []  # stopped before linking
