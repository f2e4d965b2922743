"""The MCP server as a process, driven by the official SDK client over stdio: every tool
answers, cites ids and provenance, stays within its budget, refuses bad arguments clearly and
keeps serving, and counts what agents use."""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_support import (
    INITIALIZE,
    call,
    call_error,
    db_of,
    mcp_session,
    server_env,
    tokens_of_call,
)
from project_fixtures import make_git_repo

from storage import Anchor, AnchorType, Kind, MemoryStore, NewMemory
from storage.embeddings import HashingEmbedder

TOOLS = {
    "search",
    "recall",
    "explore",
    "context_for_file",
    "remember",
    "lock_context",
    "get_locked_context",
    "list_locked_contexts",
    "contradictions",
    "resolve",
    "judge_pending",
    "ask",
}

pytestmark = pytest.mark.asyncio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path).root


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def seeded(project: Path, data: Path) -> MemoryStore:
    """The project's own store, opened as the server will open it."""
    return MemoryStore(db_of(project, data), embedder=HashingEmbedder())


async def test_every_tool_is_listed_with_a_budget(project: Path, data: Path) -> None:
    async with mcp_session(project, data) as s:
        tools = (await s.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    for t in tools:
        assert t.description
        assert "budget" in t.input_schema["properties"], t.name


async def test_a_remembered_finding_is_found_by_search_with_its_id_and_source(
    project: Path, data: Path
) -> None:
    async with mcp_session(project, data) as s:
        made = await call(
            s,
            "remember",
            text="The payment retries use exponential backoff capped at 30 s",
            kind="decision",
            anchors=["file:src/api.py"],
        )
        found = await call(s, "search", query="payment retries backoff")
    assert made["created"] is True and made["source"] == "mcp"
    hit = found["items"][0]
    assert hit["id"] == made["id"]
    assert hit["source"] == "mcp" and "src/api.py" in hit["provenance"]


async def test_recall_goes_from_index_to_full_and_full_counts_as_a_citation(
    project: Path, data: Path
) -> None:
    text = (
        "Sessions replace JWT for the web app. Tokens could not be revoked, and the "
        "mobile app keeps JWT until version 3 ships. Sessions live in Redis for 30 minutes."
    )
    async with mcp_session(project, data) as s:
        mid = (await call(s, "remember", text=text, kind="decision"))["id"]
        steps = [await call(s, "recall", id=mid, level=lv) for lv in ("index", "summary", "full")]
    assert [st["next"] for st in steps] == ["compressed", "full", "related"]
    assert len(steps[0]["text"]) < len(steps[2]["text"]) and steps[2]["text"] == text
    assert all(st["id"] == mid and st["provenance"] for st in steps)
    with seeded(project, data) as store:
        assert store.get(mid).citation_count == 1


async def test_recall_related_says_how_each_memory_is_linked(project: Path, data: Path) -> None:
    async with mcp_session(project, data) as s:
        old = (await call(s, "remember", text="Deploy with Fabric scripts", kind="workflow"))["id"]
        new = (
            await call(
                s, "remember", text="Deploy with GitHub Actions", kind="workflow", supersedes=old
            )
        )["id"]
        out = await call(s, "recall", id=new, level="related")
    assert [(r["id"], r["via"]) for r in out["related"]] == [(old, "SUPERSEDES")]
    assert out["related"][0]["provenance"]


async def test_explore_returns_a_tree_of_cited_nodes(project: Path, data: Path) -> None:
    with seeded(project, data) as store:
        a = store.add(NewMemory(text="Auth uses server sessions", kind=Kind.DECISION)).id
        b = store.add(NewMemory(text="Sessions are kept in Redis", kind=Kind.FACT)).id
        c = store.add(NewMemory(text="Redis runs in the docker compose file", kind=Kind.FACT)).id
        store.graph.add(a, b, "DEPENDS_ON", 0.9)
        store.graph.add(b, c, "RELATES_TO", 0.8)
    async with mcp_session(project, data) as s:
        out = await call(s, "explore", id=a, depth=2)
    root = out["roots"][0]
    child = root["children"][0]
    assert root["id"] == a and root["provenance"]
    assert (child["id"], child["via"]) == (b, "DEPENDS_ON")
    assert child["children"][0]["id"] == c


async def test_explore_by_category_lists_the_areas_with_their_summaries(
    project: Path, data: Path
) -> None:
    from predictive.categories import refresh_categories

    with seeded(project, data) as store:
        for i in range(4):
            store.add(
                NewMemory(
                    text=f"Billing rule {i}: invoices are immutable once sent",
                    anchors=[Anchor(AnchorType.FILE, f"src/billing/part{i}.py")],
                )
            )
        refresh_categories(store)
    async with mcp_session(project, data) as s:
        used = await tokens_of_call(s, "explore", category="", budget=100)
        one = await call(s, "explore", category="src/billing/")
        assert "no category" in await call_error(s, "explore", category="nowhere/")
    assert used <= 100
    assert [c["name"] for c in one["categories"]] == ["src/billing/"]
    assert one["categories"][0]["total"] == 4 and one["categories"][0]["summary"]


async def test_context_for_a_file_holds_its_decision_within_the_budget(
    project: Path, data: Path
) -> None:
    with seeded(project, data) as store:
        mid = store.add(
            NewMemory(
                text="The API module answers /health without auth for the load balancer",
                kind=Kind.DECISION,
                anchors=[Anchor(AnchorType.FILE, "src/api.py")],
            )
        ).id
    async with mcp_session(project, data) as s:
        out = await call(s, "context_for_file", path="src/api.py", budget=600)
        used = await tokens_of_call(s, "context_for_file", path="src/api.py", budget=600)
    assert out["file"] == "src/api.py"
    assert f"#{mid}" in out["markdown"]
    assert any(i["id"] == mid and i["provenance"] for i in out["items"])
    assert used <= 600
    # an agent expands an item with the MCP tool, not with a command it cannot run
    assert "expand any #id with the `recall` tool (id, level)" in out["markdown"]
    assert "living-memory show" not in out["markdown"]


STRIPE = (
    "Payments Stripe charge: never charge twice. Every call to the charge endpoint passes "
    "an idempotency key made from the order id, so a retried request returns the first "
    "charge instead of billing the customer again."
)


async def test_search_answers_in_full_text_while_the_budget_allows(
    project: Path, data: Path
) -> None:
    with seeded(project, data) as store:
        mid = store.add(NewMemory(text=STRIPE, kind=Kind.DECISION)).id
        store.add(NewMemory(text="Refunds go through the payments service", kind=Kind.FACT))
    async with mcp_session(project, data) as s:
        out = await call(s, "search", query="how do we avoid charging a customer twice?")
    hit = out["items"][0]
    assert hit["id"] == mid and hit["text"] == STRIPE  # the idempotency key is there
    assert "shortened" not in hit and "shortened" not in out
    assert out["budget"] == 4000 and out["truncated"] is False


async def test_search_shortens_only_what_the_budget_cannot_hold_and_never_mid_sentence(
    project: Path, data: Path
) -> None:
    def note(n: int) -> str:
        steps = (
            f"Step {i} of invoice run {n} retries the billing export once more." for i in range(12)
        )
        return f"Invoice run {n} of the billing export is retried nightly. " + " ".join(steps)

    with seeded(project, data) as store:
        for n in range(8):
            store.add(NewMemory(text=note(n), kind=Kind.FACT))
    async with mcp_session(project, data) as s:
        out = await call(s, "search", query="billing export invoice run retried", budget=1200)
        used = await tokens_of_call(
            s, "search", query="billing export invoice run retried", budget=1200
        )
        shortened = [i for i in out["items"] if "shortened" in i]
        levels = {
            i["id"]: (await call(s, "recall", id=i["id"], level=i["shortened"]))["text"]
            for i in shortened
            if i["shortened"] != "label"
        }
    assert used <= 1200
    first = out["items"][0]
    assert "shortened" not in first and first["text"].startswith("Invoice run")
    assert len(first["text"]) > 600  # the best result in full
    assert shortened, "eight long notes do not all fit in 1,200 tokens"
    assert out["truncated"] is True and out["shortened"] == [i["id"] for i in shortened]
    assert "recall" in out["expand"]
    # full results come first; a shortened one is a whole form the store keeps, never cut
    ranks = ["shortened" in i for i in out["items"]]
    assert ranks == sorted(ranks)
    for i in shortened:
        assert i["shortened"] in ("summary", "compressed", "label")
        if i["shortened"] == "label":
            assert "text" not in i
        else:
            assert i["text"] == levels[i["id"]] and not i["text"].endswith("…")


async def test_a_new_lock_keeps_the_old_version(project: Path, data: Path) -> None:
    async with mcp_session(project, data) as s:
        one = await call(s, "lock_context", name="auth flow", content="Login posts to /session")
        two = await call(s, "lock_context", name="auth flow", content="Login posts to /v2/login")
        newest = await call(s, "get_locked_context", name="auth flow")
        first = await call(s, "get_locked_context", name="auth flow", version=1)
        listed = await call(s, "list_locked_contexts")
    assert (one["version"], two["version"]) == (1, 2)
    assert newest["content"] == "Login posts to /v2/login" and newest["versions"] == [1, 2]
    assert first["content"] == "Login posts to /session"
    assert [(i["name"], i["versions"]) for i in listed["items"]] == [("auth flow", 2)]


async def test_a_contradiction_is_listed_and_resolved(project: Path, data: Path) -> None:
    with seeded(project, data) as store:
        a = store.add(NewMemory(text="Use tabs for indentation", kind=Kind.CONVENTION)).id
        b = store.add(NewMemory(text="Use four spaces for indentation", kind=Kind.CONVENTION)).id
        cid = store.contradictions.add(a, b, reason="indentation")
    async with mcp_session(project, data) as s:
        listed = await call(s, "contradictions")
        done = await call(s, "resolve", id=cid, resolution="b_wins", note="PEP 8")
        still_open = await call(s, "contradictions")
    pair = listed["contradictions"][0]
    assert (pair["id"], pair["a"]["id"], pair["b"]["id"]) == (cid, a, b)
    assert pair["a"]["provenance"] and pair["b"]["provenance"]
    assert done["status"] == "resolved" and done["resolution"] == "b_wins"
    assert still_open["count"] == 0


async def test_a_suspected_contradiction_is_reviewed_and_confirmed(
    project: Path, data: Path
) -> None:
    with seeded(project, data) as store:
        a = store.add(NewMemory(text="Retry failed jobs three times", kind=Kind.CONVENTION)).id
        b = store.add(NewMemory(text="Retry failed jobs five times", kind=Kind.CONVENTION)).id
        cid = store.contradictions.add(a, b, reason="value: 3 vs 5", status="suspected")
    async with mcp_session(project, data) as s:
        review = await call(s, "contradictions")
        opened = await call(s, "contradictions", status="open")
        done = await call(s, "resolve", id=cid, resolution="confirm")
        after = await call(s, "contradictions", status="open")
    assert [(c["id"], c["status"]) for c in review["contradictions"]] == [(cid, "suspected")]
    assert opened["count"] == 0
    assert done["status"] == "open" and done["resolution"] is None
    assert [c["id"] for c in after["contradictions"]] == [cid]


async def test_ask_classifies_the_question_and_cites_what_answers_it(
    project: Path, data: Path
) -> None:
    with seeded(project, data) as store:
        store.add(NewMemory(text="Postgres connection pool size is 10", kind=Kind.FACT))
        d = store.add(
            NewMemory(text="We chose Postgres over MongoDB: we need joins", kind=Kind.DECISION)
        ).id
    async with mcp_session(project, data) as s:
        out = await call(s, "ask", question="Why did we choose Postgres?")
    assert out["type"] == "decision"
    assert out["items"][0]["id"] == d and out["items"][0]["provenance"]


async def test_bad_arguments_get_a_clear_error_and_the_server_keeps_serving(
    project: Path, data: Path
) -> None:
    async with mcp_session(project, data) as s:
        errors = {
            "id": await call_error(s, "recall", id="seven"),
            "missing": await call_error(s, "recall", id=999),
            "level": await call_error(s, "recall", id=1, level="everything"),
            "budget": await call_error(s, "search", query="x", budget=5),
            "as_of": await call_error(s, "search", query="x", as_of="next tuesday-ish"),
            "query": await call_error(s, "search"),
            "kind": await call_error(s, "remember", text="x", kind="rumour"),
            "explore": await call_error(s, "explore", id=1, query="both"),
            "path": await call_error(s, "context_for_file", path="../../etc/passwd"),
            "lock": await call_error(s, "get_locked_context", name="never locked"),
            "resolve": await call_error(s, "resolve", id=42, resolution="a_wins"),
        }
        alive = await call(s, "remember", text="still serving after bad calls")
    assert "id" in errors["id"]
    assert "no memory #999" in errors["missing"]
    assert "level" in errors["level"]
    assert "budget" in errors["budget"]
    assert "as_of" in errors["as_of"]
    assert "query" in errors["query"]
    assert "kind" in errors["kind"]
    assert "exactly one" in errors["explore"]
    assert "outside the project" in errors["path"]
    assert "no locked context named 'never locked'" in errors["lock"]
    assert "no contradiction #42" in errors["resolve"]
    assert alive["created"] is True


async def test_results_stay_within_their_budget(project: Path, data: Path) -> None:
    def body(n: int) -> str:  # sixty different notes (the context shows a restatement once)
        steps = (f"Invoice {n}-{i} of the billing service retries nightly." for i in range(40))
        return " ".join(steps)

    with seeded(project, data) as store:
        ids = [
            store.add(
                NewMemory(
                    text=f"Billing note {n}: {body(n)}",
                    kind=Kind.FACT,
                    anchors=[Anchor(AnchorType.FILE, "src/api.py")],
                )
            ).id
            for n in range(60)
        ]
        for a, b in itertools.pairwise(ids):
            store.graph.add(a, b, "RELATES_TO", 0.5)
        for a, b in zip(ids[::2], ids[1::2]):
            store.contradictions.add(a, b, reason="billing")
    calls = [
        ("search", {"query": "billing invoices", "limit": 50}),
        ("ask", {"question": "how are invoices retried?", "limit": 50}),
        ("recall", {"id": ids[0], "level": "full"}),
        ("recall", {"id": ids[5], "level": "related", "depth": 4}),
        ("explore", {"query": "billing", "depth": 4, "max_nodes": 200, "level": "full"}),
        ("contradictions", {"limit": 200}),
        ("context_for_file", {"path": "src/api.py"}),
    ]
    async with mcp_session(project, data) as s:
        for tool, args in calls:
            budget = 300 if tool == "context_for_file" else 150
            used = await tokens_of_call(s, tool, budget=budget, **args)
            out = await call(s, tool, budget=budget, **args)
            assert used <= budget, (tool, used)
            assert out["truncated"] is True, tool


async def test_what_agents_search_counts_as_retrieved(project: Path, data: Path) -> None:
    with seeded(project, data) as store:
        mid = store.add(NewMemory(text="Release builds are signed with the CI key")).id
    async with mcp_session(project, data) as s:
        await call(s, "search", query="release builds signed")
    with seeded(project, data) as store:
        m = store.get(mid)
        log = store.usage.log(mid)
    assert m.retrieval_count == 1
    assert [(kind, context) for _, kind, context in log] == [("retrieval", "mcp search")]


@contextmanager
def http_server(project: Path, data: Path, *extra: str) -> Iterator[tuple[int, Any]]:
    """``living-memory mcp --http PORT`` run in ``project``: its port and its process."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "mcp", "--no-ingest", "--http", str(port), *extra],
        cwd=project,
        env=server_env(data),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "no HTTP server"
                time.sleep(0.1)
        yield port, proc
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def post(port: int, body: bytes, **headers: str) -> tuple[int, bytes]:
    """A raw POST to the server's /mcp (headers given with _ for -)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Content-Length": str(len(body)),
            **{k.replace("_", "-"): v for k, v in headers.items()},
        }
        conn.putrequest("POST", "/mcp", skip_host="Host" in sent)
        for k, v in sent.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


