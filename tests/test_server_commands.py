"""The language server's commands end to end: typed arguments, JSON results, LSP errors,
progress and cancellation (pytest-lsp against the real server process)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pytest_lsp import LanguageClient
from server_support import (
    config,
    initialize,
    make_repo,
    mark,
    next_context,
    open_doc,
    run,
    uri,
    wait_for,
)

from storage import MemoryStore, NewMemory
from storage.embeddings import HashingEmbedder
from storage.paths import project_key

pytestmark = pytest.mark.asyncio(loop_scope="module")

INVALID_PARAMS = -32602
REQUEST_FAILED = -32803


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("commands")
    repo = make_repo(base / "repo", files={"src/auth.py": "import os\n", "src/db.py": "x = 1\n"})
    empty = base / "empty"
    empty.mkdir()
    broken = make_repo(base / "broken", files={"b.py": "B = 1\n"})
    garbage = base / "data" / "projects" / project_key(broken) / "memory.db"
    garbage.parent.mkdir(parents=True)
    garbage.write_bytes(b"this is not a database" * 100)
    lsp_client.repo, lsp_client.empty = repo, empty  # type: ignore[attr-defined]
    lsp_client.broken = broken  # type: ignore[attr-defined]
    await initialize(
        lsp_client,
        [repo, empty, broken],
        {"dataDirectory": str(base / "data"), "debounceMs": 20},
    )
    yield
    await lsp_client.shutdown_session()


def repo(client: LanguageClient) -> Path:
    return client.repo  # type: ignore[attr-defined]


async def remember(client: LanguageClient, text: str, **kw: Any) -> int:
    return (await run(client, "remember", {"text": text, **kw}))["id"]


async def db(client: LanguageClient, embedder: bool = True) -> MemoryStore:
    """The server's database, opened from the test (WAL: both may use it at once)."""
    path = (await run(client, "stats"))["dbPath"]
    return MemoryStore(path, embedder=HashingEmbedder() if embedder else None)


async def expect_error(code: int, coro: Any) -> str:
    with pytest.raises(JsonRpcException) as info:
        await coro
    assert info.value.code == code, info.value.message
    return info.value.message


# ---- a store that cannot be opened ----------------------------------------------------------


async def test_an_unusable_store_is_reported_and_its_commands_fail_cleanly(
    client: LanguageClient,
):
    broken = client.broken  # type: ignore[attr-defined]
    message = await expect_error(REQUEST_FAILED, run(client, "stats", {"folder": uri(broken)}))
    assert "broken" in message and "unavailable" in message
    await wait_for(
        lambda: any(
            m.type == types.MessageType.Error and "broken" in m.message for m in client.messages
        ),
        what="an error message",
    )
    assert (await run(client, "stats", {"folder": uri(repo(client))}))["memories"] >= 0


# ---- remember ------------------------------------------------------------------------------


async def test_remember_stores_a_memory_with_its_levels(client: LanguageClient):
    result = await run(
        client,
        "remember",
        {"text": "We chose SQLite in WAL mode over Postgres for zero setup.", "kind": "decision"},
    )
    assert result["created"] is True
    assert result["memory"]["kind"] == "decision"
    assert result["memory"]["label"] and result["memory"]["compressed"]


async def test_remember_the_same_text_twice_stores_it_once(client: LanguageClient):
    first = await run(client, "remember", {"text": "Tabs are four spaces wide here."})
    again = await run(client, "remember", {"text": "Tabs are four spaces wide here."})
    assert again["id"] == first["id"] and again["created"] is False


async def test_remember_with_a_uri_anchors_the_file(client: LanguageClient):
    u = uri(repo(client) / "src" / "db.py")
    result = await run(client, "remember", {"text": "db.py owns migrations.", "uri": u})
    assert "file:src/db.py" in result["memory"]["anchors"]


async def test_remember_without_text_names_the_argument(client: LanguageClient):
    message = await expect_error(INVALID_PARAMS, run(client, "remember", {"kind": "fact"}))
    assert "'text'" in message and "required" in message


