"""Which of the project's rule sections apply to a file beyond their globs.

- **By path**: a section that names a folder holding the file (``ddtrace/contrib/internal/``,
  two folders deep at least, so a bare top-level folder does not tie everything) applies to it,
  whatever its globs say. A section naming the file itself is tied by its file anchor.
- **By topic**: a project-wide section (no globs: a root ``AGENTS.md``, ``CLAUDE.md``, an
  always-applied or described rule, a contributing guide) applies when it shares distinctive
  words with the file: the words of its path and stem, the names defined in it, and for a test
  file the words of testing. Words are weighed by how few sections use them (a word in every
  section says nothing), a word of the heading counts double, and only the best few sections
  with enough in common are taken.
- **Always**: a project-wide section that states hard rules in capitals (``NEVER run pytest
  directly``, ``ALWAYS ask``) applies to every file, topic or not: it is what the project told
  every AI to obey. The few that shout most are taken.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from predictive.excerpts import FENCED_CODE, FileTerms, split_words
from storage import Memory
from storage.text import STOPWORDS

_PATHLIKE = re.compile(r"(?<![\w.-])((?:[\w.-]+/){2,}[\w.*-]*)")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

TEST_WORDS = frozenset({"test", "tests", "testing", "pytest", "fixture", "fixtures"})
TOPIC_MIN = 4.0
"""Least weight of shared words for a project-wide section to apply by topic."""
TOPIC_WORDS = 2
"""Least number of distinct words (the words of testing aside) a section shares with a file to
be about it: one rare word in common (a ``search`` endpoint in an example and ``re.search``
in the file) is chance."""
_NOT_TOPICS = STOPWORDS | frozenset(
    "not no nor can could should would also only all any each other such".split()
)
MAX_TOPICAL = 6
"""At most this many project-wide sections apply by topic to one file."""
PATH_RELEVANCE = 0.9
WIDE_RELEVANCE = 0.4
MAX_HARD = 3
"""At most this many project-wide sections of hard rules apply to every file."""
HARD_RELEVANCE = 0.8
"""A project-wide section of hard rules ranks with the best topical ones."""
_SHOUTED = re.compile(r"\b(?:IMPORTANT|MUST|NEVER|ALWAYS|CRITICAL|WARNING|DO NOT)\b")
_BINDING = re.compile(r"\b(?:must|never|always|do not|don't|avoid|required?)\b", re.I)


def binding(text: str) -> float:
    """How strongly a section binds (0 – 1): a shouted rule (IMPORTANT, MUST, NEVER) most,
    a must / never / avoid less, a description not at all."""
    if _SHOUTED.search(text):
        return 1.0
    return 0.5 if _BINDING.search(text) else 0.0


def shouts(text: str) -> int:
    """How many hard rules a section states in capitals (IMPORTANT, MUST, NEVER …)."""
    return len(_SHOUTED.findall(text))


@dataclass(frozen=True)
class _Section:
    memory: Memory
    heading: frozenset[str]
    body: frozenset[str]
    tokens: frozenset[str]
    folders: tuple[str, ...]
    wide: bool
    shouts: int  # hard rules it states in capitals (see :func:`shouts`)


def _words(text: str) -> set[str]:
    words = (w for t in _TOKEN.findall(text) for w in split_words(t))
    return {w for w in words if len(w) > 2 and w not in _NOT_TOPICS}


def folders_named(text: str) -> tuple[str, ...]:
    out = []
    for m in _PATHLIKE.finditer(text):
        p = m.group(1).strip("`'\"").removeprefix("./")
        p = re.sub(r"\*+.*$", "", p)
        if p.count("/") >= 2 or (p.count("/") == 1 and not p.endswith("/")):
            p = p if p.endswith("/") else p.rsplit("/", 1)[0] + "/"
        if p.count("/") >= 2:
            out.append(p)
    return tuple(dict.fromkeys(out))


class RuleIndex:
    """The current rule sections of a store, read once per store generation."""

    def __init__(self, rules: Sequence[Memory]) -> None:
        self.sections: list[_Section] = []
        df: Counter[str] = Counter()
        for m in rules:
            meta = m.metadata if isinstance(m.metadata, dict) else {}
            # a code example (an app, a curl call) shares words with any code file: what a
            # section is about is read from its prose and headings
            prose = FENCED_CODE.sub(" ", m.text.strip())
            heading, _, rest = prose.partition("\n")
            body = _words(rest)
            head = _words(heading)
            df.update(head | body)
            self.sections.append(
                _Section(
                    m,
                    frozenset(head),
                    frozenset(body),
                    frozenset(t.lower() for t in _TOKEN.findall(prose)),
                    folders_named(m.text),
                    not meta.get("globs"),
                    shouts(m.text),
                )
            )
        self.per_file: Counter[str] = Counter(
            str((s.memory.metadata or {}).get("file") or "") for s in self.sections
        )
        n = max(1, len(self.sections))
        self.idf = {w: math.log(1 + n / c) for w, c in df.items()}

    def topic_scores(self, terms: FileTerms) -> dict[int, float]:
        """Each section's weight of words shared with the file (0 ones left out)."""
        wanted = set(terms.words)
        for name in terms.names:
            wanted.update(split_words(name))
        if terms.is_test:
            wanted |= TEST_WORDS
        out: dict[int, float] = {}
        for s in self.sections:
            named = terms.names & s.tokens
            shared = (wanted - TEST_WORDS) & (s.body | s.heading)  # every test file has those
            shared |= {w for n in named for w in split_words(n)}
            if len(shared) < TOPIC_WORDS:
                continue
            score = sum(self.idf.get(w, 0.0) for w in wanted & s.body)
            score += 2 * sum(self.idf.get(w, 0.0) for w in wanted & s.heading)
            score += 2 * len(named)
            if score > 0:
                out[s.memory.id] = score
        return out

    def applies(
        self, terms: FileTerms, scores: dict[int, float] | None = None
    ) -> list[tuple[Memory, str, float]]:
        """The sections that apply to the file beyond their globs, each with its reason
        (``path`` or ``topic``) and relevance; ``scores`` are :meth:`topic_scores`."""
        scores = self.topic_scores(terms) if scores is None else scores
        out: list[tuple[Memory, str, float]] = []
        topical: list[tuple[float, Memory]] = []
        for s in self.sections:
            if any(terms.path.startswith(f) for f in s.folders):
                out.append((s.memory, "path", PATH_RELEVANCE))
                continue
            score = scores.get(s.memory.id, 0.0)
            if s.wide and score >= TOPIC_MIN:
                topical.append((score, s.memory))
        topical.sort(key=lambda x: (-x[0], x[1].id))
        for score, m in topical[:MAX_TOPICAL]:
            out.append((m, "topic", min(0.8, 0.4 + 0.04 * score)))
        wide = [x for x in self.sections if x.wide]
        taken = {m.id for m, _, _ in out}
        if len(wide) <= MAX_TOPICAL:  # a short project-wide rule set applies to every file
            out += [(x.memory, "topic", WIDE_RELEVANCE) for x in wide if x.memory.id not in taken]
        else:
            hard = [x for x in wide if x.shouts and x.memory.id not in taken]
            hard.sort(key=lambda x: (-x.shouts, x.memory.id))
            out += [(x.memory, "topic", HARD_RELEVANCE) for x in hard[:MAX_HARD]]
        return out
