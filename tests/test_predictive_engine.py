"""The context engine on a real store: what lands in which tier, budgets, caching, usage."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from predictive import engine as engine_module
from predictive.budget import TIERS, BudgetConfig
from predictive.engine import ContextEngine, ContextRequest
from predictive.file_facts import error_signature
from predictive.signals import Activity, Diagnostic
from predictive.tokens import count_tokens
from storage import Anchor, AnchorType, Artifact, Kind, Memory, MemoryStore, NewMemory
from storage.embeddings import HashingEmbedder

FILE = "src/payments/stripe_client.py"
SOURCE = """\
import json
from payments.retry import backoff
from auth.tokens import refresh_token


class StripeClient:
    def charge(self, amount):
        return backoff(lambda: self._post(amount))
"""


def anchor(t: str, v: str) -> Anchor:
    return Anchor(AnchorType(t), v)


def req(**kw: object) -> ContextRequest:
    base: dict[str, object] = {"path": FILE, "text": SOURCE}
    base.update(kw)
    return ContextRequest(**base)  # type: ignore[arg-type]


def tier_ids(result: object, tier: str) -> set[int]:
    return {
        i.memory_id
        for i in result.items  # type: ignore[attr-defined]
        if i.tier.value == tier and i.memory_id is not None
    }


def test_decision_for_this_file_is_critical(store: MemoryStore) -> None:
    d = store.add(
        NewMemory(
            "Charges go through StripeClient.charge with idempotency keys",
            kind=Kind.DECISION,
            anchors=[anchor("file", FILE)],
            artifacts=[Artifact("adr", "docs/adr/0007-stripe.md")],
        )
    ).id
    result = ContextEngine(store).assemble(req())
    assert d in tier_ids(result, "critical")
    assert "adr docs/adr/0007-stripe.md" in result.markdown
    assert f"#{d}" in result.markdown


def test_imported_module_memory_is_relevant(store: MemoryStore) -> None:
    m = store.add(
        NewMemory(
            "backoff() retries 3 times with jitter; do not nest it",
            kind=Kind.PATTERN,
            anchors=[anchor("module", "payments.retry")],
        )
    ).id
    result = ContextEngine(store).assemble(req())
    assert m in tier_ids(result, "relevant")


def test_branch_tokens_predict(store: MemoryStore) -> None:
    m = store.add(
        NewMemory(
            "Refunds must be issued from the original charge id",
            kind=Kind.FACT,
            anchors=[anchor("tag", "refunds")],
        )
    ).id
    other = store.add(
        NewMemory(
            "Unrelated note on the marketing site colours",
            kind=Kind.FACT,
            anchors=[anchor("tag", "marketing")],
        )
    ).id
    result = ContextEngine(store).assemble(req(branch="feature/refunds-api"))
    assert m in result.memory_ids
    assert other not in tier_ids(result, "critical") | tier_ids(result, "relevant")


def test_error_signature_brings_past_solution_and_debugging(store: MemoryStore) -> None:
    sig = error_signature(
        "Cannot access attribute 'charge_id' for class 'Refund'",
        "reportAttributeAccessIssue",
        "pyright",
    )
    sol = store.add(
        NewMemory(
            "Refund objects expose id, not charge_id: use refund.charge.id",
            kind=Kind.SOLUTION,
            anchors=[anchor("error", sig)],
        )
    ).id
    diag = Diagnostic(
        FILE,
        1,
        "Cannot access attribute 'amount_x' for class 'Charge'",
        "reportAttributeAccessIssue",
        "pyright",
        7,
        4,
    )
    result = ContextEngine(store).assemble(req(diagnostics=(diag,)))
    # a different quoted name on another line still matches the same signature
    assert sig == error_signature(diag.message, diag.code, diag.source)
    assert sol in tier_ids(result, "critical")
    assert result.activity is Activity.DEBUGGING
    assert result.tokens["tiers"]["critical"]["budget"] >= 0.37 * 8000 - 200


def test_recent_error_fixed_here_is_critical(store: MemoryStore) -> None:
    sol = store.add(
        NewMemory(
            "KeyError 'currency' in charge(): default currency to 'usd'",
            kind=Kind.SOLUTION,
            anchors=[anchor("file", FILE)],
        )
    ).id
    old = store.add(
        NewMemory(
            "Old fix: timeouts in charge() raised to 30s",
            kind=Kind.SOLUTION,
            anchors=[anchor("file", FILE)],
            created_at=time.time() - 5 * 86400,
        )
    ).id
    result = ContextEngine(store).assemble(req())
    assert sol in tier_ids(result, "critical")
    assert old not in tier_ids(result, "critical")
    assert old in result.memory_ids


def test_open_contradiction_is_critical(store: MemoryStore) -> None:
    a = store.add(
        NewMemory("Amounts are stored in cents", kind=Kind.DECISION, anchors=[anchor("file", FILE)])
    ).id
    b = store.add(
        NewMemory(
            "Amounts are stored as decimal dollars",
            kind=Kind.DECISION,
            anchors=[anchor("module", "payments")],
        )
    ).id
    cid = store.contradictions.add(a, b, reason="judged: the unit of amounts differs")
    result = ContextEngine(store).assemble(req())
    keys = {i.key for i in result.items if i.tier.value == "critical"}
    assert f"c{cid}" in keys
    assert "⚠" in result.markdown


def test_conventions_are_background_and_never_full(store: MemoryStore) -> None:
    long_text = "Always log the request id. " + "Explain why in detail. " * 60
    c = store.add(NewMemory(long_text, kind=Kind.CONVENTION)).id
    result = ContextEngine(store).assemble(req())
    items = [i for i in result.items if i.memory_id == c]
    assert items and items[0].tier.value == "background"
    assert items[0].level != "full"


def test_superseded_and_archived_stay_out(store: MemoryStore) -> None:
    old = store.add(
        NewMemory(
            "Use requests for Stripe calls", kind=Kind.DECISION, anchors=[anchor("file", FILE)]
        )
    ).id
    new = store.add(
        NewMemory(
            "Use the official stripe SDK for Stripe calls",
            kind=Kind.DECISION,
            anchors=[anchor("file", FILE)],
        )
    ).id
    store.graph.supersede(old, new)
    gone = store.add(
        NewMemory("Archived: payments used PayPal", kind=Kind.FACT, anchors=[anchor("file", FILE)])
    ).id
    store.archive(gone)
    result = ContextEngine(store).assemble(req())
    assert new in result.memory_ids
    assert old not in result.memory_ids and gone not in result.memory_ids


def test_index_lists_the_topics_of_this_file(store: MemoryStore) -> None:
    for i in range(6):
        store.add(
            NewMemory(
                f"auth note {i} about sessions",
                anchors=[
                    anchor("tag", "auth"),
                    anchor("file", FILE),
                    anchor("module", "payments.stripe_client"),  # the file itself: no topic
                ],
            )
        )
    for i in range(5):  # another file's topic is not this file's
        store.add(
            NewMemory(
                f"billing note {i}", anchors=[anchor("tag", "billing"), anchor("file", "x.py")]
            )
        )
    result = ContextEngine(store).assemble(req())
    line = next(x for x in result.markdown.splitlines() if x.startswith("Ask me about:"))
    assert line == "Ask me about: auth (6)"  # its memories are shown above: no ids again
    assert "billing" not in result.markdown
    assert result.tokens["tiers"]["index"]["used"] > 0


def populate(store: MemoryStore, n: int) -> None:
    kinds = list(Kind)
    store.add_many(
        [
            NewMemory(
                f"Memory {i} about stripe payments charge retry number {i}: "
                + "details of the decision and its consequences. " * (1 + i % 7),
                kind=kinds[i % len(kinds)],
                anchors=[
                    anchor("file", FILE) if i % 3 == 0 else anchor("module", "payments.retry"),
                    anchor("tag", ["payments", "auth", "billing"][i % 3]),
                ],
            )
            for i in range(n)
        ]
    )


def test_budget_is_used_and_never_exceeded(store: MemoryStore) -> None:
    populate(store, 150)
    for budget in (500, 2000, 8000):
        result = ContextEngine(store).assemble(req(budget=budget))
        assert count_tokens(result.markdown) == result.tokens["total"] <= budget
        assert result.tokens["total"] >= 0.9 * budget
        shown = [i.memory_id for i in result.items if i.memory_id is not None]
        assert len(shown) == len(set(shown))


def test_cache_hits_until_the_store_changes(store: MemoryStore) -> None:
    populate(store, 20)
    engine = ContextEngine(store)
    first = engine.assemble(req())
    again = engine.assemble(req())
    assert not first.cached and again.cached
    assert again.markdown == first.markdown
    store.add(
        NewMemory(
            "A brand new decision for stripe_client",
            kind=Kind.DECISION,
            anchors=[anchor("file", FILE)],
        )
    )
    third = engine.assemble(req())
    assert not third.cached and "brand new decision" in third.markdown
    assert not engine.assemble(req(branch="other")).cached


def test_warm_caches_give_the_cold_context_and_follow_every_write(store: MemoryStore) -> None:
    populate(store, 150)
    warm = ContextEngine(store, cache_size=0)  # no result cache: every context is assembled
    files = [FILE, "src/payments/retry.py", "src/auth/tokens.py"]
    # (nothing recorded: served counts move the ranking, and a warm engine reads them late)
    for path in files * 2:  # the second round runs on the caches the first one filled
        assert warm.assemble(req(path=path), record=False).markdown == (
            ContextEngine(store).assemble(req(path=path), record=False).markdown
        )
    shown = warm.assemble(req(), record=False).memory_ids
    changed, forgotten = shown[0], shown[1]
    store.update(changed, text="Charges are retried at most twice, never inside backoff()")
    store.archive(forgotten, "wrong")
    added = store.add(
        NewMemory(
            "A new decision: stripe_client refunds go through the ledger",
            kind=Kind.DECISION,
            anchors=[anchor("file", FILE)],
        )
    ).id
    after = warm.assemble(req(), record=False)
    assert "retried at most twice" in after.markdown
    assert forgotten not in after.memory_ids and added in after.memory_ids
    assert after.markdown == ContextEngine(store).assemble(req(), record=False).markdown


def test_full_caches_drop_what_was_used_least_recently(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [FILE, "src/payments/retry.py", "src/auth/tokens.py"]
    store.add_many(
        [
            NewMemory(
                f"Decision {i} for {Path(path).stem}: keep step {i} apart from the others.",
                kind=Kind.DECISION,
                anchors=[anchor("file", path)],
            )
            for path in files
            for i in range(40)
        ]
    )
    loaded: list[int] = []
    get_many = store.get_many

    def counting(ids: list[int], **kw: Any) -> list[Memory]:
        loaded.extend(ids)
        return get_many(ids, **kw)

    monkeypatch.setattr(store, "get_many", counting)
    sets = []
    for path in files:  # what each open loads on its own
        loaded.clear()
        ContextEngine(store).assemble(req(path=path), record=False)
        sets.append(set(loaded))
    size = max(len(s) for s in sets) + 5
    assert len(set().union(*sets)) > size  # the opens together overflow the caches
    monkeypatch.setattr(engine_module, "MEMORY_CACHE_SIZE", size)
    monkeypatch.setattr(engine_module, "RENDER_CACHE_SIZE", size)
    warm = ContextEngine(store, cache_size=0)
    for path in files:
        context = warm.assemble(req(path=path), record=False).markdown
        assert context == ContextEngine(store).assemble(req(path=path), record=False).markdown
        assert len(warm._mem_cache) <= size and len(warm._render_cache) <= size
    loaded.clear()
    again = warm.assemble(req(path=files[-1]), record=False).markdown
    assert loaded == [] and again == context  # the last open's memories are all still there


def test_retrieval_is_recorded_without_invalidating(store: MemoryStore) -> None:
    populate(store, 10)
    engine = ContextEngine(store)
    gen = store.generation()
    result = engine.assemble(req())
    assert store.generation() == gen
    some = result.memory_ids[0]
    assert store.get(some).retrieval_count == 1
    assert engine.assemble(req()).cached
    engine.cite(some)
    engine.ignore(result.memory_ids[1])
    assert store.get(some).citation_count == 1
    assert store.get(result.memory_ids[1]).ignore_count == 1


def test_json_account(store: MemoryStore) -> None:
    populate(store, 30)
    out = ContextEngine(store).assemble(req()).to_dict()
    assert set(out["tokens"]["tiers"]) == {t.value for t in TIERS}
    assert sum(t["used"] for t in out["tokens"]["tiers"].values()) <= out["tokens"]["total"] + 8
    for item in out["items"]:
        assert {"key", "tier", "level", "score", "tokens", "memory_id", "kind"} <= item.keys()
        if item["memory_id"] is not None:  # editors list items by their label
            assert item["label"] and "\n" not in item["label"] and len(item["label"]) <= 80
            assert item["label"] == store.get(item["memory_id"]).index_label or (
                store.get(item["memory_id"]).text.startswith(item["label"].rstrip("…"))
            )


def test_file_read_from_disk_and_unknown_language(tmp_path: Path, store: MemoryStore) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.xyz").write_bytes(b"\x00\x01binary")
    m = store.add(
        NewMemory(
            "notes.xyz is generated; never edit it",
            kind=Kind.CONVENTION,
            anchors=[anchor("file", "src/notes.xyz")],
        )
    ).id
    result = ContextEngine(store, root=tmp_path).assemble(ContextRequest(path="src/notes.xyz"))
    assert m in result.memory_ids


def test_empty_store_gives_a_small_valid_context(store: MemoryStore) -> None:
    result = ContextEngine(store).assemble(req())
    assert result.items == []
    assert result.tokens["total"] == count_tokens(result.markdown) <= 8000


memory_specs = st.lists(
    st.tuples(
        st.sampled_from(list(Kind)),
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=600
        ).filter(lambda s: s.strip() != "" and "\x00" not in s),
        st.sampled_from(["file", "module", "tag", "none"]),
        st.floats(0, 1),
    ),
    min_size=0,
    max_size=40,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=memory_specs,
    budget=st.integers(min_value=200, max_value=32_000),
    activity=st.sampled_from([None, *Activity]),
)
def test_random_stores_never_exceed_budget(specs: list, budget: int, activity: object) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = MemoryStore(Path(d) / "m.db", embedder=HashingEmbedder(dim=32))
        try:
            anchors = {
                "file": anchor("file", FILE),
                "module": anchor("module", "payments"),
                "tag": anchor("tag", "payments"),
            }
            for kind, text, where, imp in specs:
                store.add(
                    NewMemory(
                        text,
                        kind=kind,
                        importance=imp,
                        anchors=[anchors[where]] if where in anchors else [],
                    )
                )
            result = ContextEngine(store, budget=BudgetConfig(total=budget)).assemble(
                req(activity=activity)
            )
            assert count_tokens(result.markdown) <= budget
            for t in TIERS:
                fill = result.fills[t]
                assert fill.used <= fill.budget
        finally:
            store.close()


def test_nothing_tied_to_the_file_means_a_short_context(store: MemoryStore) -> None:
    """The budget is a ceiling: memories about other things never fill it."""
    for i in range(40):
        store.add(NewMemory(f"Unrelated note {i} about the billing export", kind=Kind.FACT))
    result = ContextEngine(store).assemble(req())
    assert result.memory_ids == []
    assert result.tokens["total"] < 100


def _rule(store: MemoryStore, text: str, kind: str, **extra: object) -> int:
    anchors = [anchor("tag", "rule"), *extra.pop("anchors", [])]  # type: ignore[misc]
    return store.add(
        NewMemory(
            text,
            kind=Kind.CONVENTION,
            source="rules",
            source_id=f"{kind}.md:1",
            anchors=anchors,
            metadata={"kind": kind, **extra},
        )
    ).id


def test_rules_the_tools_load_themselves_are_left_out_of_that_tools_file_only(
    store: MemoryStore,
) -> None:
    claude = _rule(store, "Run the tests before committing", "claude", alwaysApply=True)
    agents = _rule(store, "Keep functions short", "agents", alwaysApply=True)
    always = _rule(store, "Use British spelling", "cursor-mdc", alwaysApply=True)
    scoped = _rule(
        store,
        "Payments code retries with backoff",
        "cursor-mdc",
        anchors=[anchor("glob", "src/payments/**")],
        alwaysApply=False,
    )
    result = ContextEngine(store).assemble(req())
    # the editor's context (and MCP's, and a copy) holds the project's own rules
    assert {claude, agents, always} <= set(result.memory_ids)
    assert scoped in tier_ids(result, "critical")  # a rule scoped to this file is critical
    for_claude, for_cursor = result.markdown_for("claude"), result.markdown_for("cursor")
    assert "Run the tests before committing" not in for_claude
    assert "Keep functions short" in for_claude and "Use British spelling" in for_claude
    assert "Keep functions short" not in for_cursor and "Use British spelling" not in for_cursor
    assert "Run the tests before committing" in for_cursor
    assert "Payments code retries with backoff" in for_claude and "retries" in for_cursor


def test_a_commit_counts_only_for_the_files_it_touched(store: MemoryStore) -> None:
    def commit(text: str, path: str) -> int:
        return store.add(
            NewMemory(
                text,
                kind=Kind.EPISODE,
                source="git",
                source_id=text[:7],
                anchors=[anchor("file", path), anchor("module", "payments.retry")],
            )
        ).id

    touched = commit("abc1234 Retry charges on 502 from Stripe", FILE)
    other = commit("def5678 Tune retry backoff for payments", "src/payments/retry.py")
    conversation = store.add(
        NewMemory(
            "How we fixed double charges in stripe_client",
            kind=Kind.EPISODE,
            source="chat:claude",
            source_id="s1",
            anchors=[anchor("file", FILE)],
            metadata={"unit": "session", "mentions": {FILE: 30}},
        )
    ).id
    result = ContextEngine(store).assemble(req())
    assert touched in result.memory_ids and other not in result.memory_ids
    order = [i.memory_id for i in result.items if i.tier.value == "relevant"]
    assert order.index(conversation) < order.index(touched)  # knowledge before history


def _assemble_within(engine: ContextEngine, request: ContextRequest, seconds: float) -> object:
    """The engine's answer, or a failure if it takes longer than ``seconds`` (a hang)."""
    import threading

    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(engine.assemble(request)), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "context assembly did not end"
    return out[0]


