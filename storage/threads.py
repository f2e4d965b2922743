"""Conversation context in memory search: a message is found through the messages around it.

A reply read alone ("Yes, last Tuesday!", "They were scared but we calmed them down") shares
few words with the question it answers; the message before it usually holds them. A memory
whose ``source_id`` reads ``<thread>#<n>`` (optionally followed by ``:<anything>``) is the n-th
message of that thread of its source, the form chat memories already carry
(``<session>#<message index>``). In a weighted-fusion search such a memory's score takes in
its neighbours' (same source, same thread, n ± 1):

* its keyword match is raised by :data:`BEFORE` × the previous message's and :data:`AFTER` ×
  the next one's (the neighbours' words count as lower-weight text of the message);
* its fused score is raised by :data:`SPREAD` × the better neighbour's.

Neighbours of the best :data:`EXPAND` candidates join the candidates with their own exact
keyword and vector scores, so a reply the lists missed can still be found. A store without
threaded memories ranks exactly as before. Measured on LoCoMo (``bench/bench_locomo.py``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from storage.repository import MemoryFilter, MemoryStore

BEFORE = 0.5
AFTER = 0.2
SPREAD = 0.4
EXPAND = 30
_POS = re.compile(r"^(.+)#(\d+)(?::.*)?$", re.DOTALL)

Key = tuple[Any, ...]  # the thread (one or more parts), then the position in it


def thread_position(source_id: str | None) -> tuple[str, int] | None:
    """``"<thread>#<n>[:…]"`` → (thread, n); None for any other source id."""
    if not source_id:
        return None
    m = _POS.match(source_id)
    return (m.group(1), int(m.group(2))) if m else None


def _positions(store: MemoryStore, ids: Iterable[int]) -> dict[int, Key]:
    rows = store.conn.execute(
        "SELECT id, source, source_id FROM memories WHERE id IN (SELECT value FROM json_each(?)) "
        "AND instr(source_id, '#') > 0",
        (json.dumps(list(ids)),),
    )
    out: dict[int, Key] = {}
    for mid, source, sid in rows:
        pos = thread_position(sid)
        if pos is not None:
            out[mid] = (source, pos[0], pos[1])
    return out


def _lookup(store: MemoryStore, keys: Iterable[Key]) -> dict[int, Key]:
    """Memories at these thread positions (any ``:…`` suffix)."""
    out: dict[int, Key] = {}
    for source, thread, n in keys:
        head = f"{thread}#{n}"
        for mid, sid in store.conn.execute(
            "SELECT id, source_id FROM memories WHERE source = ? AND (source_id = ? OR "
            "(source_id > ? AND source_id < ?))",
            (source, head, head + ":", head + ";"),
        ):
            if thread_position(sid) == (thread, n):
                out[mid] = (source, thread, n)
    return out


def fts_scores(
    store: MemoryStore, table: str, match: str | None, weights: str, ids: list[int]
) -> dict[int, float]:
    """-bm25 (higher is better) of these rowids of an FTS5 table, for ``match``."""
    if match is None or not ids:
        return {}
    # Match once, then keep the ids: a rowid list pushed into FTS5 re-runs the match per row.
    rows = store.conn.execute(
        f"WITH hits AS MATERIALIZED (SELECT rowid AS id, -bm25({table}, {weights}) AS s "
        f"FROM {table} WHERE {table} MATCH ?) "
        f"SELECT id, s FROM hits WHERE id IN (SELECT value FROM json_each(?))",
        (match, json.dumps(ids)),
    )
    return {r[0]: float(r[1]) for r in rows}


def _similarities(store: MemoryStore, qv: np.ndarray, ids: list[int]) -> dict[int, float]:
    emb = store.embedder
    if emb is None or not ids:
        return {}
    rows = store.conn.execute(
        "SELECT memory_id, vector FROM embeddings WHERE model_id = ? AND memory_id IN "
        "(SELECT value FROM json_each(?))",
        (emb.model_id, json.dumps(ids)),
    ).fetchall()
    if not rows:
        return {}
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
    sims = mat @ np.asarray(qv, dtype=np.float32)
    return {r[0]: float(s) for r, s in zip(rows, sims)}


def rescore(
    fused: list[tuple[int, float, dict[str, float]]],
    kw: list[tuple[int, float]],
    vec: list[tuple[int, float]],
    *,
    alpha: float,
    positions: Callable[[list[int]], dict[int, Key]],
    neighbours: Callable[[list[Key]], dict[int, Key]],
    bm25: Callable[[list[int]], dict[int, float]],
    similarity: Callable[[list[int]], dict[int, float]],
) -> list[tuple[int, float, dict[str, float]]]:
    """``fused`` (weighted fusion of ``kw`` and ``vec``, best first) re-scored with each
    threaded item's neighbours; unchanged when no candidate belongs to a thread.

    ``positions``: the thread position of those ids that have one; ``neighbours``: the
    (allowed) items at these positions; ``bm25`` and ``similarity``: the keyword score (as in
    ``kw``) and the cosine similarity (as in ``vec``) of items that were not candidates."""
    if not fused:
        return fused
    pos = positions([f[0] for f in fused])
    if not pos:
        return fused
    at: dict[Key, set[int]] = defaultdict(set)
    for mid, key in pos.items():
        at[key].add(mid)
    wanted: set[Key] = set()
    for mid, _, _ in fused[:EXPAND]:
        if mid in pos:
            group, n = pos[mid][:-1], pos[mid][-1]
            wanted |= {(*group, n - 1), (*group, n + 1)} - at.keys()
    found = neighbours(sorted(wanted)) if wanted else {}
    new = {mid: key for mid, key in found.items() if mid not in pos}
    for mid, key in new.items():
        pos[mid] = key
        at[key].add(mid)

    kw_s = dict(kw)
    vec_s = dict(vec)
    if new and kw:
        kw_s.update(bm25(list(new)))
    if new and vec:
        vec_s.update(similarity(list(new)))
    top_bm25 = max((s for _, s in kw), default=0.0)
    w_kw = 0.0 if not kw else (1.0 - alpha if vec else 1.0)
    w_vec = 0.0 if not vec else (alpha if kw else 1.0)

    def kn(mid: int) -> float:
        s = kw_s.get(mid)
        return s / top_bm25 if s is not None and top_bm25 > 0 else 0.0

    def best(values: dict[int, float], key: Key, step: int) -> float:
        near = (*key[:-1], key[-1] + step)
        return max((values.get(m, 0.0) for m in at.get(near, ())), default=0.0)

    base_kn = {mid: kn(mid) for mid in pos}
    own: dict[int, float] = {}
    for mid, key in pos.items():
        k = base_kn[mid] + BEFORE * best(base_kn, key, -1) + AFTER * best(base_kn, key, 1)
        own[mid] = w_kw * k + w_vec * max(0.0, vec_s.get(mid, 0.0))
    scores: dict[int, tuple[float, dict[str, float]]] = {m: (s, c) for m, s, c in fused}
    for mid, key in pos.items():
        total = own[mid] + SPREAD * max(best(own, key, -1), best(own, key, 1))
        comps = dict(scores[mid][1]) if mid in scores else {}
        if mid in new:
            if mid in kw_s:
                comps["keyword"] = kn(mid)
            if mid in vec_s:
                comps["vector"] = max(0.0, vec_s[mid])
        comps["context"] = total - (scores[mid][0] if mid in scores else 0.0)
        scores[mid] = (total, comps)
    top = max((s for s, _ in scores.values()), default=0.0)
    scale = 1.0 / top if top > 1.0 else 1.0
    out = [(mid, s * scale, c) for mid, (s, c) in scores.items()]
    # ties go by raw similarity, then by id, as in fuse()
    out.sort(key=lambda t: (-t[1], -vec_s.get(t[0], -2.0), t[0]))
    return out


def with_context(
    store: MemoryStore,
    fused: list[tuple[int, float, dict[str, float]]],
    kw: list[tuple[int, float]],
    vec: list[tuple[int, float]],
    *,
    alpha: float,
    filters: MemoryFilter,
    match: str | None,
    bm25_weights: str,
    query_vector: np.ndarray | None,
    min_similarity: float | None,
) -> list[tuple[int, float, dict[str, float]]]:
    """Memory search's candidates re-scored with their thread neighbours (see the module)."""

    def neighbours(keys: list[Key]) -> dict[int, Key]:
        found = _lookup(store, keys)
        allowed = store.ids_matching(filters, list(found)) if found else set()
        return {mid: key for mid, key in found.items() if mid in allowed}

    def similarity(ids: list[int]) -> dict[int, float]:
        if query_vector is None:
            return {}
        floor = -2.0 if min_similarity is None else min_similarity
        sims = _similarities(store, query_vector, ids)
        return {mid: s for mid, s in sims.items() if s >= floor}

    return rescore(
        fused,
        kw,
        vec,
        alpha=alpha,
        positions=lambda ids: _positions(store, ids),
        neighbours=neighbours,
        bm25=lambda ids: fts_scores(store, "memories_fts", match, bm25_weights, ids),
        similarity=similarity,
    )
