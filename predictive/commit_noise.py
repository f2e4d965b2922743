"""Which commits are knowledge. Merges ("Merge branch …", "merge main"), commits of bots
(dependabot, renovate, github-actions, release bots, an app account's upkeep) and trivial
commits ("wip", "lol tabs", "Initial commit", "fix", a two-word subject with no body) say
nothing a developer or an AI needs; by default they are left out of the memory (and counted).

And what of a commit message matters: :func:`meaningful_body` drops trailers
(``Signed-off-by:``, ``Co-authored-by:`` …), unticked and ticked checklist lines, a pull request
template's checklist sections (a heading that names a checklist, with what is under it), HTML
comments and tags (screenshots), Markdown images, lines that are nothing but a link, agent
session ids, "generated with" and agent attribution footers ("PR by …", "Comment @… to
request changes"), and the empty headings left behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from storage.passages import OUTPUT_FENCES, Fence, fence_step
from storage.sources.records import Commit

Noise = Literal["merge", "bot", "trivial"]

_MERGE_SUBJECT = re.compile(
    r"^(merge (branch|remote-tracking branch|pull request|tag|commit|(the )?(main|master|"
    r"develop|dev|trunk|upstream|origin)\b)|merged? (in |from )?(main|master|develop|dev|"
    r"upstream|origin/\S+)\s*$)",
    re.I,
)
_AUTOMATION = re.compile(
    r"(^|[\s<._-])(dependabot|renovate|github-actions|greenkeeper|snyk-bot|"
    r"pre-commit-ci|allcontributors|imgbot|mergify|semantic-release|release-please|"
    r"release-bot|releasebot|codecov|deepsource|pyup-bot|whitesource|web-flow-bot)\b",
    re.I,
)
_BOT = re.compile(r"\[bot\]|\bbot@", re.I)
_UPKEEP = re.compile(r"^(?:chore|ci|build|deps|release|bump)\b|\bbump|\bupdate deps\b", re.I)
"""What an account that commits on its own keeps up (dependencies, pipelines, releases), as
against a coding agent's change that says what it fixed and why."""
_CONVENTIONAL = re.compile(
    r"^(?:feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)(?:\([^)]{1,40}\))?!?:\s*",
    re.I,
)
_TRIVIAL_SUBJECT = re.compile(
    r"^(wip|work in progress|initial commit|first commit|init|initial|update|updates|updated|"
    r"fix|fixes|fixed|fixup|typo|typos|fix typo|fix typos|minor|minor fix(es)?|minor changes?|"
    r"small fix(es)?|cleanup|clean up|tweak|tweaks|changes|more changes|stuff|misc|test|"
    r"testing|tmp|temp|oops|lol.*|idk.*|asdf.*|x+|\.+|save|commit|formatting|format|lint|"
    r"bump( version)?|version bump|release|v?\d+(\.\d+)+([-+.\w]*)?|release v?\d+(\.\d+)+\S*|"
    r"merge|try again|again|another (try|fix)|maybe( this)?( works)?|works?|done|checkpoint)"
    r"[\s.!?]*$",
    re.I,
)
_FIXUP = re.compile(r"^(fixup!|squash!|amend!)", re.I)
_TRAILER = re.compile(
    r"^(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|"
    r"suggested-by|helped-by|cc|change-id|reviewed-on|pr-url|git-svn-id|"
    r"dependabot-update|x-\w[\w-]*):",
    re.I,
)
_CHECKBOX = re.compile(r"^\s*[-*]\s*\[[ xX]?\]")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_HTML_TAG = re.compile(
    r"<(img|video|picture|source|br|hr|details|summary|/details|/summary)\b[^>]*>", re.I | re.S
)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK_ONLY = re.compile(r"^\s*(?:[-*]\s*)?(?:<?https?://\S+>?|\[[^\]]*\]\(\s*https?://[^)]*\))\s*$")
_SESSION = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\W{0,3}\s*generated (?:with|by)\b|(?:claude|codex|cursor|agent|copilot)"
    r" session(?: id)?\s*:|resume\s*:\s*`?\w+ --resume\b|"
    r"(?:pr|pull request) (?:opened |created )?by @?[\w-]+\s*$|comment @[\w-]+ to request changes)",
    re.I,
)
_CHECKLIST_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+.*\bcheck\s?list\b", re.I)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
# "Jira: [PROJ-1](https://…)", "[PROJ-1]: https://…": a tracker's link with only its name.
_LABELLED_LINK = re.compile(
    r"^\s*(?:[-*]\s*)?(?:[\w .-]{1,30}:\s*(?:<?https?://\S+>?|\[[^\]]*\]\(\s*https?://[^)]*\))"
    r"|\[[^\]]+\]:\s*<?https?://\S+>?)\s*$"
)
# What a template section holds when the author had nothing to say in it.
_NOTHING = re.compile(r"^\s*(?:[-*]\s*)?(?:none|n/?a|no|nope|nothing|tbd|-+|_?none_?)\.?\s*$", re.I)
OUTPUT_LINES_KEPT = 3
"""Lines of a long block of program output (a stack trace, a log) a commit keeps: the error,
not every frame."""


