"""The marker phrases statements are read by: negations and conditions, choices ("X instead of
Y", "replace X with Y"), reported changes ("no longer", "removed"), actions on a named thing,
settings and counts, decision records' links and titles. Each pattern names the groups
:mod:`predictive.conflicts.statement` reads: ``w`` the winner of a choice, ``l`` what lost or
stopped, ``k`` and ``v`` a key and its value."""

from __future__ import annotations

import re

from predictive.conflicts.wording import stem

NEGATION = re.compile(
    r"\b(?:never|not|no(?!-\w)|nothing|none|nobody|without|avoid(?:ed|s)?|"
    r"disable[ds]?|forbid(?:den|s)?|prohibit(?:ed|s)?|stop(?:ped|s)?\s+using)\b|n't\b",
    re.I,
)
CONDITION = re.compile(r"\b(?:if|unless|whether|until|once|when|whenever)\b[^,;]*", re.I)
BOTH_WAYS = re.compile(
    r"\b(?:enabl|allow|turn\w*\s+on)\w*\s*(?:/|\bor\b|\band\b)\s*(?:disabl|deny|forbid|turn\w*\s+off)\w*"
    r"|\b(?:disabl|deny|forbid|turn\w*\s+off)\w*\s*(?:/|\bor\b|\band\b)\s*(?:enabl|allow|turn\w*\s+on)\w*",
    re.I,
)
"""Both ways at once ("enable or disable any engine", "Enabling/Disabling"): no negation."""
CODE_NONE = re.compile(r"(?<=\S)(\s+|\s*[=(:>,]\s*)None\b")
"""Python's ``None`` inside a sentence ("returns None", ``x = None``) is a value, no negation."""
TURNS = re.compile(r"\b(?:without|unless|until|except)\b", re.I)
CLAUSE_SPLIT = re.compile(
    r"(?<=[.!?])\s+(?=[A-Z`\"'(*\[])|\n\s*\n|\n(?=\s*(?:[-*+]\s|\d{1,3}[.)]\s|\||#))|(?<=[.!?:])\n"
    r"|;\s+|(?<=\w):\s+(?=[A-Za-z])|\s+but\s+|\s+however,?\s+|,\s+so\s+(?=[A-Za-z])"
)
"""Clause boundaries: sentences, paragraphs, list items, table rows, semicolons, "but", ", so"
(what follows is a consequence, with its own polarity); a line
wrapped inside a sentence is not one."""
CHANGED = re.compile(
    r"\b(?:modified|changed|updated|moved|switched|migrated|renamed|rewritten|reworked)\b", re.I
)


VERSION_OR_DATE = re.compile(r"^\d{4}-\d{2}(?:-\d{2})?$|^\d{1,2}:\d{2}")


