"""The sentences of a long text that matter for one file: what a commit body or a
conversation says about the file, its names and why.

A sentence is never cut: it is kept whole or left out. It counts for a file when it names the
file (its path, its name, its stem), one of the names defined in it (classes, functions,
methods, constants) or, less, a word of its path; and for its content when it explains (a
cause, a fix, a decision, a rule) rather than reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

from predictive.file_facts import FileFacts

_DEFINED = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class|fn|func|function|struct|enum|trait|interface|type)"
    r"[ \t]+([A-Za-z_]\w{2,})",
    re.M,
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPLIT_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
PATH_NOISE = frozenset(
    {
        "src",
        "lib",
        "py",
        "pyx",
        "cpp",
        "ts",
        "js",
        "md",
        "init",
        "main",
        "index",
        "internal",
        "core",
        "utils",
        "util",
        "common",
        "test",
        "tests",
        "the",
        "and",
        "web",
        "app",
        "api",
    }
)
"""Path words too common to tie a sentence to a file by themselves."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_\"'(\[])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_EXPLAINS = re.compile(
    r"\b(because|since|so that|caus(?:e|es|ed|ing)|root cause|the (?:problem|issue|bug|fix|"
    r"reason)|fix(?:es|ed)?|prevent|avoid|instead|rather than|no longer|must|never|always|"
    r"should|shouldn't|don't|do not|only|ensure|decid(?:e|ed)|chose|choice|trade-?off|risk|"
    r"breaking|race|leak|crash|deadlock|regression|identified|resolv(?:e|ed)|removed?|want|"
    r"indicat(?:es|ing)|means that|but (?:the|it|we|this)|replac"
    r"(?:e|ed|es)|standardi[sz]e|we (?:now|will|want)|i (?:want|need|decided))\b",
    re.I,
)
_TESTING = frozenset({"test", "tests", "testing", "pytest", "fixture", "fixtures", "mock"})
_BOLD_HEADING = re.compile(r"^\*\*[^*]{2,60}\*\*:?$")
FENCED_CODE = re.compile(r"```.*?(?:```|$)", re.S)
"""A fenced code block (an unclosed one runs to the end)."""
_KEY_SECTION = re.compile(
    r"\b(fix|solution|root cause|cause|why|problem|issue|motivation|decision|approach|how|risks?|"
    r"what changed|changes?)\b"
)
_MARKDOWN_HEADING = re.compile(r"#{1,6}\s")
_TESTING_SECTION = re.compile(r"\b(?:test(?:s|ing)?|test plan|verification|qa)\b")
"""A heading over how a change was checked: worth reading when the file open is a test."""
KEY_SECTION_BONUS = 0.3
"""A sentence under a heading that explains (Fix, Root cause, Why, Risks…) is worth more."""
MIN_NAME = 5
"""A defined name shorter than this (and not compound) does not tie prose to the file."""
MIN_WORDS = 5
MAX_WORDS = 70


@dataclass(frozen=True)
class FileTerms:
    """What names a file in prose: its path, name and stem, the names defined in it, and the
    distinctive words of its path (all lower case)."""

    path: str
    names: frozenset[str]
    words: frozenset[str]
    is_test: bool
    files: tuple[str, ...] = ()  # its own file name and its pair's, lower case
    paired: tuple[str, ...] = ()  # the paths of its pair
    pair_names: frozenset[str] = frozenset()  # names defined in its pair, not in it
    text: str = field(default="", compare=False, repr=False)  # its content, when known

    def names_it(self, text: str) -> bool:
        """Whether ``text`` names the file itself or a distinctive name defined in it (a long
        or compound identifier, not ``start`` or ``run``)."""
        low = text.lower()
        if self.path.lower() in low or (self.files and self.files[0] in low):
            return True
        tokens = {t.lower() for t in _WORD.findall(text)}
        own = PurePosixPath(self.path).stem.lower()  # a word as often as a name: "profiler"
        return any((len(n) >= 8 or "_" in n.strip("_")) and n != own for n in tokens & self.names)

    def strength(self, text: str) -> float:
        """How strongly ``text`` is about the file: 1.0 for its path or name (or its pair's),
        0.8 for a name defined in it, 0.3 for a word of its name or folder, 0 for none."""
        low = text.lower()
        if self.path.lower() in low or (self.files and self.files[0] in low):
            return 1.0
        if any(f in low for f in self.files[1:]):
            return 0.6  # its pair: a test's source, a source's test
        tokens = {t.lower() for t in _WORD.findall(text)}
        if (
            tokens & self.names
            or any(t.startswith(n + "_") for t in tokens for n in self.names if len(n) > 5)
            or self.quotes_code(text)
        ):
            # a name defined in it, one built on it (test_config_defaults), or its code quoted
            return 0.8
        testing = self.is_test and bool(tokens & _TESTING)
        if tokens & self.pair_names:
            return 0.7 if testing else 0.5
        if {stem(t) for t in tokens} & self.words:
            return 0.6 if testing else 0.3
        return 0.0

    def quotes_code(self, text: str) -> bool:
        """Whether ``text`` quotes an expression of the file's code in backticks
        (`` `max(min_value, int(value))` ``): a sentence about what that code does."""
        if "`" not in text or not self.text:
            return False
        for span in _CODE_SPAN.findall(text):
            tokens = _CODE_TOKEN.findall(span)
            if len(tokens) >= QUOTED_TOKENS and any(t in _OPERATORS for t in tokens):
                grams = zip(tokens, tokens[1:], tokens[2:], strict=False)
                code = _code_grams(self.text)
                if all(g in code for g in grams):
                    return True
        return False


