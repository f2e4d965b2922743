"""What a conversation said about one file: the requests and decisions of the user and the
diagnoses and fixes of the assistant that name the file or what is defined in it, each a
whole message or whole sentences, not a summary of the session.

A user's turn is what was asked or decided: a short one tied to the file is kept whole (on one
line), a long one by its sentences. An assistant's turn is mostly reasoning and tool output:
only its sentences that name the file, or name a word of its path and explain (a cause, a fix,
a decision), are kept. Tool output, code and markup never are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from predictive.excerpts import MAX_WORDS, MIN_WORDS, FileTerms, sentences, worth
from predictive.mentions import is_tool_output
from storage.sessions import Message

_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_MARKUP = re.compile(r"</?[a-zA-Z][^>]*>")
_NOISE = re.compile(
    r"^(?:let me|now let'?s|let'?s (?:check|look|see|run|try)|i'?ll (?:check|look|"
    r"now|start|run)|first,? let|next,? let|great|perfect|okay|ok)\b",
    re.I,
)
WHOLE_USER_WORDS = 120
"""A user's turn of at most this many words is kept whole when it is tied to the file."""
USER_BONUS = 0.5
"""What the user asked or decided counts more than what the assistant reasoned."""


@dataclass(frozen=True)
class Said:
    """One thing said in a conversation that matters for the file."""

    idx: int
    role: str
    text: str
    score: float


def _clean(text: str) -> str:
    return _MARKUP.sub(" ", _FENCE.sub(" ", text))


def _plain(sentence: str) -> bool:
    """Prose, not tool output, markup or a narration of the next step."""
    s = sentence.strip()
    return bool(s) and not is_tool_output(s) and not _NOISE.match(s) and "<" not in s[:2]


def what_was_said(
    messages: Sequence[Message],
    terms: FileTerms,
    *,
    until: float | None = None,
    limit: int = 6,
) -> list[Said]:
    """The ``limit`` things said in ``messages`` (before ``until`` when given) most worth
    reading before editing the file, in the order they were said."""
    found: list[Said] = []
    for msg in messages:
        if until is not None and msg.at is not None and msg.at > until:
            break
        text = _clean(msg.text)
        if msg.role == "user":
            flat = " ".join(text.split())
            n = len(flat.split())
            tie = terms.strength(flat)
            if MIN_WORDS <= n <= WHOLE_USER_WORDS and tie > 0 and _plain(flat):
                found.append(Said(msg.idx, "user", flat, USER_BONUS + worth(flat[:600], terms)))
                continue
            for s in sentences(text):
                if _plain(s) and terms.strength(s) > 0:
                    found.append(Said(msg.idx, "user", s, USER_BONUS + worth(s, terms)))
        elif msg.role == "assistant":
            for s in sentences(text):
                if not _plain(s) or not MIN_WORDS <= len(s.split()) <= MAX_WORDS:
                    continue
                tie = terms.strength(s)
                score = worth(s, terms)
                if tie >= 0.8 or (tie > 0 and score >= 0.9):
                    found.append(Said(msg.idx, "assistant", s, score))
    seen: set[str] = set()
    unique: list[Said] = []
    for said in sorted(found, key=lambda x: (-x.score, x.idx)):
        key = " ".join(re.findall(r"\w+", said.text.lower()))
        if key in seen:
            continue
        seen.add(key)
        unique.append(said)
    return sorted(unique[:limit], key=lambda x: x.idx)