async def test_streamable_http_serves_the_same_tools_to_a_client_with_the_token(
    project: Path, data: Path
) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with http_server(project, data) as (port, proc):
        token_file = db_of(project, data).parent / "mcp-token"
        token = token_file.read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (
                read,
                write,
            ),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            made = await call(s, "remember", text="served over streamable HTTP")
        assert proc.stdout is not None
    assert names == TOOLS
    assert made["created"] is True
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert len(token) >= 40


async def test_http_refuses_requests_without_the_token_or_from_elsewhere(
    project: Path, data: Path
) -> None:
    with http_server(project, data) as (port, _):
        token = (db_of(project, data).parent / "mcp-token").read_text().strip()
        ok = f"Bearer {token}"
        here = f"127.0.0.1:{port}"
        answers = {
            "no token": post(port, INITIALIZE),
            "wrong token": post(port, INITIALIZE, Authorization="Bearer " + "x" * len(token)),
            "basic": post(port, INITIALIZE, Authorization=f"Basic {token}"),
            "host suffix": post(port, INITIALIZE, Authorization=ok, Host=f"{here}.evil.example"),
            "other host": post(port, INITIALIZE, Authorization=ok, Host="evil.example"),
            "origin prefix": post(
                port, INITIALIZE, Authorization=ok, Origin="http://127.0.0.1:80.evil.example"
            ),
            "origin suffix": post(
                port, INITIALIZE, Authorization=ok, Origin=f"http://{here}.evil.ex"
            ),
            "object id": post(
                port,
                json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}).encode(),
                Authorization=ok,
            ),
            "good": post(port, INITIALIZE, Authorization=ok, Origin=f"http://{here}"),
        }
    status = {k: v[0] for k, v in answers.items()}
    assert status == {
        "no token": 401,
        "wrong token": 401,
        "basic": 401,
        "host suffix": 421,
        "other host": 421,
        "origin prefix": 403,
        "origin suffix": 403,
        "object id": 400,
        "good": 200,
    }
    assert b"bearer token" in answers["no token"][1]
    error = json.loads(answers["object id"][1])
    assert error["error"]["code"] == -32600 and error["id"] is None
    assert "id" in error["error"]["message"]


