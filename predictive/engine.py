"""The predictive context engine: editor signals → candidates → four tiers → rendered context."""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from predictive.budget import TIERS, BudgetConfig, Candidate, Tier, TierFill, fit_tiers
from predictive.categories import area_renderings, areas_for_path
from predictive.chat_excerpts import EXPLAINS, Said, what_was_said
from predictive.compress import Compressor, DeterministicCompressor
from predictive.consolidation.serving import cap_renderings, serving_level
from predictive.excerpts import (
    FileTerms,
    excerpt,
    file_terms,
    sentences,
    without_testing,
    worth,
)
from predictive.file_facts import FileFacts, branch_tokens, derive_file, error_signature
from predictive.glob_breadth import AREA_SHARE, GlobBreadth, glob_weight
from predictive.globs import glob_match, specificity
from predictive.open_file import is_the_open_file
from predictive.render import (
    TIER_TITLES,
    account,
    chat_renderings,
    commit_renderings,
    contradiction_renderings,
    memory_renderings,
    pointer,
    render_markdown,
    title,
    topic_renderings,
    unwrapped,
)
from predictive.restatements import restated
from predictive.retrieval import label_of
from predictive.rule_topics import TOPIC_MIN, RuleIndex, binding
from predictive.scoring import HybridScorer
from predictive.selection import MANY_FILES, admit, loaded_by, place
from predictive.signals import Activity, Diagnostic, infer_activity
from predictive.staleness import GONE, Staleness, Verdict
from predictive.tokens import count_tokens, truncate_to_tokens
from predictive.topics import file_topics
from storage import (
    MAX_ANCHOR_CHARS,
    AccessKind,
    Anchor,
    AnchorType,
    Contradiction,
    ContradictionStatus,
    Kind,
    Level,
    Memory,
    MemoryFilter,
    MemoryStore,
    StoreError,
    clip_anchor_value,
    search,
)
from storage.search import MIN_SIMILARITY
from storage.session_search import session_first
from storage.sessions import sessions_of
from storage.vector_progress import VectorProgress

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1_000_000
RECENT_ERROR_SECONDS = 24 * 3600
# How strongly each kind of anchor match predicts that a memory is needed.
ANCHOR_WEIGHTS: dict[str, float] = {
    "file": 1.0,
    "error": 1.0,
    "symbol": 0.85,
    "module": 0.8,
    "paired": 0.7,
    "branch": 0.7,
    "import": 0.6,
    "package": 0.5,
    "tag": 0.5,
    "glob": 0.9,
}
CONVERSATION_HITS = 5  # session-first message hits whose extracted memories join the context
CONVERSATION_WINDOW = 3  # memories extracted within this many messages of a hit
BACKGROUND_KINDS = (Kind.CONVENTION, Kind.WORKFLOW, Kind.SUMMARY)
MAX_QUERY_WORDS = 16
RELEVANCE_SHARE = 0.75
CONVERSATION_BY_WORDS = 0.6
CONVERSATION_BY_PAIR = 0.8
CHAT_ITEM_FILE = 0.75
CHAT_ITEM_INDIRECT = 0.5
RENDER_CACHE_SIZE = 5_000
MAX_ANCHORED = 120
MAX_POINTERS = 60
MEMORY_CACHE_SIZE = 10_000
MAX_RULES = 5_000
COMMIT_LINES = 4  # sentences of a commit's body shown when the whole body does not fit
LONG_BODY_LINES = 40  # a commit body longer than this is never shown whole
LONG_BODY_EXCERPT = 8  # the sentences of such a body shown instead
NAMES_FILE = 0.5  # a sentence this strongly tied to the file (its names, its pair's) is about it
SAID_FULL = 12  # things said in a conversation shown with it (fewer when the tier is full)
SAID_SHORT = 3
SAID_CACHE_SIZE = 2_000
SILENT_SESSION = 0.85
"""What a conversation that said nothing about the open file itself (shown by its title) keeps
of its score: below one with something said at the same tie, not below a conversation tied
more weakly. Chosen on gryag (file-open prefetch@5 0.871 at 0.75 → 0.925 at 0.85, the same at
0.9 and 1.0), checked on twat-search (0.949 / 0.988 at every value) and context-gold (twat-search
0.80, dd-trace-py 0.87, unchanged)."""
MINOR_SHARE = (
    1 / 6
)  # a file named this much less often than a conversation's main file is in passing
COMMIT_TIES = frozenset({"file", "paired", "error", "branch", "session"})
SESSION_COMMIT = 0.8  # a conversation's commit, against the conversation's tie
NAMED_RELEVANCE = 0.5
ABOUT_FILE = 0.6  # a conversation tied this strongly is about the file (see mention_strength)
MENTION_LINES = 2.0
"""How much the number of lines that name a file counts, against the conversation's length, in
the tie that ranks a conversation for an open file (see :func:`mention_strength`): one that
names the file on more lines ranks first even when it is much longer. Whether a conversation
is about the file (:data:`ABOUT_FILE`, what is shown of it) keeps weight 1: with 2 there too,
context-gold on twat-search fell 0.83 → 0.78 with one must-not item. Chosen on gryag (file-open
prefetch@5 0.801 → 0.871 with the tool-output ties of ingest; 3.0 the same), checked on
twat-search (0.920 → 0.949, @10 0.988)."""
GLOB_BASE = 0.7  # a glob naming no folder (every file of a language) …
GLOB_PER_FOLDER = 0.15  # … and each folder it names
RULE_TOPIC_BONUS = 0.15
RULE_TOPIC_STEP = 0.02
RULE_BINDING_BONUS = 0.2
LONG_RULE = 4  # sections a rule file has at least before its off-topic ones become pointers
NARROWER = 0.05  # how much narrower a rule's glob must be to make a broader one's sections pointers
CHANGED_WEIGHT = 0.85  # a memory whose code changed since ranks after one that still holds
GONE_WEIGHT = 0.3  # one whose subject is gone: a pointer in the Index at most, marked stale


