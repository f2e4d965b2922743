"""Team memory: the project's durable knowledge as reviewable files in the repository.

``write_folder`` writes every approved, project-scoped decision, convention, solution,
workflow, pattern and preference that was learned here (not what the repository already holds
as commits, decision records or rule files, and not what was read from the folder unchanged)
as one Markdown file per memory lineage (:mod:`storage.sources.shared`). ``read_folder`` reads
the folder back: a new file becomes a memory, an edited one a new version that supersedes the
old, a deleted one archives its memory. Rejecting a shared memory removes its file on the next
write. An edit of a memory read from the folder is written back to the same file.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage import Anchor, Artifact, Kind, Memory, MemoryStore, NewMemory, Review, Scope
from storage.shared_files import SharedFile
from storage.sources import shared as files
from storage.sources.records import SkipLog
from storage.text import content_hash

log = logging.getLogger(__name__)

SHARED_KINDS = (
    Kind.DECISION,
    Kind.CONVENTION,
    Kind.SOLUTION,
    Kind.WORKFLOW,
    Kind.PATTERN,
    Kind.PREFERENCE,
)
IN_REPOSITORY = ("git", "adr", "rules")
"""Sources whose memories every clone learns from the repository itself: never written."""
SOURCE = files.SOURCE
MAX_ID_TRIES = 50
MAX_LINEAGE = 64


def folder_of(root: Path, folder: str | None) -> Path:
    """The shared folder: ``folder`` (relative to ``root`` unless absolute) or the default."""
    p = Path(folder or files.DEFAULT_FOLDER).expanduser()
    return p if p.is_absolute() else root / p


def _display(root: Path, folder: Path, rel: str) -> str:
    """A file's path as people see it: relative to the project when inside it."""
    full = folder / rel
    try:
        return full.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(full)


# ---- reading ---------------------------------------------------------------------------------


@dataclass
class ReadReport:
    read: int = 0
    added: int = 0
    updated: int = 0  # same text, other front matter (anchors, kind, times)
    unchanged: int = 0
    superseded: int = 0
    archived: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


def read_folder(
    store: MemoryStore,
    root: Path,
    folder: Path,
    skips: SkipLog,
    *,
    dry_run: bool = False,
) -> ReadReport:
    """Bring the store in line with the folder's files (see the module docstring)."""
    report = ReadReport()
    rows = {r.sid: r for r in store.shared.all()}
    seen: set[str] = set()
    for f in files.read_folder(folder, skips):
        report.read += 1
        rec = f.record
        if rec.sid in seen:
            skips.skip(SOURCE, f.path, f"id {rec.sid} is also another file's")
            continue
        seen.add(rec.sid)
        row = rows.get(rec.sid)
        if row is not None and row.fingerprint == f.fingerprint and row.path == f.path:
            report.unchanged += 1
            continue
        if dry_run:
            report.added += 1
            continue
        _take(store, root, folder, f, row, report)
    for sid, row in rows.items():
        if sid in seen or (folder / row.path).exists():
            continue
        if dry_run:
            report.archived += 1
            continue
        if row.memory_id is not None and store.exists(row.memory_id):
            m = store.get(row.memory_id)
            if not m.archived:
                store.archive(m.id, reason=f"{_display(root, folder, row.path)} was deleted")
                report.archived += 1
        store.shared.drop(sid)
    return report


