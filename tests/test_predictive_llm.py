"""The optional LLM client against a local server speaking the chat-completions protocol."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from predictive import llm, llm_config
from predictive.llm import LlmClient, client_for, parse_json_answer, quoted, schema_problems
from predictive.llm_config import LlmConfig, ModelSettings, config_from_env, load_config
from storage import MemoryStore
from tests.llm_server import FakeLlm

SCHEMA = {
    "type": "object",
    "required": ["verdict"],
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
}


@pytest.fixture(autouse=True)
def _fresh_llm_state() -> Iterator[None]:
    """Each test starts with closed breakers and free slots (a port may be reused)."""
    llm.reset()
    yield
    llm.reset()


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    f = FakeLlm(replies=['{"verdict": "yes"}'])
    yield f
    f.close()


def config(fake: FakeLlm, **kw: object) -> LlmConfig:
    return LlmConfig(url=fake.url, model="test-model", **kw)  # type: ignore[arg-type]


def test_a_valid_answer_is_used_and_the_request_is_well_formed(fake: FakeLlm) -> None:
    client = LlmClient(config(fake, api_key_env="LM_TEST_KEY"))
    assert client.ask_json("judge", "system text", "user text", SCHEMA) == {"verdict": "yes"}
    body = fake.requests[0]
    assert body["model"] == "test-model"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == ModelSettings().max_output_tokens
    assert client.stats()["calls"] == 1


def test_the_api_key_comes_from_the_named_variable_and_only_goes_in_the_header(
    fake: FakeLlm, monkeypatch: pytest.MonkeyPatch, store: MemoryStore
) -> None:
    monkeypatch.setenv("LM_TEST_KEY", "sk-test-abcdefghijklmnopqrstuvwxyz123456")
    client = LlmClient(config(fake, api_key_env="LM_TEST_KEY"), store=store)
    client.ask_json("judge", "s", "u", SCHEMA)
    assert fake.headers[0]["Authorization"] == "Bearer sk-test-abcdefghijklmnopqrstuvwxyz123456"
    dump = "\n".join(str(r) for r in store.conn.execute("SELECT * FROM llm_cache"))
    assert "sk-test" not in dump and "sk-test" not in json.dumps(fake.requests)


def test_secrets_are_redacted_before_they_are_sent(fake: FakeLlm) -> None:
    client = LlmClient(config(fake))
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    client.ask_json("judge", "system", f"the token is {secret} and password=hunter22", SCHEMA)
    sent = "\n".join(fake.prompts())
    assert secret not in sent and "hunter22" not in sent
    assert "the token is" in sent


def test_nothing_is_called_when_no_model_is_configured(fake: FakeLlm) -> None:
    llm_config.configure(LlmConfig())
    assert client_for(None) is None
    assert client_for(None, LlmConfig(url=fake.url)) is None  # a URL without a model is not enough
    with pytest.raises(ValueError):
        LlmClient(LlmConfig(model="m"))
    assert fake.requests == []


def test_a_purpose_the_user_did_not_allow_is_never_sent(fake: FakeLlm) -> None:
    client = LlmClient(config(fake, uses=("ask",)))
    assert client.ask_json("extraction", "s", "u", SCHEMA) is None
    assert fake.requests == []


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("I think the answer is yes.", "not JSON"),
        ('{"verdict": "maybe"}', "$.verdict"),
        ('{"other": 1}', "$.verdict"),
        ("[1, 2]", "not JSON"),
        ({"raw": "<html>oops</html>"}, "JSONDecodeError"),
        ({"status": 500}, "HTTPError"),
    ],
)
def test_bad_answers_fall_back_and_are_counted_not_stored(
    fake: FakeLlm, store: MemoryStore, reply: object, reason: str
) -> None:
    fake.replies = [reply]  # type: ignore[list-item]
    client = LlmClient(config(fake), store=store)
    assert client.ask_json("judge", "s", "u", SCHEMA) is None
    stats = client.stats()
    assert stats["invalid"] + stats["failures"] == 1
    assert any(reason in r for r in stats["reasons"]), stats["reasons"]
    assert store.conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 0


def test_an_answer_failing_the_callers_check_is_discarded(fake: FakeLlm) -> None:
    client = LlmClient(config(fake))
    assert client.ask_json("judge", "s", "u", SCHEMA, check=lambda a: "quote not found") is None
    assert client.stats()["invalid"] == 1


def test_a_timeout_falls_back(fake: FakeLlm) -> None:
    fake.replies = [{"delay": 1.0, "text": '{"verdict": "yes"}'}]
    client = LlmClient(config(fake, timeout_seconds=0.2))
    started = time.monotonic()
    assert client.ask_json("judge", "s", "u", SCHEMA) is None
    assert time.monotonic() - started < 0.9
    assert client.stats()["failures"] == 1


def test_the_breaker_opens_after_failures_and_closes_after_a_good_trial(fake: FakeLlm) -> None:
    now = [1000.0]
    fake.replies = [{"status": 500}, {"status": 503}, {"status": 500}, '{"verdict": "no"}']
    client = LlmClient(config(fake, breaker_failures=3, breaker_cooldown_seconds=60))
    client.shared.breaker.clock = lambda: now[0]
    for i in range(3):
        assert client.ask_json("judge", "s", f"u{i}", SCHEMA) is None
    assert client.shared.breaker.state == "open"
    assert client.ask_json("judge", "s", "u3", SCHEMA) is None  # refused without calling
    assert len(fake.requests) == 3 and client.stats()["refused_breaker"] == 1
    now[0] += 61
    assert client.shared.breaker.state == "half-open"
    assert client.ask_json("judge", "s", "u4", SCHEMA) == {"verdict": "no"}
    assert client.shared.breaker.state == "closed"


def test_a_failed_trial_opens_the_breaker_again(fake: FakeLlm) -> None:
    now = [0.0]
    fake.replies = [{"status": 500}]
    client = LlmClient(config(fake, breaker_failures=1, breaker_cooldown_seconds=10))
    client.shared.breaker.clock = lambda: now[0]
    client.ask_json("judge", "s", "a", SCHEMA)
    now[0] += 11
    client.ask_json("judge", "s", "b", SCHEMA)
    assert client.shared.breaker.state == "open" and len(fake.requests) == 2


def test_the_cache_avoids_a_second_call_and_survives_a_new_run(
    fake: FakeLlm, store: MemoryStore
) -> None:
    first = LlmClient(config(fake), store=store)
    assert first.ask_json("judge", "s", "same", SCHEMA) == {"verdict": "yes"}
    second = LlmClient(config(fake), store=store)
    assert second.ask_json("judge", "s", "same", SCHEMA) == {"verdict": "yes"}
    assert len(fake.requests) == 1 and second.stats()["cached"] == 1
    assert second.ask_json("judge", "s", "different", SCHEMA) == {"verdict": "yes"}
    assert len(fake.requests) == 2


def test_the_run_budget_of_calls_and_tokens_stops_calls(fake: FakeLlm) -> None:
    client = LlmClient(config(fake, max_calls_per_run=2))
    results = [client.ask_json("judge", "s", f"q{i}", SCHEMA) for i in range(4)]
    assert results == [{"verdict": "yes"}] * 2 + [None] * 2
    assert len(fake.requests) == 2
    assert client.stats()["reasons"]["calls per run"] == 2
    small = LlmClient(config(fake, max_tokens_per_run=100))  # less than one call's output
    assert small.ask_json("judge", "s", "q", SCHEMA) is None and len(fake.requests) == 2


def test_the_day_budget_counts_across_runs_in_the_store(fake: FakeLlm, store: MemoryStore) -> None:
    fake.usage = {"prompt_tokens": 400, "completion_tokens": 200}
    cfg = config(
        fake, max_tokens_per_day=1400, models={"test": ModelSettings(max_output_tokens=300)}
    )
    assert LlmClient(cfg, store=store).ask_json("judge", "s", "a", SCHEMA) is not None
    assert LlmClient(cfg, store=store).ask_json("judge", "s", "b", SCHEMA) is not None
    refused = LlmClient(cfg, store=store)
    assert refused.ask_json("judge", "s", "c", SCHEMA) is None  # 1200 used + 300 out + prompt
    assert refused.stats()["reasons"] == {"tokens per day": 1}
    assert len(fake.requests) == 2
    row = store.conn.execute("SELECT calls, prompt_tokens, completion_tokens FROM llm_usage")
    assert row.fetchone() == (2, 800, 400)


def test_the_cost_budget_refuses_an_expensive_call(fake: FakeLlm) -> None:
    priced = {"test": ModelSettings(input_cost_per_mtok=1e6, output_cost_per_mtok=1e6)}
    client = LlmClient(config(fake, max_cost_per_day=5.0, models=priced))
    assert client.ask_json("judge", "s", "u", SCHEMA) is None
    assert client.stats()["reasons"] == {"cost per day": 1} and fake.requests == []


def test_concurrency_is_limited(fake: FakeLlm) -> None:
    fake.replies = [{"delay": 0.15, "text": '{"verdict": "yes"}'}]
    client = LlmClient(config(fake, concurrency=2))
    out = client.map(lambda i: client.ask_json("judge", "s", f"q{i}", SCHEMA), range(6))
    assert out == [{"verdict": "yes"}] * 6
    assert fake.max_in_flight == 2
    # and other runs of the same model share the slots
    clients = [LlmClient(config(fake, concurrency=2)) for _ in range(4)]
    fake.max_in_flight = 0
    threads = [
        threading.Thread(target=c.ask_json, args=("judge", "s", f"t{i}", SCHEMA))
        for i, c in enumerate(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake.max_in_flight == 2


def test_per_model_settings_pick_the_longest_matching_family(fake: FakeLlm) -> None:
    cfg = LlmConfig(
        url=fake.url,
        model="qwen2.5-coder:7b",
        models={"qwen2.5": ModelSettings(max_output_tokens=99), "q": ModelSettings()},
    )
    assert cfg.model_settings().max_output_tokens == 99
    assert LlmConfig(url=fake.url, model="deepseek-r1:8b").model_settings().reasoning
    note = LlmConfig(url=fake.url, model="llama3.1").model_settings().prompt_note
    LlmClient(LlmConfig(url=fake.url, model="llama3.1")).ask_json("judge", "sys", "u", SCHEMA)
    assert fake.requests[0]["messages"][0]["content"].endswith(note) and note


def test_json_answers_in_fences_or_after_reasoning_are_read() -> None:
    assert parse_json_answer('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_answer('<think>hmm {no}</think>\n{"a": 2}') == {"a": 2}
    with pytest.raises(ValueError):
        parse_json_answer('Sure! {"a": 1}')
    assert schema_problems({"n": True}, {"properties": {"n": {"type": "integer"}}})
    assert not schema_problems([1, 2], {"type": "array", "items": {"type": "integer"}})
    assert quoted("Use  the `db` module", "we said: use the db module everywhere")
    assert not quoted("", "anything") and not quoted("use redis", "use the db module")


def test_settings_are_forgiving_and_report_bad_values(tmp_path: Path) -> None:
    cfg, problems = load_config(
        {"url": "ftp://x", "model": "m", "concurrency": "lots", "timeoutSeconds": 5, "zzz": 1}
    )
    assert cfg.model == "m" and cfg.url == "" and cfg.concurrency == 2
    assert cfg.timeout_seconds == 5.0 and not cfg.enabled
    assert len(problems) == 2 and all("using the default" in p for p in problems)
    cfg, problems = load_config({"models": {"x": {"maxOutputTokens": 5, "temperature": 0.5}}})
    assert cfg.models["x"].temperature == 0.5 and cfg.models["x"].max_output_tokens == 600
    assert problems
    assert load_config("nope")[1]
    path = tmp_path / "lm.json"
    path.write_text(json.dumps({"llm": {"url": "http://localhost:11434/v1", "model": "a"}}))
    env = {
        "LIVING_MEMORY_LLM_CONFIG": str(path),
        "LIVING_MEMORY_LLM_MODEL": "b",
        "LIVING_MEMORY_LLM_USES": "ask,judge",
    }
    cfg, problems = config_from_env(env)
    assert (cfg.url, cfg.model, cfg.uses, problems) == (
        "http://localhost:11434/v1",
        "b",
        ("ask", "judge"),
        [],
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert config_from_env({"LIVING_MEMORY_LLM_CONFIG": str(bad)})[1]
    assert not config_from_env({})[0].enabled


def test_a_broken_cache_table_costs_the_cache_not_the_answer(
    fake: FakeLlm, store: MemoryStore
) -> None:
    store.conn.execute("DROP TABLE llm_cache")
    store.conn.execute("DROP TABLE llm_usage")
    client = LlmClient(config(fake), store=store)
    assert client.ask_json("judge", "s", "u", SCHEMA) == {"verdict": "yes"}
    assert client.ask_json("judge", "s", "u", SCHEMA) == {"verdict": "yes"}
    assert len(fake.requests) == 2  # no cache, but answers all the same


def test_concurrent_calls_share_the_store_safely(fake: FakeLlm, store: MemoryStore) -> None:
    fake.replies = [{"delay": 0.05, "text": '{"verdict": "no"}'}]
    client = LlmClient(config(fake, concurrency=4), store=store)
    out = client.map(lambda i: client.ask_json("judge", "s", f"q{i}", SCHEMA), range(12))
    assert out == [{"verdict": "no"}] * 12
    assert store.conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 12
    assert store.conn.execute("SELECT calls FROM llm_usage").fetchone()[0] == 12


def test_prose_instead_of_json_counts_towards_the_breaker_a_wrong_quote_does_not(
    fake: FakeLlm,
) -> None:
    fake.replies = ["Sure! Here is my plan: first I will read the files."]
    prose = LlmClient(config(fake, breaker_failures=2))
    for i in range(3):
        assert prose.ask_json("judge", "s", f"p{i}", SCHEMA) is None
    assert prose.shared.breaker.state == "open" and len(fake.requests) == 2
    llm.reset()
    fake.replies = ['{"verdict": "yes"}']
    picky = LlmClient(config(fake, breaker_failures=2))
    for i in range(3):
        assert picky.ask_json("judge", "s", f"q{i}", SCHEMA, check=lambda a: "no quote") is None
    assert picky.shared.breaker.state == "closed" and len(fake.requests) == 5
