"""The contradiction scanner: local, deterministic, no LLM.

``scan(store, ids)`` compares each memory with its nearest neighbours (keyword and vector) of
related kinds (decision, convention, fact, solution, preference, workflow, pattern; a commit or
other short episode only against those) and answers the pairs that disagree, each with a type
and a reason quoting both sides; ``record(store, conflicts)`` records them (never twice for
one pair, whatever the first one's status): **open** on strong evidence — a record that
supersedes or amends another, a judge's verdict — and **suspected** otherwise (every other
type below: the review list only, never a context, until the user confirms it). The types:

- **superseded** / **amended**: a record names another's number after supersedes / amends
  ("supersedes ADR 3", "superseded by [ADR #0033]", within one folder of records); "in part",
  "partly", "amends" or a "partly superseded" status make it *partial*: the two are linked
  (EVOLVED_INTO) and the older stays valid;
- **value**: the same key or setting with another value (``timeout = 30`` / ``timeout = 60``,
  "port 8080" / "port 9090", "3 workers" / "five workers", a table row ``|Staging|10.2.0.0/16|``
  / ``|Staging|10.12.0.0/16|``, a typed field on its own line ``url: str`` / ``url: Url``,
  "twice the rate" / "3× the rate", "in one transaction" / "500 rows per transaction"), the
  rest of the two statements about the same thing (never a key one text gives several values:
  that is a quantity it talks about); a named setting against a count of what it counts
  (``top_sessions=3`` / "5 sessions", both naming the same code word); a field retyped beside
  a note naming its old type; or the same sentence with one slot swapped after a verb of
  choice ("uses X for packaging" / "uses Y for packaging": the slot within three words after
  use, with, via, as, is, to, default, set, prefer…, never the subject);
- **preference**: "X over Y" against "Y over X" ("over" after a verb of choice or in a slogan
  only; also instead of, rather than, replace … with, switch from … to, "X, not Y"); a choice
  the other side makes too is no conflict;
- **changed**: one says what the other states stopped holding ("no longer", "instead of",
  "replaced", "reverted", "stopped using", "removed", "X is no longer used", "X (not Y)");
  the side that reports the change is the newer (a rule read today may be older than the
  commit); an action on a thing the other describes, named by both ("merge X into Y", "move X
  away from Y", "move X to Y" when the other does not already put it there, "a replacement for
  the archived X", "X alone no longer …", a record titled "Change/Retire/Merge … X"); a record
  that names an earlier one beside "revisit"/"reconsider"; a measured choice ("X beat Y"); or
  one closes a list ("can only be a, b or c") and the other, about the same, names a new
  member of it, quoted (the newer side);
- **polarity**: one says do, the other do not, about the same thing (always/never, use/don't
  use, an opposite word such as on/off, opt-in/opt-out or ignores/respects, "on" read as a
  setting only at a clause's end or after turn/switch/keep); "don't … without …" is a do, and
  a negation inside an if/when condition states nothing.

Two decision records are compared only on what they decide (their Decision part), through
their links, values, reversed choices, and what one drops that the other's title names: their
prose discusses options and earlier records. A clause of more than :data:`MAX_CLAUSE_WORDS`
words (a file tree) is no statement.

Pairs never compared: a memory and its own source (DERIVED_FROM), two versions of one source
(one supersedes the other, or the same source id), two parts of one document (sections of one
rule file, memories of one decision record), a commit and a rule file or decision record it
added or changed, a conversation's own summary, two episodes, memories already in a
contradiction. A commit and a rule section are never in conflict by polarity or change
wording alone (a change and the text that describes the same work), unless the commit names
what replaces something the rule names ("Replace Selenium with Playwright …").

An optional ``judge(text_a, text_b) -> Verdict | None`` (an LLM, when one is configured) has
the last word on every candidate pair it answers; None (or an error) leaves the local rules to
decide.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Protocol

from storage.conflict_pairs import (
    decisions_numbered,
    ids_after,
    lineage,
    max_memory_id,
    recorded_pairs,
)
from storage.errors import StoreError
from storage.models import AnchorType, ContradictionStatus, EdgeType, Kind, Memory
from storage.repository import MemoryFilter, MemoryStore
from storage.search import search
from storage.text import STOPWORDS

RELATED_KINDS: tuple[Kind, ...] = (
    Kind.DECISION,
    Kind.CONVENTION,
    Kind.FACT,
    Kind.SOLUTION,
    Kind.PREFERENCE,
    Kind.WORKFLOW,
    Kind.PATTERN,
)
"""Kinds that state how things are or should be: they can contradict each other."""
CHANGE_KINDS: tuple[Kind, ...] = (Kind.EPISODE,)
"""Kinds that report a change (a commit, a message): they can contradict a related memory
but are not compared with each other."""
NEIGHBOURS = 8
"""Nearest neighbours compared with each scanned memory."""
MIN_SIMILARITY = 0.3
"""Vector neighbours less similar than this are not compared."""
MAX_EPISODE_CHARS = 2000
"""An episode longer than this (a whole conversation) is not compared clause by clause."""
MAX_CLAUSES = 120
MAX_TEXT = 20_000
"""Characters of a text that are read (a pasted log or file says no more past this)."""
MAX_CLAUSE_WORDS = 60
"""A clause longer than this many words is no single statement."""
OVERLAP = 0.6
"""Share of the shorter clause's content words the other must hold to be about the same."""
CHANGE_OVERLAP = 0.5
"""The same, when one side names what it stopped or chose against (a strong sign already)."""
SHORT_CHARS = 600
"""A text this short is about one thing: all of it counts as the subject of what it changes."""
REASON_CHARS = 160

TYPES = ("superseded", "amended", "value", "preference", "changed", "polarity")
STRONG_TYPES = frozenset({"superseded", "amended", "judged"})
"""Conflicts that open a contradiction at once: a record naming another it supersedes or
amends, a judge's verdict. Every other finding of the local rules is only suspected."""


@dataclass(frozen=True)
class Verdict:
    """What a judge (an LLM) says of two texts."""

    conflict: bool
    reason: str = ""
    partial: bool = False
    confidence: float = 0.7


class Judge(Protocol):
    def __call__(self, text_a: str, text_b: str) -> Verdict | None: ...


@dataclass(frozen=True)
class Conflict:
    """Two memories that disagree: ``older`` was there first, ``newer`` changes it."""

    older: int
    newer: int
    type: str
    reason: str
    confidence: float
    partial: bool = False

    @property
    def pair(self) -> tuple[int, int]:
        return (min(self.older, self.newer), max(self.older, self.newer))

    def to_dict(self) -> dict[str, object]:
        return {
            "older": self.older,
            "newer": self.newer,
            "type": self.type,
            "reason": self.reason,
            "confidence": self.confidence,
            "partial": self.partial,
        }


@dataclass(frozen=True)
class Finding:
    """What the local rules found in two texts (``first_newer``: the first text is the later
    statement)."""

    type: str
    reason: str
    confidence: float
    partial: bool = False
    first_newer: bool | None = None


# ---------------------------------------------------------------------------- text analysis

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
_STOP = STOPWORDS | _POLAR_WORDS
_NEGATION = re.compile(
    r"\b(?:never|not|no(?!-\w)|nothing|none|nobody|without|avoid(?:ed|s)?|"
    r"disable[ds]?|forbid(?:den|s)?|prohibit(?:ed|s)?|stop(?:ped|s)?\s+using)\b|n't\b",
    re.I,
)
_CONDITION = re.compile(r"\b(?:if|unless|whether|until|once|when|whenever)\b[^,;]*", re.I)
_BOTH_WAYS = re.compile(
    r"\b(?:enabl|allow|turn\w*\s+on)\w*\s*(?:/|\bor\b|\band\b)\s*(?:disabl|deny|forbid|turn\w*\s+off)\w*"
    r"|\b(?:disabl|deny|forbid|turn\w*\s+off)\w*\s*(?:/|\bor\b|\band\b)\s*(?:enabl|allow|turn\w*\s+on)\w*",
    re.I,
)
"""Both ways at once ("enable or disable any engine", "Enabling/Disabling"): no negation."""
_CODE_NONE = re.compile(r"(?<=\S)(\s+|\s*[=(:>,]\s*)None\b")
"""Python's ``None`` inside a sentence ("returns None", ``x = None``) is a value, no negation."""
_TURNS = re.compile(r"\b(?:without|unless|until|except)\b", re.I)
_CLAUSE_SPLIT = re.compile(
    r"(?<=[.!?])\s+(?=[A-Z`\"'(*\[])|\n\s*\n|\n(?=\s*(?:[-*+]\s|\d{1,3}[.)]\s|\||#))|(?<=[.!?:])\n"
    r"|;\s+|(?<=\w):\s+(?=[A-Za-z])|\s+but\s+|\s+however,?\s+|,\s+so\s+(?=[A-Za-z])"
)
"""Clause boundaries: sentences, paragraphs, list items, table rows, semicolons, "but", ", so"
(what follows is a consequence, with its own polarity); a line
wrapped inside a sentence is not one."""
_CHANGED = re.compile(
    r"\b(?:modified|changed|updated|moved|switched|migrated|renamed|rewritten|reworked)\b", re.I
)
_PREPOSITIONS = frozenset(
    "in from for of on at to with by into onto via about across through within".split()
)
_VERSION_OR_DATE = re.compile(r"^\d{4}-\d{2}(?:-\d{2})?$|^\d{1,2}:\d{2}")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
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
            if w and w not in _STOP and len(w) >= 2 and not w.isdigit():
                out.add(_stem(w))
    return frozenset(out)