@lru_cache(maxsize=8)
def _code_grams(text: str) -> frozenset[tuple[str, str, str]]:
    """Every three consecutive tokens of a file's code (kept for the files opened last: a file
    of 170 kB takes about 10 ms)."""
    tokens = _CODE_TOKEN.findall(text[:200_000])
    return frozenset(zip(tokens, tokens[1:], tokens[2:], strict=False))


_CODE_SPAN = re.compile(r"`([^`\n]{4,200})`")
_CODE_TOKEN = re.compile(r"\w+|[^\w\s]")
_OPERATORS = frozenset("()[]{}=<>+*,:%!&|")
QUOTED_TOKENS = 4
"""A quoted expression of at least this many tokens, one of them an operator or bracket
(``self.get_num_results()``; not ``self.name``, ``num_results`` or a path such as
``docs/configuration.rst``), names the file's code."""


def split_words(name: str) -> list[str]:
    """``limit_results`` → limit, results; ``SearchEngine`` → search, engine."""
    return [w.lower() for part in re.split(r"[_\W]+", name) for w in _SPLIT_WORDS.findall(part)]


_ATTRIBUTE = re.compile(r"\bself\.([A-Za-z_]\w{3,})\s*(?::[^=\n]*)?=(?!=)")
_CLASS_LINE = re.compile(r"^([ \t]*)class[ \t]+\w")
_ANNOTATED = re.compile(r"^[ \t]+([A-Za-z_]\w{3,})[ \t]*:[ \t]*[A-Za-z_\"']")
_COMPOUND = re.compile(r"_|[a-z][A-Z]")


def _class_attributes(text: str) -> list[str]:
    """The annotated attributes of the classes in ``text`` (``engine_code: ClassVar[str] =
    ""``, a dataclass's fields): lines at the first level of a class body, not a method's
    parameters or locals."""
    if "class" not in text:
        return []
    out: list[str] = []
    owner: int | None = None  # the indentation of the class whose body this is
    body: int | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if owner is not None and indent <= owner:
            owner = body = None
        if cls := _CLASS_LINE.match(line):
            owner, body = len(cls.group(1)), None
            continue
        if owner is None:
            continue
        if body is None:
            body = indent
        found = _ANNOTATED.match(line) if indent == body else None
        if found and not stripped.endswith((",", "(")):
            out.append(found.group(1))
    return out


@lru_cache(maxsize=16)
def _defined(text: str) -> frozenset[str]:
    """The names a file defines: functions, classes, methods, and its objects' attributes
    (kept for the files read last: a file of 170 kB takes about 6 ms)."""
    head = text[:200_000]
    found = _DEFINED.findall(head) + _ATTRIBUTE.findall(head)
    # a class attribute is often a plain word (``description``, ``status``): compound ones only
    found += [n for n in _class_attributes(head) if _COMPOUND.search(n.strip("_"))]
    # a short plain name (``you``, ``info``, ``run``) is a word in prose more often than a name
    return frozenset(
        n.lower()
        for n in found
        if not n.startswith("__") and (len(n) >= MIN_NAME or "_" in n.strip("_"))
    )


def stem(word: str) -> str:
    """A word without a plural or verb ending, so "engines" meets "engine"."""
    for end in ("ies", "es", "s"):
        if len(word) > len(end) + 3 and word.endswith(end) and not word.endswith("ss"):
            return word[: -len(end)] + ("y" if end == "ies" else "")
    return word


def _file_name(p: PurePosixPath) -> str:
    """How prose names a file: its name, with its folder when the name is generic
    (``engines/__init__.py``, ``web/main.py``)."""
    if (p.stem.startswith("__") or p.stem.lower() in PATH_NOISE) and len(p.parts) > 1:
        return f"{p.parts[-2]}/{p.name}".lower()
    return p.name.lower()