async def test_remember_with_an_unknown_kind_names_the_argument(client: LanguageClient):
    message = await expect_error(
        INVALID_PARAMS, run(client, "remember", {"text": "x", "kind": "rumour"})
    )
    assert "'kind'" in message and "decision" in message


async def test_remember_with_a_wrongly_typed_argument_names_it(client: LanguageClient):
    message = await expect_error(
        INVALID_PARAMS, run(client, "remember", {"text": "x", "importance": "high"})
    )
    assert "'importance'" in message and "number" in message


async def test_remember_with_a_bad_anchor_names_it(client: LanguageClient):
    message = await expect_error(
        INVALID_PARAMS, run(client, "remember", {"text": "y", "anchors": ["file:"]})
    )
    assert "anchors[0]" in message


async def test_arguments_must_be_one_object(client: LanguageClient):
    params = types.ExecuteCommandParams(command="livingMemory.stats", arguments=["a", "b"])
    message = await expect_error(INVALID_PARAMS, client.workspace_execute_command_async(params))
    assert "one object" in message
    params = types.ExecuteCommandParams(command="livingMemory.stats", arguments=[42])
    await expect_error(INVALID_PARAMS, client.workspace_execute_command_async(params))


async def test_an_unknown_command_is_an_error(client: LanguageClient):
    await expect_error(INVALID_PARAMS, run(client, "noSuchCommand", {}))


async def test_an_unknown_folder_names_the_argument(client: LanguageClient):
    message = await expect_error(
        INVALID_PARAMS, run(client, "stats", {"folder": "file:///nowhere/at/all"})
    )
    assert "'folder'" in message or "folder:" in message


# ---- search / recall / explore --------------------------------------------------------------


async def test_search_finds_memories_by_keyword(client: LanguageClient):
    mid = await remember(client, "The retry budget for webhooks is five attempts.", kind="fact")
    found = await run(client, "search", {"query": "webhooks retry budget", "limit": 3})
    assert found["results"][0]["id"] == mid
    assert {"score", "kind", "text", "label", "provenance", "source"} <= set(found["results"][0])
    assert found["results"][0]["source"]["kind"] == "memory"


async def test_search_filters_by_kind(client: LanguageClient):
    await remember(client, "Webhook payloads are signed with HMAC.", kind="convention")
    found = await run(client, "search", {"query": "webhook", "kinds": ["convention"]})
    assert found["results"] and {r["kind"] for r in found["results"]} == {"convention"}


async def test_search_rejects_a_zero_limit(client: LanguageClient):
    message = await expect_error(INVALID_PARAMS, run(client, "search", {"query": "x", "limit": 0}))
    assert "'limit'" in message


@pytest.mark.parametrize("level", ["index", "compressed", "summary", "full"])
async def test_recall_returns_each_level(client: LanguageClient, level: str):
    text = (
        "Deployments run on Fridays only before noon. The release train leaves at 11:00; "
        "anything later waits for Monday because on-call is thin at weekends."
    )
    mid = await remember(client, text, kind="workflow")
    got = await run(client, "recall", {"id": mid, "level": level})
    assert got["level"] == level and got["text"]
    if level == "full":
        assert got["text"] == text
    else:
        assert len(got["text"]) < len(text)


async def test_recall_related_walks_the_graph(client: LanguageClient):
    old = await remember(client, "Sessions are stored in Redis.", kind="decision")
    new = await remember(
        client, "Sessions are stored in Postgres now.", kind="decision", supersedes=old
    )
    got = await run(client, "recall", {"id": new, "level": "related"})
    assert [(r["id"], r["via"]) for r in got["related"]] == [(old, "SUPERSEDES")]


async def test_recall_of_an_unknown_id_names_the_argument(client: LanguageClient):
    message = await expect_error(INVALID_PARAMS, run(client, "recall", {"id": 999999}))
    assert "id" in message and "999999" in message


