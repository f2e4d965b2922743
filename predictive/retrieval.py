"""One search over everything the project knows.

Memories (commits, decision records, rule sections, extracted solutions and decisions,
remembered items, each conversation as a whole) and the passages of every conversation message
are ranked together; hits from one source (a conversation, a rule file, a decision record, a
commit) collapse into one result that names that source: its kind, path and line, or session
and message, or commit, and a one-line label.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from predictive.scoring import HybridScorer, Scored
from storage import Kind, Memory, MemoryFilter, MemoryStore, pieces, search
from storage.errors import InvalidInput
from storage.search import DEFAULT_ALPHA
from storage.session_search import PassageLists, passage_lists, summary_ranking
from storage.sessions import sessions_of
from storage.text import fts_terms

POOL = 100
"""Candidates drawn from each list whatever ``k`` is, so the top results do not depend on it."""
PASSAGE_WEIGHT = 1.0
MEMORY_WEIGHT = 1.0
SUPPORT = 0.15
"""How much a unit's further evidence adds to its best hit (second hit full, then less)."""
SNIPPET_CHARS = 280
CURATED_SOURCES = ("rules", "adr")
CURATED_BOOST = 1.2
"""What a project wrote down on purpose (rule files, decision records) outranks what was said
along the way, when both match as well."""
NO_LONGER_VALID = 0.5
"""A superseded or ended memory's share of its score, in the summed ranking and in the keyword
and vector rankings alike (``--history`` shows it, after what replaced it)."""
_WORD = re.compile(r"\w+")
# The fusion of source rankings. ``summary`` was designed on gryag (bench/bench_devset.py, real
# model: the conversations its paraphrased questions missed were first or second by what they
# are about) and checked on twat-search; the weights were then chosen on both sets by a grid
# (RANK_K 5–60 × BEST_SHARE 0.5–0.95 × the weights of fused, vector 1–1.3 and summary 0.5–1):
# kept is a point where neither set loses a question at recall@5 in any group against the
# ranking before (gryag 0.75 → 0.875, twat-search 0.975 → 1.0); (20, 0.85) and (60, 0.95) on
# the same diagonal give the same on both.
RANKINGS: dict[str, float] = {"fused": 1.2, "keyword": 1.0, "vector": 1.2, "summary": 1.0}
"""The rankings of sources fused, and their weights. ``fused``: every hit of a source (its
memories by hybrid score and importance, its passages by hybrid score) summed into one score;
``keyword``: the source's best piece by bm25 alone (each passage and each memory scored on its
own, length-normalised, and scaled by the best of its kind: the keyword floor, so a long
session full of tool output does not drown the message that answers); ``vector``: its best
piece by cosine similarity alone; ``summary``: a conversation by the cosine similarity of its
title and summary (what it was about, when no single message says it in the question's
words)."""
RANK_K = 30
"""Reciprocal-rank fusion: a source at rank r of a ranking earns weight / (RANK_K + r)."""
BEST_SHARE = 0.9
"""How much of a source's fused score is its best ranking alone (the rest is the sum over
rankings): a source first by meaning alone, or by words alone, or by what it is about, is
not outvoted by sources that are middling in every ranking."""
PIECE_SHARE = 0.8
"""What the best item of a rule section (:mod:`storage.pieces`) adds to its source's summed
(``fused``) score, as a share of a whole memory's hybrid score: a section cut into many items
has many chances of one matching by accident. Chosen on gryag among 0.6, 0.7, 0.8 and 1.0
(real model): 0.8 and 1.0 find a convention question the others miss, both cost a
decision-record question at recall@5 (5th → 7th: a rule file's item on the same subject), 1.0
also recall@1. Checked on twat-search: unchanged at every cut-off (1.0 loses a chat question
there). Rejected on gryag: items in the keyword and vector rankings (they outranked
conversations for chat questions), their bm25 scaled by the best memory's (finds nothing
more), an item replacing its section's score instead of adding to it, and only items that
match by words and meaning both (the same trade)."""
CHAT_MEMORIES_AS_PIECES = False
"""Memories extracted from a conversation (and its own summary) enter the keyword and vector
rankings as pieces of that conversation, or not: its passages already speak for it, and a
summary's generic words pushed rule files and decision records out (gryag, conventions)."""