def test_a_branch_name_longer_than_the_budget_still_ends_within_budget(
    store: MemoryStore,
) -> None:
    store.add(NewMemory("Charges use idempotency keys", anchors=[anchor("file", FILE)]))
    branch = "feature/" + "very-long-branch-name-" * 100  # ~2.2k characters
    result = _assemble_within(ContextEngine(store), req(branch=branch, budget=200), 60)
    assert result.tokens["total"] <= 200  # type: ignore[attr-defined]
    assert count_tokens(result.markdown) <= 200  # type: ignore[attr-defined]
    assert result.markdown.startswith("# Project memory")  # type: ignore[attr-defined]


def test_a_70k_character_branch_at_the_default_budget_ends(store: MemoryStore) -> None:
    store.add(NewMemory("Charges use idempotency keys", anchors=[anchor("file", FILE)]))
    result = _assemble_within(ContextEngine(store), req(branch="b" * 70_000), 60)
    assert count_tokens(result.markdown) <= 8000  # type: ignore[attr-defined]
    assert result.branch is not None and len(result.branch) <= 1024  # type: ignore[attr-defined]


def test_a_budget_smaller_than_any_title_gives_a_context_within_it(store: MemoryStore) -> None:
    store.add(NewMemory("Charges use idempotency keys", anchors=[anchor("file", FILE)]))
    for budget in (1, 3, 12):
        result = _assemble_within(ContextEngine(store), req(budget=budget), 60)
        assert count_tokens(result.markdown) <= budget  # type: ignore[attr-defined]


