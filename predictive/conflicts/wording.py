"""The words of a statement: content words (stop and polarity words left out), their crude
stems, and how much two clauses share."""

from __future__ import annotations

import re
from functools import lru_cache

from storage.text import STOPWORDS

REASON_CHARS = 160


_WORDS = re.compile(r"[a-z0-9][a-z0-9_+#]*(?:[.-][a-z0-9_+#]+)*")
_IRREGULAR = {
    "using": "use",
    "used": "use",
    "uses": "use",
    "applied": "apply",
    "applies": "apply",
    "ran": "run",
    "running": "run",
    "runs": "run",
    "written": "write",
    "wrote": "write",
    "writing": "write",
    "chosen": "choose",
    "chose": "choose",
    "made": "make",
    "kept": "keep",
}
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ed", "es", "s")
_POLAR_WORDS = frozenset(
    (
        "always never not no n't don't dont do does doesn't isn't aren't won't can't cannot "
        "must mustn't should shouldn't shall please ensure sure make avoid prefer preferred "
        "instead rather over than longer stop stopped anymore any more also only just all "
        "every each use can need needs could would may might via per etc e.g i.e s t now "
        "one two new"
    ).split()
)
STOP = STOPWORDS | _POLAR_WORDS


PREPOSITIONS = frozenset(
    "in from for of on at to with by into onto via about across through within".split()
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A word's crude stem (named, names → nam; resolution, resolve → resolv)."""
    w = _IRREGULAR.get(word)
    if w is not None:
        return w
    if word.endswith("olution") and len(word) > 8:  # resolution, resolve → resolv
        return word[:-5] + "v"
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3 and not word.endswith("ss"):
            word = word[: -len(suf)]
            break
    if word.endswith("e") and len(word) >= 4:  # name, named → nam; cache, cached → cach
        word = word[:-1]
    if word.endswith("at") and len(word) > 7:  # consolidate, consolidation → consolid
        word = word[:-2]
    return word


def content_words(text: str) -> frozenset[str]:
    """The stemmed content words of ``text`` (stop, polarity and filler words left out)."""
    out = set()
    for raw in _WORDS.findall(text.lower().replace("’", "'")):
        raw = raw.strip(".-")
        parts = re.split(r"[.-]", raw) if re.search(r"\w[.-]\w", raw) else []
        for w in (raw, *parts):
            if w and w not in STOP and len(w) >= 2 and not w.isdigit():
                out.add(stem(w))
    return frozenset(out)


def same_subject(a: frozenset[str], b: frozenset[str], *, need: int = 2) -> float:
    """How much two clauses are about the same thing: the shared share of the shorter one
    (0 when fewer than ``need`` words are shared)."""
    if not a or not b:
        return 0.0
    shared = len(a & b)
    if shared < need:
        return 0.0
    return shared / min(len(a), len(b))


def clip(text: str, n: int = REASON_CHARS) -> str:
    text = " ".join(text.split()).strip(" -*#>|")
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def last_words(text: str, n: int = 4) -> frozenset[str]:
    words = [w for w in _WORDS.findall(text.lower()) if w not in STOP]
    return frozenset(stem(w) for w in words[-n:])


def first_words(text: str, n: int = 4) -> frozenset[str]:
    """The head of a phrase: its first content words, up to a preposition ("the `self`
    parameter from methods in cleanup.py" → self, parameter)."""
    words: list[str] = []
    for w in _WORDS.findall(text.lower()):
        if w in PREPOSITIONS and words:
            break
        if w not in STOP:
            words.append(stem(w))
    return frozenset(words[:n])