def _same_subject(a: frozenset[str], b: frozenset[str], *, need: int = 2) -> float:
    """How much two clauses are about the same thing: the shared share of the shorter one
    (0 when fewer than ``need`` words are shared)."""
    if not a or not b:
        return 0.0
    shared = len(a & b)
    if shared < need:
        return 0.0
    return shared / min(len(a), len(b))


def _clip(text: str, n: int = REASON_CHARS) -> str:
    text = " ".join(text.split()).strip(" -*#>|")
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


@dataclass(frozen=True)
class _Clause:
    text: str
    words: frozenset[str]
    negative: bool
    changes: bool = False  # it reports a change (removed, replaced, dropped…)
    target: frozenset[str] = frozenset()  # what a negative clause says no to (first words)
    tokens: tuple[str, ...] = ()  # its words in order, as written (lower case)


@dataclass(frozen=True)
class _Choice:
    """``winner`` is chosen over ``loser`` (words of each side; ``negated``: the loser is a
    negative statement, "instead of 'not available'")."""

    winner: frozenset[str]
    loser: frozenset[str]
    text: str
    negated: bool = False
    says_not: bool = False  # "X, not Y": a stance, not a report that Y stopped
    named: bool = False  # an action on a named thing (merge X into, move X away from, a title)
    elsewhere: frozenset[str] = frozenset()  # "move X to Y": Y, which the other must not say


@dataclass(frozen=True)
class _Value:
    key: str
    value: str
    context: frozenset[str]
    text: str
    loose: bool = False  # its key is a phrase: the two must be about the same (shared words)
    counted: bool = False  # "5 sessions": its key is what is counted

    @property
    def tail(self) -> str | None:
        """A named setting's last part, what it counts ("top_sessions" → session)."""
        if self.counted or "_" not in self.key:
            return None
        return _stem(self.key.rsplit("_", 1)[1])


@dataclass(frozen=True)
class _Ref:
    number: int
    by: bool  # "superseded by N": the other record is the newer one
    partial: bool
    text: str
    revisits: bool = False  # "ADR 27 … we are revisiting that decision": a change, not a link
    about: str = ""  # what the revisiting paragraph says of the record it revisits


@dataclass(frozen=True)
class _Closed:
    """A closed list: "can only be resolved as a, b or c" (``head``: the words before it)."""

    head: frozenset[str]
    items: frozenset[str]
    text: str


@dataclass
class _Analysis:
    clauses: list[_Clause] = field(default_factory=list)
    closed: list[_Closed] = field(default_factory=list)
    choices: list[_Choice] = field(default_factory=list)
    changes: list[_Choice] = field(default_factory=list)  # loser only: what stopped holding
    values: list[_Value] = field(default_factory=list)
    refs: list[_Ref] = field(default_factory=list)
    number: int | None = None
    partly_superseded: bool = False

    @cached_property
    def purposes(self) -> list[tuple[frozenset[str], frozenset[str], frozenset[str], str]]:
        """What serves which purpose (see :func:`_purposes`), read once."""
        return _purposes(self)

    @cached_property
    def defaults(self) -> list[tuple[frozenset[str], frozenset[str], str]]:
        """The default cases (see :func:`_defaults`), read once."""
        return _defaults(self)

    @cached_property
    def varied(self) -> frozenset[str]:
        """Keys this text gives several values (see :func:`_varied`), read once."""
        return _varied(self)

    @cached_property
    def by_first_token(self) -> dict[str, list[_Clause]]:
        """The clauses by their first word (the swap rule compares those that begin alike)."""
        out: dict[str, list[_Clause]] = {}
        for c in self.clauses:
            if c.tokens:
                out.setdefault(c.tokens[0], []).append(c)
        return out


