"""Pieces: the items of a rule section, searched on their own.

A rule section is one memory: it is quoted, tied to files and shown as a whole. But one of its
items (a bullet, a paragraph) may be all that answers a question, and in the whole text that
item's words weigh little in a keyword score and its meaning is averaged away in a single
embedding. So each such memory is also stored as pieces — its items, each with the section's
heading in front — with their own keyword rows and vectors. A piece is never a result: search
counts its hit for the memory it came from.

Pieces are derived from the memory's text and rebuilt by :func:`sync` whenever it changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from storage import db as dbmod
from storage.embeddings import to_blob
from storage.rows import bump
from storage.text import fts_or, fts_terms, identifier_terms

if TYPE_CHECKING:
    from storage.store_view import StoreWithVectors


class SqlFilter(Protocol):
    """What a search's filter gives the pieces: a WHERE fragment over their memories."""

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]: ...


SOURCES = ("rules",)
"""Memories cut into pieces: rule sections, lists of rules each of which stands alone. A
decision record is one argument (context, options, decision, consequences) read as a whole;
its pieces, tried on gryag, outranked the record a question was about with another one."""
MIN_ITEMS = 2
"""A memory with fewer items than this is its own piece (none are stored)."""
MIN_ITEM_CHARS = 40
"""A shorter item (a label such as "Evidence:", a one-word line) joins the item after it."""
MAX_PIECE_CHARS = 1_000
"""A piece's length limit, about what the embedding model reads."""

_MARKER = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class PieceHit:
    """A piece that matched: the memory it belongs to, its text and its score."""

    piece_id: int
    memory_id: int
    text: str
    score: float


def _items(body: list[str]) -> list[str]:
    """Top-level items of a memory's body: list items with their continuation lines, and
    paragraphs (a blank line, a heading or an unindented line after a list item ends one)."""
    items: list[list[str]] = []
    listed = False  # the current item is a list item
    base: int | None = None
    fresh = True
    fence = False
    for line in body:
        if fence or _FENCE.match(line):  # a code block belongs to the item it follows
            if _FENCE.match(line):
                fence = not fence
            if items:
                items[-1].append(line.strip())
            else:
                items.append([line.strip()])
            fresh = False
            continue
        if not line.strip():
            fresh = True
            continue
        m = _MARKER.match(line)
        indent = len(line) - len(line.lstrip())
        if m and base is None:
            base = len(m.group(1))
        top_marker = m is not None and base is not None and len(m.group(1)) <= base
        after_list = m is None and indent == 0 and listed
        if fresh or top_marker or after_list or _HEADING.match(line) or not items:
            items.append([line.strip()])
            listed = top_marker
        else:
            items[-1].append(line.strip())
        fresh = False
    return [" ".join(x) for x in items]


def split(text: str) -> list[str]:
    """The pieces of a memory's text: each item after its first line (the heading), with the
    heading in front; short items are joined to the next. Empty when there are fewer than
    :data:`MIN_ITEMS` items."""
    lines = text.strip().splitlines()
    if len(lines) < 2:
        return []
    if _MARKER.match(lines[0]):  # a section without a heading
        heading, body = "", lines
    else:
        heading, body = _HEADING.sub("", lines[0]).strip(), lines[1:]
    merged: list[str] = []
    carry = ""
    for item in _items(body):
        item = f"{carry} {item}".strip() if carry else item
        if len(item) < MIN_ITEM_CHARS:
            carry = item
            continue
        carry = ""
        merged.append(item)
    if carry:
        if merged:
            merged[-1] = f"{merged[-1]} {carry}"
        else:
            merged.append(carry)
    if len(merged) < MIN_ITEMS:
        return []
    return [(f"{heading}: {item}" if heading else item)[:MAX_PIECE_CHARS] for item in merged]


def sync(conn: Any) -> int:
    """Bring the pieces in step with the memories of :data:`SOURCES` (new, changed, gone);
    returns how many memories were cut again. The caller embeds what is new
    (:func:`embed_pending`)."""
    wanted: dict[int, list[str]] = {}
    rows = conn.execute(
        "SELECT id, text FROM memories WHERE source IN (SELECT value FROM json_each(?))",
        (json.dumps(SOURCES),),
    )
    for mid, text in rows:
        wanted[int(mid)] = split(text)
    have: dict[int, list[str]] = {}
    for mid, text in conn.execute(
        "SELECT memory_id, text FROM memory_pieces ORDER BY memory_id, ord"
    ):
        have.setdefault(int(mid), []).append(text)
    changed = [mid for mid, pieces in wanted.items() if have.get(mid, []) != pieces]
    gone = [mid for mid in have if mid not in wanted]
    # keyword rows left by pieces whose memory was purged (the pieces went with it)
    orphans = conn.execute("SELECT count(*) FROM memory_pieces_fts").get != sum(
        len(v) for v in have.values()
    )
    if not changed and not gone and not orphans:
        return 0
    with dbmod.immediate(conn):
        for mid in (*changed, *gone):
            conn.execute(
                "DELETE FROM memory_pieces_fts WHERE rowid IN "
                "(SELECT id FROM memory_pieces WHERE memory_id = ?)",
                (mid,),
            )
            conn.execute("DELETE FROM memory_pieces WHERE memory_id = ?", (mid,))
        written: list[tuple[int, str]] = []
        for mid in changed:
            for ord_, piece in enumerate(wanted[mid]):
                pid = conn.execute(
                    "INSERT INTO memory_pieces(memory_id, ord, text) VALUES (?, ?, ?) RETURNING id",
                    (mid, ord_, piece),
                ).fetchone()[0]
                written.append((int(pid), piece))
        conn.executemany(
            "INSERT INTO memory_pieces_fts(rowid, text, terms) VALUES (?, ?, ?)",
            [(pid, piece, identifier_terms(piece)) for pid, piece in written],
        )
        conn.execute(
            "DELETE FROM memory_pieces_fts WHERE rowid NOT IN (SELECT id FROM memory_pieces)"
        )
        bump(conn)
    return len(changed) + len(gone)


