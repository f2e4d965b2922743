"""How the user configures the optional LLM: the editor's ``livingMemory.llm`` settings and the
CLI's ``LIVING_MEMORY_LLM_*`` environment, with the key only ever read from its variable."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from predictive import llm
from server.settings import load
from tests.llm_server import FakeLlm
from tests.test_cli import ok


@pytest.fixture(autouse=True)
def _fresh_llm_state() -> Iterator[None]:
    """Each test starts with closed breakers and free slots (a port may be reused)."""
    llm.reset()
    yield
    llm.reset()


def test_editor_settings_carry_a_typed_llm_section() -> None:
    s, problems = load(
        {
            "llm": {
                "url": "http://localhost:11434/v1",
                "model": "qwen2.5-coder:7b",
                "apiKeyEnv": "MY_KEY",
                "maxCostPerDay": 0.5,
                "models": {"qwen": {"maxOutputTokens": 300}},
                "whatever": 1,
            }
        }
    )
    assert problems == []
    assert s.llm.enabled and s.llm.api_key_env == "MY_KEY" and s.llm.max_cost_per_day == 0.5
    assert s.llm.model_settings().max_output_tokens == 300
    assert not load({})[0].llm.enabled


def test_a_bad_llm_setting_is_reported_and_nothing_is_called() -> None:
    s, problems = load({"llm": {"url": "localhost:11434", "model": "m"}, "budget": 4000})
    assert not s.llm.enabled and s.budget == 4000
    assert len(problems) == 1 and "llm" in problems[0]


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    f = FakeLlm(replies=['{"summary": "Note about the cache and its rebuild."}'])
    yield f
    f.close()


def test_the_cli_uses_the_llm_of_its_environment(
    fake: FakeLlm, env: dict[str, str], tmp_path: Path
) -> None:
    for i in range(3):
        ok(
            [
                "remember",
                f"Billing rule {i}: invoices round half to even.",
                "--anchor",
                f"file:src/billing/b{i}.py",
            ],
            env,
        )
    ok(["consolidate"], env)
    assert fake.requests == []  # not configured: nothing is sent
    env = dict(env)
    env["LIVING_MEMORY_LLM_URL"] = fake.url
    env["LIVING_MEMORY_LLM_MODEL"] = "test-model"
    env["LIVING_MEMORY_LLM_API_KEY_ENV"] = "LM_TEST_SECRET"
    env["LM_TEST_SECRET"] = "sk-live-0123456789abcdefghijklmnop"
    ok(
        [
            "remember",
            "Billing rule 3: credit notes reuse the invoice number space.",
            "--anchor",
            "file:src/billing/b3.py",
        ],
        env,
    )
    out = ok(["consolidate", "--json"], env)
    assert fake.requests  # the changed area's summary was asked for
    assert fake.headers[0]["Authorization"] == "Bearer sk-live-0123456789abcdefghijklmnop"
    assert "sk-live" not in out
    db = Path(env["LIVING_MEMORY_DB"])
    assert all(b"sk-live" not in p.read_bytes() for p in db.parent.iterdir() if p.is_file())
    json.loads(out)
