"""Consolidation: the store's periodic upkeep, deterministic and local.

``run(store, *, root, options, progress, now)`` (the CLI's ``living-memory consolidate``, the
server's ``livingMemory.consolidate`` and its idle schedule) first fills missing levels,
then computes a **plan** of typed changes (:class:`~predictive.consolidation.plan.Change`),
then applies it step by step, each step in its own transaction(s):

- **rerank**: decay scores from age and use (citations up, ignores down);
- **merge**: the same text of one kind, or a series of short episodes differing only in
  numbers (release bots), fold into one memory keeping all provenance; the others are
  archived "merged into #N" (:mod:`predictive.consolidation.merge`);
- **compress**: old episodes are served at their summary (> 7 days) or compressed line
  (> 30 days), full text kept (:mod:`predictive.consolidation.serving`);
- **link**: same files, same error signature, co-access, near duplicates
  (:mod:`predictive.consolidation.links`);
- **forget**: superseded or unused memories are archived, restorably
  (:mod:`predictive.consolidation.forget`);
- **contradiction**: current memories stating different values for one ``fact_key`` (open),
  and what the scanner finds among the memories added since its last run (open on strong
  evidence, else suspected: see :mod:`predictive.conflicts`).

``dry_run`` returns the plan and writes nothing. The answer
(:class:`~predictive.upkeep_results.Consolidated`) keeps the summary counts (``levels_filled``,
``decay_updated``, ``similar_linked``, ``contradictions_opened``, ``contradictions_suspected``,
…) and lists every change under ``changes`` (action, ids, labels, reason). ``now`` (or
``options["now"]``, epoch seconds) is the time consolidation acts at; a replay passes a
simulated clock.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from predictive import judges
from predictive.categories import refresh_categories
from predictive.compress import backfill_levels
from predictive.conflicts import (
    Judge,
    judge_pending,
    mark_scanned,
    pending_scan,
    scan,
    scan_backlog,
    status_for,
)
from predictive.consolidation.forget import UNUSED_DAYS, plan_forgetting
from predictive.consolidation.links import MAX_CONTEXT, plan_links
from predictive.consolidation.merge import MAX_PAIRING, plan_merges, similar_pairs
from predictive.consolidation.plan import Change, describe
from predictive.consolidation.serving import plan_compression
from predictive.consolidation.usage import plan_reranking
from predictive.llm import client_for
from predictive.llm_compress import llm_compressor
from predictive.llm_judge import scanner_judge
from predictive.upkeep_results import Consolidated
from storage import upkeep
from storage.conflict_pairs import max_memory_id
from storage.errors import InvalidInput
from storage.merging import add_edges, archive_many, merge_memories
from storage.models import ContradictionStatus, EdgeType
from storage.repository import MemoryStore
from storage.upkeep import Brief

log = logging.getLogger(__name__)

DAY = 86_400.0
STATE = "consolidate"
"""``store.cursors`` source where the time of the last run is kept."""
STEPS = ("levels", "usage", "plan", "merge", "link", "forget", "contradictions", "categories")

PRINTED_PER_ACTION = 200
"""Lines per action :func:`print_changes` prints before it only counts the rest."""

__all__ = ["STEPS", "Change", "describe", "plan", "print_changes", "run"]


def _label(b: Brief) -> str:
    text = b.index_label.strip() if b.index_label and b.index_label.strip() else b.text
    flat = " ".join(text.split())
    return flat if len(flat) <= 80 else flat[:79] + "…"


def _current(live: Sequence[Brief], now: float) -> list[Brief]:
    return [b for b in live if b.superseded_by is None and (b.valid_to is None or b.valid_to > now)]


def _when(value: Any) -> float:
    """``now`` as epoch seconds (None: the clock); anything else is refused by name."""
    if value is None:
        return time.time()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise InvalidInput(f"now must be a time in epoch seconds, not {value!r}")
    return float(value)


def plan(
    store: MemoryStore,
    *,
    now: float,
    skipped: list[str] | None = None,
    judge: Judge | None = None,
) -> tuple[dict[int, float], list[Change]]:
    """New decay scores and every change consolidation would make at ``now``."""
    skipped = skipped if skipped is not None else []
    live = upkeep.live_briefs(store)
    scores, reranks = plan_reranking(live, now=now, label=_label)
    current = _current(live, now)
    by_id = {b.id: b for b in current}
    sessions = upkeep.session_links(store)

    disputed = upkeep.open_contradiction_ids(store)
    merges = plan_merges([b for b in current if b.id not in disputed], sessions, _label)
    group_of = {i: n for n, c in enumerate(merges) for i in c.ids}
    absorbed = {i for c in merges for i in c.ids[1:]}

    last = store.cursors.get(STATE).get("last_run")
    compress = plan_compression(current, now=now, since=float(last) if last else None, label=_label)

    by_kind: dict[str, list[int]] = defaultdict(list)
    for b in current:
        by_kind[b.kind].append(b.id)
    similar: list[tuple[int, int, float]] = []
    for kind, ids in sorted(by_kind.items()):
        if len(ids) > MAX_PAIRING:
            skipped.append(f"{kind}: {len(ids)} memories, more than {MAX_PAIRING} to pair")
            continue
        similar += [
            (a, b, s)
            for a, b, s in similar_pairs(store.embeddings.of, ids)
            if a not in group_of or group_of.get(a) != group_of.get(b)
        ]
    files = upkeep.anchors_by_type(store, "file")
    links, over = plan_links(
        by_id,
        files=files,
        errors=upkeep.anchors_by_type(store, "error"),
        sessions=sessions,
        co_access=upkeep.co_accessed(store, since=now - UNUSED_DAYS * DAY, max_group=MAX_CONTEXT),
        similar=similar,
        linked=upkeep.linked_pairs(store),
        excluded=absorbed,
        label=_label,
    )
    if over:
        skipped.append(f"link: {over} more links found than one run makes (next run)")

    protected = disputed | set(group_of)
    forget = plan_forgetting(
        live,
        now=now,
        served_at=upkeep.servings(store),
        files=files,
        protected=protected,
        label=_label,
    )

    contradictions = plan_contradictions(store, by_id, judge)
    return scores, [*reranks, *merges, *compress, *links, *forget, *contradictions]


def plan_contradictions(
    store: MemoryStore, current: dict[int, Brief], judge: Judge | None = None
) -> list[Change]:
    """A ``contradiction`` change per pair of current memories that disagree and has no
    contradiction yet: different values for one ``fact_key``, and what the local scanner
    (:mod:`predictive.conflicts`) finds among the memories added since its last run."""
    keyed = [
        Change(
            "contradiction",
            (a, b),
            tuple(_label(current[i]) for i in (a, b) if i in current),
            f"different values for {key}",
            {"status": ContradictionStatus.OPEN.value},
        )
        for a, b, key in store.contradictions.fact_conflicts()
        if not store.contradictions.exists(a, b)
    ]
    # issue 13: the scanner's conflicts (partial ones are also linked when applied)
    done = {(min(c.ids), max(c.ids)) for c in keyed}
    scanned = scan(store, pending_scan(store)[0], judge=judge)
    return keyed + [
        Change(
            "contradiction",
            (c.older, c.newer),
            tuple(_label(current[i]) for i in (c.older, c.newer) if i in current),
            f"{c.type}: {c.reason}",
            {"confidence": c.confidence, "partial": c.partial, "status": status_for(c.type).value},
        )
        for c in scanned
        if c.pair not in done
    ]


def _opens(change: Change) -> bool:
    """Whether a planned contradiction is recorded open (else suspected: review only)."""
    return change.detail.get("status", ContradictionStatus.OPEN.value) == "open"


def run(
    store: MemoryStore,
    *,
    root: str | Path | None = None,
    options: dict[str, Any] | None = None,
    progress: Callable[..., None] | None = None,
    now: float | None = None,
) -> Consolidated:
    """Consolidate ``store``; answer what was (or, dry, would be) done, change by change."""
    opts = options or {}
    dry = bool(opts.get("dry_run") or opts.get("dryRun"))
    at = _when(now if now is not None else opts.get("now"))
    started = time.perf_counter()
    llm = None if dry else client_for(store)  # None unless the user configured an LLM

    def step(name: str) -> None:
        if progress is not None:
            progress(STEPS.index(name), len(STEPS), name)

    step("levels")
    if dry:
        levels = last = 0
        while page := store.levels.lacking(after_id=last, limit=2000):
            levels += len(page)
            last = page[-1].id
    else:
        levels = backfill_levels(store, llm_compressor(llm))

    step("usage")
    skipped: list[str] = []
    scan_through = pending_scan(store)[1]  # issue 13: how far the scanner reads this run
    scores, changes = plan(store, now=at, skipped=skipped, judge=scanner_judge(llm))
    if not dry and scores:
        store.usage.set_decay_scores(scores)

    step("plan")
    by_action: dict[str, list[Change]] = defaultdict(list)
    for c in changes:
        by_action[c.action].append(c)

    later: list[int] = []  # contradictions recorded after the plan: the backlog, judged pairs
    if not dry:
        step("merge")
        for c in by_action["merge"]:
            merge_memories(store, c.ids[0], c.ids[1:], at=at, reason=c.reason)
        step("link")
        add_edges(
            store,
            [
                (
                    c.ids[0],
                    c.ids[1],
                    EdgeType(c.detail["edge"]),
                    float(c.detail["strength"]),
                    {"by": "consolidate", "reason": c.reason},
                )
                for c in by_action["link"]
            ],
        )
        step("forget")
        archive_many(store, {c.ids[0]: c.reason for c in by_action["forget"]}, at=at)
        step("contradictions")
        for c in by_action["contradiction"]:
            confidence = float(c.detail.get("confidence", 0.8))
            if c.detail.get("partial"):  # issue 13: partly superseded: linked, not closed
                store.graph.add(c.ids[0], c.ids[1], EdgeType.EVOLVED_INTO, 1.0, {"by": "scan"})
            store.contradictions.add(
                c.ids[0],
                c.ids[1],
                reason=c.reason,
                confidence=confidence,
                status=c.detail.get("status", ContradictionStatus.OPEN.value),
            )
        mark_scanned(store, scan_through)
        # what an ingest's bounded scan left, then the candidate pairs that wait for a judge
        judge = scanner_judge(llm)
        backlog = scan_backlog(store, max_memory_id(store), judge=judge)
        later += backlog.opened
        if judge is not None:
            later += judge_pending(store, judge)
        else:  # the editor's models or an MCP client's sampling, a few pairs a run
            host = judges.choose(store, llm=llm)
            if host is not None:
                later += judges.judge_waiting_pairs(store, host).judged.opened
        store.cursors.set(STATE, {"last_run": repr(at)})
    step("categories")
    # areas derived again, the changed ones summarised again (predictive.categories)
    try:
        categories = refresh_categories(store, llm=llm, dry_run=dry)
    except Exception as e:
        # the other steps' work stands: a failure here is reported as skipped, not raised
        log.info("refreshing categories failed", exc_info=True)  # the trace with --verbose
        categories = None
        skipped.append(f"categories: refreshing them failed ({type(e).__name__}: {e})")
    if progress is not None:
        progress(len(STEPS), len(STEPS), "done")
    similar = sum(1 for c in by_action["link"] if c.detail.get("edge") == "SIMILAR_TO")
    found = [store.contradictions.get(i).status for i in later]
    late_open = sum(1 for s in found if s is ContradictionStatus.OPEN)
    return Consolidated(
        dry_run=dry,
        levels_filled=levels,
        decay_updated=len(scores),
        similar_linked=similar,
        contradictions_opened=sum(1 for c in by_action["contradiction"] if _opens(c)) + late_open,
        contradictions_suspected=sum(1 for c in by_action["contradiction"] if not _opens(c))
        + len(found)
        - late_open,
        merged=sum(len(c.ids) - 1 for c in by_action["merge"]),
        compressed=len(by_action["compress"]),
        linked=len(by_action["link"]),
        forgotten=len(by_action["forget"]),
        reranked=len(by_action["rerank"]),
        skipped=tuple(skipped),
        categories=categories,
        changes=tuple(changes),
        seconds=round(time.perf_counter() - started, 3),
    )


def print_changes(result: Consolidated, limit: int = PRINTED_PER_ACTION) -> None:
    """Print the changes of a :func:`run` answer, one line each, per action in plan order."""
    counts = {
        "merge": result.merged,
        "compress": result.compressed,
        "link": result.linked,
        "forget": result.forgotten,
        "rerank": result.reranked,
    }
    print(", ".join(f"{action} {n}" for action, n in counts.items()))
    shown: dict[str, int] = defaultdict(int)
    for c in result.changes:
        shown[c.action] += 1
        if shown[c.action] <= limit:
            print("  " + describe(c))
    for action, n in shown.items():
        if n > limit:
            print(f"  … and {n - limit} more {action} changes (--json lists them all)")