def embed_pending(
    store: StoreWithVectors,
    *,
    batch: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed the pieces that have no vector from the store's model."""
    emb = store.embedder
    if emb is None:
        return 0
    conn = store.conn
    total = conn.execute(
        "SELECT count(*) FROM memory_pieces WHERE model_id IS NOT ?", (emb.model_id,)
    ).get
    done = 0
    while True:
        rows = list(
            conn.execute(
                "SELECT id, text FROM memory_pieces WHERE model_id IS NOT ? ORDER BY id LIMIT ?",
                (emb.model_id, batch),
            )
        )
        if not rows:
            break
        vecs = emb.embed([r[1] for r in rows])
        with dbmod.immediate(conn):
            conn.executemany(
                "UPDATE memory_pieces SET embedding = ?, model_id = ? WHERE id = ?",
                [(to_blob(v), emb.model_id, pid) for (pid, _), v in zip(rows, vecs)],
            )
            bump(conn)
        done += len(rows)
        if progress:
            progress(done, total)
    return done


def keyword(conn: Any, query: str, filters: SqlFilter, k: int) -> list[PieceHit]:
    """Pieces by bm25 (higher is better) over their text and identifier terms, of memories
    that pass ``filters``, best first."""
    match = fts_or(fts_terms(query))
    if match is None:
        return []
    where, params = filters.sql("m")
    rows = conn.execute(
        "WITH hits AS MATERIALIZED (SELECT rowid AS id, -bm25(memory_pieces_fts, 1.0, 0.5) AS s "
        "FROM memory_pieces_fts WHERE memory_pieces_fts MATCH ?) "
        "SELECT p.id, p.memory_id, p.text, h.s FROM hits h JOIN memory_pieces p ON p.id = h.id "
        f"JOIN memories m ON m.id = p.memory_id WHERE {where} ORDER BY h.s DESC, p.id LIMIT ?",
        [match, *params, int(k)],
    )
    return [PieceHit(int(r[0]), int(r[1]), r[2], float(r[3])) for r in rows]


def vector(
    conn: Any, model_id: str, query_vector: np.ndarray, filters: SqlFilter, k: int
) -> list[PieceHit]:
    """Pieces by cosine similarity to ``query_vector`` (exact: they are few), of memories that
    pass ``filters``, best first."""
    where, params = filters.sql("m")
    rows = list(
        conn.execute(
            "SELECT p.id, p.memory_id, p.text, p.embedding FROM memory_pieces p "
            f"JOIN memories m ON m.id = p.memory_id WHERE p.model_id = ? AND {where}",
            [model_id, *params],
        )
    )
    if not rows:
        return []
    mat = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), -1)
    sims = mat @ np.asarray(query_vector, dtype=np.float32)
    top = np.argsort(-sims, kind="stable")[:k]
    return [PieceHit(int(rows[i][0]), int(rows[i][1]), rows[i][2], float(sims[i])) for i in top]


def of_memory(conn: Any, memory_id: int) -> list[str]:
    """A memory's pieces in order."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT text FROM memory_pieces WHERE memory_id = ? ORDER BY ord", (memory_id,)
        )
    ]


def count(conn: Any, ids: Sequence[int] | None = None) -> int:
    """How many pieces are stored (of the memories ``ids``)."""
    if ids is None:
        return int(conn.execute("SELECT count(*) FROM memory_pieces").get)
    return int(
        conn.execute(
            "SELECT count(*) FROM memory_pieces WHERE memory_id IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps([int(i) for i in ids]),),
        ).get
    )


@dataclass
class PieceLists:
    """What a piece search ranked: by bm25 (scaled by the best, so 1.0 is the top) and by
    cosine similarity, each best first."""

    keyword: list[PieceHit]
    vector: list[PieceHit]


def search(
    store: StoreWithVectors,
    query: str,
    *,
    filters: SqlFilter,
    k: int,
    query_vector: np.ndarray | None = None,
    keywords: bool = True,
) -> PieceLists:
    """The pieces of memories that pass ``filters`` best matching ``query`` by words (unless
    ``keywords`` is off) and by ``query_vector``."""
    conn = store.conn
    kw = keyword(conn, query, filters, k) if keywords else []
    top = max((h.score for h in kw), default=0.0) or 1.0
    kw = [PieceHit(h.piece_id, h.memory_id, h.text, h.score / top) for h in kw]
    vec: list[PieceHit] = []
    emb = store.embedder
    if query_vector is not None and emb is not None:
        vec = vector(conn, emb.model_id, query_vector, filters, k)
    return PieceLists(kw, vec)
