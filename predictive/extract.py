"""Deterministic extraction: records of a project (commits, decision records, rule files,
editor fixes) become candidate memories with anchors, provenance and a confidence.

No LLM is needed. Conversations have their own module, :mod:`predictive.conversations`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from predictive.commit_noise import meaningful_body
from predictive.file_facts import FileFacts, derive_file, error_signature
from storage.models import Anchor, AnchorType, Artifact, Kind, NewMemory
from storage.redact import redact
from storage.sources.records import Commit, DecisionRecord, RuleFile, RuleItem

MIN_CONFIDENCE = 0.5
"""Candidates below this confidence are dropped (and counted)."""

MAX_FILE_ANCHORS = 30
TRUNK_BRANCHES = frozenset({"main", "master", "trunk", "develop", "development", "dev"})
_CONVENTIONAL = re.compile(
    r"^(?P<type>feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)"
    r"(?:\((?P<scope>[^)]{1,40})\))?!?:\s*",
    re.I,
)
_PATHLIKE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,6}|[\w-]+\.(?:py|ts|tsx|js|jsx|go|rs|java|"
    r"cs|rb|kt|swift|c|cc|cpp|h|hpp|sql|toml|yaml|yml|json|md))(?![\w/])"
)
_INACTIVE_STATUSES = ("superseded", "deprecated", "rejected", "withdrawn", "obsolete")
_RULE_WORDS = re.compile(
    r"\b(always|never|must|must not|should|shouldn't|should not|don't|do not|avoid|prefer|"
    r"use|make sure|ensure|required?|only|keep|run|write|add|follow|no)\b",
    re.I,
)
_IMPERATIVE_START = re.compile(
    r"^(?:please\s+)?(always|never|use|do|don't|do not|avoid|prefer|keep|run|write|add|make|"
    r"ensure|follow|put|name|prefix|format|test|document|include|check|open|create|update|"
    r"sign|squash|rebase|lint|commit|submit|describe|reference|mark|label|ask|wait|call|"
    r"return|raise|handle|log|import|export|store|validate|declare|place|limit|remove|"
    r"separate|split|group|sort|wrap|mock|pin)\b",
    re.I,
)


@dataclass(frozen=True)
class Candidate:
    """A memory extraction proposes, with how sure it is and which rule produced it."""

    memory: NewMemory
    confidence: float
    rule: str
    message_idx: int | None = None

    @property
    def kept(self) -> bool:
        return self.confidence >= MIN_CONFIDENCE


def file_anchors(paths: Iterable[str], root: str | None = None) -> list[Anchor]:
    """``file:`` and ``module:`` anchors for project paths (deduplicated, capped)."""
    out: list[Anchor] = []
    seen: set[Anchor] = set()
    for p in list(dict.fromkeys(paths))[:MAX_FILE_ANCHORS]:
        if not p or (p.startswith(("/", "..")) and root is None):
            continue
        facts = _facts(p, root)
        for a in (
            Anchor(AnchorType.FILE, facts.path),
            Anchor(AnchorType.MODULE, facts.module) if facts.module else None,
        ):
            if a is not None and a not in seen:
                seen.add(a)
                out.append(a)
    return out


@lru_cache(maxsize=4096)
def _facts(path: str, root: str | None) -> FileFacts:
    """Path-only facts (module, package) of a file; histories name the same files often."""
    return derive_file(path, None, root=root)


def paths_in(text: str) -> list[str]:
    """Path-like tokens in prose (``src/auth/jwt.py``, ``settings.toml``)."""
    return list(dict.fromkeys(m.group(1).strip("./") for m in _PATHLIKE.finditer(text)))


def _date(ts: float | None) -> str:
    if ts is None:
        return "undated"
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d")


def _clip(text: str, n: int) -> str:
    """``text`` on one line, at most ``n`` characters; redacted before it is cut (a secret cut
    in half no longer looks like one)."""
    text = " ".join(redact(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


# ---------------------------------------------------------------------------------- commits


def from_commit(c: Commit, root: str | None = None) -> Candidate:
    """A commit becomes an episode anchored to its files and modules: its subject and what its
    body says (see :func:`predictive.commit_noise.meaningful_body`)."""
    m = _CONVENTIONAL.match(c.subject)
    ctype = m.group("type").lower() if m else None
    scope = m.group("scope") if m else None
    # the text is what the commit says; who, when, which sha and which files are metadata,
    # an artifact and anchors (never boilerplate repeated in every commit's text)
    text = c.subject.strip() or "(no subject)"
    body = meaningful_body(c.body)
    if body:
        text += "\n\n" + body[:4000]
    anchors = file_anchors(c.files, root)
    if c.branch and c.branch.lower() not in TRUNK_BRANCHES:
        # a trunk anchor would hide the commit on every feature branch
        anchors.append(Anchor(AnchorType.BRANCH, c.branch))
    tags = ["commit"]
    if c.is_merge:
        tags.append("merge")
    if c.reverts or ctype == "revert":
        tags.append("revert")
    if ctype:
        tags.append(ctype)
    if scope:
        tags.append(scope.strip().lower())
    anchors += [Anchor(AnchorType.TAG, t) for t in dict.fromkeys(tags)]
    importance = 0.3 if c.is_merge else 0.5 if ctype in ("fix", "feat", "perf", "revert") else 0.4
    return Candidate(
        NewMemory(
            text=text,
            kind=Kind.EPISODE,
            anchors=anchors,
            artifacts=[Artifact("commit", c.sha, c.subject[:200])],
            source="git",
            source_id=c.sha,
            importance=importance,
            confidence=1.0,
            created_at=c.at,
            valid_from=c.at,
            metadata={
                "author": c.author,
                "date": _date(c.at),
                "sha": c.sha,
                "files": list(c.files[:MAX_FILE_ANCHORS]),
                "parents": list(c.parents),
                "fileCount": len(c.files),
                "reverts": c.reverts,
                "conventional": ctype,
            },
        ),
        1.0,
        "commit",
    )


# --------------------------------------------------------------------------- decision records


def decision_active(r: DecisionRecord) -> bool:
    """Whether a record still holds: a partly superseded or amended one does."""
    status = re.sub(
        r"^(?:partly|partially|in part)\s+super[sc]eded\b", "", (r.status or "").lower()
    )
    return not any(s in status for s in _INACTIVE_STATUSES) and not r.superseded_by


_MD_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?[^)\s>]*\.(?:md|markdown)(?:#[^)\s>]*)?>?\s*\)", re.I)


def _record_name(path: str) -> str:
    """How a record names another: ``ADR 33 (0033-ip-ranges.md)`` (the number first, which
    the contradiction scanner and readers look for)."""
    name = path.rsplit("/", 1)[-1]
    m = re.match(r"^(?:adr[-_ ]?)?0*(\d{1,5})(?=[-_ .])", name, re.I)
    return f"ADR {m.group(1)} ({name})" if m else name


def from_decision(r: DecisionRecord, *, now: float | None = None) -> Candidate:
    """A decision record becomes a decision memory; an inactive one is closed at once."""
    head = f"ADR {r.number}: {r.title}" if r.number is not None else f"Decision: {r.title}"
    parts = [head, f"Status: {r.status or 'unknown'} ({_date(r.date)})"]
    if r.status_note:  # why it has that status, under it
        parts.append(r.status_note)
    if r.deciders:
        parts.append("Deciders: " + ", ".join(r.deciders))
    for label, body in (("Context", r.context), ("Decision", r.decision)):
        if body.strip():
            parts += ["", f"{label}: {body.strip()}"]
    if r.chosen and r.chosen not in r.decision:
        parts += [
            "",
            f"Chosen option: {r.chosen}" + (f", because {r.rationale}" if r.rationale else ""),
        ]
    if r.options:
        parts += ["", "Options considered: " + "; ".join(r.options)]
    if r.consequences.strip():
        parts += ["", f"Consequences: {r.consequences.strip()}"]
    relations = [
        (label, paths)
        for label, paths in (
            ("Supersedes", r.supersedes),
            ("Superseded by", r.superseded_by),
            ("Partly supersedes", r.amends),
            ("Partly superseded by", r.amended_by),
        )
        if paths
    ]
    if relations:
        parts.append("")
        parts += [f"{label} " + ", ".join(map(_record_name, paths)) for label, paths in relations]
    text = "\n".join(parts)[:12_000]
    anchors = [Anchor(AnchorType.FILE, r.path), Anchor(AnchorType.TAG, "adr")]
    # a link to another record is a relation between records (metadata, edges), not a file
    # this decision is about
    records = {
        p.rsplit("/", 1)[-1]
        for p in (*r.supersedes, *r.superseded_by, *r.amends, *r.amended_by, *r.links)
    }
    prose = _MD_LINK.sub(r"\1", f"{r.context}\n{r.decision}\n{r.consequences}")
    named = [p for p in paths_in(prose) if p.rsplit("/", 1)[-1] not in records]
    anchors += file_anchors(named)[:10]
    status = (r.status or "").lower().split()[0] if r.status else None
    if status:
        anchors.append(Anchor(AnchorType.TAG, f"status-{status}"))
    active = decision_active(r)
    created = r.date if r.date is not None else (now or time.time())
    return Candidate(
        NewMemory(
            text=text,
            kind=Kind.DECISION,
            summary=_clip(
                f"{head} ({r.status or 'status unknown'}). {r.decision or r.chosen or r.context}",
                400,
            ),
            anchors=anchors,
            artifacts=[Artifact("adr", r.path, r.title[:200])],
            source="adr",
            source_id=r.path,
            importance=0.8 if active else 0.4,
            confidence=1.0,
            created_at=created,
            valid_from=created,
            valid_to=None if active else (now or time.time()),
            metadata={
                "status": r.status,
                "format": r.format,
                "number": r.number,
                "date": r.date,  # None: the record has no date (its time is when it was read)
                "options": list(r.options),
                "chosen": r.chosen,
                "supersedes": list(r.supersedes),
                "supersededBy": list(r.superseded_by),
                "amends": list(r.amends),
                "amendedBy": list(r.amended_by),
                "links": list(r.links),
            },
        ),
        1.0,
        "decision-record",
    )


# ---------------------------------------------------------------------------------- rules


def convention_confidence(text: str) -> float:
    """How much a sentence reads like a rule: imperative, or always/never/must/prefer…"""
    t = text.strip()
    words = len(t.split())
    if words < 3 or words > 120:
        return 0.2
    score = 0.3
    if _IMPERATIVE_START.match(t):
        score += 0.35
    hits = len(_RULE_WORDS.findall(t))
    score += min(0.3, 0.15 * hits)
    if re.search(r"\b(always|never|must|don't|do not|avoid|prefer)\b", t, re.I):
        score += 0.1
    if t.endswith("?"):
        score -= 0.4
    if re.match(r"^(i|i'm|i've|i'd|my|me)\b", t, re.I) and not re.search(
        r"\b(we|must|should|please)\b", t, re.I
    ):
        score -= 0.3  # a remark about oneself ("I always forget…") is not a project rule
    if re.match(r"^(thank|thanks|welcome|hi|hello|this (document|guide|file))\b", t, re.I):
        score -= 0.4
    return max(0.0, min(1.0, score))


CONTRIBUTING_CONFIDENCE = 0.75
"""A section of a contributing guide: project knowledge, less binding than a rule file."""


def from_rule_item(f: RuleFile, item: RuleItem, at: float | None = None) -> Candidate:
    """A section of a rule file becomes a convention; its file's globs are its anchors; ``at``
    is when the file got the text it has (its last commit), None for now."""
    confidence = 0.9
    if f.kind == "contributing":  # a guide: a section counts when something in it is a rule
        lines = re.split(r"(?<=[.!?])\s+|\n", item.text)
        rule_like = max((convention_confidence(x.strip(" -*")) for x in lines), default=0.0)
        confidence = CONTRIBUTING_CONFIDENCE if rule_like >= MIN_CONFIDENCE else rule_like
    anchors = [Anchor(AnchorType.GLOB, g) for g in f.globs]
    anchors.append(Anchor(AnchorType.TAG, "rule"))
    anchors.append(Anchor(AnchorType.TAG, f.kind))
    anchors += file_anchors(paths_in(item.text))[:6]
    body = item.text.strip("\n")
    text = f"{item.heading}\n{body}" if item.heading else body
    first = next((ln.strip(" -*#>") for ln in body.split("\n") if ln.strip(" -*#>")), body)
    label = _clip(f"{f.path.rsplit('/', 1)[-1]}: {item.heading or first}", 90)
    importance = 0.8 if f.always_apply or f.kind in ("claude", "agents", "cursorrules") else 0.6
    return Candidate(
        NewMemory(
            text=text,
            kind=Kind.CONVENTION,
            index_label=label,
            anchors=anchors,
            artifacts=[Artifact("file", f.path, f.description[:200] if f.description else None)],
            source="rules",
            source_id=f"{f.path}:{item.line}",
            importance=importance,
            confidence=round(confidence, 3),
            created_at=at,
            valid_from=at,
            metadata={
                "file": f.path,
                "line": item.line,
                "kind": f.kind,
                "globs": list(f.globs),
                "alwaysApply": f.always_apply,
            },
        ),
        confidence,
        f"rule:{f.kind}",
    )


def from_rule_file(f: RuleFile, at: float | None = None) -> list[Candidate]:
    return [from_rule_item(f, item, at) for item in f.items if item.text.strip()]


# ---------------------------------------------------------------------------------- fixes


def solution_from_error(
    *,
    text: str,
    path: str | None,
    message: str,
    code: str | None = None,
    source: str | None = None,
    source_name: str,
    source_id: str,
    importance: float = 0.6,
    metadata: dict | None = None,
) -> Candidate:
    """An error and the change that fixed it becomes a solution anchored to the error's
    normalised signature (and its file), wherever it was seen: editor or conversation."""
    anchors = [Anchor(AnchorType.ERROR, error_signature(message, code, source))]
    if path:
        anchors = file_anchors([path]) + anchors
    return Candidate(
        NewMemory(
            text=text,
            kind=Kind.SOLUTION,
            anchors=anchors,
            source=source_name,
            source_id=source_id,
            importance=importance,
            metadata=metadata or {},
        ),
        1.0,
        "error-fix",
    )
