"""An optional OpenAI-compatible chat model, held to budgets and never trusted blindly.

Every call (seed 002 anti-patterns 1–8): is redacted before it leaves the machine; asks for
one JSON object and checks it against a schema (and the caller's own check, e.g. that a quote
occurs in its source) — an invalid answer is discarded, counted and logged, never stored;
is cached by model + prompt hash (only valid answers); is refused over the run's call and
token budgets or the day's token and cost budgets; waits for a slot under the concurrency
limit; times out; and counts towards a circuit breaker that stops calling for a cool-down
after repeated failures. Whatever fails, the caller gets ``None`` and uses its local path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from predictive.llm_config import JSON_ONLY, LlmConfig, ModelSettings, configured
from predictive.tokens import count_tokens
from storage.redact import redact, redact_value

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")
Schema = Mapping[str, Any]
Check = Callable[[Any], str | None]
"""A caller's own check of a schema-valid answer: None when fine, else why not."""

PROMPT_OVERHEAD = 16  # tokens a chat request adds around the messages

Send = Callable[[list[dict[str, str]], int], str]
"""A model the host reaches for us (the editor's language models, an MCP client's sampling):
the chat messages and the most output tokens in, the model's text out. Raises
:class:`HostUnavailable` (or TimeoutError) when it cannot answer."""


class HostUnavailable(Exception):
    """The host declined the request or had no model to ask."""


HOST_SETTINGS = ModelSettings(json_mode=False, prompt_note=JSON_ONLY)
"""A host's model is unknown to us: ask for JSON in words, with the default output budget."""


