"""The MCP tools: thin wrappers that call the memory operations (``predictive.operations``) on
the store's worker thread, cite every item by id and provenance, and fit each result into its
token budget.

Results are JSON with camelCase keys (``server.convert.to_wire``, as on the language server's
wire), sent both as text and as structured content; the budget counts the text."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from predictive import operations as ops
from predictive.operations import (
    ArgumentError,
    BudgetTooSmall,
    Invalid,
    citation,
    count_tokens,
    dumps,
    fit_items,
    fit_tree,
    judges,
)
from server.convert import to_wire
from server.mcp_server.shaping import (
    Form,
    fit_richest,
    for_agents,
    memory_forms,
    passage_forms,
    passage_texts,
)
from storage import AccessKind, Memory, MemoryStore, StoreError
from storage.text import parse_instant

if TYPE_CHECKING:
    from predictive.operations import Learning
    from predictive.session import ProjectSession

T = TypeVar("T")
log = logging.getLogger("living_memory.mcp")

KindName = ops.requests.KindName
ActivityName = ops.requests.ActivityName
MIN_BUDGET = 100
MAX_BUDGET = 100_000


def _budget(default: int) -> Any:
    return Field(
        default=default,
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        description="most tokens (o200k) the result may take; items are dropped or cut to fit",
    )


AsOf = Annotated[
    str | None,
    Field(
        description="answer as the memory stood then: ISO date/time (UTC unless given) or "
        "epoch seconds",
    ),
]
MemoryId = Annotated[int, Field(ge=1, description="a memory id, as cited in results")]
MAX_LIST = ops.requests.MAX_LIST
MAX_QUERY = ops.requests.MAX_QUERY_CHARS
MAX_PATH = ops.requests.MAX_PATH_CHARS
Item = Annotated[str, Field(max_length=ops.requests.MAX_ITEM_CHARS)]
"""An anchor or a tag."""
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _result(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=dumps(payload))], structured_content=payload
    )


class ToolBackend(Protocol):
    """What the tools use of the MCP server's backend (:class:`server.mcp_server.app.Backend`):
    the project's session, its store's worker thread, what is still being learned."""

    @property
    def learning(self) -> Learning: ...

    def open(self) -> ProjectSession: ...

    async def call(self, fn: Callable[[MemoryStore], T]) -> T: ...


def _as_of(value: str | None) -> float | None:
    if value is None or not str(value).strip():
        return None
    at = parse_instant(str(value))
    if at is None:
        raise ToolError(
            f"as_of: not a time: {value!r} (use ISO 8601 like 2026-01-31 or epoch seconds)"
        )
    return at


async def _call(backend: ToolBackend, fn: Callable[[MemoryStore], T]) -> T:
    """``fn(store)`` on the worker thread; anticipated failures become a clear tool error, and
    so does a crash (its type and message; the traceback goes to the log)."""
    try:
        return await backend.call(fn)
    except ToolError:
        raise
    except (Invalid, ArgumentError, BudgetTooSmall, StoreError) as e:
        raise ToolError(str(e)) from e
    except Exception as e:
        log.exception("a tool call failed")
        raise ToolError(f"internal error ({type(e).__name__}: {e})") from e


def _memories(store: MemoryStore, ids: list[int]) -> dict[int, Memory]:
    return {m.id: m for m in store.get_many(list(dict.fromkeys(ids)))}


def _cite(item: dict[str, Any], m: Memory | None) -> dict[str, Any]:
    """``item`` with the memory's id, kind, source and provenance (item keys win)."""
    return item if m is None else {**citation(m), **item}


