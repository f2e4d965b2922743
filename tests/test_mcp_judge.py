"""An MCP client's sampling as the contradiction judge, end to end: the real ``living-memory
mcp`` process asks the official SDK client (``sampling_callback``) about waiting pairs during
a ``judge_pending`` call; a pair becomes a contradiction or is dismissed; a client without
sampling, or one that refuses, leaves the pairs waiting."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_support import call, server_env
from mcp_types import CreateMessageResult, ErrorData, TextContent
from project_fixtures import make_git_repo

from tests.judge_verdicts import oracle_verdict

pytestmark = pytest.mark.asyncio

POSTGRES = "We use PostgreSQL as the primary database"
MYSQL = "We moved off PostgreSQL: MySQL is the primary database now"
HELM = "We deploy the API with Helm charts to the staging cluster"
HELM_TOO = "We deploy the API with Helm charts, and the worker with a plain manifest"


class ClientModel:
    """The client's model: a verdict from labels (or a refusal), every request recorded."""

    def __init__(self, conflicts: set[frozenset[str]], refuse: bool = False) -> None:
        self.conflicts = conflicts
        self.refuse = refuse
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> CreateMessageResult | ErrorData:
        self.asked.append(params)
        if self.refuse:
            return ErrorData(code=-1, message="the user rejected the sampling request")
        verdict = oracle_verdict(params.messages[-1].content.text, self.conflicts)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=json.dumps(verdict)),
            model="fake-model",
            stop_reason="endTurn",
        )


@asynccontextmanager
async def session(
    root: Path, data: Path, model: ClientModel | None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "mcp", "--no-ingest"],
        env=server_env(data),
        cwd=str(root),
    )
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "mcp-stderr.log", "a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, sampling_callback=model) as s,
        ):
            await s.initialize()
            yield s


async def remember_pair(s: ClientSession, older: str, newer: str) -> tuple[int, int]:
    a = (await call(s, "remember", text=older, kind="decision"))["id"]
    b = (await call(s, "remember", text=newer, kind="decision"))["id"]
    pending = await call(s, "contradictions", status="pending")
    assert (a, b) in [(c["a"]["id"], c["b"]["id"]) for c in pending["contradictions"]], pending
    return a, b


async def test_the_clients_model_judges_waiting_pairs_through_sampling(tmp_path: Path) -> None:
    root = make_git_repo(tmp_path).root
    model = ClientModel({frozenset((POSTGRES, MYSQL))})
    async with session(root, tmp_path / "data", model) as s:
        a, b = await remember_pair(s, POSTGRES, MYSQL)
        c, d = await remember_pair(s, HELM, HELM_TOO)
        waiting = (await call(s, "contradictions", status="pending"))["count"]
        result = await call(s, "judge_pending", limit=5)
        assert result["by"] == "mcp-sampling", result
        judged = result["conflicts"] + result["compatible"]
        assert judged == min(5, waiting) and result["left"] == waiting - judged
        while result["left"]:  # a few pairs a call
            result = await call(s, "judge_pending", limit=5)
            judged += result["conflicts"] + result["compatible"]
        assert judged == waiting == len(model.asked)
        opened = await call(s, "contradictions", status="open")
        pairs = {frozenset((x["a"]["id"], x["b"]["id"])) for x in opened["contradictions"]}
        assert frozenset((a, b)) in pairs and frozenset((c, d)) not in pairs
        asked = model.asked[0]
        assert asked.system_prompt and "JSON" in asked.system_prompt
        assert asked.max_tokens >= 16 and asked.include_context == "none"
        # judged once: a second call asks nothing
        count = len(model.asked)
        again = await call(s, "judge_pending")
        assert again["conflicts"] == again["compatible"] == 0 and len(model.asked) == count


async def test_without_sampling_or_with_a_refusal_the_pairs_wait(tmp_path: Path) -> None:
    root = make_git_repo(tmp_path).root
    async with session(root, tmp_path / "data", None) as s:
        await remember_pair(s, POSTGRES, MYSQL)
        result = await call(s, "judge_pending")
        assert result["by"] is None and result["left"] == 1, result
    refusing = ClientModel(set(), refuse=True)
    async with session(root, tmp_path / "data", refusing) as s:
        result = await call(s, "judge_pending", limit=1)
        assert result["by"] == "mcp-sampling" and result["unanswered"] == 1 and result["left"] == 1
        assert len(refusing.asked) == 1
        assert (await call(s, "contradictions", status="open"))["contradictions"] == []
