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
from pathlib import PurePosixPath

from predictive.excerpts import FENCED_CODE, MAX_WORDS, MIN_WORDS, FileTerms, sentences, worth
from predictive.mentions import FILE_TOKEN, SOURCE_SUFFIXES
from storage.sessions import Message
from storage.text import STOPWORDS, is_tool_output

_MARKUP = re.compile(r"</?[a-zA-Z][^>]*>")
_BOLD = r"\*\*(?=\S)[^*\n]{1,120}?(?<=\S)\*\*"
_STEP_TITLES = re.compile(rf"(?<!\S)(?:(?:{_BOLD}){{2,}}|{_BOLD}(?=[A-Z]))")
"""An assistant's step titles glued to each other or to what follows ("**Planning the
change****Reading the config**Yes."): the outline of its reasoning, not something said."""
_OPENER = r"^(?:(?:now|first|next|then|finally|ok(?:ay)?|great|perfect|good|alright)[,!.]?\s+)*"
_NARRATION = r"(?:let me|let'?s|let us|i'?ll|i will|i'?m going to|we'?ll)"
_NOISE = re.compile(
    _OPENER + r"(?:" + _NARRATION + r"|i need to (?:check|look|see)|"
    r"great|perfect|okay|ok|excellent)\b",
    re.I,
)
_REASON = re.compile(
    r"\b(?:because|since|so that|as we(?:'ve| have)?|to avoid|instead of)\b|"
    r"^the (?:issue|problem|bug|root cause|cause|fix) (?:is|was) (?:that )?",
    re.I,
)
"""A sentence that gives a reason or states a diagnosis is said, even when it ends in a colon
("The issue is that every `self.name` should be `self.engine_code`:")."""
_LOOKING = re.compile(
    _OPENER + _NARRATION + r"\s+(?:(?:also|now|first|quickly|just)\s+)*"
    r"(?:check|look|see|examine|inspect|explore|search|find|read|open|view|review|run|verify|"
    r"investigate|analy[sz]e|understand|take a look|have a look|dig)\b",
    re.I,
)
"""A narration of looking at something ("Let's check the CLI file since…"): the step, not what
was found or decided, even when it gives a reason."""
_TALK = frozenset(
    "see seen understand found find issue problem now look looks like seems seem just also "
    "here okay great perfect good right actually really something everything thing things "
    "what's it's that's i'm we're i've we've there's better".split()
)
"""Words of an assistant's exclamation, not of its finding ("Now I understand the issue!")."""
_WORDS = re.compile(r"[A-Za-z_][\w'.-]*")
MIN_CONTENT_WORDS = 3
"""An assistant's sentence with fewer words of substance says nothing yet."""


def _says_something(sentence: str) -> bool:
    content = 0
    for w in _WORDS.findall(sentence):
        low = w.lower()
        if len(low) > 2 and low not in STOPWORDS and low not in _TALK:
            content += 1
            if content == MIN_CONTENT_WORDS:
                return True
    return False


_PASTED = re.compile(
    r"\b\d{1,2}:\d{2}:\d{2}\b|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b[:\s]|\"\w+\":\s|\\u[0-9a-f]{4}|"
    r"https?://|^\s*[\[{]|^\s*\$\s|^\s*>>>|\^{3,}|Traceback|\bFile \"|\bline \d+\b|"
    r"\bfrom\s+[\w.]+\s+import\b|\b(?:Args|Returns|Raises|Parameters|Example):|'\w+':\s|"
    r"\S{40,}|"  # a token no one writes: an encoded blob, a long URL or path
    r"(?:^|\s)--?[A-Za-z][\w-]*\b.*\s--?[A-Za-z][\w-]*\b|"  # a command line with options
    r"^\s*(?:python3?|pip|uv|uvx|npm|npx|git|cd|ls|cat|curl|docker|make|pytest)\s|"
    r"[\u2500-\u257f\u2800-\u28ff\u274c\u2705]|"  # a terminal's boxes, spinners and status marks
    r"\bSYNOPSIS\b|\bPOSITIONAL ARGUMENTS\b|^\s*usage:\s|"  # a command's help
    r"\bNAME\b.*\b(?:DESCRIPTION|COMMANDS|GROUPS|FLAGS)\b|"
    r"\[type=\w+"  # a validation error's dump
)
REPEATED_WORDS = 6
"""A sentence in which the same run of this many words comes twice is pasted output (a log,
the same error for every item), not something said."""
_CODEISH = re.compile(
    r"^\s*(?:[-*+]\s*\[[ xX!]?\]|#|from\s+\S+\s+import|import\s|def\s|class\s|return\b|"
    r"print\(|await\s|async\s|\w+\s*=\s*\S)|\s[-+]\s*$|\)\s*->|;\s*$"
)
PROSE_SHARE = 0.85
"""Prose is at least this share letters, digits and spaces (pasted JSON or code is not)."""
WHOLE_USER_WORDS = 120
"""A user's turn of at most this many words is kept whole when it is tied to the file."""
EXPLAINS = 0.6
"""What an explaining sentence is worth at least (see :func:`predictive.excerpts.worth`)."""
UNNAMED_PENALTY = 0.2
"""A finding that does not name the file counts this much less."""
SAME_SAID = 0.6
"""Two things said sharing this share of their words say the same (one is shown)."""
_REPORTED = re.compile(
    r"^\W*(?:removed|updated|added|fixed|created|changed|replaced|moved|renamed|simplified|"
    r"standardi[sz]ed|refactored|made)\b",
    re.I,
)
"""A change the assistant reports having made (its closing summary): worth showing in a
conversation tied to the file even when it does not name it."""
USER_BONUS = 0.5
"""What the user asked or decided counts more than what the assistant reasoned."""
ABOUT_REQUEST = 0.5
"""A short request of the user in a conversation about the file counts this much more."""


