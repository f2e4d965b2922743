"""Deterministic compression: the summary, compressed and index levels of a memory, no model.

``Compressor`` is the seam an LLM-backed implementation can fill later; ``fill_levels`` and
``backfill_levels`` write only the levels a memory lacks.

Short forms are faithful (:mod:`predictive.faithful`): the index label is the memory's title
or first line, or a contiguous start of it cut at a word boundary with an ellipsis; the
compressed line is a structured form ("auth: JWT→sessions (size)", "error → fix") only when
every content word of it occurs in the text and it keeps the text's negations, else a
contiguous phrase of the text. No word is dropped from inside a phrase.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol, runtime_checkable

from predictive.faithful import drops_negation, unsupported, words
from predictive.tokens import count_tokens, truncate_to_tokens
from storage import AnchorType, Kind, Memory, MemoryStore
from storage.levels import LevelName, LevelTexts

SUMMARY_TOKENS = 60
COMPRESSED_TOKENS = 25
INDEX_TOKENS = 10
LABEL_WORDS = 8  # an index label is a few words
TINY_TOKENS = 12  # a text this short may be its own summary
LEVEL_FIELDS: tuple[LevelName, ...] = ("summary", "compressed", "index_label")
_PARSE_CHARS = 20_000  # only the head of a huge text is read


@runtime_checkable
class Compressor(Protocol):
    """Produces the three shorter levels of a memory; an LLM may implement it later."""

    def summary(self, memory: Memory) -> str: ...

    def compressed(self, memory: Memory) -> str: ...

    def index_label(self, memory: Memory) -> str: ...


# ---- vocabulary ----------------------------------------------------------------------------

_STOP = frozenset(
    """a an the is are was were be been being am of to in on at by from that this these those it
    its it's we we'll we've our ours us you your they them their i my me he she his her which who
    whom whose will would can could shall has have had having do does did done there here then
    than so such as into onto about also just very really basically actually currently simply
    quite some any all each every both either neither one ones thing things stuff lot lots much
    many more most again ever still yet already now that's what when while where how why if
    because since though although however therefore thus hence let's let be being get got gets
    and or but nor with for well""".split()
)
_FILLER = frozenset(
    "strong strongly existing good better great nice important significant overall main "
    "primary general generally various several certain specific particular new".split()
)
_GENERIC_STEMS = frozenset({"__init__", "index", "main", "mod", "lib", "utils", "util", "init"})
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "mr.", "dr.", "no.", "fig.")

# ---- patterns ------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(.*\S)")
_LABEL = re.compile(
    r"^(?P<label>problem|error|issue|symptom|bug|root cause|cause|fix|fixed|solution|"
    r"resolution|workaround|decision|rule|why|reason|rationale)\s*[:：]\s*(?P<value>.+)$",
    re.I,
)
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |function |const |let |var |return\b|"
    r"public |private |fn |func |package |#include|@\w+|[}\])];?\s*$)|[{;]\s*$|^\s*\w+\s*=\s*\S"
)
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[^\sa-z])|(?<=[。！？])\s*")
_RULE_WORDS = re.compile(
    r"\b(?:always|never|must|should|shall|prefer|avoid|don't|do not|mustn't|shouldn't|"
    r"required?|forbidden)\b",
    re.I,
)
_STOPWORDS_NP = (
    r"over|instead|rather|because|since|as|for|due|to|and|with|from|in|on|so|but|which|that|"
    r"vs|versus|when|while|after|before|if|by|of|is|are|was|were|will|the|a|an|it|we"
)
_NP = (
    rf"(?:(?:the|a|an|our)\s+)?[\w.,+#/@<>-]+(?:\s+(?!(?:{_STOPWORDS_NP})\b)[\w.,+#/@<>-]+){{0,2}}"
)
_ALT = r"(?:over|instead\s+of|rather\s+than|vs\.?|versus|in\s+favou?r\s+of)"
_DECISIONS = (
    re.compile(  # switched / moved / migrated from Y to X
        rf"\b(?:switch|mov|migrat|chang|went)\w*\s+(?P<what>(?:[\w-]+\s+){{0,3}}?)from\s+(?P<alt>{_NP})"
        rf"\s+to\s+(?P<choice>{_NP})",
        re.I,
    ),
    re.compile(rf"\breplac\w*\s+(?P<alt>{_NP})\s+(?:with|by)\s+(?P<choice>{_NP})", re.I),
    re.compile(  # switched to X (from Y)
        rf"\b(?:switch|mov|migrat)\w*\s+to\s+(?P<choice>{_NP})(?:\s+from\s+(?P<alt>{_NP}))?",
        re.I,
    ),
    re.compile(
        r"\b(?:decided|decide|chose|choose|chosen|picked|selected|opted|agreed|settled)\s+"
        r"(?:to\s+(?:use|adopt|go\s+with|keep(?:\s+using)?|standardi[sz]e\s+on|rely\s+on)\s+|"
        rf"on\s+|for\s+|with\s+)?(?P<choice>{_NP})(?:\s+{_ALT}\s+(?P<alt>{_NP}))?",
        re.I,
    ),
    re.compile(
        rf"\b(?:use[sd]?|using|adopt\w*|prefer(?:s|red)?|go\s+with)\s+(?P<choice>{_NP})\s+{_ALT}\s+"
        rf"(?P<alt>{_NP})",
        re.I,
    ),
    re.compile(rf"\bwe\s+(?:will|'ll|shall)\s+(?:use|adopt)\s+(?P<choice>{_NP})", re.I),
    re.compile(rf"^(?:we\s+)?(?:use|adopt)\s+(?P<choice>{_NP})", re.I),
)
_SWITCHES = frozenset({0, 1, 2})  # patterns whose alt→choice reads as a change
_IMPERATIVE = len(_DECISIONS) - 1
_REASON = re.compile(
    r"\b(?:because(?:\s+of)?|since|due\s+to|given|as\s+(?:it|they)|so\s+that|"
    r"for\s+(?=its\b|their\b|better\b)|(?=to\s+(?:avoid|reduce|improve|keep|support|simplify|"
    r"get|make|allow|enable|speed)\b))\s*(?P<why>[^.;!?]+)",
    re.I,
)
_ROLE = re.compile(  # what the choice is for: "as the primary database", "for caching"
    r"\bas\s+(?:the|our|a|an)\s+(?P<as>[\w-]+(?:\s+[\w-]+)?)|"
    r"\bfor\s+(?:(?:the|our|a|an)\s+)?(?!(?:its|their|better|it|them|this|that|now|example|"
    r"instance|all|each|every|any|some|us|you)\b)(?P<for>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)|"
    r"\bin\s+(?P<in>(?-i:[A-Z])[\w+#.-]*[\w+#])",
    re.I,
)
_ERROR_SIG = re.compile(
    r"\b(?:[A-Z]\w*(?:Error|Exception|Warning|Fault)|ERR_[A-Z0-9_]+|E[A-Z]{4,}|"
    r"(?:TS|CS|E|W|C|PGRST)\d{3,5}|SIG[A-Z]{3,}|segfault|panic|deadlock|timeout|OOM)\b"
)
_FIX = re.compile(
    r"\b(?:fix(?:ed|es)?|solv(?:ed|es|e)|resolv(?:ed|es|e)|workaround|the\s+solution|"
    r"solution|cure)\b",
    re.I,
)
_FIX_BY = re.compile(
    r"\b(?:fix(?:ed)?|solv(?:ed|e)|resolv(?:ed|e)|workaround(?:\s+is)?|solution(?:\s+is)?)"
    r"(?:\s+(?:it|this|that|the\s+issue|the\s+problem|the\s+bug))?\s*(?:by|with|:|was|is|=)?\s*"
    r"(?P<how>[^.;!?]+)",
    re.I,
)
_MODAL = re.compile(
    r"^(?P<subj>.*?)\b(?P<modal>must\s+not|mustn't|should\s+not|shouldn't|do\s+not|don't|"
    r"never|must|should|always|have\s+to|need\s+to|prefer|avoid)\b(?P<pred>.*)$",
    re.I,
)
_INVERTED = re.compile(
    r"^\s*(?:should|must|shall|would|could|can|do|does|did|is|are|were|had|if|when|unless|"
    r"whether)\s+(?:it|we|you|they|he|she|this|that|there|the|a|an|one|i)\b",
    re.I,
)

# ---- text helpers --------------------------------------------------------------------------


def _oneline(text: str) -> str:
    """Whitespace collapsed to single spaces."""
    return " ".join(text.split())


def _inline(text: str) -> str:
    """Markdown inline markup reduced to its text, on one line."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])", r"\1", text)
    return _oneline(text)


