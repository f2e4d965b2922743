"""The ``living-memory`` command line: remember, search, show, related, forget, restore, stats,
reindex, ingest, consolidate, context, contradictions, resolve. A thin front door over
:mod:`predictive.operations`: every read command takes ``--json`` and prints the operation's
result in the wire form the language server and the MCP server use. Errors are one line on
stderr and exit code 2."""

from __future__ import annotations

import argparse
import dataclasses
import enum
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

from predictive import operations as ops
from predictive.operations import Activity, ArgumentError, Invalid
from predictive.operations.requests import ReviewName
from predictive.session import ProjectSession, find_root
from server.convert import to_wire
from server.options import add_global_options, configure_llm
from storage import (
    Anchor,
    EdgeType,
    Kind,
    Level,
    Scope,
    StoreError,
)
from storage.embeddings import ENV_MODEL_DIR
from storage.paths import default_db_path
from storage.search import MIN_SIMILARITY
from storage.text import parse_instant

INGEST_SOURCES = ("git", "adr", "rules", "shared", "chats", "all")
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


def _choice(enum_cls: type[enum.Enum]) -> Callable[[str], Any]:
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
    add_global_options(p)
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
    when.add_argument(
        "--current", action="store_true", help="only memories valid now (the default)"
    )
    when.add_argument(
        "--history",
        action="store_true",
        help="also memories no longer valid (superseded or expired), ranked down",
    )
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
        help="git, adr, rules, shared, chats or all (default: all)",
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
    ig.add_argument(
        "--shared-folder",
        help="the team's memory files (default: .living-memory/shared in the project)",
    )
    ig.add_argument("--watch", action="store_true", help="keep following new conversations")
    ig.add_argument("--interval", type=float, default=10.0, help="seconds between --watch rounds")
    ig.add_argument("--rounds", type=_positive_int, help=argparse.SUPPRESS)
    ig.add_argument("--json", action="store_true")

    co = sub.add_parser(
        "consolidate",
        help="upkeep: merge duplicates, serve old episodes shorter, link, forget what is unused",
    )
    co.add_argument("--dry-run", action="store_true", help="list what would be done; write nothing")
    co.add_argument("--json", action="store_true")

    ak = sub.add_parser(
        "ask", help="ask a question: classified (decision, how-to, history, error), cited answers"
    )
    ak.add_argument("question", nargs="+")
    ak.add_argument("-n", "--limit", type=_positive_int, default=8)
    ak.add_argument("--as-of", type=_time, help="as the store would have answered at this time")
    ak.add_argument("--json", action="store_true")

    cn = sub.add_parser("contradictions", help="memories that disagree, and how they were settled")
    cn.add_argument(
        "--status",
        choices=["review", "open", "suspected", "resolved", "dismissed", "pending", "all"],
        default="review",
        help="review (default): open and suspected ones, what awaits you; open: shown in "
        "contexts; suspected: weak findings, shown only here until confirmed; pending: "
        "candidate pairs on one subject waiting for a judge (an LLM)",
    )
    cn.add_argument(
        "--pending",
        dest="status",
        action="store_const",
        const="pending",
        help="the candidate pairs waiting for a judge (same as --status pending)",
    )
    cn.add_argument("-n", "--limit", type=_positive_int, default=50)
    cn.add_argument("--json", action="store_true")

    rv = sub.add_parser("resolve", help="settle a contradiction")
    rv.add_argument("id", type=_memory_id, help="the contradiction's id")
    rv.add_argument(
        "resolution",
        choices=["a_wins", "b_wins", "both_valid", "merged", "dismissed", "confirm"],
        help="a_wins/b_wins: the other is superseded (never deleted); merged: both are "
        "superseded by --merged-id or --merged-text; dismissed: not a contradiction; "
        "confirm: a suspected one is real (it becomes open, shown in contexts)",
    )
    rv.add_argument("--note", help="why (kept with the contradiction)")
    merged = rv.add_mutually_exclusive_group()
    merged.add_argument("--merged-id", type=_memory_id, help="the memory that merges both")
    merged.add_argument("--merged-text", help="the text of a new memory that merges both")
    rv.add_argument("--json", action="store_true")

    rw = sub.add_parser(
        "review", help="what may become team knowledge: list, approve, edit, reject memories"
    )
    rws = rw.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    rl = rws.add_parser("list", help="memories awaiting review (the default action)")
    rl.add_argument("--status", choices=["proposed", "approved", "rejected"], default="proposed")
    rl.add_argument("-n", "--limit", type=_positive_int, default=100)
    rl.add_argument("--json", action="store_true")
    ra = rws.add_parser("approve", help="fit for the team: the next share writes it")
    ra.add_argument("ids", type=_memory_id, nargs="+", metavar="ID")
    ra.add_argument("--json", action="store_true")
    rj = rws.add_parser("reject", help="not team knowledge: archived; its shared file goes")
    rj.add_argument("ids", type=_memory_id, nargs="+", metavar="ID")
    rj.add_argument("--reason", help="why (kept with the archived memory)")
    rj.add_argument("--json", action="store_true")
    re_ = rws.add_parser(
        "edit", help="correct a memory in $EDITOR (or --text): a new approved version"
    )
    re_.add_argument("id", type=_memory_id)
    re_.add_argument("--text", help="the new text ('-' reads standard input) instead of $EDITOR")
    re_.add_argument("--kind", "-k", type=_choice(Kind))
    re_.add_argument("--json", action="store_true")

    sr = sub.add_parser(
        "share", help="write approved team knowledge as Markdown files in the repository"
    )
    sr.add_argument(
        "--shared-folder",
        help="where (default: .living-memory/shared in the project; relative to the project)",
    )
    sr.add_argument("--root", type=Path, help="the project folder (default: the git root here)")
    sr.add_argument("--dry-run", action="store_true", help="list what would change; write nothing")
    sr.add_argument("--json", action="store_true")

    ri = sub.add_parser("reindex", help="rebuild the keyword and vector indexes from the database")
    ri.add_argument("--json", action="store_true")

    from server.lsp import add_arguments

    sv = sub.add_parser("serve", help="run the language server (LSP over stdio by default)")
    add_arguments(sv)

    from server.mcp_server.command import add_parser as add_mcp

    add_mcp(sub)  # "mcp" runs itself (set_defaults(run=...)): it opens its own store

    from server.hooks.command import add_parser as add_hook

    add_hook(sub)  # "hook" too: it opens the store of the project an event names
    return p


