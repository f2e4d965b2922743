"""Settings of an optional OpenAI-compatible chat endpoint: typed, frozen, forgiving.

Nothing is called unless a URL and a model are set. The API key is never part of the
settings: they name the environment variable that holds it (``apiKeyEnv``). Per-model
settings (output tokens, prices, JSON mode, a prompt note) come from a built-in profile of
the model's family, overridden by ``models`` entries whose key the model name starts with.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

USES = ("extraction", "summaries", "judge", "ask")
ENV_PREFIX = "LIVING_MEMORY_LLM_"


@dataclass(frozen=True)
class ModelSettings:
    """What one model needs: its output budget, prices and how to ask it for JSON."""

    max_output_tokens: int = 600
    temperature: float = 0.0
    json_mode: bool = True  # send response_format {"type": "json_object"}
    reasoning: bool = False  # a thinking model: its reasoning shares the output budget
    input_cost_per_mtok: float = 0.0  # price per million prompt tokens (any currency)
    output_cost_per_mtok: float = 0.0
    context_tokens: int = 8192
    prompt_note: str = ""  # appended to every system prompt for this model

    def __post_init__(self) -> None:
        if not 16 <= self.max_output_tokens <= 100_000:
            raise ValueError("maxOutputTokens must be between 16 and 100000")
        if not 0 <= self.temperature <= 2:
            raise ValueError("temperature must be between 0 and 2")
        if self.input_cost_per_mtok < 0 or self.output_cost_per_mtok < 0:
            raise ValueError("prices cannot be negative")
        if not 512 <= self.context_tokens <= 10_000_000:
            raise ValueError("contextTokens must be between 512 and 10000000")


# Families whose defaults differ (seed 002 anti-patterns 1 and 3): thinking models spend
# output tokens on reasoning, small local models need to be told to answer with JSON only.
JSON_ONLY = "Answer with one JSON object only: no prose, no plan, no code fence."
PROFILES: dict[str, ModelSettings] = {
    "gpt-4o-mini": ModelSettings(input_cost_per_mtok=0.15, output_cost_per_mtok=0.6),
    "gpt-4o": ModelSettings(input_cost_per_mtok=2.5, output_cost_per_mtok=10.0),
    "o1": ModelSettings(max_output_tokens=4000, reasoning=True, json_mode=False),
    "o3": ModelSettings(max_output_tokens=4000, reasoning=True, json_mode=False),
    "deepseek-r1": ModelSettings(
        max_output_tokens=4000, reasoning=True, json_mode=False, prompt_note=JSON_ONLY
    ),
    "qwen": ModelSettings(prompt_note=JSON_ONLY),
    "llama": ModelSettings(prompt_note=JSON_ONLY),
    "mistral": ModelSettings(prompt_note=JSON_ONLY),
    "gemma": ModelSettings(prompt_note=JSON_ONLY),
    "phi": ModelSettings(prompt_note=JSON_ONLY),
}


@dataclass(frozen=True)
class LlmConfig:
    """Where the endpoint is, which model, and the limits every call is held to."""

    url: str = ""  # base URL, e.g. http://localhost:11434/v1 (Ollama) or https://api.openai.com/v1
    model: str = ""
    api_key_env: str = ""  # name of the environment variable holding the key; never the key
    uses: tuple[str, ...] = USES
    timeout_seconds: float = 30.0
    concurrency: int = 2
    max_calls_per_run: int = 200
    max_tokens_per_run: int = 200_000
    max_tokens_per_day: int = 2_000_000
    max_cost_per_day: float = 1.0
    breaker_failures: int = 3
    breaker_cooldown_seconds: float = 60.0
    cache: bool = True
    models: dict[str, ModelSettings] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.api_key_env and not self.api_key_env.replace("_", "").isalnum():
            raise ValueError("apiKeyEnv must be the name of an environment variable")
        if unknown := [u for u in self.uses if u not in USES]:
            raise ValueError(f"uses: unknown {', '.join(unknown)} (known: {', '.join(USES)})")
        if not 0.1 <= self.timeout_seconds <= 600:
            raise ValueError("timeoutSeconds must be between 0.1 and 600")
        if not 1 <= self.concurrency <= 64:
            raise ValueError("concurrency must be between 1 and 64")
        if min(self.max_calls_per_run, self.max_tokens_per_run, self.max_tokens_per_day) < 0:
            raise ValueError("budgets cannot be negative")
        if self.max_cost_per_day < 0:
            raise ValueError("maxCostPerDay cannot be negative")
        if not 1 <= self.breaker_failures <= 1000:
            raise ValueError("breakerFailures must be between 1 and 1000")
        if not 0 <= self.breaker_cooldown_seconds <= 86_400:
            raise ValueError("breakerCooldownSeconds must be between 0 and 86400")

    @property
    def enabled(self) -> bool:
        return bool(self.url and self.model)

    def uses_for(self, purpose: str) -> bool:
        return self.enabled and purpose in self.uses

    def model_settings(self) -> ModelSettings:
        """The user's settings for this model, else its family's profile, else defaults."""
        name = self.model.lower()
        for table in (self.models, PROFILES):
            matches = [k for k in table if name.startswith(k.lower())]
            if matches:
                return table[max(matches, key=len)]
        return ModelSettings()

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(w[:1].upper() + w[1:] for w in rest)


def _coerce(value: Any, default: Any, key: str) -> Any:
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on", "0", "false"):
            return value.lower() in ("1", "true", "yes", "on")
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValueError(f"{key}: expected an integer, got {value!r}")
    if isinstance(default, float):
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise ValueError(f"{key}: expected a number, got {value!r}") from None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise ValueError(f"{key}: expected a number, got {value!r}")
    if isinstance(default, str):
        if isinstance(value, str):
            return value.strip()
        raise ValueError(f"{key}: expected a string, got {value!r}")
    if isinstance(default, tuple):
        items = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
        if isinstance(items, list | tuple) and all(isinstance(v, str) for v in items):
            return tuple(v for v in items if v)
        raise ValueError(f"{key}: expected a list of strings, got {value!r}")
    raise ValueError(f"{key}: unsupported value {value!r}")


def _forgiving(cls: type, raw: Mapping[str, Any], where: str) -> tuple[Any, list[str]]:
    """``cls`` from ``raw``: each bad key is reported and left at its default."""
    fields = {_camel(f.name): f for f in dataclasses.fields(cls)}
    fields.update({f.name: f for f in dataclasses.fields(cls)})
    defaults = cls()
    good: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        f = fields.get(key) if isinstance(key, str) else None
        if f is None:
            continue  # unknown keys are ignored
        try:
            if f.name == "models":
                if not isinstance(value, Mapping):
                    raise ValueError(f"models: expected an object, got {value!r}")
                models = {}
                for name, sub in value.items():
                    if not isinstance(sub, Mapping):
                        problems.append(f"{where}.models.{name}: expected an object")
                        continue
                    ms, more = _forgiving(ModelSettings, sub, f"{where}.models.{name}")
                    models[str(name)] = ms
                    problems += more
                good[f.name] = models
            else:
                good[f.name] = _coerce(value, getattr(defaults, f.name), _camel(f.name))
            cls(**{f.name: good[f.name]})
        except (ValueError, TypeError) as e:
            good.pop(f.name, None)
            problems.append(f"{where}.{e} — using the default")
    try:
        return cls(**good), problems
    except (ValueError, TypeError) as e:
        return cls(), [*problems, f"{where}: {e} — LLM settings ignored"]


def load_config(raw: Any, where: str = "llm") -> tuple[LlmConfig, list[str]]:
    """An :class:`LlmConfig` from a JSON-like object, and a message per ignored value."""
    if raw is None:
        return LlmConfig(), []
    if not isinstance(raw, Mapping):
        return LlmConfig(), [f"{where}: expected an object, got {type(raw).__name__}"]
    config, problems = _forgiving(LlmConfig, raw, where)
    return config, problems


_ENV_KEYS = {
    "URL": "url",
    "MODEL": "model",
    "API_KEY_ENV": "apiKeyEnv",
    "USES": "uses",
    "TIMEOUT": "timeoutSeconds",
    "CONCURRENCY": "concurrency",
    "MAX_CALLS_PER_RUN": "maxCallsPerRun",
    "MAX_TOKENS_PER_RUN": "maxTokensPerRun",
    "MAX_TOKENS_PER_DAY": "maxTokensPerDay",
    "MAX_COST_PER_DAY": "maxCostPerDay",
    "CACHE": "cache",
}


def config_from_env(
    environ: Mapping[str, str] | None = None, config_file: Path | None = None
) -> tuple[LlmConfig, list[str]]:
    """The CLI's LLM settings: the ``llm`` table of a JSON file (``LIVING_MEMORY_LLM_CONFIG``
    or ``config_file``), overridden by ``LIVING_MEMORY_LLM_*`` variables."""
    env = os.environ if environ is None else environ
    raw: dict[str, Any] = {}
    problems: list[str] = []
    path = config_file or (
        Path(env[ENV_PREFIX + "CONFIG"]) if env.get(ENV_PREFIX + "CONFIG") else None
    )
    if path is not None:
        import json

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            table = data.get("llm", data) if isinstance(data, dict) else None
            if isinstance(table, dict):
                raw.update(table)
            else:
                problems.append(f"{path}: expected a JSON object")
        except (OSError, ValueError) as e:
            problems.append(f"{path}: {e}")
    for suffix, key in _ENV_KEYS.items():
        if (value := env.get(ENV_PREFIX + suffix)) is not None:
            raw[key] = value
    config, more = load_config(raw, "llm")
    return config, problems + more


_CONFIG = LlmConfig()
_CONFIG_LOCK = threading.Lock()


def configure(config: LlmConfig) -> None:
    """Make ``config`` the process's LLM (the server on settings, the CLI at start)."""
    global _CONFIG
    with _CONFIG_LOCK:
        _CONFIG = config


def configured() -> LlmConfig:
    with _CONFIG_LOCK:
        return _CONFIG
