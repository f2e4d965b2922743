"""The memory store: memories over SQLite, kept in step with FTS and the vector index.

Each concern has its own part, reached from the store: ``store.graph``, ``store.contradictions``,
``store.usage``, ``store.categories``, ``store.levels``, ``store.embeddings``, ``store.cursors``,
``store.locked_contexts``, ``store.citations``.
"""

from __future__ import annotations

import builtins
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from storage import db as dbmod
from storage.categories import Categories
from storage.citations import Citations
from storage.contradictions import Contradictions
from storage.cursors import Cursors
from storage.embeddings import Embedder
from storage.errors import InvalidInput, NotFound
from storage.graph import Graph
from storage.levels import Levels
from storage.llm_records import LlmRecords
from storage.locked_contexts import LockedContextStore
from storage.memory_vectors import Embeddings
from storage.models import (
    Anchor,
    AnchorType,
    Artifact,
    Kind,
    Memory,
    NewMemory,
    Review,
    Scope,
    initial_review,
)
from storage.redact import redact
from storage.rows import (
    bump,
    choice,
    clean_anchors,
    clean_artifacts,
    fts_refresh,
    metadata_json,
    now,
    optional_text,
    parse_time,
    require,
    unit,
    validate_text,
    write_vector,
)
from storage.shared_files import SharedFiles
from storage.text import content_hash
from storage.usage import Usage
from storage.vector_index import VectorIndex

log = logging.getLogger(__name__)

REINDEX_BATCH = 500  # memories per write transaction when the indexes are rebuilt
_MEMORY_COLUMNS = (
    "id, kind, text, summary, compressed, index_label, scope, source, source_id, content_hash, "
    "importance, confidence, decay_score, retrieval_count, citation_count, ignore_count, "
    "created_at, updated_at, valid_from, valid_to, last_accessed, supersedes, superseded_by, "
    "archived, archived_at, archive_reason, fact_key, fact_value, metadata, review"
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
    "review",
}
_TEXT_FIELDS = {"text", "summary", "compressed", "index_label", "fact_value"}


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
            params += [choice(Kind, k, "kind").value for k in self.kinds]
        if self.scopes:
            where.append(f"{alias}.scope IN ({','.join('?' * len(self.scopes))})")
            params += [choice(Scope, s, "scope").value for s in self.scopes]
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
    contradictions_suspected: int
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


