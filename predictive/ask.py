"""Ask the memory a question (seed 000's ask_memory) with no LLM: local rules classify it as a
decision, how-to, history or error question; the matching retrieval runs; cited items come
back, the best at their summary, the rest as compressed lines."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from predictive.citation import citation
from predictive.compress import fill_levels
from predictive.question_kind import QuestionKind, classify_question
from predictive.retrieval import Found, find
from storage import AccessKind, InvalidInput, Kind, Level, Memory, MemoryFilter, MemoryStore
from storage.search import MIN_SIMILARITY

if TYPE_CHECKING:
    from predictive.llm import LlmClient

# the question kinds are part of what the ask operation offers its callers
__all__ = ["QuestionKind", "ask", "classify_question"]


# The kinds each question prefers; others still count, ranked lower.
PREFERRED: dict[QuestionKind, frozenset[Kind]] = {
    QuestionKind.DECISION: frozenset({Kind.DECISION, Kind.CONVENTION, Kind.PREFERENCE}),
    QuestionKind.HOWTO: frozenset({Kind.WORKFLOW, Kind.PATTERN, Kind.CONVENTION, Kind.SOLUTION}),
    QuestionKind.HISTORY: frozenset({Kind.EPISODE, Kind.DECISION, Kind.SUMMARY}),
    QuestionKind.ERROR: frozenset({Kind.SOLUTION, Kind.EPISODE}),
    QuestionKind.GENERAL: frozenset(),
}
BOOST = 1.5
DETAILED = 3  # how many of the best items come at their summary level


def _text(m: Memory, level: Level) -> str:
    filled = fill_levels(m)
    m = replace(m, **filled) if filled else m
    return m.level(level) or m.text


def _item(f: Found, detailed: bool) -> dict[str, Any]:
    m = f.memory
    if m is None:
        return {
            "id": None,
            "unit": f.unit,
            "kind": f.kind,
            "source": f.provenance.source,
            "provenance": f"{f.provenance.kind}: {f.provenance}",
            "text": f.snippet,
            "score": round(f.score, 4),
        }
    level = Level.SUMMARY if detailed else Level.COMPRESSED
    return {
        **citation(m),
        "level": level.value,
        "text": _text(m, level),
        "score": round(f.score, 4),
        "date": datetime.fromtimestamp(m.valid_from, tz=timezone.utc).strftime("%Y-%m-%d"),
    }


def ask(
    store: MemoryStore,
    question: str,
    *,
    limit: int = 8,
    as_of: float | None = None,
    context: str = "ask",
    llm: LlmClient | None = None,
) -> dict[str, Any]:
    """Classify ``question``, run its retrieval, return cited items (best first; a history
    question oldest first) and log them as retrieved. With a configured ``llm`` the model
    classifies the question and writes an ``answer`` citing the items (checked, else left
    out); the items are the same either way."""
    from predictive.questions import classify_with, compose_answer

    if not isinstance(question, str) or not question.strip():
        raise InvalidInput("the question is empty")
    if not 1 <= limit <= 50:
        raise InvalidInput("limit must be between 1 and 50")
    c = classify_with(llm, question)
    history = c.kind is QuestionKind.HISTORY
    filters = MemoryFilter(valid_at=None if history or as_of is not None else time.time())
    found = find(
        store,
        question,
        k=max(limit * 3, 15),
        filters=filters,
        as_of=as_of,
        min_similarity=MIN_SIMILARITY,
    )
    preferred = PREFERRED[c.kind]

    def weight(f: Found) -> float:
        hit = f.memory is not None and f.memory.kind in preferred
        return f.score * (BOOST if hit else 1.0)

    ranked = sorted(found, key=lambda f: -weight(f))[:limit]
    detailed = {id(f) for f in ranked[:DETAILED]}
    if history:
        ranked.sort(key=lambda f: f.memory.valid_from if f.memory else float("inf"))
    items = [_item(f, id(f) in detailed) for f in ranked]
    ids = [i["id"] for i in items if i["id"] is not None]
    if ids:
        store.usage.record_many(ids, AccessKind.RETRIEVAL, context=context, bump_generation=False)
    out: dict[str, Any] = {}
    if llm is not None:
        cited = [(i["id"], i["text"]) for i in items if i["id"] is not None]
        answer = compose_answer(llm, question, cited)
        if answer.by == "llm":
            out["answer"] = answer.to_dict()
    return {
        **out,
        "question": question,
        "type": c.kind.value,
        "cue": c.cue,
        "count": len(items),
        "items": items,
        "next": "recall(id, level='full') for an item's full text; "
        "explore(id) for what it is linked to",
    }
