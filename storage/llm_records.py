"""What calls to a configured language model leave in the store: cached answers and the day's
usage per model."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.store_view import StoreConn


class LlmRecords:
    """The ``llm_cache`` and ``llm_usage`` tables."""

    def __init__(self, store: StoreConn) -> None:
        self._store = store

    def answer(self, key: str) -> str | None:
        """The cached answer for a prompt's key."""
        row = self._store.conn.execute(
            "SELECT answer FROM llm_cache WHERE key = ?", (key,)
        ).fetchone()
        return str(row[0]) if row else None

    def keep_answer(self, key: str, model: str, purpose: str, answer: str) -> None:
        self._store.conn.execute(
            "INSERT OR REPLACE INTO llm_cache(key, model, purpose, answer, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, model, purpose, answer, time.time()),
        )

    def usage(self, day: str, model: str) -> tuple[int, float]:
        """Tokens and cost spent on ``model`` on ``day``."""
        row = self._store.conn.execute(
            "SELECT prompt_tokens + completion_tokens, cost FROM llm_usage "
            "WHERE day = ? AND model = ?",
            (day, model),
        ).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def add_usage(self, day: str, model: str, prompt: int, completion: int, cost: float) -> None:
        """Count one call."""
        self._store.conn.execute(
            "INSERT INTO llm_usage(day, model, calls, prompt_tokens, completion_tokens, cost) "
            "VALUES (?, ?, 1, ?, ?, ?) ON CONFLICT(day, model) DO UPDATE SET "
            "calls = calls + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
            "completion_tokens = completion_tokens + excluded.completion_tokens, "
            "cost = cost + excluded.cost",
            (day, model, prompt, completion, cost),
        )
