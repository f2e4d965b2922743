"""Deterministic compression: summary, compressed line, index label; fill and backfill."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from predictive import compress
from predictive.compress import (
    COMPRESSED_TOKENS,
    INDEX_TOKENS,
    SUMMARY_TOKENS,
    TINY_TOKENS,
    Compressor,
    DeterministicCompressor,
    backfill_levels,
    fill_levels,
)
from predictive.tokens import count_tokens
from storage import Anchor, Kind, Memory, MemoryFilter, MemoryStore, NewMemory, Scope
from storage.embeddings import HashingEmbedder

C = DeterministicCompressor()


def mem(text: str, kind: Kind = Kind.FACT, anchors: tuple[str, ...] = (), **kw: Any) -> Memory:
    """A Memory value as the store would return it."""
    fields: dict[str, Any] = dict(
        id=1,
        kind=kind,
        text=text,
        summary=None,
        compressed=None,
        index_label=None,
        scope=Scope.PROJECT,
        source="test",
        source_id=None,
        content_hash="",
        importance=0.5,
        confidence=1.0,
        decay_score=0.0,
        retrieval_count=0,
        citation_count=0,
        ignore_count=0,
        created_at=0.0,
        updated_at=0.0,
        valid_from=0.0,
        valid_to=None,
        last_accessed=None,
        supersedes=None,
        superseded_by=None,
        archived=False,
        archived_at=None,
        archive_reason=None,
        fact_key=None,
        fact_value=None,
        metadata={},
        anchors=[Anchor.parse(a) for a in anchors],
    )
    fields.update(kw)
    return Memory(**fields)


def levels(m: Memory) -> tuple[str, str, str]:
    return C.summary(m), C.compressed(m), C.index_label(m)


POSTGRES = (
    "The team decided to use PostgreSQL as the primary database because of its strong "
    "support for JSON operations and the team's existing expertise with it."
)
AUTH_EPISODE = (
    "Debugged auth flow. Root cause: token expiry check used wrong timezone. "
    "Fixed by normalizing to UTC. Added regression test."
)
ADR = """# ADR-012: Use Redis for caching

## Status
Accepted

## Context
Our API response times degraded as traffic grew. The product catalogue is read-heavy and
rarely changes. We considered Memcached and an in-process LRU.

## Decision
We will use Redis instead of Memcached for caching because it supports data structures,
persistence and pub/sub for invalidation.

## Consequences
- Operations must run a Redis cluster.
- Cache keys must be namespaced by service.
"""
RETRY_PATTERN = """Retry payments with exponential backoff:

```python
def retry(fn, attempts=3):
    for i in range(attempts):
        try:
            return fn()
        except TransientError:
            time.sleep(2 ** i)
```
Always cap the total wait at 30 seconds."""
RULES = """---
description: Python style for this repository
globs: "**/*.py"
alwaysApply: true
---
# Python style