_INSTEAD = r"instead\s+of|rather\s+than|in\s+place\s+of"
_BEAT = r"beat|beats|outperform(?:s|ed)?|out-performed"
"""Markers of a choice against what follows them (shared by the choice patterns and the
same-direction check)."""
_CHOICE_PATTERNS: tuple[re.Pattern[str], ...] = (
    # winner over loser
    re.compile(
        rf"(?P<w>[^,;:()]{{0,60}}?)\s*\b(?:{_INSTEAD})\s+(?P<l>[^,;:.()]{{2,60}})",
        re.I,
    ),
    re.compile(r"\bprefer(?:red|s)?\s+(?P<w>[^,;:.()]{2,60}?)\s+to\s+(?P<l>[^,;:.()]{2,60})", re.I),
    re.compile(
        r"\breplac(?:e|ed|es|ing)\s+(?P<l>[^,;:.()]{2,60}?)\s+(?:with|by)\s+(?P<w>[^,;:.()]{2,60})",
        re.I,
    ),
    re.compile(
        r"\b(?:switch(?:ed|es|ing)?|migrat(?:e|ed|es|ing)|mov(?:e|ed|es|ing)|chang(?:e|ed|es|ing)"
        r"|went|go(?:es|ne)?)\s+from\s+(?P<l>[^,;:.()]{2,60}?)\s+to\s+(?P<w>[^,;:.()]{2,60})",
        re.I,
    ),
    re.compile(r"(?P<w>[^,;:()]{2,60}?),\s+(?:not|never)\s+(?P<l>[^,;:.()]{2,60})", re.I),
    re.compile(
        r"(?P<w>[^,;:()]{2,60}?)\s*(?:\(\s*|[—–]\s*|\s-\s+)(?:not|never)\s+(?P<l>[^,;:.()—–]{2,60})",
        re.I,
    ),
    # "over" is a choice after a verb of choice, or in a slogan ("Composition over inheritance"),
    # not in "mean over questions", "over TCP", "iterate over the rows"
    re.compile(
        r"\b(?:prefer(?:s|red|ring)?|favou?r(?:s|ed|ing)?|choos(?:e|es|ing)|chose|pick(?:s|ed)?"
        r"|select(?:s|ed)?|opt(?:s|ed)?\s+for)\s+(?P<w>[^,;:()]{1,60}?)\s+over\s+"
        r"(?P<l>[^,;:.()]{2,60})",
        re.I,
    ),
    re.compile(
        r"^\s*(?!(?:the|a|an|this|that|its|their|our)\b)(?P<w>\w[\w.+#-]*(?:\s+\w[\w.+#-]*)?)"
        r"\s+over\s+(?P<l>\w[\w.+#-]*(?:\s+\w[\w.+#-]*)?)\s*[.!]?\s*$",
        re.I,
    ),
)
_SAYS_NOT = (_CHOICE_PATTERNS[4], _CHOICE_PATTERNS[5])
"""Patterns whose clause says its first part ("X, not Y", "X (not Y)"): it is no negation."""
_IN_FAVOUR = re.compile(
    r"(?P<l>[^,;:()]{2,60}?)\s+(?:(?:was|is|were|are|got|has\s+been)\s+)?"
    r"(?:dropped|removed|deprecated|abandoned|replaced)\s+in\s+favou?r\s+of\s+(?P<w>[^,;:.()]{2,60})",
    re.I,
)
_CHANGE_PATTERNS = (
    re.compile(
        r"(?P<l>[^,;:.()]{2,60}?)\s+(?:is|are|was|were|has\s+been|have\s+been)\s+"
        r"(?:no\s+longer|not\s+(?:used|needed|required|supported)\s+any\s*more)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:no\s+longer|not\s+any\s*more)\s+(?P<l>[^,;:.()]{2,80})",
        re.I,
    ),
    re.compile(
        r"\b(?:stop(?:ped|s)?|quit)\s+(?:using|use|calling|running|applying)\s+"
        r"(?P<l>[^,;:.()]{2,60})",
        re.I,
    ),
    re.compile(
        r"\b(?:revert(?:ed|s)?|remov(?:e|ed|es)|drop(?:ped|s)?|deprecat(?:e|ed|es)|"
        r"abandon(?:ed|s)?|rip(?:ped)?\s+out|get\s+rid\s+of|got\s+rid\s+of)\s+"
        r"(?:the\s+|a\s+|an\s+|our\s+)?(?P<l>[^,;:.()]{2,60})",
        re.I,
    ),
    re.compile(
        r"(?P<l>[^,;:.()]{2,60}?)\s+(?:was|is|were|are|has\s+been|have\s+been)\s+"
        r"(?:removed|dropped|reverted|deprecated|abandoned|replaced|retired)\b",
        re.I,
    ),
)
_BEATS = re.compile(rf"(?P<w>[^,;:()]{{2,60}}?)\s+(?:{_BEAT})\s+(?P<l>[^,;:.()]{{2,60}})", re.I)
"""A measured choice: "weighted fusion … beat RRF"."""
_ACTIONS = (
    re.compile(
        r"\b(?:merg|combin|fold)(?:e|es|ed|ing)?\s+(?:the\s+|our\s+|a\s+)?"
        r"(?!(?:branch|pull\s+request|remote-tracking|tag|commit)\b)"
        r"(?P<l>[^,;:.()]{2,60}?)\s+(?:into|with)\s+(?P<to>[^,;:.()]{2,60})",
        re.I,
    ),
    re.compile(
        r"\bmov(?:e|es|ed|ing)\s+(?:the\s+|our\s+)?(?P<l>[^,;:.()]{2,60}?)\s+"
        r"(?:away\s+from|out\s+of|off)\s+(?P<to>[^,;:.()]{2,60})",
        re.I,
    ),
    re.compile(
        r"\b(?:replacement|successor|substitute)\s+(?:for|to|of)\s+(?:the\s+)?"
        r"(?:(?:archived|deprecated|old|legacy|unmaintained|abandoned)\s+)?(?P<l>[^,;:.()]{2,60})",
        re.I,
    ),
)
"""Actions on a named thing that end what an earlier text says of it: merged into another,
moved away from where it was, replaced by a successor."""
_MOVED_TO = re.compile(
    r"\bmov(?:e|es|ed|ing)\s+(?:the\s+|our\s+)?(?P<l>[^,;:.()]{2,60}?)\s+(?:to|into)\s+"
    r"(?:the\s+)?(?P<to>[^,;:.()]{2,60})",
    re.I,
)
"""Moved somewhere else: it changes an earlier text that puts the thing elsewhere."""
_STOPS_NOW = re.compile(r"(?P<l>[^,;:.()—–]{2,60}?)\s+no\s+longer\s+(?!be\b|is\b|are\b)[a-z]", re.I)
"""A subject that no longer does something: "a didOpen alone no longer takes over"."""
_ACTION_TITLE = re.compile(
    r"\A\s*(?:(?:ADR|Decision|RFC)[\s#-]*\d{1,4}\s*[:.]\s*)?"
    r"(?P<verb>change|replace|remove|retire|drop|merge|combine|move|migrate|switch|deprecate"
    r"|consolidate|decommission)\s+(?P<rest>[^\n]{3,120})",
    re.I,
)
"""A record's title that names an action ("ADR 30: Change in architecture to Asset Master"):
what it acts on is what an earlier text describes."""
_RECORD_WORDS = frozenset(
    _stem(w)
    for w in "adr adrs rfc record records decision decisions status context consequences "
    "accepted approved proposed option options".split()
)
"""Words every decision record has: they tell no two records' subjects together."""
_REVISITS = re.compile(r"\b(?:revisit|reconsider|overturn|overrul|revers)\w*\b", re.I)
_NAMED_RECORD = re.compile(r"\b(?:ADR|RFC|record|decision)\s*#?\s*0*(?P<n>\d{1,4})\b", re.I)
_LEFT_OUT = re.compile(
    r"\b(?:left|leave|leaves|leaving|filtered|filters?|kept|keeps?|keep)\s+out\b", re.I
)
"""Left out: an exclusion in two words (read as "excluded")."""
_ASSIGN = re.compile(
    r"(?<![\w.])(?P<k>[A-Za-z_][\w.-]{1,60}?)\s*(?P<op>=|:=|==|:)\s*[\"'`]?(?P<v>[\w.:/%+-]{1,60})"
)
_NUMBERED = re.compile(
    r"\b(?P<k>[A-Za-z][\w-]{1,40})\s+(?:(?:is|of|to|at|=|set\s+to|to\s+be)\s+)?"
    r"(?P<v>\d[\d.,:/%]*(?:[a-z]{1,3}\b)?)",
    re.I,
)
_SPACED_THOUSANDS = re.compile(r"(?<=\d),\s(?=\d{3}\b)")
"""A number whose thousands are set off by a comma and a space ("100, 000 searches")."""
_COUNTED = re.compile(r"(?<![\w.])(?P<v>\d[\d,]*)\s+(?P<k>[a-z][a-z-]{2,30})\b", re.I)
_ROW = re.compile(r"^\s*\|\s*(?P<k>[^|]{1,60}?)\s*\|(?:[^|]*\|)*?\s*(?P<v>[^|]{1,60}?)\s*\|\s*$")
_REF = re.compile(
    r"(?P<part>\b(?:in\s+part|partly|partially)\s+)?"
    r"(?P<verb>supersed(?:es|ed|ing)|amend(?:s|ed|ing)?|replac(?:es|ed))"
    r"(?P<by>\s+(?:in\s+part\s+)?by)?\s+"
    r"(?:\[\s*)?(?:(?:adr|decision|record|rfc)\s*[#-]?\s*|#)?0*(?P<n>\d{1,4})\b",
    re.I,
)
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate("two three four five six seven eight nine ten eleven twelve".split(), 2)
}
"""Number words counted as figures ("one" is mostly no count: "one place", "one credit")."""
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(_NUMBER_WORDS) + r")\b(?=\s+[a-z])", re.I)
_MULTIPLE = re.compile(
    r"(?:\b(?P<w>twice|double|thrice|triple)|(?<![\w.])(?P<v>\d+(?:\.\d+)?)\s*(?:×|x\b|times\b))"
    r"\s+(?:the\s+|as\s+\w+\s+as\s+(?:the\s+)?)?(?P<k>[a-z][a-z-]{2,30}(?:\s+[a-z][a-z-]{2,30})?)",
    re.I,
)
_TIMES = {"twice": "2", "double": "2", "thrice": "3", "triple": "3"}
_MAY_COUNT = re.compile(r"\d|twice|double|thrice|triple|\bper\b|\beach\b|\bone\b|single", re.I)
"""A quick look for what :data:`_MULTIPLE`, :data:`_PER` and :data:`_IN_ONE` need."""
_PER = re.compile(
    r"(?<![\w.])(?P<v>\d[\d,]*)\s+(?:[a-z-]+\s+){0,2}?(?:per|each)\s+(?P<k>[a-z][a-z-]{2,30})",
    re.I,
)
_IN_ONE = re.compile(
    r"\b(?:in|within|inside)\s+(?:just\s+)?(?:one|a\s+single|1)\s+(?P<k>[a-z][a-z-]{2,30})", re.I
)
"""How many things go in one unit: "500 memories per transaction" against "in one transaction"
(everything in one)."""
_TOKEN = re.compile(r"`[^`\s]{1,40}`|[a-z0-9][\w.+#/-]*|[=×]")
_SLOT_BEFORE = frozenset(
    "use uses using used via with by to as is are be default defaults set sets prefer prefers "
    "preferred per every each".split()
)
"""Words after which one thing stands for another (a tool, a value, a type, a unit): "uses X
for …", "loaded per X"."""
_SWITCH_ON = re.compile(
    r"\b(?:turn(?:s|ed|ing)?|switch(?:es|ed|ing)?|left|leave|kept|keeps?|stays?|set\s+to)\s+"
    r"(?:[\w'-]+\s+){0,5}?on\b|\bon\b\s*(?=$|[,.;)\]—–(]|\s[-—–]\s|by\s+default)",
    re.I,
)
""""on" as a setting (it is a stop word elsewhere): "arena on", "turned the cache on"."""
_FIELD_LINE = re.compile(
    r"^\s*(?:[-*]\s+)?`?(?P<k>[a-z_][a-z0-9_]{1,40})`?\s*:\s*`?"
    r"(?P<v>[A-Za-z_][\w.]*(?:\[[\w., |]+\])?(?:\s*\|\s*None)?)`?"
    r"\s*(?:=\s*[^\n]{0,80})?(?:#[^\n]*)?$",
    re.M,
)
"""A typed field or setting on its own line (``url: HttpUrl``, ``timeout: int = 30``)."""
_PURPOSE = re.compile(
    r"\b(?:uses?|using|prefers?|rel(?:y|ies|ied)\s+on|relying\s+on|chooses?|chose)"
    r"\s+(?P<o>[^\s,;:()]+(?:\s+[^\s,;:()]+){0,3}?)\s+(?:for|to|as)\s+(?P<p>[^,;:()—–]{3,80})",
    re.I,
)
"""A tool for a purpose: "uses `uv` for Python package management"."""
_UNGIVEN = re.compile(
    r"\b(?:when|if|where)\s+no\s+(?P<x>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:is|are|was|were)\s+"
    r"(?:specified|given|set|passed|provided|chosen|selected|configured|named)\b",
    re.I,
)
"""A default case: "when no engines are specified" (what happens then is the default)."""
_ONLY_LIST = re.compile(r"\bonly\b\s+(?P<rest>[^.;()]{3,200})", re.I)
_LIST_SPLIT = re.compile(r",\s*(?:or\s+|and\s+)?|\s+(?:or|and)\s+", re.I)
_QUOTED = re.compile(r"['\"`‘“](?P<q>[A-Za-z][\w.-]{1,30})['\"`’”]")
_TITLE_NUMBER = re.compile(r"^\s*(?:ADR|Decision|RFC)[\s#-]*0*(\d{1,4})\s*[:.]", re.I)
_PARTLY_STATUS = re.compile(r"^\s*Status:\s*(?:partly|partially|in part)\s+super", re.I | re.M)
_NO_KEYS = frozenset(
    "up down above below over under about around least most than within upto approximately "
    "roughly nearly almost".split()
)
"""Words before a number that bound or round it ("up to 20,000", "the above 3 components"):
no setting is named by them."""
_COMMON_KEYS = frozenset(
    "status date deciders context decision consequences http https note step version v".split()
)


