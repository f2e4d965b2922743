"""A configured LLM in the ``ask`` operation (:mod:`predictive.ask`): the question's kind,
and an answer composed from the retrieved items that cites them by id.

Both fall back to the local path: the kind from the local rules
(:func:`predictive.question_kind.classify_question`), the answer as the items' lines. The
model's kind must be one of :class:`QuestionKind`; its answer is kept only when every id it
cites was given, it cites at least one, and it says little its items do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from predictive.faithful import unsupported, words
from predictive.llm import LlmClient, numbered
from predictive.question_kind import Classified, QuestionKind, classify_question

PURPOSE = "ask"
ITEM_CHARS = 600
MAX_ITEMS = 12
MAX_UNSUPPORTED_SHARE = 0.35
"""An answer may use at most this share of content words its items do not have."""

_KIND_SCHEMA = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": {"type": "string", "enum": [k.value for k in QuestionKind]}},
}
_KIND_SYSTEM = (
    "Classify a developer's question about their project: 'decision' (why something was "
    "chosen), 'how-to' (how to do something), 'history' (what changed and when), 'error' "
    "(a failure and its fix) or 'general'. "
    'Answer as JSON: {"kind": "..."}.'
)


def classify_with(client: LlmClient | None, question: str) -> Classified:
    """The question's kind: the model's when it answers with one of :class:`QuestionKind`,
    else the local rules' (:func:`predictive.question_kind.classify_question`)."""
    if client is not None:
        answer = client.ask_json(PURPOSE, _KIND_SYSTEM, question[:2_000], _KIND_SCHEMA)
        if answer is not None:
            return Classified(QuestionKind(answer["kind"]), None)
    return classify_question(question)


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
