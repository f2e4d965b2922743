"""Conversation context in search: a message is found through the messages around it.

A reply read alone ("Yes, last Tuesday!", "They were scared but we calmed them down") shares
few words with the question it answers; the message before it usually holds them. A memory
whose ``source_id`` reads ``<thread>#<n>`` (optionally followed by ``:<anything>``) is the n-th
message of that thread of its source, the form chat memories already carry
(``<session>#<message index>``). In a hybrid weighted-fusion search such a memory's score
takes in its neighbours' (same source, same thread, n ± 1):

* its keyword match is raised by :data:`BEFORE` × the previous message's and :data:`AFTER` ×
  the next one's (the neighbours' words count as lower-weight text of the message);
* its fused score is raised by :data:`SPREAD` × the better neighbour's.

Neighbours of the best :data:`EXPAND` candidates join the candidates with their own exact
vector similarity (and no keyword score: they did not match well enough to be keyword
candidates), so a reply the lists missed can still be found. A store without
threaded memories ranks exactly as before. :func:`rescore` is shared with
:mod:`storage.session_search`, where a session's messages (and, when asked, passages) are the
thread. Measured on LoCoMo and the dev set (bench/README.md, issue 10).
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
EXPAND = 10
_POS = re.compile(r"^(.+)#(\d+)(?::.*)?$", re.DOTALL)

Key = tuple[Any, ...]  # the thread (one or more parts), then the position in it


def thread_position(source_id: str | None) -> tuple[str, int] | None:
    """``"<thread>#<n>[:…]"`` → (thread, n); None for any other source id."""
    if not source_id:
        return None
    m = _POS.match(source_id)
    return (m.group(1), int(m.group(2))) if m else None


def _positions(
    store: MemoryStore, ids: Iterable[int], suffixed: set[str] | None = None
) -> dict[int, Key]:
    """Thread positions of these memories; ``suffixed`` collects the sources that write
    ``<thread>#<n>:…``."""
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
            if suffixed is not None and ":" in sid[sid.rindex("#") :]:
                suffixed.add(source)
    return out


def _lookup(
    store: MemoryStore, keys: Iterable[Key], suffixed: set[str] | None = None
) -> dict[int, Key]:
    """Memories at these thread positions: ``<thread>#<n>``, and ``<thread>#<n>:…`` for the
    sources in ``suffixed`` (all when None)."""
    wanted = set(keys)
    heads: dict[str, list[str]] = defaultdict(list)
    for source, thread, n in wanted:
        heads[source].append(f"{thread}#{n}")
    rows: list[tuple[int, str, str]] = []
    for source, ids in heads.items():
        rows += store.conn.execute(
            "SELECT id, source, source_id FROM memories WHERE source = ? AND source_id IN "
            "(SELECT value FROM json_each(?))",
            (source, json.dumps(ids)),
        )
        if suffixed is not None and source not in suffixed:
            continue
        for head in ids:  # "<head>:…" sorts between "<head>:" and "<head>;"
            rows += store.conn.execute(
                "SELECT id, source, source_id FROM memories WHERE source = ? "
                "AND source_id > ? AND source_id < ?",
                (source, head + ":", head + ";"),
            )
    out: dict[int, Key] = {}
    for mid, source, sid in rows:
        pos = thread_position(sid)
        if pos is not None and (source, *pos) in wanted:
            out[mid] = (source, *pos)
    return out


def _similarities(store: MemoryStore, qv: np.ndarray, ids: list[int]) -> dict[int, float]:
    emb = store.embedder
    if emb is None or not ids:
        return {}
    rows: list[tuple[int, bytes]] = list(
        store.conn.execute(
            # by primary key (``+model_id``: not through the model's index, which holds them all)
            "SELECT memory_id, vector FROM embeddings WHERE memory_id IN "
            "(SELECT value FROM json_each(?)) AND +model_id = ?",
            (json.dumps(ids), emb.model_id),
        )
    )
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
    similarity: Callable[[list[int]], dict[int, float]],
) -> list[tuple[int, float, dict[str, float]]]:
    """``fused`` (weighted fusion of ``kw`` and ``vec``, best first) re-scored with each
    threaded item's neighbours; unchanged when no candidate belongs to a thread.

    ``positions``: the thread position of those ids that have one; ``neighbours``: the
    (allowed) items at these positions; ``similarity``: the cosine similarity (as in ``vec``)
    of items that were not candidates. A neighbour that was not a keyword candidate has no
    keyword score, as in :func:`storage.search.fuse`."""
    if not fused:
        return fused
    pos = positions([f[0] for f in fused])
    if not pos:
        return fused
    at: dict[Key, list[int]] = defaultdict(list)
    for mid, key in pos.items():
        at[key].append(mid)
    wanted: set[Key] = set()
    for mid, _, _ in fused[:EXPAND]:
        here = pos.get(mid)
        if here is not None:
            for near in ((*here[:-1], here[-1] - 1), (*here[:-1], here[-1] + 1)):
                if near not in at:
                    wanted.add(near)
    new = {m: k for m, k in (neighbours(sorted(wanted)) if wanted else {}).items() if m not in pos}
    for mid, key in new.items():
        pos[mid] = key
        at[key].append(mid)
    vec_s = dict(vec)
    if new and vec:
        vec_s.update(similarity(list(new)))
    top_bm25 = max((s for _, s in kw), default=0.0)
    w_kw = 0.0 if not kw else (1.0 - alpha if vec else 1.0)
    w_vec = 0.0 if not vec else (alpha if kw else 1.0)
    kn = {mid: s / top_bm25 for mid, s in kw} if top_bm25 > 0 else {}

    before: dict[int, list[int]] = {}
    after: dict[int, list[int]] = {}
    for mid, key in pos.items():
        before[mid] = at.get((*key[:-1], key[-1] - 1), [])
        after[mid] = at.get((*key[:-1], key[-1] + 1), [])

    def best(values: dict[int, float], ids: list[int]) -> float:
        return max([values.get(m, 0.0) for m in ids], default=0.0)

    own = {
        mid: w_kw
        * (kn.get(mid, 0.0) + BEFORE * best(kn, before[mid]) + AFTER * best(kn, after[mid]))
        + w_vec * max(0.0, vec_s.get(mid, 0.0))
        for mid in pos
    }
    scores: dict[int, tuple[float, dict[str, float]]] = {m: (s, c) for m, s, c in fused}
    for mid in pos:
        total = own[mid] + SPREAD * max(best(own, before[mid]), best(own, after[mid]))
        old = scores.get(mid)
        comps = dict(old[1]) if old is not None else {}
        if mid in new and mid in vec_s:
            comps["vector"] = max(0.0, vec_s[mid])
        comps["context"] = total - (old[0] if old is not None else 0.0)
        scores[mid] = (total, comps)
    top = max(s for s, _ in scores.values())
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
    query_vector: np.ndarray | None,
    min_similarity: float | None,
) -> list[tuple[int, float, dict[str, float]]]:
    """Memory search's candidates re-scored with their thread neighbours (see the module)."""

    suffixed: set[str] = set()

    def neighbours(keys: list[Key]) -> dict[int, Key]:
        found = _lookup(store, keys, suffixed)
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
        positions=lambda ids: _positions(store, ids, suffixed),
        neighbours=neighbours,
        similarity=similarity,
    )
