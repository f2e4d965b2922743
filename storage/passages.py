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

from storage.text import identifier_terms

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
