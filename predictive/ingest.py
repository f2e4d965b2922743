"""Ingestion: read a project's git history, decision records, rule files and chat histories,
extract memories from them and store them — idempotent and incremental.

``run(store, *, root, options, progress)`` is what the CLI (``living-memory ingest``) and the
language server (``livingMemory.ingest``) call; it answers what was read, added, already
known, dropped (low confidence), superseded, archived and skipped (with reasons) as a typed
:class:`~predictive.upkeep_results.Ingested`. ``progress(done, total, message)`` may raise to
cancel between batches; what was written before stays written and consistent (each batch is
one transaction).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from predictive import staleness
from predictive.categories import refresh_categories
from predictive.commit_noise import CommitFilter
from predictive.conflicts import hold_backlog, scan_backlog
from predictive.conversations import extract as extract_conversation
from predictive.conversations import session_unit, summarise
from predictive.extract import (
    Candidate,
    from_commit,
    from_decision,
    from_rule_file,
)
from predictive.llm import LlmClient, client_for
from predictive.llm_extract import extract_with
from predictive.llm_judge import scanner_judge
from predictive.mentions import FileIndex, project_index
from predictive.upkeep_results import Ingested, SourceIngested
from storage.conflict_pairs import ids_after, max_memory_id
from storage.errors import InvalidInput, StoreError
from storage.models import ContradictionStatus, EdgeType
from storage.repository import MemoryStore
from storage.sessions import Message, SessionStore, sessions_of
from storage.sources.records import (
    ChatMessage,
    CodeBlock,
    Conversation,
    DecisionRecord,
    SkipLog,
    redacted,
    without_injected,
)
from storage.text import parse_instant

log = logging.getLogger(__name__)

SOURCES = ("git", "adr", "rules", "shared", "chats")
FIRST_RUN_SOURCES = ("git", "adr", "rules", "shared")
TOOLS = ("cursor", "specstory", "copilot", "claude", "codex")
BATCH = 64
USER_MENTION_WEIGHT = 3
OUTPUT_MENTION_WEIGHT = 0.2
"""What one line of tool output (a stack frame, a test report) naming a file counts for a
conversation that never talks about that file: the conversation is still tied to the file."""
OUTPUT_MENTION_CAP = 0.8
"""The most such lines count together: less than one line that talks about the file, however
many frames name it. Both chosen on gryag (file-open prefetch: two cases whose earlier session
named the file only in tracebacks; @5 / @10 0.821 / 0.900 → 0.871 / 1.000), checked on
twat-search (unchanged, 0.949 / 0.988). Adding output lines to files a conversation also talks
about lost there (long sessions that ran a linter over every file rose above the ones that
discussed it: 0.949 → 0.899 at 5 items)."""
GIT_FORMAT = "3"
"""How commits are stored: "2" = subject and meaningful body, noise left out; "3" = that body
without tracker links, sections of only "None" and the tail of long program output. A store whose
git state has an older format re-reads the history once and rewrites what it holds."""

Progress = Callable[..., None]


def parse_since(value: Any, *, now: float | None = None) -> float | None:
    """``--since``: epoch seconds, an ISO date or date-time, or an age (``90d``, ``12h``,
    ``6w``, ``3m``, ``1y``)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"since must be a date, a time or an age, not {value!r}")
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    now = time.time() if now is None else now
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([hdwmy])", text, re.I)
    if m:
        n = float(m.group(1))
        days = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}[m.group(2).lower()]
        return now - n * days * 86400
    at = parse_instant(text)
    if at is None:
        raise InvalidInput(
            f"since {text!r} is not a date (2025-01-31), a time (2025-01-31T12:00) or an age "
            "(30d, 12h, 6w)"
        )
    return at


