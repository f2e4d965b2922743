"""The editor's own models as the contradiction judge, end to end: the real language server
asks its client (``livingMemory/judge``) about a waiting pair, the client answers like the
extension's ``vscode.lm`` bridge would, and the pair becomes a contradiction or is dismissed;
the server keeps answering while it waits. A client that did not announce the capability is
never asked, and a person can settle a waiting pair."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient, client_capabilities
from server_support import config, initialize, make_repo, run, uri

from tests.judge_verdicts import oracle_verdict

pytestmark = pytest.mark.asyncio(loop_scope="module")

JUDGE = "livingMemory/judge"
ANSWER_DELAY_S = 0.8


def capabilities(judge: bool) -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    if judge:
        caps.experimental = {"livingMemory": {"judge": True}}
    return caps


class EditorModel:
    """What the extension's bridge answers: a verdict from labels, or a refusal."""

    def __init__(self) -> None:
        self.conflicts: set[frozenset[str]] = set()
        self.decline = False
        self.asked: list[dict[str, Any]] = []
        self.answered_at: list[float] = []

    async def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params)
        await asyncio.sleep(ANSWER_DELAY_S)  # a model takes its time
        self.answered_at.append(time.monotonic())
        if self.decline:
            return {"declined": "the user has not allowed the editor's models"}
        verdict = oracle_verdict(params["prompt"], self.conflicts)
        return {"answer": verdict, "model": "fake/judge"}


async def start(client: LanguageClient, base: Path, judge: bool) -> Path:
    repo = make_repo(base / "repo", files={"src/db.py": "x = 1\n"})
    client.model = EditorModel()  # type: ignore[attr-defined]

    @client.feature(JUDGE)
    async def on_judge(params: Any) -> Any:
        return await client.model.answer(params)  # type: ignore[attr-defined]

    await initialize(
        client,
        [repo],
        {"dataDirectory": str(base / "data"), "consolidateWhenIdleMinutes": 0},
        capabilities=capabilities(judge),
    )
    return repo


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    lsp_client.repo = await start(lsp_client, tmp_path_factory.mktemp("judge"), True)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def model(client: LanguageClient) -> EditorModel:
    return client.model  # type: ignore[attr-defined,no-any-return]


async def waiting_pair(client: LanguageClient, older: str, newer: str) -> tuple[int, int]:
    folder = uri(client.repo)  # type: ignore[attr-defined]
    a = (await run(client, "remember", {"text": older, "kind": "decision", "folder": folder}))["id"]
    b = (await run(client, "remember", {"text": newer, "kind": "decision", "folder": folder}))["id"]
    listed = await run(client, "contradictions", {"status": "pending", "folder": folder})
    pairs = [(c["a"]["id"], c["b"]["id"]) for c in listed["contradictions"]]
    assert (a, b) in pairs, listed
    return a, b


async def open_pairs(client: LanguageClient) -> set[frozenset[int]]:
    folder = uri(client.repo)  # type: ignore[attr-defined]
    listed = await run(client, "contradictions", {"status": "open", "folder": folder})
    return {frozenset((c["a"]["id"], c["b"]["id"])) for c in listed["contradictions"]}


async def test_the_editors_model_judges_a_waiting_pair_a_contradiction(
    client: LanguageClient,
) -> None:
    older = "We use PostgreSQL as the primary database"
    newer = "We moved off PostgreSQL: MySQL is the primary database now"
    a, b = await waiting_pair(client, older, newer)
    model(client).conflicts.add(frozenset((older, newer)))
    folder = uri(client.repo)  # type: ignore[attr-defined]
    judging = asyncio.ensure_future(run(client, "judgePending", {"folder": folder}))
    # the server answers other requests while the editor's model thinks
    while not model(client).asked:
        await asyncio.sleep(0.02)
    stats = await run(client, "stats", {"folder": folder})
    answered_stats = time.monotonic()
    assert stats["memories"] >= 2
    result = await judging
    assert model(client).answered_at and answered_stats < model(client).answered_at[-1]
    assert result["by"] == "editor-models" and result["conflicts"] == 1, result
    assert frozenset((a, b)) in await open_pairs(client)
    asked = model(client).asked[-1]
    assert asked["purpose"] == "judge" and asked["prompt"] == f"A:\n{older}\n\nB:\n{newer}"
    assert "JSON" in asked["system"] and asked["maxTokens"] >= 16
    pending = await run(client, "contradictions", {"status": "pending", "folder": folder})
    assert pending["contradictions"] == []