def _sentences(paragraph: str) -> list[str]:
    """Sentences of a paragraph; common abbreviations do not end one."""
    out: list[str] = []
    for piece in _SENT_SPLIT.split(paragraph):
        piece = piece.strip()
        if not piece:
            continue
        if out and out[-1].lower().endswith(_ABBREVIATIONS):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _words(text: str) -> list[str]:
    """Content words of ``text``: stop words and filler dropped, punctuation trimmed."""
    out = []
    for raw in text.replace("→", " → ").split():
        w = raw.strip(".,;:!?\"'()[]{}*_`")
        low = w.lower()
        if not w or low in _STOP or low in _FILLER:
            continue
        if low.endswith("'s") and len(w) > 2:
            w = w[:-2]
        out.append(w)
    return out


def _tele(text: str, max_words: int) -> str:
    """A telegraphic form: the first content words (no word is replaced by another)."""
    return " ".join(_words(text)[:max_words])


def _np(text: str | None) -> str:
    """A captured noun phrase without articles or trailing punctuation."""
    if not text:
        return ""
    text = re.sub(r"^(?:the|a|an|our)\s+", "", text.strip(), flags=re.I)
    return text.rstrip(".,;:!?)")


def _topic_word(word: str) -> str:
    """A lower-case topic word, as the text writes it (never abbreviated: a short form uses
    only the text's words)."""
    return word.lower().strip(".,;:")


