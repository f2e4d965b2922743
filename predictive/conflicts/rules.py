"""The rules that compare two statements (:func:`detect`): local, deterministic, no LLM. Each
answers a :class:`Finding` with a type and a reason quoting both sides. The types:

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
prose discusses options and earlier records. A clause of more words than
:data:`~predictive.conflicts.statement.MAX_CLAUSE_WORDS` (a file tree) is no statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from predictive.conflicts.markers import AGAINST, QUOTED, RECORD_WORDS, SLOT_BEFORE
from predictive.conflicts.statement import (
    MAX_TEXT,
    SHORT_CHARS,
    Analysis,
    Value,
    analyse,
    decision_part,
)
from predictive.conflicts.wording import PREPOSITIONS, STOP, clip, content_words, same_subject, stem
from storage.models import Kind, Memory
from storage.text import STOPWORDS

OVERLAP = 0.6
"""Share of the shorter clause's content words the other must hold to be about the same."""
CHANGE_OVERLAP = 0.5
"""The same, when one side names what it stopped or chose against (a strong sign already)."""


TYPES = ("superseded", "amended", "value", "preference", "changed", "polarity")


@dataclass(frozen=True)
class Finding:
    """What the local rules found in two texts (``first_newer``: the first text is the later
    statement)."""

    type: str
    reason: str
    confidence: float
    partial: bool = False
    first_newer: bool | None = None


def _number(m: Memory, a: Analysis) -> int | None:
    n = m.metadata.get("number")
    return n if isinstance(n, int) and not isinstance(n, bool) else a.number


def _record_folder(m: Memory) -> str | None:
    """The folder of a decision record read from a file (None for any other memory)."""
    if m.source != "adr" or not m.source_id:
        return None
    return m.source_id.rsplit("/", 1)[0] if "/" in m.source_id else ""


_HEAD_PREFIX = re.compile(r"^(?:Decision|ADR\s*\d*)\s*:\s*", re.I)


def _record_name(m: Memory, a: Analysis) -> str:
    """How a reason names a record: "record 4"; one without a number by its title, else its
    file, else its first line ("record “Use Kafka for events”")."""
    n = _number(m, a)
    if n is not None:
        return f"record {n}"
    title = next((t.title for t in m.artifacts if t.type == "adr" and t.title), None)
    if title is None and m.source == "adr" and m.source_id:
        return f"record {m.source_id}"
    first = title or _HEAD_PREFIX.sub("", m.text.strip().split("\n", 1)[0])
    return f"record “{clip(first, 80)}”"


def _ref_finding(x: Memory, ax: Analysis, y: Memory, ay: Analysis) -> Finding | None:
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
                if len((content_words(r.about) & content_words(other.text)) - RECORD_WORDS) < 2:
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


def _counts_setting(vx: Value, vy: Value) -> bool:
    """A named setting and a count of what it counts, about the same named thing:
    ``top_sessions=3`` / "defaults to 5 sessions" (both name ``session_first``)."""
    if not (
        (vx.tail and vy.counted and vx.tail == vy.key)
        or (vy.tail and vx.counted and vy.tail == vx.key)
    ):
        return False
    shared = vx.context & vy.context
    return len(shared) >= 2 or any("_" in w or "." in w for w in shared)


def _value_finding(ax: Analysis, ay: Analysis) -> Finding | None:
    varied = ax.varied | ay.varied
    for vx in ax.values:
        for vy in ay.values:
            if vx.value == vy.value or vx.key in varied or vy.key in varied:
                continue
            if vx.key != vy.key:
                if _counts_setting(vx, vy):
                    return Finding(
                        "value",
                        f"{vx.key}: {vx.value} vs {vy.key}: {vy.value} — “{clip(vx.text)}” / "
                        f"“{clip(vy.text)}”",
                        0.75,
                    )
                continue
            if vx.loose:
                # a field typed anew beside a note naming its old type: "url: str  # … HttpUrl"
                renamed = vx.key.startswith("field ") and (
                    stem(vx.value) in vy.context or stem(vy.value) in vx.context
                )
                if not renamed and same_subject(vx.context, vy.context) < OVERLAP:
                    continue
                return Finding(
                    "value",
                    f"{vx.key}: {vx.value} vs {vy.value} — “{clip(vx.text)}” / “{clip(vy.text)}”",
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
                f"{vx.key}: {vx.value} vs {vy.value} — “{clip(vx.text)}” / “{clip(vy.text)}”",
                0.85,
            )
    return None


def _choice_finding(ax: Analysis, ay: Analysis) -> Finding | None:
    for cx in ax.choices:
        for cy in ay.choices:
            if cx.winner & cy.loser and cx.loser & cy.winner:
                return Finding(
                    "preference",
                    f"opposite choices — “{clip(cx.text)}” / “{clip(cy.text)}”",
                    0.85,
                )
    return None


def _chose_against(text: str, loser: frozenset[str]) -> bool:
    """Whether ``text`` itself chooses something over one of ``loser``'s words ("beat
    keyword-only, vector-only and RRF")."""
    return any(content_words(text[m.end() :]) & loser for m in AGAINST.finditer(text))


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
    x: Memory, ax: Analysis, y: Memory, ay: Analysis, *, titled: bool = False
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
                elif same_subject(said_words, clause.words, need=need) < CHANGE_OVERLAP:
                    if not (short_older and choice.winner):
                        continue
                    if other is None:
                        other = content_words(older.text)
                    if same_subject(said_words, other, need=need) < CHANGE_OVERLAP:
                        continue
                if choice.says_not and not (content_words(said) - loser) & clause.words:
                    continue  # "ingest knowledge, not noise": a stance about something else
                if choice.winner and _chose_against(clause.text, loser):
                    continue  # the earlier one chose against it too: the same direction
                if _reporter_is_newer(newer, older):
                    reason = f"later: “{clip(said)}” — earlier: “{clip(clause.text)}”"
                    return Finding("changed", reason, 0.75, first_newer=first_newer)
                # the statement was written after the change was reported: it is the later
                reason = f"later: “{clip(clause.text)}” — earlier: “{clip(said)}”"
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
for _a, _b in (*_ANTONYMS, *((stem(x), stem(y)) for x, y in _OPPOSITE_WORDS)):
    _OPPOSITE[_a] = _OPPOSITE.get(_a, frozenset()) | {_b}
    _OPPOSITE[_b] = _OPPOSITE.get(_b, frozenset()) | {_a}


