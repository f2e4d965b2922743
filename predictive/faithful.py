"""Whether a short form (index label, compressed line) says only what its full text says.

The test is lexical and strict: every content word of the short form must occur as a word of
the full text (case-insensitive). A short form that adds a word ("always", "never", "over",
an abbreviation, a topic taken from a tag) fails it. Word-dropping that flips meaning — a
sentence with "not" or "should it …" squeezed into "always …" — is caught by
:func:`drops_negation` and by building short forms from contiguous phrases only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# function words a short form may use without the text having them (joining, not asserting)
_FREE = frozenset(
    """a an the of to in on at by for from with and or as is are be it its this that these
    those""".split()
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|neither|nor|without|cannot|can't|don't|doesn't|didn't|"
    r"won't|wouldn't|shouldn't|mustn't|isn't|aren't|wasn't|weren't|avoid|unless|except)\b|n't\b",
    re.I,
)


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased (``storage/db.py`` → storage, db, py)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


def content_words(text: str) -> list[str]:
    """The words of a short form that assert something (function words left out)."""
    return [w for w in words(text) if w not in _FREE]


def unsupported(short: str, full: str, *, vocabulary: Iterable[str] | None = None) -> list[str]:
    """The content words of ``short`` that ``full`` does not contain (empty: faithful).
    ``vocabulary``: the words of ``full`` when the caller has them already."""
    known = set(vocabulary) if vocabulary is not None else set(words(full))
    return [w for w in content_words(short) if w not in known]


def drops_negation(short: str, source: str) -> bool:
    """``source`` negates or conditions something and ``short`` has lost every such word."""
    return bool(_NEGATION.search(source)) and not _NEGATION.search(short)


def is_faithful(short: str, full: str) -> bool:
    return not unsupported(short, full)
