"""Conversations → a deterministic session summary and extracted memories.

What is extracted, each with a confidence (below :data:`predictive.extract.MIN_CONFIDENCE` it
is dropped and counted):

- **solutions**: a user turn showing an error or failure, the assistant's fix (its explanation
  and code), stronger when the user then confirms it worked, weaker when they say it did not;
- **decisions**: "we decided / let's go with / we'll use X (over Y) (because …)";
- **conventions**: "always / never / must / don't / prefer / avoid …" rules stated by the user;
- **preferences and corrections**: "no, use X", "actually …", "I prefer …", "please use …";
- **workflows**: sequences of two or more shell commands the user ran or accepted.

Every memory keeps its provenance (tool, session, message index) and the files the turn named.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from predictive.extract import Candidate, convention_confidence, file_anchors, paths_in
from predictive.file_facts import error_signature
from storage.models import Anchor, AnchorType, Kind, NewMemory
from storage.redact import redact
from storage.sources.records import ChatMessage, CodeBlock, Conversation
from storage.text import STOPWORDS, is_tool_output

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|\n{2,}|\n(?=\s*[-*\d])")
_FENCE = re.compile(r"```[^\n]*\n.*?(?:```|$)", re.S)
_ERROR = re.compile(
    r"(Traceback \(most recent call last\)|\b\w+(?:Error|Exception)\b[:\s]|\berror\b[:\s]|"
    r"\bfail(?:s|ed|ing|ure)?\b|\bpanic(?:ked)?:|\bsegfault|\bundefined is not|"
    r"\bcannot\b|\bcan't\b|\bdoesn't work|\bnot working|\bbroken\b|\bcrash(?:es|ed)?\b|"
    r"\bexit code [1-9]|\bE\d{3,4}\b|\bTS\d{4}\b)",
    re.I,
)
_STRONG_ERROR = re.compile(
    r"(Traceback \(most recent call last\)|\b[A-Z]\w+(?:Error|Exception)\b|\bpanic:|"
    r"\berror\[?E?\d*\]?:|\bTS\d{4}\b)"
)
_ERROR_LINE = re.compile(
    r"^.*(?:\b[A-Z]\w*(?:Error|Exception)\b|\berror\b|\bpanic:|\bTS\d{4}\b).*$", re.I | re.M
)
_FIX_WORDS = re.compile(
    r"\b(the (?:fix|problem|issue|cause) (?:is|was)|fix(?:ed)? (?:it|this) by|you need to|"
    r"should be|change [`\w]+ to|replace [`\w]+ with|instead of|because|caused by|"
    r"to fix|the solution|try (?:adding|using|changing)|missing|add(?:ing)? [`\w]+ to)\b",
    re.I,
)
_CONFIRM = re.compile(
    r"^\W*(thanks?|thank you|perfect|great|awesome|nice|works|it works|that worked|"
    r"that fixed|fixed|solved|yes[,!. ]|ok(?:ay)?[,!. ]|lgtm|cool)\b|\b((?:works|compiles|builds|"
    r"passes|runs) now|that did it|that was it|that fixed it|it'?s working|problem solved|"
    r"thanks?|thank you)\b",
    re.I,
)
_STILL_BROKEN = re.compile(
    r"\b(still (?:get|getting|fails|failing|broken|the same|doesn't|does not|not)|same error|"
    r"didn't work|did not work|doesn't work|does not work|no luck|not fixed)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(we(?:'ve| have)? decided|(?:i|we) decided|let'?s (?:go with|use|stick with|switch to|"
    r"move to)|we(?:'ll| will) (?:go with|use|stick with|switch to)|decision:|"
    r"(?:i|we)(?:'m|'re| am| are) going (?:with|to use)|(?:i|we) chose|going forward,? (?:we|use)|"
    r"(?:we|i)(?:'ll| will)? (?:use|switch to|go with) \S+ from now on)\b",
    re.I,
)
_AGREE = re.compile(
    r"^\W*(yes|yep|ok(?:ay)?|sure|agreed|sounds good|let'?s do (?:it|that)|go (?:ahead|for it)|"
    r"do it|perfect|great)\b",
    re.I,
)
_RECOMMEND = re.compile(
    r"\b(i(?:'d| would) (?:recommend|suggest)|i recommend|i suggest|the best (?:option|approach) "
    r"(?:is|would be)|you should use|better to use)\b",
    re.I,
)
_CORRECTION = re.compile(
    r"^\W*(no[,.!]\s|nope|actually[,\s]|don'?t use|do not use|instead[,\s]|wrong[,.!]|"
    r"that'?s (?:wrong|not right|incorrect)|not like that|use \S+ instead)",
    re.I,
)
_PREFERENCE = re.compile(
    r"\b(i (?:prefer|like)|i(?:'d| would) rather|please (?:always|never|don'?t|avoid|keep)|"
    r"we prefer|our preference|i don'?t like)\b",
    re.I,
)
# What makes a sentence a standing rule rather than a request for the change at hand: a
# word of generality early in it ("Always …", "From now on …", "Whenever …"), or a rule
# about every one of a kind ("each module …", "every engine …").
_STANDING = re.compile(
    r"\b(always|never|from now on|going forward|whenever|every time|in general|by default|"
    r"as a rule|consistently|don'?t ever)\b",
    re.I,
)
_EVERY = re.compile(r"\b(each|every|all) (?!of (?:this|that|these|those|it|them)\b)[a-z]+", re.I)


# "Tests must not hit the network", "Don't use relative imports": a rule stated outright.
_STATED_RULE = re.compile(
    r"^(?:(?:don'?t|do not|never|avoid|always)\b|(?!(?:this|that|it|there)\b)(?:[\w'-]+\s){1,3}"
    r"(?:must|mustn'?t|may not|"
    r"are not allowed to|is not allowed to)\b)",
    re.I,
)
_PLEASE = re.compile(r"\bplease (?:use|write|name|put|call)\b", re.I)


def _standing(sentence: str) -> bool:
    head = " ".join(sentence.split()[:6])
    return bool(_STANDING.search(head) or _EVERY.search(sentence) or _STATED_RULE.search(sentence))


_RULE = re.compile(
    r"\b(always|never|must(?: not)?|mustn't|don'?t|do not|should(?:n't| not)?|avoid|"
    r"prefer|make sure)\b",
    re.I,
)
_SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh", "shellscript", "powershell", "ps1", "cmd"}
_PROMPT = re.compile(r"^\s*(?:\$|>|PS [^>]*>)\s+")
_AT_LINE = re.compile(r"(?:^|\s)[\w./-]+\.[A-Za-z]\w*:\d+(?::\d+)?(?=\s|$)")
"""A ``src/app.py:120`` argument: a command aimed at particular lines, run once."""
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{2,}")


@dataclass
class Extraction:
    """What one conversation yielded: candidates kept, and the ones dropped."""

    kept: list[Candidate] = field(default_factory=list)
    dropped: list[Candidate] = field(default_factory=list)

    def add(self, c: Candidate) -> None:
        (self.kept if c.kept else self.dropped).append(c)


# Lines that someone pasted rather than wrote: beyond a tool's output (predictive.mentions),
# log records, prompts, JSON and rules drawn with box characters.
_LOGGED = re.compile(
    r"^\s*(?:\d{4}-\d{2}-\d{2}[ T]\d|\[?\d{2}:\d{2}:\d{2}|(?:DEBUG|INFO|WARNING|WARN|ERROR|"
    r"CRITICAL|TRACE)\b|[{\[]\s*\"|>>>|\$ |\w+:\d+:)"
    r"|\S+\.\w{1,8}:\d+|[│┃━─]{2,}|^\s*\w*(?:Error|Warning|Exception)\b:?"
)
# A sentence of code, not prose.
_CODE_LIKE = re.compile(
    r"\b(?:def|class|import|return|async|await|lambda|const|let|var|fn)\b[^.]*[(:=]|"
    r"[\w\]\)]\([^)]*\)\s*(?:->|:|\{)|\w+\s*=\s*[\w\[\{\"']"
)
REPEATED = 3
"""A user instruction given this many times in one conversation is a standing one."""
_STEP = re.compile(
    r"^(?:then |now |first |next |please )?(?:run|call|execute|update|use|read)\b", re.I
)
_RULE_OR_STEP = re.compile(
    r"\b(?:run|update|use|always|never|must|should|make sure|keep|remove|add)\b", re.I
)
CORRECTION_CHARS = 300
"""A correction that points back ("this notation") keeps its whole message up to this long:
what it points at is in the lines that follow ("--engines brave tavily")."""
_POINTS_BACK = re.compile(
    r"\b(?:this|that|these|those|it)\b(?!\s+(?:is|was)\s+(?:wrong|incorrect))", re.I
)
PASTE_CHARS = 2_000
"""A user message longer than this is mostly pasted: only its first and last paragraphs are
the user's own words."""