# ---- parsing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Input:
    """What compression reads from a memory (hashable, so results can be cached)."""

    kind: Kind
    text: str
    anchors: tuple[tuple[AnchorType, str], ...] = ()
    fact_key: str | None = None
    fact_value: str | None = None

    @classmethod
    def of(cls, memory: Memory) -> _Input:
        """The compression input of a stored memory."""
        anchors = tuple(sorted((AnchorType(a.type), a.value) for a in memory.anchors))
        return cls(Kind(memory.kind), memory.text, anchors, memory.fact_key, memory.fact_value)


@dataclass
class _Doc:
    """What the heuristics read from a memory's text."""

    title: str | None = None
    sentences: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    sections: dict[str, list[str]] = field(default_factory=dict)
    code: list[str] = field(default_factory=list)
    description: str | None = None

    @property
    def title_list(self) -> list[str]:
        """The title as a list of zero or one sentence."""
        return [self.title] if self.title else []


def _front_matter(lines: list[str], doc: _Doc) -> list[str]:
    """Drop a leading ``---`` block, keeping its ``description:``."""
    if not lines or lines[0].strip() != "---":
        return lines
    for i in range(1, min(len(lines), 60)):
        if lines[i].strip() == "---":
            for line in lines[1:i]:
                key, _, value = line.partition(":")
                if key.strip().lower() == "description" and value.strip():
                    doc.description = _inline(value.strip().strip("\"'"))
            return lines[i + 1 :]
    return lines


def _parse(text: str) -> _Doc:
    """Headings, prose sentences, rule lines, list items, labels and code of a text."""
    doc = _Doc()
    lines = _front_matter(text[:_PARSE_CHARS].replace("\r\n", "\n").split("\n"), doc)
    section = ""
    para: list[str] = []
    fence: str | None = None
    code_at = 0
    in_code = False

    def flush() -> None:
        if para:
            for s in _sentences(_inline(" ".join(para))):
                _label(s, doc)
                doc.sentences.append(s)
                doc.sections.setdefault(section, []).append(s)
                if _RULE_WORDS.search(s):
                    doc.rules.append(s)
            para.clear()

    for line in lines:
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1) == fence:
                fence = None
            elif line.strip() and len(doc.code) == code_at:
                doc.code.append(line.strip())
            continue
        if m:
            flush()
            fence, code_at = m.group(1), len(doc.code)
            continue
        stripped = line.strip().lstrip(">").strip()
        if not stripped or stripped.startswith("|") or set(stripped) <= set("-=*_ "):
            flush()
            in_code = False
            continue
        if _CODE_LINE.search(line) and not _ITEM.match(line) and not _HEADING.match(line):
            flush()
            if not in_code:
                doc.code.append(stripped)
            in_code = True
            continue
        if in_code and line.startswith(("    ", "\t")):
            continue
        in_code = False
        if h := _HEADING.match(line):
            flush()
            title = _inline(h.group(1))
            doc.title = doc.title or title
            section = title.lower()
            continue
        if para and _LABEL.match(_inline(stripped)):
            flush()
        if it := _ITEM.match(line):
            flush()
            item = _inline(it.group(1))
            doc.items.append(item)
            doc.rules.append(item)
            doc.sections.setdefault(section, []).append(item)
            _label(item, doc)
            continue
        para.append(stripped)
        if _LABEL.match(_inline(stripped)):  # "Fix: …" lines stand alone
            flush()
    flush()
    return doc


