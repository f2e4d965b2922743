"""A question's kind (decision, how-to, history, error or general) by local rules: the first
rule whose words occur in the question decides."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class QuestionKind(str, enum.Enum):
    DECISION = "decision"
    HOWTO = "how-to"
    HISTORY = "history"
    ERROR = "error"
    GENERAL = "general"


@dataclass(frozen=True)
class Classified:
    """A question's kind and the words that decided it."""

    kind: QuestionKind
    cue: str | None


# Checked in this order: an error message beats a "why", a "when did we" beats a "how".
_RULES: tuple[tuple[QuestionKind, re.Pattern[str]], ...] = (
    (
        QuestionKind.ERROR,
        re.compile(
            r"\b(\w+(?:Error|Exception)|traceback|stack ?trace|exception|errors?"
            r"|fail(?:s|ed|ing|ure)?|crash(?:es|ed|ing)?|broken|bug|segfault|panic|E[A-Z]{3,}"
            r"|doesn'?t work"
            r"|not working|won'?t (?:start|build|run))\b",
            re.I,
        ),
    ),
    (
        QuestionKind.HISTORY,
        re.compile(
            r"\b(when did|when was|history|changed?|changes|used to|previously|before|originally"
            r"|evolv\w*|timeline|who (?:added|changed|wrote)|last time|since when|revert\w*)\b",
            re.I,
        ),
    ),
    (
        QuestionKind.DECISION,
        re.compile(
            r"\b(why|decid\w*|decision|chose|choose|chosen|should we|prefer\w*|instead of"
            r"|rather than|trade-?offs?|adr|rationale|agreed|convention|policy|allowed"
            r"|which \w+ (?:do|should))\b",
            re.I,
        ),
    ),
    (
        QuestionKind.HOWTO,
        re.compile(
            r"\b(how (?:do|to|can|should|does)|steps?|set ?up|configure|install|deploy|run|build"
            r"|release|migrate|where (?:do|is|are)|what command|workflow|guide)\b",
            re.I,
        ),
    ),
)


def classify_question(question: str) -> Classified:
    """The question's kind by the first rule that matches (else general)."""
    for kind, rule in _RULES:
        m = rule.search(question)
        if m:
            return Classified(kind, m.group(0))
    return Classified(QuestionKind.GENERAL, None)