_INSTEAD = r"instead\s+of|rather\s+than|in\s+place\s+of"
_BEAT = r"beat|beats|outperform(?:s|ed)?|out-performed"
"""Markers of a choice against what follows them (shared by the choice patterns and the
same-direction check)."""
CHOICE_PATTERNS: tuple[re.Pattern[str], ...] = (
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
SAYS_NOT = (CHOICE_PATTERNS[4], CHOICE_PATTERNS[5])
"""Patterns whose clause says its first part ("X, not Y", "X (not Y)"): it is no negation."""
IN_FAVOUR = re.compile(
    r"(?P<l>[^,;:()]{2,60}?)\s+(?:(?:was|is|were|are|got|has\s+been)\s+)?"
    r"(?:dropped|removed|deprecated|abandoned|replaced)\s+in\s+favou?r\s+of\s+(?P<w>[^,;:.()]{2,60})",
    re.I,
)
CHANGE_PATTERNS = (
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
BEATS = re.compile(rf"(?P<w>[^,;:()]{{2,60}}?)\s+(?:{_BEAT})\s+(?P<l>[^,;:.()]{{2,60}})", re.I)
"""A measured choice: "weighted fusion … beat RRF"."""
ACTIONS = (
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
MOVED_TO = re.compile(
    r"\bmov(?:e|es|ed|ing)\s+(?:the\s+|our\s+)?(?P<l>[^,;:.()]{2,60}?)\s+(?:to|into)\s+"
    r"(?:the\s+)?(?P<to>[^,;:.()]{2,60})",
    re.I,
)
"""Moved somewhere else: it changes an earlier text that puts the thing elsewhere."""
STOPS_NOW = re.compile(r"(?P<l>[^,;:.()—–]{2,60}?)\s+no\s+longer\s+(?!be\b|is\b|are\b)[a-z]", re.I)
"""A subject that no longer does something: "a didOpen alone no longer takes over"."""
ACTION_TITLE = re.compile(
    r"\A\s*(?:(?:ADR|Decision|RFC)[\s#-]*\d{1,4}\s*[:.]\s*)?"
    r"(?P<verb>change|replace|remove|retire|drop|merge|combine|move|migrate|switch|deprecate"
    r"|consolidate|decommission)\s+(?P<rest>[^\n]{3,120})",
    re.I,
)
"""A record's title that names an action ("ADR 30: Change in architecture to Asset Master"):
what it acts on is what an earlier text describes."""
RECORD_WORDS = frozenset(
    stem(w)
    for w in "adr adrs rfc record records decision decisions status context consequences "
    "accepted approved proposed option options".split()
)
"""Words every decision record has: they tell no two records' subjects together."""
REVISITS = re.compile(r"\b(?:revisit|reconsider|overturn|overrul|revers)\w*\b", re.I)
NAMED_RECORD = re.compile(r"\b(?:ADR|RFC|record|decision)\s*#?\s*0*(?P<n>\d{1,4})\b", re.I)
LEFT_OUT = re.compile(
    r"\b(?:left|leave|leaves|leaving|filtered|filters?|kept|keeps?|keep)\s+out\b", re.I
)
"""Left out: an exclusion in two words (read as "excluded")."""
ASSIGN = re.compile(
    r"(?<![\w.])(?P<k>[A-Za-z_][\w.-]{1,60}?)\s*(?P<op>=|:=|==|:)\s*[\"'`]?(?P<v>[\w.:/%+-]{1,60})"
)
NUMBERED = re.compile(
    r"\b(?P<k>[A-Za-z][\w-]{1,40})\s+(?:(?:is|of|to|at|=|set\s+to|to\s+be)\s+)?"
    r"(?P<v>\d[\d.,:/%]*(?:[a-z]{1,3}\b)?)",
    re.I,
)
SPACED_THOUSANDS = re.compile(r"(?<=\d),\s(?=\d{3}\b)")
"""A number whose thousands are set off by a comma and a space ("100, 000 searches")."""
COUNTED = re.compile(r"(?<![\w.])(?P<v>\d[\d,]*)\s+(?P<k>[a-z][a-z-]{2,30})\b", re.I)
ROW = re.compile(r"^\s*\|\s*(?P<k>[^|]{1,60}?)\s*\|(?:[^|]*\|)*?\s*(?P<v>[^|]{1,60}?)\s*\|\s*$")
REF = re.compile(
    r"(?P<part>\b(?:in\s+part|partly|partially)\s+)?"
    r"(?P<verb>supersed(?:es|ed|ing)|amend(?:s|ed|ing)?|replac(?:es|ed))"
    r"(?P<by>\s+(?:in\s+part\s+)?by)?\s+"
    r"(?:\[\s*)?(?:(?:adr|decision|record|rfc)\s*[#-]?\s*|#)?0*(?P<n>\d{1,4})\b",
    re.I,
)
NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate("two three four five six seven eight nine ten eleven twelve".split(), 2)
}
"""Number words counted as figures ("one" is mostly no count: "one place", "one credit")."""
NUMBER_WORD = re.compile(r"\b(?:" + "|".join(NUMBER_WORDS) + r")\b(?=\s+[a-z])", re.I)
MULTIPLE = re.compile(
    r"(?:\b(?P<w>twice|double|thrice|triple)|(?<![\w.])(?P<v>\d+(?:\.\d+)?)\s*(?:×|x\b|times\b))"
    r"\s+(?:the\s+|as\s+\w+\s+as\s+(?:the\s+)?)?(?P<k>[a-z][a-z-]{2,30}(?:\s+[a-z][a-z-]{2,30})?)",
    re.I,
)
TIMES = {"twice": "2", "double": "2", "thrice": "3", "triple": "3"}
MAY_COUNT = re.compile(r"\d|twice|double|thrice|triple|\bper\b|\beach\b|\bone\b|single", re.I)
"""A quick look for what :data:`MULTIPLE`, :data:`PER` and :data:`IN_ONE` need."""
PER = re.compile(
    r"(?<![\w.])(?P<v>\d[\d,]*)\s+(?:[a-z-]+\s+){0,2}?(?:per|each)\s+(?P<k>[a-z][a-z-]{2,30})",
    re.I,
)
IN_ONE = re.compile(
    r"\b(?:in|within|inside)\s+(?:just\s+)?(?:one|a\s+single|1)\s+(?P<k>[a-z][a-z-]{2,30})", re.I
)
"""How many things go in one unit: "500 memories per transaction" against "in one transaction"
(everything in one)."""
TOKEN = re.compile(r"`[^`\s]{1,40}`|[a-z0-9][\w.+#/-]*|[=×]")
SLOT_BEFORE = frozenset(
    "use uses using used via with by to as is are be default defaults set sets prefer prefers "
    "preferred per every each".split()
)
"""Words after which one thing stands for another (a tool, a value, a type, a unit): "uses X
for …", "loaded per X"."""
SWITCH_ON = re.compile(
    r"\b(?:turn(?:s|ed|ing)?|switch(?:es|ed|ing)?|left|leave|kept|keeps?|stays?|set\s+to)\s+"
    r"(?:[\w'-]+\s+){0,5}?on\b|\bon\b\s*(?=$|[,.;)\]—–(]|\s[-—–]\s|by\s+default)",
    re.I,
)
""""on" as a setting (it is a stop word elsewhere): "arena on", "turned the cache on"."""
FIELD_LINE = re.compile(
    r"^\s*(?:[-*]\s+)?`?(?P<k>[a-z_][a-z0-9_]{1,40})`?\s*:\s*`?"
    r"(?P<v>[A-Za-z_][\w.]*(?:\[[\w., |]+\])?(?:\s*\|\s*None)?)`?"
    r"\s*(?:=\s*[^\n]{0,80})?(?:#[^\n]*)?$",
    re.M,
)
"""A typed field or setting on its own line (``url: HttpUrl``, ``timeout: int = 30``)."""
PURPOSE = re.compile(
    r"\b(?:uses?|using|prefers?|rel(?:y|ies|ied)\s+on|relying\s+on|chooses?|chose)"
    r"\s+(?P<o>[^\s,;:()]+(?:\s+[^\s,;:()]+){0,3}?)\s+(?:for|to|as)\s+(?P<p>[^,;:()—–]{3,80})",
    re.I,
)
"""A tool for a purpose: "uses `uv` for Python package management"."""
UNGIVEN = re.compile(
    r"\b(?:when|if|where)\s+no\s+(?P<x>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:is|are|was|were)\s+"
    r"(?:specified|given|set|passed|provided|chosen|selected|configured|named)\b",
    re.I,
)
"""A default case: "when no engines are specified" (what happens then is the default)."""
ONLY_LIST = re.compile(r"\bonly\b\s+(?P<rest>[^.;()]{3,200})", re.I)
LIST_SPLIT = re.compile(r",\s*(?:or\s+|and\s+)?|\s+(?:or|and)\s+", re.I)
QUOTED = re.compile(r"['\"`‘“](?P<q>[A-Za-z][\w.-]{1,30})['\"`’”]")
TITLE_NUMBER = re.compile(r"^\s*(?:ADR|Decision|RFC)[\s#-]*0*(\d{1,4})\s*[:.]", re.I)
PARTLY_STATUS = re.compile(r"^\s*Status:\s*(?:partly|partially|in part)\s+super", re.I | re.M)
NO_KEYS = frozenset(
    "up down above below over under about around least most than within upto approximately "
    "roughly nearly almost".split()
)
"""Words before a number that bound or round it ("up to 20,000", "the above 3 components"):
no setting is named by them."""
COMMON_KEYS = frozenset(
    "status date deciders context decision consequences http https note step version v".split()
)


DECISION_PART = re.compile(
    r"^(?:Decision|Chosen option):?\s*(?P<d>.*?)(?=^(?:Options considered|Consequences|Context"
    r"|Deciders|Status):|\Z)",
    re.M | re.S,
)


AGAINST = re.compile(rf"\b(?:{_INSTEAD}|in\s+favou?r\s+of|{_BEAT})\b", re.I)