@dataclass(frozen=True)
class IngestOptions:
    sources: tuple[str, ...] = ("all",)
    tools: tuple[str, ...] | None = None  # chat tools; None = all
    paths: tuple[str, ...] = ()  # read these instead of the default locations
    since: float | None = None
    dry_run: bool = False
    all_workspaces: bool = False
    home: str | None = None  # where chat tools keep their files (tests point it elsewhere)
    platform: str | None = None
    include_merges: bool = False  # merge commits are noise by default
    include_bots: bool = False  # so are commits by bots (dependabot, renovate, …[bot])
    include_trivial: bool = False  # and "wip", "lol tabs", "Initial commit", "fix"
    shared_folder: str | None = None  # the team's memory files (default .living-memory/shared)

    def __post_init__(self) -> None:
        for s in self.sources:
            if s not in (*SOURCES, "all"):
                raise InvalidInput(f"unknown source {s!r}; use {', '.join((*SOURCES, 'all'))}")
        for t in self.tools or ():
            if t not in TOOLS:
                raise InvalidInput(f"unknown chat source {t!r}; use {', '.join(TOOLS)}")

    @property
    def commit_filter(self) -> CommitFilter:
        return CommitFilter(self.include_merges, self.include_bots, self.include_trivial)

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | IngestOptions | None) -> IngestOptions:
        if isinstance(raw, IngestOptions):
            return raw
        raw = dict(raw or {})
        sources = raw.get("sources") or ("all",)
        if isinstance(sources, str):
            sources = (sources,)
        tools = raw.get("tools") or raw.get("source")
        if isinstance(tools, str):
            tools = (tools,)
        paths = raw.get("paths") or raw.get("path") or ()
        if isinstance(paths, str):
            paths = (paths,)
        return cls(
            sources=tuple(sources),
            tools=tuple(tools) if tools else None,
            paths=tuple(str(p) for p in paths),
            since=parse_since(raw.get("since")),
            dry_run=bool(raw.get("dry_run") or raw.get("dryRun")),
            all_workspaces=bool(raw.get("all_workspaces") or raw.get("all")),
            home=raw.get("home"),
            platform=raw.get("platform"),
            include_merges=_flag(raw, "include_merges", "includeMerges"),
            include_bots=_flag(raw, "include_bots", "includeBots"),
            include_trivial=_flag(raw, "include_trivial", "includeTrivial"),
            shared_folder=raw.get("shared_folder") or raw.get("sharedFolder"),
        )

    def wanted(self) -> tuple[str, ...]:
        if "all" in self.sources:
            return SOURCES
        return tuple(s for s in SOURCES if s in self.sources)


def _flag(raw: dict[str, Any], *names: str) -> bool:
    return any(bool(raw.get(n)) for n in names)


@dataclass
class SourceReport:
    read: int = 0
    added: int = 0
    existing: int = 0
    unchanged: int = 0
    dropped: int = 0
    superseded: int = 0
    archived: int = 0
    rewritten: int = 0  # memories of an older format brought up to date
    ignored: dict[str, int] = field(default_factory=dict)  # noise left out, by reason
    sessions: int = 0
    messages: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None

    def summary(self) -> SourceIngested:
        return SourceIngested(
            read=self.read,
            added=self.added,
            existing=self.existing,
            unchanged=self.unchanged,
            dropped=self.dropped,
            superseded=self.superseded,
            archived=self.archived,
            by_kind=dict(sorted(self.by_kind.items())),
            seconds=round(self.seconds, 3),
            ignored=dict(sorted(self.ignored.items())),
            rewritten=self.rewritten,
            sessions=self.sessions,
            messages=self.messages,
            error=self.error,
        )


def _fingerprint(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode("utf-8", "replace"))
    return h.hexdigest()[:32]