_DECISION_PART = re.compile(
    r"^(?:Decision|Chosen option):?\s*(?P<d>.*?)(?=^(?:Options considered|Consequences|Context"
    r"|Deciders|Status):|\Z)",
    re.M | re.S,
)


def decision_part(text: str) -> str:
    """What a decision record decides (its Decision and chosen option), or all of it."""
    found = [m.group(0) for m in _DECISION_PART.finditer(text)]
    return "\n".join(found) if found else text


def _last_words(text: str, n: int = 4) -> frozenset[str]:
    words = [w for w in _WORDS.findall(text.lower()) if w not in _STOP]
    return frozenset(_stem(w) for w in words[-n:])


def _first_words(text: str, n: int = 4) -> frozenset[str]:
    """The head of a phrase: its first content words, up to a preposition ("the `self`
    parameter from methods in cleanup.py" → self, parameter)."""
    words: list[str] = []
    for w in _WORDS.findall(text.lower()):
        if w in _PREPOSITIONS and words:
            break
        if w not in _STOP:
            words.append(_stem(w))
    return frozenset(words[:n])


def _clauses(text: str) -> list[str]:
    """The statements of ``text``; a piece with more words than a statement has (a file
    tree, a list of keywords run together) is none."""
    out = []
    for piece in _CLAUSE_SPLIT.split(text):
        piece = piece.strip(" \t-*>#")
        if len(piece) >= 4 and len(piece.split()) <= MAX_CLAUSE_WORDS:
            out.append(piece)
        if len(out) >= MAX_CLAUSES:
            break
    return out


def _counted_values(clause: str, words: frozenset[str]) -> list[_Value]:
    """Multiples ("twice the rate", "3× the rate") and amounts per unit ("500 memories per
    transaction", "in one transaction"): values compared by their subject, not their key."""
    out: list[_Value] = []
    if not _MAY_COUNT.search(clause):
        return out
    for m in _MULTIPLE.finditer(clause):
        v = _TIMES.get((m.group("w") or "").lower()) or m.group("v")
        key = " ".join(_stem(w) for w in m.group("k").lower().split() if w not in _STOP)
        if key:
            out.append(_Value(f"× {key}", v, words, clause, loose=True))
    for pattern, v in ((_PER, None), (_IN_ONE, "all of it in one")):
        for m in pattern.finditer(clause):
            unit = _stem(m.group("k").lower())
            out.append(_Value(f"per {unit}", v or m.group("v"), words - {unit}, clause, loose=True))
    return out


def _values_of(clause: str, words: frozenset[str]) -> list[_Value]:
    clause = _SPACED_THOUSANDS.sub(",", clause)
    out: list[_Value] = _counted_values(clause, words)
    row = _ROW.match(clause)
    if row and not set(row.group("v")) <= set("-: "):
        k = row.group("k").strip().lower()
        v = row.group("v").strip().lower()
        if k and v and k != v and not set(k) <= set("-: "):
            out.append(_Value(k, v, frozenset(), clause))
        return out
    counted = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], clause)
    for pattern in (_ASSIGN, _NUMBERED, _COUNTED):
        for m in pattern.finditer(counted if pattern is _COUNTED else clause):
            k = m.group("k").lower().strip(".-")
            if pattern is _COUNTED:
                k = _stem(k)
            v = m.group("v").lower().rstrip(".,:")
            if not v or k in _STOP or k in _COMMON_KEYS or k in _NO_KEYS:
                continue
            if _VERSION_OR_DATE.match(v):
                continue
            if pattern is not _ASSIGN and not re.match(r"\d", v):
                continue
            if (
                pattern is _ASSIGN
                and m.group("op") == ":"
                and not (re.match(r"\d", v) or re.search(r"[_.]", k))
            ):
                continue  # "Status: accepted", "Chosen option: X" are prose, not settings
            if k.isdigit() or len(k) < 2:
                continue
            out.append(_Value(k, v, words - {_stem(k)}, clause, counted=pattern is _COUNTED))
    return out


@lru_cache(maxsize=2048)
def analyse(text: str) -> _Analysis:
    """The clauses, choices, changes, values and record references of ``text``."""
    a = _Analysis()
    head = _TITLE_NUMBER.match(text)
    if head:
        a.number = int(head.group(1))
    a.partly_superseded = bool(_PARTLY_STATUS.search(text))
    a.values += _field_values(text)
    for m in _REF.finditer(text):
        partial = bool(m.group("part")) or m.group("verb").lower().startswith("amend")
        a.refs.append(_Ref(int(m.group("n")), bool(m.group("by")), partial, _clip(m.group(0))))
    for para in re.split(r"\n\s*\n", text):
        turn = _REVISITS.search(para)
        if turn is not None:
            for m in _NAMED_RECORD.finditer(para):
                said = para[min(m.start(), turn.start()) : max(m.end(), turn.end())]
                a.refs.append(
                    _Ref(int(m.group("n")), False, False, _clip(said), revisits=True, about=para)
                )
    a.changes += _title_action(text)
    for clause in _clauses(text):
        words = content_words(clause)
        stated = _CONDITION.sub(" ", _BOTH_WAYS.sub(" toggle ", _CODE_NONE.sub(r"\1null", clause)))
        first = _NEGATION.search(stated)
        negative = bool(first) and not _TURNS.search(stated, first.end() if first else 0)
        stripped = clause
        for pattern in (*_CHOICE_PATTERNS, _IN_FAVOUR, _BEATS):
            for m in pattern.finditer(clause):
                w, loser = _last_words(m.group("w")), _first_words(m.group("l"))
                if loser and not (w & loser):
                    negated = bool(re.match(r"\W*(?:not|no|never)\b", m.group("l"), re.I))
                    a.choices.append(_Choice(w, loser, clause, negated, pattern in _SAYS_NOT))
                    stripped = stripped.replace(m.group("l"), " ")
                    if pattern in _SAYS_NOT:
                        negative = False  # "X, not Y" says X
        changes = len(a.changes)
        for pattern in _CHANGE_PATTERNS:
            for m in pattern.finditer(clause):
                loser = _first_words(m.group("l"))
                if loser:
                    a.changes.append(_Choice(frozenset(), loser, clause))
        a.changes += _actions(clause)
        if _LEFT_OUT.search(clause):
            words = content_words(_LEFT_OUT.sub(" excluded", clause))
            stripped = _LEFT_OUT.sub(" excluded", stripped)
        a.values += _values_of(clause, words)
        a.closed += _closed_lists(clause)
        on = " on" in clause.lower() and _SWITCH_ON.search(clause)
        switch = frozenset({"on"}) if on else frozenset()
        a.clauses.append(
            _Clause(
                clause,
                (content_words(stripped) or words) | switch,
                negative,
                len(a.changes) > changes or bool(_CHANGED.search(clause)),
                _first_words(stated[first.end() :], 3) if negative and first else frozenset(),
                tuple(t.strip("`") for t in _TOKEN.findall(clause.lower())),
            )
        )
    return a