async def test_explore_returns_a_tree_to_the_requested_depth(client: LanguageClient):
    a = await remember(client, "Explore root: the billing service.")
    b = await remember(client, "Explore child: invoices are immutable.")
    c = await remember(client, "Explore grandchild: credit notes correct invoices.")
    store = await db(client)
    store.graph.add(a, b, "PART_OF", 0.9)
    store.graph.add(b, c, "RELATES_TO", 0.8)
    store.close()
    deep = await run(client, "explore", {"id": a, "depth": 2})
    root = deep["roots"][0]
    assert root["id"] == a
    assert root["children"][0]["id"] == b
    assert root["children"][0]["children"][0]["id"] == c
    shallow = await run(client, "explore", {"id": a, "depth": 1})
    assert shallow["roots"][0]["children"][0]["children"] == []


async def test_explore_from_a_query(client: LanguageClient):
    got = await run(client, "explore", {"query": "billing service invoices", "depth": 1})
    assert got["roots"] and all("children" in r for r in got["roots"])


async def test_explore_needs_an_id_or_a_query(client: LanguageClient):
    message = await expect_error(INVALID_PARAMS, run(client, "explore", {"depth": 2}))
    assert "'id'" in message and "'query'" in message


# ---- cite / ignore / forget / restore -------------------------------------------------------


async def test_cite_counts_a_citation(client: LanguageClient):
    mid = await remember(client, "Cite me: feature flags live in flags.yaml.")
    assert (await run(client, "cite", {"id": mid}))["citationCount"] == 1
    assert (await run(client, "cite", {"id": mid, "context": "used"}))["citationCount"] == 2


async def test_ignore_counts_an_ignore(client: LanguageClient):
    mid = await remember(client, "Ignore me: the old CI ran on Jenkins.")
    assert (await run(client, "ignore", {"id": mid}))["ignoreCount"] == 1


async def test_forget_archives_and_restore_brings_back(client: LanguageClient):
    mid = await remember(client, "Forget me: staging uses port 8081.")
    assert (await run(client, "forget", {"id": mid, "reason": "moved"}))["changed"] is True
    found = await run(client, "search", {"query": "staging port 8081"})
    assert mid not in [r["id"] for r in found["results"]]
    assert (await run(client, "restore", {"id": mid}))["changed"] is True
    found = await run(client, "search", {"query": "staging port 8081"})
    assert mid in [r["id"] for r in found["results"]]


async def test_purge_deletes_only_an_archived_memory(client: LanguageClient):
    mid = await remember(client, "Purge me: a temporary note.")
    message = await expect_error(INVALID_PARAMS, run(client, "forget", {"id": mid, "purge": True}))
    assert "'purge'" in message or "purge:" in message
    await run(client, "forget", {"id": mid})
    assert (await run(client, "forget", {"id": mid, "purge": True}))["purged"] is True
    await expect_error(INVALID_PARAMS, run(client, "recall", {"id": mid}))


# ---- contradictions ------------------------------------------------------------------------


async def contradiction(client: LanguageClient, a_text: str, b_text: str) -> tuple[int, int, int]:
    a = await remember(client, a_text, kind="decision")
    b = await remember(client, b_text, kind="decision")
    store = await db(client)
    cid = store.contradictions.add(a, b, reason="they disagree", confidence=0.8)
    store.close()
    return cid, a, b


async def test_contradictions_lists_the_open_ones(client: LanguageClient):
    cid, a, b = await contradiction(client, "API errors are JSON.", "API errors are plain text.")
    got = await run(client, "contradictions")
    mine = next(c for c in got["contradictions"] if c["id"] == cid)
    assert {mine["a"]["id"], mine["b"]["id"]} == {a, b}
    assert mine["status"] == "open" and mine["a"]["text"]