class _Run:
    """One ingestion run over one store and one project root."""

    def __init__(
        self, store: MemoryStore, root: Path, opts: IngestOptions, progress: Progress | None
    ) -> None:
        self.store = store
        self.root = root
        self.opts = opts
        self._progress = progress
        self.skips = SkipLog()
        self.done = 0
        self.cancelled: BaseException | None = None
        self._files: FileIndex | None = None
        self._changed: dict[tuple[str, bool], float | None] = {}
        self.llm = None if opts.dry_run else client_for(store)  # None unless configured

    def progress(self, message: str, total: int = 0) -> None:
        self.report(self.done, max(total, self.done, 1), message)

    def report(self, done: int, total: int, message: str) -> None:
        """Tell the caller; what it raises (a cancellation) ends the whole run."""
        if self._progress is not None:
            try:
                self._progress(done, total, message)
            except BaseException as e:
                self.cancelled = e
                raise

    def store_candidates(
        self, candidates: Sequence[Candidate], report: SourceReport
    ) -> list[tuple[Candidate, int | None]]:
        """Add the kept candidates (one transaction); answer (candidate, memory id)."""
        kept = [c for c in candidates if c.kept]
        report.dropped += len(candidates) - len(kept)
        if not kept:
            return []
        if self.opts.dry_run:
            known = self.store.known_contents([c.memory.text for c in kept])
            for c in kept:
                if c.memory.text in known:
                    report.existing += 1
                else:
                    report.added += 1
                    k = c.memory.kind.value
                    report.by_kind[k] = report.by_kind.get(k, 0) + 1
            return [(c, None) for c in kept]
        results = self.store.add_many([c.memory for c in kept])
        for c, r in zip(kept, results):
            if r.created:
                report.added += 1
                k = c.memory.kind.value
                report.by_kind[k] = report.by_kind.get(k, 0) + 1
            else:
                report.existing += 1
        self.done += len(kept)
        return [(c, r.id) for c, r in zip(kept, results)]

    # ---- git -------------------------------------------------------------------------------

    def git(self, report: SourceReport) -> None:
        from storage.sources import git

        if not git.is_repo(self.root):
            self.skips.skip("git", str(self.root), "not a git repository")
            return
        state = self.store.cursors.get("git")
        after = state.get("last_commit")
        # a store of an older format: read the history again once, rewrite what it holds
        redo = after is not None and state.get("format") != GIT_FORMAT
        known = self.store.source_ids("git") if redo else {}
        if redo:
            after = None
        keep = self.opts.commit_filter
        root_s = str(self.root)
        batch: list[Candidate] = []
        reverts: list[tuple[str, str]] = []
        last: str | None = None

        total = git.count_commits(self.root, after=after, since=self.opts.since)
        self.report(0, max(total, 1), f"git: reading {total} commits")

        def flush() -> None:
            self.store_candidates(batch, report)
            batch.clear()
            self.report(
                report.read, max(total, report.read, 1), f"git: {report.read} of {total} commits"
            )

        for c in git.read_commits(self.root, after=after, since=self.opts.since, skips=self.skips):
            report.read += 1
            last = c.sha
            reason = keep.excludes(c)
            if reason is not None:
                report.ignored[reason] = report.ignored.get(reason, 0) + 1
                if c.sha in known and not self.opts.dry_run:
                    self.store.archive(known[c.sha], reason=f"{reason} commit: not knowledge")
                    report.archived += 1
                continue
            candidate = from_commit(c, root_s)
            if c.sha in known:
                self.rewrite(known[c.sha], candidate, report)
                continue
            batch.append(candidate)
            if c.reverts:
                reverts.append((c.sha, c.reverts))
            if len(batch) >= BATCH:
                flush()
        if batch:
            flush()
        if self.opts.dry_run:
            return
        for sha, reverted in reverts:
            new = self.store.find_by_source("git", sha)
            olds = self.store.source_ids("git", prefix=reverted)
            for old_id in olds.values():
                if new is not None and old_id != new.id:
                    old = self.store.get(old_id)
                    if old.superseded_by is None:
                        self.store.graph.supersede(old_id, new.id, at=new.created_at)
                        report.superseded += 1
        if last is not None:
            self.store.cursors.set("git", {"last_commit": last, "format": GIT_FORMAT})
        elif redo:
            self.store.cursors.set("git", {"format": GIT_FORMAT})

    def rewrite(self, memory_id: int, candidate: Candidate, report: SourceReport) -> None:
        """A memory of an older format gets the text extraction gives now (its levels are
        filled again); one whose new text another memory already has is archived."""
        old = self.store.get(memory_id)
        if old.text == candidate.memory.text or self.opts.dry_run:
            report.unchanged += 1
            return
        try:
            self.store.update(
                memory_id,
                text=candidate.memory.text,
                summary=None,
                compressed=None,
                index_label=None,
                metadata={**old.metadata, **candidate.memory.metadata},
            )
            report.rewritten += 1
        except StoreError as e:  # the same text is another memory now: fold into it
            self.store.archive(memory_id, reason=f"rewritten commit: {e}")
            report.archived += 1

    # ---- decision records ------------------------------------------------------------------

    def adr(self, report: SourceReport) -> None:
        from storage.sources import adr

        records = []
        if not self.opts.paths:
            records = adr.find_records(self.root, skips=self.skips)
        for p in map(Path, self.opts.paths):
            # a folder or file given on purpose: relative to the project when inside it
            inside = p.resolve().is_relative_to(self.root.resolve())
            base = self.root if inside else (p if p.is_dir() else p.parent)
            rel = p.resolve().relative_to(base.resolve()).as_posix() or "."
            if p.is_dir():
                records += adr.find_records(base, dirs=[rel], skips=self.skips)
            else:
                records += adr.find_records(base, paths=[rel], skips=self.skips)
        report.read = len(records)
        state = self.store.cursors.get("adr")
        previous = self.store.source_ids("adr", include_archived=False)
        changed_state: dict[str, str] = {}
        by_path: dict[str, int] = {}
        todo = []
        for r in records:
            fp = _fingerprint(r.text, r.status, r.supersedes, r.superseded_by)
            if state.get(r.path) == fp and r.path in previous:
                report.unchanged += 1
                by_path[r.path] = previous[r.path]
                continue
            todo.append((r, fp))
        for start in range(0, len(todo), BATCH):
            chunk = todo[start : start + BATCH]
            stored = self.store_candidates([self.decision(r) for r, _ in chunk], report)
            for (r, fp), (_, mid) in zip(chunk, stored):
                changed_state[r.path] = fp
                if mid is None:
                    continue
                earlier = previous.get(r.path)
                if earlier is not None and earlier != mid:  # the record was edited: keep history
                    self.store.graph.supersede(earlier, mid)
                    report.superseded += 1
                by_path[r.path] = mid
            self.progress(f"decision records: {start + len(chunk)} of {len(todo)}", len(todo))
        if self.opts.dry_run:
            return
        for r in records:
            new_id = by_path.get(r.path)
            self.relate_records(r, by_path)
            for old_path in r.supersedes:
                old_id = by_path.get(old_path)
                if new_id is None or old_id is None or old_id == new_id:
                    continue
                old = self.store.get(old_id)
                if old.superseded_by != new_id:
                    new = self.store.get(new_id)
                    self.store.graph.supersede(old_id, new_id, at=new.valid_from)
                    report.superseded += 1
        if changed_state:
            self.store.cursors.set("adr", changed_state)

    def changed_at(self, path: str, *, committed: bool = False) -> float | None:
        """When ``path`` got its text (:func:`storage.sources.git.last_changed`); with
        ``committed``, only the time of the commit that gave it (None when it has uncommitted
        changes or git does not know it)."""
        from storage.sources import git

        key = (path, committed)
        if key not in self._changed:
            self._changed[key] = (
                git.committed_at(self.root, path)
                if committed
                else git.last_changed(self.root, path)
            )
        return self._changed[key]

    def decision(self, r: DecisionRecord) -> Candidate:
        """A record's memory, known from when its text was (``--as-of``): one without a date
        of its own from the last commit that changed it (its modification time when git does
        not have it), never from the ingestion; one edited in git after the date it names
        from that edit, since the text held is the edited one. Its own date (metadata) stays
        what the record says."""
        c = from_decision(r)
        m = c.memory
        if r.date is None:
            at = self.changed_at(r.path)
            if at is not None:
                m.created_at = m.valid_from = at
        else:
            at = self.changed_at(r.path, committed=True)
            if at is not None and m.valid_from is not None and at > m.valid_from:
                m.valid_from = at
        return c

    def relate_records(self, r: DecisionRecord, by_path: dict[str, int]) -> None:
        """A record that partly supersedes (amends) another is linked to it (EVOLVED_INTO,
        the older one stays valid); one that only links to another is related to it."""
        me = by_path.get(r.path)
        if me is None:
            return
        for paths, etype, older_first in (
            (r.amends, EdgeType.EVOLVED_INTO, True),
            (r.links, EdgeType.RELATES_TO, False),
        ):
            for path in paths:
                other = by_path.get(path)
                if other is None or other == me:
                    continue
                src, dst = (other, me) if older_first else (me, other)
                self.store.graph.add(src, dst, etype, 1.0, {"by": "adr"})

    # ---- rule files ------------------------------------------------------------------------

    def rules(self, report: SourceReport) -> None:
        from storage.sources import git, rules

        paths = [Path(p) for p in self.opts.paths] if self.opts.paths else None
        state = self.store.cursors.get("rules")
        seen: set[str] = set()
        new_state: dict[str, str] = {}
        for f in rules.find_rule_files(self.root, paths=paths, skips=self.skips):
            report.read += 1
            seen.add(f.path)
            fp = _fingerprint(f.text, f.globs, f.always_apply, [i.text for i in f.items])
            if state.get(f.path) == fp:
                report.unchanged += 1
                continue
            at = git.last_changed(self.root, f.path)
            stored = self.store_candidates(from_rule_file(f, at), report)
            new_state[f.path] = fp
            if self.opts.dry_run:
                continue
            now_ids = {mid for _, mid in stored if mid is not None}
            for mid in self.store.ids_from_source("rules", prefix=f"{f.path}:"):
                if mid not in now_ids:
                    self.store.archive(mid, reason=f"no longer in {f.path}")
                    report.archived += 1
            self.progress(f"rules: {f.path}")
        if paths is None and not self.opts.dry_run:
            for path in set(state) - seen:
                if state[path] == "removed":
                    continue
                for mid in self.store.ids_from_source("rules", prefix=f"{path}:"):
                    self.store.archive(mid, reason=f"{path} was removed")
                    report.archived += 1
                new_state[path] = "removed"
        if new_state and not self.opts.dry_run:
            self.store.cursors.set("rules", new_state)

    # ---- the team's shared folder ------------------------------------------------------------

    def shared(self, report: SourceReport) -> None:
        from predictive.team import folder_of, read_folder

        folder = folder_of(self.root, self.opts.shared_folder)
        self.progress(f"shared: reading {folder}")
        got = read_folder(self.store, self.root, folder, self.skips, dry_run=self.opts.dry_run)
        report.read += got.read
        report.added += got.added
        report.unchanged += got.unchanged
        report.rewritten += got.updated
        report.superseded += got.superseded
        report.archived += got.archived
        for k, n in got.by_kind.items():
            report.by_kind[k] = report.by_kind.get(k, 0) + n

    # ---- chats -----------------------------------------------------------------------------

    def conversations(self) -> Iterator[Conversation]:
        from storage.sources import chats

        # What the user names with --path is read whatever project it belongs to.
        every = self.opts.all_workspaces or bool(self.opts.paths)
        return chats.read_all(
            None if every else self.root,
            tools=self.opts.tools,
            paths=[Path(p) for p in self.opts.paths] or None,
            home=Path(self.opts.home) if self.opts.home else None,
            platform=self.opts.platform,
            all_workspaces=every,
            since=self.opts.since,
            skips=self.skips,
        )

    def session_memory(self, conv: Conversation, summary: str) -> int:
        """The conversation's own memory (added, or the current one kept); an earlier version
        of it is superseded."""
        if self._files is None:
            self._files = project_index(self.root)
        # A file the user names in a request says more than one an answer lists; what the
        # assistant reasoned about counts like what it said.
        said = [m.text for m in conv.messages if m.role != "user"] + list(conv.thoughts)
        asked = [m.text for m in conv.messages if m.role == "user"]
        # a name several files share means one that existed while it was talked about
        at = conv.ended_at or conv.started_at
        mentions = self._files.named(said, at=at)
        for path, n in self._files.named(asked, at=at).items():
            mentions[path] += USER_MENTION_WEIGHT * n
        for path, n in self._files.named([*said, *asked], in_output=True, at=at).items():
            if path not in mentions:
                mentions[path] = min(OUTPUT_MENTION_WEIGHT * n, OUTPUT_MENTION_CAP)  # type: ignore[assignment]
        new = session_unit(conv, summary, mentions)
        old = self.store.find_by_source(new.source, conv.external_id)
        result = self.store.add(new)
        if old is not None and old.id != result.id and old.superseded_by is None:
            self.store.graph.supersede(old.id, result.id, at=new.valid_from)
        return result.id

    def chats(
        self,
        report: SourceReport,
        conversations: Iterable[Conversation] | None = None,
        learned: Mapping[str, int] | None = None,
    ) -> None:
        sessions = SessionStore(self.store)
        state = self.store.cursors.get("chats")
        new_state: dict[str, str] = {}
        for read in conversations if conversations is not None else self.conversations():
            conv = without_injected(read)  # what Living Memory injected is never learned
            report.read += 1
            key = f"{conv.tool}:{conv.external_id}"
            fp = _fingerprint(conv.title, [(m.idx, m.role, m.text) for m in conv.messages])
            if state.get(key) == fp:
                report.unchanged += 1
                continue
            start = (learned or {}).get(key, 0)
            if start and self.continue_chat(conv, start, sessions, report):
                new_state[key] = fp  # a later ingestion of the same transcript is unchanged
                continue
            conv = redacted(conv)  # before anything is derived from it
            extraction = extract_conversation(conv)
            extract_with(self.llm, conv, extraction)  # a configured LLM's validated items
            if self.opts.dry_run:
                report.sessions += 1
                report.messages += len(conv.messages)
                self.store_candidates(extraction.kept + extraction.dropped, report)
                continue
            summary = summarise(conv)
            saved = sessions.save(conv, summary=summary)
            report.sessions += 1
            report.messages += saved.new_messages + saved.changed_messages
            unit = self.session_memory(conv, summary)
            sessions.link(saved.session_id, unit, None)
            stored = self.store_candidates(extraction.kept + extraction.dropped, report)
            for c, mid in stored:
                if mid is not None:
                    sessions.link(saved.session_id, mid, c.message_idx)
                    if mid != unit:
                        self.store.graph.add(mid, unit, EdgeType.DERIVED_FROM, 1.0)
            new_state[key] = fp
            if len(new_state) >= 50:
                self.store.cursors.set("chats", new_state)
                new_state.clear()
            self.progress(f"chats: {report.sessions} conversations")
        if new_state:
            self.store.cursors.set("chats", new_state)

    def continue_chat(
        self, conv: Conversation, start: int, sessions: SessionStore, report: SourceReport
    ) -> bool:
        """Learn a conversation whose first ``start`` messages are stored already: only the
        messages from ``start`` on (from the turn still open then) are redacted and saved, and
        extracted from with the few turns before them that a new message can change; the
        summary and the conversation's memory read the whole conversation, its earlier
        messages as stored (redacted already). False (nothing done) when the store lacks them."""
        known = sessions.find(conv.tool, conv.external_id)
        if known is None or start > len(conv.messages):
            return False
        cut = start
        if start < len(conv.messages) and conv.messages[start].role != "user":
            # the turn learned half-way (its transcript lagged) is read again whole
            users = [i for i, m in enumerate(conv.messages[:start]) if m.role == "user"]
            cut = users[-1] if users else 0
        end = conv.messages[cut].idx if cut < len(conv.messages) else None  # None: all
        stored = sessions.messages(known.id, 0, end) if cut else []
        if cut and not stored:  # the store lost what it learned: learn it all again
            return False
        part = redacted(replace(conv, messages=conv.messages[cut:]))
        whole = replace(part, messages=tuple(map(_as_read, stored)) + part.messages)
        # what spans turns is found as before: the turns a new message can change are read
        since = part.messages[0].idx if part.messages else conv.messages[-1].idx + 1
        extraction = extract_conversation(whole, since=since)
        extract_with(self.llm, part, extraction)  # a configured LLM reads the new part only
        summary = summarise(whole)
        saved = sessions.save(part, summary=summary)
        report.sessions += 1
        report.messages += saved.new_messages + saved.changed_messages
        unit = self.session_memory(whole, summary)
        sessions.link(saved.session_id, unit, None)
        for c, mid in self.store_candidates(extraction.kept + extraction.dropped, report):
            if mid is not None:
                sessions.link(saved.session_id, mid, c.message_idx)
                if mid != unit:
                    self.store.graph.add(mid, unit, EdgeType.DERIVED_FROM, 1.0)
        return True