async def test_no_auth_serves_without_a_token(project: Path, data: Path) -> None:
    with http_server(project, data, "--no-auth") as (port, _):
        status, _ = post(port, INITIALIZE)
        foreign, _ = post(port, INITIALIZE, Host=f"127.0.0.1:{port}.evil.example")
    assert (status, foreign) == (200, 421)
    assert not (db_of(project, data).parent / "mcp-token").exists()


async def test_a_new_project_is_learned_on_start_and_commits_are_cited_by_sha(
    tmp_path: Path, data: Path
) -> None:
    import asyncio

    repo = make_git_repo(tmp_path)
    async with mcp_session(repo.root, data, ingest=True) as s:
        for _ in range(200):
            found = await call(s, "search", query="API answers health for the load balancer")
            commits = [i for i in found["items"] if i["source"] == "git"]
            if commits:
                break
            assert "learning" in found, "an answer before the history is in says so"
            await asyncio.sleep(0.1)
    assert commits, "the git history was not learned"
    assert commits[0]["provenance"] == f"commit: {repo.shas['api'][:10]}"


async def test_lock_context_stores_name_tags_and_note_redacted(project: Path, data: Path) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    tavily = "tvly-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    async with mcp_session(project, data) as s:
        made = await call(
            s,
            "lock_context",
            name=f"deploy {secret}",
            content=f"Deploy with {tavily} set",
            tags=[secret, f"key {tavily}", "deploy"],
            note=f"from {secret}",
        )
        again = await call(s, "get_locked_context", name=f"deploy {secret}")
        listed = await call(s, "list_locked_contexts", tag=secret)
    assert secret not in json.dumps(made) and tavily not in json.dumps(again)
    assert again["name"] == "deploy [REDACTED:github-token]"
    assert "deploy" in again["tags"] and "[REDACTED:github-token]" in again["tags"]
    assert listed["count"] == 1  # the same secret given to a lookup is redacted the same way
    folder = db_of(project, data).parent
    for f in folder.iterdir():
        if f.is_file():
            blob = f.read_bytes()
            assert secret.encode() not in blob and tavily.encode() not in blob, f.name


