"""Candidate pairs by subject, not by wording: the earlier memories a judge should read beside a
later one.

The local rules find a conflict only when the later text says it with a marker ("instead of",
"no longer", another value for one key). A later statement that changes an earlier one in
other words ("use ACM for SSL" against "we buy certificates from a third party") shares its
*subject*, not its wording: the files and symbols it is anchored to, the names it uses
(identifiers, products, acronyms), its title's words, its categories, and its meaning (the
embedding). :func:`propose` ranks the earlier memories that share most of that and answers at
most :data:`MAX_CANDIDATES` of them; they go to a judge, or wait as pending without one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from predictive.conflicts.wording import content_words
from storage.errors import StoreError
from storage.models import Kind, Memory
from storage.repository import MemoryFilter, MemoryStore
from storage.search import keyword_candidates, vector_candidates
from storage.text import STOPWORDS

MAX_CANDIDATES = 5
"""Earlier memories proposed for one later memory at most."""
POOL = 40
"""Nearest memories by meaning and by shared names looked at before ranking."""
MIN_SCORE = 0.3
"""A candidate scoring less than this (neither similar nor sharing a name) is not proposed."""
NAME_WEIGHT = 0.08
"""What each shared name adds to the similarity (at most :data:`MAX_NAMES` of them)."""
MAX_NAMES = 4
ANCHOR_WEIGHT = 0.15
"""What a shared anchor (file, symbol, module) adds."""
CATEGORY_WEIGHT = 0.05
"""What a shared category adds."""
TITLE_WEIGHT = 0.1
"""What sharing two or more words of the titles adds (two decision records on one subject)."""
MAX_KEYS = 12
"""Names of a text looked up by keyword at most (the rarest kinds first: identifiers)."""
KEYWORD_WEIGHT = 0.2
"""What the best keyword match of the pool adds (others in proportion to their score): the
rare words two texts share, whatever the rest of their wording."""

_IDENTIFIER = re.compile(
    r"`([^`\s]{2,60})`"  # anything quoted as code
    r"|\b([A-Za-z_][\w-]*[_./][\w./-]*\w)"  # snake_case, dotted.names, paths/to/files
    r"|\b([a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*)\b"  # camelCase, CamelCase
)
_ENTITY = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][A-Za-z0-9+#]{1,30}|[A-Z]{2,10}s?)\b", re.M)
"""Capitalised names inside a sentence (PostgreSQL, Nginx) and acronyms (ACM, SSL, ELBs)."""
_NOT_NAMES = frozenset(
    "adr adrs rfc status context decision decisions consequences accepted approved proposed "
    "pending option options chosen we i the a an this that it in on for to of and or but "
    "if when use using".split()
)


@dataclass(frozen=True)
class Candidate:
    """An earlier memory a later one may change, and why it was proposed."""

    older: int
    newer: int
    score: float
    why: str

    @property
    def pair(self) -> tuple[int, int]:
        return (min(self.older, self.newer), max(self.older, self.newer))


@lru_cache(maxsize=8192)
def names(text: str) -> frozenset[str]:
    """The names a text uses: identifiers (and their dotted or slashed parts), capitalised
    names and acronyms, in lower case."""
    out: set[str] = set()
    for m in _IDENTIFIER.finditer(text):
        name = next(g for g in m.groups() if g).lower().strip("./-")
        out.add(name)
        out.update(p for p in re.split(r"[./]", name) if len(p) >= 3 and p not in _NOT_NAMES)
    for m in _ENTITY.finditer(text):
        w = m.group(1).lower()
        if w not in STOPWORDS and w not in _NOT_NAMES:
            out.add(w.removesuffix("s") if m.group(1).isupper() else w)
    return frozenset(w for w in out if len(w) >= 2)


@lru_cache(maxsize=8192)
def _words(text: str) -> frozenset[str]:
    """:func:`content_words`, read once per text (the same earlier memories come back as
    candidates for many later ones)."""
    return content_words(text)


def _title(m: Memory) -> frozenset[str]:
    """The content words of a memory's first line (a record's or a section's title)."""
    return _words(m.text.split("\n", 1)[0][:200])