@dataclass(frozen=True)
class CommitFilter:
    """Which kinds of noise to keep anyway (all off by default)."""

    merges: bool = False
    bots: bool = False
    trivial: bool = False

    def excludes(self, c: Commit) -> Noise | None:
        """Why ``c`` is left out, or None when it is kept. A revert is always kept: it
        supersedes the commit it reverts."""
        if c.reverts:
            return None
        reason = noise(c)
        if reason == "merge" and self.merges:
            return None
        if reason == "bot" and self.bots:
            return None
        if reason == "trivial" and self.trivial:
            return None
        return reason


def noise(c: Commit) -> Noise | None:
    """What kind of noise a commit is, if any."""
    subject = " ".join(c.subject.split())
    if c.is_merge or _MERGE_SUBJECT.match(subject):
        return "merge"
    who = f"{c.author} <{c.email}>"
    if _AUTOMATION.search(who):
        return "bot"
    if _BOT.search(who) and (_UPKEEP.search(subject) or not meaningful_body(c.body).strip()):
        return "bot"  # an app's own upkeep; a coding agent's explained change is kept
    if is_trivial(subject, c.body):
        return "trivial"
    return None


def is_trivial(subject: str, body: str) -> bool:
    """A subject that says nothing (or two words or fewer) and a body with nothing in it."""
    if meaningful_body(body):
        return False
    if _FIXUP.match(subject):
        return True
    rest = _CONVENTIONAL.sub("", subject).strip()
    if not rest or _TRIVIAL_SUBJECT.match(rest):
        return True
    words = re.findall(r"[A-Za-z0-9][\w.'/-]*", rest)
    return len(words) <= 2


def meaningful_body(body: str) -> str:
    """A commit body without trailers, checklists, HTML comments, tracker links, empty
    headings (or headings over only "None"), runs of blank lines, and the tail of a long block
    of program output."""
    text = _IMAGE.sub("", _HTML_TAG.sub("", _HTML_COMMENT.sub("", body or "")))
    lines: list[str] = []
    checklist = 0  # the level of the checklist heading being skipped (0: none)
    for line in text.splitlines():
        s = line.rstrip()
        heading = re.match(r"^\s{0,3}(#{1,6})\s", s)
        if heading and checklist and len(heading.group(1)) <= checklist:
            checklist = 0
        if (listed := _CHECKLIST_HEADING.match(s)) is not None:
            checklist = len(listed.group(1))
        if checklist:
            continue
        if _TRAILER.match(s.strip()) or _CHECKBOX.match(s):
            continue
        if _LINK_ONLY.match(s) or _SESSION.match(s) or _LABELLED_LINK.match(s):
            continue
        lines.append(s)
    lines = _without_nothing(_short_output(lines))
    kept: list[str] = []
    for i, line in enumerate(lines):
        if _HEADING.match(line):
            following = next((n for n in lines[i + 1 :] if n.strip()), "")
            if not following or _HEADING.match(following):
                continue  # a template heading with nothing under it
        if not line.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _without_nothing(lines: list[str]) -> list[str]:
    """Without a "None" (or "N/A", "-") that is all a heading has under it."""
    out: list[str] = []
    for i, line in enumerate(lines):
        if _NOTHING.match(line):
            before = next((n for n in reversed(out) if n.strip()), "")
            after = next((n for n in lines[i + 1 :] if n.strip()), "")
            if _HEADING.match(before) and (not after or _HEADING.match(after)):
                continue
        out.append(line)
    return out


def _short_output(lines: list[str]) -> list[str]:
    """Each fenced block of program output (:data:`storage.passages.OUTPUT_FENCES`: no
    language, ``text``, ``console``, ``log``…) longer than :data:`OUTPUT_LINES_KEPT` lines cut
    to its first lines and how many followed; code blocks are kept whole."""
    out: list[str] = []
    inner: list[str] | None = None  # the lines of the block of output being read
    fence: Fence | None = None
    for line in lines:
        fence, is_fence = fence_step(line, fence)
        if inner is not None:
            if is_fence and fence is None:  # the block's closing fence
                out += _cut(inner)
                out.append(line)
                inner = None
            else:
                inner.append(line)
            continue
        out.append(line)
        if is_fence and fence is not None and fence[2] in OUTPUT_FENCES:
            inner = []
    return out + _cut(inner) if inner is not None else out


def _cut(inner: list[str]) -> list[str]:
    if len(inner) <= OUTPUT_LINES_KEPT + 1:
        return inner
    return [*inner[:OUTPUT_LINES_KEPT], f"… ({len(inner) - OUTPUT_LINES_KEPT} more lines)"]
