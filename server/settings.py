"""The server's settings (section ``livingMemory``): typed, frozen, forgiving.

They come from ``initializationOptions`` and ``workspace/configuration`` (globally and per
workspace folder), camelCase on the wire. A bad value never stops the server: it is reported
once and its default is used; unknown keys are ignored.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from predictive.operations import LlmConfig
from server.convert import ConversionError, Invalid, camel, structure

SECTION = "livingMemory"
TARGETS: tuple[Target, ...] = ("cursor", "copilot", "agents")
ACTIVITIES = ("debugging", "feature", "review", "refactor", "deploy", "general")
LOG_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}
LOG_LEVELS["debug"] = logging.DEBUG
MIN_BUDGET, MAX_BUDGET = 200, 1_000_000

Target = Literal["cursor", "copilot", "agents"]
LogLevel = Literal["error", "warning", "info", "debug"]
ActivityName = Literal["debugging", "feature", "review", "refactor", "deploy", "general"]


@dataclass(frozen=True)
class TierSplit:
    """Shares of the budget per tier; they must add up to 1."""

    critical: float = 0.25
    relevant: float = 0.375
    background: float = 0.25
    index: float = 0.125

    def __post_init__(self) -> None:
        shares = self.as_tuple()
        if any(s < 0 for s in shares):
            raise Invalid("tier shares cannot be negative")
        if abs(sum(shares) - 1.0) > 0.01:
            raise Invalid(f"tier shares must add up to 1 (they add up to {sum(shares):.3f})")

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.critical, self.relevant, self.background, self.index)


@dataclass(frozen=True)
class Settings:
    data_directory: str | None = None  # base directory for per-project data (like the CLI's)
    model_directory: str | None = None  # model.onnx + tokenizer.json; default: packaged model
    budget: int = 8000
    tier_split: TierSplit = field(default_factory=TierSplit)
    activity_profiles: dict[ActivityName, TierSplit] = field(default_factory=dict)
    injection_targets: tuple[Target, ...] = TARGETS
    git_exclude_injected: bool = True
    capture_fixes: bool = True
    ingest_on_first_open: bool = True  # an empty store learns git, decision records and rules
    ingest_merge_commits: bool = False  # merges are noise by default ("Merge branch …")
    ingest_bot_commits: bool = False  # so are dependabot, renovate, github-actions, …[bot]
    ingest_trivial_commits: bool = False  # and "wip", "fix", "Initial commit", two words
    log_level: LogLevel = "info"
    debounce_ms: int = 100
    change_debounce_ms: int = 400
    git_poll_seconds: float = 3.0
    embed_batch_size: int = 64
    consolidate_when_idle_minutes: float = 10.0  # 0: only by command
    shared_folder: str = ".living-memory/shared"  # the team's memory files, in the repository
    # An OpenAI-compatible chat endpoint (predictive.llm_config); nothing is called without it.
    llm: LlmConfig = field(default_factory=LlmConfig)

    def __post_init__(self) -> None:
        if not MIN_BUDGET <= self.budget <= MAX_BUDGET:
            raise Invalid(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} tokens")
        if not 0 <= self.debounce_ms <= 10_000:
            raise Invalid("debounceMs must be between 0 and 10000")
        if not 0 <= self.change_debounce_ms <= 60_000:
            raise Invalid("changeDebounceMs must be between 0 and 60000")
        if not 0.05 <= self.git_poll_seconds <= 3600:
            raise Invalid("gitPollSeconds must be between 0.05 and 3600")
        if not 1 <= self.embed_batch_size <= 4096:
            raise Invalid("embedBatchSize must be between 1 and 4096")
        if not self.shared_folder.strip():
            raise Invalid("sharedFolder cannot be empty")
        if not 0 <= self.consolidate_when_idle_minutes <= 10_080:
            raise Invalid("consolidateWhenIdleMinutes must be between 0 and 10080 (a week)")

    @property
    def level(self) -> int:
        return LOG_LEVELS[self.log_level]

    @property
    def commit_options(self) -> dict[str, bool]:
        """Which commit noise ingestion keeps (options of :func:`predictive.ingest.run`)."""
        return {
            "include_merges": self.ingest_merge_commits,
            "include_bots": self.ingest_bot_commits,
            "include_trivial": self.ingest_trivial_commits,
        }


def merge(*layers: Any) -> dict[str, Any]:
    """Later layers override earlier ones key by key (objects merge one level deep)."""
    out: dict[str, Any] = {}
    for layer in layers:
        if not isinstance(layer, Mapping):
            continue
        for k, v in layer.items():
            if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
                out[k] = {**out[k], **v}
            else:
                out[k] = v
    return out


def section_of(raw: Any) -> Any:
    """The ``livingMemory`` section of a payload that may or may not be wrapped in it."""
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), Mapping):
        return raw[SECTION]
    return raw


def load(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from a raw JSON object, and a message per value that was ignored.

    Each bad key falls back to its default on its own; the rest is kept.
    """
    if raw is None:
        return Settings(), []
    if not isinstance(raw, Mapping):
        return Settings(), [f"{SECTION}: settings must be an object, got {type(raw).__name__}"]
    try:
        return structure(raw, Settings), []
    except ConversionError as e:
        first = e
    except Invalid as e:
        first = ConversionError([("", str(e))])
    # Keep the keys that are fine on their own, then check they are fine together.
    known = {camel(f.name) for f in dataclasses.fields(Settings)}
    good: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        key = camel(key) if isinstance(key, str) else key
        if key not in known:
            continue
        try:
            structure({key: value}, Settings)
        except (ConversionError, Invalid) as e:
            problems.append(_message(key, e))
            continue
        good[key] = value
    try:
        return structure(good, Settings), problems
    except (ConversionError, Invalid):
        return Settings(), problems or [_message("", first)]


def _message(key: str, e: Exception) -> str:
    problems = (
        [(p or key, m) for p, m in e.problems]
        if isinstance(e, ConversionError)
        else [(key, str(e))]
    )
    text = "; ".join(f"{SECTION}.{p}: {m}" if p else f"{SECTION}: {m}" for p, m in problems)
    return text + " — using the default"