async def test_lock_context_content_that_is_json_text_is_text(project: Path, data: Path) -> None:
    async with mcp_session(project, data) as s:
        obj = await call(s, "lock_context", name="status", content='{"status":"ok"}')
        arr = await call(s, "lock_context", name="list", content="[1,2,3]")
        num = await call(s, "lock_context", name="number", content="42", note="[1]")
        got = [await call(s, "get_locked_context", name=n) for n in ("status", "list", "number")]
    assert obj["created"] and arr["created"] and num["created"]
    assert [g["content"] for g in got] == ['{"status":"ok"}', "[1,2,3]", "42"]
    assert got[2]["note"] == "[1]"


async def test_file_uris_and_relative_uris_outside_the_project_are_refused(
    project: Path, data: Path
) -> None:
    outside = project.parent / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("secret = 1\n")
    async with mcp_session(project, data) as s:
        errors = [
            await call_error(s, "context_for_file", path=p)
            for p in (
                "file:///etc/passwd",
                "file:../outside/x.py",
                f"file://{outside / 'x.py'}",
                "../outside/x.py",
                str(outside / "x.py"),
                "file:src/../../outside/x.py",
            )
        ]
        inside = await call(s, "context_for_file", path="file:src/api.py")
        absolute = await call(s, "context_for_file", path=(project / "src/api.py").as_uri())
        folder = await call_error(s, "context_for_file", path="file:src")
    assert all("outside the project" in e for e in errors), errors
    assert inside["file"] == absolute["file"] == "src/api.py"
    assert "not a file" in folder