def _first_label(doc: _Doc, names: tuple[str, ...]) -> str:
    """The value of the first of ``names`` that labels a line, or ``""``."""
    return next((doc.labels[k] for k in names if k in doc.labels), "")


def _label(line: str, doc: _Doc) -> None:
    """Record ``Problem: …`` / ``Fix: …`` style labelled lines."""
    if m := _LABEL.match(line):
        doc.labels.setdefault(m.group("label").lower(), m.group("value").strip())


# ---- the pieces each level is built from ---------------------------------------------------


@dataclass(frozen=True)
class _Decision:
    """A detected choice: ``topic: choice over alt (reasons)``."""

    topic: str
    choice: str
    alt: str
    reasons: tuple[str, ...]
    switch: bool


def _anchor_topic(memory: _Input) -> str:
    """A topic word from the memory's tags, modules or files, or ``""``."""
    by_type: dict[AnchorType, list[str]] = {}
    for t, v in memory.anchors:
        by_type.setdefault(t, []).append(v)
    for t in (AnchorType.TAG, AnchorType.MODULE, AnchorType.FILE):
        for value in sorted(by_type.get(t, ())):
            parts = [p for p in re.split(r"[/\\.]", value) if p]
            if t is AnchorType.FILE and len(parts) > 1:
                parts = parts[:-1]  # drop the extension
            while len(parts) > 1 and parts[-1].lower() in _GENERIC_STEMS:
                parts.pop()
            if parts:
                return _topic_word(parts[-1])
    return ""


def _title_topic(doc: _Doc) -> str:
    """One or two topic words from the title, without ADR numbers."""
    if not doc.title:
        return ""
    title = re.sub(r"^(?:adr|rfc)[\s_-]*\d+\s*[:.-]?\s*", "", doc.title, flags=re.I)
    words = [w for w in _words(title) if not w.isdigit()]
    return " ".join(_topic_word(w) for w in words[:2])


def _decision(memory: _Input, doc: _Doc) -> _Decision | None:
    """The choice a text states, if a decision pattern matches."""
    labelled = [doc.labels["decision"]] if "decision" in doc.labels else []
    pool = [*labelled, *doc.sections.get("decision", []), *doc.title_list, *doc.sentences]
    for sentence in pool[:40]:
        for i, pattern in enumerate(_DECISIONS):
            if i == _IMPERATIVE and memory.kind is not Kind.DECISION:
                continue  # "Use X." is a decision only in a decision; elsewhere it is a rule
            m = pattern.search(sentence)
            if not m or not _np(m.group("choice")):
                continue
            choice, alt = _np(m.group("choice")), _np(m.groupdict().get("alt"))
            rest = sentence[m.end() :]
            why_here = _REASON.search(rest)
            why = why_here or _REASON.search(sentence)
            before_why = rest[: why_here.start()] if why_here else rest
            role = _ROLE.search(re.split(r"[;:]", before_why, maxsplit=1)[0][:80])
            named = _words(next((g for g in role.groups() if g), "") if role else "")[:2]
            named = named or _words(m.groupdict().get("what") or "")[-1:]
            topic = " ".join(dict.fromkeys(_topic_word(w) for w in named))
            topic = topic or _anchor_topic(memory) or _title_topic(doc)
            because = why.group("why") if why else _first_label(doc, ("why", "reason", "rationale"))
            reasons = []
            for part in re.split(r",|;|\band\b|\bplus\b|\bas well as\b", because):
                if r := _tele(part, 4):
                    reasons.append(r)
            return _Decision(topic, choice, alt, tuple(reasons[:3]), i in _SWITCHES)
    return None


def _solution(doc: _Doc) -> tuple[str, str, str] | None:
    """``(problem, cause, fix)`` of a problem → fix text, if a fix is stated."""
    fix = _first_label(doc, ("fix", "fixed", "solution", "resolution", "workaround"))
    fix_sentence = ""
    if not fix:
        pool = doc.sections.get("fix", []) + doc.sections.get("solution", []) + doc.sentences
        fix_sentence = next((s for s in pool if _FIX.search(s)), "")
        if not fix_sentence:
            return None
        fix = fix_sentence
    problem = _first_label(doc, ("problem", "error", "issue", "symptom", "bug"))
    cause = _first_label(doc, ("root cause", "cause"))
    if not problem:
        skip = {fix_sentence, fix}
        problem = next((s for s in doc.sentences if s not in skip and not _LABEL.match(s)), "")
    if not problem and fix_sentence:  # "X broke; fixed by Y" in one sentence
        head = re.split(
            r"[;,]?\s*(?:and\s+)?\b(?:fixed|solved|resolved)\b", fix_sentence, maxsplit=1
        )
        problem = head[0] if head[0] != fix_sentence else ""
        fix = fix_sentence[len(head[0]) :].lstrip(" ;,") if problem else fix
    return problem or doc.title or "", cause if cause not in problem else "", fix