# What each kind of source is called in a result.
_SOURCE_KINDS = {"git": "commit", "adr": "decision record", "rules": "rule file"}
NAMED_KINDS: dict[str, re.Pattern[str]] = {
    "decision record": re.compile(
        r"\b(?:adrs?|rfcs?|proposals?|decision records?|design (?:docs?|documents?)|"
        r"architecture decisions?)\b",
        re.I,
    ),
    "rule file": re.compile(
        r"\b(?:rule files?|agent (?:rules|instructions)|agents\.md|claude\.md|"
        r"copilot[- ]instructions|cursor rules)\b",
        re.I,
    ),
    "commit": re.compile(r"\b(?:commits?|commit messages?)\b", re.I),
}
"""Words by which a question names the kind of source it asks about ("per the storage
proposal", "which commit")."""
NAMED_KIND_BOOST = 1.25
"""What a source of the kind a question names gets on its fused score. The first value tried,
not tuned: on gryag (bench/bench_devset.py, real model) decision-record questions that say
"the … proposal" R@1 0.33 → 0.83, R@5 0.83 → 1.0, no chat or convention question lost; on
twat-search, which names no kind of source, unchanged."""


@dataclass(frozen=True)
class Provenance:
    """Where a result comes from, enough to open it and to cite it."""

    source: str  # git | adr | rules | chat:<tool> | editor | manual | …
    kind: str  # commit | decision record | rule file | conversation | memory
    path: str | None = None
    line: int | None = None
    session: str | None = None
    message: int | None = None
    commit: str | None = None
    author: str | None = None  # who shared it (a file of the team's shared folder)
    shared_at: float | None = None  # when (the commit that last changed the file)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def __str__(self) -> str:
        """Where it is: a commit's short sha, a path (and line or message), a session."""
        if self.commit:
            return self.commit[:10]
        where = self.path or self.session or self.source
        if self.line is not None:
            where += f":{self.line}"
        if self.message is not None:
            where += f"#{self.message}"
        if self.author:
            where += f", shared by {self.author}"
        return where


@dataclass
class Found:
    """One result: a source unit, its best evidence and every piece that matched."""

    unit: str
    score: float
    label: str
    kind: str
    provenance: Provenance
    snippet: str
    memory: Memory | None = None
    memory_ids: list[int] = field(default_factory=list)
    passage_ids: list[int] = field(default_factory=list)
    relevance: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "id": self.memory.id if self.memory else None,
            "kind": self.kind,
            "label": self.label,
            "score": round(self.score, 6),
            "source": self.provenance.to_dict(),
            "provenance": str(self.provenance),
            "snippet": self.snippet,
            "memory_ids": self.memory_ids,
            "passage_ids": self.passage_ids,
            "text": self.memory.text if self.memory else self.snippet,
            "anchors": [str(a) for a in self.memory.anchors] if self.memory else [],
            "archived": bool(self.memory and self.memory.archived),
        }


