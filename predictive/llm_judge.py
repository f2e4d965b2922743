"""A configured LLM as the contradiction scanner's judge: does text B contradict text A?

``llm_judge(client)`` returns the ``judge(text_a, text_b)`` callable the scanner
(:mod:`predictive.conflicts`) accepts. The answer must be one of :data:`VERDICTS`, with
a short reason and, for a conflict, a quote from each side that occurs in that side's text;
anything else is discarded and the judge answers None (the scanner keeps its local verdict).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from predictive.conflicts import Judge
from predictive.conflicts import Verdict as ScannerVerdict
from predictive.llm import LlmClient, quoted

PURPOSE = "judge"
VERDICTS = ("contradicts", "supersedes", "partly_supersedes", "compatible", "unrelated")
CONFLICTS = frozenset({"contradicts", "supersedes", "partly_supersedes"})
TEXT_CHARS = 2_000

VerdictName = Literal["contradicts", "supersedes", "partly_supersedes", "compatible", "unrelated"]


@dataclass(frozen=True)
class Verdict:
    """How B relates to A: ``supersedes`` = B replaces A; ``partly_supersedes`` = B amends A
    (link, do not close); ``contradicts`` = both cannot hold; else no conflict."""

    verdict: VerdictName
    reason: str
    confidence: float
    quote_a: str = ""
    quote_b: str = ""

    @property
    def conflict(self) -> bool:
        return self.verdict in CONFLICTS


SCHEMA = {
    "type": "object",
    "required": ["verdict", "reason", "confidence"],
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "reason": {"type": "string", "minLength": 3, "maxLength": 300},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "quote_a": {"type": "string", "maxLength": 400},
        "quote_b": {"type": "string", "maxLength": 400},
    },
}
SYSTEM = (
    "You compare two statements from one software project's memory: A (older) and B (newer). "
    "Say whether B contradicts A (both cannot hold), supersedes A (B replaces it), partly "
    "supersedes A (B amends part of it), is compatible with A, or is unrelated. Two "
    "statements that only share words are not in conflict. For a conflict, quote the "
    "conflicting words exactly from each. "
    'Answer as JSON: {"verdict": "contradicts|supersedes|partly_supersedes|compatible|'
    'unrelated", "reason": "...", "confidence": 0.0-1.0, "quote_a": "...", "quote_b": "..."}.'
)


def llm_judge(client: LlmClient) -> Callable[[str, str], Verdict | None]:
    """``judge(text_a, text_b)``: the model's validated verdict, or None."""

    def judge(text_a: str, text_b: str) -> Verdict | None:
        a, b = text_a[:TEXT_CHARS], text_b[:TEXT_CHARS]

        def check(answer: Any) -> str | None:
            if answer["verdict"] not in CONFLICTS:
                return None
            if not quoted(answer.get("quote_a", ""), a) or not quoted(answer.get("quote_b", ""), b):
                return "a conflict without quotes from both sides"
            return None

        answer = client.ask_json(PURPOSE, SYSTEM, f"A:\n{a}\n\nB:\n{b}", SCHEMA, check)
        if answer is None:
            return None
        return Verdict(
            answer["verdict"],
            " ".join(answer["reason"].split()),
            float(answer["confidence"]),
            answer.get("quote_a", ""),
            answer.get("quote_b", ""),
        )

    return judge


def scanner_judge(client: LlmClient | None) -> Judge | None:
    """The model's judgement in the contradiction scanner's terms (None without a model)."""
    if client is None:
        return None
    ask = llm_judge(client)

    def judge(text_a: str, text_b: str) -> ScannerVerdict | None:
        v = ask(text_a, text_b)
        if v is None:
            return None
        return ScannerVerdict(
            conflict=v.conflict,
            reason=v.reason,
            partial=v.verdict == "partly_supersedes",
            confidence=v.confidence,
        )

    return judge
