"""Row-level helpers shared by the store's parts: validation, the write generation, FTS rows."""

from __future__ import annotations

import enum
import json
import math
import time
from collections.abc import Iterable
from typing import Any, TypeVar

import apsw
import numpy as np

from storage.embeddings import Embedder, to_blob
from storage.errors import InvalidInput, NotFound
from storage.models import Anchor, AnchorType, Artifact, clip_anchor_value
from storage.redact import redact, redact_value
from storage.text import identifier_terms

MAX_TEXT_CHARS = 200_000

_E = TypeVar("_E", bound=enum.Enum)


def choice(cls: type[_E], value: Any, what: str) -> _E:
    """``cls(value)``, or an InvalidInput naming the allowed values."""
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(str(m.value) for m in cls)
        raise InvalidInput(f"unknown {what} {value!r}; use one of {allowed}") from None


def now() -> float:
    return time.time()


def validate_text(value: object, name: str = "text") -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if "\x00" in value:
        raise InvalidInput(f"{name} contains NUL bytes (binary content?)")
    if not value.strip():
        raise InvalidInput(f"{name} is empty")
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidInput(f"{name} is {len(value)} characters; the limit is {MAX_TEXT_CHARS}")
    return value


def unit(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"{name} must be a number between 0 and 1") from e
    if not 0.0 <= v <= 1.0:
        raise InvalidInput(f"{name} must be between 0 and 1, not {value}")
    return v


def optional_text(value: str | None, name: str) -> str | None:
    """A redacted optional level (summary …); None or blank means: not filled."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return redact(validate_text(value, name))


def parse_time(value: Any, name: str, default: float | None) -> float | None:
    if value is None:
        return default
    try:
        v = float(value)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"{name} must be a number, not {value!r}") from e
    if not math.isfinite(v):
        raise InvalidInput(f"{name} must be a finite number, not {value!r}")
    return v


def metadata_json(value: Any, name: str = "metadata") -> str:
    """Redacted JSON text of a metadata dict."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{name} must be a dict, not {type(value).__name__}")
    try:
        return json.dumps(redact_value(value), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"{name} is not JSON-serialisable: {e}") from e


def clean_anchors(anchors: Iterable[Any]) -> list[Anchor]:
    """Validated, stripped, redacted, de-duplicated anchors."""
    out: list[Anchor] = []
    for a in anchors:
        if not isinstance(a, Anchor):
            raise InvalidInput(f"anchor {a!r} is not an Anchor (use Anchor.parse)")
        atype = choice(AnchorType, a.type, "anchor type")
        if not isinstance(a.value, str) or not a.value.strip():
            raise InvalidInput(f"anchor {a.type}: has an empty value")
        if "\x00" in a.value:
            raise InvalidInput("anchor value contains NUL bytes")
        out.append(Anchor(atype, clip_anchor_value(redact(a.value.strip()))))
    return list(dict.fromkeys(out))


def clean_artifacts(artifacts: Iterable[Any]) -> list[Artifact]:
    out: list[Artifact] = []
    for a in artifacts:
        if not isinstance(a, Artifact):
            raise InvalidInput(f"artifact {a!r} is not an Artifact")
        for part, value in (("type", a.type), ("ref", a.ref)):
            if not isinstance(value, str) or not value.strip() or "\x00" in value:
                raise InvalidInput(f"artifact {part} must be a non-empty string, not {value!r}")
        if a.title is not None and not isinstance(a.title, str):
            raise InvalidInput("artifact title must be a string")
        out.append(Artifact(a.type, redact(a.ref), redact(a.title) if a.title else a.title))
    return list(dict.fromkeys(out))


def bump(conn: apsw.Connection, vectors: bool = False) -> int:
    """Advance the write generation (and the vector generation); return the latter."""
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    if vectors:
        conn.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vector_generation'"
        )
        return int(conn.execute("SELECT value FROM meta WHERE key='vector_generation'").get)
    return 0


def require(conn: apsw.Connection, memory_id: int) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT id, archived, valid_to FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no memory #{memory_id}")
    return row


def fts_refresh(conn: apsw.Connection, mid: int) -> None:
    row = conn.execute(
        "SELECT text, summary, compressed, index_label FROM memories WHERE id = ?", (mid,)
    ).fetchone()
    conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (mid,))
    if row is None:
        return
    anchors: list[tuple[str, str]] = list(
        conn.execute("SELECT type, value FROM anchors WHERE memory_id = ?", (mid,))
    )
    anchor_text = " ".join(v for t, v in anchors if t != "tag")
    tags = " ".join(v for t, v in anchors if t == "tag")
    terms = identifier_terms(" ".join(filter(None, [row[0], anchor_text, tags])))
    conn.execute(
        "INSERT INTO memories_fts(rowid, text, summary, compressed, index_label, anchors, "
        "tags, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (mid, row[0], row[1] or "", row[2] or "", row[3] or "", anchor_text, tags, terms),
    )


def write_vector(
    conn: apsw.Connection, emb: Embedder | None, mid: int, vec: np.ndarray, gen: int
) -> None:
    """Store a memory's vector from ``emb`` (the caller made it with ``emb``)."""
    assert emb is not None
    conn.execute(
        "INSERT OR REPLACE INTO embeddings(memory_id, model_id, dim, vector, gen, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (mid, emb.model_id, emb.dim, to_blob(vec), gen, now()),
    )