async def test_a_suspected_contradiction_is_listed_for_review_and_confirmed(
    client: LanguageClient,
):
    a = await remember(client, "Queue workers run on spot instances.", kind="decision")
    b = await remember(client, "The docs site is built nightly.", kind="decision")
    store = await db(client)
    cid = store.contradictions.add(a, b, reason="value: 3 vs 5", status="suspected")
    store.close()
    review = await run(client, "contradictions")
    assert review["status"] == "review"
    mine = next(c for c in review["contradictions"] if c["id"] == cid)
    assert mine["status"] == "suspected" and mine["reason"] == "value: 3 vs 5"
    opened = await run(client, "contradictions", {"status": "open"})
    assert cid not in [c["id"] for c in opened["contradictions"]]
    suspected = await run(client, "contradictions", {"status": "suspected"})
    assert cid in [c["id"] for c in suspected["contradictions"]]
    assert {c["status"] for c in suspected["contradictions"]} == {"suspected"}
    assert (await run(client, "stats"))["contradictionsSuspected"] >= 1
    got = await run(client, "resolveContradiction", {"id": cid, "resolution": "confirm"})
    assert got["status"] == "open" and got["resolution"] is None
    opened = await run(client, "contradictions", {"status": "open"})
    assert cid in [c["id"] for c in opened["contradictions"]]
    message = await expect_error(
        INVALID_PARAMS, run(client, "resolveContradiction", {"id": cid, "resolution": "confirm"})
    )
    assert "only a suspected one is confirmed" in message


async def test_resolve_a_wins_supersedes_the_loser(client: LanguageClient):
    cid, a, b = await contradiction(client, "Logs go to stdout.", "Logs go to a file.")
    got = await run(
        client, "resolveContradiction", {"id": cid, "resolution": "a_wins", "note": "12-factor"}
    )
    assert got["status"] == "resolved" and got["resolution"] == "a_wins"
    loser = b if got["a"]["id"] == a else a
    assert (await run(client, "recall", {"id": loser, "level": "full"}))["supersededBy"] is not None


async def test_dismissing_leaves_both_memories_as_they_were(client: LanguageClient):
    cid, a, b = await contradiction(client, "Tabs in the Makefile.", "Spaces in Python files.")
    got = await run(
        client, "resolveContradiction", {"id": cid, "resolution": "dismissed", "note": "both hold"}
    )
    assert got["status"] == "dismissed" and got["resolution"] is None
    for mid in (a, b):
        assert (await run(client, "recall", {"id": mid, "level": "full"}))["supersededBy"] is None
    listed = await run(client, "contradictions", {"status": "dismissed"})
    assert cid in [c["id"] for c in listed["contradictions"]]
    message = await expect_error(
        INVALID_PARAMS, run(client, "resolveContradiction", {"id": cid, "resolution": "a_wins"})
    )
    assert "already dismissed" in message


async def test_resolve_merged_stores_the_merged_memory(client: LanguageClient):
    cid, _, _ = await contradiction(client, "Use UTC in the API.", "Use local time in the UI.")
    got = await run(
        client,
        "resolveContradiction",
        {"id": cid, "resolution": "merged", "mergedText": "UTC in the API, local time in the UI."},
    )
    assert got["resolution"] == "merged"
    merged = await run(client, "recall", {"id": got["mergedId"], "level": "full"})
    assert merged["text"] == "UTC in the API, local time in the UI."


async def test_resolve_with_an_unknown_resolution_names_the_argument(client: LanguageClient):
    cid, _, _ = await contradiction(client, "Ports are even.", "Ports are odd.")
    message = await expect_error(
        INVALID_PARAMS, run(client, "resolveContradiction", {"id": cid, "resolution": "a_loses"})
    )
    assert "'resolution'" in message and "both_valid" in message


async def test_resolving_twice_is_refused(client: LanguageClient):
    cid, _, _ = await contradiction(client, "Cache for 5 min.", "Cache for 1 h.")
    await run(client, "resolveContradiction", {"id": cid, "resolution": "both_valid"})
    message = await expect_error(
        INVALID_PARAMS, run(client, "resolveContradiction", {"id": cid, "resolution": "b_wins"})
    )
    assert "already" in message


# ---- stats / assembleContext ----------------------------------------------------------------


async def test_stats_describe_the_store(client: LanguageClient):
    got = await run(client, "stats")
    assert got["memories"] >= 1 and got["modelId"] == "hashing-64"
    assert got["folder"] == uri(repo(client)) and got["branch"] == "main"