def _take(
    store: MemoryStore,
    root: Path,
    folder: Path,
    f: files.SharedFileText,
    row: SharedFile | None,
    report: ReadReport,
) -> None:
    """A new or changed file: its memory added (superseding the one the file held before),
    or, with the same text, the memory's front matter brought up to date."""
    rec = f.record
    current = None
    if row is not None and row.memory_id is not None and store.exists(row.memory_id):
        current = store.get(row.memory_id)
    where = _display(root, folder, f.path)
    author = files.last_author(folder, f.path)
    shared: dict[str, Any] = {"id": rec.sid, "path": where}
    if author is not None:
        shared.update(by=author.name, email=author.email, at=author.at, commit=author.commit)
    if rec.source:
        shared["origin"] = rec.source
    if rec.conversation:
        shared["conversation"] = rec.conversation
    anchors = [Anchor.parse(a) for a in rec.anchors]
    if current is not None and current.content_hash == content_hash(rec.text):
        store.update(
            current.id,
            anchors=anchors,
            kind=rec.kind,
            valid_from=rec.valid_from,
            valid_to=rec.valid_to,
            metadata={**current.metadata, "shared": shared},
        )
        report.updated += 1
        store.shared.put(SharedFile(rec.sid, f.path, current.id, f.fingerprint))
        return
    artifacts = []
    for raw in rec.artifacts:
        kind, sep, ref = raw.partition(":")
        if sep and kind and ref:
            artifacts.append(Artifact(kind, ref))
    result = store.add(
        NewMemory(
            text=rec.text,
            kind=rec.kind,
            anchors=anchors,
            artifacts=artifacts,
            scope=Scope.PROJECT,
            source=SOURCE,
            source_id=rec.sid,
            created_at=rec.created,
            valid_from=rec.valid_from,
            valid_to=rec.valid_to,
            metadata={"shared": shared},
            review=rec.review,
        )
    )
    new = store.get(result.id)
    if result.created:
        report.added += 1
        report.by_kind[rec.kind.value] = report.by_kind.get(rec.kind.value, 0) + 1
    elif new.source != SOURCE and "shared" not in new.metadata:
        # the same text was already known here: it is the team's now, with its provenance
        store.update(new.id, metadata={**new.metadata, "shared": shared})
    head = _head(store, current) if current is not None else None
    if head is not None and head.id != new.id and new.superseded_by is None:
        # the repository wins: a local edit not shared yet is kept as superseded history
        store.graph.supersede(head.id, new.id, at=rec.valid_from)
        report.superseded += 1
    store.shared.put(SharedFile(rec.sid, f.path, new.id, f.fingerprint))
    for older in rec.supersedes:
        other = store.shared.get(older)
        if other is None or other.memory_id is None or other.memory_id == new.id:
            continue
        if store.exists(other.memory_id) and store.get(other.memory_id).superseded_by is None:
            store.graph.supersede(other.memory_id, new.id, at=rec.valid_from)
            report.superseded += 1


def _head(store: MemoryStore, m: Memory) -> Memory:
    """The newest version of ``m``'s lineage (following ``superseded_by``)."""
    for _ in range(MAX_LINEAGE):
        if m.superseded_by is None or not store.exists(m.superseded_by):
            return m
        m = store.get(m.superseded_by)
    return m


# ---- writing ---------------------------------------------------------------------------------


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    kept: list[str] = field(default_factory=list)  # not removed: changed since this store read it
    files: int = 0
    bytes: int = 0
    ignored_by_git: bool = False  # a .gitignore hides the folder: a commit would miss it


def shareable(m: Memory) -> bool:
    """Whether a memory is written to the folder by this store."""
    return (
        m.review is Review.APPROVED
        and m.scope is Scope.PROJECT
        and m.kind in SHARED_KINDS
        and m.source not in IN_REPOSITORY
        and m.source != SOURCE
        and not m.archived
        and m.superseded_by is None
    )


def _record(store: MemoryStore, m: Memory, sid: str) -> files.SharedRecord:
    supersedes: list[str] = []
    if m.supersedes is not None:
        older = store.shared.of_memory(m.supersedes)
        if older is not None and older.sid != sid:
            supersedes.append(older.sid)
    origin = m.metadata.get("shared", {}).get("origin") if m.source == SOURCE else m.source
    return files.SharedRecord(
        conversation=_conversation(store, m),
        sid=sid,
        kind=m.kind,
        text=m.text,
        created=m.created_at,
        valid_from=m.valid_from,
        valid_to=m.valid_to,
        review=Review.APPROVED,
        anchors=tuple(sorted(str(a) for a in m.anchors)),
        supersedes=tuple(supersedes),
        source=origin,
        artifacts=tuple(sorted(f"{a.type}:{a.ref}" for a in m.artifacts)),
    )