def _actions(clause: str) -> list[_Choice]:
    """What a clause merges away, moves, replaces or says no longer does something."""
    out = []
    for pattern in _ACTIONS:
        for m in pattern.finditer(clause):
            loser = _first_words(m.group("l"))
            if loser:
                out.append(_Choice(frozenset(), loser, clause, named=True))
    for m in _MOVED_TO.finditer(clause):
        loser, to = _first_words(m.group("l")), _first_words(m.group("to"))
        if loser and to and not (loser & to):
            out.append(_Choice(frozenset(), loser, clause, named=True, elsewhere=to))
    for m in _STOPS_NOW.finditer(clause):
        subject = re.sub(r"\b(?:alone|itself|themselves|now|also|still|by\s+itself)\b", " ", m["l"])
        loser = _last_words(subject, 2)
        if loser:
            out.append(_Choice(frozenset(), loser, clause, named=True))
    return out


def _title_action(text: str) -> list[_Choice]:
    """A record's title that names an action on something ("Merge API PostgreSQL instance
    into main PostgreSQL instance", "Change in architecture to Asset Master")."""
    if not _TITLE_NUMBER.match(text):
        return []
    m = _ACTION_TITLE.match(text)
    if m is None:
        return []
    rest = m.group("rest")
    changed = m.group("verb").lower() in ("change", "switch", "migrate")
    loser = content_words(rest) if changed else _first_words(rest)
    title = text.split("\n", 1)[0]
    return [_Choice(frozenset(), loser, title, named=True)] if loser else []


def _field_values(text: str) -> list[_Value]:
    """Typed fields and settings, one per line: their key is the field, their subject what
    the text is about (the field name alone says little)."""
    found = [m for m in _FIELD_LINE.finditer(text) if m.group("k") not in _COMMON_KEYS]
    if not found:
        return []
    about = content_words(text[:SHORT_CHARS])
    out = []
    for m in found:
        k, v = m.group("k"), " ".join(m.group("v").split())
        context = about - content_words(f"{k} {v}")
        out.append(_Value(f"field {k}", v.lower(), context, m.group(0).strip(), loose=True))
    return out


def _closed_lists(clause: str) -> list[_Closed]:
    """The closed lists of a clause: "only" then three or more short items."""
    out = []
    for m in _ONLY_LIST.finditer(clause):
        items = [i.strip(" '\"`‘’“”") for i in _LIST_SPLIT.split(m.group("rest").strip())]
        if len(items) < 3 or any(not i or len(i.split()) > 3 for i in items[1:]):
            continue
        lead = items[0].split()  # "be resolved as a_wins": its last word is the first item
        names = [lead[-1], *(i.split()[0] for i in items[1:])]
        head = content_words(clause[: m.start()] + " " + " ".join(lead[:-1]))
        out.append(_Closed(head, frozenset(_stem(n.lower()) for n in names), clause))
    return out


# ---------------------------------------------------------------------------- the detectors


def _number(m: Memory, a: _Analysis) -> int | None:
    n = m.metadata.get("number")
    return n if isinstance(n, int) and not isinstance(n, bool) else a.number


def _record_folder(m: Memory) -> str | None:
    """The folder of a decision record read from a file (None for any other memory)."""
    if m.source != "adr" or not m.source_id:
        return None
    return m.source_id.rsplit("/", 1)[0] if "/" in m.source_id else ""


_HEAD_PREFIX = re.compile(r"^(?:Decision|ADR\s*\d*)\s*:\s*", re.I)


def _record_name(m: Memory, a: _Analysis) -> str:
    """How a reason names a record: "record 4"; one without a number by its title, else its
    file, else its first line ("record “Use Kafka for events”")."""
    n = _number(m, a)
    if n is not None:
        return f"record {n}"
    title = next((t.title for t in m.artifacts if t.type == "adr" and t.title), None)
    if title is None and m.source == "adr" and m.source_id:
        return f"record {m.source_id}"
    first = title or _HEAD_PREFIX.sub("", m.text.strip().split("\n", 1)[0])
    return f"record “{_clip(first, 80)}”"


def _ref_finding(x: Memory, ax: _Analysis, y: Memory, ay: _Analysis) -> Finding | None:
    """One record names the other's number after supersedes / amends (or "… by")."""
    fx, fy = _record_folder(x), _record_folder(y)
    if fx is not None and fy is not None and fx != fy:
        return None  # two folders of records number their records each on their own
    for holder, ah, other, ao, holder_is_x in ((x, ax, y, ay, True), (y, ay, x, ax, False)):
        wanted = _number(other, ao)
        if wanted is None or wanted == _number(holder, ah):
            continue
        for r in ah.refs:
            if r.number != wanted:
                continue
            if r.revisits:
                own = _number(holder, ah)
                if own is not None and own < wanted:
                    continue  # an earlier record cannot revisit a later one
                if len((content_words(r.about) & content_words(other.text)) - _RECORD_WORDS) < 2:
                    continue  # another record of that number (another project's)
                return Finding(
                    "changed",
                    f"{_record_name(holder, ah)} revisits record {wanted}: “{r.text}”",
                    0.8,
                    first_newer=holder_is_x,
                )
            holder_newer = not r.by
            older = ah if not holder_newer else ao
            partial = r.partial or older.partly_superseded
            names = (_record_name(holder, ah), f"record {wanted}")
            newer_name, older_name = names if holder_newer else names[::-1]
            word = "partly supersedes" if partial else "supersedes"
            return Finding(
                "amended" if partial else "superseded",
                f"{newer_name} {word} {older_name}: “{r.text}”",
                0.95,
                partial,
                holder_newer if holder_is_x else not holder_newer,
            )
    return None


def _counts_setting(vx: _Value, vy: _Value) -> bool:
    """A named setting and a count of what it counts, about the same named thing:
    ``top_sessions=3`` / "defaults to 5 sessions" (both name ``session_first``)."""
    if not (
        (vx.tail and vy.counted and vx.tail == vy.key)
        or (vy.tail and vx.counted and vy.tail == vx.key)
    ):
        return False
    shared = vx.context & vy.context
    return len(shared) >= 2 or any("_" in w or "." in w for w in shared)


def _varied(a: _Analysis) -> frozenset[str]:
    """Keys one text gives several values ("$99 for up to 100,000 searches, … for 1000
    searches"): a quantity it talks about, not a setting it states."""
    seen: dict[str, str] = {}
    out = set()
    for v in a.values:
        if seen.setdefault(v.key, v.value) != v.value:
            out.add(v.key)
    return frozenset(out)


def _value_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    varied = ax.varied | ay.varied
    for vx in ax.values:
        for vy in ay.values:
            if vx.value == vy.value or vx.key in varied or vy.key in varied:
                continue
            if vx.key != vy.key:
                if _counts_setting(vx, vy):
                    return Finding(
                        "value",
                        f"{vx.key}: {vx.value} vs {vy.key}: {vy.value} — “{_clip(vx.text)}” / "
                        f"“{_clip(vy.text)}”",
                        0.75,
                    )
                continue
            if vx.loose:
                # a field typed anew beside a note naming its old type: "url: str  # … HttpUrl"
                renamed = vx.key.startswith("field ") and (
                    _stem(vx.value) in vy.context or _stem(vy.value) in vx.context
                )
                if not renamed and _same_subject(vx.context, vy.context) < OVERLAP:
                    continue
                return Finding(
                    "value",
                    f"{vx.key}: {vx.value} vs {vy.value} — “{_clip(vx.text)}” / “{_clip(vy.text)}”",
                    0.8,
                )
            specific = bool(re.search(r"[_.]", vx.key)) or (not vx.context and not vy.context)
            if not specific:
                shared = vx.context & vy.context
                union = vx.context | vy.context
                if not shared or len(shared) / max(1, len(union)) < 0.34:
                    continue
            return Finding(
                "value",
                f"{vx.key}: {vx.value} vs {vy.value} — “{_clip(vx.text)}” / “{_clip(vy.text)}”",
                0.85,
            )
    return None


