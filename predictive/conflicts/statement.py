"""Reading one statement (:func:`analyse`): its clauses with their polarity, the choices and
changes it reports, the values it sets, the closed lists it names and the decision records it
links to. Read once per text and cached: the rules compare two readings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from predictive.conflicts.markers import (
    ACTION_TITLE,
    ACTIONS,
    ASSIGN,
    BEATS,
    BOTH_WAYS,
    CHANGE_PATTERNS,
    CHANGED,
    CHOICE_PATTERNS,
    CLAUSE_SPLIT,
    CODE_NONE,
    COMMON_KEYS,
    CONDITION,
    COUNTED,
    DECISION_PART,
    FIELD_LINE,
    IN_FAVOUR,
    IN_ONE,
    LEFT_OUT,
    LIST_SPLIT,
    MAY_COUNT,
    MOVED_TO,
    MULTIPLE,
    NAMED_RECORD,
    NEGATION,
    NO_KEYS,
    NUMBER_WORD,
    NUMBER_WORDS,
    NUMBERED,
    ONLY_LIST,
    PARTLY_STATUS,
    PER,
    PURPOSE,
    REF,
    REVISITS,
    ROW,
    SAYS_NOT,
    SPACED_THOUSANDS,
    STOPS_NOW,
    SWITCH_ON,
    TIMES,
    TITLE_NUMBER,
    TOKEN,
    TURNS,
    UNGIVEN,
    VERSION_OR_DATE,
)
from predictive.conflicts.wording import STOP, clip, content_words, first_words, last_words, stem

MAX_CLAUSES = 120
MAX_TEXT = 20_000
"""Characters of a text that are read (a pasted log or file says no more past this)."""
MAX_CLAUSE_WORDS = 60
"""A clause longer than this many words is no single statement."""


SHORT_CHARS = 600
"""A text this short is about one thing: all of it counts as the subject of what it changes."""


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
class Value:
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
        return stem(self.key.rsplit("_", 1)[1])


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
class Analysis:
    clauses: list[_Clause] = field(default_factory=list)
    closed: list[_Closed] = field(default_factory=list)
    choices: list[_Choice] = field(default_factory=list)
    changes: list[_Choice] = field(default_factory=list)  # loser only: what stopped holding
    values: list[Value] = field(default_factory=list)
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


def decision_part(text: str) -> str:
    """What a decision record decides (its Decision and chosen option), or all of it."""
    found = [m.group(0) for m in DECISION_PART.finditer(text)]
    return "\n".join(found) if found else text


def _clauses(text: str) -> list[str]:
    """The statements of ``text``; a piece with more words than a statement has (a file
    tree, a list of keywords run together) is none."""
    out = []
    for piece in CLAUSE_SPLIT.split(text):
        piece = piece.strip(" \t-*>#")
        if len(piece) >= 4 and len(piece.split()) <= MAX_CLAUSE_WORDS:
            out.append(piece)
        if len(out) >= MAX_CLAUSES:
            break
    return out


def _counted_values(clause: str, words: frozenset[str]) -> list[Value]:
    """Multiples ("twice the rate", "3× the rate") and amounts per unit ("500 memories per
    transaction", "in one transaction"): values compared by their subject, not their key."""
    out: list[Value] = []
    if not MAY_COUNT.search(clause):
        return out
    for m in MULTIPLE.finditer(clause):
        v = TIMES.get((m.group("w") or "").lower()) or m.group("v")
        key = " ".join(stem(w) for w in m.group("k").lower().split() if w not in STOP)
        if key:
            out.append(Value(f"× {key}", v, words, clause, loose=True))
    for pattern, v in ((PER, None), (IN_ONE, "all of it in one")):
        for m in pattern.finditer(clause):
            unit = stem(m.group("k").lower())
            out.append(Value(f"per {unit}", v or m.group("v"), words - {unit}, clause, loose=True))
    return out


def _values_of(clause: str, words: frozenset[str]) -> list[Value]:
    clause = SPACED_THOUSANDS.sub(",", clause)
    out: list[Value] = _counted_values(clause, words)
    row = ROW.match(clause)
    if row and not set(row.group("v")) <= set("-: "):
        k = row.group("k").strip().lower()
        v = row.group("v").strip().lower()
        if k and v and k != v and not set(k) <= set("-: "):
            out.append(Value(k, v, frozenset(), clause))
        return out
    counted = NUMBER_WORD.sub(lambda m: NUMBER_WORDS[m.group(0).lower()], clause)
    for pattern in (ASSIGN, NUMBERED, COUNTED):
        for m in pattern.finditer(counted if pattern is COUNTED else clause):
            k = m.group("k").lower().strip(".-")
            if pattern is COUNTED:
                k = stem(k)
            v = m.group("v").lower().rstrip(".,:")
            if not v or k in STOP or k in COMMON_KEYS or k in NO_KEYS:
                continue
            if VERSION_OR_DATE.match(v):
                continue
            if pattern is not ASSIGN and not re.match(r"\d", v):
                continue
            if (
                pattern is ASSIGN
                and m.group("op") == ":"
                and not (re.match(r"\d", v) or re.search(r"[_.]", k))
            ):
                continue  # "Status: accepted", "Chosen option: X" are prose, not settings
            if k.isdigit() or len(k) < 2:
                continue
            out.append(Value(k, v, words - {stem(k)}, clause, counted=pattern is COUNTED))
    return out


@lru_cache(maxsize=2048)
def analyse(text: str) -> Analysis:
    """The clauses, choices, changes, values and record references of ``text``."""
    a = Analysis()
    head = TITLE_NUMBER.match(text)
    if head:
        a.number = int(head.group(1))
    a.partly_superseded = bool(PARTLY_STATUS.search(text))
    a.values += _field_values(text)
    for m in REF.finditer(text):
        partial = bool(m.group("part")) or m.group("verb").lower().startswith("amend")
        a.refs.append(_Ref(int(m.group("n")), bool(m.group("by")), partial, clip(m.group(0))))
    for para in re.split(r"\n\s*\n", text):
        turn = REVISITS.search(para)
        if turn is not None:
            for m in NAMED_RECORD.finditer(para):
                said = para[min(m.start(), turn.start()) : max(m.end(), turn.end())]
                a.refs.append(
                    _Ref(int(m.group("n")), False, False, clip(said), revisits=True, about=para)
                )
    a.changes += _title_action(text)
    for clause in _clauses(text):
        words = content_words(clause)
        stated = CONDITION.sub(" ", BOTH_WAYS.sub(" toggle ", CODE_NONE.sub(r"\1null", clause)))
        first = NEGATION.search(stated)
        negative = bool(first) and not TURNS.search(stated, first.end() if first else 0)
        stripped = clause
        for pattern in (*CHOICE_PATTERNS, IN_FAVOUR, BEATS):
            for m in pattern.finditer(clause):
                w, loser = last_words(m.group("w")), first_words(m.group("l"))
                if loser and not (w & loser):
                    negated = bool(re.match(r"\W*(?:not|no|never)\b", m.group("l"), re.I))
                    a.choices.append(_Choice(w, loser, clause, negated, pattern in SAYS_NOT))
                    stripped = stripped.replace(m.group("l"), " ")
                    if pattern in SAYS_NOT:
                        negative = False  # "X, not Y" says X
        changes = len(a.changes)
        for pattern in CHANGE_PATTERNS:
            for m in pattern.finditer(clause):
                loser = first_words(m.group("l"))
                if loser:
                    a.changes.append(_Choice(frozenset(), loser, clause))
        a.changes += _actions(clause)
        if LEFT_OUT.search(clause):
            words = content_words(LEFT_OUT.sub(" excluded", clause))
            stripped = LEFT_OUT.sub(" excluded", stripped)
        a.values += _values_of(clause, words)
        a.closed += _closed_lists(clause)
        on = " on" in clause.lower() and SWITCH_ON.search(clause)
        switch = frozenset({"on"}) if on else frozenset()
        a.clauses.append(
            _Clause(
                clause,
                (content_words(stripped) or words) | switch,
                negative,
                len(a.changes) > changes or bool(CHANGED.search(clause)),
                first_words(stated[first.end() :], 3) if negative and first else frozenset(),
                tuple(t.strip("`") for t in TOKEN.findall(clause.lower())),
            )
        )
    return a


def _actions(clause: str) -> list[_Choice]:
    """What a clause merges away, moves, replaces or says no longer does something."""
    out = []
    for pattern in ACTIONS:
        for m in pattern.finditer(clause):
            loser = first_words(m.group("l"))
            if loser:
                out.append(_Choice(frozenset(), loser, clause, named=True))
    for m in MOVED_TO.finditer(clause):
        loser, to = first_words(m.group("l")), first_words(m.group("to"))
        if loser and to and not (loser & to):
            out.append(_Choice(frozenset(), loser, clause, named=True, elsewhere=to))
    for m in STOPS_NOW.finditer(clause):
        subject = re.sub(r"\b(?:alone|itself|themselves|now|also|still|by\s+itself)\b", " ", m["l"])
        loser = last_words(subject, 2)
        if loser:
            out.append(_Choice(frozenset(), loser, clause, named=True))
    return out


def _title_action(text: str) -> list[_Choice]:
    """A record's title that names an action on something ("Merge API PostgreSQL instance
    into main PostgreSQL instance", "Change in architecture to Asset Master")."""
    if not TITLE_NUMBER.match(text):
        return []
    m = ACTION_TITLE.match(text)
    if m is None:
        return []
    rest = m.group("rest")
    changed = m.group("verb").lower() in ("change", "switch", "migrate")
    loser = content_words(rest) if changed else first_words(rest)
    title = text.split("\n", 1)[0]
    return [_Choice(frozenset(), loser, title, named=True)] if loser else []


def _field_values(text: str) -> list[Value]:
    """Typed fields and settings, one per line: their key is the field, their subject what
    the text is about (the field name alone says little)."""
    found = [m for m in FIELD_LINE.finditer(text) if m.group("k") not in COMMON_KEYS]
    if not found:
        return []
    about = content_words(text[:SHORT_CHARS])
    out = []
    for m in found:
        k, v = m.group("k"), " ".join(m.group("v").split())
        context = about - content_words(f"{k} {v}")
        out.append(Value(f"field {k}", v.lower(), context, m.group(0).strip(), loose=True))
    return out


def _closed_lists(clause: str) -> list[_Closed]:
    """The closed lists of a clause: "only" then three or more short items."""
    out = []
    for m in ONLY_LIST.finditer(clause):
        items = [i.strip(" '\"`‘’“”") for i in LIST_SPLIT.split(m.group("rest").strip())]
        if len(items) < 3 or any(not i or len(i.split()) > 3 for i in items[1:]):
            continue
        lead = items[0].split()  # "be resolved as a_wins": its last word is the first item
        names = [lead[-1], *(i.split()[0] for i in items[1:])]
        head = content_words(clause[: m.start()] + " " + " ".join(lead[:-1]))
        out.append(_Closed(head, frozenset(stem(n.lower()) for n in names), clause))
    return out


def _varied(a: Analysis) -> frozenset[str]:
    """Keys one text gives several values ("$99 for up to 100,000 searches, … for 1000
    searches"): a quantity it talks about, not a setting it states."""
    seen: dict[str, str] = {}
    out = set()
    for v in a.values:
        if seen.setdefault(v.key, v.value) != v.value:
            out.add(v.key)
    return frozenset(out)


def _purposes(a: Analysis) -> list[tuple[frozenset[str], frozenset[str], frozenset[str], str]]:
    """What serves which purpose: (subject words, tool words, purpose words, the clause)."""
    out = []
    for c in a.clauses:
        if c.negative:
            continue
        stated = CONDITION.sub(" ", c.text)  # "when using X as a library, …" states no choice
        for m in PURPOSE.finditer(stated):
            tool, purpose = content_words(m.group("o")), content_words(m.group("p"))
            if tool and len(purpose) >= 2 and not (tool & purpose):
                out.append((content_words(stated[: m.start()]), tool, purpose, c.text))
    return out


def _defaults(a: Analysis) -> list[tuple[frozenset[str], frozenset[str], str]]:
    """The default cases of a text: (what is not given, what happens then, the clause)."""
    out = []
    for c in a.clauses:
        m = UNGIVEN.search(c.text)
        if m is None:
            continue
        given = content_words(m.group("x"))
        then = content_words(c.text[: m.start()] + " " + c.text[m.end() :])
        if given and then & given and then - given:  # it says what stands for the missing one
            out.append((given, then - given, c.text))
    return out
