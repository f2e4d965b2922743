"""Where a configured LLM is used — extraction, contradiction judgement, ask, summaries — each
against a local server speaking the protocol, and each falling back when its answer is bad."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from predictive import consolidate, ingest, llm, llm_config
from predictive.ask import QuestionKind
from predictive.compress import DeterministicCompressor
from predictive.conversations import extract
from predictive.llm import LlmClient
from predictive.llm_compress import LlmCompressor, llm_compressor
from predictive.llm_config import LlmConfig
from predictive.llm_extract import extract_with, propose
from predictive.llm_judge import Verdict, llm_judge
from predictive.questions import classify_with, compose_answer
from storage import Kind, MemoryStore, NewMemory
from storage.sources.records import ChatMessage, Conversation
from tests.llm_server import FakeLlm

USER = (
    "We decided to keep the cache in SQLite rather than Redis because the tool must run "
    "offline on a laptop. Please remember that for every new feature."
)
ASSISTANT = (
    "Understood. I will store cached answers in the SQLite database next to the memories, "
    "and never add a Redis dependency."
)


@pytest.fixture(autouse=True)
def _fresh_llm_state() -> Iterator[None]:
    """Each test starts with closed breakers and free slots (a port may be reused)."""
    llm.reset()
    yield
    llm.reset()


def conversation() -> Conversation:
    return Conversation(
        tool="claude",
        external_id="s1",
        messages=(
            ChatMessage(0, "user", USER, at=1_700_000_000.0),
            ChatMessage(1, "assistant", ASSISTANT, at=1_700_000_010.0),
        ),
        title="cache storage",
    )


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    f = FakeLlm()
    yield f
    f.close()
    llm_config.configure(LlmConfig())


def client(fake: FakeLlm, store: MemoryStore | None = None, **kw: object) -> LlmClient:
    return LlmClient(LlmConfig(url=fake.url, model="test-model", **kw), store=store)  # type: ignore[arg-type]


def items(*found: dict[str, object]) -> str:
    return json.dumps({"items": list(found)})


GOOD = {
    "kind": "decision",
    "text": "Keep the cache in SQLite rather than Redis because the tool must run offline.",
    "quote": "keep the cache in SQLite rather than Redis",
    "message": 0,
}


def test_extraction_keeps_items_whose_quote_is_in_their_message(fake: FakeLlm) -> None:
    invented = dict(GOOD, text="Use Postgres for the cache cluster.", quote="use Postgres")
    wrong_message = dict(GOOD, message=7)
    unsupported = dict(
        GOOD, text="Kubernetes operators deploy the Redis cluster nightly.", kind="workflow"
    )
    fake.replies = [items(GOOD, invented, wrong_message, unsupported)]
    c = client(fake)
    found = propose(c, conversation())
    assert [x.memory.text for x in found] == [GOOD["text"]]
    assert found[0].memory.kind is Kind.DECISION and found[0].rule == "llm"
    assert found[0].memory.metadata["quote"] == GOOD["quote"]
    assert c.stats()["invalid"] == 3
    assert "keep the cache in SQLite" in fake.requests[0]["messages"][1]["content"]


def test_extraction_merges_without_repeating_what_the_rules_found(fake: FakeLlm) -> None:
    conv = conversation()
    local = extract(conv)
    repeat = [dict(GOOD, text=k.memory.text[:300], quote=USER[:60]) for k in local.kept]
    fake.replies = [items(GOOD, *repeat)]
    before = len(local.kept)
    extract_with(client(fake), conv, local)
    texts = [k.memory.text for k in local.kept]
    assert len(texts) == len(set(texts))
    assert len(local.kept) <= before + 1
    assert extract_with(None, conv, local) == 0 and len(fake.requests) == 1


def test_extraction_falls_back_to_the_rules_on_a_bad_answer(fake: FakeLlm) -> None:
    fake.replies = ["the decision was SQLite"]
    conv = conversation()
    local = extract(conv)
    before = [k.memory.text for k in local.kept]
    assert extract_with(client(fake), conv, local) == 0
    assert [k.memory.text for k in local.kept] == before


def test_ingest_uses_the_configured_llm_and_stores_only_valid_items(
    fake: FakeLlm, store: MemoryStore, tmp_path: Path
) -> None:
    new = {
        "kind": "convention",
        "text": "Never add a Redis dependency; cached answers are stored in the SQLite database.",
        "quote": "never add a Redis dependency",
        "message": 1,
    }
    fake.replies = [items(new, dict(new, quote="words nobody wrote", text="Made up item."))]
    llm_config.configure(LlmConfig(url=fake.url, model="test-model", uses=("extraction",)))
    ingest.run(store, root=tmp_path, options={"sources": ["chats"]}, conversations=[conversation()])
    texts = [m.text for m in store.list(limit=100)]
    assert new["text"] in texts and "Made up item." not in texts
    assert len(fake.requests) == 1
    llm_config.configure(LlmConfig())
    ingest.run(store, root=tmp_path, options={"sources": ["chats"]}, conversations=[conversation()])
    assert len(fake.requests) == 1  # not configured: never called


def test_the_judge_returns_a_validated_verdict(fake: FakeLlm) -> None:
    a = "Always apply apsw.bestpractice before opening a connection."
    b = "WAL and optimize are applied by connect() itself, not by the global apsw hooks."
    fake.replies = [
        json.dumps(
            {
                "verdict": "supersedes",
                "reason": "B says connect() applies them, not the global hooks",
                "confidence": 0.8,
                "quote_a": "Always apply apsw.bestpractice",
                "quote_b": "not by the global apsw hooks",
            }
        )
    ]
    judge = llm_judge(client(fake))
    v = judge(a, b)
    assert v == Verdict(
        "supersedes",
        "B says connect() applies them, not the global hooks",
        0.8,
        "Always apply apsw.bestpractice",
        "not by the global apsw hooks",
    )
    assert v is not None and v.conflict


@pytest.mark.parametrize(
    "answer",
    [
        {"verdict": "probably", "reason": "r", "confidence": 0.5},  # not an allowed verdict
        {"verdict": "contradicts", "reason": "r", "confidence": 1.5},  # out of range
        {
            "verdict": "contradicts",
            "reason": "made up",
            "confidence": 0.9,
            "quote_a": "never use SQLite",
            "quote_b": "use Redis",
        },  # quotes not in the texts
    ],
)
def test_the_judge_discards_invalid_verdicts(fake: FakeLlm, answer: dict[str, object]) -> None:
    fake.replies = [json.dumps(answer)]
    judge = llm_judge(client(fake))
    assert judge("Use SQLite for the cache.", "The cache lives in SQLite.") is None


def test_a_compatible_verdict_needs_no_quotes(fake: FakeLlm) -> None:
    fake.replies = [json.dumps({"verdict": "compatible", "reason": "same fact", "confidence": 0.7})]
    v = llm_judge(client(fake))("Use SQLite for the cache.", "The cache lives in SQLite.")
    assert v is not None and not v.conflict


def test_questions_are_classified_by_a_valid_model_answer_else_locally(fake: FakeLlm) -> None:
    assert classify_with(None, "How do I run the tests?").kind is QuestionKind.HOWTO
    fake.replies = ['{"kind": "history"}', '{"kind": "gossip"}']
    c = client(fake)
    assert classify_with(c, "What about the cache?").kind is QuestionKind.HISTORY
    assert classify_with(c, "Why the cache?").kind is QuestionKind.DECISION  # invalid → local
    assert c.stats()["invalid"] == 1


def test_an_answer_cites_only_the_items_it_was_given(fake: FakeLlm) -> None:
    given = [
        (4, "The cache is kept in SQLite, not Redis, so the tool runs offline."),
        (9, "Benchmarks run with python -m bench.bench_store."),
    ]
    fake.replies = [
        json.dumps(
            {"answer": "The cache is kept in SQLite so the tool runs offline.", "cited": [4]}
        ),
        json.dumps({"answer": "The cache is kept in SQLite.", "cited": [4, 77]}),
        json.dumps({"answer": "The cache is kept in SQLite.", "cited": []}),
    ]
    c = client(fake)
    first = compose_answer(c, "Where is the cache?", given)
    assert (first.by, first.cited) == ("llm", (4,))
    for i in range(2):
        fallback = compose_answer(c, f"Where is the cache ({i})?", given)
        assert fallback.by == "local" and fallback.cited == (4, 9)
        assert "#4 The cache is kept in SQLite" in fallback.text
    assert compose_answer(None, "q", []).cited == ()


def test_llm_summaries_are_used_only_when_faithful(fake: FakeLlm, store: MemoryStore) -> None:
    text = (
        "We moved the embedding cache out of the server process. The server no longer holds "
        "vectors in memory; it reads them from the usearch index beside the database, which is "
        "rebuilt when missing or stale. This keeps resident memory under the 400 MB target at "
        "100k memories and means a crash never loses vectors, because SQLite stays the truth. "
        "Never write vectors only to the index. The index file is a cache: deleting it costs "
        "one rebuild at the next start, and the rebuild is incremental when only a few "
        "memories changed since the index was saved, so a restart after an upgrade is quick. "
        "The index is saved when the server stops and "
        "after large ingests, never on every write."
    )
    m = store.get(store.add(NewMemory(text=text, kind=Kind.DECISION)).id)
    fake.replies = [
        json.dumps(
            {
                "summary": "The server no longer holds vectors in memory; it reads them "
                "from the usearch index beside the database."
            }
        ),
        json.dumps({"summary": "Vectors now live in Pinecone for speed."}),
    ]
    comp = LlmCompressor(client(fake))
    assert comp.summary(m).startswith("The server no longer holds vectors"), comp.client.stats()
    other = store.get(store.add(NewMemory(text=text + " The same holds for tests.")).id)
    assert comp.summary(other) == DeterministicCompressor().summary(other)  # Pinecone: invented
    assert comp.client.stats()["invalid"] == 1
    short = store.get(store.add(NewMemory(text="Use ruff.")).id)
    calls = len(fake.requests)
    comp.summary(short)
    assert len(fake.requests) == calls  # too short to need a model
    assert type(llm_compressor(None)) is DeterministicCompressor


def test_consolidation_without_an_llm_calls_nothing(fake: FakeLlm, store: MemoryStore) -> None:
    store.add(NewMemory(text="A long note. " * 80))
    llm_config.configure(LlmConfig())
    report = consolidate.run(store)
    assert report.levels_filled == 1 and fake.requests == []
    llm_config.configure(LlmConfig(url=fake.url, model="test-model", uses=("summaries",)))
    fake.replies = ['{"summary": "A long note."}']
    store.add(NewMemory(text="Another long note. " * 80))
    consolidate.run(store)
    assert len(fake.requests) >= 1


def test_ask_uses_the_model_to_classify_and_answer_with_the_same_cited_items(
    fake: FakeLlm, store: MemoryStore
) -> None:
    from predictive.ask import ask

    mid = store.add(
        NewMemory(
            "The cache is kept in SQLite, not Redis, so the tool runs offline", kind=Kind.DECISION
        )
    ).id
    local = ask(store, "Where is the cache kept?")
    fake.replies = [
        '{"kind": "decision"}',
        json.dumps({"answer": "The cache is kept in SQLite, not Redis.", "cited": [mid]}),
    ]
    answered = ask(store, "Where is the cache kept?", llm=client(fake, store))
    assert "answer" not in local
    assert answered["type"] == "decision" and answered["answer"]["cited"] == [mid]
    assert answered["answer"]["by"] == "llm"
    assert [i["id"] for i in answered["items"]] == [i["id"] for i in local["items"]]
    fake.replies = ['{"kind": "decision"}', '{"answer": "Somewhere.", "cited": [999]}']
    refused = ask(store, "Where is the cache kept now?", llm=client(fake, store))
    assert "answer" not in refused and refused["items"][0]["id"] == mid


def test_the_scanner_opens_what_the_model_judges_a_conflict_and_the_rules_miss(
    fake: FakeLlm, store: MemoryStore
) -> None:
    from predictive.conflicts import scan_and_record
    from predictive.llm_judge import scanner_judge

    a = store.add(NewMemory("Deployments are driven by Ansible playbooks", kind=Kind.CONVENTION)).id
    b = store.add(
        NewMemory("Terraform now provisions deployments; the playbooks are gone", kind=Kind.FACT)
    ).id
    assert scan_and_record(store, [b]) == []  # the local rules see no marker
    fake.replies = [
        json.dumps(
            {
                "verdict": "supersedes",
                "reason": "B moved deployments from Ansible to Terraform",
                "confidence": 0.8,
                "quote_a": "driven by Ansible playbooks",
                "quote_b": "the playbooks are gone",
            }
        )
    ]
    opened = scan_and_record(store, [b], judge=scanner_judge(client(fake, store)))
    assert len(opened) == 1
    [c] = store.contradictions.query()
    assert {c.memory_a, c.memory_b} == {a, b} and "Terraform" in (c.reason or "")
    assert scanner_judge(None) is None