async def test_oversized_arguments_are_refused_with_their_reason_before_anything_is_written(
    project: Path, data: Path
) -> None:
    async with mcp_session(project, data) as s:
        errors = {
            "anchors": await call_error(
                s, "remember", text="bounded", anchors=[f"tag:t{i}" for i in range(100_000)]
            ),
            "tags": await call_error(s, "remember", text="bounded", tags=["t"] * 1000),
            "anchor": await call_error(
                s, "remember", text="bounded", anchors=["tag:" + "a" * 5000]
            ),
            "kinds": await call_error(s, "search", query="x", kinds=["fact"] * 100_000),
            "path": await call_error(s, "context_for_file", path="a" * 100_000),
            "query": await call_error(s, "search", query="q" * 100_000),
            "lock tags": await call_error(
                s, "lock_context", name="n", content="c", tags=["t"] * 1000
            ),
            "lock ids": await call_error(
                s, "lock_context", name="n", memory_ids=list(range(1, 100_000))
            ),
        }
        found = await call(s, "search", query="bounded")
        locks = await call(s, "list_locked_contexts")
    for name, text in errors.items():
        assert "at most" in text, (name, text[:200])
    assert found["count"] == 0 and locks["count"] == 0
    with seeded(project, data) as store:
        assert store.list() == []


async def test_a_stored_memory_is_answered_as_stored_even_when_the_budget_is_small(
    project: Path, data: Path
) -> None:
    async with mcp_session(project, data) as s:
        made = await call(
            s,
            "remember",
            text="many anchors",
            anchors=[f"tag:t{i}" for i in range(200)],
            budget=100,
        )
    assert made["created"] is True and made["anchors"] == 200 and made["truncated"] is True


async def test_an_unexpected_failure_names_its_reason(tmp_path: Path) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from server.mcp_server.app import Backend
    from server.mcp_server.tools import _call

    backend = Backend(root=tmp_path, db_path=tmp_path / "data" / "memory.db")

    def broken(store: MemoryStore) -> None:
        raise RuntimeError("the disk went away")

    try:
        with pytest.raises(ToolError, match=r"internal error \(RuntimeError: the disk went away\)"):
            await _call(backend, broken)
    finally:
        backend.close()
