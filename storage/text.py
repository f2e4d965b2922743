"""Small text helpers shared by the store and search: hashing, identifier splitting, FTS queries."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone

_WS = re.compile(r"\s+")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_\-./][A-Za-z0-9]+)*")
_IDENT_SEPARATOR = re.compile(r"[_\-./]")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_WORD = re.compile(r"\w+", re.UNICODE)

# Lines that are a tool's output rather than someone talking about a file: tables, stack
# frames, linter and test-runner reports, tree and box drawings, git status and diffstat,
# bare path listings. A file named only there was not discussed (mention counting), and
# such lines are not what a passage's vector is made of (passages.model_text).
_TOOL_OUTPUT = re.compile(
    r"^\s*\|"  # tables (search results, grep hits)
    r"|^\s*File \""  # stack frames
    r"|Traceback \(most recent call last\)"
    r"|\S+\.\w{1,8}:\d+(?::\d+)?(?::|\s*$|\s+(?:error|warning|note)\b)"  # path:line[:col]
    r"|^\s*-->\s"
    r"|,line=\d+,col=\d+"  # GitHub annotations (::error file=…,line=…,col=…)
    r"|\S+\.\w{1,8}::\w"  # test ids
    r"|^\s*[│╭╰┃┏┗┡└├┌┐┘┤┬┴┼═║]"  # boxes and trees
    r"|^\s*(?:modified|new file|deleted|renamed):\s"  # git status
    r"|^\s*(?:FAILED|PASSED|ERROR|SKIPPED|XFAIL|XPASS)\b"
    r"|^\s*[@\w./\\-]+\.\w{1,8}\s*$"  # a bare path
    r"|^\s*\S+\s+\|\s+\d+\s+[+-]*\s*$"  # diffstat
    r"|^\s*\d+ files? (?:changed|reformatted|left unchanged)"
)


def is_tool_output(line: str) -> bool:
    """Whether a line is a tool's output (a table row, a stack frame, a linter report…)."""
    return bool(_TOOL_OUTPUT.search(line))


STOPWORDS = frozenset(
    (
        "a an and are as at be but by did do does for from had has have how i if in into is it "
        "its me my of on or our so than that the their them then there these they this to was "
        "we were what when where which who whom why will with you your"
    ).split()
)


def normalise_text(text: str) -> str:
    return _WS.sub(" ", text).strip()


def content_hash(text: str) -> str:
    """Identity of a memory's content: whitespace-insensitive sha256 of its full text."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def identifier_terms(text: str) -> str:
    """Split camelCase identifiers into words so ``refreshToken`` matches "refresh token"."""
    out: list[str] = []
    for ident in _IDENT.findall(text):
        for part in _IDENT_SEPARATOR.split(ident):
            if part.isalpha() and (part.islower() or part.isupper()):
                continue  # one word: nothing to split
            pieces = _CAMEL.findall(part)
            if len(pieces) > 1:
                out.extend(p.lower() for p in pieces)
    return " ".join(out)


def fts_terms(text: str, *, max_terms: int = 32) -> list[str]:
    """The distinct words of ``text`` for a keyword query (stopwords dropped, identifiers
    split), lowercased, in order of appearance."""
    words: list[str] = []
    seen: set[str] = set()
    for raw in _WORD.findall(text):
        w = raw.lower()
        if w in STOPWORDS or w in seen:
            continue
        seen.add(w)
        words.append(w)
        for piece in identifier_terms(raw).split():
            if piece not in seen:
                seen.add(piece)
                words.append(piece)
    if not words:
        # a query of only stopwords still deserves an answer
        words = list(dict.fromkeys(_WORD.findall(text.lower())))
    return words[:max_terms]


def fts_phrase(term: str) -> str:
    """``term`` quoted as one FTS5 string."""
    return '"' + term.replace('"', '""') + '"'


def fts_or(terms: list[str]) -> str | None:
    """An FTS5 OR-query of quoted terms."""
    if not terms:
        return None
    return " OR ".join(fts_phrase(w) for w in terms)


def fts_query(text: str, *, max_terms: int = 32) -> str | None:
    """An FTS5 OR-query of the distinct, quoted words of ``text`` (stopwords dropped)."""
    return fts_or(fts_terms(text, max_terms=max_terms))


def parse_instant(text: str) -> float | None:
    """Seconds since the epoch, or an ISO 8601 date or date-time (UTC unless it says
    otherwise), as epoch seconds; None when it is neither."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()