def _fix_clause(fix: str) -> str:
    """The "how" of a fix sentence: ``Fixed by normalising to UTC`` → ``normalising to UTC``."""
    m = _FIX_BY.search(fix)
    return m.group("how") if m and m.group("how").strip() else fix


def _rule_line(rule: str) -> str:
    """``must X`` / ``never X`` / ``prefer X`` form of one rule (its own modal word), with its
    subject first."""
    if _INVERTED.match(rule):  # "Should it leak, …": a condition, not a rule
        return _cut(rule, 12)
    m = _MODAL.match(rule)
    if not m:
        return _tele(rule, 8)
    polarity = " ".join(m.group("modal").lower().split())  # the text's own modal
    pred = _tele(m.group("pred"), 7)
    subj = _tele(m.group("subj"), 3)
    core = f"{polarity} {pred}".strip()
    return f"{subj}: {core}" if subj else core


# ---- building the levels -------------------------------------------------------------------


def _join_within(parts: Iterable[str], limit: int, sep: str = " ") -> str:
    """Parts joined while they fit ``limit`` tokens; the first is truncated when it alone won't."""
    out = ""
    for part in parts:
        part = part.strip()
        if not part:
            continue
        joined = f"{out}{sep}{part}" if out else part
        if count_tokens(joined) <= limit:
            out = joined
        elif not out:
            return truncate_to_tokens(part, limit)
        else:
            break
    return out


def _with_title(title: str | None, body: str) -> str:
    """``Title: body`` unless the body already starts with the title."""
    if not title or body.lower().startswith(title.lower()):
        return body or (title or "")
    if not body:
        return title
    return f"{title} — {body}" if ":" in title else f"{title}: {body}"


_LIGHT_FILLER = re.compile(
    r"\s\b(?:very|really|just|basically|actually|currently|simply|quite|strongly|strong|"
    r"existing|overall|generally|of course|in order)\b",
    re.I,
)


def _shortenings(text: str) -> list[str]:
    """Ever shorter rewrites of a sentence: no final period, parentheticals, filler, clauses."""
    out = [_oneline(text).rstrip(".")]
    out.append(_oneline(re.sub(r"\s*\([^()]*\)", "", out[-1])))
    out.append(_oneline(_LIGHT_FILLER.sub("", out[-1])))
    short = out[-1]
    for sep in ("; ", " — ", " because ", ", which ", ", so ", ", "):
        i = short.rfind(sep)
        if i >= len(short) * 2 // 5:
            out.append(short[:i].rstrip(",;"))
            break
    return out


def _summary_text(memory: _Input, doc: _Doc) -> str:
    """The summary candidate: problem → fix, rules, or title plus lead sentences."""
    kind, title = memory.kind, doc.title
    budget = max(SUMMARY_TOKENS - count_tokens(title or ""), 20)
    if kind in (Kind.SOLUTION, Kind.EPISODE) and (pf := _solution(doc)):
        problem, cause, fix = pf
        left = problem.rstrip(".") + (f"; cause: {cause.rstrip('.')}" if cause else "")
        rest = doc.sentences[doc.sentences.index(fix) + 1 :] if fix in doc.sentences else []
        right = _join_within([fix, *rest[:1]], 28)
        return f"{_join_within([left], 30)} → {right}" if left.strip() else right
    rules = [r.rstrip(".;") for r in doc.rules]
    if kind in (Kind.CONVENTION, Kind.PREFERENCE) and rules:
        return _with_title(title, _join_within(rules, budget, "; "))
    lead = doc.sections.get("decision", []) if kind is Kind.DECISION else []
    lead = lead or ([doc.description] if doc.description else []) + doc.sentences
    if kind in (Kind.PATTERN, Kind.WORKFLOW) and rules:
        first = [lead[0].rstrip(".:;")] if lead and lead[0].rstrip(".") not in rules else []
        return _with_title(title, _join_within([*first, *rules], budget, "; "))
    if not lead and doc.items:
        return _with_title(title, _join_within(doc.items, budget, "; "))
    if not lead and doc.code:
        return _with_title(title, doc.code[0])
    return _with_title(title, _join_within(lead[:2], budget))


_EVENT_VERBS = frozenset(
    "debugged debugging fixed fixing investigated found added updated changed noticed saw "
    "tried discussed decided implemented refactored wrote reviewed".split()
)