def test_a_huge_tag_is_stored_cut_and_the_context_stays_usable(store: MemoryStore) -> None:
    from storage import MAX_ANCHOR_CHARS

    mid = store.add(
        NewMemory(
            "Retry payments with backoff",
            anchors=[anchor("tag", "x" * 10_000_000), anchor("file", FILE)],
        )
    ).id
    tags = [a.value for a in store.get(mid).anchors if a.type is AnchorType.TAG]
    assert tags == ["x" * MAX_ANCHOR_CHARS]
    result = _assemble_within(ContextEngine(store), req(), 60)
    assert mid in result.memory_ids  # type: ignore[attr-defined]


def test_what_a_better_memory_already_says_is_not_said_twice(store: MemoryStore) -> None:
    body = (
        "Refactor the retry helper: back off exponentially, cap the delay at thirty seconds "
        "and log every retry with its attempt number."
    )
    first = store.add(NewMemory(body, anchors=[anchor("file", FILE)], created_at=1000.0)).id
    again = store.add(NewMemory("up\n\n" + body, anchors=[anchor("file", FILE)])).id
    other = store.add(
        NewMemory(
            "Retry helper: log every retry with the status code the server answered.",
            anchors=[anchor("file", FILE)],
        )
    ).id
    ids = ContextEngine(store).assemble(req()).memory_ids
    assert (first in ids) != (again in ids)  # one of the two, not both
    assert other in ids  # sharing a few words is not saying the same


def test_restated_needs_most_of_a_text_and_a_real_text() -> None:
    from predictive.restatements import restated

    long = "cap the delay at thirty seconds and log every retry with its attempt number"
    assert restated([(1, long), (2, "note: " + long), (3, "up"), (4, "up")]) == {2}
    assert restated([(1, "log every retry"), (2, long)]) == set()  # it says more


def test_two_sides_of_an_open_contradiction_are_both_shown(store: MemoryStore) -> None:
    text = (
        "The keyword index of the project store is rebuilt by the reindex command in {} "
        "transaction every night after the backup."
    )
    a = store.add(NewMemory(text.format("one"), anchors=[anchor("file", FILE)])).id
    b = store.add(NewMemory(text.format("every"), anchors=[anchor("file", FILE)])).id
    alone = ContextEngine(store).assemble(req()).memory_ids
    assert (a in alone) != (b in alone)  # one word apart: a restatement, shown once
    store.contradictions.add(a, b, reason="one transaction or many")
    ids = ContextEngine(store).assemble(req()).memory_ids
    assert a in ids and b in ids