@dataclass(frozen=True)
class ContextRequest:
    """What the editor shows now: the file, its text, the branch, the diagnostics."""

    path: str
    text: str | None = None
    language_id: str | None = None
    branch: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    activity: Activity | None = None  # override; inferred when None
    budget: int | None = None
    root: str | None = None
    as_of: float | None = None  # answer as the store would have then (nothing learned later)


@dataclass
class Item:
    key: str
    tier: Tier
    level: str
    score: float
    tokens: int
    memory_id: int | None
    kind: str
    label: str | None = None  # the memory's one-line index label, for lists in editors
    stale: dict[str, Any] | None = None  # the code it cites changed or is gone (staleness)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, tier=self.tier.value, score=round(self.score, 6))


@dataclass
class AssembledContext:
    markdown: str
    tokens: dict[str, Any]
    items: list[Item]
    file: FileFacts
    branch: str | None
    activity: Activity
    generation: int
    elapsed_ms: float
    cached: bool = False
    fills: dict[Tier, TierFill] = field(default_factory=dict, repr=False)
    doc_title: str = ""
    loaded_by: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    learning: VectorProgress | None = None  # vectors still being computed: chosen without them

    def markdown_for(self, tool: str) -> str:
        """The context as the AI tool ``tool`` should get it: without the rules it reads
        from their own files itself (a root ``CLAUDE.md`` for Claude Code, …)."""
        if not any(tool in tools for tools in self.loaded_by.values()):
            return self.markdown
        kept = {
            t: replace(
                f,
                placed=[p for p in f.placed if tool not in self.loaded_by.get(p.candidate.key, ())],
            )
            for t, f in self.fills.items()
        }
        return render_markdown(self.doc_title, kept)

    @property
    def memory_ids(self) -> list[int]:
        return [i.memory_id for i in self.items if i.memory_id is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file.path,
            "module": self.file.module,
            "branch": self.branch,
            "activity": self.activity.value,
            "tokens": self.tokens,
            "items": [i.to_dict() for i in self.items],
            "generation": self.generation,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "cached": self.cached,
            "markdown": self.markdown,
        } | ({"learning": self.learning.to_dict()} if self.learning is not None else {})


def mention_strength(m: Memory, path: str, per_line: float = 1.0) -> float:
    """How strongly a memory that counts its mentions of files (a conversation) is tied to
    ``path``: more (weighted) mentions, fewer for a longer conversation, more when its title
    names the file; 1.0 for a memory that does not count mentions. ``per_line`` weighs the
    number of lines against the length (the file-open ranking uses :data:`MENTION_LINES`)."""
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    mentions = meta.get("mentions")
    if not isinstance(mentions, dict):
        return 1.0
    n = mentions.get(path)
    n = n if isinstance(n, int | float) and n > 0 else 0
    chars = meta.get("chars")
    length = chars if isinstance(chars, int | float) and chars > 0 else 1000
    title = str(meta.get("sessionTitle") or meta.get("session") or "").lower()
    stem = [t for t in re.split(r"[_\-.\s]+", Path(path).stem.lower()) if len(t) > 1]
    x = per_line * math.log1p(n) - 0.2 * math.log(max(length, 1000) / 1000)
    if stem and all(t in title for t in stem):
        x += 0.5
    return max(0.3, min(1.0, 0.35 + 0.2 * x))


def mention_share(m: Memory, paths: Iterable[str]) -> float:
    """How much of a conversation is about any of ``paths``: their most mentions against those
    of the file it names most; 1.0 for a memory that does not count mentions."""
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    mentions = meta.get("mentions")
    if not isinstance(mentions, dict) or not mentions:
        return 1.0
    counts = [v for v in mentions.values() if isinstance(v, int | float)]
    top = max(counts, default=0)
    if top <= 0:
        return 1.0
    here = [mentions.get(p) for p in paths]
    return max((v for v in here if isinstance(v, int | float)), default=0) / top


def _route_weight(m: Memory, reason: str) -> float:
    """A whole conversation is tied to a file by how it talks about it (its mentions), not by
    sharing words with the file's name; an item extracted from one turn of a conversation
    names files in passing, so its file anchor counts less than a commit's or a rule's."""
    from_chat = m.source.startswith("chat:")
    if not from_chat:
        return 1.0
    if isinstance(m.metadata, dict) and m.metadata.get("unit") == "session":
        if reason == "paired":  # a conversation about a test's source is less about the test
            return CONVERSATION_BY_PAIR
        return 1.0 if reason in ("file", "error", "branch") else CONVERSATION_BY_WORDS
    if reason in ("file", "paired"):
        return CHAT_ITEM_FILE
    return CHAT_ITEM_INDIRECT if reason in ("module", "import", "package", "tag") else 1.0


