"""The engine's candidates from ingested sources: conversation memories found session first,
and rules that belong to files through their globs."""

from __future__ import annotations

from pathlib import Path

from predictive.budget import Tier
from predictive.engine import ContextEngine, ContextRequest
from predictive.ingest import run
from storage import Anchor, Kind, MemoryStore, NewMemory
from storage.sources.records import ChatMessage, Conversation


def billing_chat() -> Conversation:
    turns = [
        ("user", "the billing export is slow for large invoices"),
        ("assistant", "It loads every invoice row into memory before writing the export."),
        ("user", "We decided to stream the rows with yield_per instead of loading them all."),
        ("assistant", "Streaming now, memory stays flat."),
    ]
    return Conversation(
        tool="claude",
        external_id="billing-1",
        title="billing export performance",
        messages=tuple(
            ChatMessage(i, r, t, at=1_700_000_000.0 + i) for i, (r, t) in enumerate(turns)
        ),
    )


def scores(store: MemoryStore, path: str) -> dict[int, float]:
    """Score of each memory the context shows above the index tier (which points at anything)."""
    result = ContextEngine(store).assemble(ContextRequest(path=path, text=""))
    return {
        i.memory_id: i.score
        for i in result.items
        if i.memory_id is not None and i.tier is not Tier.INDEX
    }


def test_a_decision_from_a_conversation_comes_with_the_sessions_topic(
    store: MemoryStore, tmp_path: Path
) -> None:
    summary = run(
        store, root=tmp_path, options={"sources": ["chats"]}, conversations=[billing_chat()]
    )
    assert summary.sources["chats"].by_kind == {"decision": 1}
    (decision,) = [m for m in store.list(limit=100) if m.kind is Kind.DECISION]
    assert "billing" not in decision.text and "export" not in decision.text
    billing = scores(store, "src/billing/export.py")
    assert decision.id in billing
    assert billing[decision.id] > scores(store, "src/weather/radar.py").get(decision.id, 0.0)


def test_a_glob_rule_joins_the_files_it_names(store: MemoryStore) -> None:
    rule = store.add(
        NewMemory(
            "Handlers validate the request body before touching the database.",
            kind=Kind.DECISION,  # not a convention: conventions are in every context anyway
            anchors=[Anchor.parse("glob:src/api/**")],
        )
    ).id
    for i in range(30):
        store.add(NewMemory(f"unrelated note number {i} about gardening", kind=Kind.FACT))
    api = scores(store, "src/api/users/create.py")
    assert rule in api
    assert api[rule] > scores(store, "docs/gardening.md").get(rule, 0.0)