def _nodes(forest: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for n in forest:
        yield n
        yield from _nodes(n.get("children") or [])


def register(app: MCPServer, backend: ToolBackend) -> None:  # noqa: C901
    """Add every tool to ``app``."""

    def _noted(
        fit: Callable[[dict[str, Any]], dict[str, Any]], wire: dict[str, Any]
    ) -> dict[str, Any]:
        """``fit(wire)`` with a ``learning`` note while the project is still being learned
        (left out only when the budget cannot hold the note beside the result's frame)."""
        note = backend.learning.note()
        if note is not None:
            try:
                return fit({**wire, "learning": note})
            except BudgetTooSmall:
                pass
        return fit(wire)

    from predictive.operations import (
        ContextArgs,
        ContradictionsArgs,
        ExploreArgs,
        LockArgs,
        LockedContextArgs,
        LockedListArgs,
        RecallArgs,
        RememberArgs,
        ResolveArgs,
        SearchArgs,
    )

    @app.tool(annotations=READ_ONLY)
    async def search(
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_QUERY, description="what to look for")
        ],
        kinds: Annotated[list[KindName], Field(max_length=20, description="only these kinds")] = [],  # noqa: B006
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        as_of: AsOf = None,
        budget: Annotated[int, _budget(4000)] = 4000,
    ) -> CallToolResult:
        """Search everything the project knows (memories, decision records, rule files,
        commits, conversations); each result cites its id and source and comes in full text,
        best first, while the budget allows (then summary or compressed, never cut mid-
        sentence; ``shortened`` lists those: recall them at level "full")."""
        at = _as_of(as_of)

        def work(store: MemoryStore) -> dict[str, Any]:
            args = SearchArgs(query=query, kinds=tuple(kinds), limit=limit, as_of=at)
            found = ops.search(store, args, via="mcp search")
            passages = passage_texts(store, found.results)
            items: list[dict[str, Any]] = []
            forms: list[list[Form]] = []
            for r in found.results:
                items.append(
                    {
                        "id": r.memory.id if r.memory else None,
                        "unit": r.unit,
                        "kind": r.kind,
                        "label": r.label,
                        "score": round(r.score, 4),
                        "source": r.provenance.source,
                        "provenance": f"{r.provenance.kind}: {r.provenance}",
                        **({"archived": True} if r.memory and r.memory.archived else {}),
                        **(
                            {"stale": found.stale[r.memory.id].to_dict()}
                            if r.memory and r.memory.id in found.stale
                            else {}
                        ),
                    }
                )
                if r.memory is not None:
                    forms.append(memory_forms(r.memory))
                else:
                    whole = passages.get(r.passage_ids[0]) if r.passage_ids else None
                    forms.append(passage_forms(whole, r.snippet))
            payload = {"query": query, "count": len(items), "items": items}
            return _noted(lambda p: fit_richest(p, budget, forms), to_wire(payload))

        return _result(await _call(backend, work))

    @app.tool(annotations=READ_ONLY)
    async def recall(
        id: MemoryId,
        level: Literal["index", "compressed", "summary", "full", "related"] = "summary",
        depth: Annotated[int, Field(ge=1, le=4, description="for level 'related'")] = 1,
        budget: Annotated[int, _budget(2000)] = 2000,
    ) -> CallToolResult:
        """One memory at a level: index → compressed → summary → full → related (what the
        graph links to it). ``next`` names the richer level."""

        def work(store: MemoryStore) -> dict[str, Any]:
            args = RecallArgs(id=id, level=level, depth=depth)
            out = ops.recall(store, args, via=f"mcp recall {level}").to_dict()
            if level == "full":
                store.usage.record_many(
                    [id], AccessKind.CITATION, context="mcp recall full", bump_generation=False
                )
            mems = _memories(store, [id, *(r["id"] for r in out.get("related", []))])
            out = _cite(out, mems.get(id))
            if level == "related":
                out["related"] = [_cite(r, mems.get(r["id"])) for r in out["related"]]
                return fit_items(to_wire(out), budget, items="related")
            lean = {k: v for k, v in out.items() if v not in (None, [], ())}
            return fit_items(to_wire(lean), budget, items="edges", texts=("text",))

        return _result(await _call(backend, work))

    @app.tool(annotations=READ_ONLY)
    async def explore(
        id: Annotated[int | None, Field(ge=1, description="start from this memory")] = None,
        query: Annotated[
            str | None, Field(max_length=MAX_QUERY, description="or from the best matches")
        ] = None,
        category: Annotated[
            str | None,
            Field(description='or a category\'s areas and summaries ("" for all of them)'),
        ] = None,
        depth: Annotated[int, Field(ge=0, le=4)] = 2,
        max_nodes: Annotated[int, Field(ge=1, le=200)] = 30,
        level: Literal["index", "compressed", "summary", "full"] = "index",
        budget: Annotated[int, _budget(2000)] = 2000,
    ) -> CallToolResult:
        """A tree from one memory (or a query's best matches): each node says how it is
        related (``via``, ``strength``), cites its source and names its areas. With
        ``category``: the project's areas and topics, each with its summary."""

        def work(store: MemoryStore) -> dict[str, Any]:
            args = ExploreArgs(
                id=id,
                query=query,
                category=category,
                depth=depth,
                max_nodes=max_nodes,
                level=level,
            )
            out = ops.explore(store, args, via="mcp explore").to_dict()
            nodes = list(_nodes(out["roots"]))
            mems = _memories(store, [n["id"] for n in nodes])
            for n in nodes:
                m = mems.get(n["id"])
                if m is not None:
                    n.update({k: v for k, v in citation(m).items() if k not in n})
            roots = "categories" if category is not None else "roots"
            return _noted(lambda p: fit_tree(p, budget, roots=roots), to_wire(out))

        return _result(await _call(backend, work))

    @app.tool(annotations=READ_ONLY)
    async def context_for_file(
        path: Annotated[
            str,
            Field(
                min_length=1, max_length=MAX_PATH, description="the file, relative to the project"
            ),
        ],
        branch: Annotated[str | None, Field(description="default: the checked-out one")] = None,
        activity: Annotated[ActivityName | None, Field(description="default: inferred")] = None,
        budget: Annotated[int, Field(ge=300, le=MAX_BUDGET)] = 4000,
    ) -> CallToolResult:
        """The tiered context for a file (critical decisions, relevant memories, background,
        an index of topics to ask about), as the editor gets it; items cite their ids."""

        def work(store: MemoryStore) -> dict[str, Any]:
            session = backend.open()

            def payload(total: int) -> dict[str, Any]:
                args = ContextArgs(path=path, branch=branch, activity=activity, budget=total)
                ctx = session.context(args)
                mems = _memories(store, ctx.memory_ids)
                items = [  # the markdown names kind and source; these add where it is from
                    {
                        "id": i.memory_id,
                        "tier": i.tier.value,
                        "provenance": citation(mems[i.memory_id])["provenance"],
                    }
                    for i in ctx.items
                    if i.memory_id is not None and i.memory_id in mems
                ]
                markdown = for_agents(ctx.markdown)
                return to_wire(
                    {
                        "file": ctx.file.path,
                        "branch": ctx.branch,
                        "activity": ctx.activity.value,
                        "tokens": {"total": count_tokens(markdown), "budget": ctx.tokens["budget"]},
                        "markdown": markdown,
                        "items": items,
                    }
                )

            # One assembly (the engine's cache then answers a repeat); citations past the
            # budget are dropped from the end, the markdown is cut only if it alone is too big.
            out = payload(max(200, budget * 2 // 3))
            return _noted(lambda p: fit_items(p, budget, texts=("markdown",)), out)

        return _result(await _call(backend, work))

    @app.tool(annotations=WRITES)
    async def remember(
        text: Annotated[str, Field(min_length=1, description="what to remember, in full")],
        kind: KindName = "fact",
        anchors: Annotated[
            list[Item],
            Field(
                max_length=MAX_LIST,
                description="what it concerns: file:PATH, module:NAME, symbol:NAME, "
                "branch:NAME, error:SIG, tag:NAME",
            ),
        ] = [],  # noqa: B006
        tags: Annotated[list[Item], Field(max_length=MAX_LIST)] = [],  # noqa: B006
        importance: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5,
        supersedes: Annotated[int | None, Field(ge=1, description="the memory it replaces")] = None,
        budget: Annotated[int, _budget(500)] = 500,
    ) -> CallToolResult:
        """Store a finding, decision, fix or a tool result worth keeping as a memory (secrets
        are redacted). The same text again returns the existing id."""

        def work(store: MemoryStore) -> dict[str, Any]:
            args = RememberArgs(
                text=text,
                kind=kind,
                anchors=tuple(anchors),
                tags=tuple(tags),
                importance=importance,
                supersedes=supersedes,
                source="mcp",
            )
            out = ops.remember(store, args).to_dict()
            m = _memories(store, [out["id"]]).get(out["id"])
            wire = to_wire(_cite(out, m))
            try:
                return fit_items(wire, budget)
            except BudgetTooSmall:
                # it is stored: the answer must not read as a failure, so it says less
                lean = {k: wire[k] for k in ("id", "created", "kind", "source") if k in wire}
                lean["anchors"] = len((wire.get("memory") or {}).get("anchors") or [])
                return {**fit_items(lean, budget), "truncated": True}

        return _result(await _call(backend, work))

    @app.tool(annotations=WRITES)
    async def lock_context(
        name: Annotated[str, Field(min_length=1, max_length=200)],
        # plain ``str`` (not ``str | None``): the SDK parses a non-str argument that looks
        # like JSON, which turned the text '[1,2,3]' into a list and refused it
        content: Annotated[str, Field(description="the text to lock (any text, JSON too)")] = "",
        memory_ids: Annotated[
            list[int],
            Field(max_length=MAX_LIST, description="or lock the full texts of these memories"),
        ] = [],  # noqa: B006
        tags: Annotated[list[Item], Field(max_length=MAX_LIST)] = [],  # noqa: B006
        note: str = "",
        budget: Annotated[int, _budget(500)] = 500,
    ) -> CallToolResult:
        """Pin a named context; locking the same name again adds a version and keeps the
        old ones (the same content again adds nothing)."""

        def work(store: MemoryStore) -> dict[str, Any]:
            args = LockArgs(
                name,
                content or None,
                memory_ids=tuple(memory_ids),
                tags=tuple(tags),
                note=note or None,
            )
            return fit_items(to_wire(ops.lock(store, args)), budget)

        return _result(await _call(backend, work))

    @app.tool(annotations=READ_ONLY)
    async def get_locked_context(
        name: Annotated[str, Field(min_length=1, max_length=200)],
        version: Annotated[int | None, Field(ge=1, description="default: the newest")] = None,
        level: Literal["preview", "full"] = "full",
        budget: Annotated[int, _budget(4000)] = 4000,
    ) -> CallToolResult:
        """A locked context by name (a version, or the newest) at preview or full level."""

        def work(store: MemoryStore) -> dict[str, Any]:
            out = ops.locked_context(store, LockedContextArgs(name, version, level))
            return fit_items(to_wire(out), budget, texts=("content", "preview"))

        return _result(await _call(backend, work))

    @app.tool(annotations=READ_ONLY)
    async def list_locked_contexts(
        tag: Annotated[str | None, Field(max_length=200)] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
        budget: Annotated[int, _budget(2000)] = 2000,
    ) -> CallToolResult:
        """Every locked context (newest version's preview, how many versions), newest first."""

        def work(store: MemoryStore) -> dict[str, Any]:
            found = ops.locked_contexts(store, LockedListArgs(tag, limit))
            return fit_items(to_wire(found), budget)

        return _result(await _call(backend, work))

    @app.tool(annotations=READ_ONLY)
    async def contradictions(
        status: Literal[
            "review", "open", "suspected", "resolved", "dismissed", "pending", "all"
        ] = "review",
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        budget: Annotated[int, _budget(3000)] = 3000,
    ) -> CallToolResult:
        """Pairs of memories that contradict each other, both sides cited, each with its
        status: open (strong evidence or confirmed), suspected (a weak local finding, never
        shown in a context until confirmed); ``review`` (default) lists both; ``pending``:
        candidate pairs on one subject that wait for a judge (``judge_pending`` asks your
        model about them)."""

        def work(store: MemoryStore) -> dict[str, Any]:
            out = ops.contradictions(store, ContradictionsArgs(status, limit)).to_dict()
            sides = [s for c in out["contradictions"] for s in (c["a"], c["b"]) if s]
            mems = _memories(store, [s["id"] for s in sides])
            for c in out["contradictions"]:
                for key in ("a", "b"):
                    if c[key]:
                        c[key] = _cite(c[key], mems.get(c[key]["id"]))
            return fit_items(to_wire(out), budget, items="contradictions")

        return _result(await _call(backend, work))

    @app.tool(annotations=WRITES)
    async def judge_pending(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=judges.HOST_PAIRS)] = 3,
        budget: Annotated[int, _budget(500)] = 500,
    ) -> CallToolResult:
        """Judge up to ``limit`` candidate contradictions that wait for a judge (status
        ``pending``) with your model, through MCP sampling (a model configured for Living
        Memory is asked first): each pair becomes an open contradiction or is dismissed.
        Without sampling or a model they keep waiting; ``by`` says who judged."""
        from server.mcp_server.sampling import offers_sampling, sampling_send

        hosts = {}
        if offers_sampling(ctx.session):
            loop = asyncio.get_running_loop()
            request = ctx.request_context.request_id
            hosts[judges.SAMPLING] = sampling_send(ctx.session, loop, request)

        def work(store: MemoryStore) -> dict[str, Any]:
            choice = judges.choose(store, hosts=hosts)
            run = judges.judge_waiting_pairs(store, choice, limit=limit)
            return fit_items(to_wire(run.to_dict()), budget)

        return _result(await _call(backend, work))

    @app.tool(annotations=WRITES)
    async def resolve(
        id: Annotated[int, Field(ge=1, description="the contradiction's id")],
        resolution: Literal["a_wins", "b_wins", "both_valid", "merged", "dismissed", "confirm"],
        note: str = "",
        merged_id: Annotated[int | None, Field(ge=1)] = None,
        merged_text: str = "",
        budget: Annotated[int, _budget(1500)] = 1500,
    ) -> CallToolResult:
        """Resolve an open or suspected contradiction: one side wins, both stay valid, merged
        (give the merged memory's id or text), or dismissed; ``confirm`` makes a suspected
        one open."""

        def work(store: MemoryStore) -> dict[str, Any]:
            args = ResolveArgs(id, resolution, note or None, merged_id, merged_text or None)
            out = ops.resolve_contradiction(store, args).to_dict()
            return fit_items(to_wire(out), budget)

        return _result(await _call(backend, work))

    @app.tool(annotations=READ_ONLY)
    async def ask(
        question: Annotated[str, Field(min_length=1, max_length=MAX_QUERY)],
        limit: Annotated[int, Field(ge=1, le=50)] = 8,
        as_of: AsOf = None,
        budget: Annotated[int, _budget(3000)] = 3000,
    ) -> CallToolResult:
        """Ask the memory a question: it is classified (decision, how-to, history, error) by
        local rules, the matching retrieval runs, and cited items come back — no LLM."""
        at = _as_of(as_of)

        def work(store: MemoryStore) -> dict[str, Any]:
            out = ops.ask(store, ops.AskArgs(question, limit=limit, as_of=at), via="mcp ask")
            return _noted(lambda p: fit_items(p, budget), to_wire(out.to_dict()))

        return _result(await _call(backend, work))