def _choice_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    for cx in ax.choices:
        for cy in ay.choices:
            if cx.winner & cy.loser and cx.loser & cy.winner:
                return Finding(
                    "preference",
                    f"opposite choices — “{_clip(cx.text)}” / “{_clip(cy.text)}”",
                    0.85,
                )
    return None


_AGAINST = re.compile(rf"\b(?:{_INSTEAD}|in\s+favou?r\s+of|{_BEAT})\b", re.I)


def _chose_against(text: str, loser: frozenset[str]) -> bool:
    """Whether ``text`` itself chooses something over one of ``loser``'s words ("beat
    keyword-only, vector-only and RRF")."""
    return any(content_words(text[m.end() :]) & loser for m in _AGAINST.finditer(text))


def written_at(m: Memory) -> float | None:
    """When a memory's text was written, when the store knows it: a commit's author time, a
    note's or message's creation time, a decision record's own date; None for a file read as
    it is now (a rule file, a record without a date: their time is when they were read)."""
    if m.source == "rules":
        return None
    if m.source == "adr" and m.metadata.get("date") is None:
        return None
    return m.valid_from


def _reporter_is_newer(reporter: Memory, other: Memory) -> bool:
    """Whether the memory that reports a change was written after the other: by their real
    times when both are known and differ, else yes (a rule read today may be older than the
    commit that changed what it says)."""
    at_reporter, at_other = written_at(reporter), written_at(other)
    if at_reporter is None or at_other is None or at_reporter == at_other:
        return True
    return at_reporter > at_other


def _change_finding(
    x: Memory, ax: _Analysis, y: Memory, ay: _Analysis, *, titled: bool = False
) -> Finding | None:
    """One says something stopped holding (or chose something instead of it) that the other
    states or asks for. ``titled``: what stopped must be named in the other's title (two
    decision records, whose prose discusses much more than what they decide). Which side is
    the later is told by :func:`_reporter_is_newer`."""
    # ``newer`` is the side that reports the change, ``older`` the side that states the thing
    for first_newer, (an, ao) in ((True, (ax, ay)), (False, (ay, ax))):
        newer, older = (x, y) if first_newer else (y, x)
        title = content_words(older.text.split("\n", 1)[0]) if titled else None
        # a record's own title says what its clauses are about
        own = content_words(newer.text.split("\n", 1)[0]) if titled else frozenset()
        losers = [*an.changes, *an.choices]
        # a short statement (a commit, a rule) is about one thing: all of it is the subject
        whole = content_words(newer.text) if len(newer.text) <= SHORT_CHARS else None
        # two short statements: each whole is the other's subject too (for a choice, which
        # names what it chose against; "remove things that are done" is too loose for it)
        short_older = whole is not None and len(older.text) <= SHORT_CHARS
        other: frozenset[str] | None = None
        for choice in losers:
            loser, said = choice.loser, choice.text
            said_words = whole if whole is not None else content_words(said) | own
            # a whole short text shares words with much: three of them make one subject
            need = 3 if whole is not None else 2
            if title is not None and not (loser & title):
                continue
            for clause in ao.clauses:
                if clause.negative != choice.negated or not (loser & clause.words):
                    continue
                if clause.changes:  # it reports a change itself: not a statement of the state
                    continue
                if choice.elsewhere & clause.words:
                    continue  # it already puts the thing where the move takes it
                if choice.named:
                    # an action on a named thing: the thing itself is what must be shared
                    if len(loser & clause.words) < min(2, len(loser)):
                        continue
                    if len(said_words & clause.words) < 3:
                        continue
                elif _same_subject(said_words, clause.words, need=need) < CHANGE_OVERLAP:
                    if not (short_older and choice.winner):
                        continue
                    if other is None:
                        other = content_words(older.text)
                    if _same_subject(said_words, other, need=need) < CHANGE_OVERLAP:
                        continue
                if choice.says_not and not (content_words(said) - loser) & clause.words:
                    continue  # "ingest knowledge, not noise": a stance about something else
                if choice.winner and _chose_against(clause.text, loser):
                    continue  # the earlier one chose against it too: the same direction
                if _reporter_is_newer(newer, older):
                    reason = f"later: “{_clip(said)}” — earlier: “{_clip(clause.text)}”"
                    return Finding("changed", reason, 0.75, first_newer=first_newer)
                # the statement was written after the change was reported: it is the later
                reason = f"later: “{_clip(clause.text)}” — earlier: “{_clip(said)}”"
                return Finding("changed", reason, 0.75, first_newer=not first_newer)
    return None