@dataclass
class _Cand:
    memory: Memory
    relevance: float = 0.0
    reasons: set[str] = field(default_factory=set)


def _marked(renderings: dict[Level, str], verdict: Verdict) -> dict[Level, str]:
    """Each level of a memory whose code changed, with the line that says how."""
    mark = verdict.mark()
    if not mark:
        return renderings
    return {
        lv: (f"{r} ({mark})" if lv is Level.INDEX else f"{r}\n  - {mark}")
        for lv, r in renderings.items()
    }


def _read_text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


class ContextEngine:
    """Assembles the context for a request; thread-safe; caches per store generation."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        budget: BudgetConfig | None = None,
        compressor: Compressor | None = None,
        scorer: HybridScorer | None = None,
        root: str | Path | None = None,
        cache_size: int = 64,
        search_k: int = 40,
        staleness: Staleness | None = None,
        wait_for_staleness: bool = False,
    ) -> None:
        self.store = store
        self.budget = budget or BudgetConfig()
        self.compressor = compressor or DeterministicCompressor()
        self.scorer = scorer or HybridScorer()
        self.root = str(root) if root else None
        self.search_k = search_k
        self._cache: OrderedDict[tuple[Any, ...], AssembledContext] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._pool_cache: dict[int, tuple[list[Memory], list[Memory]]] = {}
        # bounded caches drop what was used least recently, never all at once (an open that
        # found them emptied would load and render every memory again)
        self._render_cache: OrderedDict[tuple[int, float], dict[Level, str]] = OrderedDict()
        self._mem_cache: OrderedDict[int, Memory] = OrderedDict()
        self._mem_cache_gen = -1
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lm-query-embed")
        self._globs: tuple[int, list[tuple[int, str]]] | None = None
        self._sessions = sessions_of(store)
        self._session_count: tuple[int, int] | None = None
        self._rule_index: tuple[int, RuleIndex] | None = None
        self._breadth = GlobBreadth(self.root)
        self._said: OrderedDict[tuple[Any, ...], list[Said]] = OrderedDict()
        # the code memories cite, checked against the tree (a one-shot engine waits for it)
        self.staleness = staleness or Staleness(store, self.root)
        self.wait_for_staleness = wait_for_staleness

    # ---- public ----------------------------------------------------------------------------

    def assemble(self, request: ContextRequest, *, record: bool = True) -> AssembledContext:
        """The context for ``request``, from cache when nothing relevant changed."""
        t0 = time.perf_counter()
        root = request.root or self.root
        text = request.text
        if text is None:
            p = Path(request.path)
            if not p.is_absolute() and root:
                p = Path(root) / p
            text = _read_text(p)
        if request.branch is not None and len(request.branch) > MAX_ANCHOR_CHARS:
            request = replace(request, branch=clip_anchor_value(request.branch))
        facts = derive_file(request.path, text, request.language_id, root)
        activity = infer_activity(request.branch, request.diagnostics, request.activity)
        total = request.budget or self.budget.total
        generation = self.store.generation()
        key = (
            facts.path,
            request.branch,
            tuple(sorted((d.severity, d.code or "", d.message) for d in request.diagnostics)),
            activity,
            total,
            generation,
            request.as_of,
            hashlib.sha1((text or "").encode("utf-8", "replace")).hexdigest(),
            self.staleness.epoch,
        )
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
        if hit is not None:
            return AssembledContext(
                **{**hit.__dict__, "cached": True, "elapsed_ms": (time.perf_counter() - t0) * 1e3}
            )
        result = self._assemble(facts, text, request, activity, total, generation)
        result.elapsed_ms = (time.perf_counter() - t0) * 1e3
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        if record and result.memory_ids:
            self.record_retrieval(result)
        return result

    def record_retrieval(self, result: AssembledContext) -> None:
        """Log what was served (does not move the generation, so the cache stays valid)."""
        try:
            self.store.usage.record_many(
                result.memory_ids,
                AccessKind.RETRIEVAL,
                context=f"context {result.file.path}",
                bump_generation=False,
            )
        except StoreError:
            log.warning("could not record retrieval", exc_info=True)

    def cite(self, memory_id: int, context: str | None = None) -> None:
        """A served memory influenced real work: ranks it up."""
        self.store.usage.record(memory_id, AccessKind.CITATION, context)

    def ignore(self, memory_id: int, context: str | None = None) -> None:
        """A served memory was not used: ranks it down."""
        self.store.usage.record(memory_id, AccessKind.IGNORE, context)

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()
            self._pool_cache.clear()

    # ---- assembly --------------------------------------------------------------------------

    def _anchors(
        self, facts: FileFacts, branch: str | None, diagnostics: tuple[Diagnostic, ...]
    ) -> dict[Anchor, str]:
        """Anchors to look up, each with the reason it predicts relevance."""
        out: dict[Anchor, str] = {}

        def put(t: AnchorType, v: str | None, why: str) -> None:
            if v:
                out.setdefault(Anchor(t, v), why)

        put(AnchorType.FILE, facts.path, "file")
        for p in facts.paired:
            put(AnchorType.FILE, p, "paired")
        put(AnchorType.MODULE, facts.module, "module")
        put(AnchorType.MODULE, facts.package, "package")
        for imp in facts.imports[:60]:
            put(AnchorType.MODULE, imp, "import")
        for sym in facts.symbols[:60]:
            put(AnchorType.SYMBOL, sym, "symbol")
        put(AnchorType.BRANCH, branch, "branch")
        for tok in branch_tokens(branch):
            put(AnchorType.TAG, tok, "tag")
        for d in diagnostics:
            if d.severity <= 2:
                put(AnchorType.ERROR, error_signature(d.message, d.code, d.source), "error")
        return out

    def _glob_matches(self, path: str, generation: int) -> dict[int, tuple[float, bool]]:
        """Memories whose ``glob`` anchors (from rule files) match ``path``, each with the
        weight of its narrowest matching glob and whether that glob is about an area of the
        project (not every file of a language)."""
        if self._globs is None or self._globs[0] != generation:
            self._globs = (generation, self.store.glob_anchors())
        out: dict[int, tuple[float, bool]] = {}
        for mid, pat in self._globs[1]:
            if not glob_match(path, pat):
                continue
            share = self._breadth.share(pat)
            if share is None:  # the project's files are unknown: judge by the folders named
                folders = specificity(pat)
                found = (min(1.0, GLOB_BASE + GLOB_PER_FOLDER * folders), folders > 0)
            else:
                found = (glob_weight(share), share <= AREA_SHARE)
            out[mid] = max(out.get(mid, found), found)
        return out

    def _conversation_memories(self, query: str, qvec: Any, generation: int) -> dict[int, float]:
        """Session-first retrieval over past conversations: the memories extracted near the
        best messages of the best sessions, with the hit's score."""
        sessions_generation = self._sessions.generation()
        if self._session_count is None or self._session_count[0] != sessions_generation:
            self._session_count = (sessions_generation, self._sessions.count()[0])
        if not self._session_count[1]:
            return {}
        try:
            found = session_first(
                self._sessions,
                query,
                k=CONVERSATION_HITS,
                neighbours=0,
                cross_links=0,
                mode="hybrid" if qvec is not None else "keyword",
                query_vector=qvec,
            )
        except StoreError:
            log.warning("conversation search failed while assembling context", exc_info=True)
            return {}
        out: dict[int, float] = {}
        for h in found.hits:
            for mid, idx in self._sessions.memories_of(h.message.session_id):
                if idx is None or abs(idx - h.message.idx) <= CONVERSATION_WINDOW:
                    out[mid] = max(out.get(mid, 0.0), h.score)
        return out

    def _query(self, facts: FileFacts, branch: str | None, diags: tuple[Diagnostic, ...]) -> str:
        words = [Path(facts.path).stem.replace("_", " ").replace("-", " ")]
        if facts.module:
            words.append(facts.module.replace(".", " ").replace("/", " "))
        words += list(branch_tokens(branch))
        words += list(facts.symbols[:8])
        words += [d.message for d in diags if d.severity <= 2][:3]
        # Short queries embed in a few milliseconds; long ones cost tens.
        return " ".join(" ".join(w for w in words if w).split()[:MAX_QUERY_WORDS])

    def _assemble(  # noqa: C901
        self,
        facts: FileFacts,
        text: str | None,
        request: ContextRequest,
        activity: Activity,
        total: int,
        generation: int,
    ) -> AssembledContext:
        store = self.store
        now = time.time() if request.as_of is None else request.as_of
        cands: dict[int, _Cand] = {}

        def add(m: Memory, relevance: float, reason: str) -> None:
            c = cands.setdefault(m.id, _Cand(m))
            c.relevance = max(c.relevance, relevance * _route_weight(m, reason))
            c.reasons.add(reason)

        # Embed the search query on the side (onnxruntime releases the GIL) while the
        # anchor lookups run here.
        query = self._query(facts, request.branch, request.diagnostics)
        qvec = None
        if query.strip() and store.has_embedder:
            qvec = self._pool.submit(self._embed_query, query)

        anchors = self._anchors(facts, request.branch, request.diagnostics)
        matched = store.anchor_matches(list(anchors), limit=MAX_ANCHORED)
        mems = {m.id: m for m in self._memories(list(matched), generation)}
        for mid, hit_anchors in matched.items():
            if mid in mems:
                for a in hit_anchors:
                    why = anchors.get(a, "tag")
                    weight = ANCHOR_WEIGHTS.get(why, 0.5)
                    if a.type is AnchorType.FILE:
                        weight *= mention_strength(mems[mid], a.value, MENTION_LINES)
                    add(mems[mid], weight, why)

        if query.strip():
            try:
                hits = search(
                    store,
                    query,
                    filters=MemoryFilter(branch=request.branch, valid_at=now),
                    k=max(self.search_k, total // 200),
                    candidates=max(self.search_k, total // 200) * 2,
                    min_similarity=MIN_SIMILARITY,
                    query_vector=qvec,  # waited for after the keyword search
                    loader=lambda ids: self._memories(ids, generation),
                )
            except StoreError:
                log.warning("search failed while assembling context", exc_info=True)
                hits = []
            for h in hits:
                add(h.memory, 0.9 * h.score, "search")
            conversation = self._conversation_memories(
                query, qvec.result() if qvec is not None else None, generation
            )
            for m in self._memories(list(conversation), generation):
                add(m, 0.8 * conversation[m.id], "conversation")

        terms = file_terms(facts, text, self._paired_texts(facts, request.root or self.root))
        rules = self._rules(generation)
        topical = rules.topic_scores(terms)
        globbed = self._glob_matches(facts.path, generation)
        for m in self._memories(list(globbed), generation):
            # a rule for an area before one for every file of the language; within one rule
            # file, the sections about what this file is about first
            weight, area = globbed[m.id]
            bonus = min(RULE_TOPIC_BONUS, RULE_TOPIC_STEP * topical.get(m.id, 0.0))
            bonus += RULE_BINDING_BONUS * binding(m.text)
            add(m, ANCHOR_WEIGHTS["glob"] * weight + bonus, "glob" if area else "glob-any")
        for m, why, relevance in rules.applies(terms, topical):
            add(m, relevance, why)
        narrowest = max((w for w, _ in globbed.values()), default=0.0)

        seeds = sorted(cands, key=lambda i: -cands[i].relevance)[:10]
        if seeds:
            boosts = self.scorer.graph_boosts(store, seeds)
            new_ids = [i for i in boosts if i not in cands]
            for m in self._memories(new_ids, generation):
                add(m, 0.6 * boosts[m.id], "graph")

        background, prefs = self._pools(request.branch, generation, now)
        for m in background:
            add(m, 0.3, "background")
        for m in prefs:
            add(m, 0.3, "preference")

        # The commit that saved a conversation tied to the file (its export) says what that
        # work changed: it belongs to the file as the conversation does.
        self._commits_of_conversations(cands, add, request.root or self.root, generation)

        # A commit found by words that names the file or what is defined in it (a change
        # made from elsewhere, a plan in another file) is about the file too.
        for c in cands.values():
            if (
                c.memory.source == "git"
                and not c.reasons & COMMIT_TIES
                and terms.names_it(c.memory.text)
            ):
                c.reasons.add("named")
                c.relevance = max(c.relevance, NAMED_RELEVANCE)

        # Only what holds now: superseded or expired memories stay out of the context.
        cands = {
            i: c
            for i, c in cands.items()
            if not c.memory.archived
            and (c.memory.valid_to is None or c.memory.valid_to > now)
            and (request.as_of is None or c.memory.valid_from < now)
            and not is_the_open_file(c.memory, facts.path)
        }
        # The budget is a ceiling: only what is tied to this file (or matches it strongly).
        admitted = admit((c.memory, c.relevance, frozenset(c.reasons)) for c in cands.values())
        cands = {i: c for i, c in cands.items() if i in admitted}
        # What a better-tied memory already says is not said twice.
        ranked = sorted(cands, key=lambda i: (-cands[i].relevance, -cands[i].memory.created_at))
        # Open contradictions among them: read once, for this and for the Critical tier.
        open_ = (
            self.store.contradictions.query(ContradictionStatus.OPEN, memory_ids=list(cands))
            if cands
            else []
        )
        disputed = {i for c in open_ for i in (c.memory_a, c.memory_b)}
        for i in restated(((i, cands[i].memory.text) for i in ranked), keep=disputed):
            del cands[i]
        # Checked against the code it cites: what is gone is never served as current.
        verdicts = (
            self.staleness.lookup(list(cands), wait=self.wait_for_staleness)
            if request.as_of is None and cands
            else {}
        )
        tiers: dict[Tier, list[Candidate]] = {t: [] for t in TIERS}
        scored: dict[int, float] = {}
        in_passing: list[int] = []
        for mid, c in cands.items():
            prior, _ = self.scorer.score(c.memory, c.relevance, now=now)
            choice = place(
                c.memory,
                frozenset(c.reasons),
                recent_fix=now - c.memory.created_at <= RECENT_ERROR_SECONDS,
            )
            tier = choice.tier
            # How strongly it is tied to this file decides; usage, age and kind nudge.
            s = (RELEVANCE_SHARE * c.relevance + (1 - RELEVANCE_SHARE) * prior) * choice.weight
            verdict = verdicts.get(mid)
            if verdict is not None and verdict.stale:
                scored[mid] = s * (GONE_WEIGHT if verdict.state == GONE else CHANGED_WEIGHT)
                if verdict.state == GONE:
                    tiers[Tier.INDEX].append(self._stale_pointer(c.memory, verdict, scored[mid]))
                    continue
                s = scored[mid]
            renderings = self._renderings_for(c.memory, c.reasons, terms, request.as_of)
            meta = c.memory.metadata if isinstance(c.memory.metadata, dict) else {}
            if meta.get("unit") == "session" and renderings is None:
                if (
                    not c.reasons & {"error", "branch"}
                    and mention_share(c.memory, (terms.path, *terms.paired)) < MINOR_SHARE
                ):
                    # it said nothing about the file and names it only in passing, among the
                    # files it was about: its title would be noise here, and so its pointer
                    in_passing.append(mid)
                    continue
                # a conversation that said nothing about the file itself: its title, not a
                # summary of what it was about
                s *= SILENT_SESSION
                renderings = cap_renderings(self._renderings(c.memory), Level.COMPRESSED)
            scored[mid] = s
            if (
                renderings is None
                and c.reasons <= {"glob", "glob-any", "search", "graph", "background"}
                and globbed.get(mid, (narrowest, False))[0] < narrowest - NARROWER
                and rules.per_file[str(meta.get("file") or "")] >= LONG_RULE
                and topical.get(mid, 0.0) < TOPIC_MIN
                and not binding(c.memory.text)
            ):
                # a section of a broader rule than the one for this area, matching by glob
                # alone, about something else and binding nothing (a product's dashboard, a
                # curl example): a pointer only
                renderings = {
                    lv: r for lv, r in self._renderings(c.memory).items() if lv is Level.INDEX
                }
            if renderings is None:
                renderings = self._renderings(c.memory)
                if tier is Tier.BACKGROUND and c.memory.source != "rules":
                    renderings.pop(next(iter(renderings)), None)  # background: not at full length
                # old episodes are served shorter (their full text stays one recall away)
                renderings = cap_renderings(
                    renderings, serving_level(c.memory.kind, c.memory.created_at, now)
                )
            if verdict is not None and verdict.stale:
                renderings = _marked(renderings, verdict)
            tiers[tier].append(Candidate(f"m{mid}", s, renderings, mid))
        for mid in in_passing:
            del cands[mid]

        # Only an open contradiction is put in front of the AI: one with strong evidence (an
        # explicit supersession, one fact with two values, a judge, the user); the scanner's
        # suspicions wait in the review list with status "suspected".
        self._add_contradictions(tiers, open_, scored)
        gone = {i for i, v in verdicts.items() if v.state == GONE}
        self._add_index(tiers, cands, scored, facts.module, gone)
        self._add_areas(tiers, facts.path, cands, request.as_of)

        # The title never takes more than a quarter of the budget (a huge branch name or path
        # is cut), so the loop below always ends: with every item dropped the title fits.
        doc_title = truncate_to_tokens(
            title(facts.path, request.branch, activity.value), max(0, total // 4 - 1)
        )
        reserve = count_tokens(doc_title + "\n")
        budgets = self.budget.split(activity, max(0, total - reserve))
        fills = fit_tiers(tiers, budgets, {t: TIER_TITLES[t] for t in TIERS}, count_tokens)
        markdown = render_markdown(doc_title, fills)
        used = count_tokens(markdown)
        while used > total and self._drop_weakest(fills):  # joints add a token or two
            markdown = render_markdown(doc_title, fills)
            used = count_tokens(markdown)
        items = [
            Item(
                p.candidate.key,
                t,
                p.level.value,
                p.candidate.score,
                p.tokens,
                p.candidate.memory_id,
                cands[p.candidate.memory_id].memory.kind.value
                if p.candidate.memory_id in cands
                else p.candidate.key.rstrip("0123456789"),
                label_of(cands[p.candidate.memory_id].memory)
                if p.candidate.memory_id in cands
                else None,
                verdicts[p.candidate.memory_id].to_dict()
                if p.candidate.memory_id in verdicts and verdicts[p.candidate.memory_id].stale
                else None,
            )
            for t in TIERS
            for p in fills[t].placed
        ]
        return AssembledContext(
            markdown=markdown,
            tokens=account(fills, used, total),
            items=items,
            file=facts,
            branch=request.branch,
            activity=activity,
            generation=generation,
            elapsed_ms=0.0,
            fills=fills,
            doc_title=doc_title,
            loaded_by={f"m{i}": t for i, c in cands.items() if (t := loaded_by(c.memory))},
        )

    def _memories(self, ids: list[int], generation: int) -> list[Memory]:
        """Memories by id through a cache that lives as long as the store generation (usage
        counters in it may lag; they only nudge the ranking)."""
        with self._lock:
            if self._mem_cache_gen != generation:
                self._mem_cache, self._mem_cache_gen = OrderedDict(), generation
            cache = self._mem_cache
            found: list[Memory] = []
            missing: list[int] = []
            for i in ids:
                if i in cache:
                    cache.move_to_end(i)
                    found.append(cache[i])
                else:
                    missing.append(i)
        if missing:
            fetched = self.store.get_many(missing)
            with self._lock:
                if self._mem_cache_gen == generation:
                    for m in fetched:
                        self._mem_cache[m.id] = m
                    while len(self._mem_cache) > MEMORY_CACHE_SIZE:
                        self._mem_cache.popitem(last=False)
            found += fetched
        return found

    def _commits_of_conversations(
        self,
        cands: dict[int, _Cand],
        add: Any,
        root: str | None,
        generation: int,
    ) -> None:
        if not root:
            return
        exports: dict[str, float] = {}
        for c in cands.values():
            meta = c.memory.metadata if isinstance(c.memory.metadata, dict) else {}
            origin = meta.get("origin")
            if meta.get("unit") != "session" or not c.reasons & {"file", "paired"}:
                continue
            if not isinstance(origin, str) or not origin:
                continue
            try:
                rel = Path(origin).resolve().relative_to(Path(root).resolve()).as_posix()
            except (ValueError, OSError):
                continue
            exports[rel] = max(exports.get(rel, 0.0), c.relevance)
        if not exports:
            return
        found = self.store.anchor_matches(
            [Anchor(AnchorType.FILE, p) for p in exports], limit=MAX_ANCHORED
        )
        mems = {m.id: m for m in self._memories(list(found), generation)}
        for mid, hit in found.items():
            m = mems.get(mid)
            meta = m.metadata if m is not None and isinstance(m.metadata, dict) else {}
            if m is None or m.source != "git" or int(meta.get("fileCount") or 0) > MANY_FILES:
                continue
            add(m, SESSION_COMMIT * max(exports.get(a.value, 0.0) for a in hit), "session")

    def _rules(self, generation: int) -> RuleIndex:
        """The store's current rule sections, indexed once per store generation."""
        with self._lock:
            hit = self._rule_index
        if hit is not None and hit[0] == generation:
            return hit[1]
        index = RuleIndex(
            self.store.list(MemoryFilter(source="rules"), limit=MAX_RULES, order="id")
        )
        with self._lock:
            self._rule_index = (generation, index)
        return index

    def _renderings_for(
        self, m: Memory, reasons: set[str], terms: FileTerms, as_of: float | None
    ) -> dict[Level, str] | None:
        """Renderings made for this file: a commit with the sentences of its body that matter
        here, a conversation tied to the file with what was said about it; None for others."""
        if m.source == "git":
            body = m.text.strip().partition("\n")[2]
            if not terms.is_test:  # how a change was tested matters to its tests only
                body = without_testing(body)
            meta = m.metadata if isinstance(m.metadata, dict) else {}
            # a sweep whose message says nothing of this file: its subject and the lines that
            # explain (a cause, a fix), not the list of what it did elsewhere; a long write-up
            # (benchmarks, reproduction scripts, before/after output): more of the sentences
            # that matter here, not all of it. Either is one recall away.
            sweep = int(meta.get("fileCount") or 0) > MANY_FILES and not any(
                terms.strength(s) >= NAMES_FILE for s in sentences(body)
            )
            long = (
                not sweep
                and body.count("\n") > LONG_BODY_LINES  # unwrapping only joins lines
                and len(unwrapped(body).splitlines()) > LONG_BODY_LINES
            )
            limit = LONG_BODY_EXCERPT if long else COMMIT_LINES
            lines = excerpt(body, terms, limit=limit) if body.strip() else []
            if sweep:
                lines = [x for x in lines if worth(x, terms) >= EXPLAINS]
            return commit_renderings(m, lines, m.index_label, body, complete=not (sweep or long))
        if m.kind is Kind.DECISION and m.supersedes is not None:
            return self._with_predecessor(m)
        meta = m.metadata if isinstance(m.metadata, dict) else {}
        if meta.get("unit") != "session" or not reasons & {"file", "paired"}:
            return None
        about = max(mention_strength(m, p) for p in (terms.path, *terms.paired))
        said = self._said_in(m, terms, as_of, about >= ABOUT_FILE)
        if not any(s.role != "user" or terms.strength(s.text) > 0 for s in said):
            return None  # only requests that do not name the file: shown by its title
        return chat_renderings(m, said, SAID_SHORT, pointer(m, m.index_label))

    def _with_predecessor(self, m: Memory) -> dict[Level, str] | None:
        """A decision that replaced another: its lines, each saying what it replaced ("was
        X"); the superseded one itself is never shown as current."""
        found = self.store.get_many([m.supersedes]) if m.supersedes is not None else []
        if not found:
            return None
        old = found[0]
        was = old.compressed or self.compressor.compressed(old)
        if not was or was.rstrip().endswith("…"):
            was = old.text.strip().split("\n", 1)[0]
        out = self._renderings(m)
        note = f"\n  - was: {' '.join(was.split())} (#{old.id}, superseded)"
        for lv in (Level.FULL, Level.SUMMARY, Level.COMPRESSED):
            if lv in out:
                out[lv] += note
        return out

    @staticmethod
    def _paired_texts(facts: FileFacts, root: str | None) -> dict[str, str | None]:
        """The texts of the file's pair (a test's source, a source's test), when on disk."""
        out: dict[str, str | None] = {}
        for p in facts.paired[:2]:
            full = Path(p) if Path(p).is_absolute() or not root else Path(root) / p
            out[p] = _read_text(full)
        return out

    def _said_in(
        self, m: Memory, terms: FileTerms, as_of: float | None, about: bool = False
    ) -> list[Said]:
        """What the conversation of session memory ``m`` said about the file (cached per
        conversation version)."""
        meta = m.metadata if isinstance(m.metadata, dict) else {}
        key = (m.id, m.updated_at, terms.path, as_of, about)
        with self._lock:
            hit = self._said.get(key)
        if hit is not None:
            return hit
        said: list[Said] = []
        try:
            session = self._sessions.find(
                str(meta.get("tool") or ""), str(meta.get("session") or "")
            )
            if session is not None:
                said = what_was_said(
                    self._sessions.messages(session.id),
                    terms,
                    until=as_of,
                    limit=SAID_FULL,
                    about=about,
                )
        except StoreError:
            log.warning("could not read conversation of #%s", m.id, exc_info=True)
        with self._lock:
            self._said[key] = said
            while len(self._said) > SAID_CACHE_SIZE:
                self._said.popitem(last=False)
        return said

    def _embed_query(self, query: str) -> Any:
        emb = self.store.embedder
        return None if emb is None else emb.embed([query])[0]

    def _pools(
        self, branch: str | None, generation: int, now: float
    ) -> tuple[list[Memory], list[Memory]]:
        """Project-wide conventions/workflows/summaries and preferences: loaded once per store
        generation, then narrowed to what holds now on ``branch`` (they do not depend on the
        file)."""
        with self._lock:
            hit = self._pool_cache.get(generation)
        if hit is None:
            hit = (
                self.store.list(
                    MemoryFilter(kinds=BACKGROUND_KINDS), limit=120, order="importance"
                ),
                self.store.list(
                    MemoryFilter(kinds=[Kind.PREFERENCE]), limit=40, order="importance"
                ),
            )
            with self._lock:
                self._pool_cache = {generation: hit}

        def keep(m: Memory) -> bool:
            if m.valid_to is not None and m.valid_to <= now:
                return False
            branches = [a.value for a in m.anchors if a.type is AnchorType.BRANCH]
            return not branches or branch in branches

        return [m for m in hit[0] if keep(m)][:60], [m for m in hit[1] if keep(m)][:20]

    def _renderings(self, m: Memory) -> dict[Level, str]:
        """A memory's lines at each level, cached until the memory changes."""
        key = (m.id, m.updated_at)
        with self._lock:
            hit = self._render_cache.get(key)
            if hit is not None:
                self._render_cache.move_to_end(key)
        if hit is None:
            hit = memory_renderings(m, self._levels(m))
            with self._lock:
                self._render_cache[key] = hit
                while len(self._render_cache) > RENDER_CACHE_SIZE:
                    self._render_cache.popitem(last=False)
        return dict(hit)

    def _levels(self, m: Memory) -> dict[str, str]:
        if m.summary and m.compressed and m.index_label:
            return {}
        try:
            return {
                "summary": m.summary or self.compressor.summary(m),
                "compressed": m.compressed or self.compressor.compressed(m),
                "index_label": m.index_label or self.compressor.index_label(m),
            }
        except Exception:  # a compressor failure must not cost the whole context
            log.warning("compressing memory #%s failed", m.id, exc_info=True)
            return {}

    def _add_contradictions(
        self,
        tiers: dict[Tier, list[Candidate]],
        open_: list[Contradiction],
        scored: dict[int, float],
    ) -> None:
        if not open_:
            return
        mems = {
            m.id: m
            for m in self.store.get_many([i for c in open_ for i in (c.memory_a, c.memory_b)])
        }

        def short(m: Memory) -> str:
            return m.compressed or self.compressor.compressed(m)

        for c in open_:
            a, b = mems.get(c.memory_a), mems.get(c.memory_b)
            if a is None or b is None:
                continue
            score = 1.0 + max(scored.get(a.id, 0.0), scored.get(b.id, 0.0))
            tiers[Tier.CRITICAL].append(
                Candidate(f"c{c.id}", score, contradiction_renderings(c, a, b, short))
            )

    def _add_index(
        self,
        tiers: dict[Tier, list[Candidate]],
        cands: dict[int, _Cand],
        scored: dict[int, float],
        module: str | None,
        gone: frozenset[int] | set[int] = frozenset(),
    ) -> None:
        topics = file_topics([cands[i].memory for i in sorted(cands, key=lambda i: -scored[i])])
        rend = topic_renderings([t for t in topics if t[0] != module])  # not the file itself
        if rend:
            tiers[Tier.INDEX].append(Candidate("topics", 10.0, rend))
        # Pointers to the best candidates: shown in the index when no richer tier took them.
        best = sorted(cands, key=lambda i: -scored.get(i, 0.0))[:MAX_POINTERS]
        for mid in best:
            if mid in gone:  # pointed at already, marked stale
                continue
            c = cands[mid]
            label = pointer(
                c.memory, c.memory.index_label or self._levels(c.memory).get("index_label")
            )
            if label:
                tiers[Tier.INDEX].append(
                    Candidate(
                        f"m{mid}",
                        scored.get(mid, 0.0),
                        {Level.INDEX: f"- #{mid} {' '.join(label.split())}"},
                        mid,
                    )
                )

    def _stale_pointer(self, m: Memory, verdict: Verdict, score: float) -> Candidate:
        """A memory whose subject is gone: an Index pointer that says so."""
        label = pointer(m, m.index_label or self._levels(m).get("index_label")) or f"{m.kind.value}"
        text = f"- #{m.id} (stale) {' '.join(label.split())} — {verdict.mark()}"
        return Candidate(f"m{m.id}", score, {Level.INDEX: text}, m.id)

    def _add_areas(
        self,
        tiers: dict[Tier, list[Candidate]],
        path: str,
        shown: Iterable[int],
        as_of: float | None,
    ) -> None:
        """The file's area(s) and their summaries (predictive.categories) head the Index;
        what the context shows already is not pointed at again."""
        try:
            rend = area_renderings(areas_for_path(self.store, path), shown=shown, as_of=as_of)
        except Exception:  # the areas are a pointer: their failure must not cost the context
            log.warning("could not read the file's areas", exc_info=True)
            return
        if rend:
            tiers[Tier.INDEX].append(Candidate("areas", 11.0, rend))

    @staticmethod
    def _drop_weakest(fills: dict[Tier, TierFill]) -> bool:
        """Drop the lowest-scored item of the last non-empty tier; False when none is left."""
        for t in reversed(TIERS):
            if fills[t].placed:
                weakest = min(fills[t].placed, key=lambda p: p.candidate.score)
                fills[t].placed.remove(weakest)
                return True
        return False
