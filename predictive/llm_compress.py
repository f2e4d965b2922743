"""Memory summaries by a configured LLM, kept only when faithful to the memory's text.

The compressed line and index label stay deterministic (they are held to "assert nothing the
full text does not"); the model writes only the summary level of memories long enough to need
one, and a summary that adds words the text lacks or drops its negations is discarded for the
deterministic one.
"""

from __future__ import annotations

from typing import Any

from predictive.compress import SUMMARY_TOKENS, DeterministicCompressor
from predictive.faithful import drops_negation, unsupported, words
from predictive.llm import LlmClient
from predictive.tokens import count_tokens
from storage import Memory

PURPOSE = "summaries"
TEXT_CHARS = 6_000
MAX_UNSUPPORTED_SHARE = 0.1

SCHEMA = {
    "type": "object",
    "required": ["summary"],
    "properties": {"summary": {"type": "string", "minLength": 10, "maxLength": 500}},
}
SYSTEM = (
    "Summarise a note from a software project's memory in at most two sentences (under 50 "
    "words), using its own words: keep names, numbers and every 'not', 'never' or condition. "
    'Answer as JSON: {"summary": "..."}.'
)


class LlmCompressor(DeterministicCompressor):
    """The deterministic compressor with the model's summary where it is valid."""

    def __init__(self, client: LlmClient) -> None:
        self.client = client

    def summary(self, memory: Memory) -> str:
        text = memory.text[:TEXT_CHARS]
        if count_tokens(text) <= 2 * SUMMARY_TOKENS or not self.client.uses(PURPOSE):
            return super().summary(memory)

        def check(answer: Any) -> str | None:
            s = answer["summary"]
            extra = unsupported(s, text)
            if len(extra) > MAX_UNSUPPORTED_SHARE * max(1, len(words(s))):
                return f"unsupported words: {', '.join(extra[:4])}"
            if drops_negation(s, text):
                return "drops a negation"
            if count_tokens(s) > SUMMARY_TOKENS * 2:
                return "too long"
            return None

        answer = self.client.ask_json(PURPOSE, SYSTEM, text, SCHEMA, check)
        return " ".join(answer["summary"].split()) if answer else super().summary(memory)


def llm_compressor(client: LlmClient | None) -> DeterministicCompressor:
    """The compressor to fill levels with: the model's when one is configured."""
    return LlmCompressor(client) if client is not None else DeterministicCompressor()
