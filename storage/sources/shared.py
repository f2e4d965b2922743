"""The team's shared folder: one Markdown file per memory, with front matter.

A file looks like this (the keys in this order; empty ones left out)::

    ---
    id: 3f9a1c2e
    kind: decision
    status: approved
    created: 2026-11-20T10:00:00Z
    valid_from: 2026-11-20T10:00:00Z
    valid_to: 2026-12-01T00:00:00Z
    anchors:
      - file:src/db.py
    supersedes:
      - 0b7d4e11
    provenance:
      source: chat:cursor
      conversation: Moving the event store to Postgres
      artifacts:
        - commit:1f2e3d4c5b
    ---

    # Decision: use Postgres for the event store

    The memory's text, as it is served.

The heading is a title for people; the text is everything after it. Reading is strict: a
file that does not parse is skipped with its path and reason (merge conflict markers, no or bad
front matter, binary, not UTF-8, too large), and nothing else is lost. Writing is
deterministic, so writing the same memories again gives the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from storage.models import Anchor, Kind, Review
from storage.redact import redact
from storage.sources.records import SkipLog
from storage.sources.rules import read_file_bytes
from storage.text import parse_instant

SOURCE = "shared"
DEFAULT_FOLDER = ".living-memory/shared"
MAX_FILE_BYTES = 1_000_000
"""A memory file is a few hundred bytes; anything above this is skipped as ``too large``."""
README = "README.md"
FOLDERS = {
    Kind.DECISION: "decisions",
    Kind.CONVENTION: "conventions",
    Kind.SOLUTION: "solutions",
    Kind.WORKFLOW: "workflows",
    Kind.PATTERN: "patterns",
    Kind.PREFERENCE: "preferences",
    Kind.FACT: "facts",
}
TITLE_CHARS = 72
SLUG_CHARS = 48
_ID = re.compile(r"^[0-9a-z]{6,32}$")
_KEY = re.compile(r"^([a-z_]+):(?: (.*))?$")
_CONFLICT = re.compile(r"^(<{7}|>{7})(?: |$)|^\|{7}(?: |$)", re.M)

README_TEXT = """# Shared project memory

Each file here is one piece of this project's durable knowledge (a decision, convention,
solution, workflow, pattern or preference) that a teammate approved for sharing. Living Memory
reads them into every clone's local memory (`living-memory ingest`) and serves them in the
context of the files they concern.

- Edit a file to correct it: the next ingest keeps the old text as superseded history.
- Delete a file to retire it: the memory is archived (forgetting never destroys).
- Add memories with `living-memory review` and `living-memory share`, then commit.

The front matter (`id`, `kind`, `status`, times, `anchors`, `supersedes`, `provenance`) is read
back; keep `id` unchanged. Who shared a file and when is taken from git.
"""


@dataclass(frozen=True)
class SharedRecord:
    """One file's memory, as written and read."""

    sid: str
    kind: Kind
    text: str
    created: float
    valid_from: float
    valid_to: float | None = None
    review: Review = Review.APPROVED
    anchors: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    source: str | None = None  # where the knowledge came from first (chat:cursor, editor …)
    conversation: str | None = None  # the title of the chat it was learned in
    artifacts: tuple[str, ...] = ()  # TYPE:REF
    title: str | None = None


@dataclass(frozen=True)
class SharedFileText:
    """A file read from the folder: its path (relative, forward slashes), bytes, record."""

    path: str
    fingerprint: str
    record: SharedRecord


def fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def short_id(text: str) -> str:
    """A stable short id for a new lineage, from its first text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = ""
    for w in words:
        if len(out) + len(w) + 1 > SLUG_CHARS:
            break
        out = f"{out}-{w}" if out else w
    return out or "memory"


def title_of(text: str) -> str:
    """The first line of ``text``, cut at a word to :data:`TITLE_CHARS` characters."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = first.lstrip("#").strip()
    sentence = re.match(r"(.+?[.!?])\s", first + " ")
    if sentence and len(sentence.group(1)) >= 12:
        first = sentence.group(1)
    if len(first) > TITLE_CHARS and 12 <= first.find(": ") < TITLE_CHARS:
        first = first[: first.find(": ")]
    if len(first) <= TITLE_CHARS:
        return first.rstrip(".:") or first or "Memory"
    cut = first[: TITLE_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:.")
    return (cut or first[: TITLE_CHARS - 1]) + "…"


def path_for(kind: Kind, title: str, sid: str) -> str:
    return f"{FOLDERS.get(kind, kind.value + 's')}/{slug(title)}-{sid}.md"


# ---- writing ---------------------------------------------------------------------------------


def _time(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _scalar(value: str) -> str:
    """A YAML scalar: plain when it reads back unchanged, else double-quoted (JSON escapes)."""
    plain = re.fullmatch(r"[A-Za-z0-9_./+\-][A-Za-z0-9_ ./@+\-:()\[\]*?,]*", value)
    if plain and not value.endswith((" ", ":")) and ": " not in value and " #" not in value:
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    escaped = escaped.replace("\t", "\\t").replace("\r", "\\r")
    return f'"{escaped}"'


def render(r: SharedRecord) -> bytes:
    """The file's bytes; secrets in any field are redacted."""
    lines = [
        "---",
        f"id: {r.sid}",
        f"kind: {r.kind.value}",
        f"status: {r.review.value}",
        f"created: {_time(r.created)}",
        f"valid_from: {_time(r.valid_from)}",
    ]
    if r.valid_to is not None:
        lines.append(f"valid_to: {_time(r.valid_to)}")
    for key, values in (("anchors", r.anchors), ("supersedes", r.supersedes)):
        if values:
            lines.append(f"{key}:")
            lines += [f"  - {_scalar(redact(v))}" for v in values]
    if r.source or r.artifacts or r.conversation:
        lines.append("provenance:")
        if r.source:
            lines.append(f"  source: {_scalar(redact(r.source))}")
        if r.conversation:
            lines.append(f"  conversation: {_scalar(redact(r.conversation))}")
        if r.artifacts:
            lines.append("  artifacts:")
            lines += [f"    - {_scalar(redact(a))}" for a in r.artifacts]
    text = redact(r.text).strip()
    title = redact(r.title or title_of(text))
    lines += ["---", "", f"# {title}", "", text, ""]
    return "\n".join(lines).encode("utf-8")


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---- reading ---------------------------------------------------------------------------------


class BadFile(ValueError):
    """Why a file cannot be read as a memory (the skip reason)."""


def _unquote(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        out, i, body = [], 0, raw[1:-1]
        escapes = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
        while i < len(body):
            c = body[i]
            if c == "\\" and i + 1 < len(body):
                out.append(escapes.get(body[i + 1], body[i + 1]))
                i += 2
                continue
            out.append(c)
            i += 1
        return "".join(out)
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def _front_matter(lines: list[str]) -> dict[str, str | list[str] | dict[str, str | list[str]]]:
    """Top-level ``key: value``, ``key:`` with a ``  - item`` list, or ``key:`` with a map of
    ``  sub: value`` / ``  sub:`` + ``    - item`` entries."""
    out: dict[str, str | list[str] | dict[str, str | list[str]]] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        m = _KEY.match(line)
        if m is None:
            raise BadFile(f"bad front matter line {i + 2}: {line[:60]!r}")
        key, value = m.group(1), m.group(2)
        i += 1
        if value is not None and value.strip():
            out[key] = _unquote(value)
            continue
        items: list[str] = []
        sub: dict[str, str | list[str]] = {}
        while i < len(lines) and (lines[i].startswith("  ") or not lines[i].strip()):
            inner = lines[i]
            if not inner.strip():
                i += 1
                continue
            if inner.startswith("  - "):
                items.append(_unquote(inner[4:]))
                i += 1
                continue
            sm = _KEY.match(inner[2:])
            if sm is None or inner.startswith("   "):
                raise BadFile(f"bad front matter line {i + 2}: {inner[:60]!r}")
            skey, sval = sm.group(1), sm.group(2)
            i += 1
            if sval is not None and sval.strip():
                sub[skey] = _unquote(sval)
                continue
            subitems = []
            while i < len(lines) and lines[i].startswith("    - "):
                subitems.append(_unquote(lines[i][6:]))
                i += 1
            sub[skey] = subitems
        if items and sub:
            raise BadFile(f"front matter key {key!r} mixes a list and a map")
        out[key] = sub if sub else items
    return out


def _str(fields: dict, key: str, *, required: bool = False) -> str | None:  # type: ignore[type-arg]
    value = fields.get(key)
    if value is None or value == "" or value == [] or value == "null":
        if required:
            raise BadFile(f"front matter lacks {key!r}")
        return None
    if not isinstance(value, str):
        raise BadFile(f"front matter {key!r} must be a single value")
    return value


def _list(fields: dict, key: str) -> tuple[str, ...]:  # type: ignore[type-arg]
    value = fields.get(key)
    if value is None or value == "" or value == "[]":
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise BadFile(f"front matter {key!r} must be a list")
    return tuple(v for v in value if v)


def _when(fields: dict, key: str) -> float | None:  # type: ignore[type-arg]
    raw = _str(fields, key)
    if raw is None:
        return None
    at = parse_instant(raw)
    if at is None:
        raise BadFile(f"front matter {key!r} is not a time: {raw[:40]!r}")
    return at


def parse(text: str) -> SharedRecord:
    """The record of a file's text; :class:`BadFile` says why it is not one."""
    if _CONFLICT.search(text):
        raise BadFile("merge conflict markers")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise BadFile("no front matter")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise BadFile("front matter is not closed") from None
    fields = _front_matter(lines[1:end])
    sid = _str(fields, "id", required=True)
    assert sid is not None
    if not _ID.match(sid):
        raise BadFile(f"front matter 'id' must be 6-32 lower-case letters or digits: {sid[:40]!r}")
    kind_raw = _str(fields, "kind", required=True)
    try:
        kind = Kind(kind_raw)
    except ValueError:
        raise BadFile(f"front matter 'kind' {kind_raw!r} is not a kind") from None
    status = _str(fields, "status") or "approved"
    if status not in (Review.APPROVED.value, Review.PROPOSED.value):
        raise BadFile(f"front matter 'status' {status!r} is not approved or proposed")
    anchors = _list(fields, "anchors")
    for a in anchors:
        try:
            Anchor.parse(a)
        except ValueError as e:
            raise BadFile(f"front matter anchor {a[:40]!r}: {e}") from None
    supersedes = _list(fields, "supersedes")
    for s in supersedes:
        if not _ID.match(s):
            raise BadFile(f"front matter 'supersedes' names a bad id {s[:40]!r}")
    provenance = fields.get("provenance") or {}
    if not isinstance(provenance, dict):
        raise BadFile("front matter 'provenance' must be a map")
    body = [line.rstrip() for line in lines[end + 1 :]]
    while body and not body[0].strip():
        body.pop(0)
    title = None
    if body and body[0].startswith("# "):
        title = body.pop(0)[2:].strip()
    text_out = "\n".join(body).strip() or (title or "")
    if not text_out:
        raise BadFile("no text")
    created = _when(fields, "created")
    valid_from = _when(fields, "valid_from")
    at = created if created is not None else valid_from
    if at is None:
        raise BadFile("front matter lacks 'created'")
    return SharedRecord(
        sid=sid,
        kind=kind,
        text=text_out,
        created=at,
        valid_from=valid_from if valid_from is not None else at,
        valid_to=_when(fields, "valid_to"),
        review=Review(status),
        anchors=anchors,
        supersedes=supersedes,
        source=_str(provenance, "source"),
        conversation=_str(provenance, "conversation"),
        artifacts=_list(provenance, "artifacts"),
        title=title,
    )


def read_folder(folder: Path, skips: SkipLog) -> Iterator[SharedFileText]:
    """Every memory file under ``folder`` (sorted by path); what cannot be read is skipped
    with its path and reason. The folder's README and hidden files are not memories."""
    if not folder.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        base = Path(dirpath)
        for name in sorted(filenames):
            full = base / name
            rel = full.relative_to(folder).as_posix()
            if name.startswith(".") or rel == README or not name.endswith(".md"):
                continue
            data = _read(full, rel, skips)
            if data is None:
                continue
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                skips.skip(SOURCE, rel, "invalid UTF-8")
                continue
            try:
                record = parse(text.replace("\r\n", "\n").replace("\r", "\n"))
            except BadFile as e:
                skips.skip(SOURCE, rel, str(e))
                continue
            yield SharedFileText(rel, fingerprint(data), record)


def _read(full: Path, rel: str, skips: SkipLog) -> bytes | None:
    return read_file_bytes(
        full, source=SOURCE, where=rel, skips=skips, limit=MAX_FILE_BYTES, follow_links=False
    )


def file_fingerprint(path: Path) -> str | None:
    """The fingerprint of a file's bytes, or None when it does not exist (or is unreadable)."""
    try:
        return fingerprint(path.read_bytes())
    except OSError:
        return None


@dataclass(frozen=True)
class Author:
    name: str
    email: str
    at: float
    commit: str


def last_author(root: Path, path: str) -> Author | None:
    """Who made the last commit that changed ``path`` (relative to ``root``), and when; None
    when git does not know the file (not committed yet, or not a repository)."""
    from storage.sources.git import _out

    out = _out(root, "log", "-1", "--format=%H%x00%aN%x00%aE%x00%at", "--", path)
    if not out:
        return None
    parts = out.split("\x00")
    if len(parts) != 4 or not parts[3].isdigit():
        return None
    return Author(parts[1], parts[2], float(parts[3]), parts[0])


def ignored_by_git(folder: Path, rel: str) -> bool:
    """Whether git ignores the file ``rel`` of ``folder`` (a commit would leave it out)."""
    from storage.sources.git import _git

    try:
        return _git(folder, "check-ignore", "-q", "--", rel).returncode == 0
    except OSError:
        return False