def _conversation(store: MemoryStore, m: Memory) -> str | None:
    """The title of the chat a memory was learned in (``chat:<tool>`` sources)."""
    if not m.source.startswith("chat:") or not m.source_id:
        return None
    from storage.sessions import sessions_of

    session = sessions_of(store).find(m.source.split(":", 1)[1], m.source_id.split("#", 1)[0])
    return session.title if session is not None and session.title else None


def _new_id(m: Memory, taken: set[str], folder: Path) -> tuple[str, str]:
    for n in range(MAX_ID_TRIES):
        sid = files.short_id(m.text if n == 0 else f"{m.text}\x00{n}")
        path = files.path_for(m.kind, files.title_of(m.text), sid)
        if sid not in taken and not (folder / path).exists():
            return sid, path
    raise RuntimeError(f"no free shared id for memory #{m.id}")


def write_folder(store: MemoryStore, folder: Path, *, dry_run: bool = False) -> WriteReport:
    """Write the shareable memories; remove the files of rejected ones (see module doc)."""
    report = WriteReport()
    rows = store.shared.all()
    taken = {r.sid for r in rows}
    done: set[str] = set()
    ids = store.shared.current_ids(
        [k.value for k in SHARED_KINDS],
        review=Review.APPROVED.value,
        exclude_sources=(*IN_REPOSITORY, SOURCE),
    )
    for m in store.get_many(list(reversed(ids))):  # newest first: it wins its lineage's file
        if not shareable(m):
            continue
        row = store.shared.of_memory(m.id)
        if row is not None:
            sid, path = row.sid, row.path
        else:
            sid, path = _new_id(m, taken, folder)
            taken.add(sid)
        if sid in done:
            continue
        done.add(sid)
        data = files.render(_record(store, m, sid))
        fp = files.fingerprint(data)
        target = folder / path
        if files.file_fingerprint(target) == fp:
            report.unchanged += 1
            stale = row is None or row.memory_id != m.id or row.fingerprint != fp
            if stale and not dry_run:
                store.shared.put(SharedFile(sid, path, m.id, fp))
            continue
        report.written.append(path)
        if not dry_run:
            files.write_atomic(target, data)
            store.shared.put(SharedFile(sid, path, m.id, fp))
    for row in rows:
        if row.sid in done:
            continue
        gone = row.memory_id is None or not store.exists(row.memory_id)
        if not gone and store.get(row.memory_id or 0).review is not Review.REJECTED:
            continue
        target = folder / row.path
        if files.file_fingerprint(target) not in (row.fingerprint, None):
            report.kept.append(row.path)  # changed by someone else since: read it first
            continue
        report.removed.append(row.path)
        if not dry_run:
            target.unlink(missing_ok=True)
            _prune_empty(target.parent, folder)
            store.shared.drop(row.sid)
    readme = folder / files.README
    if not dry_run and (report.written or folder.is_dir()) and not readme.exists():
        files.write_atomic(readme, files.README_TEXT.encode("utf-8"))
    for f in _memory_files(folder):
        report.files += 1
        report.bytes += f.stat().st_size
    if report.written:
        report.ignored_by_git = files.ignored_by_git(folder, report.written[0])
    report.written.sort()
    report.removed.sort()
    return report


def _memory_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.rglob("*.md")
        if p.is_file() and p.relative_to(folder).as_posix() != files.README
    )


def _prune_empty(directory: Path, folder: Path) -> None:
    while directory != folder and directory.is_relative_to(folder):
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


@dataclass(frozen=True)
class ShareOutcome:
    folder: str
    read: ReadReport
    write: WriteReport
    skips: SkipLog
    seconds: float


def share(
    store: MemoryStore, root: Path, folder: str | None = None, *, dry_run: bool = False
) -> ShareOutcome:
    """Read the folder first (what teammates changed comes in before anything is written),
    then write this store's shareable memories into it."""
    started = time.perf_counter()
    where = folder_of(root, folder)
    skips = SkipLog()
    read = read_folder(store, root, where, skips, dry_run=dry_run)
    write = write_folder(store, where, dry_run=dry_run)
    return ShareOutcome(str(where), read, write, skips, time.perf_counter() - started)
