"""Passages: a conversation message cut into pieces a search can rank and an embedding can see.

A long message (an assistant's answer with code, a pasted log) is one unit to a reader but too
long for a keyword score or a 256-token embedding to judge. Each message is stored whole and
also as passages of at most :data:`MAX_CHARS` characters, cut at paragraph, then line, then word
boundaries; passages are derived from the message text and rebuilt whenever it changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from storage.text import identifier_terms, is_tool_output

MAX_CHARS = 1_000
"""A passage's length limit: about what the embedding model reads (256 tokens)."""
MIN_CHARS = 200
"""A shorter tail is joined to the passage before it."""

_PARA = re.compile(r"\n\s*\n")
_BLOB = re.compile(r"[A-Za-z0-9+/=_-]{120,}")
_WORDS = re.compile(r"[A-Za-z]{3,}")
_LOG_LINE = re.compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d|"
    r"\[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\b)"
)
LONG_LINE = 400
_LETTERS = re.compile(r"[^\W\d_]{2,}")  # a word in any script
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)")
OUTPUT_FENCES = frozenset({"", "text", "txt", "plaintext", "console", "output", "log", "logs"})
"""Info strings of a fenced block that holds what a program printed rather than code: chat
exports (SpecStory, Cursor) fence terminal output and tool results without a language."""


def _pieces(text: str, limit: int) -> list[tuple[int, int]]:
    """(start, end) spans of ``text`` no longer than ``limit``, cut at the best boundary."""
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        if n - start <= limit:
            spans.append((start, n))
            break
        window = text[start : start + limit]
        cut = -1
        for pattern in ("\n\n", "\n", ". ", " "):
            at = window.rfind(pattern)
            if at >= limit // 3:
                cut = at + len(pattern)
                break
        if cut <= 0:
            cut = limit
        spans.append((start, start + cut))
        start += cut
    return spans


def split(text: str, limit: int = MAX_CHARS) -> list[tuple[int, str]]:
    """(offset, passage) pieces of ``text`` in order; short texts are one passage."""
    if len(text) <= limit:
        return [(0, text)] if text.strip() else []
    out: list[tuple[int, str]] = []
    for s, e in _pieces(text, limit):
        piece = text[s:e].strip()
        if not piece:
            continue
        if out and len(piece) < MIN_CHARS and len(out[-1][1]) + len(piece) + 1 <= limit * 1.3:
            out[-1] = (out[-1][0], out[-1][1] + "\n" + piece)
        else:
            out.append((s + (len(text[s:e]) - len(text[s:e].lstrip())), piece))
    return out


def write(
    conn: Any, session_id: int, message_id: int, text: str, *, new: bool = False
) -> list[tuple[int, str]]:
    """Replace a message's passages (inside the caller's transaction); returns (id, text) of
    each, which the caller gives :func:`index` after its other writes. ``new``: the message
    has no passages yet (just inserted), so none are looked for.

    An FTS5 table flushes its pending inserts into a new segment whenever another statement
    of the transaction runs; indexed message by message, between the rows' inserts, a large
    ingestion left one small segment per message to merge and slowed down as it grew (18.7 ms
    a message at 58k passages, 0.4 ms indexed after the rows)."""
    if not new:
        delete(conn, message_id)
    out: list[tuple[int, str]] = []
    for ord_, (start, piece) in enumerate(split(text)):
        pid = conn.execute(
            "INSERT INTO passages(message_id, session_id, ord, start, text) "
            "VALUES (?, ?, ?, ?, ?) RETURNING id",
            (message_id, session_id, ord_, start, piece),
        ).fetchone()[0]
        out.append((pid, piece))
    return out


def index(conn: Any, written: Sequence[tuple[int, str]]) -> None:
    """Add passages (:func:`write`'s answer) to the keyword index, in one statement."""
    conn.executemany(
        "INSERT INTO passages_fts(rowid, text, terms) VALUES (?, ?, ?)",
        [(pid, piece, identifier_terms(piece)) for pid, piece in written],
    )


def texts(conn: Any, ids: Sequence[int]) -> dict[int, str]:
    """Passage id → its text."""
    rows = conn.execute(
        "SELECT id, text FROM passages WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps([int(i) for i in ids]),),
    )
    return {pid: text for pid, text in rows}


def delete(conn: Any, message_id: int) -> None:
    conn.execute(
        "DELETE FROM passages_fts WHERE rowid IN (SELECT id FROM passages WHERE message_id = ?)",
        (message_id,),
    )
    conn.execute("DELETE FROM passages WHERE message_id = ?", (message_id,))