# ---- helpers ---------------------------------------------------------------------------------


def _fmt_time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _one_line(text: str, width: int = 100) -> str:
    t = " ".join(text.split())
    return t if len(t) <= width else t[: width - 1] + "…"


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


def cmd_remember(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    text = " ".join(a.text)
    if text == "-":
        raw = sys.stdin.buffer.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CliError(f"standard input is not valid UTF-8 (byte {e.start})") from None
    result = ops.remember(
        store,
        ops.RememberArgs(
            text=text,
            kind=a.kind.value,
            anchors=tuple(str(x) for x in a.anchor),
            tags=tuple(a.tag),
            importance=a.importance,
            scope=a.scope.value,
            source=a.source,
            source_id=a.source_id,
            artifacts=tuple(a.artifact),
            supersedes=a.supersedes,
        ),
    )
    if a.json:
        _print_json(to_wire(result))
    elif result.created:
        print(f"Remembered #{result.id}")
        if result.contradictions:
            ids = ", ".join(str(c) for c in result.contradictions)
            found = [store.contradictions.get(c).status.value for c in result.contradictions]
            verb = "contradicts" if "open" in found else "may contradict (suspected)"
            print(f"It {verb} what the memory holds: see living-memory contradictions ({ids})")
    else:
        print(f"Already remembered as #{result.id}")
    return EXIT_OK


def cmd_search(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    if a.sessions:
        return _search_sessions(session, a)
    session.embed_pending(_progress("embedding"))
    session.embed_messages(_progress("embedding messages"))
    found = ops.search(
        store,
        ops.SearchArgs(
            query=" ".join(a.query),
            limit=a.limit,
            kinds=tuple(k.value for k in a.kind),
            anchors=tuple(str(x) for x in a.anchor),
            branch=a.branch,
            mode=a.mode,
            include_archived=a.archived,
            min_similarity=a.min_similarity,
            as_of=a.as_of,
            valid_at=a.valid_at,
            history=a.history,
        ),
        via="cli search",
    )
    if a.json:
        _print_json(to_wire(found))
        return EXIT_OK
    if not found.results:
        print("No memories match.")
        return EXIT_OK
    for r in found.results:
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


def _search_sessions(session: ProjectSession, a: argparse.Namespace) -> int:
    session.embed_messages(_progress("embedding messages"))
    args = ops.SessionSearchArgs(" ".join(a.query), limit=a.limit, mode=a.mode)
    result = ops.search_sessions(session.store, args)
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


def _memory_block(r: ops.Recalled) -> list[str]:
    lines = [
        f"#{r.id} {r.kind}  ({r.scope}, source: {r.source}"
        + (f" {r.source_id}" if r.source_id else "")
        + ")",
        f"created {_fmt_time(r.created_at)}; valid {_fmt_time(r.valid_from)} → "
        + ("now" if r.valid_to is None else _fmt_time(r.valid_to)),
    ]
    if r.archived:
        lines.append(
            f"ARCHIVED {_fmt_time(r.archived_at)}"
            + (f": {r.archive_reason}" if r.archive_reason else "")
        )
    if r.shared:
        by = f" by {r.shared['by']} <{r.shared.get('email', '')}>" if r.shared.get("by") else ""
        when = f" on {_fmt_time(r.shared['at'])}" if r.shared.get("at") else ""
        lines.append(f"shared{by}{when}: {r.shared.get('path')}")
    if r.review != "approved":
        lines.append(f"review: {r.review} (living-memory review)")
    if r.superseded_by:
        lines.append(f"superseded by #{r.superseded_by}")
    if r.supersedes:
        lines.append(f"supersedes #{r.supersedes}")
    if r.anchors:
        lines.append("anchors: " + ", ".join(r.anchors))
    if r.artifacts:
        lines.append("artifacts: " + ", ".join(f"{x['type']}:{x['ref']}" for x in r.artifacts))
    if r.categories:
        lines.append("categories: " + ", ".join(r.categories))
    u = r.usage
    lines.append(
        f"importance {r.importance:.2f}, decay {r.decay_score:.2f}, used "
        f"{u.retrieved}× retrieved, {u.cited}× cited, {u.ignored}× ignored"
    )
    lines.append(f"({r.level} level; --level {r.next} shows more)" if r.level != "full" else "")
    lines.append(r.text)
    return lines


def cmd_show(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    r = ops.recall(store, ops.RecallArgs(a.id, level=a.level.value), via="cli show")
    assert isinstance(r, ops.Recalled)
    if a.json:
        _print_json(to_wire(r))
        return EXIT_OK
    print("\n".join(_memory_block(r)))
    if r.edges:
        print("\nedges:")
        for e in r.edges:
            other = e.target if e.source == r.id else e.source
            arrow = "→" if e.source == r.id else "←"
            print(f"  {arrow} {e.type} #{other} ({e.strength:.2f})")
    return EXIT_OK


def cmd_related(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    out = ops.related(
        store,
        ops.RelatedArgs(
            a.id,
            depth=a.depth,
            types=tuple(t.value for t in a.type),
            min_strength=a.min_strength,
            direction=a.direction,
            link=a.link,
            link_type=a.type[0].value if a.type else EdgeType.RELATES_TO.value,
            strength=a.strength,
        ),
    )
    if a.json:
        _print_json(to_wire(out))
        return EXIT_OK
    if not out.related:
        print(f"#{a.id} has no related memories.")
        return EXIT_OK
    for r in out.related:
        indent = "  " * r.depth
        label = r.memory.label or r.memory.compressed or ""
        print(
            f"{indent}{r.via} #{r.memory.id} ({r.strength:.2f}) {r.memory.kind}: "
            f"{_one_line(label, 70)}"
        )
    return EXIT_OK


def cmd_forget(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    done = ops.forget(store, ops.ForgetArgs(a.id, reason=a.reason, purge=a.purge))
    if done.purged:
        print(f"Purged #{a.id} permanently")
    elif not done.changed:
        print(f"#{a.id} was already archived")
    else:
        print(f"Archived #{a.id} (restore with: living-memory restore {a.id})")
    return EXIT_OK


def cmd_restore(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    done = ops.restore(store, ops.IdArgs(a.id))
    print(f"Restored #{a.id}" if done.changed else f"#{a.id} is not archived")
    return EXIT_OK


def cmd_stats(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    store.vectors()  # loaded and caught up, so the index's own size is known (indexCount)
    st = ops.stats(store)
    if a.json:
        _print_json(to_wire(st))
        return EXIT_OK
    print(f"database   {st.db_path} ({st.db_bytes / 1e6:.1f} MB)")
    print(f"memories   {st.active} active, {st.archived} archived, {st.superseded} superseded")
    if st.by_kind:
        print("kinds      " + ", ".join(f"{k} {v}" for k, v in st.by_kind.items()))
    if st.by_source:
        print("sources    " + ", ".join(f"{k} {v}" for k, v in st.by_source.items()))
    print(
        f"graph      {st.edges} edges, {st.contradictions_open} open contradictions, "
        f"{st.contradictions_suspected} suspected"
    )
    print(
        f"vectors    {st.embedded} embedded, {st.pending_embeddings} pending"
        + (f", {st.index_count} in the index" if st.index_count is not None else "")
        + (f" (model {st.model_id})" if st.model_id else "")
    )
    print(f"sessions   {st.sessions} ({st.messages} messages)")
    return EXIT_OK


def cmd_reindex(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    bar = _progress("reindexing")
    result = ops.reindex(store, ops.ReindexArgs(), lambda done, total, *_: bar(done, total))
    if a.json:
        _print_json(to_wire(result))
    else:
        print(
            f"Reindexed: {result.keyword_rows} keyword rows, {result.vectors} vectors "
            f"({result.embedded} newly embedded)"
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


def _print_ingest(summary: ops.Ingested) -> None:
    if sys.stderr.isatty():
        print("\r\x1b[2K", end="", file=sys.stderr)
    verb = "would add" if summary.dry_run else "added"
    for name, r in summary.sources.items():
        parts = [f"{r.read} read", f"{r.added} {verb}"]
        for n, label in (
            (r.existing, "already known"),
            (r.unchanged, "unchanged"),
            (r.dropped, "dropped (low confidence)"),
            (r.superseded, "superseded"),
            (r.archived, "archived"),
            (r.rewritten, "rewritten"),
        ):
            if n:
                parts.append(f"{n} {label}")
        for reason, n in r.ignored.items():
            what = {"merge": "merge", "bot": "bot commit"}.get(reason, reason)
            plural = "s" if n != 1 and reason != "trivial" else ""
            parts.append(f"{n} {what}{plural} ignored")
        if r.sessions:
            parts.append(f"{r.sessions} conversations, {r.messages} messages")
        kinds = ", ".join(f"{k} {v}" for k, v in r.by_kind.items())
        print(f"{name:<6} " + ", ".join(parts) + (f" [{kinds}]" if kinds else ""))
        if r.error:
            print(f"{'':7}failed: {r.error}")
    skipped = summary.skipped
    if skipped["total"]:
        print(f"skipped {skipped['total']}:")
        for s in skipped["byReason"]:
            print(f"  {s['source']}: {s['count']} × {s['reason']}")
        for ex in skipped["examples"]:
            if ex["source"] == "shared":  # a teammate's file: say which one to fix
                print(f"  shared: {ex['where']}: {ex['reason']}")
    print(f"{summary.added} memories {verb} in {summary.seconds:.1f} s")
    learned = summary.learned
    if learned and (learned["memories"] or learned["passages"]):
        print(
            f"searchable after {summary.searchable_seconds:.1f} s; meaning learned of "
            f"{learned['memories']:,} memories and {learned['passages']:,} passages "
            f"in {learned['seconds']:.1f} s"
        )
    scan = summary.contradiction_scan
    if scan and (scan["left"] or scan["pending"]):
        print(
            f"contradictions: {scan['scanned']} memories scanned in {scan['seconds']:.1f} s, "
            f"{scan['left']} left for the next ingest, {scan['pending']} candidate pairs wait "
            "for a judge (living-memory contradictions --pending)"
        )


def cmd_ingest(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    root = find_root(a.root)
    what = list(a.what) or (["chats"] if a.source else ["all"])
    if a.source and "chats" not in what and "all" not in what:
        what.append("chats")
    for p in a.path:
        if not p.expanduser().exists():
            raise CliError(f"--path: {p} does not exist")
    request = ops.IngestArgs(
        sources=tuple(what),
        tools=tuple(a.source) or None,
        paths=tuple(str(p.expanduser().resolve()) for p in a.path),
        since=a.since,
        dry_run=a.dry_run,
        all_workspaces=a.all,
        include_merges=a.include_merges,
        include_bots=a.include_bots,
        include_trivial=a.include_trivial,
        shared_folder=a.shared_folder,
    )
    rounds = 0
    while True:
        summary = ops.ingest(store, request, root, _ingest_progress())
        rounds += 1
        if a.json:
            print(json.dumps(to_wire(summary), ensure_ascii=False), flush=True)
        elif not a.watch or summary.added or rounds == 1:
            _print_ingest(summary)
            sys.stdout.flush()
        if not a.watch or (a.rounds is not None and rounds >= a.rounds):
            return EXIT_OK
        if rounds == 1:
            request = dataclasses.replace(request, sources=("chats",))
        time.sleep(max(0.1, a.interval))


def cmd_consolidate(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    session.embed_pending(_progress("embedding"))
    out = ops.consolidate(store, ops.ConsolidateArgs(dry_run=a.dry_run))
    if a.json:
        _print_json(to_wire(out))
        return EXIT_OK
    verb = "would" if a.dry_run else "did"
    print(
        f"Consolidation {verb}: fill the levels of {out.levels_filled}, refresh "
        f"{out.decay_updated} decay scores, link {out.similar_linked} near duplicates, "
        f"open {out.contradictions_opened} contradictions and suspect "
        f"{out.contradictions_suspected} ({out.seconds:.1f} s)"
    )
    # -- issue 13: every change of the plan, one line each (--json lists them all) --
    from predictive.operations import print_changes

    print_changes(out)
    for reason in out.skipped:
        print(f"skipped {reason}")
    return EXIT_OK


def cmd_context(session: ProjectSession, a: argparse.Namespace) -> int:
    path = a.file.expanduser()
    if path.exists() and not path.is_file():
        raise CliError(f"{path} is not a file")
    root = find_root(start=path.parent)
    if root != session.root:  # a file of another project: its root, this store
        session = ProjectSession(root, session.store, owns_store=False)
    diagnostics = a.diagnostics
    if diagnostics and diagnostics.startswith("@"):
        try:
            diagnostics = Path(diagnostics[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CliError(f"--diagnostics: cannot read {diagnostics[1:]}: {e}") from None
    request = ops.ContextArgs(
        path=str(path.resolve()) if path.exists() else path.as_posix(),
        branch=a.branch,
        activity=a.activity.value if a.activity else None,
        budget=a.budget,
        as_of=a.as_of,
        diagnostics=diagnostics,
    )
    first = session.first_run(_ingest_progress())
    if first is not None:
        if sys.stderr.isatty():
            print("\r\x1b[2K", end="", file=sys.stderr)
        per = ", ".join(f"{k} {v.added}" for k, v in first.sources.items())
        print(
            f"First run in {root}: learned {first.added} memories ({per}) in {first.seconds:.1f} s",
            file=sys.stderr,
        )
    session.embed_pending(_progress("embedding"))
    session.fill_levels()
    session.engine.wait_for_staleness = True  # one answer: its candidates are checked now
    result = session.context(request)
    if a.json:
        _print_json(to_wire(result))
    else:
        print(result.markdown, end="")
        t = result.tokens
        tiers = ", ".join(f"{k} {v['used']}" for k, v in t["tiers"].items())
        print(f"\n<!-- {t['total']}/{t['budget']} tokens: {tiers} -->", file=sys.stderr)
    return EXIT_OK


def cmd_ask(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    session.embed_pending(_progress("embedding"))
    question = " ".join(a.question)
    args = ops.AskArgs(question, limit=min(a.limit, 50), as_of=a.as_of)
    out = ops.ask(store, args, via="cli ask").to_dict()
    if a.json:
        _print_json(to_wire(out))
        return EXIT_OK
    print(f"({out['type']} question{': ' + out['cue'] if out['cue'] else ''})")
    if out.get("answer"):
        print(out["answer"]["text"])
    if not out["items"]:
        print("Nothing in the memory answers it.")
    for item in out["items"]:
        ref = f"#{item['id']}" if item.get("id") else "-"
        print(f"{ref:<7} {item['kind']:<12} {_one_line(item['text'] or '', 80)}")
        print(f"{'':8}{item.get('provenance') or item.get('source') or ''}")
    return EXIT_OK


def cmd_contradictions(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    if a.status in ("review", "all"):  # memories whose code changed are reviewed too
        from predictive.operations import check_staleness

        check_staleness(store, session.root)
    found = ops.contradictions(store, ops.ContradictionsArgs(status=a.status, limit=a.limit))
    if a.json:
        _print_json(to_wire(found))
        return EXIT_OK
    for s in found.stale:
        print(f"stale #{s.memory.id} [{s.state}] {'; '.join(s.notes[:2])}")
    if found.stale:
        print("(memories whose cited code changed or is gone; forget or update them)\n")
    if not found.contradictions:
        which = {"all": "", "review": "open or suspected "}.get(a.status, a.status + " ")
        print(f"No {which}contradictions.")
        return EXIT_OK
    if a.status == "pending":
        _print_pending(found)
        return EXIT_OK
    for c in found.contradictions:
        print(f"contradiction {c.id} [{c.status}{', ' + c.resolution if c.resolution else ''}]")
        if c.reason:
            print(f"  why: {_one_line(c.reason, 90)}")
        for name, side in (("a", c.a), ("b", c.b)):
            if side is not None:
                m = side.memory
                print(f"  {name}: #{m.id} {m.kind}: {_one_line(side.text, 80)}")
    print("\nSettle one with: living-memory resolve ID a_wins|b_wins|both_valid|merged|dismissed")
    if any(c.status == "suspected" for c in found.contradictions):
        print(
            "Suspected ones are weak findings, never shown in a context: "
            "living-memory resolve ID confirm makes one open"
        )
    return EXIT_OK


def _print_pending(found: Any) -> None:
    for c in found.contradictions:
        print(f"candidate {c.id} [pending]")
        if c.reason:
            print(f"  why: {_one_line(c.reason, 90)}")
        for name, side in (("earlier", c.a), ("later", c.b)):
            if side is not None:
                m = side.memory
                print(f"  {name}: #{m.id} {m.kind}: {_one_line(side.text, 76)}")
    print(
        "\nPending pairs are never shown in a context. A configured LLM judges them "
        "(LIVING_MEMORY_LLM_URL, LIVING_MEMORY_LLM_MODEL; then living-memory consolidate)."
    )


def cmd_resolve(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    out = ops.resolve_contradiction(
        store,
        ops.ResolveArgs(
            a.id,
            a.resolution,
            note=a.note,
            merged_id=a.merged_id,
            merged_text=a.merged_text,
        ),
    )
    if a.json:
        _print_json(to_wire(out))
        return EXIT_OK
    what = {
        "a_wins": f"#{out.a.memory.id if out.a else '?'} stands, the other is superseded",
        "b_wins": f"#{out.b.memory.id if out.b else '?'} stands, the other is superseded",
        "both_valid": "both stand",
        "merged": f"both are superseded by #{out.merged_id}",
    }.get(out.resolution or "", "dismissed: both stay as they were")
    if a.resolution == "confirm":
        print(f"Confirmed contradiction {out.id}: it is open, shown with its memories")
        return EXIT_OK
    print(f"Resolved contradiction {out.id}: {what}")
    return EXIT_OK


def cmd_review(session: ProjectSession, a: argparse.Namespace) -> int:
    store = session.store
    action = a.action or "list"
    if action == "list":
        status: ReviewName = getattr(a, "status", "proposed")
        found = ops.review_list(
            store, ops.ReviewListArgs(status=status, limit=getattr(a, "limit", 100))
        )
        if getattr(a, "json", False):
            _print_json(to_wire(found))
            return EXIT_OK
        if not found.items:
            print(f"No {status} memories.")
            return EXIT_OK
        for item in found.items:
            m = item.memory
            where = f"  [{item.shared_path}]" if item.shared_path else ""
            print(f"#{m.id:<6} {m.kind:<11} {item.source:<16} {_one_line(item.text, 70)}{where}")
        if status == "proposed":
            print(
                "\nApprove with: living-memory review approve ID …; correct with: "
                "living-memory review edit ID; reject with: living-memory review reject ID …"
            )
        return EXIT_OK
    if action in ("approve", "reject"):
        fn = ops.approve if action == "approve" else ops.reject
        done = fn(store, ops.ReviewArgs(tuple(a.ids), reason=getattr(a, "reason", None)))
        if a.json:
            _print_json(to_wire(done))
            return EXIT_OK
        verb = "Approved" if action == "approve" else "Rejected (archived)"
        if done.changed:
            print(f"{verb}: " + ", ".join(f"#{i}" for i in done.changed))
        same = [i for i in done.ids if i not in done.changed]
        if same:
            print(f"Already {done.review}: " + ", ".join(f"#{i}" for i in same))
        if action == "approve" and done.changed:
            print("living-memory share writes them to the shared folder")
        return EXIT_OK
    memory = ops.memory_of(store, a.id)
    text = a.text
    if text == "-":
        text = sys.stdin.read()
    elif text is None:
        text = _edit_in_editor(memory.text, memory.id)
    if not text.strip():
        raise CliError("the new text is empty: nothing changed")
    done_edit = ops.edit(store, ops.EditArgs(a.id, text, kind=a.kind.value if a.kind else None))
    if a.json:
        _print_json(to_wire(done_edit))
    elif done_edit.id == a.id:
        print(f"#{a.id} is unchanged")
    else:
        print(f"Edited #{a.id}: #{done_edit.id} replaces it (approved)")
    return EXIT_OK


def _edit_in_editor(text: str, memory_id: int) -> str:
    """``text`` edited by the user in ``$VISUAL`` / ``$EDITOR`` (default vi)."""
    import shlex
    import subprocess
    import tempfile

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="living-memory-") as tmp:
        path = Path(tmp) / f"memory-{memory_id}.md"
        path.write_text(text.rstrip() + "\n", encoding="utf-8")
        try:
            code = subprocess.call([*shlex.split(editor), str(path)])
        except OSError as e:
            raise CliError(f"cannot run the editor {editor!r}: {e}") from None
        if code != 0:
            raise CliError(f"the editor {editor!r} exited with status {code}: nothing changed")
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CliError(f"cannot read the edited text: {e}") from None


def cmd_share(session: ProjectSession, a: argparse.Namespace) -> int:
    root = find_root(a.root)
    request = ops.ShareArgs(shared_folder=a.shared_folder, dry_run=a.dry_run)
    out = ops.share(session.store, request, root)
    if a.json:
        _print_json(to_wire(out))
        return EXIT_OK
    r = out.read
    if r["added"] or r["updated"] or r["superseded"] or r["archived"]:
        print(
            f"read {out.folder}: {r['added']} new, {r['superseded']} edited, "
            f"{r['archived']} deleted (archived)"
        )
    verb = "would write" if a.dry_run else "wrote"
    for path in out.written:
        print(f"{verb} {path}")
    for path in out.removed:
        print(f"{'would remove' if a.dry_run else 'removed'} {path}")
    for path in out.kept:
        print(f"kept {path}: changed by someone else since; ingest it, then reject again")
    for ex in out.skipped["examples"]:
        print(f"skipped {ex['where']}: {ex['reason']}")
    if out.ignored_by_git:
        print(
            f"warning: git ignores {out.folder} (a .gitignore): add it with git add -f, or "
            "un-ignore it, or the team never sees these files",
            file=sys.stderr,
        )
    print(
        f"{len(out.written)} written, {len(out.removed)} removed, {out.unchanged} unchanged; "
        f"{out.files} files ({out.bytes} bytes) in {out.folder} ({out.seconds:.2f} s)"
    )
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


COMMANDS: dict[str, Callable[[ProjectSession, argparse.Namespace], int]] = {
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
    "ask": cmd_ask,
    "contradictions": cmd_contradictions,
    "resolve": cmd_resolve,
    "review": cmd_review,
    "share": cmd_share,
}


def open_session(db: Path | None, model_dir: Path | None) -> ProjectSession:
    """The session of the project here, over ``db`` (default: this project's database)."""
    return ProjectSession.open(find_root(), db or default_db_path(), model_dir=model_dir)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    if args.command == "serve":
        return cmd_serve(args)
    configure_llm()
    if getattr(args, "run", None) is not None:
        return int(args.run(args))
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    session: ProjectSession | None = None
    try:
        session = open_session(args.db, args.model_dir)
        return COMMANDS[args.command](session, args)
    except (CliError, StoreError, Invalid) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except ArgumentError as e:
        where = "" if e.argument == "id" else f"--{e.argument.replace('_', '-')}: "
        print(f"error: {where}{e.message}", file=sys.stderr)
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
        if session is not None:
            try:
                session.close()
            except Exception as e:
                print(f"warning: could not save the vector index: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