def _as_read(m: Message) -> ChatMessage:
    """A stored message as a reader gives it (its code blocks and files from its metadata)."""
    meta = dict(m.metadata)
    blocks = meta.pop("codeBlocks", None) or []
    files = meta.pop("files", None) or []
    return ChatMessage(
        m.idx,
        m.role,  # type: ignore[arg-type]
        m.text,
        at=m.at,
        code_blocks=tuple(
            CodeBlock(str(b.get("code") or ""), b.get("language"), b.get("filename"))
            for b in blocks
            if isinstance(b, dict)
        ),
        files=tuple(f for f in files if isinstance(f, str)),
        metadata=meta,
    )


def run(
    store: MemoryStore,
    *,
    root: str | Path,
    options: dict[str, Any] | IngestOptions | None = None,
    progress: Progress | None = None,
    conversations: Iterable[Conversation] | None = None,
    learned: Mapping[str, int] | None = None,
    learn: bool = True,
) -> Ingested:
    """Ingest the wanted sources of ``root`` into ``store``; answer what it did.

    Text, keyword indexes and ties are stored (and committed) first, without vectors: the
    store is searchable by keyword from then on. With ``learn`` the vectors follow here
    (:func:`learn_vectors`: memories, the contradiction scan that needs them, then conversation
    passages); without it they are left pending for the caller to learn in the background
    (:meth:`predictive.session.ProjectSession.learn`). ``conversations`` replaces the chat
    readers (the LoCoMo benchmark feeds its own); ``learned``: how many messages of a
    conversation (``tool:id``) were learned already (a live session's transcript read again),
    whose later ones only are learned."""
    opts = IngestOptions.from_dict(options)
    root = Path(root)
    job = _Run(store, root, opts, progress)
    started = time.perf_counter()
    before = max_memory_id(store)
    if not opts.dry_run:  # scanned once their vectors are in, even after a kill
        hold_backlog(store, before)
    reports: dict[str, SourceReport] = {}
    with store.vectors_later():
        for source in opts.wanted():
            report = reports[source] = SourceReport()
            t0 = time.perf_counter()
            job.progress(f"{source}: reading")
            try:
                if source == "chats":
                    job.chats(report, conversations, learned)
                else:
                    getattr(job, source)(report)
            except Exception as e:
                if e is job.cancelled:
                    raise
                # one failing source is reported and the others still run
                log.warning("ingesting %s failed", source, exc_info=True)
                report.error = f"{type(e).__name__}: {e}"
            report.seconds = time.perf_counter() - t0
    if not opts.dry_run:  # what the new memories cite, and the commit they were learned at
        staleness.record(store, root, ids_after(store, before))
    added = sum(r.added for r in reports.values())
    categories = None
    if added and not opts.dry_run:  # new memories join their areas (predictive.categories)
        try:
            categories = refresh_categories(store, llm=job.llm, full=False)
        except Exception:
            log.warning("refreshing categories after ingest failed", exc_info=True)
    searchable = time.perf_counter() - started
    vectors: Learned | None = None
    if learn and not opts.dry_run:
        vectors = learn_vectors(store, progress=job.report, llm=job.llm)
    scanned = vectors.scan if vectors is not None else None
    opened, suspected = (0, 0) if scanned is None else scanned[:2]
    elapsed = time.perf_counter() - started
    messages = sum(r.messages for r in reports.values())
    return Ingested(
        root=str(root),
        dry_run=opts.dry_run,
        since=opts.since,
        sources={k: v.summary() for k, v in reports.items()},
        added=added,
        existing=sum(r.existing for r in reports.values()),
        dropped=sum(r.dropped for r in reports.values()),
        contradictions_opened=opened,
        contradictions_suspected=suspected,
        contradiction_scan=None if scanned is None else scanned[2],
        skipped=job.skips.as_dict(),
        categories=categories,
        seconds=round(elapsed, 3),
        searchable_seconds=round(searchable, 3),
        learned=None if vectors is None else vectors.to_dict(),
        memories_per_second=round(added / elapsed, 1) if elapsed > 0 else None,
        messages_per_second=round(messages / elapsed, 1) if elapsed > 0 and messages else None,
    )


