"""Which memories and pairs the scan compares at all: memories that state how things are
(or short episodes that report a change), and never two parts of one document, two versions
of one source, or a commit and the document it added or changed."""

from __future__ import annotations

import time

from predictive.conflicts.rules import Finding
from predictive.conflicts.statement import MAX_TEXT, analyse
from predictive.conflicts.wording import content_words
from storage.models import AnchorType, Kind, Memory

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
MAX_EPISODE_CHARS = 2000
"""An episode longer than this (a whole conversation) is not compared clause by clause."""


def scannable(m: Memory) -> bool:
    """Whether a memory is compared at all: current, of a kind that states or reports."""
    if m.archived or m.superseded_by is not None:
        return False
    if m.valid_to is not None and m.valid_to <= time.time():
        return False
    if m.kind in RELATED_KINDS:
        return True
    if m.kind in CHANGE_KINDS and m.source.startswith("chat:"):
        return False  # a whole conversation's summary: its items are compared instead
    return m.kind in CHANGE_KINDS and len(m.text) <= MAX_EPISODE_CHARS


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


def wording_only(x: Memory, y: Memory, finding: Finding) -> bool:
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


def never_compared(x: Memory, y: Memory) -> bool:
    """Pairs never compared: two versions of one source, and :func:`_never_conflict`'s."""
    if x.source == y.source and x.source_id is not None and x.source_id == y.source_id:
        return True  # two versions of one source
    return _never_conflict(x, y)