def missing(conn: Any, limit: int = 500) -> list[tuple[int, int, str]]:
    """(message id, session id, text) of messages that have no passages yet (older stores)."""
    return list(
        conn.execute(
            "SELECT m.id, m.session_id, m.text FROM messages m WHERE NOT EXISTS "
            "(SELECT 1 FROM passages p WHERE p.message_id = m.id) ORDER BY m.id LIMIT ?",
            (limit,),
        )
    )


def worth_a_vector(text: str) -> bool:
    """Whether a passage says something an embedding can place: not an encoded blob (base64,
    hashes), minified code, a dump with hardly a word in it, or a run of log lines. Such a
    passage stays searchable by keyword; a vector of it would only match other noise."""
    n = len(text)
    if n < 200:
        return True
    if sum(len(m) for m in _BLOB.findall(text)) > n / 2:
        return False
    lines = text.splitlines() or [text]
    minified = sum(len(x) for x in lines if len(x) > LONG_LINE and x.count(" ") < len(x) / 20)
    if minified > n / 2:
        return False
    if sum(len(w) for w in _WORDS.findall(text)) < n / 5:
        return False
    filled = [x for x in lines if x.strip()]
    logged = sum(1 for x in filled if _LOG_LINE.match(x))
    return not (len(filled) >= 5 and logged >= 0.8 * len(filled))


Fence = tuple[int, str, str]
"""An open fenced block: the opening line's indent, its marker (```` ``` ````, ``~~~``, longer
runs), its info string (lowercase language; empty when untyped)."""


def fence_step(line: str, fence: Fence | None) -> tuple[Fence | None, bool]:
    """The fence open after ``line`` given the one open before it; whether the line is a fence.
    A closing fence is indented no deeper than its opener, as long a run of the same marker,
    and nothing after it: a diff of a Markdown file shows its fences indented, inside."""
    m = _FENCE.match(line)
    if m is None:
        return fence, False
    indent, marker, info = len(m.group(1)), m.group(2), m.group(3)
    if fence is None:
        return (indent, marker, info.lower()), True
    if (
        indent <= fence[0]
        and marker[0] == fence[1][0]
        and len(marker) >= len(fence[1])
        and not line.strip()[len(marker) :].strip()
    ):
        return None, True
    return fence, False


def fences_at(text: str, offsets: Sequence[int]) -> list[Fence | None]:
    """The fenced block open at each of ``offsets`` (ascending) of a message, read once."""
    out: list[Fence | None] = []
    fence: Fence | None = None
    pos = 0
    for offset in offsets:
        while pos < offset:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            if end >= offset:  # a passage starts mid-line only after a word cut: same block
                break
            fence, _ = fence_step(text[pos:end], fence)
            pos = end + 1
        out.append(fence)
    return out


def said(text: str, fence: Fence | None = None) -> str:
    """A passage without what a program printed in it — fenced blocks of output
    (:data:`OUTPUT_FENCES`), lines of tool output (tables, stack frames, linter and test
    reports, path lists) and log lines. ``fence``: the block open where the passage starts
    (:func:`fences_at`)."""
    kept: list[str] = []
    for line in text.split("\n"):
        fence, is_fence = fence_step(line, fence)
        if is_fence or (fence is not None and fence[2] in OUTPUT_FENCES):
            continue
        if is_tool_output(line) or _LOG_LINE.match(line):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def model_text(text: str, fence: Fence | None = None) -> str | None:
    """What of a passage the embedding model reads: all of it when anything but program
    output is left in it (:func:`said`, a word in any script), else nothing — a passage that
    is only what a program printed gets no vector and is found by keyword. Keyword search
    reads the whole passage either way."""
    return text if _LETTERS.search(said(text, fence)) else None


def model_texts(conn: Any, rows: Sequence[tuple[int, str, int, int]]) -> dict[int, str]:
    """Passage id → what the model reads of it (:func:`model_text`; empty: only program
    output, or nothing worth a vector, :func:`worth_a_vector`) for ``rows`` of (id, text,
    message id, start offset); the messages that passages continue are read once each, to
    know the block open at each start."""
    starts: dict[int, list[int]] = {}
    for _, _, message_id, start in rows:
        if start > 0:
            starts.setdefault(message_id, []).append(start)
    open_at: dict[tuple[int, int], Fence | None] = {}
    if starts:
        found = conn.execute(
            "SELECT id, text FROM messages WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(starts)),),
        )
        for message_id, message in found:
            offsets = sorted(set(starts[message_id]))
            for offset, fence in zip(offsets, fences_at(message, offsets)):
                open_at[(message_id, offset)] = fence
    out: dict[int, str] = {}
    for pid, text, message_id, start in rows:
        readable = model_text(text, open_at.get((message_id, start)))
        out[pid] = readable if readable is not None and worth_a_vector(readable) else ""
    return out
