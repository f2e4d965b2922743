"""The memory store: the repository API over SQLite, kept in sync with FTS and the vector index."""

from __future__ import annotations

import enum
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import apsw
import numpy as np

from storage import db as dbmod
from storage.embeddings import Embedder, to_blob
from storage.errors import InvalidInput, NotFound
from storage.models import (
    AccessKind,
    Anchor,
    AnchorType,
    Artifact,
    Contradiction,
    ContradictionStatus,
    Edge,
    EdgeType,
    Kind,
    Memory,
    NewMemory,
    Resolution,
    Scope,
    TraversalStep,
    clip_anchor_value,
)
from storage.redact import redact, redact_value
from storage.text import content_hash, identifier_terms
from storage.vector_index import VectorIndex

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 200_000
REINDEX_BATCH = 500  # memories per write transaction when the indexes are rebuilt
_MEMORY_COLUMNS = (
    "id, kind, text, summary, compressed, index_label, scope, source, source_id, content_hash, "
    "importance, confidence, decay_score, retrieval_count, citation_count, ignore_count, "
    "created_at, updated_at, valid_from, valid_to, last_accessed, supersedes, superseded_by, "
    "archived, archived_at, archive_reason, fact_key, fact_value, metadata"
)
_UPDATABLE = {
    "kind",
    "text",
    "summary",
    "compressed",
    "index_label",
    "scope",
    "source",
    "source_id",
    "importance",
    "confidence",
    "decay_score",
    "valid_from",
    "valid_to",
    "fact_key",
    "fact_value",
    "metadata",
}
_TEXT_FIELDS = {"text", "summary", "compressed", "index_label", "fact_value"}


_E = TypeVar("_E", bound=enum.Enum)


def _choice(cls: type[_E], value: Any, what: str) -> _E:
    """``cls(value)``, or an InvalidInput naming the allowed values."""
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(str(m.value) for m in cls)
        raise InvalidInput(f"unknown {what} {value!r}; use one of {allowed}") from None


@dataclass(frozen=True)
class AddResult:
    id: int
    created: bool  # False when the content already existed (dedup by content hash)


@dataclass
class MemoryFilter:
    """Which memories a list or search may return. Empty fields do not filter."""

    kinds: Sequence[Kind] = ()
    scopes: Sequence[Scope] = ()
    anchors: Sequence[Anchor] = ()  # any of them
    include_archived: bool = False
    only_archived: bool = False
    valid_at: float | None = None
    branch: str | None = None  # memories on this branch or on no branch in particular
    source: str | None = None
    since: float | None = None
    until: float | None = None
    ids: Sequence[int] | None = None

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        """A WHERE fragment (never empty) and its parameters."""
        where: list[str] = []
        params: list[Any] = []
        if self.only_archived:
            where.append(f"{alias}.archived = 1")
        elif not self.include_archived:
            where.append(f"{alias}.archived = 0")
        if self.kinds:
            where.append(f"{alias}.kind IN ({','.join('?' * len(self.kinds))})")
            params += [_choice(Kind, k, "kind").value for k in self.kinds]
        if self.scopes:
            where.append(f"{alias}.scope IN ({','.join('?' * len(self.scopes))})")
            params += [_choice(Scope, s, "scope").value for s in self.scopes]
        if self.anchors:
            ors = " OR ".join("(a.type = ? AND a.value = ?)" for _ in self.anchors)
            where.append(f"{alias}.id IN (SELECT a.memory_id FROM anchors a WHERE {ors})")
            for a in self.anchors:
                params += [a.type.value, a.value]
        if self.valid_at is not None:
            where.append(
                f"{alias}.valid_from <= ? AND ({alias}.valid_to IS NULL OR {alias}.valid_to > ?)"
            )
            params += [self.valid_at, self.valid_at]
        if self.branch is not None:
            where.append(
                f"(NOT EXISTS (SELECT 1 FROM anchors b WHERE b.memory_id = {alias}.id "
                f"AND b.type = 'branch') OR EXISTS (SELECT 1 FROM anchors b WHERE "
                f"b.memory_id = {alias}.id AND b.type = 'branch' AND b.value = ?))"
            )
            params.append(self.branch)
        if self.source is not None:
            where.append(f"{alias}.source = ?")
            params.append(self.source)
        if self.since is not None:
            where.append(f"{alias}.created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            where.append(f"{alias}.created_at < ?")
            params.append(self.until)
        if self.ids is not None:
            where.append(f"{alias}.id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps([int(i) for i in self.ids]))
        return (" AND ".join(where) or "1"), params

    @property
    def is_default(self) -> bool:
        return self == MemoryFilter()

    @property
    def is_selective(self) -> bool:
        """Whether the filter may keep few memories (worth counting before a vector search).

        Branch, validity and archive filters keep most memories; counting them would cost a
        scan of the whole table, so vector search just over-fetches for those."""
        return bool(
            self.kinds
            or self.scopes
            or self.anchors
            or self.ids is not None
            or self.source
            or self.only_archived
            or self.since is not None
            or self.until is not None
        )


@dataclass
class Stats:
    memories: int
    active: int
    archived: int
    superseded: int
    by_kind: dict[str, int]
    by_source: dict[str, int]
    edges: int
    contradictions_open: int
    embedded: int
    pending_embeddings: int
    sessions: int
    messages: int
    generation: int
    db_path: str
    db_bytes: int
    index_path: str | None
    index_count: int | None
    model_id: str | None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _now() -> float:
    return time.time()


def _validate_text(value: str, name: str = "text") -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if "\x00" in value:
        raise InvalidInput(f"{name} contains NUL bytes (binary content?)")
    if not value.strip():
        raise InvalidInput(f"{name} is empty")
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidInput(f"{name} is {len(value)} characters; the limit is {MAX_TEXT_CHARS}")
    return value


def _unit(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"{name} must be a number between 0 and 1") from e
    if not 0.0 <= v <= 1.0:
        raise InvalidInput(f"{name} must be between 0 and 1, not {value}")
    return v


def _optional_text(value: str | None, name: str) -> str | None:
    """A redacted optional level (summary …); None or blank means: not filled."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return redact(_validate_text(value, name))


def _time(value: Any, name: str, default: float | None) -> float | None:
    if value is None:
        return default
    try:
        v = float(value)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"{name} must be a number, not {value!r}") from e
    if not math.isfinite(v):
        raise InvalidInput(f"{name} must be a finite number, not {value!r}")
    return v


def _json(value: Any, name: str = "metadata") -> str:
    """Redacted JSON text of a metadata dict."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{name} must be a dict, not {type(value).__name__}")
    try:
        return json.dumps(redact_value(value), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"{name} is not JSON-serialisable: {e}") from e


def _clean_anchors(anchors: Iterable[Any]) -> list[Anchor]:
    """Validated, stripped, redacted, de-duplicated anchors."""
    out: list[Anchor] = []
    for a in anchors:
        if not isinstance(a, Anchor):
            raise InvalidInput(f"anchor {a!r} is not an Anchor (use Anchor.parse)")
        atype = _choice(AnchorType, a.type, "anchor type")
        if not isinstance(a.value, str) or not a.value.strip():
            raise InvalidInput(f"anchor {a.type}: has an empty value")
        if "\x00" in a.value:
            raise InvalidInput("anchor value contains NUL bytes")
        out.append(Anchor(atype, clip_anchor_value(redact(a.value.strip()))))
    return list(dict.fromkeys(out))


def _clean_artifacts(artifacts: Iterable[Any]) -> list[Artifact]:
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


def default_index_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.stem + ".vectors.usearch")