@dataclass(frozen=True)
class Said:
    """One thing said in a conversation that matters for the file."""

    idx: int
    role: str
    text: str
    score: float


def _clean(text: str) -> str:
    return _STEP_TITLES.sub(" ", _MARKUP.sub(" ", FENCED_CODE.sub(" ", text)))


def _plain(sentence: str) -> bool:
    """Prose, not tool output, pasted logs or data, markup, or a narration of the next step
    ("Let me check…", "Now I'll update…", a sentence announcing what follows with a colon)."""
    s = sentence.strip()
    letters = sum(ch.isalnum() or ch.isspace() or ch == "_" for ch in s)
    return (
        bool(s)
        and letters >= PROSE_SHARE * len(s)
        and not is_tool_output(s)
        and not _PASTED.search(s)
        and not ((_NOISE.match(s) or s.endswith(":")) and not _REASON.search(s))
        and not _LOOKING.match(s)
        and not _CODEISH.search(s)
        and "<" not in s[:2]
        and not _repeats(s)
    )


_FILE_SUFFIXES = SOURCE_SUFFIXES | frozenset(
    ".md .mdc .rst .txt .ipynb .json .toml .yaml .yml .cfg .ini .env .lock .sql .css .scss "
    ".html".split()
)


def _elsewhere(sentence: str) -> bool:
    """Whether ``sentence`` names a file (``CHANGELOG.md``, ``docs/fix.md``): when nothing in
    it ties it to the open file, it is about that other file."""
    return any(
        PurePosixPath(t).suffix.lower() in _FILE_SUFFIXES for t in FILE_TOKEN.findall(sentence)
    )


def _repeats(sentence: str) -> bool:
    """Whether a run of :data:`REPEATED_WORDS` words comes twice in ``sentence``."""
    words = re.findall(r"\w+", sentence.lower())
    seen: set[tuple[str, ...]] = set()
    for i in range(len(words) - REPEATED_WORDS + 1):
        run = tuple(words[i : i + REPEATED_WORDS])
        if run in seen:
            return True
        seen.add(run)
    return False


_INDENTED = re.compile(r"^(?:\t| {4,})(?![-*+] |\d+[.)] )")
"""A line indented like code (four spaces or a tab, not a nested list item): pasted."""


def _own_words(text: str) -> str:
    """A user's turn without the lines they pasted (output, logs, data, code, quoted
    answers)."""
    return "\n".join(
        line
        for line in text.splitlines()
        if not is_tool_output(line) and not _PASTED.search(line) and not _INDENTED.match(line)
    )


def what_was_said(
    messages: Sequence[Message],
    terms: FileTerms,
    *,
    until: float | None = None,
    limit: int = 6,
    about: bool = False,
) -> list[Said]:
    """The ``limit`` things said in ``messages`` (before ``until`` when given) most worth
    reading before editing the file, in the order they were said. ``about``: the whole
    conversation is about the file (its title names it, or it names it again and again), so
    a short request of the user counts even when it does not name the file."""
    found: list[Said] = []
    for msg in messages:
        if until is not None and msg.at is not None and msg.at > until:
            break
        text = _clean(msg.text)
        if msg.role == "user":
            own = _own_words(text)
            flat = " ".join(own.split())
            n = len(flat.split())
            tie = terms.strength(flat)
            if MIN_WORDS <= n <= WHOLE_USER_WORDS and (tie > 0 or about) and _plain(flat):
                # in a conversation about the file, what the user asked for is the decision
                bonus = USER_BONUS + (ABOUT_REQUEST if about else 0.0)
                best = max((worth(x, terms) for x in sentences(own)), default=0.0)
                found.append(Said(msg.idx, "user", flat, bonus + best))
                continue
            for s in sentences(own):
                tie, score = terms.strength(s), worth(s, terms)
                if _plain(s) and (tie >= 0.8 or (about and (tie > 0 or score >= EXPLAINS))):
                    found.append(Said(msg.idx, "user", s, USER_BONUS + score))
        elif msg.role == "assistant":
            for s in sentences(text):
                if not _plain(s) or not MIN_WORDS <= len(s.split()) <= MAX_WORDS:
                    continue
                if s.rstrip().endswith("?") or not _says_something(s):
                    continue  # asking (itself or the user), or "Now I see the issue!"
                tie = terms.strength(s)
                score = worth(s, terms)
                if tie >= 0.8 or (tie > 0 and score >= 0.9):
                    found.append(Said(msg.idx, "assistant", s, score))
                elif (
                    (about or _REPORTED.match(s))
                    and score >= EXPLAINS
                    and (tie or not _elsewhere(s))
                ):
                    # in a conversation about the file, a finding need not name it (one that
                    # names another file is about that one: "Updated `CHANGELOG.md`…")
                    found.append(Said(msg.idx, "assistant", s, score - UNNAMED_PENALTY))
    kept: list[frozenset[str]] = []
    unique: list[Said] = []
    for said in sorted(found, key=lambda x: (-x.score, x.idx)):
        words = frozenset(re.findall(r"\w+", said.text.lower()))
        if any(len(words & k) >= SAME_SAID * len(words | k) for k in kept):
            continue  # the same thing said again in other words
        kept.append(words)
        unique.append(said)
        if len(unique) == limit:
            break
    return sorted(unique, key=lambda x: x.idx)
