"""Review and share: what becomes team knowledge (approve, edit, reject), and writing it
to the shared folder of the repository (:mod:`predictive.team`)."""

from __future__ import annotations

from pathlib import Path

from predictive.operations.errors import ArgumentError
from predictive.operations.memory import levels_of, memory_of, remember
from predictive.operations.requests import (
    EditArgs,
    RememberArgs,
    ReviewArgs,
    ReviewListArgs,
    ShareArgs,
)
from predictive.operations.results import (
    Brief,
    Remembered,
    Reviewed,
    ReviewItem,
    ReviewList,
    Shared,
)
from predictive.team import IN_REPOSITORY, SHARED_KINDS
from predictive.team import share as share_folder
from storage import Memory, MemoryStore, Review

REJECTED_REASON = "rejected in review"


def _item(store: MemoryStore, m: Memory) -> ReviewItem:
    m = levels_of(store, m)
    row = store.shared.of_memory(m.id)
    path = row.path if row is not None else None
    return ReviewItem(Brief.of(m), m.text, m.review.value, m.source, m.confidence, path)


def review_list(store: MemoryStore, a: ReviewListArgs) -> ReviewList:
    """The memories that could become team knowledge, by review status (oldest first):
    current, project-scoped decisions, conventions, solutions, workflows, patterns and
    preferences not already in the repository as decision records or rule files; rejected
    ones are archived and listed too."""
    kinds = [k.value for k in SHARED_KINDS]
    if a.status == Review.REJECTED.value:
        ids = store.shared.rejected_ids(kinds)
    else:  # commits, decision records and rule files are in the repository: never shared
        ids = store.shared.current_ids(kinds, review=a.status, exclude_sources=IN_REPOSITORY)
    items = tuple(_item(store, m) for m in store.get_many(ids[: a.limit]))
    return ReviewList(a.status, items)


def approve(store: MemoryStore, a: ReviewArgs) -> Reviewed:
    """Mark memories as fit for the team (``share`` writes them); a rejected one comes back
    from the archive."""
    mems = [memory_of(store, i, "ids") for i in a.ids]
    changed = []
    for m in mems:
        if m.review is Review.APPROVED:
            continue
        if m.review is Review.REJECTED and m.archived:  # the rejection archived it
            store.restore(m.id)
        store.update(m.id, review=Review.APPROVED)
        changed.append(m.id)
    return Reviewed(Review.APPROVED.value, a.ids, tuple(changed))


def reject(store: MemoryStore, a: ReviewArgs) -> Reviewed:
    """Not team knowledge, and not served either: the memory is archived (restorable), and its
    file leaves the shared folder on the next ``share``."""
    mems = [memory_of(store, i, "ids") for i in a.ids]
    changed = []
    for m in mems:
        if m.review is Review.REJECTED:
            continue
        store.update(m.id, review=Review.REJECTED)
        if not m.archived:
            store.archive(m.id, a.reason or REJECTED_REASON)
        changed.append(m.id)
    return Reviewed(Review.REJECTED.value, a.ids, tuple(changed))


def edit(store: MemoryStore, a: EditArgs) -> Remembered:
    """A person's correction: a new version (approved) supersedes the memory and takes its
    place — in the shared folder too, where it replaces the file's text. The same operation
    as editing the memory's file and ingesting it."""
    m = memory_of(store, a.id)
    if m.superseded_by is not None:
        raise ArgumentError("id", f"#{m.id} was replaced by #{m.superseded_by}; edit that one")
    if a.text.strip() == m.text.strip() and a.kind in (None, m.kind.value) and a.anchors is None:
        return Remembered(m.id, False, Brief.of(m))
    anchors = a.anchors if a.anchors is not None else tuple(str(x) for x in m.anchors)
    done = remember(
        store,
        RememberArgs(
            text=a.text,
            kind=a.kind or m.kind.value,  # type: ignore[arg-type]
            anchors=anchors,
            importance=m.importance,
            scope=m.scope.value,  # type: ignore[arg-type]
            supersedes=m.id,
            source="editor",
        ),
    )
    new = store.get(done.id)
    if new.review is not Review.APPROVED:
        store.update(new.id, review=Review.APPROVED)
    return done


def share(store: MemoryStore, a: ShareArgs, root: Path) -> Shared:
    """Read the shared folder, then write the approved team knowledge into it."""
    out = share_folder(store, root, a.shared_folder, dry_run=a.dry_run)
    r, w = out.read, out.write
    return Shared(
        folder=out.folder,
        written=tuple(w.written),
        removed=tuple(w.removed),
        unchanged=w.unchanged,
        kept=tuple(w.kept),
        files=w.files,
        bytes=w.bytes,
        read={
            "read": r.read,
            "added": r.added,
            "updated": r.updated,
            "unchanged": r.unchanged,
            "superseded": r.superseded,
            "archived": r.archived,
        },
        skipped=out.skips.as_dict(),
        seconds=round(out.seconds, 3),
        dry_run=a.dry_run,
        ignored_by_git=w.ignored_by_git,
    )