def _anchors(m: Memory) -> frozenset[str]:
    return frozenset(f"{a.type.value}:{a.value}" for a in m.anchors)


def earlier(x: Memory, y: Memory) -> bool:
    """Whether ``x`` was there before ``y`` (by the time it holds from, then by id)."""
    return (x.valid_from, x.id) < (y.valid_from, y.id)


def _pool(
    store: MemoryStore, m: Memory, kinds: tuple[Kind, ...], keys: frozenset[str]
) -> tuple[dict[int, float | None], dict[int, float]]:
    """Ids near ``m`` by meaning (id → similarity, None when found otherwise), and the
    keyword scores of those its rare words and its names find."""
    filters = MemoryFilter(kinds=kinds, valid_at=m.valid_from + 1e-6)
    near: dict[int, float | None] = {}
    keyword: dict[int, float] = {}
    if store.has_embedder:
        vector = store.embeddings.of([m.id]).get(m.id)
        if vector is not None:
            try:
                for mid, sim in vector_candidates(store, np.asarray(vector), filters, POOL):
                    near[mid] = sim
            except StoreError:
                pass
    # one keyword query: the names first (identifiers before other names), then the text's
    # own words, as many as a keyword query reads
    ranked = sorted(keys, key=lambda k: (not re.search(r"[_./]", k), -len(k)))[:MAX_KEYS]
    query = " ".join(ranked) + " " + m.text[:2000]
    if query.strip():
        try:
            for mid, score in keyword_candidates(store, query, filters, POOL):
                near.setdefault(mid, None)
                keyword[mid] = score
        except StoreError:
            pass
    near.pop(m.id, None)
    keyword.pop(m.id, None)
    return near, keyword


def propose(
    store: MemoryStore,
    m: Memory,
    kinds: tuple[Kind, ...],
    allowed: Callable[[Memory, Memory], bool],
    *,
    limit: int = MAX_CANDIDATES,
) -> list[Candidate]:
    """At most ``limit`` earlier memories of ``kinds`` on ``m``'s subject, best first;
    ``allowed(m, other)`` says which pairs may be proposed at all."""
    keys = names(m.text[:4000])
    near, keyword = _pool(store, m, kinds, keys)
    if not near:
        return []
    others = [o for o in store.get_many(list(near)) if earlier(o, m)]
    if not others:
        return []
    vectors = store.embeddings.of([o.id for o in others if near[o.id] is None] + [m.id])
    mine = vectors.get(m.id)
    anchors, title = _anchors(m), _title(m)
    categories = set(store.categories.of(m.id))
    words = _words(m.text[:4000])
    best = max(keyword.values(), default=0.0)
    scored: list[Candidate] = []
    for o in others:
        if not allowed(m, o):
            continue
        sim = near[o.id]
        if sim is None:
            v = vectors.get(o.id)
            sim = float(np.dot(v, mine)) if v is not None and mine is not None else 0.0
        # a name of either text that the other uses, as a name or as a plain word
        theirs = names(o.text[:4000])
        shared = sorted((keys & (theirs | _words(o.text[:4000]))) | (theirs & words))
        shared = shared[:MAX_NAMES]
        score = sim + NAME_WEIGHT * len(shared)
        why = [f"similar {sim:.2f}"]
        if best > 0 and keyword.get(o.id):
            score += KEYWORD_WEIGHT * keyword[o.id] / best
            why.append(f"keywords {keyword[o.id] / best:.2f}")
        if shared:
            why.append("names " + ", ".join(shared))
        if anchors & _anchors(o):
            score += ANCHOR_WEIGHT
            why.append("anchors " + ", ".join(sorted(anchors & _anchors(o))[:2]))
        if len(title & _title(o)) >= 2:
            score += TITLE_WEIGHT
            why.append("titles " + ", ".join(sorted(title & _title(o))[:3]))
        if categories and categories & set(store.categories.of(o.id)):
            score += CATEGORY_WEIGHT
            why.append("category")
        if score >= MIN_SCORE:
            scored.append(Candidate(o.id, m.id, round(score, 4), "; ".join(why)))
    scored.sort(key=lambda c: -c.score)
    return scored[:limit]