@dataclass
class Learned:
    """What :func:`learn_vectors` did: vectors written, the contradiction scan, and its time."""

    memories: int = 0
    passages: int = 0
    scan: tuple[int, int, dict[str, object] | None] | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "memories": self.memories,
            "passages": self.passages,
            "seconds": round(self.seconds, 3),
        }


LEARN_BATCH = 128
"""Texts embedded per transaction: small enough that a kill loses seconds of work, large
enough that texts of like length share a batch (little padding)."""


def learn_vectors(
    store: MemoryStore,
    *,
    progress: Progress | None = None,
    llm: LlmClient | None = None,
    batch: int = LEARN_BATCH,
) -> Learned:
    """Give what lacks a vector its vector, ``batch`` texts per transaction: memories first
    (what search and context rank by meaning), then the contradiction scan of what waits for
    it (it compares by meaning), then conversation passages and summaries. What a previous
    run left (stopped, killed) is taken up where it stopped: a row without a vector is what
    is left. ``progress(done, total, "learning: 4,210 of 9,010 passages")`` may raise to stop
    between batches; what was written stays written."""
    out = Learned()
    t0 = time.perf_counter()
    if not store.has_embedder:
        return out

    def step(unit: str) -> Callable[[int, int], None]:
        def report(done: int, total: int) -> None:
            if progress is not None:
                progress(done, total, f"learning: {done:,} of {total:,} {unit}")

        return report

    out.memories = store.embeddings.embed_pending(batch=batch, progress=step("memories"))
    out.scan = _scan_contradictions(store, max_memory_id(store), llm)
    out.passages = sessions_of(store).embed_pending(batch=batch, progress=step("passages"))
    out.seconds = time.perf_counter() - t0
    return out