async def test_a_compatible_answer_dismisses_the_pair_and_it_is_not_asked_again(
    client: LanguageClient,
) -> None:
    older = "We deploy the API with Helm charts to the staging cluster"
    newer = "We deploy the API with Helm charts, and the worker with a plain manifest"
    a, b = await waiting_pair(client, older, newer)
    folder = uri(client.repo)  # type: ignore[attr-defined]
    asked = len(model(client).asked)
    result = await run(client, "judgePending", {"folder": folder})
    assert result["compatible"] >= 1 and result["left"] == 0, result
    assert frozenset((a, b)) not in await open_pairs(client)
    again = await run(client, "judgePending", {"folder": folder})
    assert again["compatible"] == again["conflicts"] == 0
    assert len(model(client).asked) == asked + result["compatible"]


async def test_a_declining_editor_leaves_the_pair_waiting(client: LanguageClient) -> None:
    older = "Sessions are kept in Redis for thirty minutes"
    newer = "Sessions moved from Redis to signed cookies"
    await waiting_pair(client, older, newer)
    folder = uri(client.repo)  # type: ignore[attr-defined]
    model(client).decline = True
    try:
        result = await run(client, "judgePending", {"folder": folder, "limit": 1})
    finally:
        model(client).decline = False
    assert result["unanswered"] == 1 and result["left"] >= 1, result
    pending = await run(client, "contradictions", {"status": "pending", "folder": folder})
    assert pending["contradictions"]


async def test_a_person_settles_a_waiting_pair(client: LanguageClient) -> None:
    older = "Background jobs run on Celery with RabbitMQ"
    newer = "Background jobs moved off Celery: they run on RQ with Redis now"
    a, b = await waiting_pair(client, older, newer)
    folder = uri(client.repo)  # type: ignore[attr-defined]
    pending = await run(client, "contradictions", {"status": "pending", "folder": folder})
    (row,) = [c for c in pending["contradictions"] if (c["a"]["id"], c["b"]["id"]) == (a, b)]
    settled = await run(
        client, "settleCandidate", {"id": row["id"], "conflict": True, "folder": folder}
    )
    assert settled["conflict"] is True and settled["contradiction"] is not None
    assert frozenset((a, b)) in await open_pairs(client)
    with pytest.raises(JsonRpcException, match="already conflict"):
        await run(client, "settleCandidate", {"id": row["id"], "conflict": False, "folder": folder})
    with pytest.raises(JsonRpcException, match="no candidate pair #999999"):
        await run(client, "settleCandidate", {"id": 999999, "conflict": False, "folder": folder})


@pytest_lsp.fixture(config=config())
async def plain_client(lsp_client: LanguageClient, tmp_path: Path):
    lsp_client.repo = await start(lsp_client, tmp_path, False)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="function")
async def test_a_client_that_did_not_announce_it_is_never_asked(
    plain_client: LanguageClient,
) -> None:
    client = plain_client
    await waiting_pair(
        client,
        "We use PostgreSQL as the primary database",
        "We moved off PostgreSQL: MySQL is the primary database now",
    )
    folder = uri(client.repo)  # type: ignore[attr-defined]
    result = await run(client, "judgePending", {"folder": folder})
    assert result["by"] is None and result["left"] >= 1, result
    assert model(client).asked == []
    text = json.dumps(await run(client, "contradictions", {"status": "open", "folder": folder}))
    assert "MySQL" not in text