def _lead_line(memory: _Input, doc: _Doc, max_words: int = 12) -> str:
    """The telegraphic lead: title or first sentence, prefixed by the anchor topic if new."""
    lead = (doc.title and [doc.title]) or doc.sentences[:1] or doc.items[:1]
    if not lead:
        return doc.code[0] if doc.code else _oneline(memory.text)
    line = _tele(lead[0], max_words)
    topic = _anchor_topic(memory)
    return f"{topic}: {line}" if topic and topic not in line.lower() else line


def _compressed_text(memory: _Input, doc: _Doc, cap: int) -> str:
    """The one-line candidate: ``topic: choice (why)``, ``error → fix``, ``always X`` …"""
    kind = memory.kind
    if memory.fact_key and memory.fact_value:
        return f"{memory.fact_key}: {_oneline(memory.fact_value)}"
    order = {
        Kind.DECISION: ("decision", "solution", "rule"),
        Kind.SOLUTION: ("solution", "decision", "rule"),
        Kind.EPISODE: ("solution", "decision"),
        Kind.CONVENTION: ("rule", "decision"),
        Kind.PREFERENCE: ("decision", "rule"),
        Kind.PATTERN: ("rule",),
        Kind.WORKFLOW: ("steps", "rule", "decision"),
    }.get(kind, ("decision",))
    for how in order:
        if how == "decision" and (d := _decision(memory, doc)):
            head = f"{d.alt}→{d.choice}" if d.switch and d.alt else d.choice
            if d.alt and not d.switch:
                head += f" over {d.alt}"
            why = f" ({', '.join(d.reasons)})" if d.reasons else ""
            return f"{d.topic}: {head}{why}" if d.topic else f"{head}{why}"
        if how == "solution" and (pf := _solution(doc)):
            problem, cause, fix = pf
            sig = _ERROR_SIG.search(f"{problem} {doc.title or ''}")
            left = sig.group(0) if sig else _tele(cause or problem, 6)
            return f"{left} → {_tele(_fix_clause(fix), 7)}"
        if how == "rule" and doc.rules:
            lines = [_rule_line(r) for r in doc.rules[:3]]
            topic = _title_topic(doc) or _anchor_topic(memory)
            if topic and ":" not in lines[0]:
                lines[0] = f"{topic}: {lines[0]}"
            return _join_within(lines, cap, "; ")
        if how == "steps" and len(doc.items) >= 2:
            steps = [" ".join(_words(i)[:2]) for i in doc.items[:7]]
            topic = _title_topic(doc) or _anchor_topic(memory) or "steps"
            return f"{topic}: " + "→".join(s for s in steps if s)
    return ""  # no structure: the caller takes a contiguous phrase of the text


def _decision_label(memory: _Input, doc: _Doc, cap: int, vocabulary: set[str]) -> str:
    """``db: PostgreSQL``, ``auth: JWT→sessions`` for a title-less decision, when every word
    of it is the text's; else ``""``."""
    d = _decision(memory, doc)
    if d is None:
        return ""
    choice = " ".join(d.choice.split()[:2])
    head = f"{d.alt.split()[0]}→{choice}" if d.switch and d.alt else choice
    label = _fit([f"{d.topic}: {head}" if d.topic else head], cap, truncate=False)
    return label if _faithful(label, memory, vocabulary) else ""


_ADR_PREFIX = re.compile(r"^(?:(?:adr|rfc|decision)[\s_-]*\d*\s*[:.-]\s*)", re.I)
_META_LINE = re.compile(r"^\s*(?:status|date|deciders|authors?|technical story)\s*:", re.I)
_MARKUP_LINE = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s*|[-*+•]\s+|\d{1,3}[.)]\s+)")


def _lead_and_rest(text: str) -> tuple[str, list[str]]:
    """The first line of a text with words in it (a title, a subject, a heading), without
    front matter, heading or list marks and inline markup; and the lines after it."""
    lines = _front_matter(text[:_PARSE_CHARS].replace("\r\n", "\n").split("\n"), _Doc())
    fence: str | None = None
    for n, line in enumerate(lines):
        if m := _FENCE.match(line):
            fence = None if fence == m.group(1) else fence or m.group(1)
            continue
        if fence is not None:
            continue
        stripped = _inline(_MARKUP_LINE.sub("", line))
        if words(stripped):
            return stripped, lines[n + 1 :]
    return _oneline(text), []


def _lead(text: str) -> str:
    return _lead_and_rest(text)[0]