- Use type hints everywhere
- Prefer pathlib over os.path
- Don't use bare except
"""

CORPUS: list[Memory] = [
    mem(POSTGRES, Kind.DECISION),
    mem(
        "We switched auth from JWT to server-side sessions because the tokens grew too large.",
        Kind.DECISION,
        ("module:app.auth",),
    ),
    mem("We chose Redis over Memcached because it supports persistence.", Kind.DECISION),
    mem(AUTH_EPISODE, Kind.EPISODE),
    mem(
        "TypeError: cannot read properties of undefined (reading 'id') in checkout.ts when "
        "the cart is empty. Fixed by guarding with optional chaining and returning early.",
        Kind.SOLUTION,
        ("file:src/checkout.ts",),
    ),
    mem(
        "Problem: pytest hangs on CI after the last test.\nFix: set PYTHONUNBUFFERED=1 and "
        "close the asyncio loop in conftest.",
        Kind.SOLUTION,
    ),
    mem(
        "All API handlers must return a typed Result instead of throwing exceptions. "
        "Never log raw request bodies.",
        Kind.CONVENTION,
    ),
    mem(RULES, Kind.CONVENTION, ("file:.cursor/rules/python.mdc",)),
    mem(
        "# Deploy\n1. Run tests with coverage\n2. Build the docker image\n3. Deploy to staging\n"
        "4. Verify smoke tests\n5. Promote to production\n",
        Kind.WORKFLOW,
    ),
    mem(ADR, Kind.DECISION, ("tag:caching",)),
    mem(RETRY_PATTERN, Kind.PATTERN, ("module:payments.retry",)),
    mem("Tim prefers Result<T,E> over try-catch in TypeScript code.", Kind.PREFERENCE),
    mem(
        "Tim mentioned that he strongly prefers using explicit error handling patterns with "
        "Result types instead of try-catch blocks, especially in TypeScript code where type "
        "safety is important.",
        Kind.FACT,
        fact_key="error_handling",
        fact_value="Result<T,E> over try-catch",
    ),
    mem(
        "Wir haben die Datenbank auf PostgreSQL migriert, weil JSON-Unterstützung wichtig war. "
        "Danach liefen alle Tests wieder.",
        Kind.EPISODE,
    ),
    mem("日本語のテキストはスペースがありません。データベースはPostgreSQLを使います。", Kind.FACT),
    mem("def add(a, b):\n    return a + b\n", Kind.PATTERN),
    mem("ok", Kind.FACT),
    mem("\n\n   \n  Use   ruff.  \n\n\n", Kind.CONVENTION),
    mem("| col | val |\n|---|---|\n| a | 1 |\n\nThe table lists the defaults.", Kind.SUMMARY),
    mem("Sprint 14 summary: shipped payments v2, paused the search rewrite.", Kind.SUMMARY),
    mem("<|endoftext|> is in this text and must be counted as plain text.", Kind.FACT),
    mem(("A long narrative about the billing migration. " * 3_000).strip(), Kind.EPISODE),
]


# ---- levels of realistic memories ----------------------------------------------------------


def test_decision_in_seed_style() -> None:
    s, c, i = levels(CORPUS[0])
    # the text's own words: "database", never an abbreviation it does not use
    assert c == "database: PostgreSQL (support JSON operations, team expertise)"
    assert i == "database: PostgreSQL"
    assert s.startswith("The team decided to use PostgreSQL as the primary database")
    assert count_tokens(s) < count_tokens(POSTGRES)


def test_switch_decision_reads_as_a_change() -> None:
    _, c, i = levels(CORPUS[1])
    assert c.startswith("auth: JWT→server-side sessions (tokens grew too large")
    assert i == "auth: JWT→server-side sessions"


def test_decision_over_an_alternative() -> None:
    _, c, i = levels(CORPUS[2])
    assert c == "Redis over Memcached (supports persistence)"
    assert i == "Redis"
    m = mem(CORPUS[2].text, Kind.DECISION, ("tag:caching",))
    # a topic taken from a tag the text never mentions would assert what it does not say
    assert C.compressed(m) == "We chose Redis over Memcached because it supports persistence."


@pytest.mark.parametrize(
    ("text", "compressed", "index"),
    [
        ("We switched auth from JWT to sessions.", "auth: JWT→sessions", "auth: JWT→sessions"),
        (
            "Changed the default timeout from 30s to 60s because uploads were slow.",
            "timeout: 30s→60s (uploads slow)",
            "timeout: 30s→60s",
        ),
        (
            "Replaced Jenkins with GitHub Actions to reduce maintenance.",
            "Jenkins→GitHub Actions (reduce maintenance)",
            "Jenkins→GitHub Actions",
        ),
        (
            "Decision: use Kafka over RabbitMQ\nWhy: ordering guarantees and replay",
            "Decision: use Kafka over RabbitMQ",
            "use Kafka over RabbitMQ",  # a titled record is named by its title
        ),
        ("Use Redis for caching as well as queues.", "caching: Redis", "caching: Redis"),
        (
            "We switched auth from JWT to sessions because tokens grew too large for cookies.",
            "auth: JWT→sessions (tokens grew too large)",
            "auth: JWT→sessions",
        ),
    ],
)
def test_decision_forms(text: str, compressed: str, index: str) -> None:
    _, c, i = levels(mem(text, Kind.DECISION))
    assert (c, i) == (compressed, index)


def test_episode_becomes_problem_cause_fix() -> None:
    s, c, i = levels(CORPUS[3])
    assert s == (
        "Debugged auth flow; cause: token expiry check used wrong timezone → "
        "Fixed by normalizing to UTC. Added regression test."
    )
    assert c == "token expiry check used wrong timezone → normalizing UTC"
    assert i == "Debugged auth flow"


def test_solution_keeps_error_signature_and_fix() -> None:
    s, c, i = levels(CORPUS[4])
    assert " → Fixed by guarding with optional chaining" in s
    assert s.startswith("TypeError: cannot read properties of undefined")
    # "cannot" would be lost in "TypeError → guarding …": the sentence itself, cut
    assert c.startswith("TypeError: cannot read properties of undefined")
    assert i == "TypeError: cannot read properties of undefined…"


def test_labelled_problem_and_fix() -> None:
    s, c, _ = levels(CORPUS[5])
    assert s.startswith("pytest hangs on CI after the last test → set PYTHONUNBUFFERED=1")
    assert c.startswith("pytest hangs CI after last test → set PYTHONUNBUFFERED=1")


def test_convention_as_always_and_never() -> None:
    s, c, i = levels(CORPUS[6])
    assert c == (  # the text's own modal words, never "always" for "must"
        "API handlers: must return typed Result instead throwing exceptions; "
        "never log raw request bodies"
    )
    assert "must return a typed Result" in s and "Never log raw request bodies" in s
    assert i == "All API handlers must return a typed Result…"


def test_rule_file_with_front_matter_and_heading() -> None:
    s, c, i = levels(CORPUS[7])
    assert s == (
        "Python style: Use type hints everywhere; Prefer pathlib over os.path; "
        "Don't use bare except"
    )
    assert "---" not in s and "alwaysApply" not in s
    assert c == "Python style — Use type hints everywhere"
    assert i == "Python style"  # the heading


def test_workflow_as_step_chain() -> None:
    _, c, i = levels(CORPUS[8])
    assert c == "Deploy — Run tests with coverage"
    assert i == "Deploy"


def test_adr_with_headings() -> None:
    s, c, i = levels(CORPUS[9])
    assert s.startswith("ADR-012: Use Redis for caching — We will use Redis instead of Memcached")
    assert "#" not in s and "Status" not in s
    assert c == "ADR-012: Use Redis for caching"  # the decision sentence does not fit
    assert i == "Use Redis for caching"  # the title without its number


def test_code_is_dropped_from_prose() -> None:
    s, c, i = levels(CORPUS[10])
    assert s == "Retry payments with exponential backoff; Always cap the total wait at 30 seconds"
    assert "range" not in s and "sleep" not in c
    assert c == "Retry payments with exponential backoff:"
    assert i == "Retry payments with exponential backoff"


def test_preference_with_scope_as_topic() -> None:
    _, c, i = levels(CORPUS[11])
    assert c == "typescript: Result<T,E> over try-catch"
    assert i == "typescript: Result<T,E>"


def test_fact_key_and_value() -> None:
    _, c, i = levels(CORPUS[12])
    # "over" is not the text's word ("instead of"): the text itself, cut at a word boundary
    assert c.startswith("Tim mentioned that he strongly prefers using explicit error handling")
    assert i == "error_handling"  # the key: its words are the text's


def test_pure_code_keeps_its_first_line() -> None:
    s, c, _ = levels(CORPUS[15])
    assert s == c == "def add(a, b):"


def test_tiny_text_is_its_own_summary() -> None:
    assert levels(CORPUS[16]) == ("ok", "ok", "ok")
    s, c, _ = levels(CORPUS[17])
    assert s == "Use ruff." and c.startswith("Use ruff")


def test_non_english_and_cjk() -> None:
    for m in CORPUS[13:15]:
        s, c, i = levels(m)
        assert s and c and i
        assert count_tokens(s) < count_tokens(m.text)
    s, _, _ = levels(CORPUS[13])
    assert s.startswith("Wir haben die Datenbank auf PostgreSQL migriert")


def test_huge_text_respects_the_caps() -> None:
    s = levels(CORPUS[-1])[0]
    assert count_tokens(s) <= SUMMARY_TOKENS
    assert s.startswith("A long narrative about the billing migration.")


# ---- invariants ----------------------------------------------------------------------------


def check_invariants(m: Memory) -> None:
    s, c, i = levels(m)
    full, ns, nc, ni = (count_tokens(x) for x in (m.text, s, c, i))
    assert s.strip() and c.strip() and i.strip()
    assert full >= ns >= nc >= ni >= 1, (m.text, s, c, i)
    assert ns <= SUMMARY_TOKENS and nc <= COMPRESSED_TOKENS and ni <= INDEX_TOKENS
    if full > TINY_TOKENS:
        assert ns < full
    assert "\n" not in c and "\n" not in i
    assert len(i.split()) <= 8


@pytest.mark.parametrize("m", CORPUS, ids=lambda m: m.text[:30])
def test_level_ordering_on_the_corpus(m: Memory) -> None:
    check_invariants(m)


WORDS = st.sampled_from(
    "the team decided to use PostgreSQL over MySQL because fast # ## Title \n \n\n - 1. ``` "
    "must never always should fixed by Error: TypeError ValueError Problem: Fix: → ( ) . , : ; "
    "日本語 😀 é x=1; def f(): } { --- | <|endoftext|> we switched from to replaced with".split(" ")
)
TEXTS = (st.lists(WORDS, min_size=1, max_size=120).map(" ".join) | st.text(max_size=400)).filter(
    lambda t: t.strip()
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(TEXTS, st.sampled_from(list(Kind)), st.sampled_from([(), ("tag:auth",), ("file:a/b.py",)]))
def test_level_ordering_on_generated_text(text: str, kind: Kind, anchors: tuple[str, ...]) -> None:
    check_invariants(mem(text, kind, anchors))


def test_deterministic_across_processes() -> None:
    """Same levels in a fresh interpreter with another hash seed."""
    code = (
        "import json\n"
        "from tests.test_predictive_compress import CORPUS, levels\n"
        "print(json.dumps([levels(m) for m in CORPUS]))\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    here = json.loads(json.dumps([levels(m) for m in CORPUS]))
    assert json.loads(run.stdout) == here


def test_deterministic_without_the_cache() -> None:
    first = [levels(m) for m in CORPUS]
    compress._levels.cache_clear()
    assert [levels(m) for m in CORPUS] == first


# ---- fill_levels ---------------------------------------------------------------------------


def test_fill_levels_fills_all_missing() -> None:
    out = fill_levels(CORPUS[0])
    assert out == dict(zip(("summary", "compressed", "index_label"), levels(CORPUS[0])))


def test_fill_levels_only_fills_what_is_missing() -> None:
    m = mem(POSTGRES, Kind.DECISION, summary="Postgres is the DB (JSON, expertise).")
    out = fill_levels(m)
    assert set(out) == {"compressed", "index_label"}
    assert count_tokens(out["compressed"]) <= count_tokens(m.summary or "")
    assert count_tokens(out["index_label"]) <= count_tokens(out["compressed"])
    full = mem(POSTGRES, Kind.DECISION, summary="s", compressed="c", index_label="i")
    assert fill_levels(full) == {}


def test_blank_levels_count_as_missing() -> None:
    out = fill_levels(mem(POSTGRES, Kind.DECISION, summary="   ", compressed=""))
    assert set(out) == {"summary", "compressed", "index_label"}


def test_existing_compressed_caps_the_index() -> None:
    m = mem(POSTGRES, Kind.DECISION, compressed="db: pg")
    out = fill_levels(m)
    assert set(out) == {"summary", "index_label"}
    assert count_tokens(out["index_label"]) <= count_tokens("db: pg")


class EmptyCompressor:
    """A stand-in for a model that answers nothing."""

    def summary(self, memory: Memory) -> str:
        return ""

    def compressed(self, memory: Memory) -> str:
        return "  "

    def index_label(self, memory: Memory) -> str:
        return "label"


def test_another_compressor_plugs_in_and_empty_answers_fall_back() -> None:
    comp: Compressor = EmptyCompressor()
    out = fill_levels(mem(POSTGRES, Kind.DECISION), comp)
    assert out["index_label"] == "label"
    assert out["summary"] == POSTGRES  # fits the summary cap whole
    assert out["compressed"].startswith("The team decided") and out["compressed"].endswith("…")
    assert count_tokens(out["compressed"]) <= COMPRESSED_TOKENS
    assert isinstance(comp, Compressor) and isinstance(C, Compressor)


# ---- backfill_levels on a real store -------------------------------------------------------


@pytest.fixture
def small_store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore(tmp_path / "memory.db", embedder=HashingEmbedder(dim=32))
    yield s  # type: ignore[misc]
    s.close()


def test_backfill_fills_every_memory_and_is_idempotent(small_store: MemoryStore) -> None:
    store = small_store
    ids = [
        store.add(NewMemory(text=m.text, kind=m.kind, anchors=list(m.anchors))).id
        for m in CORPUS[:12]
    ]
    archived = store.add(NewMemory(text="An old decision: we used MySQL.", kind=Kind.DECISION))
    store.archive(archived.id, reason="superseded")
    preset = store.add(
        NewMemory(
            text="Preset levels stay as they are.",
            summary="Preset summary.",
            compressed="preset",
            index_label="preset",
        )
    )
    partial = store.add(NewMemory(text=POSTGRES + " Again.", kind=Kind.DECISION, summary="PG."))

    updated = backfill_levels(store, batch=4)
    assert updated == len(ids) + 2  # all but the preset one
    everything = store.list(MemoryFilter(include_archived=True), limit=1_000)
    assert len(everything) == store.count(MemoryFilter(include_archived=True))
    for m in everything:
        assert m.summary and m.compressed and m.index_label, m.id
    got = store.get(preset.id)
    assert (got.summary, got.compressed, got.index_label) == ("Preset summary.", "preset", "preset")
    got = store.get(partial.id)
    assert got.summary == "PG." and count_tokens(got.compressed or "") <= count_tokens("PG.")
    assert store.get(archived.id).archived and store.get(archived.id).index_label
    assert store.get(ids[0]).compressed == C.compressed(CORPUS[0])

    assert backfill_levels(store) == 0
    assert backfill_levels(store, batch=1) == 0


def test_backfill_of_an_empty_store(small_store: MemoryStore) -> None:
    assert backfill_levels(small_store) == 0


def test_backfill_rejects_a_bad_batch(small_store: MemoryStore) -> None:
    with pytest.raises(ValueError):
        backfill_levels(small_store, batch=0)