def _prose(text: str) -> str:
    """A message without code blocks and without the lines pasted from a terminal or log."""
    kept = []
    for line in _FENCE.sub("\n", text).split("\n"):
        stripped = line.strip()
        if not stripped or is_tool_output(stripped) or _LOGGED.search(stripped):
            kept.append("")
            continue
        letters = sum(ch.isalpha() or ch.isspace() for ch in stripped)
        kept.append(line if letters >= 0.7 * len(stripped) else "")
    return "\n".join(kept)


def _sentences(text: str) -> list[str]:
    prose = _prose(text)
    out = []
    for s in _SENTENCE.split(prose):
        s = " ".join(s.split()).lstrip("-*• ").strip()
        if 3 <= len(s.split()) <= 80 and not _CODE_LIKE.search(s):
            out.append(s)
    return out


def _own_words(m: ChatMessage) -> str:
    """What the user wrote themselves: a long message is mostly a paste (a log, a document),
    so only its first and last paragraphs count."""
    if len(m.text) <= PASTE_CHARS:
        return m.text
    paras = [p for p in re.split(r"\n\s*\n", _FENCE.sub("\n\n", m.text)) if p.strip()]
    if len(paras) <= 2:
        return "\n\n".join(p[: PASTE_CHARS // 2] for p in paras)
    return f"{paras[0][: PASTE_CHARS // 2]}\n\n{paras[-1][: PASTE_CHARS // 2]}"


def _clip(text: str, n: int) -> str:
    """``text`` on one line, at most ``n`` characters; redacted before it is cut (a secret cut
    in half no longer looks like one)."""
    text = " ".join(redact(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _code(blocks: Sequence[CodeBlock], text: str) -> list[CodeBlock]:
    if blocks:
        return list(blocks)
    found = []
    for m in re.finditer(r"```([^\n`]*)\n(.*?)```", text, re.S):
        found.append(CodeBlock(m.group(2), m.group(1).strip() or None))
    return found


def _files(conv: Conversation, msgs: Sequence[ChatMessage]) -> list[str]:
    files: list[str] = []
    for m in msgs:
        files += list(m.files)
        files += [b.filename for b in m.code_blocks if b.filename]
        files += paths_in(_FENCE.sub(" ", m.text))
    root = conv.workspace
    rel = []
    for f in files:
        if root and f.startswith(root.rstrip("/") + "/"):
            f = f[len(root.rstrip("/")) + 1 :]
        if not f.startswith("/"):
            rel.append(f)
    return list(dict.fromkeys(rel))


def _provenance(conv: Conversation, idx: int, rule: str) -> dict:
    return {
        "tool": conv.tool,
        "session": conv.external_id,
        "messageIdx": idx,
        "rule": rule,
        "sessionTitle": conv.title,
    }


def _memory(
    conv: Conversation,
    kind: Kind,
    text: str,
    idx: int,
    rule: str,
    confidence: float,
    msgs: Sequence[ChatMessage],
    *,
    extra_anchors: Sequence[Anchor] = (),
    importance: float = 0.5,
) -> Candidate:
    anchors = file_anchors(_files(conv, msgs))[:12]
    anchors += list(extra_anchors)
    anchors.append(Anchor(AnchorType.TAG, f"chat-{conv.tool}"))
    if conv.branch:
        anchors.append(Anchor(AnchorType.BRANCH, conv.branch))
    # known once its last message was said: a fix found later is not known at the problem
    at = max((m.at for m in msgs if m.at is not None), default=conv.started_at)
    return Candidate(
        NewMemory(
            text=text,
            kind=kind,
            anchors=anchors,
            source=f"chat:{conv.tool}",
            source_id=f"{conv.external_id}#{idx}:{rule}",
            importance=importance,
            confidence=round(max(0.0, min(1.0, confidence)), 3),
            created_at=at,
            valid_from=at,
            metadata=_provenance(conv, idx, rule),
        ),
        max(0.0, min(1.0, confidence)),
        rule,
        idx,
    )


def _next_at(msgs: Sequence[ChatMessage], i: int, role: str) -> int | None:
    """Index of the next ``role`` turn after ``i``; an assistant reply must come before the
    user speaks again."""
    for j in range(i + 1, len(msgs)):
        if msgs[j].role == role:
            return j
        if msgs[j].role == "user" and role != "user":
            return None
    return None


def _next(msgs: Sequence[ChatMessage], i: int, role: str) -> ChatMessage | None:
    j = _next_at(msgs, i, role)
    return None if j is None else msgs[j]


def _solutions(
    conv: Conversation, msgs: Sequence[ChatMessage], out: Extraction, start: int = 0
) -> None:
    for i, m in enumerate(msgs):
        if i < start or m.role != "user" or not _ERROR.search(m.text):
            continue
        # Follow the exchange: when the user says the first answer did not help, the fix is
        # the next answer (up to three rounds).
        j = _next_at(msgs, i, "assistant")
        failed_before = False
        for _ in range(3):
            if j is None:
                break
            k = _next_at(msgs, j, "user")
            if k is None or not _STILL_BROKEN.search(msgs[k].text):
                break
            nxt = _next_at(msgs, k, "assistant")
            if nxt is None:
                break
            j, failed_before = nxt, True
        if j is None:
            continue
        reply = msgs[j]
        follow = _next(msgs, j, "user")
        # A fix is known to work when the user says so; until then it is a suggestion.
        confidence = 0.1
        if _STRONG_ERROR.search(m.text):
            confidence += 0.15
        code = _code(reply.code_blocks, reply.text)
        if code:
            confidence += 0.1
        if _FIX_WORDS.search(reply.text):
            confidence += 0.1
        if (
            follow is not None
            and _CONFIRM.search(follow.text)
            and not _STILL_BROKEN.search(follow.text)
        ):
            confidence += 0.45
        elif follow is not None and _STILL_BROKEN.search(follow.text):
            confidence -= 0.3
        err_line = _ERROR_LINE.search(m.text)
        problem = _clip(err_line.group(0) if err_line else m.text, 300)
        explanation = " ".join(_sentences(reply.text)[:3]) or _clip(reply.text, 400)
        parts = [f"Problem: {problem}", f"Fix: {_clip(explanation, 600)}"]
        if failed_before:
            parts[1] += " (an earlier suggestion did not work)"
        for b in code[:2]:
            snippet = "\n".join(b.code.strip().splitlines()[:25])
            parts += [f"```{b.language or ''}", snippet, "```"]
        anchors = []
        if err_line:
            anchors.append(Anchor(AnchorType.ERROR, error_signature(err_line.group(0))))
        out.add(
            _memory(
                conv,
                Kind.SOLUTION,
                "\n".join(parts),
                i,
                "solution",
                confidence,
                [m, reply],
                extra_anchors=anchors,
                importance=0.6,
            )
        )


def _decisions(
    conv: Conversation, msgs: Sequence[ChatMessage], out: Extraction, start: int = 0
) -> None:
    for i, m in enumerate(msgs[start:], start):
        for s in _sentences(_own_words(m) if m.role == "user" else m.text):
            if _DECISION.search(s):
                confidence = 0.7 if m.role == "user" else 0.45
                if s.endswith(":") or len(s.split()) < 6:
                    confidence -= 0.4  # a lead-in ("And we'll use it like so:")
                follow = _next(msgs, i, "user") if m.role == "assistant" else None
                if follow is not None and _AGREE.search(follow.text):
                    confidence += 0.25
                if re.search(r"\b(because|since|so that|over|instead of|rather than)\b", s, re.I):
                    confidence += 0.1
                if s.endswith("?"):
                    confidence -= 0.4
                out.add(
                    _memory(conv, Kind.DECISION, s, i, "decision", confidence, [m], importance=0.7)
                )
            elif m.role == "assistant" and _RECOMMEND.search(s):
                follow = _next(msgs, i, "user")
                if follow is not None and _AGREE.search(follow.text):
                    text = f"Decided: {s}"
                    out.add(
                        _memory(
                            conv,
                            Kind.DECISION,
                            text,
                            i,
                            "decision-agreed",
                            0.65,
                            [m, follow],
                            importance=0.6,
                        )
                    )


def _user_rules(
    conv: Conversation, msgs: Sequence[ChatMessage], out: Extraction, start: int = 0
) -> None:
    said = [(i, _sentences(_own_words(m))) for i, m in enumerate(msgs) if m.role == "user"]
    # What the user tells the assistant again and again is how the project works.
    times = Counter(" ".join(s.lower().split()) for _, ss in said for s in set(ss))
    repeated: set[str] = set()
    for i, sentences in said:
        m = msgs[i]
        prev_assistant = any(p.role == "assistant" for p in msgs[:i])
        for k, s in enumerate(sentences):
            if s.endswith("?"):
                continue
            key = " ".join(s.lower().split())
            if times[key] >= REPEATED and len(s.split()) >= 6 and _RULE_OR_STEP.search(s):
                if key not in repeated:
                    repeated.add(key)
                    out.add(
                        _memory(
                            conv,
                            Kind.WORKFLOW if _STEP.search(s) else Kind.CONVENTION,
                            s,
                            i,
                            "repeated",
                            0.8,
                            [m],
                            importance=0.7,
                        )
                    )
                continue
            if i < start:  # only a rule repeated since is new before ``start``
                continue
            if k == 0 and prev_assistant and _CORRECTION.search(s):
                text = s if len(s.split()) >= 4 else " ".join(sentences[:2])
                whole = " ".join(_prose(_own_words(m)).split())
                if _POINTS_BACK.search(text) and len(text) < len(whole) <= CORRECTION_CHARS:
                    text = whole  # "we don't support this notation": what "this" is follows
                out.add(
                    _memory(
                        conv,
                        Kind.PREFERENCE,
                        f"Correction: {text}",
                        i,
                        "correction",
                        0.75,
                        [m],
                        importance=0.7,
                    )
                )
            elif _PREFERENCE.search(s) or (_PLEASE.search(s) and _standing(s)):
                out.add(
                    _memory(conv, Kind.PREFERENCE, s, i, "preference", 0.7, [m], importance=0.6)
                )
            elif _RULE.search(s):
                confidence = convention_confidence(s)
                if not _standing(s):
                    confidence = min(confidence, 0.45)  # a request for this change, not a rule
                out.add(
                    _memory(
                        conv, Kind.CONVENTION, s, i, "convention", confidence, [m], importance=0.6
                    )
                )


def _commands(m: ChatMessage) -> list[str]:
    cmds: list[str] = []
    for b in _code(m.code_blocks, m.text):
        lang = (b.language or "").lower()
        lines = [x for x in b.code.splitlines() if x.strip() and not x.strip().startswith("#")]
        if lang in _SHELL_LANGS or (lines and all(_PROMPT.match(x) for x in lines)):
            cmds += [_PROMPT.sub("", x).strip() for x in lines if not x.startswith((" ", "\t"))]
    return [c for c in cmds if c and len(c) < 300 and not _AT_LINE.search(c)]


_TOOL_ACTION = re.compile(
    r"(?:Read file|Listed directory|Searched (?:codebase|files|web)|Grep search|Edited file|"
    r"Cancelled)\b"
)
"""What an export writes for one of the assistant's tool actions (a file read, a search)."""


def _workflows(
    conv: Conversation, msgs: Sequence[ChatMessage], out: Extraction, start: int = 0
) -> None:
    for i, m in enumerate(msgs[start:], start):
        cmds = _commands(m)
        if len(cmds) < 2:
            continue
        confidence = 0.55 if m.role == "user" else 0.4
        if m.role == "user" and len(m.text) > PASTE_CHARS:
            confidence -= 0.3  # commands inside a pasted document or log
        follow = _next(msgs, i, "user") if m.role == "assistant" else None
        if (
            follow is not None
            and _CONFIRM.search(follow.text)
            and not _STILL_BROKEN.search(follow.text)
        ):
            confidence += 0.25
        if len(cmds) >= 3:
            confidence += 0.05
        intro = next((s for s in _sentences(m.text) if not _TOOL_ACTION.match(s)), "")
        lines = [f"Workflow: {_clip(intro, 200)}" if intro else "Workflow:"]
        lines += [f"{n}. `{c}`" for n, c in enumerate(cmds[:12], 1)]
        out.add(_memory(conv, Kind.WORKFLOW, "\n".join(lines), i, "workflow", confidence, [m]))


LOOKAHEAD_TURNS = 4
"""How many later user turns a candidate can depend on: a problem followed through three
answers that did not work (each "still failing" a turn) and the confirmation after the fix."""


def extract(conv: Conversation, *, since: int | None = None) -> Extraction:
    """Every candidate memory of one conversation; with ``since`` (a message index: the
    messages before it were extracted already, when they were the whole conversation) only
    the candidates that the messages from ``since`` on can make or change: those of the
    :data:`LOOKAHEAD_TURNS` turns before its turn and after, and a user's rule repeated since.
    The rest come out as they came out before, so nothing is lost by leaving them."""
    msgs = [m for m in conv.messages if m.text.strip() and m.role in ("user", "assistant")]
    start = 0 if since is None else _window(msgs, since)
    out = Extraction()
    _solutions(conv, msgs, out, start)
    _decisions(conv, msgs, out, start)
    _user_rules(conv, msgs, out, start)
    _workflows(conv, msgs, out, start)
    return out


def _window(msgs: Sequence[ChatMessage], since: int) -> int:
    """The position in ``msgs`` from which candidates can differ from those of the messages
    before ``since``: the start of the turn :data:`LOOKAHEAD_TURNS` user turns before the
    turn that holds the first message from ``since`` on."""
    first = next((p for p, m in enumerate(msgs) if m.idx >= since), len(msgs))
    users = [p for p, m in enumerate(msgs[:first]) if m.role == "user"]
    back = len(users) - LOOKAHEAD_TURNS
    # the turn still open at ``first`` counts as one of the turns before
    if first < len(msgs) and msgs[first].role != "user" and users:
        back -= 1
    return users[back] if back >= 0 else 0


_PATH_OR_URL = re.compile(r"\S*[/\\]\S*")
_FILLER = frozenset(
    "let lets now also just like want need see look sure okay yes yeah here well still get "
    "got going can could would should might must may done thanks please true false none null "
    "self one two first next last new make made think know way thing things sorry any all "
    "other not try use using read check".split()
)
"""Words of talk, not of subject: never a conversation's topic."""


_TOPICS_KEPT = 20_000
_topics: dict[bytes, frozenset[str]] = {}


def _topic_words(text: str) -> frozenset[str]:
    """The candidate topic words of one message's prose (no code, tool output, paths, URLs);
    kept by the text's digest (a conversation summarised again at every turn reads its new
    messages only)."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    words = _topics.get(key)
    if words is None:
        if len(_topics) >= _TOPICS_KEPT:
            _topics.clear()
        words = _topics[key] = frozenset(_read_topic_words(text))
    return words


def _read_topic_words(text: str) -> set[str]:
    out: set[str] = set()
    for line in _FENCE.sub(" ", text).split("\n"):
        if is_tool_output(line):
            continue
        for w in _TOKEN.findall(_PATH_OR_URL.sub(" ", line)):
            lw = w.lower().strip(".-")
            if lw not in STOPWORDS and lw not in _FILLER and len(lw) > 2 and not lw.isdigit():
                out.add(lw)
    return out


LATER_REQUESTS = 6
"""How many of the user's later requests a summary lists after the opening one."""
REQUEST_CHARS = 100
"""Each later request's length in a summary (its first sentence, cut). A conversation is about
what its user asked for all along, not only at first: with them, the summary ranking of
:mod:`predictive.retrieval` finds the conversation a question's paraphrase describes (bench/
bench_devset.py, real model, re-ingested: gryag R@5 0.90 → 0.925, chat 0.893 → 0.929, R@1
0.60 → 0.575; twat-search R@1 0.70 → 0.75, R@5 1.0 unchanged). 4, 6 and 10 requests of 100 to
240 characters gave the same R@5 on both sets; 3 requests did not find the gryag question."""


def _later_requests(msgs: Sequence[ChatMessage], opening: str) -> list[str]:
    """The first sentence of each user message after the first, in order, each once."""
    seen = {opening.lower()}
    out = []
    for m in [m for m in msgs if m.role == "user"][1:]:
        first = next(iter(_sentences(_own_words(m))), None)
        if first is None:
            continue
        ask = _clip(first, REQUEST_CHARS)
        if ask.lower() not in seen:
            seen.add(ask.lower())
            out.append(ask)
            if len(out) == LATER_REQUESTS:
                break
    return out


def summarise(conv: Conversation, *, topics: int = 12) -> str:
    """A deterministic summary: the opening request, the user's later requests, the main
    topics (words of its prose that the most messages use), files and span."""
    msgs = [m for m in conv.messages if m.text.strip()]
    first_user = next((m for m in msgs if m.role == "user"), msgs[0] if msgs else None)
    opening = (
        _clip(next(iter(_sentences(first_user.text)), first_user.text), 240) if first_user else ""
    )
    later = _later_requests(msgs, opening)
    counts: Counter[str] = Counter()
    for m in msgs:
        if m.role in ("user", "assistant"):
            counts.update(_topic_words(m.text))
    common = [w for w, n in counts.most_common(topics * 2) if n > 1][:topics] or [
        w for w, _ in counts.most_common(topics)
    ]
    parts = []
    if conv.title:
        parts.append(conv.title.strip().rstrip(".") + ".")
    if opening:
        parts.append(f"Started with: {opening}")
    if later:
        parts.append("Then: " + " / ".join(later))
    if common:
        parts.append("Topics: " + ", ".join(common) + ".")
    files = _files(conv, msgs)[:8]
    if files:
        parts.append("Files: " + ", ".join(files) + ".")
    parts.append(f"{len(msgs)} messages.")
    return " ".join(parts)


MAX_SESSION_FILES = 100
"""At most this many of a session's most mentioned files anchor its memory. Tuned on gryag
(issue 20: 40 → 100 raised file-open prefetch 0.742 → 0.847 at 5 items, 0.786 → 0.890 at 10;
a long session that lists the tree named 40 files three times and cut the files it worked on;
200 gave 0.834 / 0.890), checked on twat-search (unchanged, 0.910 / 0.988)."""


def session_unit(conv: Conversation, summary: str, mentions: Counter[str]) -> NewMemory:
    """The conversation itself as one memory (an episode): what it was about, anchored to the
    project files it talks about; ``metadata.mentions`` says how often it names each (a
    mention in a user's request counts more), ``metadata.chars`` how long it is."""
    top = mentions.most_common(MAX_SESSION_FILES)
    anchors = [Anchor(AnchorType.FILE, p) for p, _ in top]
    anchors.append(Anchor(AnchorType.TAG, f"chat-{conv.tool}"))
    if conv.branch:
        anchors.append(Anchor(AnchorType.BRANCH, conv.branch))
    when = (
        datetime.fromtimestamp(conv.started_at, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
        if conv.started_at
        else "undated"
    )
    title = (conv.title or "").strip() or conv.external_id
    body = summary.strip()
    if body.lower().startswith(title.lower().rstrip(".")):  # the summary opens with the title
        body = body[len(title.rstrip(".")) :].lstrip(". ")
    text = f"Conversation ({conv.tool}, {when}): {title}\n{body}".strip()
    return NewMemory(
        text=text,
        kind=Kind.EPISODE,
        index_label=_clip(f"conversation: {title}", 90),
        anchors=anchors,
        source=f"chat:{conv.tool}",
        source_id=conv.external_id,
        importance=0.4,
        created_at=conv.started_at,
        valid_from=conv.started_at,
        metadata={
            "unit": "session",
            "tool": conv.tool,
            "session": conv.external_id,
            "sessionTitle": conv.title,
            "origin": conv.origin,
            "mentions": dict(top),
            "chars": sum(len(m.text) for m in conv.messages),
        },
    )