def _clip(text: str, n: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def snippet(text: str, terms: set[str], n: int = SNIPPET_CHARS) -> str:
    """The stretch of ``text`` (about ``n`` characters) that holds most of the query's words
    (``terms``: their first five letters)."""
    flat = " ".join(text.split())
    if len(flat) <= n or not terms:
        return _clip(flat, n)
    hits = [(m.start(), m.group(0)[:5].lower()) for m in _WORD.finditer(flat)]
    hits = [(at, w) for at, w in hits if w in terms]
    best, best_at, j = 0, 0, 0
    for i, (at, _) in enumerate(hits):
        while hits[j][0] < at - n + 40:
            j += 1
        found = len({w for _, w in hits[j : i + 1]})
        if found > best:
            best, best_at = found, hits[j][0]
    start = flat.rfind(" ", 0, max(0, best_at - 40)) + 1 if best_at > 40 else 0
    return ("…" if start else "") + _clip(flat[start : start + n], n)


def label_of(m: Memory) -> str:
    """A memory's one-line label: its index label, else the start of its text."""
    if m.index_label and m.index_label.strip():
        return m.index_label.strip()
    return _clip(m.text, 80)


def _chat_source(m: Memory) -> tuple[str, str, int | None]:
    """(tool, session external id, message index) of a memory learned from a conversation."""
    tool = m.source.split(":", 1)[1] if ":" in m.source else m.source
    sid = m.source_id or ""
    session, _, rest = sid.partition("#")
    idx: int | None = None
    if rest:
        head = rest.split(":", 1)[0]
        idx = int(head) if head.isdigit() else None
    return tool, session, idx


def unit_of(m: Memory, origins: dict[tuple[str, str], str | None]) -> tuple[str, Provenance]:
    """The source unit a memory belongs to, and its provenance."""
    src, sid = m.source, m.source_id or ""
    if src == "git" and sid:
        return f"commit:{sid}", Provenance(src, "commit", commit=sid)
    if src in ("adr", "rules") and sid:
        path, line = sid, None
        head, sep, tail = sid.rpartition(":")
        if sep and tail.isdigit():
            path, line = head, int(tail)
        return f"file:{path}", Provenance(src, _SOURCE_KINDS[src], path=path, line=line)
    if src.startswith("chat:") and sid:
        tool, session, idx = _chat_source(m)
        origin = origins.get((tool, session)) or m.metadata.get("origin")
        return f"session:{tool}:{session}", Provenance(
            src, "conversation", path=origin, session=session, message=idx
        )
    shared = m.metadata.get("shared") if isinstance(m.metadata.get("shared"), dict) else None
    if shared:
        return f"memory:{m.id}", Provenance(
            src,
            "shared memory",
            path=shared.get("path"),
            author=shared.get("by"),
            shared_at=shared.get("at"),
        )
    return f"memory:{m.id}", Provenance(src, "memory", path=_file_anchor(m))


def _file_anchor(m: Memory) -> str | None:
    return next((a.value for a in m.anchors if a.type.value == "file"), None)


def _prior(m: Memory, now: float) -> float:
    """A small nudge from importance, kind and validity; relevance decides."""
    p = 0.9 + 0.1 * m.importance
    if m.kind in (Kind.DECISION, Kind.SOLUTION, Kind.CONVENTION):
        p += 0.03
    if m.source in CURATED_SOURCES:
        p *= CURATED_BOOST
    return p * _validity(m, now)


def _validity(m: Memory, now: float) -> float:
    """What a memory no longer valid (superseded, ended) keeps of its score in every ranking."""
    return NO_LONGER_VALID if m.valid_to is not None and m.valid_to <= now else 1.0


@dataclass
class _Unit:
    key: str
    provenance: Provenance
    scores: list[float] = field(default_factory=list)
    memory: Memory | None = None
    memory_score: float = -1.0
    snippet: str = ""
    snippet_score: float = -1.0
    memory_ids: list[int] = field(default_factory=list)
    passage_ids: list[int] = field(default_factory=list)

    def total(self) -> float:
        if not self.scores:
            return 0.0
        s = sorted(self.scores, reverse=True)
        return s[0] + SUPPORT * sum(x / (i + 1) for i, x in enumerate(s[1:4]))


def find(  # noqa: C901
    store: MemoryStore,
    query: str,
    *,
    k: int = 10,
    filters: MemoryFilter | None = None,
    mode: str = "hybrid",
    as_of: float | None = None,
    conversations: bool = True,
    min_similarity: float | None = None,
    now: float | None = None,
) -> list[Found]:
    """The best ``k`` sources for ``query`` across memories and conversation passages.

    ``as_of``: answer as the store would have at that instant (nothing learned later).
    ``conversations``: also rank message passages (off when ``filters`` narrows by anchor).
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the search query is empty")
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise InvalidInput("k must be at least 1")
    now = time.time() if now is None else now
    filters = filters or MemoryFilter()
    if as_of is not None:
        filters = _as_of(filters, as_of)
    pool = max(POOL, 3 * k)
    qv: np.ndarray | None = None
    if mode != "keyword" and store.has_embedder:
        emb = store.embedder
        assert emb is not None
        qv = emb.embed([query])[0]
    mem_hits = search(
        store,
        query,
        filters=filters,
        k=pool,
        candidates=pool,
        mode=mode,
        query_vector=qv,
        min_similarity=min_similarity,
        loader=lambda ids: store.get_many(ids, details=False),  # the winners get theirs below
    )
    lists = PassageLists()
    if conversations and _conversations_apply(filters):
        lists = passage_lists(
            store,
            query,
            k=pool,
            mode=mode if qv is not None or mode == "keyword" else "keyword",
            query_vector=qv,
            before=as_of,
        )
    passages = lists.fused
    sessions = sessions_of(store)
    origins = _origins(store)
    terms = {t[:5] for t in fts_terms(query) if len(t) > 2}
    units: dict[str, _Unit] = {}
    rankings: dict[str, dict[str, float]] = {name: {} for name in RANKINGS}
    top_bm25 = max((h.bm25 for h in mem_hits if h.bm25 is not None), default=0.0) or 1.0
    for h in mem_hits:
        m = h.memory
        key, prov = unit_of(m, origins)
        if CHAT_MEMORIES_AS_PIECES or not m.source.startswith("chat:"):
            valid = _validity(m, now)
            if h.bm25 is not None:
                _best(rankings["keyword"], key, valid * h.bm25 / top_bm25)
            if h.similarity is not None:
                _best(rankings["vector"], key, valid * h.similarity)
        u = units.setdefault(key, _Unit(key, prov))
        s = MEMORY_WEIGHT * h.score * _prior(m, now)
        u.scores.append(s)
        u.memory_ids.append(m.id)
        if s > u.memory_score:
            u.memory, u.memory_score = m, s
            if s > u.snippet_score:
                u.snippet, u.snippet_score = m.text, s
                if prov.line is not None or prov.message is not None:
                    u.provenance = prov
    _add_pieces(store, query, qv, filters, pool, mode, now, origins, units)
    every = [*passages, *lists.keyword, *lists.vector]
    if every:
        by_session = {s.id: s for s in sessions.get_many({p.session_id for p in every})}
        idx_of = sessions.indexes_of(p.message_id for p in every)
        for name, hits in (
            ("fused", passages),
            ("keyword", lists.keyword),
            ("vector", lists.vector),
        ):
            for p in hits:
                sess = by_session.get(p.session_id)
                if sess is None:
                    continue
                key = f"session:{sess.tool}:{sess.external_id}"
                prov = Provenance(
                    f"chat:{sess.tool}",
                    "conversation",
                    path=sess.metadata.get("origin"),
                    session=sess.external_id,
                    message=idx_of.get(p.message_id),
                )
                u = units.setdefault(key, _Unit(key, prov))
                if name != "fused":
                    _best(rankings[name], key, p.score)
                    if not u.snippet:
                        u.snippet, u.provenance = p.text, prov
                    continue
                s = PASSAGE_WEIGHT * p.score
                u.scores.append(s)
                u.passage_ids.append(p.passage_id)
                if s > u.snippet_score:
                    u.snippet, u.snippet_score, u.provenance = p.text, s, prov
    if qv is not None and conversations and _conversations_apply(filters):
        for sess, sim in summary_ranking(store, qv, k=pool, before=as_of):
            key = f"session:{sess.tool}:{sess.external_id}"
            u = units.setdefault(
                key,
                _Unit(
                    key,
                    Provenance(
                        f"chat:{sess.tool}",
                        "conversation",
                        path=sess.metadata.get("origin"),
                        session=sess.external_id,
                    ),
                ),
            )
            _best(rankings["summary"], key, sim)
            if not u.snippet:
                u.snippet = ". ".join(x for x in (sess.title, sess.summary) if x)
    _attach_session_memories(store, units)
    for u in units.values():
        if u.scores:
            rankings["fused"][u.key] = u.total()
    fused = _fuse_rankings(rankings)
    named = {kind for kind, cue in NAMED_KINDS.items() if cue.search(query)}
    for u in units.values():
        if u.provenance.kind in named and u.key in fused:
            fused[u.key] *= NAMED_KIND_BOOST
    ranked = sorted(units.values(), key=lambda u: (-fused.get(u.key, 0.0), -u.total(), u.key))[:k]
    _with_details(store, ranked)
    out = []
    for u in ranked:
        mem = u.memory
        out.append(
            Found(
                unit=u.key,
                score=fused.get(u.key, 0.0),
                label=label_of(mem) if mem is not None else _clip(u.snippet, 80),
                kind=mem.kind.value if mem is not None else u.provenance.kind,
                provenance=u.provenance,
                snippet=snippet(u.snippet, terms),
                memory=mem,
                memory_ids=u.memory_ids,
                passage_ids=u.passage_ids,
                relevance=max(u.scores, default=0.0),
            )
        )
    return out


def _add_pieces(
    store: MemoryStore,
    query: str,
    qv: np.ndarray | None,
    filters: MemoryFilter,
    pool: int,
    mode: str,
    now: float,
    origins: dict[tuple[str, str], str | None],
    units: dict[str, _Unit],
) -> None:
    """The items of rule sections (:mod:`storage.pieces`) scored on their own, each counted as
    evidence for the memory it belongs to: a question that one bullet of a long section
    answers finds that section. A piece that matches better than any memory of its source
    makes its memory the one shown, with the piece as the snippet."""
    found = pieces.search(
        store,
        query,
        filters=filters,
        k=pool,
        query_vector=qv if mode != "keyword" else None,
        keywords=mode != "vector",
    )
    hits = [*found.keyword, *found.vector]
    if not hits:
        return
    mems = {m.id: m for m in store.get_many(sorted({h.memory_id for h in hits}), details=False)}
    words = {h.piece_id: h.score for h in found.keyword}
    sims = {h.piece_id: h.score for h in found.vector}
    best: dict[int, tuple[float, str]] = {}  # memory → its best piece's score and text
    for h in hits:
        w, v = words.get(h.piece_id, 0.0), sims.get(h.piece_id)
        s = w if v is None else (1 - DEFAULT_ALPHA) * w + DEFAULT_ALPHA * max(0.0, v)
        if s > best.get(h.memory_id, (-1.0, ""))[0]:
            best[h.memory_id] = (s, h.text)
    for mid, (s, text) in best.items():
        m = mems.get(mid)
        if m is None:
            continue
        key, prov = unit_of(m, origins)
        u = units.setdefault(key, _Unit(key, prov))
        score = PIECE_SHARE * MEMORY_WEIGHT * s * _prior(m, now)
        u.scores.append(score)
        if mid not in u.memory_ids:
            u.memory_ids.append(mid)
        if score > u.memory_score:
            u.memory, u.memory_score = m, score
            u.snippet, u.snippet_score, u.provenance = text, score, prov


def _best(ranking: dict[str, float], key: str, score: float) -> None:
    """A source's score in one ranking is that of its best piece."""
    if score > ranking.get(key, -math.inf):
        ranking[key] = score


def _fuse_rankings(rankings: dict[str, dict[str, float]]) -> dict[str, float]:
    """Weighted reciprocal-rank fusion of the source rankings (:data:`RANKINGS`)."""
    total: dict[str, float] = {}
    best: dict[str, float] = {}
    for name, scores in rankings.items():
        weight = RANKINGS.get(name, 0.0)
        if weight <= 0.0:
            continue
        for rank, key in enumerate(sorted(scores, key=lambda x: (-scores[x], x)), start=1):
            share = weight / (RANK_K + rank)
            total[key] = total.get(key, 0.0) + share
            best[key] = max(best.get(key, 0.0), share)
    return {key: BEST_SHARE * best[key] + (1 - BEST_SHARE) * total[key] for key in total}


def _as_of(filters: MemoryFilter, at: float) -> MemoryFilter:
    """What was known before ``at`` (a memory learned at that very instant was not yet)."""
    return replace(filters, valid_at=math.nextafter(at, -math.inf))


def _conversations_apply(filters: MemoryFilter) -> bool:
    """Passages have no kinds, anchors or branch: a search narrowed by those skips them."""
    return not (filters.kinds or filters.anchors or filters.branch or filters.include_archived)


def _origins(store: MemoryStore) -> dict[tuple[str, str], str | None]:
    """(tool, external id) → the file a conversation was read from (cached until a session
    changes)."""
    from storage.sessions import generation

    gen = generation(store.conn)
    cached = getattr(store, "_origins_cache", None)
    if cached is not None and cached[0] == gen:
        return cached[1]
    out = sessions_of(store).origins()
    store._origins_cache = (gen, out)  # type: ignore[attr-defined]
    return out


def _with_details(store: MemoryStore, ranked: list[_Unit]) -> None:
    """The shown memories with their anchors and artifacts (the pool was ranked without), and
    a remembered memory's provenance with its file."""
    full = {m.id: m for m in store.get_many([u.memory.id for u in ranked if u.memory])}
    for u in ranked:
        m = full.get(u.memory.id) if u.memory is not None else None
        if m is None:
            continue
        u.memory = m
        if u.key == f"memory:{m.id}":
            u.provenance = replace(u.provenance, path=_file_anchor(m))


def _attach_session_memories(store: MemoryStore, units: dict[str, _Unit]) -> None:
    """A conversation found only through its passages is shown as its own memory."""
    wanted = [u for u in units.values() if u.memory is None and u.key.startswith("session:")]
    if not wanted:
        return
    pairs = [u.key.split(":", 2)[1:] for u in wanted]
    found = sessions_of(store).conversation_memories((tool, ext) for tool, ext in pairs)
    by_key = {f"session:{tool}:{ext}": mid for (tool, ext), mid in found.items()}
    mems = {m.id: m for m in store.get_many(list(by_key.values()))}
    for u in wanted:
        mid = by_key.get(u.key)
        if mid in mems:
            u.memory = mems[mid]


def recall(
    store: MemoryStore,
    query: str,
    *,
    filters: MemoryFilter | None = None,
    k: int = 10,
    mode: str = "hybrid",
    seeds: Sequence[int] = (),
    scorer: HybridScorer | None = None,
    now: float | None = None,
    min_similarity: float | None = None,
) -> list[Scored]:
    """Top ``k`` memories for ``query`` (memories only), ranked by the hybrid scorer; the
    engine's and ``explore``'s building block. People search with :func:`find`."""
    hits = search(
        store,
        query,
        filters=filters,
        k=max(POOL, k * 3),
        candidates=max(POOL, k * 3),
        mode=mode,
        min_similarity=min_similarity,
    )
    ranked = (scorer or HybridScorer()).rank(hits, store=store, seeds=seeds, now=now)
    return ranked[:k]