def _antonym_finding(ax: Analysis, ay: Analysis) -> Finding | None:
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
            if same_subject(rest_x, rest_y) < CHANGE_OVERLAP and len(rest_x & rest_y) < 3:
                continue
            return Finding(
                "polarity",
                f"{hit[0]} against {hit[1]} — “{clip(cx.text)}” / “{clip(cy.text)}”",
                0.7,
            )
    return None


def _polarity_finding(ax: Analysis, ay: Analysis) -> Finding | None:
    for an, ao in ((ax, ay), (ay, ax)):
        for choice in an.choices:
            said = content_words(choice.text)
            for clause in ao.clauses:
                if clause.negative or not (choice.loser & clause.words):
                    continue
                if same_subject(said, clause.words) < CHANGE_OVERLAP:
                    continue
                if _chose_against(clause.text, choice.loser):
                    continue  # both choose against it
                return Finding(
                    "polarity",
                    f"one says not — “{clip(choice.text)}” — the other says so — "
                    f"“{clip(clause.text)}”",
                    0.7,
                )
    for cx in ax.clauses:
        for cy in ay.clauses:
            if cx.negative == cy.negative:
                continue
            if same_subject(cx.words, cy.words) < OVERLAP:
                continue
            neg, pos = (cx, cy) if cx.negative else (cy, cx)
            # "(no API key required)" is not against "a cached key": two of its words, or its one
            if neg.target and len(neg.target & pos.words) < min(2, len(neg.target)):
                continue  # "avoid blocking calls in async methods" says nothing against async
            return Finding(
                "polarity",
                f"one says not — “{clip(neg.text)}” — the other says so — “{clip(pos.text)}”",
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
        if word in SLOT_BEFORE:
            return True
        if word not in STOPWORDS:
            return False
    return False


_NUMERIC = re.compile(r"^[$€£]?[\d.,:/%+-]+[a-z]{0,2}$")


def _named(tokens: tuple[str, ...]) -> frozenset[str]:
    """The content words of a slot that are not numbers ("$8.00", "30s")."""
    return frozenset(w for w in content_words(" ".join(tokens)) if not _NUMERIC.match(w))


def _swap_finding(ax: Analysis, ay: Analysis) -> Finding | None:
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
            if after and after not in STOP and after not in PREPOSITIONS:
                continue  # "the News Search API" / "the Video Search API": a modifier, two things
            sx = _named(cx.tokens[p : p + lx])
            sy = _named(cy.tokens[p : len(cy.tokens) - q])
            if not sx or not sy or sx & sy:
                continue  # numbers are the value rule's: it reads what they count
            return Finding(
                "value",
                f"{'/'.join(sorted(sx))} against {'/'.join(sorted(sy))} — “{clip(cx.text)}” / "
                f"“{clip(cy.text)}”",
                0.7,
            )
    return None


def _purpose_finding(ax: Analysis, ay: Analysis) -> Finding | None:
    """The same purpose served by another tool, for the same subject ("uses X for package
    management" / "uses Y for package management")."""
    for subject_x, tool_x, purpose_x, text_x in ax.purposes:
        for subject_y, tool_y, purpose_y, text_y in ay.purposes:
            if tool_x & tool_y or same_subject(purpose_x, purpose_y) < OVERLAP:
                continue
            if subject_x and subject_y and not (subject_x & subject_y):
                continue  # two subjects, each with its own tool
            return Finding(
                "value",
                f"{'/'.join(sorted(tool_x))} against {'/'.join(sorted(tool_y))} for the same — "
                f"“{clip(text_x)}” / “{clip(text_y)}”",
                0.7,
            )
    return None


def _default_finding(ax: Analysis, ay: Analysis) -> Finding | None:
    """Two defaults for the same thing left out: "when no engines are specified, search every
    engine" / "… the 'best' engines when no engines are specified"."""
    for given_x, then_x, text_x in ax.defaults:
        for given_y, then_y, text_y in ay.defaults:
            if given_x == given_y and not (then_x & then_y):
                return Finding(
                    "value",
                    f"another default — “{clip(text_x)}” / “{clip(text_y)}”",
                    0.7,
                )
    return None


def _closed_finding(ax: Analysis, ay: Analysis) -> Finding | None:
    """One names a closed list ("can only be resolved as a, b or c"), the other a new member
    of it, quoted, about the same thing: the list grew (the side with the new one is newer)."""
    for first_newer, (an, ao) in ((False, (ax, ay)), (True, (ay, ax))):
        for closed in an.closed:
            for clause in ao.clauses:
                if len(closed.head & clause.words) < 2:
                    continue
                for m in QUOTED.finditer(clause.text):
                    new = stem(m.group("q").lower())
                    if new in closed.items or new in closed.head:
                        continue
                    return Finding(
                        "changed",
                        f"only {', '.join(sorted(closed.items))} — “{clip(closed.text)}” — "
                        f"now also {m.group('q')}: “{clip(clause.text)}”",
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