_ANTONYMS: tuple[tuple[str, str], ...] = (
    ("ignor", "respect"),
    ("enabl", "disabl"),
    ("on", "off"),
    ("allow", "deny"),
    ("allow", "forbid"),
    ("includ", "exclud"),
    ("ingest", "exclud"),
    ("includ", "skip"),
    ("ingest", "skip"),
    ("includ", "omit"),
    ("ingest", "omit"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("lazy", "eager"),
    ("lazily", "eagerly"),
    ("public", "privat"),
    ("requir", "optional"),
    ("mandatory", "optional"),
    ("accept", "reject"),
    ("open", "clos"),
    ("befor", "after"),
    ("local", "remot"),
    ("insid", "outsid"),
    ("singl", "multipl"),
    ("stdout", "stderr"),
    ("upper", "lower"),
    ("min", "max"),
    ("minimum", "maximum"),
    ("blocking", "non-blocking"),
    ("mutabl", "immutabl"),
    ("explicit", "implicit"),
    ("strict", "lenient"),
    ("sequential", "parallel"),
)
_OPPOSITE_WORDS: tuple[tuple[str, str], ...] = (
    ("opt-in", "opt-out"),
    ("allowlist", "denylist"),
    ("whitelist", "blacklist"),
    ("ascending", "descending"),
    ("online", "offline"),
    ("stateless", "stateful"),
    ("case-sensitive", "case-insensitive"),
    ("writable", "read-only"),
    ("headless", "headed"),
)
"""Opposite words of engineering English that name one setting two ways, stemmed as clauses
are (manual/automatic, increase/decrease, static/dynamic name two different things as often:
"the manual release workflow" / "automatic release creation")."""
_OPPOSITE: dict[str, frozenset[str]] = {}
for _a, _b in (*_ANTONYMS, *((_stem(x), _stem(y)) for x, y in _OPPOSITE_WORDS)):
    _OPPOSITE[_a] = _OPPOSITE.get(_a, frozenset()) | {_b}
    _OPPOSITE[_b] = _OPPOSITE.get(_b, frozenset()) | {_a}


def _antonym_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    """The same statement with one word turned into its opposite (on/off, ignores/respects)."""
    for cx in ax.clauses:
        opposed = {(w, o) for w in cx.words for o in _OPPOSITE.get(w, ()) if o not in cx.words}
        if not opposed:
            continue
        for cy in ay.clauses:
            hit = next(((w, o) for w, o in opposed if o in cy.words and w not in cy.words), None)
            if hit is None or cx.negative != cy.negative:
                continue
            rest_x, rest_y = cx.words - set(hit), cy.words - set(hit)
            # an opposite word is a strong sign: three shared words are subject enough
            if _same_subject(rest_x, rest_y) < CHANGE_OVERLAP and len(rest_x & rest_y) < 3:
                continue
            return Finding(
                "polarity",
                f"{hit[0]} against {hit[1]} — “{_clip(cx.text)}” / “{_clip(cy.text)}”",
                0.7,
            )
    return None


def _polarity_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    for an, ao in ((ax, ay), (ay, ax)):
        for choice in an.choices:
            said = content_words(choice.text)
            for clause in ao.clauses:
                if clause.negative or not (choice.loser & clause.words):
                    continue
                if _same_subject(said, clause.words) < CHANGE_OVERLAP:
                    continue
                if _chose_against(clause.text, choice.loser):
                    continue  # both choose against it
                return Finding(
                    "polarity",
                    f"one says not — “{_clip(choice.text)}” — the other says so — "
                    f"“{_clip(clause.text)}”",
                    0.7,
                )
    for cx in ax.clauses:
        for cy in ay.clauses:
            if cx.negative == cy.negative:
                continue
            if _same_subject(cx.words, cy.words) < OVERLAP:
                continue
            neg, pos = (cx, cy) if cx.negative else (cy, cx)
            # "(no API key required)" is not against "a cached key": two of its words, or its one
            if neg.target and len(neg.target & pos.words) < min(2, len(neg.target)):
                continue  # "avoid blocking calls in async methods" says nothing against async
            return Finding(
                "polarity",
                f"one says not — “{_clip(neg.text)}” — the other says so — “{_clip(pos.text)}”",
                0.7,
            )
    return None


def _slot(tx: tuple[str, ...], ty: tuple[str, ...]) -> tuple[int, int, int] | None:
    """Where two token runs differ in one short slot: (prefix length, suffix length, slot
    length in ``tx``); None when they differ elsewhere too."""
    n = min(len(tx), len(ty))
    p = 0
    while p < n and tx[p] == ty[p]:
        p += 1
    q = 0
    while q < n - p and tx[-1 - q] == ty[-1 - q]:
        q += 1
    lx, ly = len(tx) - p - q, len(ty) - p - q
    if not (1 <= lx <= 3 and 1 <= ly <= 3):
        return None
    return p, q, lx


def _after_choice(prefix: tuple[str, ...]) -> bool:
    """Whether a slot after ``prefix`` follows a verb of choice, with at most two stop words
    (an article, a preposition) between them: "uses the X", "loaded per X"."""
    for back in range(1, min(3, len(prefix)) + 1):
        word = prefix[-back]
        if word in _SLOT_BEFORE:
            return True
        if word not in STOPWORDS:
            return False
    return False


_NUMERIC = re.compile(r"^[$€£]?[\d.,:/%+-]+[a-z]{0,2}$")


def _named(tokens: tuple[str, ...]) -> frozenset[str]:
    """The content words of a slot that are not numbers ("$8.00", "30s")."""
    return frozenset(w for w in content_words(" ".join(tokens)) if not _NUMERIC.match(w))


def _swap_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    """The same sentence with one thing swapped for another where one thing is named ("uses
    X for package management" / "uses Y for package management")."""
    for cx in ax.clauses:
        # the slot follows a shared beginning: only clauses that begin alike are compared
        for cy in ay.by_first_token.get(cx.tokens[0], []) if cx.tokens else []:
            if cx.negative != cy.negative:
                continue
            at = _slot(cx.tokens, cy.tokens)
            if at is None:
                continue
            p, q, lx = at
            if not _after_choice(cx.tokens[:p]):
                continue
            frame = cx.tokens[:p] + cx.tokens[len(cx.tokens) - q :]
            if len(frame) < 4 or len(content_words(" ".join(frame))) < 2:
                continue
            after = cx.tokens[len(cx.tokens) - q] if q else ""
            if after and after not in _STOP and after not in _PREPOSITIONS:
                continue  # "the News Search API" / "the Video Search API": a modifier, two things
            sx = _named(cx.tokens[p : p + lx])
            sy = _named(cy.tokens[p : len(cy.tokens) - q])
            if not sx or not sy or sx & sy:
                continue  # numbers are the value rule's: it reads what they count
            return Finding(
                "value",
                f"{'/'.join(sorted(sx))} against {'/'.join(sorted(sy))} — “{_clip(cx.text)}” / "
                f"“{_clip(cy.text)}”",
                0.7,
            )
    return None


def _purposes(a: _Analysis) -> list[tuple[frozenset[str], frozenset[str], frozenset[str], str]]:
    """What serves which purpose: (subject words, tool words, purpose words, the clause)."""
    out = []
    for c in a.clauses:
        if c.negative:
            continue
        stated = _CONDITION.sub(" ", c.text)  # "when using X as a library, …" states no choice
        for m in _PURPOSE.finditer(stated):
            tool, purpose = content_words(m.group("o")), content_words(m.group("p"))
            if tool and len(purpose) >= 2 and not (tool & purpose):
                out.append((content_words(stated[: m.start()]), tool, purpose, c.text))
    return out


def _purpose_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    """The same purpose served by another tool, for the same subject ("uses X for package
    management" / "uses Y for package management")."""
    for subject_x, tool_x, purpose_x, text_x in ax.purposes:
        for subject_y, tool_y, purpose_y, text_y in ay.purposes:
            if tool_x & tool_y or _same_subject(purpose_x, purpose_y) < OVERLAP:
                continue
            if subject_x and subject_y and not (subject_x & subject_y):
                continue  # two subjects, each with its own tool
            return Finding(
                "value",
                f"{'/'.join(sorted(tool_x))} against {'/'.join(sorted(tool_y))} for the same — "
                f"“{_clip(text_x)}” / “{_clip(text_y)}”",
                0.7,
            )
    return None


def _defaults(a: _Analysis) -> list[tuple[frozenset[str], frozenset[str], str]]:
    """The default cases of a text: (what is not given, what happens then, the clause)."""
    out = []
    for c in a.clauses:
        m = _UNGIVEN.search(c.text)
        if m is None:
            continue
        given = content_words(m.group("x"))
        then = content_words(c.text[: m.start()] + " " + c.text[m.end() :])
        if given and then & given and then - given:  # it says what stands for the missing one
            out.append((given, then - given, c.text))
    return out


def _default_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    """Two defaults for the same thing left out: "when no engines are specified, search every
    engine" / "… the 'best' engines when no engines are specified"."""
    for given_x, then_x, text_x in ax.defaults:
        for given_y, then_y, text_y in ay.defaults:
            if given_x == given_y and not (then_x & then_y):
                return Finding(
                    "value",
                    f"another default — “{_clip(text_x)}” / “{_clip(text_y)}”",
                    0.7,
                )
    return None


def _closed_finding(ax: _Analysis, ay: _Analysis) -> Finding | None:
    """One names a closed list ("can only be resolved as a, b or c"), the other a new member
    of it, quoted, about the same thing: the list grew (the side with the new one is newer)."""
    for first_newer, (an, ao) in ((False, (ax, ay)), (True, (ay, ax))):
        for closed in an.closed:
            for clause in ao.clauses:
                if len(closed.head & clause.words) < 2:
                    continue
                for m in _QUOTED.finditer(clause.text):
                    new = _stem(m.group("q").lower())
                    if new in closed.items or new in closed.head:
                        continue
                    return Finding(
                        "changed",
                        f"only {', '.join(sorted(closed.items))} — “{_clip(closed.text)}” — "
                        f"now also {m.group('q')}: “{_clip(clause.text)}”",
                        0.7,
                        first_newer=first_newer,
                    )
    return None


def detect(x: Memory, y: Memory) -> Finding | None:
    """Whether two memories disagree, and why (local rules only)."""
    if not x.text.strip() or not y.text.strip():
        return None
    ax, ay = analyse(x.text[:MAX_TEXT]), analyse(y.text[:MAX_TEXT])
    found = _ref_finding(x, ax, y, ay)
    if found is not None:
        return found
    if x.kind is Kind.DECISION and y.kind is Kind.DECISION:
        # two records: what they decide, not the options, context and consequences they
        # discuss (which quote earlier records and what was rejected); no bare polarity
        dx = analyse(decision_part(x.text[:MAX_TEXT]))
        dy = analyse(decision_part(y.text[:MAX_TEXT]))
        return (
            _value_finding(dx, dy)
            or _choice_finding(dx, dy)
            or _change_finding(x, dx, y, dy, titled=True)
        )
    return (
        _value_finding(ax, ay)
        or _choice_finding(ax, ay)
        or _change_finding(x, ax, y, ay)
        or _polarity_finding(ax, ay)
        or _antonym_finding(ax, ay)
        or _swap_finding(ax, ay)
        or _purpose_finding(ax, ay)
        or _closed_finding(ax, ay)
        or _default_finding(ax, ay)
    )


# ---------------------------------------------------------------------------- the scan


def _scannable(m: Memory) -> bool:
    if m.archived or m.superseded_by is not None:
        return False
    if m.valid_to is not None and m.valid_to <= time.time():
        return False
    if m.kind in RELATED_KINDS:
        return True
    if m.kind in CHANGE_KINDS and m.source.startswith("chat:"):
        return False  # a whole conversation's summary: its items are compared instead
    return m.kind in CHANGE_KINDS and len(m.text) <= MAX_EPISODE_CHARS


def _neighbours(store: MemoryStore, m: Memory, k: int) -> list[int]:
    kinds = RELATED_KINDS if m.kind in CHANGE_KINDS else RELATED_KINDS + CHANGE_KINDS
    filters = MemoryFilter(kinds=kinds, valid_at=time.time())
    vector = store.embeddings.of([m.id]).get(m.id) if store.has_embedder else None
    try:
        hits = search(
            store,
            m.text[:2000],
            filters=filters,
            k=k + 1,
            query_vector=vector,
            min_similarity=MIN_SIMILARITY,
        )
    except StoreError:
        return []
    found = [h.memory.id for h in hits if h.memory.id != m.id]
    numbers = [r.number for r in analyse(m.text[:MAX_TEXT]).refs]
    for ids in decisions_numbered(store, numbers).values():
        found += [i for i in ids if i != m.id and i not in found]
    return found


def _document(m: Memory) -> str | None:
    """The file a memory is one part of: a rule file's section, a decision record."""
    if m.source == "rules":
        path = m.metadata.get("file")
        if isinstance(path, str) and path:
            return path
    elif m.source == "adr" and m.source_id:
        return m.source_id
    else:
        return None
    return next((a.ref for a in m.artifacts if a.type in ("file", "adr")), None)


def _is_commit(m: Memory) -> bool:
    return m.kind is Kind.EPISODE and (
        m.source == "git" or any(a.type == "commit" for a in m.artifacts)
    )


def _touched(commit: Memory, path: str) -> bool:
    """Whether a commit added or changed the file ``path`` (its files are relative to the git
    root, which may be above the project's folder)."""
    files = commit.metadata.get("files")
    paths = {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()
    paths |= {a.value for a in commit.anchors if a.type is AnchorType.FILE}
    return any(p == path or p.endswith("/" + path) for p in paths)


def _never_conflict(x: Memory, y: Memory) -> bool:
    """Pairs that are never a contradiction, whatever their texts say: two parts of one
    document, a commit and a document it added or changed."""
    dx, dy = _document(x), _document(y)
    if dx is not None and dx == dy:
        return True  # two sections of one rule file, two memories of one record
    for commit, doc in ((x, dy), (y, dx)):
        if doc is not None and _is_commit(commit) and _touched(commit, doc):
            return True
    return False


def _wording_only(x: Memory, y: Memory, finding: Finding) -> bool:
    """A commit and a rule section flagged by polarity or change wording alone: a change and
    a text that describes the same work ("Never run pytest directly" / "Run the coverage
    suite with pytest-cov"), unless the commit names what replaces something the rule names
    ("Replace Selenium with Playwright …" against "Use Selenium for …")."""
    if finding.type not in ("polarity", "changed"):
        return False
    commit, rule = (x, y) if _is_commit(x) else (y, x)
    if not _is_commit(commit) or rule.source != "rules":
        return False
    if finding.type == "changed":
        said = content_words(rule.text[:MAX_TEXT])
        for choice in analyse(commit.text[:MAX_TEXT]).choices:
            if choice.winner and not (choice.says_not or choice.negated) and choice.loser <= said:
                return False
    return True


def status_for(conflict_type: str) -> ContradictionStatus:
    """How a conflict of this type is recorded: open on strong evidence, else suspected."""
    return (
        ContradictionStatus.OPEN if conflict_type in STRONG_TYPES else ContradictionStatus.SUSPECTED
    )


def _newer_first(x: Memory, y: Memory, finding: Finding) -> tuple[Memory, Memory]:
    if finding.first_newer is not None:
        return (x, y) if finding.first_newer else (y, x)
    if (x.valid_from, x.id) >= (y.valid_from, y.id):
        return x, y
    return y, x


def scan(
    store: MemoryStore,
    ids: Iterable[int],
    *,
    judge: Judge | None = None,
    neighbours: int = NEIGHBOURS,
) -> list[Conflict]:
    """The conflicts between the memories ``ids`` and their neighbours that are not recorded
    yet. Unknown, archived, superseded and unrelated memories are passed over."""
    wanted = list(dict.fromkeys(int(i) for i in ids))
    out: list[Conflict] = []
    seen: set[tuple[int, int]] = set()
    # a commit or a message can only contradict a related memory: none, nothing to look for
    related = store.count(MemoryFilter(kinds=RELATED_KINDS, valid_at=time.time())) > 0
    for m in store.get_many(wanted):
        if not _scannable(m) or (m.kind in CHANGE_KINDS and not related):
            continue
        near = _neighbours(store, m, neighbours)
        if not near:
            continue
        skip = lineage(store, [m.id, *near]) | recorded_pairs(store, [m.id])
        others = {o.id: o for o in store.get_many(near)}
        for oid in near:
            o = others.get(oid)
            pair = (min(m.id, oid), max(m.id, oid))
            if o is None or pair in seen or pair in skip or not _scannable(o):
                continue
            seen.add(pair)
            if m.kind in CHANGE_KINDS and o.kind in CHANGE_KINDS:
                continue
            if o.source == m.source and o.source_id is not None and o.source_id == m.source_id:
                continue  # two versions of one source
            if _never_conflict(m, o):
                continue  # one document's parts; a commit and a document it changed
            conflict = _judge(m, o, judge) if judge is not None else None
            if conflict is None:
                finding = detect(m, o)
                if finding is not None and not _wording_only(m, o, finding):
                    newer, older = _newer_first(m, o, finding)
                    conflict = Conflict(
                        older.id,
                        newer.id,
                        finding.type,
                        finding.reason,
                        finding.confidence,
                        finding.partial,
                    )
            if conflict is not None and conflict.type:
                out.append(conflict)
    return out


def _judge(x: Memory, y: Memory, judge: Judge) -> Conflict | None:
    """The judge's verdict as a conflict; None when it has none (the local rules decide).
    A verdict of no conflict answers an empty-typed conflict the scan drops."""
    newer, older = (x, y) if (x.valid_from, x.id) >= (y.valid_from, y.id) else (y, x)
    try:
        verdict = judge(older.text, newer.text)  # A is the older, B the newer
    except Exception:  # an unreachable or confused judge leaves the local rules to decide
        return None
    if verdict is None:
        return None
    if not verdict.conflict:
        return Conflict(older.id, newer.id, "", "", 0.0)
    return Conflict(
        older.id,
        newer.id,
        "amended" if verdict.partial else "judged",
        verdict.reason or "judged contradictory",
        max(0.0, min(1.0, verdict.confidence)),
        verdict.partial,
    )


def record(store: MemoryStore, conflicts: Sequence[Conflict]) -> list[int]:
    """Record a contradiction for each conflict, open or suspected by its type (see
    :func:`status_for`; a pair already recorded is left as it is); a partial supersession
    also links the older memory to the newer (EVOLVED_INTO) without closing it. Answers the
    ids of the contradictions recorded now."""
    opened: list[int] = []
    for c in conflicts:
        if c.older == c.newer or store.contradictions.exists(c.older, c.newer):
            continue
        if not (store.exists(c.older) and store.exists(c.newer)):
            continue
        if c.partial:
            store.graph.add(
                c.older,
                c.newer,
                EdgeType.EVOLVED_INTO,
                1.0,
                {"by": "contradictions", "partial": True},
            )
        opened.append(
            store.contradictions.add(
                c.older,
                c.newer,
                reason=f"{c.type}: {c.reason}",
                confidence=c.confidence,
                status=status_for(c.type),
            )
        )
    return opened


def scan_and_record(
    store: MemoryStore, ids: Iterable[int], *, judge: Judge | None = None
) -> list[int]:
    """:func:`scan` then :func:`record`: what every write path calls."""
    return record(store, scan(store, ids, judge=judge))


SCAN_STATE = "contradictions"
"""Cursor source holding the last memory id consolidation scanned through."""
MAX_SCAN = 2000
"""Memories one consolidation scans at most (the next run goes on from there)."""


def pending_scan(store: MemoryStore) -> tuple[list[int], int]:
    """The memories consolidation scans next (added since its last run, at most
    :data:`MAX_SCAN`) and the id it will have scanned through."""
    after = int(store.cursors.get(SCAN_STATE).get("scanned_through", "0") or 0)
    todo = ids_after(store, after)
    through = todo[MAX_SCAN - 1] if len(todo) > MAX_SCAN else max_memory_id(store)
    return todo[:MAX_SCAN], through


def mark_scanned(store: MemoryStore, through: int) -> None:
    """Remember that consolidation scanned every memory up to id ``through``."""
    store.cursors.set(SCAN_STATE, {"scanned_through": str(through)})