def _cut(text: str, cap: int, max_words: int = 1000) -> str:
    """``text`` when it fits ``cap`` tokens and ``max_words``, else its first sentence, else
    its longest start that ends at a word boundary, with an ellipsis."""
    text = _oneline(text)

    def fits(t: str) -> bool:
        return count_tokens(t) <= cap and len(t.split()) <= max_words

    if fits(text):
        return text
    first = _sentences(text)[:1]
    if first and fits(first[0]):
        return first[0]
    out = ""
    for word in text.split():
        longer = f"{out} {word}" if out else word
        if not fits(longer.rstrip(",;:—-") + "…"):
            break
        out = longer
    out = out.rstrip(",;:—- ")
    return f"{out}…" if out else truncate_to_tokens(text, cap)


def _phrase(memory: _Input, cap: int, *, title_only: bool = False, doc: _Doc | None = None) -> str:
    """A contiguous phrase of the text: its lead line (an ADR's title without its number for
    a label), followed by the next sentence — a decision's first decision sentence — when
    both fit, cut to ``cap`` tokens."""
    lead, rest = _lead_and_rest(memory.text)
    if title_only:
        lead = (_ADR_PREFIX.sub("", lead) or lead).rstrip(" .:;,")
        label = _cut(lead, cap, LABEL_WORDS)
        return label if label.endswith("…") else label.rstrip(" .:;,") or label
    decided = []
    if doc is not None and memory.kind is Kind.DECISION:
        decided = [doc.labels["decision"]] if "decision" in doc.labels else []
        decided = _sentences(decided[0])[:1] if decided else doc.sections.get("decision", [])[:1]
    following = decided or _sentences(_inline(" ".join(_next_prose(rest))))[:1]
    if following and words(following[0]) and words(lead) and following[0] not in lead:
        if lead[-1:] in ".!?":
            joined = f"{lead} {following[0]}"
        else:
            joined = f"{lead.rstrip(':')} — {following[0]}"
        if count_tokens(joined) <= cap:
            return joined
    return _cut(lead, cap)


def _next_prose(lines: list[str]) -> list[str]:
    """The first paragraph or list item of ``lines`` (code, headings and blank lines before
    it skipped)."""
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        if m := _FENCE.match(line):
            if out:
                break
            fence = None if fence == m.group(1) else fence or m.group(1)
            continue
        if fence is not None:
            continue
        if _HEADING.match(line) or not line.strip() or _META_LINE.match(line):
            if out:
                break
            continue
        if out and _ITEM.match(line):
            break
        out.append(_MARKUP_LINE.sub("", line).strip())
        if _ITEM.match(line):
            break
    return out


def _titled(text: str) -> bool:
    """Whether a text opens with a title: a heading, or a short first line (a subject, an
    ADR's ``ADR 12: …``) with more text after it."""
    lines = [line for line in text[:_PARSE_CHARS].split("\n") if line.strip()]
    if not lines:
        return False
    lead = _lead(text)
    if _HEADING.match(lines[0]) or _ADR_PREFIX.match(lead):
        return True
    return len(lines) > 1 and len(words(lead)) <= 14 and not lead.endswith((".", "!", "?"))


def _faithful(candidate: str, memory: _Input, vocabulary: set[str]) -> bool:
    """Every content word of ``candidate`` is in the text, and it keeps the text's negations."""
    if not candidate.strip() or unsupported(candidate, "", vocabulary=vocabulary):
        return False
    return not drops_negation(candidate, memory.text[:_PARSE_CHARS])


def _fit(candidates: Iterable[str], cap: int, truncate: bool = True) -> str:
    """The first candidate, on one line, that fits ``cap`` tokens (truncated if allowed)."""
    for cand in candidates:
        line = _oneline(cand)
        if not line:
            continue
        if count_tokens(line) <= cap:
            return line
        if not truncate:
            continue
        cut = truncate_to_tokens(line, cap)
        if cut.strip(" …"):
            return cut
    return ""


