"""Questions put to the memory (the ``ask`` operation): what kind they are, and an answer
composed from retrieved items that cites them by id.

Both work without a model: the kind from the question's wording, the answer as the items'
lines. With a configured LLM the kind may come from the model (one of :data:`QUESTION_KINDS`
or it is discarded) and the answer is its prose, kept only when every id it cites was given
and it cites at least one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from predictive.faithful import unsupported, words
from predictive.llm import LlmClient, numbered

PURPOSE = "ask"
QUESTION_KINDS = ("decision", "how-to", "history", "error")
QuestionKind = Literal["decision", "how-to", "history", "error"]
ITEM_CHARS = 600
MAX_ITEMS = 12
MAX_UNSUPPORTED_SHARE = 0.35
"""An answer may use at most this share of content words its items do not have."""

_ERROR = re.compile(
    r"\b(error|exception|traceback|fails?|failing|failed|crash\w*|broken|bug|stack ?trace|"
    r"\w+Error)\b",
    re.I,
)
_HISTORY = re.compile(
    r"\b(when did|when was|history|changed?|changes|used to|before|previously|last time|"
    r"timeline|who (?:added|changed|removed)|since when)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(why|decid\w*|decision|chose|choose|chosen|instead of|rather than|trade-?offs?|"
    r"should we|which (?:one|library|approach))\b",
    re.I,
)
_HOW = re.compile(r"\b(how (?:do|does|to|can|should)|steps?|set ?up|configure|run|install)\b", re.I)


def local_kind(question: str) -> QuestionKind:
    """The question's kind from its wording: error, then decision, history, how-to."""
    if _ERROR.search(question):
        return "error"
    if _DECISION.search(question):
        return "decision"
    if _HISTORY.search(question):
        return "history"
    return "how-to"


_KIND_SCHEMA = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": {"type": "string", "enum": list(QUESTION_KINDS)}},
}
_KIND_SYSTEM = (
    "Classify a developer's question about their project: 'decision' (why something was "
    "chosen), 'how-to' (how to do something), 'history' (what changed and when) or 'error' "
    '(a failure and its fix). Answer as JSON: {"kind": "..."}.'
)


def classify_question(client: LlmClient | None, question: str) -> QuestionKind:
    """The question's kind: the model's when it answers validly, else from its wording."""
    if client is not None:
        answer = client.ask_json(PURPOSE, _KIND_SYSTEM, question[:2_000], _KIND_SCHEMA)
        if answer is not None:
            kind: QuestionKind = answer["kind"]
            return kind
    return local_kind(question)


@dataclass(frozen=True)
class Answer:
    """An answer and the ids of the items it rests on; ``by`` = "llm" or "local"."""

    text: str
    cited: tuple[int, ...]
    by: str

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "cited": list(self.cited), "by": self.by}


_ANSWER_SCHEMA = {
    "type": "object",
    "required": ["answer", "cited"],
    "properties": {
        "answer": {"type": "string", "minLength": 1, "maxLength": 2_000},
        "cited": {"type": "array", "items": {"type": "integer"}, "maxItems": MAX_ITEMS},
    },
}
_ANSWER_SYSTEM = (
    "Answer a developer's question about their project using only the numbered memory items "
    "given. Cite the ids you used. If the items do not answer it, say so and cite nothing. "
    'Answer as JSON: {"answer": "...", "cited": [ids]}.'
)


def local_answer(items: Sequence[tuple[int, str]]) -> Answer:
    """The items themselves, one line each with its id (no model)."""
    if not items:
        return Answer("Nothing in the project memory answers this.", (), "local")
    lines = [f"- #{i} {' '.join(t.split())[:200]}" for i, t in items[:MAX_ITEMS]]
    return Answer("\n".join(lines), tuple(i for i, _ in items[:MAX_ITEMS]), "local")


def compose_answer(
    client: LlmClient | None, question: str, items: Sequence[tuple[int, str]]
) -> Answer:
    """An answer to ``question`` from ``items`` (id, text), citing them; the model's when it
    cites only given items and says little they do not, else :func:`local_answer`."""
    items = list(items)[:MAX_ITEMS]
    if client is None or not items:
        return local_answer(items)
    given = {i for i, _ in items}
    material = numbered(items, ITEM_CHARS)
    vocabulary = set(words(material + " " + question))

    def check(answer: Any) -> str | None:
        cited = set(answer["cited"])
        if not cited:
            return "cites nothing"
        if not cited <= given:
            return "cites an item it was not given"
        extra = unsupported(answer["answer"], "", vocabulary=vocabulary)
        if len(extra) > MAX_UNSUPPORTED_SHARE * max(1, len(words(answer["answer"]))):
            return f"unsupported words: {', '.join(extra[:4])}"
        return None

    answer = client.ask_json(
        PURPOSE,
        _ANSWER_SYSTEM,
        f"Question: {question}\n\nItems:\n{material}",
        _ANSWER_SCHEMA,
        check,
    )
    if answer is None:
        return local_answer(items)
    cited = tuple(dict.fromkeys(answer["cited"]))
    return Answer(answer["answer"].strip(), cited, "llm")