class MemoryStore:
    """One project's memory: SQLite is the truth, FTS and usearch are kept in step with it.

    Each thread gets its own connection. Embedding (CPU work) happens outside write
    transactions; the vectors are written in the same transaction as the memory.
    """

    def __init__(
        self,
        db_path: str | Path,
        *,
        embedder: Embedder | None = None,
        index_path: str | Path | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self._index_path = Path(index_path) if index_path else default_index_path(self.db_path)
        self._embedder = embedder
        self._embedder_factory = embedder_factory
        self._local = threading.local()
        self._conns: list[tuple[threading.Thread, apsw.Connection]] = []
        self._conns_lock = threading.Lock()
        self._vectors: VectorIndex | None = None
        self._vectors_lock = threading.Lock()
        self._closed = False
        self.conn  # open now so that errors surface at construction  # noqa: B018

    # ---- plumbing --------------------------------------------------------------------------

    @property
    def conn(self) -> apsw.Connection:
        if self._closed:
            raise InvalidInput("the store is closed")
        c = getattr(self._local, "conn", None)
        if c is None:
            c = dbmod.connect(self.db_path)
            self._local.conn = c
            with self._conns_lock:
                # connections of threads that have ended would otherwise stay open for good
                for thread, old in [p for p in self._conns if not p[0].is_alive()]:
                    self._conns.remove((thread, old))
                    try:
                        old.close()
                    except apsw.Error:
                        log.debug("closing a finished thread's connection failed", exc_info=True)
                self._conns.append((threading.current_thread(), c))
        return c

    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is None and self._embedder_factory is not None:
            with self._vectors_lock:
                if self._embedder is None:
                    self._embedder = self._embedder_factory()
        return self._embedder

    @property
    def has_embedder(self) -> bool:
        return self._embedder is not None or self._embedder_factory is not None

    def vectors(self) -> VectorIndex | None:
        """The vector index for the current model, loaded (or rebuilt) and caught up."""
        emb = self.embedder
        if emb is None:
            return None
        if self._vectors is None:
            with self._vectors_lock:
                if self._vectors is None:
                    vi = VectorIndex(self._index_path, dim=emb.dim, model_id=emb.model_id)
                    vi.open(self.conn)
                    self._vectors = vi
        else:
            self._vectors.sync(self.conn)
        return self._vectors

    def close(self) -> None:
        """Save the vector index if it changed and close every connection."""
        if self._closed:
            return
        try:
            if self._vectors is not None:
                self._vectors.save()
        except OSError as e:  # the index is a cache: the next open rebuilds or catches up
            log.warning("could not save the vector index %s: %s", self._index_path, e)
        finally:
            self._closed = True
            with self._conns_lock:
                for _, c in self._conns:
                    try:
                        c.close()
                    except apsw.Error:
                        log.debug("closing connection failed", exc_info=True)
                self._conns.clear()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _bump(self, conn: apsw.Connection, vectors: bool = False) -> int:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
        if vectors:
            conn.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vector_generation'"
            )
            return int(
                conn.execute("SELECT value FROM meta WHERE key='vector_generation'").fetchone()[0]
            )
        return 0

    def generation(self) -> int:
        """Increases with every write; caches keyed on it are invalid once it moves."""
        return int(self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])

    # ---- add -------------------------------------------------------------------------------

    def add(self, memory: NewMemory) -> AddResult:
        return self.add_many([memory])[0]

    def add_many(self, memories: Sequence[NewMemory]) -> list[AddResult]:
        """Add memories in one transaction; content already stored is deduplicated (and
        restored if it had been archived, with new anchors merged in)."""
        prepared = [self._prepare(m) for m in memories]
        conn = self.conn
        # Which contents are new? Embed only those, before taking the write lock.
        hashes = [p["content_hash"] for p in prepared]
        existing = self._existing_hashes(hashes)
        fresh_idx: list[int] = []
        seen: set[str] = set()
        for i, h in enumerate(hashes):
            if h not in existing and h not in seen:
                fresh_idx.append(i)
                seen.add(h)
        emb = self.embedder
        vectors: np.ndarray | None = None
        if emb is not None and fresh_idx:
            vectors = emb.embed([prepared[i]["text"] for i in fresh_idx])
        results: list[AddResult] = []
        new_vec_rows: list[tuple[int, np.ndarray]] = []
        vgen = 0
        with dbmod.immediate(conn):
            vgen = self._bump(conn, vectors=vectors is not None)
            by_hash: dict[str, int] = {}
            vec_of = {fi: k for k, fi in enumerate(fresh_idx)}
            for i, p in enumerate(prepared):
                h = p["content_hash"]
                row = conn.execute(
                    "SELECT id, archived FROM memories WHERE content_hash = ?", (h,)
                ).fetchone()
                if row is None and h in by_hash:
                    row = (by_hash[h], 0)
                if row is not None:
                    mid, archived = row
                    self._merge_into(conn, mid, p, restore=bool(archived))
                    results.append(AddResult(mid, False))
                    continue
                mid = self._insert(conn, p)
                by_hash[h] = mid
                if vectors is not None and i in vec_of:
                    vec = vectors[vec_of[i]]
                    self._write_vector(conn, mid, vec, vgen)
                    new_vec_rows.append((mid, vec))
                results.append(AddResult(mid, True))
        if new_vec_rows and self._vectors is not None:
            self._vectors.upsert(
                np.asarray([r[0] for r in new_vec_rows], dtype=np.uint64),
                np.stack([r[1] for r in new_vec_rows]),
            )
            self._vectors.mark_generation(vgen)
        return results

    def _prepare(self, m: NewMemory) -> dict[str, Any]:
        if not isinstance(m, NewMemory):
            raise InvalidInput("add() takes NewMemory values")
        text = redact(_validate_text(m.text))
        kind = _choice(Kind, m.kind, "kind")
        scope = _choice(Scope, m.scope, "scope")
        now = _now()
        created = _time(m.created_at, "created_at", now)
        return {
            "kind": kind.value,
            "text": text,
            "summary": _optional_text(m.summary, "summary"),
            "compressed": _optional_text(m.compressed, "compressed"),
            "index_label": _optional_text(m.index_label, "index_label"),
            "scope": scope.value,
            "source": m.source or "manual",
            "source_id": m.source_id,
            "content_hash": content_hash(text),
            "importance": _unit(m.importance, "importance"),
            "confidence": _unit(m.confidence, "confidence"),
            "created_at": created,
            "updated_at": now,
            "valid_from": _time(m.valid_from, "valid_from", created),
            "valid_to": _time(m.valid_to, "valid_to", None),
            "fact_key": redact(m.fact_key) if m.fact_key else m.fact_key,
            "fact_value": _optional_text(m.fact_value, "fact_value"),
            "metadata": _json(m.metadata),
            "anchors": _clean_anchors(m.anchors),
            "artifacts": _clean_artifacts(m.artifacts),
        }

    def _existing_hashes(self, hashes: list[str]) -> set[str]:
        if not hashes:
            return set()
        rows = self.conn.execute(
            "SELECT content_hash FROM memories WHERE content_hash IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(hashes),),
        ).fetchall()
        return {r[0] for r in rows}

    def _insert(self, conn: apsw.Connection, p: dict[str, Any]) -> int:
        cols = [k for k in p if k not in ("anchors", "artifacts")]
        conn.execute(
            f"INSERT INTO memories({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [p[c] for c in cols],
        )
        mid = conn.last_insert_rowid()
        self._write_anchors(conn, mid, p["anchors"])
        self._write_artifacts(conn, mid, p["artifacts"])
        self._fts_refresh(conn, mid)
        return mid

    def _merge_into(
        self, conn: apsw.Connection, mid: int, p: dict[str, Any], *, restore: bool
    ) -> None:
        self._write_anchors(conn, mid, p["anchors"])
        self._write_artifacts(conn, mid, p["artifacts"])
        if restore:
            conn.execute(
                "UPDATE memories SET archived = 0, archived_at = NULL, archive_reason = NULL, "
                "updated_at = ? WHERE id = ?",
                (_now(), mid),
            )
        if p["anchors"]:
            self._fts_refresh(conn, mid)

    def _write_anchors(self, conn: apsw.Connection, mid: int, anchors: Iterable[Anchor]) -> None:
        for a in anchors:
            conn.execute(
                "INSERT OR IGNORE INTO anchors(memory_id, type, value) VALUES (?, ?, ?)",
                (mid, a.type.value, a.value),
            )

    def _write_artifacts(
        self, conn: apsw.Connection, mid: int, artifacts: Iterable[Artifact]
    ) -> None:
        for a in artifacts:
            conn.execute(
                "INSERT OR IGNORE INTO artifacts(memory_id, type, ref, title) VALUES (?,?,?,?)",
                (mid, a.type, a.ref, a.title),
            )

    def _write_vector(self, conn: apsw.Connection, mid: int, vec: np.ndarray, gen: int) -> None:
        emb = self.embedder
        assert emb is not None
        conn.execute(
            "INSERT OR REPLACE INTO embeddings(memory_id, model_id, dim, vector, gen, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (mid, emb.model_id, emb.dim, to_blob(vec), gen, _now()),
        )

    def _fts_refresh(self, conn: apsw.Connection, mid: int) -> None:
        row = conn.execute(
            "SELECT text, summary, compressed, index_label FROM memories WHERE id = ?", (mid,)
        ).fetchone()
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (mid,))
        if row is None:
            return
        anchors = conn.execute(
            "SELECT type, value FROM anchors WHERE memory_id = ?", (mid,)
        ).fetchall()
        anchor_text = " ".join(v for t, v in anchors if t != "tag")
        tags = " ".join(v for t, v in anchors if t == "tag")
        terms = identifier_terms(" ".join(filter(None, [row[0], anchor_text, tags])))
        conn.execute(
            "INSERT INTO memories_fts(rowid, text, summary, compressed, index_label, anchors, "
            "tags, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (mid, row[0], row[1] or "", row[2] or "", row[3] or "", anchor_text, tags, terms),
        )

    # ---- read ------------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory:
        found = self.get_many([memory_id])
        if not found:
            raise NotFound(f"no memory #{memory_id}")
        return found[0]

    def exists(self, memory_id: int) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone()
            is not None
        )

    def get_many(self, ids: Sequence[int]) -> list[Memory]:
        """Memories by id, in the order asked; unknown ids are left out."""
        if not ids:
            return []
        conn = self.conn
        key = json.dumps([int(i) for i in ids])
        rows = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))",
            (key,),
        ).fetchall()
        mems = {r[0]: self._row_to_memory(r) for r in rows}
        for mid, t, v in conn.execute(
            "SELECT memory_id, type, value FROM anchors WHERE memory_id IN "
            "(SELECT value FROM json_each(?))",
            (key,),
        ):
            mems[mid].anchors.append(Anchor(AnchorType(t), v))
        for mid, t, ref, title in conn.execute(
            "SELECT memory_id, type, ref, title FROM artifacts WHERE memory_id IN "
            "(SELECT value FROM json_each(?)) ORDER BY id",
            (key,),
        ):
            mems[mid].artifacts.append(Artifact(t, ref, title))
        return [mems[i] for i in dict.fromkeys(int(i) for i in ids) if i in mems]

    @staticmethod
    def _row_to_memory(r: tuple[Any, ...]) -> Memory:
        return Memory(
            id=r[0],
            kind=Kind(r[1]),
            text=r[2],
            summary=r[3],
            compressed=r[4],
            index_label=r[5],
            scope=Scope(r[6]),
            source=r[7],
            source_id=r[8],
            content_hash=r[9],
            importance=r[10],
            confidence=r[11],
            decay_score=r[12],
            retrieval_count=r[13],
            citation_count=r[14],
            ignore_count=r[15],
            created_at=r[16],
            updated_at=r[17],
            valid_from=r[18],
            valid_to=r[19],
            last_accessed=r[20],
            supersedes=r[21],
            superseded_by=r[22],
            archived=bool(r[23]),
            archived_at=r[24],
            archive_reason=r[25],
            fact_key=r[26],
            fact_value=r[27],
            metadata=json.loads(r[28]),
        )

    def list(
        self,
        filters: MemoryFilter | None = None,
        *,
        limit: int = 100,
        offset: int = 0,
        order: str = "recent",
    ) -> list[Memory]:
        """Memories matching ``filters``; order: recent | oldest | importance | decay | id."""
        orders = {
            "recent": "m.created_at DESC, m.id DESC",
            "oldest": "m.created_at ASC, m.id ASC",
            "importance": "m.importance DESC, m.id DESC",
            "decay": "m.decay_score DESC, m.id DESC",
            "id": "m.id ASC",
        }
        if order not in orders:
            raise InvalidInput(f"unknown order {order!r}; use one of {', '.join(orders)}")
        where, params = (filters or MemoryFilter()).sql()
        ids = [
            r[0]
            for r in self.conn.execute(
                f"SELECT m.id FROM memories m WHERE {where} ORDER BY {orders[order]} "
                "LIMIT ? OFFSET ?",
                [*params, int(limit), int(offset)],
            )
        ]
        return self.get_many(ids)

    def count(self, filters: MemoryFilter | None = None) -> int:
        where, params = (filters or MemoryFilter()).sql()
        return self.conn.execute(
            f"SELECT count(*) FROM memories m WHERE {where}", params
        ).fetchone()[0]

    def ids_matching(self, filters: MemoryFilter, candidates: Sequence[int]) -> set[int]:
        """Which of ``candidates`` pass ``filters``."""
        if not candidates:
            return set()
        f = MemoryFilter(**{**filters.__dict__, "ids": list(candidates)})
        where, params = f.sql()
        return {
            r[0] for r in self.conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)
        }

    def anchor_matches(
        self,
        anchors: Sequence[Anchor],
        *,
        limit: int = 500,
        include_archived: bool = False,
    ) -> dict[int, list[Anchor]]:
        """Memories carrying any of ``anchors`` (most recently created first), with the
        anchors each one matched."""
        if not anchors:
            return {}
        pairs = json.dumps([[a.type.value, a.value] for a in dict.fromkeys(anchors)])
        archived = "" if include_archived else "AND m.archived = 0"
        rows = self.conn.execute(
            "WITH wanted(type, value) AS (SELECT json_extract(value, '$[0]'), "
            "json_extract(value, '$[1]') FROM json_each(?)) "
            "SELECT a.memory_id, a.type, a.value FROM wanted w "
            "JOIN anchors a ON a.type = w.type AND a.value = w.value "
            f"JOIN memories m ON m.id = a.memory_id {archived} "
            "ORDER BY m.created_at DESC, m.id DESC",
            (pairs,),
        ).fetchall()
        out: dict[int, list[Anchor]] = {}
        for mid, t, v in rows:
            if mid not in out and len(out) >= limit:
                continue
            out.setdefault(mid, []).append(Anchor(AnchorType(t), v))
        return out

    def glob_anchors(self, *, include_archived: bool = False) -> list[tuple[int, str]]:
        """(memory id, pattern) of every ``glob`` anchor; few, so callers match in Python."""
        archived = "" if include_archived else "AND m.archived = 0"
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT a.memory_id, a.value FROM anchors a JOIN memories m ON "
                f"m.id = a.memory_id {archived} WHERE a.type = 'glob' ORDER BY a.memory_id"
            )
        ]

    def topic_counts(
        self,
        types: Sequence[AnchorType] = (AnchorType.TAG, AnchorType.MODULE),
        limit: int = 30,
        ids_per_topic: int = 5,
    ) -> list[tuple[str, int, list[int]]]:
        """The commonest anchors of ``types`` among active memories: (label, count, some ids)."""
        marks = ",".join("?" * len(types))
        rows = self.conn.execute(
            f"SELECT a.type, a.value, count(*) AS n FROM anchors a JOIN memories m ON "
            f"m.id = a.memory_id AND m.archived = 0 WHERE a.type IN ({marks}) "
            f"GROUP BY a.type, a.value ORDER BY n DESC, a.value LIMIT ?",
            [*(AnchorType(t).value for t in types), limit],
        ).fetchall()
        out = []
        for t, v, n in rows:
            ids = [
                r[0]
                for r in self.conn.execute(
                    "SELECT a.memory_id FROM anchors a JOIN memories m ON m.id = a.memory_id "
                    "AND m.archived = 0 WHERE a.type = ? AND a.value = ? "
                    "ORDER BY m.importance DESC, m.id DESC LIMIT ?",
                    (t, v, ids_per_topic),
                )
            ]
            out.append((v, n, ids))
        return out

    def find_by_source(self, source: str, source_id: str) -> Memory | None:
        """The memory made from that source: a current one first, then the newest."""
        row = self.conn.execute(
            "SELECT id FROM memories WHERE source = ? AND source_id = ? "
            "ORDER BY superseded_by IS NOT NULL, archived, id DESC LIMIT 1",
            (source, source_id),
        ).fetchone()
        return self.get(row[0]) if row else None

    def source_ids(
        self, source: str, *, prefix: str = "", include_archived: bool = False
    ) -> dict[str, int]:
        """``source_id → id`` of the memories from ``source`` whose source_id starts with
        ``prefix`` (the newest memory wins when several share one source_id)."""
        archived = "" if include_archived else "AND archived = 0"
        rows = self.conn.execute(
            "SELECT source_id, id FROM memories WHERE source = ? AND source_id IS NOT NULL "
            f"AND substr(source_id, 1, ?) = ? {archived} ORDER BY id",
            (source, len(prefix), prefix),
        )
        return {sid: mid for sid, mid in rows}

    def ids_from_source(self, source: str, *, prefix: str = "") -> list[int]:
        """Every current (not archived) memory from ``source`` whose source_id starts with
        ``prefix`` — several when an edited section kept its place."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM memories WHERE source = ? AND source_id IS NOT NULL "
                "AND substr(source_id, 1, ?) = ? AND archived = 0 ORDER BY id",
                (source, len(prefix), prefix),
            )
        ]

    def known_contents(self, texts: Sequence[str]) -> set[str]:
        """The texts among ``texts`` whose content is already stored (archived included)."""
        by_hash = {content_hash(redact(t)): t for t in texts}
        return {by_hash[h] for h in self._existing_hashes(list(by_hash))}

    def current_ids_by_kind(self) -> dict[str, list[int]]:
        """Ids of the memories that hold now (not archived, superseded or expired), by kind."""
        out: dict[str, list[int]] = {}
        for kind, mid in self.conn.execute(
            "SELECT kind, id FROM memories WHERE archived = 0 AND superseded_by IS NULL "
            "AND (valid_to IS NULL OR valid_to > ?) ORDER BY kind, id",
            (_now(),),
        ):
            out.setdefault(kind, []).append(mid)
        return out

    def fact_conflicts(self) -> list[tuple[int, int, str]]:
        """Pairs of current memories stating different values for the same ``fact_key``."""
        return [
            (a, b, key)
            for a, b, key in self.conn.execute(
                "SELECT x.id, y.id, x.fact_key FROM memories x JOIN memories y "
                "ON x.fact_key = y.fact_key AND x.id < y.id "
                "WHERE x.fact_key IS NOT NULL AND coalesce(x.fact_value, '') != "
                "coalesce(y.fact_value, '') AND x.archived = 0 AND y.archived = 0 "
                "AND x.superseded_by IS NULL AND y.superseded_by IS NULL "
                "AND (x.valid_to IS NULL OR x.valid_to > ?1) "
                "AND (y.valid_to IS NULL OR y.valid_to > ?1) ORDER BY x.id, y.id",
                (_now(),),
            )
        ]

    def has_contradiction(self, a: int, b: int) -> bool:
        lo, hi = sorted((a, b))
        return (
            self.conn.execute(
                "SELECT 1 FROM contradictions WHERE memory_a = ? AND memory_b = ?", (lo, hi)
            ).fetchone()
            is not None
        )

    # ---- ingestion cursors -----------------------------------------------------------------

    def ingest_state(self, source: str) -> dict[str, str]:
        """Where ingestion of ``source`` got to: ``key → value`` (last commit, fingerprints)."""
        return dict(
            self.conn.execute("SELECT key, value FROM ingest_state WHERE source = ?", (source,))
        )

    def set_ingest_state(self, source: str, values: dict[str, str]) -> None:
        conn = self.conn
        now = _now()
        with dbmod.immediate(conn):
            conn.executemany(
                "INSERT INTO ingest_state(source, key, value, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(source, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                [(source, k, str(v), now) for k, v in values.items()],
            )

    # ---- update ----------------------------------------------------------------------------

    def update(
        self, memory_id: int, *, anchors: Sequence[Anchor] | None = None, **fields: Any
    ) -> Memory:
        """Change fields (and optionally replace anchors); a new text is re-embedded."""
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise InvalidInput(f"cannot update {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {}
        for k, v in fields.items():
            if k in _TEXT_FIELDS and (v is not None or k == "text"):
                v = redact(_validate_text(v, k))
            elif k in ("importance", "confidence"):
                v = _unit(v, k)
            elif k == "kind":
                v = _choice(Kind, v, "kind").value
            elif k == "scope":
                v = _choice(Scope, v, "scope").value
            elif k == "metadata":
                v = _json(v)
            elif k == "fact_key" and isinstance(v, str):
                v = redact(v)
            elif k in ("valid_from", "valid_to", "decay_score"):
                v = _time(v, k, None)
                if v is None and k != "valid_to":
                    raise InvalidInput(f"{k} cannot be empty")
            values[k] = v
        if anchors is not None:
            anchors = _clean_anchors(anchors)
        new_vec = None
        if "text" in values:
            values["content_hash"] = content_hash(values["text"])
            emb = self.embedder
            if emb is not None:
                new_vec = emb.embed([values["text"]])[0]
        conn = self.conn
        with dbmod.immediate(conn):
            if not conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone():
                raise NotFound(f"no memory #{memory_id}")
            if "content_hash" in values:
                dup = conn.execute(
                    "SELECT id FROM memories WHERE content_hash = ? AND id != ?",
                    (values["content_hash"], memory_id),
                ).fetchone()
                if dup:
                    raise InvalidInput(f"that text is already memory #{dup[0]}")
            # a new text without an embedder: drop the old vector so it is embedded again
            stale = "text" in values and new_vec is None
            vgen = self._bump(conn, vectors=new_vec is not None or stale)
            if stale:
                conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (memory_id,))
            if values:
                values["updated_at"] = _now()
                sets = ", ".join(f"{k} = ?" for k in values)
                conn.execute(
                    f"UPDATE memories SET {sets} WHERE id = ?", [*values.values(), memory_id]
                )
            if anchors is not None:
                conn.execute("DELETE FROM anchors WHERE memory_id = ?", (memory_id,))
                self._write_anchors(conn, memory_id, anchors)
            if new_vec is not None:
                self._write_vector(conn, memory_id, new_vec, vgen)
            self._fts_refresh(conn, memory_id)
        if new_vec is not None and self._vectors is not None:
            self._vectors.upsert(np.asarray([memory_id], dtype=np.uint64), new_vec[None, :])
            self._vectors.mark_generation(vgen)
        return self.get(memory_id)

    def add_anchors(self, memory_id: int, anchors: Sequence[Anchor]) -> None:
        anchors = _clean_anchors(anchors)
        conn = self.conn
        with dbmod.immediate(conn):
            self._require(conn, memory_id)
            self._bump(conn)
            self._write_anchors(conn, memory_id, anchors)
            self._fts_refresh(conn, memory_id)

    def lacking_levels(self, *, after_id: int = 0, limit: int = 500) -> list[Memory]:
        """Memories (archived included) missing a summary, compressed or index level."""
        ids = [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM memories WHERE id > ? AND (coalesce(trim(summary), '') = '' "
                "OR coalesce(trim(compressed), '') = '' OR coalesce(trim(index_label), '') = '')"
                " ORDER BY id LIMIT ?",
                (int(after_id), int(limit)),
            )
        ]
        return self.get_many(ids)

    def set_levels(self, levels: dict[int, dict[str, str]]) -> int:
        """Store derived levels (summary, compressed, index_label) for many memories in one
        transaction; return how many memories changed. Unknown ids are skipped."""
        allowed = {"summary", "compressed", "index_label"}
        rows = []
        for mid, vals in levels.items():
            bad = set(vals) - allowed
            if bad:
                raise InvalidInput(f"not a level: {', '.join(sorted(bad))}")
            rows.append((int(mid), {k: redact(_validate_text(v, k)) for k, v in vals.items()}))
        conn = self.conn
        changed = 0
        now = _now()
        with dbmod.immediate(conn):
            self._bump(conn)
            for mid, vals in rows:
                if not vals:
                    continue
                sets = ", ".join(f"{k} = ?" for k in vals)
                conn.execute(
                    f"UPDATE memories SET {sets}, updated_at = ? WHERE id = ?",
                    [*vals.values(), now, mid],
                )
                if conn.changes():
                    changed += 1
                    self._fts_refresh(conn, mid)
        return changed

    def clear_levels(self, fields: Sequence[str] = ("compressed", "index_label")) -> int:
        """Forget derived levels of every memory (a new compressor refills them); return how
        many memories had one."""
        allowed = {"summary", "compressed", "index_label"}
        bad = set(fields) - allowed
        if bad or not fields:
            raise InvalidInput(f"not a level: {', '.join(sorted(bad)) or 'none given'}")
        conn = self.conn
        having = " OR ".join(f"{f} IS NOT NULL" for f in fields)
        with dbmod.immediate(conn):
            ids = [r[0] for r in conn.execute(f"SELECT id FROM memories WHERE {having}")]
            if not ids:
                return 0
            self._bump(conn)
            sets = ", ".join(f"{f} = NULL" for f in fields)
            conn.execute(f"UPDATE memories SET {sets} WHERE {having}")
            for mid in ids:
                self._fts_refresh(conn, mid)
        return len(ids)

    def set_decay_scores(self, scores: dict[int, float]) -> int:
        """Store recomputed decay scores (computed by the engine); return how many changed."""
        try:
            rows = [(float(v), int(k)) for k, v in scores.items()]
        except (TypeError, ValueError) as e:
            raise InvalidInput(f"decay scores must map ids to numbers: {e}") from e
        conn = self.conn
        with dbmod.immediate(conn):
            self._bump(conn)
            before = conn.total_changes()
            conn.executemany("UPDATE memories SET decay_score = ? WHERE id = ?", rows)
            return conn.total_changes() - before

    def _require(self, conn: apsw.Connection, memory_id: int) -> tuple[Any, ...]:
        row = conn.execute(
            "SELECT id, archived, valid_to FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no memory #{memory_id}")
        return row

    # ---- lifecycle -------------------------------------------------------------------------

    def archive(self, memory_id: int, reason: str | None = None) -> Memory:
        """Forget softly: the memory leaves results but stays restorable."""
        conn = self.conn
        with dbmod.immediate(conn):
            self._require(conn, memory_id)
            self._bump(conn)
            conn.execute(
                "UPDATE memories SET archived = 1, archived_at = ?, archive_reason = ?, "
                "updated_at = ? WHERE id = ?",
                (_now(), redact(reason) if reason else reason, _now(), memory_id),
            )
        return self.get(memory_id)

    def restore(self, memory_id: int) -> Memory:
        conn = self.conn
        with dbmod.immediate(conn):
            self._require(conn, memory_id)
            self._bump(conn)
            conn.execute(
                "UPDATE memories SET archived = 0, archived_at = NULL, archive_reason = NULL, "
                "updated_at = ? WHERE id = ?",
                (_now(), memory_id),
            )
        return self.get(memory_id)

    def purge(self, memory_id: int) -> None:
        """Delete for good, with everything hanging off it (an explicit user action only)."""
        conn = self.conn
        with dbmod.immediate(conn):
            self._require(conn, memory_id)
            had_vector = conn.execute(
                "SELECT 1 FROM embeddings WHERE memory_id = ?", (memory_id,)
            ).fetchone()
            vgen = self._bump(conn, vectors=bool(had_vector))
            conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (memory_id,))
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        if had_vector and self._vectors is not None:
            self._vectors.remove([memory_id])
            self._vectors.mark_generation(vgen)

    def record_access(
        self,
        memory_id: int,
        kind: AccessKind | str = AccessKind.RETRIEVAL,
        context: str | None = None,
    ) -> None:
        self.record_accesses([memory_id], kind, context)

    def record_accesses(
        self,
        memory_ids: Sequence[int],
        kind: AccessKind | str = AccessKind.RETRIEVAL,
        context: str | None = None,
        *,
        bump_generation: bool = True,
    ) -> None:
        """Log use of memories and bump their counters (retrieval, citation, ignore, view).

        ``bump_generation=False`` keeps caches keyed on the generation valid: the context
        engine logs what it served without invalidating what it just cached."""
        kind = _choice(AccessKind, kind, "access kind")
        column = {
            AccessKind.RETRIEVAL: "retrieval_count",
            AccessKind.CITATION: "citation_count",
            AccessKind.IGNORE: "ignore_count",
            AccessKind.VIEW: None,
        }[kind]
        now = _now()
        conn = self.conn
        with dbmod.immediate(conn):
            for mid in memory_ids:
                self._require(conn, mid)
            if bump_generation:
                self._bump(conn)
            for mid in memory_ids:
                conn.execute(
                    "INSERT INTO access_log(memory_id, at, kind, context) VALUES (?, ?, ?, ?)",
                    (mid, now, kind.value, redact(context) if context else context),
                )
                bump = f", {column} = {column} + 1" if column else ""
                conn.execute(
                    f"UPDATE memories SET last_accessed = ?{bump} WHERE id = ?", (now, mid)
                )

    def access_log(self, memory_id: int, limit: int = 50) -> list[tuple[float, str, str | None]]:
        return self.conn.execute(
            "SELECT at, kind, context FROM access_log WHERE memory_id = ? ORDER BY at DESC LIMIT ?",
            (memory_id, limit),
        ).fetchall()

    def supersede(self, old_id: int, new_id: int, *, at: float | None = None) -> None:
        """``new_id`` replaces ``old_id``: old stops being valid, a SUPERSEDES edge links them."""
        if old_id == new_id:
            raise InvalidInput("a memory cannot supersede itself")
        conn = self.conn
        with dbmod.immediate(conn):
            self._bump(conn)
            self._supersede(conn, old_id, new_id, at if at is not None else _now())

    def _supersede(self, conn: apsw.Connection, old_id: int, new_id: int, at: float) -> None:
        self._require(conn, old_id)
        self._require(conn, new_id)
        conn.execute(
            "UPDATE memories SET superseded_by = ?, valid_to = COALESCE(valid_to, ?), "
            "updated_at = ? WHERE id = ?",
            (new_id, at, _now(), old_id),
        )
        conn.execute(
            "UPDATE memories SET supersedes = ?, updated_at = ? WHERE id = ?",
            (old_id, _now(), new_id),
        )
        self._insert_edge(conn, new_id, old_id, EdgeType.SUPERSEDES, 1.0, {})

    # ---- graph -----------------------------------------------------------------------------

    def add_edge(
        self,
        source_id: int,
        target_id: int,
        type: EdgeType | str,
        strength: float = 1.0,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Add (or strengthen) a typed edge; bidirectional types get their reverse edge too."""
        etype = _choice(EdgeType, type, "edge type")
        strength = _unit(strength, "strength")
        if source_id == target_id:
            raise InvalidInput("an edge needs two different memories")
        conn = self.conn
        with dbmod.immediate(conn):
            self._require(conn, source_id)
            self._require(conn, target_id)
            self._bump(conn)
            self._insert_edge(conn, source_id, target_id, etype, strength, metadata or {})

    def _insert_edge(
        self,
        conn: apsw.Connection,
        s: int,
        t: int,
        etype: EdgeType,
        strength: float,
        metadata: dict[str, Any],
    ) -> None:
        pairs = [(s, t, 0)] + ([(t, s, 1)] if etype.bidirectional else [])
        for a, b, rev in pairs:
            conn.execute(
                "INSERT INTO edges(source_id, target_id, type, strength, reverse, created_at, "
                "metadata) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(source_id, target_id, type) "
                "DO UPDATE SET strength = max(strength, excluded.strength)",
                (a, b, etype.value, strength, rev, _now(), _json(metadata)),
            )

    def remove_edge(self, source_id: int, target_id: int, type: EdgeType | str) -> bool:
        etype = _choice(EdgeType, type, "edge type")
        conn = self.conn
        with dbmod.immediate(conn):
            self._bump(conn)
            conn.execute(
                "DELETE FROM edges WHERE source_id = ? AND target_id = ? AND type = ?",
                (source_id, target_id, etype.value),
            )
            removed = conn.changes()
            if etype.bidirectional:
                conn.execute(
                    "DELETE FROM edges WHERE source_id = ? AND target_id = ? AND type = ?",
                    (target_id, source_id, etype.value),
                )
        return removed > 0

    def edges(self, memory_id: int, *, direction: str = "out") -> list[Edge]:
        """Edges leaving (out), arriving (in) or both (each relation once).

        A bidirectional relation (RELATES_TO, SIMILAR_TO, CONTRADICTS) leaves and arrives
        at both of its memories."""
        q = {
            "out": "source_id = ?",
            "in": "target_id = ?",
            # a bidirectional relation is stored twice; its reverse copy is not repeated
            "both": "(source_id = ? OR target_id = ?) AND reverse = 0",
        }
        if direction not in q:
            raise InvalidInput("direction must be out, in or both")
        params = [memory_id] * (2 if direction == "both" else 1)
        return [
            Edge(s, t, EdgeType(ty), st, c)
            for s, t, ty, st, c in self.conn.execute(
                f"SELECT source_id, target_id, type, strength, created_at FROM edges "
                f"WHERE {q[direction]} ORDER BY strength DESC, id",
                params,
            )
        ]

    def traverse(
        self,
        start: int | Sequence[int],
        *,
        depth: int = 2,
        types: Sequence[EdgeType | str] | None = None,
        min_strength: float = 0.0,
        direction: str = "out",
        limit: int = 500,
    ) -> list[TraversalStep]:
        """Breadth-first walk; each reached memory once, at its shallowest, strongest path."""
        if depth < 0:
            raise InvalidInput("depth must be 0 or more")
        if direction not in ("out", "in", "both"):
            raise InvalidInput("direction must be out, in or both")
        starts = [start] if isinstance(start, int) else list(start)
        conn = self.conn
        for s in starts:
            self._require(conn, s)
        type_vals = [_choice(EdgeType, t, "edge type").value for t in types] if types else None
        seen: set[int] = set(starts)
        frontier: dict[int, float] = {s: 1.0 for s in starts}
        out: list[TraversalStep] = []
        for level in range(1, depth + 1):
            if not frontier or len(out) >= limit:
                break
            key = json.dumps(list(frontier))
            clauses, params = [], []
            type_sql = ""
            if type_vals:
                type_sql = f" AND type IN ({','.join('?' * len(type_vals))})"
            if direction in ("out", "both"):
                clauses.append(
                    "SELECT source_id, target_id, type, strength FROM edges WHERE source_id IN "
                    f"(SELECT value FROM json_each(?)) AND strength >= ?{type_sql}"
                )
                params += [key, min_strength, *(type_vals or [])]
            if direction in ("in", "both"):
                clauses.append(
                    "SELECT target_id, source_id, type, strength FROM edges WHERE target_id IN "
                    f"(SELECT value FROM json_each(?)) AND strength >= ?{type_sql}"
                )
                params += [key, min_strength, *(type_vals or [])]
            best: dict[int, TraversalStep] = {}
            for parent, child, ty, st in conn.execute(" UNION ALL ".join(clauses), params):
                if child in seen:
                    continue
                path = frontier[parent] * st
                cur = best.get(child)
                if cur is None or path > cur.strength:
                    best[child] = TraversalStep(child, level, path, EdgeType(ty), parent)
            archived = self._archived_among(list(best))
            steps = sorted(
                (s for s in best.values() if s.memory_id not in archived),
                key=lambda s: -s.strength,
            )
            out.extend(steps)
            seen.update(best)
            frontier = {s.memory_id: s.strength for s in steps}
        return out[:limit]

    def _archived_among(self, ids: list[int]) -> set[int]:
        if not ids:
            return set()
        return {
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM memories WHERE archived = 1 AND id IN "
                "(SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            )
        }

    # ---- contradictions --------------------------------------------------------------------

    def add_contradiction(
        self, a: int, b: int, *, reason: str | None = None, confidence: float = 0.5
    ) -> int:
        """Record that two memories disagree (idempotent; a resolved pair is not reopened)."""
        if a == b:
            raise InvalidInput("a memory cannot contradict itself")
        lo, hi = sorted((a, b))
        conn = self.conn
        with dbmod.immediate(conn):
            self._require(conn, lo)
            self._require(conn, hi)
            self._bump(conn)
            conn.execute(
                "INSERT INTO contradictions(memory_a, memory_b, reason, confidence, detected_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(memory_a, memory_b) DO NOTHING",
                (
                    lo,
                    hi,
                    redact(reason) if reason else None,
                    _unit(confidence, "confidence"),
                    _now(),
                ),
            )
            self._insert_edge(conn, lo, hi, EdgeType.CONTRADICTS, _unit(confidence, "c"), {})
            return conn.execute(
                "SELECT id FROM contradictions WHERE memory_a = ? AND memory_b = ?", (lo, hi)
            ).fetchone()[0]

    def contradictions(
        self,
        status: ContradictionStatus | str | None = ContradictionStatus.OPEN,
        memory_ids: Sequence[int] | None = None,
    ) -> list[Contradiction]:
        sql = (
            "SELECT id, memory_a, memory_b, status, resolution, note, reason, confidence, "
            "detected_at, resolved_at FROM contradictions WHERE 1"
        )
        params: list[Any] = []
        if status is not None:
            sql += " AND status = ?"
            params.append(_choice(ContradictionStatus, status, "status").value)
        if memory_ids is not None:
            key = json.dumps([int(i) for i in memory_ids])
            sql += (
                " AND (memory_a IN (SELECT value FROM json_each(?)) OR memory_b IN "
                "(SELECT value FROM json_each(?)))"
            )
            params += [key, key]
        return [
            Contradiction(
                r[0],
                r[1],
                r[2],
                ContradictionStatus(r[3]),
                Resolution(r[4]) if r[4] else None,
                r[5],
                r[6],
                r[7],
                r[8],
                r[9],
            )
            for r in self.conn.execute(sql + " ORDER BY detected_at DESC", params)
        ]

    def resolve_contradiction(
        self,
        contradiction_id: int,
        resolution: Resolution | str,
        note: str | None = None,
        *,
        merged_id: int | None = None,
    ) -> Contradiction:
        """Settle a contradiction. The loser of a_wins/b_wins is superseded by the winner,
        never deleted; ``merged`` needs the id of the memory that merges both."""
        res = _choice(Resolution, resolution, "resolution")
        conn = self.conn
        row = conn.execute(
            "SELECT memory_a, memory_b FROM contradictions WHERE id = ?", (contradiction_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no contradiction #{contradiction_id}")
        a, b = row
        if res is Resolution.MERGED and merged_id is None:
            raise InvalidInput("a merged resolution needs the id of the merged memory")
        if merged_id is not None and merged_id in (a, b):
            raise InvalidInput("the merged memory must be a new memory, not one of the pair")
        now = _now()
        with dbmod.immediate(conn):
            current = conn.execute(
                "SELECT status, resolution FROM contradictions WHERE id = ?", (contradiction_id,)
            ).fetchone()
            if current is None:
                raise NotFound(f"no contradiction #{contradiction_id}")
            if current[0] != ContradictionStatus.OPEN.value:
                # settling it again (say b_wins after a_wins) would supersede both memories
                raise InvalidInput(
                    f"contradiction #{contradiction_id} is already {current[0]} "
                    f"({current[1] or 'no resolution'})"
                )
            self._bump(conn)
            conn.execute(
                "UPDATE contradictions SET status = 'resolved', resolution = ?, note = ?, "
                "resolved_at = ? WHERE id = ?",
                (res.value, redact(note) if note else None, now, contradiction_id),
            )
            if res is Resolution.A_WINS:
                self._supersede(conn, b, a, now)
            elif res is Resolution.B_WINS:
                self._supersede(conn, a, b, now)
            elif res is Resolution.MERGED:
                assert merged_id is not None
                self._supersede(conn, a, merged_id, now)
                self._supersede(conn, b, merged_id, now)
        return next(c for c in self.contradictions(None) if c.id == contradiction_id)

    def dismiss_contradiction(
        self, contradiction_id: int, note: str | None = None
    ) -> Contradiction:
        """Mark an open contradiction as not one (a false detection); both memories stay as
        they are."""
        conn = self.conn
        with dbmod.immediate(conn):
            current = conn.execute(
                "SELECT status, resolution FROM contradictions WHERE id = ?", (contradiction_id,)
            ).fetchone()
            if current is None:
                raise NotFound(f"no contradiction #{contradiction_id}")
            if current[0] != ContradictionStatus.OPEN.value:
                raise InvalidInput(
                    f"contradiction #{contradiction_id} is already {current[0]} "
                    f"({current[1] or 'no resolution'})"
                )
            self._bump(conn)
            conn.execute(
                "UPDATE contradictions SET status = 'dismissed', note = ?, resolved_at = ? "
                "WHERE id = ?",
                (redact(note) if note else None, _now(), contradiction_id),
            )
        return next(c for c in self.contradictions(None) if c.id == contradiction_id)

    # ---- categories ------------------------------------------------------------------------

    def category(
        self, name: str, *, parent: str | None = None, description: str | None = None
    ) -> int:
        """The id of category ``name``, created if needed."""
        if not isinstance(name, str) or not name.strip() or "\x00" in name:
            raise InvalidInput(f"category name must be a non-empty string, not {name!r}")
        description = _optional_text(description, "description")
        conn = self.conn
        row = conn.execute("SELECT id FROM categories WHERE name = ?", (name,)).fetchone()
        if row:
            return row[0]
        parent_id = self.category(parent) if parent else None
        with dbmod.immediate(conn):
            self._bump(conn)
            conn.execute(
                "INSERT OR IGNORE INTO categories(name, parent_id, description, created_at) "
                "VALUES (?, ?, ?, ?)",
                (name, parent_id, description, _now()),
            )
        return conn.execute("SELECT id FROM categories WHERE name = ?", (name,)).fetchone()[0]

    def categorise(self, memory_id: int, category: str) -> None:
        cid = self.category(category)
        conn = self.conn
        with dbmod.immediate(conn):
            self._require(conn, memory_id)
            self._bump(conn)
            conn.execute(
                "INSERT OR IGNORE INTO category_members(category_id, memory_id, added_at) "
                "VALUES (?, ?, ?)",
                (cid, memory_id, _now()),
            )

    def set_category_summary(self, category: str, summary: str) -> None:
        cid = self.category(category)
        conn = self.conn
        with dbmod.immediate(conn):
            self._bump(conn)
            conn.execute(
                "UPDATE categories SET summary = ?, summary_updated_at = ? WHERE id = ?",
                (redact(summary), _now(), cid),
            )

    def categories(self) -> list[dict[str, Any]]:
        return [
            {"id": r[0], "name": r[1], "parent_id": r[2], "summary": r[3], "members": r[4]}
            for r in self.conn.execute(
                "SELECT c.id, c.name, c.parent_id, c.summary, count(cm.memory_id) FROM "
                "categories c LEFT JOIN category_members cm ON cm.category_id = c.id "
                "GROUP BY c.id ORDER BY c.name"
            )
        ]

    def memory_categories(self, memory_id: int) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT c.name FROM categories c JOIN category_members cm ON "
                "cm.category_id = c.id WHERE cm.memory_id = ? ORDER BY c.name",
                (memory_id,),
            )
        ]

    # ---- embeddings ------------------------------------------------------------------------

    def pending_embeddings(self) -> int:
        emb = self.embedder
        if emb is None:
            return 0
        return self.conn.execute(
            "SELECT count(*) FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id "
            "AND e.model_id = ? WHERE e.memory_id IS NULL",
            (emb.model_id,),
        ).fetchone()[0]

    def embed_pending(
        self, *, batch: int = 256, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Embed memories that have no vector from the current model (new model → re-embed)."""
        emb = self.embedder
        if emb is None:
            return 0
        conn = self.conn
        total = self.pending_embeddings()
        done = 0
        while True:
            rows = conn.execute(
                "SELECT m.id, m.text FROM memories m LEFT JOIN embeddings e ON "
                "e.memory_id = m.id AND e.model_id = ? WHERE e.memory_id IS NULL "
                "ORDER BY m.id LIMIT ?",
                (emb.model_id, batch),
            ).fetchall()
            if not rows:
                break
            vecs = emb.embed([r[1] for r in rows])
            with dbmod.immediate(conn):
                vgen = self._bump(conn, vectors=True)
                for (mid, _), v in zip(rows, vecs):
                    self._write_vector(conn, mid, v, vgen)
            if self._vectors is not None:
                self._vectors.upsert(np.asarray([r[0] for r in rows], dtype=np.uint64), vecs)
                self._vectors.mark_generation(vgen)
            done += len(rows)
            if progress:
                progress(done, total)
        return done

    def vectors_for(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        emb = self.embedder
        if emb is None or not ids:
            return {}
        return {
            mid: np.frombuffer(blob, dtype="<f4")
            for mid, blob in self.conn.execute(
                "SELECT memory_id, vector FROM embeddings WHERE model_id = ? AND memory_id IN "
                "(SELECT value FROM json_each(?))",
                (emb.model_id, json.dumps([int(i) for i in ids])),
            )
        }

    def reindex(
        self,
        *,
        progress: Callable[[int, int], None] | None = None,
        fts_progress: Callable[[int, int], None] | None = None,
        batch: int = REINDEX_BATCH,
    ) -> dict[str, Any]:
        """Rebuild FTS and the vector index from the rows; embed what lacks a current vector.

        The keyword index is rebuilt ``batch`` memories per transaction (each memory's entry
        replaced in one step, so searches keep finding it), then entries of deleted memories
        go: other writers wait for one batch at most, never for the whole rebuild."""
        conn = self.conn
        batch = max(1, batch)
        total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        done, last = 0, 0
        while True:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM memories WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
                ).fetchall()
            ]
            if not ids:
                break
            with dbmod.immediate(conn):
                for mid in ids:
                    self._fts_refresh(conn, mid)
            last, done = ids[-1], done + len(ids)
            if fts_progress:
                fts_progress(done, total)
        with dbmod.immediate(conn):
            conn.execute("DELETE FROM memories_fts WHERE rowid NOT IN (SELECT id FROM memories)")
            self._bump(conn)
        embedded = self.embed_pending(progress=progress, batch=min(batch, 256))
        state = None
        vi = self.vectors()
        if vi is not None:
            state = vi.rebuild(conn, "reindex")
            vi.save(force=True)
        return {
            "fts_rows": conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0],
            "embedded": embedded,
            "vectors": state.count if state else None,
        }

    # ---- stats -----------------------------------------------------------------------------

    def stats(self) -> Stats:
        conn = self.conn

        def one(sql: str, *p: Any) -> int:
            return conn.execute(sql, p).fetchone()[0]

        emb = self.embedder
        vi = self._vectors
        return Stats(
            memories=one("SELECT count(*) FROM memories"),
            active=one("SELECT count(*) FROM memories WHERE archived = 0"),
            archived=one("SELECT count(*) FROM memories WHERE archived = 1"),
            superseded=one("SELECT count(*) FROM memories WHERE superseded_by IS NOT NULL"),
            by_kind=dict(
                conn.execute(
                    "SELECT kind, count(*) FROM memories WHERE archived = 0 GROUP BY kind "
                    "ORDER BY 2 DESC"
                ).fetchall()
            ),
            by_source=dict(
                conn.execute(
                    "SELECT source, count(*) FROM memories WHERE archived = 0 GROUP BY source "
                    "ORDER BY 2 DESC"
                ).fetchall()
            ),
            edges=one("SELECT count(*) FROM edges WHERE reverse = 0"),
            contradictions_open=one("SELECT count(*) FROM contradictions WHERE status='open'"),
            embedded=one("SELECT count(*) FROM embeddings WHERE model_id = ?", emb.model_id)
            if emb
            else one("SELECT count(*) FROM embeddings"),
            pending_embeddings=self.pending_embeddings(),
            sessions=one("SELECT count(*) FROM sessions"),
            messages=one("SELECT count(*) FROM messages"),
            generation=self.generation(),
            db_path=str(self.db_path),
            db_bytes=sum(
                p.stat().st_size
                for p in (self.db_path, Path(str(self.db_path) + "-wal"))
                if p.exists()
            ),
            index_path=str(self._index_path) if emb else None,
            index_count=len(vi) if vi is not None else None,
            model_id=emb.model_id if emb else None,
        )