# ---- answer validation ---------------------------------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def schema_problems(value: Any, schema: Schema, path: str = "$") -> list[str]:
    """What is wrong with ``value`` under a small JSON Schema subset (type, enum, required,
    properties, items, minItems/maxItems, minLength/maxLength, minimum/maximum)."""
    problems: list[str] = []
    want = schema.get("type")
    if want:
        ok = isinstance(value, _TYPES[want]) and not (
            want in ("integer", "number") and isinstance(value, bool)
        )
        if not ok:
            return [f"{path}: expected {want}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path}: longer than {schema['maxLength']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: above {schema['maximum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                problems += schema_problems(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                problems.append(f"{path}.{key}: missing")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problems += schema_problems(value[key], sub, f"{path}.{key}")
    return problems


_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```\s*$", re.S)
_THINK = re.compile(r"<think>.*?</think>", re.S)


def parse_json_answer(text: str) -> Any:
    """The JSON object of a model's answer: reasoning blocks and a code fence around it are
    tolerated, anything else is not (raises ValueError)."""
    body = _THINK.sub("", text).strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    if not body.startswith("{"):
        raise ValueError("the answer is not a JSON object")
    return json.loads(body)


# ---- circuit breaker and budgets -----------------------------------------------------------


class CircuitBreaker:
    """Opens after ``failures`` failures in a row; after ``cooldown`` seconds lets one trial
    call through (half-open) and closes again when it succeeds."""

    def __init__(
        self, failures: int, cooldown: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold = failures
        self.cooldown = cooldown
        self.clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial = False
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        with self._lock:
            if self._opened_at is None:
                return "closed"
            if self.clock() - self._opened_at >= self.cooldown:
                return "half-open"
            return "open"

    def allow(self) -> bool:
        with self._lock:
            if self._opened_at is None:
                return True
            if self.clock() - self._opened_at < self.cooldown or self._trial:
                return False
            self._trial = True  # one trial call at a time while half-open
            return True

    def success(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._trial = 0, None, False

    def failure(self) -> None:
        with self._lock:
            self._failures += 1
            self._trial = False
            if self._opened_at is not None or self._failures >= self.threshold:
                if self._opened_at is None:
                    log.warning(
                        "LLM: %d failures in a row, not calling it for %.0f s",
                        self._failures,
                        self.cooldown,
                    )
                self._opened_at = self.clock()


@dataclass
class Counters:
    """What a client did, for reports and tests."""

    calls: int = 0
    cached: int = 0
    failures: int = 0
    invalid: int = 0
    refused_budget: int = 0
    refused_breaker: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, cost=round(self.cost, 6), reasons=dict(self.reasons))


class _Shared:
    """What every client of one endpoint + model shares in a process: the breaker, the
    concurrency slots and (without a store) the day's usage."""

    def __init__(self, config: LlmConfig) -> None:
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_cooldown_seconds)
        self.slots = threading.BoundedSemaphore(config.concurrency)
        self.lock = threading.Lock()
        self.day_usage: dict[str, tuple[int, float]] = {}
        self.in_flight = 0
        self.max_in_flight = 0


_SHARED: dict[tuple[Any, ...], _Shared] = {}
_SHARED_LOCK = threading.Lock()


def _shared(config: LlmConfig, host: str = "") -> _Shared:
    key = (
        f"host:{host}" if host else config.url,
        host or config.model,
        config.concurrency,
        config.breaker_failures,
        config.breaker_cooldown_seconds,
    )
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = _Shared(config)
        return _SHARED[key]


def reset() -> None:
    """Forget every endpoint's breaker, slots and in-memory usage (a fresh process's state)."""
    with _SHARED_LOCK:
        _SHARED.clear()


def _today() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


class Usage:
    """The day's tokens and cost per model: in the project's store when there is one."""

    def __init__(self, store: Any | None, shared: _Shared, model: str) -> None:
        self.store = store
        self.shared = shared
        self.model = model

    def today(self) -> tuple[int, float]:
        day = _today()
        if self.store is None:
            with self.shared.lock:
                return self.shared.day_usage.get(day, (0, 0.0))
        try:
            return self.store.llm.usage(day, self.model)
        except Exception:
            log.warning("could not read LLM usage from the store", exc_info=True)
            with self.shared.lock:
                return self.shared.day_usage.get(day, (0, 0.0))

    def add(self, prompt: int, completion: int, cost: float) -> None:
        day = _today()
        if self.store is None:
            with self.shared.lock:
                tokens, spent = self.shared.day_usage.get(day, (0, 0.0))
                self.shared.day_usage[day] = (tokens + prompt + completion, spent + cost)
            return
        try:
            self.store.llm.add_usage(day, self.model, prompt, completion, cost)
        except Exception:  # counted in memory for this process instead
            log.warning("could not record LLM usage in the store", exc_info=True)
            with self.shared.lock:
                tokens, spent = self.shared.day_usage.get(day, (0, 0.0))
                self.shared.day_usage[day] = (tokens + prompt + completion, spent + cost)


# ---- the client ----------------------------------------------------------------------------


class LlmClient:
    """Calls one configured model; one instance is one *run* (its call and token budgets).

    ``store`` (the project's :class:`~storage.MemoryStore`: a connection per thread) keeps the
    cache and the day's usage; without it both live in memory for the process. With ``send``
    the calls go to a host's model named ``host`` instead of the configured endpoint, held to
    the same budgets, cache, validation and circuit breaker.
    """

    def __init__(
        self,
        config: LlmConfig,
        *,
        store: Any | None = None,
        opener: Callable[..., Any] | None = None,
        send: Send | None = None,
        host: str = "",
    ) -> None:
        if send is None and not config.enabled:
            raise ValueError("the LLM is not configured (url and model are needed)")
        if send is not None and not host:
            raise ValueError("a host's model needs a name")
        self.config = config
        self.model = host if send is not None else config.model
        self._send = send
        self.settings: ModelSettings = (
            HOST_SETTINGS if send is not None else config.model_settings()
        )
        self.store = store
        self.shared = _shared(config, host if send is not None else "")
        self.usage = Usage(store, self.shared, self.model)
        self.counters = Counters()
        self._lock = threading.Lock()
        self._run_tokens = 0
        self._run_calls = 0
        self._memory_cache: dict[str, str] = {}
        self._open = opener or urllib.request.urlopen

    @property
    def endpoint(self) -> str:
        url = self.config.url.rstrip("/")
        return url if url.endswith("/chat/completions") else url + "/chat/completions"

    def uses(self, purpose: str) -> bool:
        if self._send is not None:
            return purpose in self.config.uses
        return self.config.uses_for(purpose)

    # -- public --

    def ask_json(
        self,
        purpose: str,
        system: str,
        user: str,
        schema: Schema,
        check: Check | None = None,
    ) -> Any | None:
        """The model's JSON answer to ``system`` + ``user`` when it is valid, else None."""
        if not self.uses(purpose):
            return None
        note = self.settings.prompt_note
        messages = [
            {"role": "system", "content": redact(system + ("\n" + note if note else ""))},
            {"role": "user", "content": redact(user)},
        ]
        key = self._key(purpose, messages, schema)
        cached = self._cached(key)
        if cached is not None:
            answer = self._valid(cached, schema, check, purpose, cached=True)
            if answer is not None:
                with self._lock:
                    self.counters.cached += 1
                return answer
        reserved = self._admit(messages, purpose)
        if reserved is None:
            return None
        text = self._call(messages, purpose, reserved)
        if text is None:
            return None
        answer = self._valid(text, schema, check, purpose)
        if answer is not None:
            self._remember(key, purpose, json.dumps(redact_value(answer)))
        return answer

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``fn`` over ``items`` with at most ``concurrency`` calls in flight, in order."""
        items = list(items)
        if len(items) <= 1:
            return [fn(i) for i in items]
        workers = min(self.config.concurrency, len(items))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lm-llm") as pool:
            return list(pool.map(fn, items))

    def discard(self, purpose: str, why: str) -> None:
        """Count and log a part of a valid answer the caller could not use."""
        self._count("invalid", why[:40])
        log.info("LLM %s item discarded: %s", purpose, why[:200])

    def stats(self) -> dict[str, Any]:
        with self._lock:
            out = self.counters.to_dict()
        out["breaker"] = self.shared.breaker.state
        return out

    # -- steps --

    def _count(self, name: str, reason: str | None = None) -> None:
        with self._lock:
            setattr(self.counters, name, getattr(self.counters, name) + 1)
            if reason:
                self.counters.reasons[reason] = self.counters.reasons.get(reason, 0) + 1

    def _key(self, purpose: str, messages: list[dict[str, str]], schema: Schema) -> str:
        s = self.settings
        blob = json.dumps(
            [self.model, purpose, messages, schema, s.temperature, s.max_output_tokens],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _cached(self, key: str) -> str | None:
        if not self.config.cache:
            return None
        if self.store is None:
            return self._memory_cache.get(key)
        try:
            return self.store.llm.answer(key)
        except Exception:  # the cache is only a cache
            log.warning("LLM cache unreadable", exc_info=True)
            return None

    def _remember(self, key: str, purpose: str, answer: str) -> None:
        if not self.config.cache:
            return
        if self.store is None:
            self._memory_cache[key] = answer
            return
        try:
            self.store.llm.keep_answer(key, self.model, purpose, answer)
        except Exception:
            log.warning("could not cache an LLM answer", exc_info=True)

    def _cost(self, prompt: int, completion: int) -> float:
        s = self.settings
        return (prompt * s.input_cost_per_mtok + completion * s.output_cost_per_mtok) / 1e6

    def _admit(self, messages: list[dict[str, str]], purpose: str) -> int | None:
        """The tokens reserved for a call the budgets and the breaker allow, else None."""
        c = self.config
        prompt = PROMPT_OVERHEAD + sum(count_tokens(m["content"]) for m in messages)
        worst = prompt + self.settings.max_output_tokens
        day_tokens, day_cost = self.usage.today()
        why = None
        with self._lock:
            if self._run_calls >= c.max_calls_per_run:
                why = "calls per run"
            elif self._run_tokens + worst > c.max_tokens_per_run:
                why = "tokens per run"
            elif day_tokens + worst > c.max_tokens_per_day:
                why = "tokens per day"
            elif (
                day_cost + self._cost(prompt, self.settings.max_output_tokens) > c.max_cost_per_day
            ):
                why = "cost per day"
            elif prompt + self.settings.max_output_tokens > self.settings.context_tokens:
                why = "context window"
            else:
                self._run_calls += 1
                self._run_tokens += worst  # reserved; settled after the call
        if why is not None:
            self._count("refused_budget", why)
            log.info("LLM %s call refused: over the %s budget", purpose, why)
            return None
        if not self.shared.breaker.allow():
            with self._lock:
                self._run_calls -= 1
                self._run_tokens -= worst
            self._count("refused_breaker")
            return None
        return worst

    def _call(self, messages: list[dict[str, str]], purpose: str, reserved: int) -> str | None:
        if self._send is not None:
            return self._call_host(self._send, messages, purpose, reserved)
        s = self.settings
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": s.temperature,
            "max_tokens": s.max_output_tokens,
            "stream": False,
        }
        if s.json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.config.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            self.endpoint, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        prompt_estimate = PROMPT_OVERHEAD + sum(count_tokens(m["content"]) for m in messages)
        shared = self.shared
        with shared.slots:
            with shared.lock:
                shared.in_flight += 1
                shared.max_in_flight = max(shared.max_in_flight, shared.in_flight)
            try:
                with self._open(request, timeout=self.config.timeout_seconds) as response:
                    raw = response.read(4_000_000)
                envelope = json.loads(raw)
                text = envelope["choices"][0]["message"]["content"]
                if not isinstance(text, str):
                    raise ValueError("no text in the answer")
                usage = envelope.get("usage") or {}
            except (
                urllib.error.URLError,
                OSError,
                TimeoutError,
                ValueError,
                KeyError,
                IndexError,
                TypeError,
            ) as e:
                shared.breaker.failure()
                with self._lock:
                    self._run_tokens -= reserved
                self._count("failures", type(e).__name__)
                log.info(
                    "LLM %s call failed (%s); using the local path", purpose, _describe_error(e)
                )
                return None
            finally:
                with shared.lock:
                    shared.in_flight -= 1
        prompt = _int(usage.get("prompt_tokens"), prompt_estimate)
        completion = _int(usage.get("completion_tokens"), count_tokens(text))
        cost = self._cost(prompt, completion)
        self.usage.add(prompt, completion, cost)
        with self._lock:
            self.counters.calls += 1
            self.counters.prompt_tokens += prompt
            self.counters.completion_tokens += completion
            self.counters.cost += cost
            self._run_tokens += prompt + completion - reserved
        return text

    def _call_host(
        self, send: Send, messages: list[dict[str, str]], purpose: str, reserved: int
    ) -> str | None:
        """One call through the host: a refusal or a failure counts towards the breaker."""
        shared = self.shared
        with shared.slots:
            try:
                text = send(messages, self.settings.max_output_tokens)
                if not isinstance(text, str):
                    raise ValueError("no text in the answer")
            except Exception as e:  # whatever the host's failure, the pair waits
                shared.breaker.failure()
                with self._lock:
                    self._run_tokens -= reserved
                self._count("failures", type(e).__name__)
                log.info("%s %s call failed (%s); the pair waits", self.model, purpose, e)
                return None
        prompt = PROMPT_OVERHEAD + sum(count_tokens(m["content"]) for m in messages)
        completion = count_tokens(text)
        self.usage.add(prompt, completion, 0.0)
        with self._lock:
            self.counters.calls += 1
            self.counters.prompt_tokens += prompt
            self.counters.completion_tokens += completion
            self._run_tokens += prompt + completion - reserved
        return text

    def _valid(
        self, text: str, schema: Schema, check: Check | None, purpose: str, cached: bool = False
    ) -> Any | None:
        why: str | None
        broken = True  # not JSON or not the schema: the model is failing, not just wrong
        try:
            answer = parse_json_answer(text)
        except ValueError as e:
            why = f"not JSON: {e}"
        else:
            problems = schema_problems(answer, schema)
            if problems:
                why = "; ".join(problems[:3])
            else:
                broken = False
                why = check(answer) if check else None
        if not cached:
            if broken:
                self.shared.breaker.failure()
            else:
                self.shared.breaker.success()
        if why is None:
            return answer
        if not cached:
            self._count("invalid", why.split(":")[0][:40])
            log.info("LLM %s answer discarded: %s", purpose, why[:200])
        return None


def _int(value: Any, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
    )


def _describe_error(e: Exception) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code}"
    if isinstance(e, urllib.error.URLError):
        return f"unreachable: {e.reason}"
    return type(e).__name__


# ---- the configured model of this process --------------------------------------------------


def client_for(store: Any | None = None, config: LlmConfig | None = None) -> LlmClient | None:
    """A new run's client for the configured model (cache and usage in ``store``'s database),
    or None when no model is configured — then nothing is ever called."""
    config = config or configured()
    if not config.enabled:
        return None
    return LlmClient(config, store=store)


def quoted(quote: str, source: str) -> bool:
    """``quote`` occurs in ``source`` (case, whitespace and quote marks aside)."""

    def norm(s: str) -> str:
        s = s.replace("’", "'").replace("“", '"').replace("”", '"').replace("`", "")
        return " ".join(s.lower().split())

    q = norm(quote)
    return bool(q) and q in norm(source)


def numbered(items: Sequence[tuple[int, str]], limit: int) -> str:
    """``[id] text`` lines, each cut to ``limit`` characters."""
    return "\n".join(f"[{i}] {' '.join(t.split())[:limit]}" for i, t in items)