async def test_assemble_context_for_a_file(client: LanguageClient):
    await remember(client, "auth.py must never log tokens.", anchors=["file:src/auth.py"])
    u = uri(repo(client) / "src" / "auth.py")
    got = await run(client, "assembleContext", {"uri": u})
    assert got["file"] == "src/auth.py" and got["uri"] == u
    assert "never log tokens" in got["markdown"]
    assert got["tokens"]["total"] <= got["tokens"]["budget"] == 8000


async def test_assemble_context_takes_overrides(client: LanguageClient):
    u = uri(repo(client) / "src" / "auth.py")
    got = await run(
        client,
        "assembleContext",
        {"uri": u, "budget": 300, "activity": "review", "branch": "main", "markdown": False},
    )
    assert got["tokens"]["budget"] == 300 and got["tokens"]["total"] <= 300
    assert got["activity"] == "review" and "markdown" not in got


async def test_assemble_context_defaults_to_the_active_file(client: LanguageClient):
    opened = mark(client)
    u = open_doc(client, repo(client) / "src" / "db.py")
    await next_context(client, opened, u)
    got = await run(client, "assembleContext", {"folder": uri(repo(client))})
    assert got["file"] == "src/db.py"


async def test_assemble_context_without_an_active_file_names_uri(client: LanguageClient):
    empty = client.empty  # type: ignore[attr-defined]
    message = await expect_error(
        INVALID_PARAMS, run(client, "assembleContext", {"folder": uri(empty)})
    )
    assert "uri" in message


async def test_assemble_context_rejects_a_tiny_budget(client: LanguageClient):
    message = await expect_error(INVALID_PARAMS, run(client, "assembleContext", {"budget": 10}))
    assert "'budget'" in message


async def test_assemble_context_rejects_bad_diagnostics(client: LanguageClient):
    u = uri(repo(client) / "src" / "auth.py")
    message = await expect_error(
        INVALID_PARAMS, run(client, "assembleContext", {"uri": u, "diagnostics": [{"x": 1}]})
    )
    assert "diagnostics" in message


# ---- Claude import ---------------------------------------------------------------------------


async def test_enable_claude_import_adds_one_line(client: LanguageClient):
    claude = repo(client) / "CLAUDE.md"
    claude.write_text("# House rules\n\nBe brief.")
    got = await run(client, "enableClaudeImport")
    assert got["changed"] is True
    assert claude.read_text() == "# House rules\n\nBe brief.\n\n@.living-memory/context.md\n"


async def test_enable_claude_import_twice_changes_nothing(client: LanguageClient):
    await run(client, "enableClaudeImport")
    before = (repo(client) / "CLAUDE.md").read_text()
    assert (await run(client, "enableClaudeImport"))["changed"] is False
    assert (repo(client) / "CLAUDE.md").read_text() == before
    assert before.count("@.living-memory/context.md") == 1


# ---- long jobs: progress and cancellation ----------------------------------------------------


def progress_of(client: LanguageClient, token: Any) -> list[Any]:
    return client.progress_reports.get(token, [])


async def test_ingest_learns_rule_files_with_progress(client: LanguageClient):
    await run(client, "ingest", {"sources": ["rules"]})  # whatever the first open learned
    (repo(client) / ".cursorrules").write_text("- Prefer dataclasses over dicts for records.\n")
    before = set(client.progress_reports)
    result = await run(client, "ingest", {"sources": ["rules"]})
    rules = result["sources"]["rules"]
    # learned now, or a moment before by the server's own watch of rule files (which runs
    # first is a race); other tests may have written a CLAUDE.md (read, unchanged)
    assert rules["read"] >= 1 and rules["added"] + rules["unchanged"] == rules["read"]
    tokens = set(client.progress_reports) - before  # the watcher's learning may report too
    reports = [[p.kind for p in progress_of(client, t)] for t in tokens]
    assert any(kinds[0] == "begin" and kinds[-1] == "end" for kinds in reports)
    found = await run(client, "search", {"query": "dataclasses records"})
    assert any("dataclasses" in r["text"] for r in found["results"])
    again = await run(client, "ingest", {"sources": ["rules"], "dryRun": True})
    assert again["added"] == 0
    assert again["sources"]["rules"]["unchanged"] == again["sources"]["rules"]["read"]