# enum members by value: a dict lookup is several times cheaper than calling the enum, and
# get_many turns thousands of rows into memories per context
_ANCHOR_TYPES = {t.value: t for t in AnchorType}
_KINDS = {k.value: k for k in Kind}
_SCOPES = {s.value: s for s in Scope}
_REVIEWS = {r.value: r for r in Review}


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
        self.graph = Graph(self)
        self.contradictions = Contradictions(self)
        self.usage = Usage(self)
        self.categories = Categories(self)
        self.levels = Levels(self)
        self.embeddings = Embeddings(self)
        self.cursors = Cursors(self)
        self.locked_contexts = LockedContextStore(self)
        self.llm = LlmRecords(self)
        self.shared = SharedFiles(self)
        self.citations = Citations(self)
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

    @contextmanager
    def vectors_later(self) -> Iterator[None]:
        """Within this block (on this thread) memories are stored without a vector: their
        text and keyword index are written at once and the vectors are left pending for
        :meth:`Embeddings.embed_pending` (an ingestion of many memories is searchable by
        keyword long before the model has read them all)."""
        before = getattr(self._local, "vectors_later", False)
        self._local.vectors_later = True
        try:
            yield
        finally:
            self._local.vectors_later = before

    @contextmanager
    def checkpoint_later(self) -> Iterator[None]:
        """Within this block (on this thread) a commit does not copy the write-ahead log into
        the database, as SQLite otherwise does at the commit that takes the log past 1,000
        pages (tens of milliseconds; the first of a process, hundreds); :meth:`checkpoint`
        does it later, on a thread nothing waits for."""
        conn = self.conn
        before = conn.pragma("wal_autocheckpoint")
        conn.pragma("wal_autocheckpoint", 0)
        try:
            yield
        finally:
            conn.pragma("wal_autocheckpoint", before)

    def checkpoint(self) -> tuple[int, int]:
        """Copy what the write-ahead log holds into the database, as far as no reader still
        needs it, without waiting for readers or writers; (pages in the log, pages copied)."""
        log_pages, copied = self.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        return log_pages, copied

    def _inline_embedder(self) -> Embedder | None:
        """The embedder a write uses now: none while vectors are left for later."""
        if getattr(self._local, "vectors_later", False):
            return None
        return self.embedder

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

    @property
    def vector_cache(self) -> VectorIndex | None:
        """The vector index if it is loaded (never loads it)."""
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

    def generation(self) -> int:
        """Increases with every write; caches keyed on it are invalid once it moves."""
        return int(self.conn.execute("SELECT value FROM meta WHERE key='generation'").get)

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
        emb = self._inline_embedder()
        vectors: np.ndarray | None = None
        if emb is not None and fresh_idx:
            vectors = emb.embed([prepared[i]["text"] for i in fresh_idx])
        results: list[AddResult] = []
        new_vec_rows: list[tuple[int, np.ndarray]] = []
        vgen = 0
        with dbmod.immediate(conn):
            vgen = bump(conn, vectors=vectors is not None)
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
                    write_vector(conn, self.embedder, mid, vec, vgen)
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
        text = redact(validate_text(m.text))
        kind = choice(Kind, m.kind, "kind")
        scope = choice(Scope, m.scope, "scope")
        stamp = now()
        created = parse_time(m.created_at, "created_at", stamp)
        return {
            "kind": kind.value,
            "text": text,
            "summary": optional_text(m.summary, "summary"),
            "compressed": optional_text(m.compressed, "compressed"),
            "index_label": optional_text(m.index_label, "index_label"),
            "scope": scope.value,
            "source": redact(m.source) if m.source else "manual",
            "source_id": redact(m.source_id) if m.source_id else m.source_id,
            "content_hash": content_hash(text),
            "importance": unit(m.importance, "importance"),
            "confidence": unit(m.confidence, "confidence"),
            "created_at": created,
            "updated_at": stamp,
            "valid_from": parse_time(m.valid_from, "valid_from", created),
            "valid_to": parse_time(m.valid_to, "valid_to", None),
            "fact_key": redact(m.fact_key) if m.fact_key else m.fact_key,
            "fact_value": optional_text(m.fact_value, "fact_value"),
            "metadata": metadata_json(m.metadata),
            "review": choice(
                Review, m.review or initial_review(m.source or "manual"), "review"
            ).value,
            "anchors": clean_anchors(m.anchors),
            "artifacts": clean_artifacts(m.artifacts),
        }

    def _existing_hashes(self, hashes: list[str]) -> set[str]:
        if not hashes:
            return set()
        rows = self.conn.execute(
            "SELECT content_hash FROM memories WHERE content_hash IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(hashes),),
        )
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
        fts_refresh(conn, mid)
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
                (now(), mid),
            )
        if p["anchors"]:
            fts_refresh(conn, mid)

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

    def get_many(self, ids: Sequence[int], *, details: bool = True) -> list[Memory]:
        """Memories by id, in the order asked; unknown ids are left out. ``details=False``
        leaves their anchors and artifacts empty (a ranking that needs neither is faster)."""
        if not ids:
            return []
        conn = self.conn
        key = json.dumps([int(i) for i in ids])
        rows = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))",
            (key,),
        ).fetchall()
        mems = {r[0]: self._row_to_memory(r) for r in rows}
        if not details:
            return [mems[i] for i in dict.fromkeys(int(i) for i in ids) if i in mems]
        types = _ANCHOR_TYPES
        for mid, t, v in conn.execute(
            "SELECT memory_id, type, value FROM anchors WHERE memory_id IN "
            "(SELECT value FROM json_each(?))",
            (key,),
        ):
            mems[mid].anchors.append(Anchor(types[t], v))
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
            kind=_KINDS[r[1]],
            text=r[2],
            summary=r[3],
            compressed=r[4],
            index_label=r[5],
            scope=_SCOPES[r[6]],
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
            review=_REVIEWS[r[29]],
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
        return self.conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).get

    def ids_matching(self, filters: MemoryFilter, candidates: Sequence[int]) -> set[int]:
        """Which of ``candidates`` pass ``filters``."""
        if not candidates:
            return set()
        f = MemoryFilter(**{**filters.__dict__, "ids": list(candidates)})
        where, params = f.sql()
        # kinds, scopes and source are read from the row itself; the rest from the index
        narrow = not (filters.kinds or filters.scopes or filters.source is not None)
        table = "memories m INDEXED BY memories_lookup" if narrow else "memories m"
        return {r[0] for r in self.conn.execute(f"SELECT m.id FROM {table} WHERE {where}", params)}

    def anchor_matches(
        self,
        anchors: Sequence[Anchor],
        *,
        limit: int = 500,
        include_archived: bool = False,
    ) -> dict[int, builtins.list[Anchor]]:
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
            f"JOIN memories m INDEXED BY memories_lookup ON m.id = a.memory_id {archived} "
            "ORDER BY m.created_at DESC, m.id DESC",
            (pairs,),
        )
        out: dict[int, list[Anchor]] = {}
        for mid, t, v in rows:
            if mid not in out and len(out) >= limit:
                break  # a memory's rows are adjacent in this order: the rest are all beyond
            out.setdefault(mid, []).append(Anchor(AnchorType(t), v))
        return out

    def glob_anchors(self, *, include_archived: bool = False) -> builtins.list[tuple[int, str]]:
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
    ) -> builtins.list[tuple[str, int, builtins.list[int]]]:
        """The commonest anchors of ``types`` among active memories: (label, count, some ids)."""
        marks = ",".join("?" * len(types))
        rows: list[tuple[str, str, int]] = list(
            self.conn.execute(
                f"SELECT a.type, a.value, count(*) AS n FROM anchors a JOIN memories m ON "
                f"m.id = a.memory_id AND m.archived = 0 WHERE a.type IN ({marks}) "
                f"GROUP BY a.type, a.value ORDER BY n DESC, a.value LIMIT ?",
                [*(AnchorType(t).value for t in types), limit],
            )
        )
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
            (redact(source), redact(source_id)),  # stored redacted: a lookup matches alike
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

    def ids_from_source(self, source: str, *, prefix: str = "") -> builtins.list[int]:
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

    def current_ids_by_kind(self) -> dict[str, builtins.list[int]]:
        """Ids of the memories that hold now (not archived, superseded or expired), by kind."""
        out: dict[str, list[int]] = {}
        for kind, mid in self.conn.execute(
            "SELECT kind, id FROM memories WHERE archived = 0 AND superseded_by IS NULL "
            "AND (valid_to IS NULL OR valid_to > ?) ORDER BY kind, id",
            (now(),),
        ):
            out.setdefault(kind, []).append(mid)
        return out

    # ---- update ----------------------------------------------------------------------------

    def update(  # noqa: C901
        self, memory_id: int, *, anchors: Sequence[Anchor] | None = None, **fields: Any
    ) -> Memory:
        """Change fields (and optionally replace anchors); a new text is re-embedded."""
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise InvalidInput(f"cannot update {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {}
        for k, v in fields.items():
            if k in _TEXT_FIELDS and (v is not None or k == "text"):
                v = redact(validate_text(v, k))
            elif k in ("importance", "confidence"):
                v = unit(v, k)
            elif k == "kind":
                v = choice(Kind, v, "kind").value
            elif k == "scope":
                v = choice(Scope, v, "scope").value
            elif k == "review":
                v = choice(Review, v, "review").value
            elif k == "metadata":
                v = metadata_json(v)
            elif k in ("fact_key", "source", "source_id") and isinstance(v, str):
                v = redact(v)
            elif k in ("valid_from", "valid_to", "decay_score"):
                v = parse_time(v, k, None)
                if v is None and k != "valid_to":
                    raise InvalidInput(f"{k} cannot be empty")
            values[k] = v
        if anchors is not None:
            anchors = clean_anchors(anchors)
        new_vec = None
        if "text" in values:
            values["content_hash"] = content_hash(values["text"])
            emb = self._inline_embedder()
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
            vgen = bump(conn, vectors=new_vec is not None or stale)
            if stale:
                conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (memory_id,))
            if "text" in values:  # what a new text cites is recorded again
                conn.execute("DELETE FROM citation_origins WHERE memory_id = ?", (memory_id,))
            if values:
                values["updated_at"] = now()
                sets = ", ".join(f"{k} = ?" for k in values)
                conn.execute(
                    f"UPDATE memories SET {sets} WHERE id = ?", [*values.values(), memory_id]
                )
            if anchors is not None:
                conn.execute("DELETE FROM anchors WHERE memory_id = ?", (memory_id,))
                self._write_anchors(conn, memory_id, anchors)
            if new_vec is not None:
                write_vector(conn, self.embedder, memory_id, new_vec, vgen)
            fts_refresh(conn, memory_id)
        if new_vec is not None and self._vectors is not None:
            self._vectors.upsert(np.asarray([memory_id], dtype=np.uint64), new_vec[None, :])
            self._vectors.mark_generation(vgen)
        return self.get(memory_id)

    def add_anchors(self, memory_id: int, anchors: Sequence[Anchor]) -> None:
        anchors = clean_anchors(anchors)
        conn = self.conn
        with dbmod.immediate(conn):
            require(conn, memory_id)
            bump(conn)
            self._write_anchors(conn, memory_id, anchors)
            fts_refresh(conn, memory_id)

    # ---- lifecycle -------------------------------------------------------------------------

    def archive(self, memory_id: int, reason: str | None = None) -> Memory:
        """Forget softly: the memory leaves results but stays restorable."""
        conn = self.conn
        with dbmod.immediate(conn):
            require(conn, memory_id)
            bump(conn)
            conn.execute(
                "UPDATE memories SET archived = 1, archived_at = ?, archive_reason = ?, "
                "updated_at = ? WHERE id = ?",
                (now(), redact(reason) if reason else reason, now(), memory_id),
            )
        return self.get(memory_id)

    def restore(self, memory_id: int) -> Memory:
        conn = self.conn
        with dbmod.immediate(conn):
            require(conn, memory_id)
            bump(conn)
            conn.execute(
                "UPDATE memories SET archived = 0, archived_at = NULL, archive_reason = NULL, "
                "updated_at = ? WHERE id = ?",
                (now(), memory_id),
            )
        return self.get(memory_id)

    def purge(self, memory_id: int) -> None:
        """Delete for good, with everything hanging off it (an explicit user action only)."""
        conn = self.conn
        with dbmod.immediate(conn):
            require(conn, memory_id)
            had_vector = conn.execute(
                "SELECT 1 FROM embeddings WHERE memory_id = ?", (memory_id,)
            ).fetchone()
            vgen = bump(conn, vectors=bool(had_vector))
            conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (memory_id,))
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        if had_vector and self._vectors is not None:
            self._vectors.remove([memory_id])
            self._vectors.mark_generation(vgen)

    # ---- indexes ---------------------------------------------------------------------------

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
        total: int = conn.execute("SELECT count(*) FROM memories").get
        done, last = 0, 0
        while True:
            ids: list[int] = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM memories WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
                )
            ]
            if not ids:
                break
            with dbmod.immediate(conn):
                for mid in ids:
                    fts_refresh(conn, mid)
            last, done = ids[-1], done + len(ids)
            if fts_progress:
                fts_progress(done, total)
        with dbmod.immediate(conn):
            conn.execute("DELETE FROM memories_fts WHERE rowid NOT IN (SELECT id FROM memories)")
            bump(conn)
        embedded = self.embeddings.embed_pending(progress=progress, batch=min(batch, 256))
        state = None
        vi = self.vectors()
        if vi is not None:
            state = vi.rebuild(conn, "reindex")
            vi.save(force=True)
        return {
            "fts_rows": conn.execute("SELECT count(*) FROM memories_fts").get,
            "embedded": embedded,
            "vectors": state.count if state else None,
        }

    # ---- stats ---------------------------------------------------------------------------

    def stats(self) -> Stats:
        conn = self.conn

        def one(sql: str, *p: Any) -> int:
            return int(conn.execute(sql, p).get)

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
                )
            ),
            by_source=dict(
                conn.execute(
                    "SELECT source, count(*) FROM memories WHERE archived = 0 GROUP BY source "
                    "ORDER BY 2 DESC"
                )
            ),
            edges=one("SELECT count(*) FROM edges WHERE reverse = 0"),
            contradictions_open=one("SELECT count(*) FROM contradictions WHERE status='open'"),
            contradictions_suspected=one(
                "SELECT count(*) FROM contradictions WHERE status='suspected'"
            ),
            embedded=one("SELECT count(*) FROM embeddings WHERE model_id = ?", emb.model_id)
            if emb
            else one("SELECT count(*) FROM embeddings"),
            pending_embeddings=self.embeddings.pending(),
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
