"""The ``living-memory`` command line: remember, search, show, related, forget, restore, stats,
reindex, ingest, consolidate, context. Every read command takes ``--json``. Errors are one line
on stderr and exit code 2."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

import apsw

from predictive import llm_config
from predictive.signals import Activity
from storage import (
    Anchor,
    AnchorType,
    Artifact,
    EdgeType,
    Kind,
    Level,
    Memory,
    MemoryFilter,
    MemoryStore,
    NewMemory,
    Scope,
    StoreError,
)
from storage.embeddings import ENV_MODEL_DIR, embedder_from_env
from storage.paths import current_branch, default_db_path, git_root
from storage.search import MIN_SIMILARITY
from storage.text import parse_instant

INGEST_SOURCES = ("git", "adr", "rules", "chats", "all")
EXIT_OK = 0
EXIT_ERROR = 2

log = logging.getLogger("living_memory")


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(f"{self.prog}: {message}")


# ---- argument types --------------------------------------------------------------------------


def _memory_id(text: str) -> int:
    t = text.lstrip("#")
    if not t.isdigit() or int(t) <= 0:
        raise argparse.ArgumentTypeError(f"not a memory id: {text!r}")
    return int(t)


def _unit_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text!r}")
    return v


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer: {text!r}")
    return int(text)


def _time(text: str) -> float:
    """An ISO date/time (UTC unless it says otherwise) or seconds since the epoch."""
    at = parse_instant(text)
    if at is None:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (use ISO 8601 like 2026-01-31 or epoch seconds)"
        )
    return at


def _ingest_source(text: str) -> str:
    if text not in INGEST_SOURCES:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(INGEST_SOURCES)})"
        )
    return text


def _anchor(text: str) -> Anchor:
    try:
        return Anchor.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _choice(enum_cls: type) -> Callable[[str], Any]:
    values = [e.value for e in enum_cls]

    def parse(text: str) -> Any:
        for v in values:
            if v.lower() == text.lower():
                return enum_cls(v)
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(values)}")

    parse.__name__ = enum_cls.__name__.lower()
    return parse


# ---- parser ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="living-memory",
        description="Project memory for AI-assisted coding.",
    )
    p.add_argument(
        "--db",
        type=Path,
        help="database file (default: $LIVING_MEMORY_DB, else the user data dir keyed by the "
        "git root of the current directory)",
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        default=os.environ.get(ENV_MODEL_DIR) or None,
        help="embedding model directory with model.onnx + tokenizer.json "
        f"(default: ${ENV_MODEL_DIR}, else the packaged all-MiniLM-L6-v2)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    r = sub.add_parser("remember", help="store a memory")
    r.add_argument("text", nargs="+", help="the memory text ('-' reads standard input)")
    r.add_argument("--kind", "-k", type=_choice(Kind), default=Kind.FACT)
    r.add_argument(
        "--anchor",
        "-a",
        type=_anchor,
        action="append",
        default=[],
        help="what it concerns: file:PATH, module:NAME, symbol:NAME, branch:NAME, error:SIG, "
        "tag:NAME (a bare word is a tag); repeatable",
    )
    r.add_argument("--tag", "-t", action="append", default=[], help="a tag; repeatable")
    r.add_argument("--importance", type=_unit_float, default=0.5)
    r.add_argument("--scope", type=_choice(Scope), default=Scope.PROJECT)
    r.add_argument("--source", default="manual")
    r.add_argument("--source-id")
    r.add_argument(
        "--artifact",
        action="append",
        default=[],
        metavar="TYPE:REF",
        help="commit:SHA, adr:PATH, pr:URL …; repeatable",
    )
    r.add_argument("--supersedes", type=_memory_id, help="id of the memory this replaces")
    r.add_argument("--json", action="store_true")

    s = sub.add_parser("search", help="hybrid keyword + semantic search")
    s.add_argument("query", nargs="+")
    s.add_argument("-n", "--limit", type=_positive_int, default=10)
    s.add_argument("--kind", "-k", type=_choice(Kind), action="append", default=[])
    s.add_argument("--anchor", "-a", type=_anchor, action="append", default=[])
    s.add_argument("--branch", help="only memories on this branch or on no particular branch")
    s.add_argument("--mode", choices=["hybrid", "keyword", "vector"], default="hybrid")
    s.add_argument("--archived", action="store_true", help="include archived memories")
    s.add_argument(
        "--min-similarity",
        type=_unit_float,
        default=MIN_SIMILARITY,
        help="drop semantic matches below this cosine similarity (default %(default)s)",
    )
    when = s.add_mutually_exclusive_group()
    when.add_argument("--valid-at", type=_time, help="only memories valid at this time")
    when.add_argument("--current", action="store_true", help="only memories valid now")
    when.add_argument(
        "--as-of",
        type=_time,
        help="answer as the store would have at this time (nothing learned later)",
    )
    s.add_argument(
        "--sessions",
        action="store_true",
        help="search conversations session first: best sessions, then messages inside them",
    )
    s.add_argument("--json", action="store_true")

    sh = sub.add_parser("show", help="show one memory")
    sh.add_argument("id", type=_memory_id)
    sh.add_argument("--level", type=_choice(Level), default=Level.FULL)
    sh.add_argument("--json", action="store_true")

    rel = sub.add_parser("related", help="walk the relationship graph from a memory")
    rel.add_argument("id", type=_memory_id)
    rel.add_argument("--depth", type=_positive_int, default=2)
    rel.add_argument("--type", type=_choice(EdgeType), action="append", default=[])
    rel.add_argument("--min-strength", type=_unit_float, default=0.0)
    rel.add_argument("--direction", choices=["out", "in", "both"], default="both")
    rel.add_argument(
        "--link",
        type=_memory_id,
        metavar="OTHER",
        help="first add an edge from ID to OTHER (with --type, default RELATES_TO)",
    )
    rel.add_argument("--strength", type=_unit_float, default=1.0, help="strength for --link")
    rel.add_argument("--json", action="store_true")

    f = sub.add_parser("forget", help="archive a memory (restorable); --purge deletes it")
    f.add_argument("id", type=_memory_id)
    f.add_argument("--reason")
    f.add_argument(
        "--purge",
        action="store_true",
        help="delete permanently (only an archived memory can be purged)",
    )

    rs = sub.add_parser("restore", help="bring back an archived memory")
    rs.add_argument("id", type=_memory_id)

    st = sub.add_parser("stats", help="what the store holds")
    st.add_argument("--json", action="store_true")

    cx = sub.add_parser("context", help="the context an AI assistant should see for a file")
    cx.add_argument("file", type=Path)
    cx.add_argument("--branch", help="default: the branch checked out in the file's repository")
    cx.add_argument(
        "--diagnostics",
        metavar="JSON",
        help="the file's diagnostics as a JSON list (LSP shape), or @PATH to read them from a file",
    )
    cx.add_argument("--activity", type=_choice(Activity), help="override the inferred activity")
    cx.add_argument("--budget", type=_positive_int, help="total tokens (default 8000)")
    cx.add_argument(
        "--as-of",
        type=_time,
        help="assemble it as the store would have at this time (nothing learned later)",
    )
    cx.add_argument("--json", action="store_true")

    ig = sub.add_parser(
        "ingest",
        help="learn from git history, decision records, rule files and chat histories",
    )
    ig.add_argument(
        "what",
        nargs="*",
        type=_ingest_source,
        help="git, adr, rules, chats or all (default: all)",
    )
    ig.add_argument(
        "--source",
        action="append",
        default=[],
        choices=["cursor", "specstory", "copilot", "claude", "codex"],
        help="only these chat tools (repeatable; implies chats)",
    )
    ig.add_argument(
        "--path", action="append", default=[], type=Path, help="read this file or folder instead"
    )
    ig.add_argument("--since", help="only newer records: a date, a time or an age (30d, 12h)")
    ig.add_argument(
        "--dry-run", action="store_true", help="count what would be added; write nothing"
    )
    ig.add_argument(
        "--all", action="store_true", help="chats of every workspace, not only this project's"
    )
    ig.add_argument(
        "--include-merges", action="store_true", help="keep merge commits (left out by default)"
    )
    ig.add_argument(
        "--include-bots",
        action="store_true",
        help="keep commits by bots: dependabot, renovate, github-actions, …[bot] (left out)",
    )
    ig.add_argument(
        "--include-trivial",
        action="store_true",
        help='keep trivial commits: "wip", "fix", "Initial commit", two words and no body',
    )
    ig.add_argument("--root", type=Path, help="the project folder (default: the git root here)")
    ig.add_argument("--watch", action="store_true", help="keep following new conversations")
    ig.add_argument("--interval", type=float, default=10.0, help="seconds between --watch rounds")
    ig.add_argument("--rounds", type=_positive_int, help=argparse.SUPPRESS)
    ig.add_argument("--json", action="store_true")

    co = sub.add_parser(
        "consolidate",
        help="upkeep: fill levels, refresh decay, link near duplicates, open fact contradictions",
    )
    co.add_argument(
        "--dry-run", action="store_true", help="count what would be done; write nothing"
    )
    co.add_argument("--json", action="store_true")

    ri = sub.add_parser("reindex", help="rebuild the keyword and vector indexes from the database")
    ri.add_argument("--json", action="store_true")

    from server.lsp import add_arguments

    sv = sub.add_parser("serve", help="run the language server (LSP over stdio by default)")
    add_arguments(sv)
    return p


# ---- helpers ---------------------------------------------------------------------------------


def _fmt_time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _one_line(text: str, width: int = 100) -> str:
    t = " ".join(text.split())
    return t if len(t) <= width else t[: width - 1] + "…"


def _embedder_factory(model_dir: Path | None) -> Callable[[], Any]:
    return lambda: embedder_from_env(model_dir)


def _progress(label: str) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\r{label}: {done}/{total}", end="", file=sys.stderr, flush=True)
            if done >= total:
                print(file=sys.stderr)

    return report


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


# ---- commands --------------------------------------------------------------------------------


def cmd_remember(store: MemoryStore, a: argparse.Namespace) -> int:
    text = " ".join(a.text)
    if text == "-":
        raw = sys.stdin.buffer.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CliError(f"standard input is not valid UTF-8 (byte {e.start})") from None
    anchors = list(a.anchor) + [Anchor(AnchorType.TAG, t) for t in a.tag if t.strip()]
    artifacts = []
    for raw in a.artifact:
        kind, sep, ref = raw.partition(":")
        if not sep or not kind or not ref:
            raise CliError(f"--artifact must look like TYPE:REF, not {raw!r}")
        artifacts.append(Artifact(kind, ref))
    if a.supersedes is not None and not store.exists(a.supersedes):
        raise CliError(f"--supersedes: no memory #{a.supersedes}")
    result = store.add(
        NewMemory(
            text=text,
            kind=a.kind,
            anchors=anchors,
            artifacts=artifacts,
            importance=a.importance,
            scope=a.scope,
            source=a.source,
            source_id=a.source_id,
        )
    )
    if a.supersedes is not None:
        store.supersede(a.supersedes, result.id)
    if a.json:
        _print_json({"id": result.id, "created": result.created})
    elif result.created:
        print(f"Remembered #{result.id}")
    else:
        print(f"Already remembered as #{result.id}")
    return EXIT_OK


def cmd_search(store: MemoryStore, a: argparse.Namespace) -> int:
    from predictive.retrieval import find
    from storage.sessions import sessions_of

    if a.sessions:
        return _search_sessions(store, a)
    if store.pending_embeddings():
        store.embed_pending(progress=_progress("embedding"))
    sessions = sessions_of(store)
    if sessions.pending_embeddings():
        sessions.embed_pending(progress=_progress("embedding messages"))
    filters = MemoryFilter(
        kinds=a.kind,
        anchors=a.anchor,
        branch=a.branch,
        include_archived=a.archived,
        valid_at=time.time() if a.current else a.valid_at,
    )
    results = find(
        store,
        " ".join(a.query),
        filters=filters,
        k=a.limit,
        mode=a.mode,
        as_of=a.as_of,
        min_similarity=a.min_similarity,
    )
    ids = [r.memory.id for r in results if r.memory is not None]
    if ids:
        store.record_accesses(ids, "retrieval", context="cli search")
    if a.json:
        _print_json([r.to_dict() for r in results])
        return EXIT_OK
    if not results:
        print("No memories match.")
        return EXIT_OK
    for r in results:
        m = r.memory
        flags = ""
        if m is not None:
            flags += " (archived)" if m.archived else ""
            flags += " (superseded)" if m.superseded_by else ""
        ref = f"#{m.id}" if m is not None else "-"
        print(f"{ref:<7} {r.kind:<12} {r.score:.3f}  {_one_line(r.label, 78)}{flags}")
        print(f"{'':21}{r.provenance.kind}: {r.provenance}")
        if r.snippet and (m is None or r.snippet != _one_line(m.text, 280)):
            print(f"{'':21}{_one_line(r.snippet, 78)}")
    return EXIT_OK


def _search_sessions(store: MemoryStore, a: argparse.Namespace) -> int:
    from storage.session_search import session_first
    from storage.sessions import sessions_of

    sessions = sessions_of(store)
    if sessions.pending_embeddings():
        sessions.embed_pending(progress=_progress("embedding messages"))
    result = session_first(sessions, " ".join(a.query), k=a.limit, mode=a.mode)
    if a.json:
        _print_json(result.to_dict())
        return EXIT_OK
    if not result.hits:
        print("No conversation matches.")
        return EXIT_OK
    for sh in result.sessions:
        s = sh.session
        print(
            f"session {s.id} [{s.tool}] {sh.score:.3f}  {_one_line(s.title or s.summary or '', 70)}"
        )
        for h in (h for h in result.hits if h.message.session_id == s.id):
            m = h.message
            for n in (x for x in h.neighbours if x.idx < m.idx):
                print(f"      {n.idx:>4} {n.role:<9}  {_one_line(n.text, 80)}")
            print(f"  ->  {m.idx:>4} {m.role:<9}  {_one_line(m.text, 80)}  ({h.score:.3f})")
            for n in (x for x in h.neighbours if x.idx > m.idx):
                print(f"      {n.idx:>4} {n.role:<9}  {_one_line(n.text, 80)}")
    if result.cross_links:
        print(
            "related sessions: "
            + ", ".join(
                f"{c.session.id} ({_one_line(c.session.title or '', 40)})"
                for c in result.cross_links
            )
        )
    return EXIT_OK


def _memory_block(m: Memory, level: Level) -> list[str]:
    body = m.level(level)
    lines = [
        f"#{m.id} {m.kind.value}  ({m.scope.value}, source: {m.source}"
        + (f" {m.source_id}" if m.source_id else "")
        + ")",
        f"created {_fmt_time(m.created_at)}; valid {_fmt_time(m.valid_from)} → "
        + ("now" if m.valid_to is None else _fmt_time(m.valid_to)),
    ]
    if m.archived:
        lines.append(
            f"ARCHIVED {_fmt_time(m.archived_at)}"
            + (f": {m.archive_reason}" if m.archive_reason else "")
        )
    if m.superseded_by:
        lines.append(f"superseded by #{m.superseded_by}")
    if m.supersedes:
        lines.append(f"supersedes #{m.supersedes}")
    if m.anchors:
        lines.append("anchors: " + ", ".join(str(x) for x in m.anchors))
    if m.artifacts:
        lines.append("artifacts: " + ", ".join(f"{x.type}:{x.ref}" for x in m.artifacts))
    lines.append(
        f"importance {m.importance:.2f}, decay {m.decay_score:.2f}, used "
        f"{m.retrieval_count}× retrieved, {m.citation_count}× cited, {m.ignore_count}× ignored"
    )
    lines.append("")
    if body is None:
        lines.append(f"(no {level.value} level yet; full text:)")
        body = m.text
    lines.append(body)
    return lines


def cmd_show(store: MemoryStore, a: argparse.Namespace) -> int:
    m = store.get(a.id)
    store.record_access(m.id, "view", context="cli show")
    edges = store.edges(m.id, direction="both")
    if a.json:
        out = m.to_dict()
        out["level"] = a.level.value
        out["edges"] = [
            {
                "source": e.source_id,
                "target": e.target_id,
                "type": e.type.value,
                "strength": e.strength,
            }
            for e in edges
        ]
        out["categories"] = store.memory_categories(m.id)
        _print_json(out)
        return EXIT_OK
    print("\n".join(_memory_block(m, a.level)))
    if edges:
        print("\nedges:")
        for e in edges:
            other = e.target_id if e.source_id == m.id else e.source_id
            arrow = "→" if e.source_id == m.id else "←"
            print(f"  {arrow} {e.type.value} #{other} ({e.strength:.2f})")
    return EXIT_OK


def cmd_related(store: MemoryStore, a: argparse.Namespace) -> int:
    if a.link is not None:
        store.add_edge(a.id, a.link, a.type[0] if a.type else EdgeType.RELATES_TO, a.strength)
    steps = store.traverse(
        a.id,
        depth=a.depth,
        types=a.type or None,
        min_strength=a.min_strength,
        direction=a.direction,
    )
    mems = {m.id: m for m in store.get_many([s.memory_id for s in steps])}
    if a.json:
        _print_json(
            {
                "id": a.id,
                "related": [
                    {
                        "id": s.memory_id,
                        "depth": s.depth,
                        "via": s.via.value,
                        "from": s.parent_id,
                        "strength": round(s.strength, 6),
                        "kind": mems[s.memory_id].kind.value,
                        "text": mems[s.memory_id].text,
                    }
                    for s in steps
                    if s.memory_id in mems
                ],
            }
        )
        return EXIT_OK
    if not steps:
        print(f"#{a.id} has no related memories.")
        return EXIT_OK
    for s in steps:
        m = mems.get(s.memory_id)
        if m is None:
            continue
        indent = "  " * s.depth
        print(
            f"{indent}{s.via.value} #{m.id} ({s.strength:.2f}) {m.kind.value}: "
            f"{_one_line(m.text, 70)}"
        )
    return EXIT_OK


def cmd_forget(store: MemoryStore, a: argparse.Namespace) -> int:
    m = store.get(a.id)
    if a.purge:
        if not m.archived:
            raise CliError(f"#{a.id} is not archived; forget it first, then purge")
        store.purge(a.id)
        print(f"Purged #{a.id} permanently")
        return EXIT_OK
    if m.archived:
        print(f"#{a.id} was already archived")
        return EXIT_OK
    store.archive(a.id, a.reason)
    print(f"Archived #{a.id} (restore with: living-memory restore {a.id})")
    return EXIT_OK


def cmd_restore(store: MemoryStore, a: argparse.Namespace) -> int:
    m = store.get(a.id)
    if not m.archived:
        print(f"#{a.id} is not archived")
        return EXIT_OK
    store.restore(a.id)
    print(f"Restored #{a.id}")
    return EXIT_OK


def cmd_stats(store: MemoryStore, a: argparse.Namespace) -> int:
    st = store.stats()
    if a.json:
        _print_json(st.to_dict())
        return EXIT_OK
    print(f"database   {st.db_path} ({st.db_bytes / 1e6:.1f} MB)")
    print(f"memories   {st.active} active, {st.archived} archived, {st.superseded} superseded")
    if st.by_kind:
        print("kinds      " + ", ".join(f"{k} {v}" for k, v in st.by_kind.items()))
    if st.by_source:
        print("sources    " + ", ".join(f"{k} {v}" for k, v in st.by_source.items()))
    print(f"graph      {st.edges} edges, {st.contradictions_open} open contradictions")
    print(
        f"vectors    {st.embedded} embedded, {st.pending_embeddings} pending"
        + (f" (model {st.model_id})" if st.model_id else "")
    )
    print(f"sessions   {st.sessions} ({st.messages} messages)")
    return EXIT_OK


def cmd_reindex(store: MemoryStore, a: argparse.Namespace) -> int:
    result = store.reindex(progress=_progress("embedding"), fts_progress=_progress("keywords"))
    if a.json:
        _print_json(result)
    else:
        print(
            f"Reindexed: {result['fts_rows']} keyword rows, {result['vectors']} vectors "
            f"({result['embedded']} newly embedded)"
        )
    return EXIT_OK


def _ingest_progress() -> Callable[..., None]:
    state = {"message": ""}

    def report(done: int, total: int, message: str | None = None) -> None:
        if not sys.stderr.isatty():
            return
        label = message or state["message"]
        state["message"] = label
        print(f"\r\x1b[2K{label}", end="", file=sys.stderr, flush=True)

    return report


def _print_ingest(summary: dict[str, Any]) -> None:
    if sys.stderr.isatty():
        print("\r\x1b[2K", end="", file=sys.stderr)
    verb = "would add" if summary["dryRun"] else "added"
    for name, r in summary["sources"].items():
        parts = [f"{r['read']} read", f"{r['added']} {verb}"]
        for key, label in (
            ("existing", "already known"),
            ("unchanged", "unchanged"),
            ("dropped", "dropped (low confidence)"),
            ("superseded", "superseded"),
            ("archived", "archived"),
            ("rewritten", "rewritten"),
        ):
            if r.get(key):
                parts.append(f"{r[key]} {label}")
        for reason, n in r.get("ignored", {}).items():
            what = {"merge": "merge", "bot": "bot commit"}.get(reason, reason)
            plural = "s" if n != 1 and reason != "trivial" else ""
            parts.append(f"{n} {what}{plural} ignored")
        if r.get("sessions"):
            parts.append(f"{r['sessions']} conversations, {r['messages']} messages")
        kinds = ", ".join(f"{k} {v}" for k, v in r["byKind"].items())
        print(f"{name:<6} " + ", ".join(parts) + (f" [{kinds}]" if kinds else ""))
        if r.get("error"):
            print(f"{'':7}failed: {r['error']}")
    skipped = summary["skipped"]
    if skipped["total"]:
        print(f"skipped {skipped['total']}:")
        for s in skipped["byReason"]:
            print(f"  {s['source']}: {s['count']} × {s['reason']}")
    print(f"{summary['added']} memories {verb} in {summary['seconds']:.1f} s")


def _project_root(given: Path | None) -> Path:
    if given is not None:
        root = given.expanduser()
        if not root.is_dir():
            raise CliError(f"--root: {root} is not a folder")
        return root.resolve()
    return git_root(Path.cwd()) or Path.cwd().resolve()


def cmd_ingest(store: MemoryStore, a: argparse.Namespace) -> int:
    from predictive.ingest import run as ingest

    root = _project_root(a.root)
    what = list(a.what) or (["chats"] if a.source else ["all"])
    if a.source and "chats" not in what and "all" not in what:
        what.append("chats")
    for p in a.path:
        if not p.expanduser().exists():
            raise CliError(f"--path: {p} does not exist")
    options = {
        "sources": what,
        "tools": a.source or None,
        "paths": [str(p.expanduser().resolve()) for p in a.path],
        "since": a.since,
        "dry_run": a.dry_run,
        "all_workspaces": a.all,
        "include_merges": a.include_merges,
        "include_bots": a.include_bots,
        "include_trivial": a.include_trivial,
    }
    rounds = 0
    while True:
        summary = ingest(store, root=root, options=options, progress=_ingest_progress())
        rounds += 1
        if a.json:
            print(json.dumps(summary, ensure_ascii=False), flush=True)
        elif not a.watch or summary["added"] or rounds == 1:
            _print_ingest(summary)
            sys.stdout.flush()
        if not a.watch or (a.rounds is not None and rounds >= a.rounds):
            return EXIT_OK
        if rounds == 1:
            options = {**options, "sources": ["chats"]}
        time.sleep(max(0.1, a.interval))


def cmd_consolidate(store: MemoryStore, a: argparse.Namespace) -> int:
    from predictive.consolidate import run as consolidate

    if store.pending_embeddings():
        store.embed_pending(progress=_progress("embedding"))
    out = consolidate(store, options={"dry_run": a.dry_run})
    if a.json:
        _print_json(out)
        return EXIT_OK
    verb = "would" if a.dry_run else "did"
    print(
        f"Consolidation {verb}: fill the levels of {out['levelsFilled']}, refresh "
        f"{out['decayUpdated']} decay scores, link {out['similarLinked']} near duplicates, "
        f"open {out['contradictionsOpened']} contradictions ({out['seconds']:.1f} s)"
    )
    for reason in out["skipped"]:
        print(f"skipped {reason}")
    return EXIT_OK


def cmd_context(store: MemoryStore, a: argparse.Namespace) -> int:
    from predictive.compress import backfill_levels
    from predictive.engine import ContextEngine, ContextRequest
    from predictive.signals import diagnostics_from_json

    path = a.file.expanduser()
    if path.exists() and not path.is_file():
        raise CliError(f"{path} is not a file")
    root = git_root(path.parent if path.parent.exists() else Path.cwd()) or Path.cwd().resolve()
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    diagnostics: tuple = ()
    if a.diagnostics:
        raw = a.diagnostics
        if raw.startswith("@"):
            try:
                raw = Path(raw[1:]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise CliError(f"--diagnostics: cannot read {raw[1:]}: {e}") from None
        try:
            diagnostics = diagnostics_from_json(raw, rel)
        except ValueError as e:
            raise CliError(f"--diagnostics: {e}") from None
    if a.budget is not None and not 200 <= a.budget <= 1_000_000:
        raise CliError("--budget must be between 200 and 1000000 tokens")
    from predictive.ingest import first_run

    first = first_run(store, root, progress=_ingest_progress())
    if first is not None:
        if sys.stderr.isatty():
            print("\r\x1b[2K", end="", file=sys.stderr)
        per = ", ".join(f"{k} {v['added']}" for k, v in first["sources"].items())
        print(
            f"First run in {root}: learned {first['added']} memories ({per}) "
            f"in {first['seconds']:.1f} s",
            file=sys.stderr,
        )
    if store.pending_embeddings():
        store.embed_pending(progress=_progress("embedding"))
    backfill_levels(store)
    engine = ContextEngine(store, root=root)
    result = engine.assemble(
        ContextRequest(
            path=rel,
            branch=a.branch if a.branch is not None else current_branch(root),
            diagnostics=diagnostics,
            activity=a.activity,
            budget=a.budget,
            root=str(root),
            as_of=a.as_of,
        )
    )
    if a.json:
        _print_json(result.to_dict())
    else:
        print(result.markdown, end="")
        t = result.tokens
        tiers = ", ".join(f"{k} {v['used']}" for k, v in t["tiers"].items())
        print(f"\n<!-- {t['total']}/{t['budget']} tokens: {tiers} -->", file=sys.stderr)
    return EXIT_OK


def cmd_serve(a: argparse.Namespace) -> int:
    """The language server; stdout carries the protocol, so nothing else may print there."""
    from storage.paths import ENV_DB

    if a.db is not None:
        os.environ[ENV_DB] = str(a.db)
    if a.model_dir is not None:
        os.environ[ENV_MODEL_DIR] = str(a.model_dir)
    from server.app import serve

    return serve(tcp=a.tcp, log_level="debug" if a.verbose else a.log_level)


COMMANDS: dict[str, Callable[[MemoryStore, argparse.Namespace], int]] = {
    "remember": cmd_remember,
    "search": cmd_search,
    "show": cmd_show,
    "related": cmd_related,
    "forget": cmd_forget,
    "restore": cmd_restore,
    "stats": cmd_stats,
    "reindex": cmd_reindex,
    "context": cmd_context,
    "ingest": cmd_ingest,
    "consolidate": cmd_consolidate,
}


def open_store(db: Path | None, model_dir: Path | None) -> MemoryStore:
    return MemoryStore(db or default_db_path(), embedder_factory=_embedder_factory(model_dir))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    if args.command == "serve":
        return cmd_serve(args)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    llm, problems = llm_config.config_from_env()  # LIVING_MEMORY_LLM_* (README: optional LLM)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    llm_config.configure(llm)
    store: MemoryStore | None = None
    try:
        store = open_store(args.db, args.model_dir)
        return COMMANDS[args.command](store, args)
    except (CliError, StoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except apsw.BusyError:
        print("error: the database is locked by another process; try again", file=sys.stderr)
        return EXIT_ERROR
    except apsw.Error as e:
        print(f"error: database error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing left to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        if store is not None:
            try:
                store.close()
            except Exception as e:
                print(f"warning: could not save the vector index: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
