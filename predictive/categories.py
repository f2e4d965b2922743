"""Categories with evolving summaries (seed 002 §5): memories grouped by area.

Areas come from what memories are anchored to, with no fixed list of topics:

- **directories** of their files: every directory holding at least :data:`MIN_MEMBERS`
  current memories (its subdirectories included) is an area, named with a trailing slash
  (``src/auth/``); a directory with exactly the memories of one subdirectory gives way to it;
  areas nest as the directories do. A memory joins the deepest area of each of its files, at
  most :data:`MAX_AREAS` (those holding most of its files). A memory with modules but no
  files joins the area whose path ends like its module's.
- **tags** that say what a memory is about (not where it came from), shared by at least
  :data:`MIN_MEMBERS` memories; a memory joins every such tag it has.

Each category keeps a summary of itself and its sub-areas — how many memories of which kinds,
over what time, the most salient decisions and conventions by label (with ids), and what to
ask about (its sub-areas and common modules/tags). It is remade only when its members changed
(a fingerprint of their ids and update times is kept beside it); with a configured LLM a
validated prose line replaces the list of salient items.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from predictive.faithful import unsupported, words
from predictive.llm import LlmClient, numbered
from predictive.topics import is_topic_tag
from predictive.upkeep_results import CategoriesRefreshed
from storage import Level, MemoryStore
from storage import category_sync as cs

MIN_MEMBERS = 3
MAX_AREAS = 3
MAX_DEPTH = 8
KEY_ITEMS = 4
ASK_ABOUT = 6
LLM_SUMMARIES_PER_RUN = 40
LLM_MEMBER_LINES = 25
LLM_UNSUPPORTED_SHARE = 0.2
"""An LLM summary may use at most this share of content words its material does not have."""

_KIND_WEIGHT = {
    "decision": 1.0,
    "convention": 0.9,
    "solution": 0.8,
    "preference": 0.7,
    "workflow": 0.7,
    "pattern": 0.6,
    "fact": 0.5,
    "episode": 0.3,
    "summary": 0.2,
}
_PLURAL = {"summary": "summaries"}


# ---- derivation ----------------------------------------------------------------------------


@dataclass
class Derivation:
    """What the anchors say: the categories (name → origin, parent, description) and their
    members."""

    wanted: dict[str, tuple[str, str | None, str]] = field(default_factory=dict)
    members: dict[str, set[int]] = field(default_factory=dict)


def _dir_of(path: str) -> tuple[str, ...]:
    path = path.replace("\\", "/").strip()
    if not path or path.startswith("/") or ":" in path.split("/")[0] or ".." in path.split("/"):
        return ()  # outside the project
    parent = posixpath.dirname(posixpath.normpath(path))
    return tuple(p for p in parent.split("/") if p and p != ".")


def _area(parts: tuple[str, ...]) -> str:
    return "/".join(parts) + "/"


@dataclass
class _Anchors:
    """The anchors categories are made from, per memory."""

    files: dict[int, dict[tuple[str, ...], int]] = field(default_factory=dict)
    modules: dict[int, list[str]] = field(default_factory=dict)
    tags: dict[str, set[int]] = field(default_factory=dict)


def _collect(anchor_rows: Iterable[tuple[int, str, str]]) -> _Anchors:
    out = _Anchors()
    dirs_of: dict[str, tuple[str, ...]] = {}
    topic_tag: dict[str, bool] = {}
    for mid, kind, value in anchor_rows:
        if kind == "file":
            d = dirs_of.get(value)
            if d is None:
                d = dirs_of[value] = _dir_of(value)[:MAX_DEPTH]
            if d:
                mine = out.files.setdefault(mid, {})
                mine[d] = mine.get(d, 0) + 1
        elif kind == "module":
            out.modules.setdefault(mid, []).append(value)
        elif kind == "tag":
            ok = topic_tag.get(value)
            if ok is None:
                ok = topic_tag[value] = is_topic_tag(value)
            if ok:
                out.tags.setdefault(value, set()).add(mid)
    return out


def _place(
    found: _Anchors, areas: set[tuple[str, ...]], size: Callable[[tuple[str, ...]], int]
) -> dict[tuple[str, ...], set[int]]:
    """Which of ``areas`` each memory joins: the deepest area of each of its files (at most
    MAX_AREAS, those with most of its files, then the larger); with no files, the area
    whose path ends like its modules'."""

    def deepest(d: tuple[str, ...]) -> tuple[str, ...] | None:
        for n in range(len(d), 0, -1):
            if d[:n] in areas:
                return d[:n]
        return None

    # By the end of its path: "engines", "web/engines", … → the area (when only one has it).
    by_suffix: dict[str, set[tuple[str, ...]]] = {}
    for d in areas:
        for n in range(1, len(d) + 1):
            by_suffix.setdefault("/".join(d[-n:]), set()).add(d)

    def module_area(module: str) -> tuple[str, ...] | None:
        parts = [p for p in module.split(".") if p]
        for n in (len(parts), len(parts) - 1):
            if n >= 1:
                hit = by_suffix.get("/".join(parts[:n]), set())
                if len(hit) == 1:
                    return next(iter(hit))
        return None

    own: dict[tuple[str, ...], set[int]] = {d: set() for d in areas}
    for mid, dirs in found.files.items():
        weight: dict[tuple[str, ...], int] = {}
        for d, n in dirs.items():
            area = deepest(d)
            if area is not None:
                weight[area] = weight.get(area, 0) + n
        if len(weight) <= 1:
            for a in weight:
                own[a].add(mid)
            continue
        for a in sorted(weight, key=lambda a: (-weight[a], -size(a), a))[:MAX_AREAS]:
            own[a].add(mid)
    for mid, mods in found.modules.items():
        if mid not in found.files:
            hits = [area for m in mods if (area := module_area(m)) is not None]
            for hit, _ in Counter(hits).most_common(MAX_AREAS):
                own[hit].add(mid)
    return own