def file_terms(
    facts: FileFacts, text: str | None, paired: dict[str, str | None] | None = None
) -> FileTerms:
    """The terms of the file at ``facts.path`` whose content is ``text`` (None: unknown);
    ``paired`` maps the file's pair (a test's source, a source's test) to its text, whose
    names count too: a test is about what it tests."""
    p = PurePosixPath(facts.path)
    own = p.stem.lower()
    names = {n.lower() for n in facts.symbols if len(n) > 3}
    names |= _defined(text or "")
    pair_names: set[str] = set()
    for body in (paired or {}).values():
        pair_names |= _defined(body or "")
    files = [_file_name(p)]
    for other in paired or {}:
        q = PurePosixPath(other)
        files.append(_file_name(q))
        if len(q.stem) > 3 and q.stem.lower() not in PATH_NOISE:
            pair_names.add(q.stem.lower())
    if len(own) > 3 and own not in PATH_NOISE:
        names.add(own)
    # the file's own name and its folder, not the folders above (a project's package name is
    # in every sentence about it)
    near = [PurePosixPath(p.parts[-2]).stem] if len(p.parts) > 1 else []
    words = {w for part in [p.stem, *near] for w in split_words(part) if len(w) > 2}
    words = {stem(w) for w in words - PATH_NOISE}
    is_test = any(x in ("test", "tests") for x in p.parts[:-1]) or own.startswith("test_")
    return FileTerms(
        facts.path,
        frozenset(names),
        frozenset(words),
        is_test,
        tuple(files),
        tuple(paired or ()),
        frozenset(pair_names - names),
        text or "",
    )


def sentences(text: str) -> list[str]:
    """``text`` as whole sentences and list items, each on one line; code blocks, tables and
    headings left out."""
    return [s for _, s in sections(text)]


def sections(text: str) -> list[tuple[str, str]]:
    """Each sentence of ``text`` (as :func:`sentences`) with the heading it is under ("" for
    none; a line of bold text ending in a colon counts as one)."""
    out: list[tuple[str, str]] = []
    in_code = False
    para: list[str] = []
    heading = ""

    def flush() -> None:
        if para:
            joined = " ".join(para)
            out.extend((heading, s.strip()) for s in _SENTENCE_END.split(joined) if s.strip())
            para.clear()

    for line in text.splitlines():
        s = line.strip()
        if s.startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if s.startswith("#") or _BOLD_HEADING.match(s):
            flush()
            heading = s.strip("#*: ").lower()
            continue
        if not s or s.startswith("|"):
            flush()
            continue
        if _LIST_ITEM.match(s):
            flush()
            para.append(_LIST_ITEM.sub("", s))
            continue
        para.append(s.lstrip("> "))
    flush()
    return out


def without_testing(text: str) -> str:
    """``text`` without its sections on how the change was checked (from a testing heading to
    the next heading)."""
    out: list[str] = []
    skipping = in_code = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("```"):
            in_code = not in_code
        elif not in_code and (_MARKDOWN_HEADING.match(s) or _BOLD_HEADING.match(s)):
            skipping = bool(_TESTING_SECTION.search(s.strip("#*: ").lower()))
        if not skipping:
            out.append(line)
    return "\n".join(out).strip()


def explains(sentence: str) -> bool:
    """Whether a sentence gives a cause, a fix, a decision or a rule."""
    return bool(_EXPLAINS.search(sentence.replace("’", "'")))


def worth(sentence: str, terms: FileTerms | None) -> float:
    """How much a sentence is worth reading before editing the file: naming it or its names,
    and explaining rather than reporting; 0 for one too short or too long to stand alone."""
    n = len(sentence.split())
    if n < MIN_WORDS or n > MAX_WORDS:
        return 0.0
    score = 0.2
    if terms is not None:
        score += terms.strength(sentence)
    if explains(sentence):
        score += 0.4
    return score


LEAD_BONUS = 0.3
"""The first sentence under a heading that explains (the fix under "Fix") says its point."""


_SUMMARY_SECTION = re.compile(r"^(?:description|summary|overview|what does this pr do\??)$")
SUMMARY_LEAD_BONUS = 1.0
"""The first sentence of a change's description ("## Description", "## Summary") says what the
change is: worth as much as a line that names the file (the commit is tied to it already)."""


def _section_bonus(heading: str, lead: bool, sentence: str) -> float:
    if lead and _SUMMARY_SECTION.match(heading) and not sentence.rstrip().endswith(":"):
        return SUMMARY_LEAD_BONUS  # (one that ends in a colon only introduces a list)
    if not _KEY_SECTION.search(heading):
        return 0.0
    return KEY_SECTION_BONUS + (LEAD_BONUS if lead and heading else 0.0)


def excerpt(
    text: str, terms: FileTerms | None, *, limit: int, skip: Iterable[str] = ()
) -> list[str]:
    """The ``limit`` sentences of ``text`` most worth reading for the file, in their order;
    sentences equal to one of ``skip`` (already shown) are left out."""
    seen = {" ".join(s.split()).lower() for s in skip}
    parts = sections(text)
    scored = [
        (worth(s, terms) + _section_bonus(h, i == 0 or parts[i - 1][0] != h, s), i, s)
        for i, (h, s) in enumerate(parts)
        if " ".join(s.split()).lower() not in seen
    ]
    best = sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[1]))[:limit]
    return [s for _, _, s in sorted(best, key=lambda x: x[1])]