def _scan_contradictions(
    store: MemoryStore, before: int, llm: LlmClient | None = None
) -> tuple[int, int, dict[str, object] | None]:
    """Record the contradictions the memories added after id ``before`` bring (and those an
    earlier scan left), for a bounded time (:func:`predictive.conflicts.scan_backlog`);
    answers how many were opened, how many only suspected, and what the scan did ((0, 0,
    None) on failure: ingestion stands without them). A configured model judges the
    candidate pairs."""
    try:
        progress = scan_backlog(store, before, judge=scanner_judge(llm))
        recorded = [store.contradictions.get(i).status for i in progress.opened]
    except Exception:  # whatever went wrong, what was ingested stays ingested
        log.warning("scanning for contradictions failed", exc_info=True)
        return 0, 0, None
    opened = sum(1 for s in recorded if s is ContradictionStatus.OPEN)
    if progress.stopped:
        log.info("the contradiction scan stopped with %d memories left", progress.left)
    return opened, len(recorded) - opened, progress.to_dict()


def first_run(
    store: MemoryStore,
    root: str | Path,
    *,
    progress: Progress | None = None,
    options: dict[str, Any] | None = None,
    learn: bool = True,
) -> Ingested | None:
    """Ingest git, decision records and rule files once, the first time a store meets its
    project (chats only on request: they are personal). None when it was done before —
    by this or by any explicit ingestion of those sources. ``options`` are passed on (which
    commit noise to keep); without ``learn`` the vectors are left for the caller."""
    if not needs_first_run(store):
        return None
    opts = {**(options or {}), "sources": FIRST_RUN_SOURCES}
    summary = run(store, root=root, options=opts, progress=progress, learn=learn)
    store.cursors.set("first_run", {"done": str(time.time())})
    return summary


def needs_first_run(store: MemoryStore) -> bool:
    if store.cursors.get("first_run"):
        return False
    return not any(store.cursors.get(s) for s in FIRST_RUN_SOURCES)