def derive(anchor_rows: Iterable[tuple[int, str, str]]) -> Derivation:
    """The categories that ``(memory id, anchor type, value)`` rows call for."""
    found = _collect(anchor_rows)
    files, tags = found.files, found.tags

    # Every directory prefix, with the memories under it.
    under: dict[tuple[str, ...], set[int]] = {}
    for mid, dirs in files.items():
        for d in dirs:
            for n in range(1, len(d) + 1):
                under.setdefault(d[:n], set()).add(mid)
    kept = {d for d, ms in under.items() if len(ms) >= MIN_MEMBERS}
    # A directory that holds exactly what one of its subdirectories holds gives way to it.
    for d in sorted(kept, key=len, reverse=True):
        if len(d) > 1 and d[:-1] in kept and len(under[d[:-1]]) == len(under[d]):
            kept.discard(d[:-1])
    own = _place(found, kept, lambda a: len(under[a]))

    # An area left with fewer than MIN_MEMBERS (its members went to other areas) gives its
    # members and sub-areas to its parent area.
    parent_of = {
        d: next((d[:n] for n in range(len(d) - 1, 0, -1) if d[:n] in kept), None) for d in kept
    }
    kids: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for d, p in parent_of.items():
        if p is not None:
            kids.setdefault(p, []).append(d)
    sub: dict[tuple[str, ...], set[int]] = {}
    for d in sorted(kept, key=len, reverse=True):
        sub[d] = set(own[d]).union(*(sub[c] for c in kids.get(d, ())))
        if len(sub[d]) < MIN_MEMBERS:
            # ``kids`` lists only the areas still kept: a sub-area given up before its parent
            # (a fixture folder, then the folder holding it) must not come back with it.
            p = parent_of.pop(d)
            moved = kids.pop(d, [])
            for c in moved:
                parent_of[c] = p
            if p is not None:
                kids[p] = [c for c in kids[p] if c != d] + moved
                own[p] |= own[d]
            del own[d]
    # An area with no members of its own and one sub-area is only a step on the way to it.
    for d in sorted(parent_of, key=len):
        only = [c for c, p in parent_of.items() if p == d]
        if not own[d] and len(only) == 1:
            parent_of[only[0]] = parent_of[d]
            del own[d], parent_of[d]
    out = Derivation()
    for d, p in parent_of.items():
        name = _area(d)
        out.wanted[name] = ("area", _area(p) if p else None, f"files under {name}")
        out.members[name] = own[d]

    for name, ms in tags.items():
        if len(ms) >= MIN_MEMBERS and name not in out.wanted:
            out.wanted[name] = ("tag", None, f"memories tagged {name}")
            out.members[name] = set(ms)
    return out


# ---- summaries -----------------------------------------------------------------------------