async def test_ingest_with_a_bad_since_fails_with_its_reason(client: LanguageClient):
    with pytest.raises(JsonRpcException) as info:
        await run(client, "ingest", {"sources": ["git"], "since": "the other day"})
    assert "since" in info.value.message


async def test_consolidate_previews_then_applies_with_progress(client: LanguageClient):
    await remember(client, "The staging cluster restarts nightly at 02:00 UTC.")
    await remember(client, "The staging cluster restarts nightly at 02:00 UTC!")
    preview = await run(client, "consolidate", {"dryRun": True})
    assert preview["dryRun"] is True and preview["merged"] == 1
    (merge,) = [c for c in preview["changes"] if c["action"] == "merge"]
    assert "staging cluster" in merge["labels"][0]
    before = set(client.progress_reports)
    applied = await run(client, "consolidate", {})
    assert applied["dryRun"] is False and applied["merged"] == preview["merged"]
    (token,) = set(client.progress_reports) - before
    assert [p.kind for p in progress_of(client, token)][-1] == "end"
    again = await run(client, "consolidate", {"dryRun": True})
    assert again["merged"] == 0


async def test_ingest_rejects_an_unknown_source(client: LanguageClient):
    message = await expect_error(INVALID_PARAMS, run(client, "ingest", {"sources": ["email"]}))
    assert "sources[0]" in message


async def add_unembedded(client: LanguageClient, n: int, tag: str) -> None:
    store = await db(client, embedder=False)  # no embedder: these wait for the server's
    store.add_many([NewMemory(text=f"{tag} pending memory number {i}") for i in range(n)])
    store.close()


async def test_reindex_reports_progress_with_the_clients_token(client: LanguageClient):
    await add_unembedded(client, 40, "reindex")
    client.progress_reports["tok-reindex"] = []
    got = await run(client, "reindex", {"batchSize": 8}, work_done_token="tok-reindex")
    assert got["embedded"] >= 40 and got["vectors"] >= 40
    kinds = [p.kind for p in progress_of(client, "tok-reindex")]
    assert kinds[0] == "begin" and "report" in kinds and kinds[-1] == "end"
    assert (await run(client, "stats"))["pendingEmbeddings"] == 0


async def test_reindex_stops_when_its_progress_is_cancelled(client: LanguageClient):
    await add_unembedded(client, 3000, "cancel-progress")
    client.progress_reports["tok-cancel"] = []
    task = asyncio.ensure_future(
        run(client, "reindex", {"batchSize": 1}, work_done_token="tok-cancel")
    )
    await wait_for(
        lambda: any(p.kind == "report" for p in progress_of(client, "tok-cancel")),
        what="a progress report",
    )
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="tok-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await task
    assert "cancelled" in progress_of(client, "tok-cancel")[-1].message
    assert (await run(client, "stats"))["pendingEmbeddings"] > 0


async def test_reindex_stops_when_its_request_is_cancelled(client: LanguageClient):
    await add_unembedded(client, 3000, "cancel-request")
    before = set(client.progress_reports)
    params = types.ExecuteCommandParams(
        command="livingMemory.reindex", arguments=[{"batchSize": 1}]
    )
    task = asyncio.ensure_future(
        client.protocol.send_request_async("workspace/executeCommand", params, msg_id="req-cancel")
    )
    token = await wait_for(
        lambda: next(
            (t for t in set(client.progress_reports) - before if progress_of(client, t)), None
        ),
        what="a server-created progress",
    )
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="req-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await task
    await wait_for(lambda: progress_of(client, token)[-1].kind == "end", what="the end")
    assert "cancelled" in progress_of(client, token)[-1].message
    assert (await run(client, "stats"))["pendingEmbeddings"] > 0