@lru_cache(maxsize=32)
def _levels(memory: _Input, given: tuple[str | None, str | None]) -> tuple[str, str, str]:
    """All three levels of one memory's content, given the stored summary and compressed line.

    Cached, since each public method needs the shorter levels' caps from the longer ones.
    """
    doc = _parse(memory.text)
    full = count_tokens(memory.text)
    summary = given[0]
    if not summary:
        cand = _summary_text(memory, doc)
        if full <= TINY_TOKENS:
            tiny = (c for c in (cand, _oneline(memory.text)) if c and count_tokens(c) <= full)
            summary = next(tiny, memory.text)
        else:
            cap = min(SUMMARY_TOKENS, full - 1)
            summary = (
                _fit([cand, *_shortenings(cand)], cap, truncate=False)
                or _fit([cand, memory.text], cap)
                or memory.text
            )
    s_cap = min(COMPRESSED_TOKENS, count_tokens(summary))
    vocabulary = set(words(memory.text[:_PARSE_CHARS]))
    titled = _titled(memory.text)
    compressed = given[1]
    if not compressed and not titled:
        structured = _fit([_compressed_text(memory, doc, s_cap)], s_cap, truncate=False)
        compressed = structured if _faithful(structured, memory, vocabulary) else ""
    compressed = compressed or _phrase(memory, s_cap, doc=doc) or summary
    c_cap = min(INDEX_TOKENS, count_tokens(compressed))
    index = ""
    if memory.fact_key and _faithful(memory.fact_key, memory, vocabulary):
        index = _fit([memory.fact_key], c_cap, truncate=False)
    if not index and not titled and memory.kind in (Kind.DECISION, Kind.PREFERENCE, Kind.FACT):
        index = _decision_label(memory, doc, c_cap, vocabulary)
    index = index or _phrase(memory, c_cap, title_only=True) or compressed
    return summary, compressed, index


class DeterministicCompressor:
    """Rule-based compression (lead sentences, headings, rule lines, patterns); no model."""

    def summary(self, memory: Memory) -> str:
        """Lead sentences, headings as ``Title: …``, rule lines; problem → fix for solutions."""
        return _levels(_Input.of(memory), (None, None))[0]

    def compressed(self, memory: Memory) -> str:
        """One telegraphic line no longer than the summary (the stored one when present)."""
        return _levels(_Input.of(memory), (_present(memory.summary), None))[1]

    def index_label(self, memory: Memory) -> str:
        """A 2–6 word topic label no longer than the compressed line."""
        given = (_present(memory.summary), _present(memory.compressed))
        return _levels(_Input.of(memory), given)[2]


def _present(value: str | None) -> str | None:
    """The value when it holds text, else None."""
    return value if value and value.strip() else None


_DEFAULT = DeterministicCompressor()


def _nonempty(value: str, memory: Memory, cap: int) -> str:
    """``value`` when it holds text, else a truncated form of the memory's text or its kind."""
    if value and value.strip():
        return value
    return truncate_to_tokens(_oneline(memory.text), cap).strip() or Kind(memory.kind).value


def fill_levels(memory: Memory, compressor: Compressor | None = None) -> LevelTexts:
    """The levels ``memory`` lacks, ready for ``store.update(memory.id, **levels)``."""
    comp = compressor or _DEFAULT
    out: LevelTexts = {}
    current = memory
    makers = (comp.summary, comp.compressed, comp.index_label)
    caps = (SUMMARY_TOKENS, COMPRESSED_TOKENS, INDEX_TOKENS)
    for name, make, cap in zip(LEVEL_FIELDS, makers, caps):
        if _present(getattr(current, name)) is None:
            out[name] = _nonempty(make(current), current, cap)
            current = dataclasses.replace(current, **out)
    return out


LEVELS_FORMAT = "2"
"""The compressor's generation: "2" = faithful short forms. A store whose compressed lines
and labels came from an older one (schema migration 3 marks it "1") has them cleared once,
and refilled."""


def reset_stale_levels(store: MemoryStore) -> int:
    """Clear the compressed lines and labels an older compressor made (once per store);
    return how many memories lost them. Summaries stay: extraction may have written them."""
    if store.cursors.get("levels").get("format", LEVELS_FORMAT) == LEVELS_FORMAT:
        return 0
    cleared = store.levels.clear(("compressed", "index_label"))
    store.cursors.set("levels", {"format": LEVELS_FORMAT})
    return cleared


def backfill_levels(
    store: MemoryStore, compressor: Compressor | None = None, batch: int = 500
) -> int:
    """Fill the missing levels of every memory, archived ones included (after clearing those
    of an older compressor); returns how many."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    reset_stale_levels(store)
    updated = last = 0
    while page := store.levels.lacking(after_id=last, limit=batch):
        last = page[-1].id
        filled = {m.id: lv for m in page if (lv := fill_levels(m, compressor))}
        if filled:
            updated += store.levels.set(filled)
    return updated


__all__ = [
    "COMPRESSED_TOKENS",
    "INDEX_TOKENS",
    "SUMMARY_TOKENS",
    "TINY_TOKENS",
    "Compressor",
    "DeterministicCompressor",
    "backfill_levels",
    "fill_levels",
    "reset_stale_levels",
]