def _plural(kind: str, n: int) -> str:
    return kind if n == 1 else _PLURAL.get(kind, kind + "s")


def _month(t: float) -> str:
    return time.strftime("%Y-%m", time.gmtime(t))


SALIENCE_SQL = (
    "(CASE m.kind "
    + " ".join(f"WHEN '{k}' THEN {w}" for k, w in _KIND_WEIGHT.items())
    + " ELSE 0.4 END + m.importance + 0.05 * min(m.citation_count, 10))"
)
"""How much a member says about its category: kind first, then importance and use."""


def stats_line(stats: cs.ScopeStats) -> str:
    """ "12 memories (5 decisions, 7 episodes), 2024-03 – 2025-01"."""
    if not stats.count or stats.first is None or stats.last is None:
        return "no current memories"
    parts = ", ".join(
        f"{n} {_plural(k, n)}"
        for k, n in sorted(stats.kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    first, last = _month(stats.first), _month(stats.last)
    span = first if first == last else f"{first} – {last}"
    n = stats.count
    return f"{n} {'memory' if n == 1 else 'memories'} ({parts}), {span}"


def _cut(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rsplit(" ", 1)[0] + "…"


SUMMARY_FORMAT = 2
"""Part of each summary's fingerprint: a store summarised by an older format is summarised
anew on its next refresh (2: no commits or conversations in the Key)."""
HISTORY_KINDS = frozenset({"episode", "summary"})
"""Kinds that tell what happened (commits, conversations, digests), not what holds: an area's
Key never lists them (for an area of commits they were only its latest, whatever the file)."""


def key_line(stats: cs.ScopeStats) -> str:
    """The area's standing knowledge most worth knowing (decisions, conventions, fixes…)."""
    items = [f for f in stats.top if f.kind not in HISTORY_KINDS][:KEY_ITEMS]
    return "Key: " + "; ".join(f"{_cut(f.label)} (#{f.id})" for f in items) if items else ""


def topic_counts(stats: cs.ScopeStats) -> Counter[str]:
    """The modules (last part) and topic tags several members share."""
    out: Counter[str] = Counter()
    for kind, value, n in stats.topics:
        if kind == "tag" and not is_topic_tag(value):
            continue
        out[value.rsplit(".", 1)[-1] if kind == "module" else value] += n
    return out


def ask_line(name: str, children: Sequence[str], topics: Counter[str]) -> str:
    subjects = [c[len(name) :] if c.startswith(name) else c for c in children]
    own_name = name.rstrip("/").rsplit("/", 1)[-1]
    for topic, n in topics.most_common():
        if n < 2 or len(subjects) >= ASK_ABOUT:
            break
        if topic not in subjects and topic + "/" not in subjects and topic != own_name:
            subjects.append(topic)
    return "Ask about: " + ", ".join(subjects[:ASK_ABOUT]) if subjects else ""


def deterministic_summary(name: str, stats: cs.ScopeStats, children: Sequence[str]) -> str:
    """The summary without any model: stats, salient items, what to ask about."""
    lines = [stats_line(stats), key_line(stats), ask_line(name, children, topic_counts(stats))]
    return "\n".join(line for line in lines if line)


_SUMMARY_SCHEMA = {
    "type": "object",
    "required": ["summary", "cited"],
    "properties": {
        "summary": {"type": "string", "minLength": 10, "maxLength": 400},
        "cited": {"type": "array", "items": {"type": "integer"}, "maxItems": 10},
    },
}
_SUMMARY_SYSTEM = (
    "You summarise one area of a software project's memory for a developer. Using only the "
    "numbered items given, write one or two plain sentences (at most 60 words) saying what "
    "was decided, established or fixed there. Do not add facts the items do not state. "
    'Answer as JSON: {"summary": "...", "cited": [ids of the items you used]}.'
)


def llm_summary_line(
    client: LlmClient, name: str, top: Sequence[cs.MemberFacts], stats: str
) -> str | None:
    """A validated prose line for the category, or None (then the list of key items stays)."""
    chosen = list(top[:LLM_MEMBER_LINES])
    if len(chosen) < 2:
        return None
    material = numbered([(f.id, f"{f.kind}: {f.label}") for f in chosen], 200)
    allowed = {f.id for f in chosen}
    vocabulary = set(words(material + " " + name + " " + stats))

    def check(answer: Any) -> str | None:
        if not set(answer["cited"]) <= allowed:
            return "cites an item it was not given"
        extra = unsupported(answer["summary"], "", vocabulary=vocabulary)
        total = max(1, len(words(answer["summary"])))
        if len(extra) / total > LLM_UNSUPPORTED_SHARE:
            return f"unsupported words: {', '.join(extra[:5])}"
        return None

    answer = client.ask_json(
        "summaries", _SUMMARY_SYSTEM, f"Area: {name}\n{stats}\n\n{material}", _SUMMARY_SCHEMA, check
    )
    if answer is None:
        return None
    cited = "".join(f" #{i}" for i in answer["cited"])
    return " ".join(answer["summary"].split()) + (f" ({cited.strip()})" if cited else "")


# ---- refresh -------------------------------------------------------------------------------


def _place_new(conn: Any, after_id: int) -> tuple[set[int], int]:
    """Put the memories added after ``after_id`` into the categories that exist (no new
    category is made: that is the full refresh's job). Answers the categories touched and
    how many memberships were added."""
    rows = cs.rows(conn)
    areas = {tuple(r.name.rstrip("/").split("/")): r for r in rows if r.origin == "area"}
    tags = {r.name: r for r in rows if r.origin == "tag"}
    found = _collect(cs.current_anchors(conn, after_id))
    own = _place(found, set(areas), lambda a: areas[a].members)
    pairs = [(areas[a].id, m) for a, ms in own.items() for m in ms]
    pairs += [(tags[t].id, m) for t, ms in found.tags.items() if t in tags for m in ms]
    added = cs.add_members(conn, pairs)
    return {c for c, _ in pairs}, added


def refresh_categories(  # noqa: C901
    store: MemoryStore,
    *,
    llm: LlmClient | None = None,
    dry_run: bool = False,
    full: bool = True,
    progress: Callable[[str], None] | None = None,
) -> CategoriesRefreshed:
    """Bring the categories up to date and summarise again those whose members changed since
    their last summary; answers what it did (or, dry, would do).

    ``full``: derive every category again from every current memory (consolidation).
    Otherwise (after ingestion) only the memories added since the last refresh join the
    categories that exist; a store never refreshed gets a full refresh."""
    started = time.perf_counter()
    conn = store.conn
    generation = store.generation()
    state = store.cursors.get("categories")
    same_format = state.get("format", "1") == str(SUMMARY_FORMAT)
    done_before = same_format and state.get("generation") == str(generation)
    if not dry_run and done_before and (not full or state.get("full") == "1"):
        return CategoriesRefreshed(
            dry_run=False,
            unchanged=True,
            summarised=0,
            llm_summaries=0,
            seconds=round(time.perf_counter() - started, 3),
        )
    last_id = cs.last_memory_id(conn)
    after = int(state.get("lastId", "0") or 0)
    quick = not full and not dry_run and after > 0 and same_format
    if quick:
        if progress:
            progress("categories: new memories")
        touched, added = _place_new(conn, after)
        report = cs.SyncReport(added=added)
    else:
        derivation = derive(cs.current_anchors(conn))
        if dry_run:
            existing = {r.name: r for r in cs.rows(conn)}
            derived = {n for n, r in existing.items() if r.origin in cs.DERIVED}
            return CategoriesRefreshed(
                dry_run=True,
                categories=len(derivation.wanted),
                would_create=tuple(sorted(set(derivation.wanted) - set(existing))[:50]),
                would_delete=tuple(sorted(derived - set(derivation.wanted))[:50]),
                seconds=round(time.perf_counter() - started, 3),
            )
        if progress:
            progress("categories: membership")
        report = cs.sync(conn, derivation.wanted, derivation.members)
    rows = cs.rows(conn)
    by_id = {r.id: r for r in rows}
    children: dict[int, list[int]] = {}
    for r in rows:
        if r.parent_id is not None and r.parent_id in by_id:
            children.setdefault(r.parent_id, []).append(r.id)
    # Which categories to look at: all, or those touched and the areas above them.
    if quick:
        targets: set[int] = set()
        for touched_id in touched:
            cid: int | None = touched_id
            while cid is not None and cid in by_id and cid not in targets:
                targets.add(cid)
                cid = by_id[cid].parent_id
    else:
        targets = set(by_id)

    def below(cid: int, seen: set[int]) -> set[int]:
        out = {cid}
        for child in children.get(cid, ()):
            if child not in seen:
                seen.add(child)
                out |= below(child, seen)
        return out

    summaries: dict[int, tuple[str, str]] = {}
    tops: dict[int, tuple[str, tuple[cs.MemberFacts, ...], int]] = {}
    leaves = cs.own_fingerprints(conn, None if not quick else sorted(targets))
    for cid in sorted(targets):
        r = by_id[cid]
        if r.origin == "manual" and r.summary is not None and r.fingerprint is None:
            continue  # a summary the user wrote is theirs
        kids = sorted(by_id[c].name for c in children.get(cid, ()))
        scope = sorted(below(cid, {cid}))
        # A category without sub-areas is its own members: fingerprinted in one pass.
        fp = leaves.get(cid, "0:0:0.000:0") if not kids else cs.scope_fingerprint(conn, scope)
        fp = hashlib.sha1(f"{SUMMARY_FORMAT}|{fp}|{','.join(kids)}".encode()).hexdigest()[:20]
        if fp == r.fingerprint:
            continue
        if not kids:
            cs.fill_scope(conn, scope)
        stats = cs.scope_stats(conn, SALIENCE_SQL, LLM_MEMBER_LINES)
        text = deterministic_summary(r.name, stats, kids)
        summaries[cid] = (text, fp)
        tops[cid] = (text, stats.top, stats.count)
    if progress and summaries:
        progress(f"categories: summarised {len(summaries)}")
    llm_used = 0
    if llm is not None and llm.uses("summaries"):
        todo = sorted(tops, key=lambda c: -tops[c][2])[:LLM_SUMMARIES_PER_RUN]  # largest first

        def one(cid: int) -> tuple[int, str | None]:
            text, top, _ = tops[cid]
            return cid, llm_summary_line(llm, by_id[cid].name, top, text.split("\n", 1)[0])

        for cid, line in llm.map(one, todo):
            if line:
                lines = summaries[cid][0].split("\n")
                lines = [lines[0], line, *(x for x in lines[1:] if not x.startswith("Key: "))]
                summaries[cid] = ("\n".join(lines), summaries[cid][1])
                llm_used += 1
    written = cs.set_summaries(conn, summaries)
    # Nothing changed since this generation (unless someone else wrote meanwhile).
    changed = any((report.created, report.deleted, report.added, report.removed))
    ours = int(changed) + int(written > 0)
    now = store.generation()
    store.cursors.set(
        "categories",
        {
            "generation": str(now if now == generation + ours else generation),
            "lastId": str(last_id),
            "full": "0" if quick else "1",
            "format": str(SUMMARY_FORMAT),
        },
    )
    return CategoriesRefreshed(
        dry_run=False,
        full=not quick,
        categories=len(rows),
        created=report.created,
        deleted=report.deleted,
        members_added=report.added,
        members_removed=report.removed,
        summarised=written,
        llm_summaries=llm_used,
        seconds=round(time.perf_counter() - started, 3),
    )


# ---- reading: the tree, a memory's categories, a file's areas ------------------------------


@dataclass(frozen=True)
class CategoryNode:
    """A category for explore: its summary, own and total (with sub-areas) member counts."""

    id: int
    name: str
    origin: str
    parent_id: int | None
    summary: str | None
    members: int
    total: int
    children: tuple[CategoryNode, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "origin": self.origin,
            "parentId": self.parent_id,
            "summary": self.summary,
            "members": self.members,
            "total": self.total,
            "children": [c.to_dict() for c in self.children],
        }


def _nodes(store: MemoryStore) -> tuple[dict[int, cs.CategoryRow], dict[int | None, list[int]]]:
    rows = {r.id: r for r in cs.rows(store.conn)}
    kids: dict[int | None, list[int]] = {}
    for r in rows.values():
        parent = r.parent_id if r.parent_id in rows else None
        kids.setdefault(parent, []).append(r.id)
    return rows, kids


def category_tree(
    store: MemoryStore, *, root: str | int | None = None, depth: int | None = None
) -> list[CategoryNode]:
    """The categories as a forest (largest first), or the subtree of ``root`` (a name or
    id); ``depth`` limits how many levels below the top are filled in. ``total`` counts the
    distinct memories of a category and its sub-areas."""
    rows, kids = _nodes(store)
    if root is None:
        tops = kids.get(None, [])
    else:
        tops = [r.id for r in rows.values() if root in (r.id, r.name)]
    needed: set[int] = set()
    stack = list(tops)
    while stack:  # only the members of the subtrees shown are read
        cid = stack.pop()
        if cid not in needed:
            needed.add(cid)
            stack.extend(kids.get(cid, ()))
    members = cs.members_of(store.conn, sorted(needed))
    under: dict[int, set[int]] = {}

    def subtree(cid: int, seen: frozenset[int] = frozenset()) -> set[int]:
        if cid not in under:
            out = set(members.get(cid, ()))
            for c in kids.get(cid, ()):
                if c not in seen:
                    out |= subtree(c, seen | {cid})
            under[cid] = out
        return under[cid]

    def total(cid: int) -> int:
        return len(subtree(cid))

    def build(cid: int, level: int) -> CategoryNode:
        r = rows[cid]
        below = (
            ()
            if depth is not None and level >= depth
            else tuple(
                sorted(
                    (build(c, level + 1) for c in kids.get(cid, ())),
                    key=lambda n: (-n.total, n.name),
                )
            )
        )
        return CategoryNode(
            r.id, r.name, r.origin, r.parent_id, r.summary, r.members, total(cid), below
        )

    return sorted((build(c, 0) for c in tops), key=lambda n: (-n.total, n.name))


def category_of(store: MemoryStore, memory_id: int) -> list[CategoryNode]:
    """The categories ``memory_id`` belongs to (without their children), areas first."""
    cids = cs.categories_of(store.conn, [memory_id]).get(memory_id, [])
    rows = {r.id: r for r in cs.rows(store.conn)}
    found = [rows[c] for c in cids if c in rows]
    found.sort(key=lambda r: (r.origin != "area", r.name))
    return [
        CategoryNode(r.id, r.name, r.origin, r.parent_id, r.summary, r.members, r.members)
        for r in found
    ]


def areas_for_path(store: MemoryStore, path: str, *, limit: int = 2) -> list[cs.CategoryRow]:
    """The areas a file lies in, deepest first (at most ``limit``)."""
    d = _dir_of(path)
    names = [_area(d[:n]) for n in range(len(d), 0, -1)]
    if not names:
        return []
    found = cs.areas_named(store.conn, names)
    return [found[n] for n in names if n in found][:limit]


PARENT_AREA_BELOW = 10
"""The enclosing area is shown too only when the file's own area has fewer members."""
_KEY_ITEM = re.compile(r"(.*?) \(#(\d+)\)(?:; |$)")


def area_renderings(
    areas: Sequence[cs.CategoryRow], *, shown: Iterable[int] = (), as_of: float | None = None
) -> dict[Level, str]:
    """The file's areas for the Index tier at four sizes: the enclosing area only when the
    file's own is small; ``shown`` memories (placed elsewhere in the context) are left out of
    the Key; with ``as_of`` only the names, since the stored summaries describe the store now."""
    if not areas:
        return {}
    if len(areas) > 1 and areas[0].members >= PARENT_AREA_BELOW:
        areas = areas[:1]
    seen = set(shown)

    def lines(r: cs.CategoryRow) -> list[str]:
        if as_of is not None:
            return []
        return [_without(line, seen) for line in (r.summary or "").split("\n")]

    def block(keep: int) -> str:
        out = []
        for r in areas:
            parts = [x for x in lines(r)[:keep] if x]
            out.append(f"Area {r.name}: " + " · ".join(parts) if parts else f"Area {r.name}")
        return "\n".join(out)

    return {
        Level.FULL: block(3),
        Level.SUMMARY: block(2),
        Level.COMPRESSED: block(1),
        Level.INDEX: "Areas: " + ", ".join(r.name for r in areas),
    }


def _without(line: str, shown: set[int]) -> str:
    """A Key line without the items already shown ("" when none is left)."""
    if not line.startswith("Key: ") or not shown:
        return line
    items = _KEY_ITEM.findall(line[len("Key: ") :])
    kept = [f"{label} (#{mid})" for label, mid in items if int(mid) not in shown]
    return "Key: " + "; ".join(kept) if kept else ""


__all__ = [
    "CategoryNode",
    "Derivation",
    "area_renderings",
    "areas_for_path",
    "category_of",
    "category_tree",
    "derive",
    "deterministic_summary",
    "refresh_categories",
]
