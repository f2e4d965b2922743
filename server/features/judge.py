"""The editor's own language models as the contradiction judge, and the waiting pairs judged or
settled on request.

A client that can answer ``livingMemory/judge`` says so in its capabilities
(``experimental.livingMemory.judge: true``); the server then offers it to the chain of judges
(:mod:`predictive.judges`: after a configured endpoint, before an MCP client's sampling). The
request carries the prompt (``system``, ``prompt``, ``maxTokens``, ``purpose``); the client
answers ``{"answer": {verdict…}, "model": "…"}`` or ``{"declined": "why"}``. It is sent from
the worker thread that judges, which waits for the answer; the event loop never does.

Commands: ``livingMemory.judgePending`` (``{folder?, limit?}``) puts waiting pairs to the
chain's judge now; ``livingMemory.settleCandidate`` (``{id, conflict, note?, folder?}``) is a
person's verdict on one waiting pair.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from predictive.operations import ArgumentError, HostUnavailable, Send, judges
from server.asking import ask_from_thread
from server.commands import command

if TYPE_CHECKING:
    from server.features.host import Server
    from server.jobs import Job

log = logging.getLogger("living_memory.judge")

JUDGE = "livingMemory/judge"
REQUEST_TIMEOUT_S = 90.0
"""How long one question waits for the editor (its model, and the user's consent the first
time)."""
MAX_LIMIT = 50


@dataclass(frozen=True)
class JudgePendingArgs:
    """``limit``: pairs put to the judge at most (default: a few for the editor's models)."""

    limit: int | None = None
    folder: str | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and not 1 <= self.limit <= MAX_LIMIT:
            raise ArgumentError("limit", f"must be between 1 and {MAX_LIMIT}")


@dataclass(frozen=True)
class SettleCandidateArgs:
    """A person's verdict on the waiting pair ``id``: ``conflict`` or not."""

    id: int
    conflict: bool
    note: str | None = None
    folder: str | None = None


def announced(capabilities: Any) -> bool:
    """The client said it answers ``livingMemory/judge``."""
    experimental = getattr(capabilities, "experimental", None)
    if not isinstance(experimental, dict):
        return False
    ours = experimental.get("livingMemory")
    return isinstance(ours, dict) and ours.get("judge") is True


def reply_text(reply: Any) -> str:
    """The verdict JSON of the client's reply; HostUnavailable when it declined."""
    if not isinstance(reply, dict):
        raise HostUnavailable("the editor answered nothing")
    if "declined" in reply:
        raise HostUnavailable(f"the editor declined: {str(reply['declined'])[:200]}")
    answer = reply.get("answer")
    if not isinstance(answer, dict):
        raise HostUnavailable("the editor's reply has no answer")
    return json.dumps(answer)


def editor_send(server: Server, timeout: float = REQUEST_TIMEOUT_S) -> Send:
    """Ask the editor's models through the client, from a worker thread."""

    def send(messages: list[dict[str, str]], max_tokens: int) -> str:
        loop = server.loop
        if loop is None or loop.is_closed() or server.shutting_down:
            raise HostUnavailable("the editor is not connected")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise HostUnavailable("the editor's models are asked from a worker thread only")
        params = {
            "purpose": "judge",
            "system": messages[0]["content"],
            "prompt": messages[-1]["content"],
            "maxTokens": max_tokens,
        }

        async def ask() -> Any:
            return await server.protocol.send_request_async(JUDGE, params)

        try:
            reply = ask_from_thread(loop, ask(), timeout, "the editor")
        except JsonRpcException as e:
            raise HostUnavailable(f"the editor could not answer: {e}") from None
        return reply_text(reply)

    return send


def setup(server: Server) -> None:
    @server.on(types.INITIALIZED, wait=False)
    def offer(params: Any) -> None:
        if announced(getattr(server.protocol, "client_capabilities", None)):
            judges.offer(judges.EDITOR, editor_send(server))
            log.info("the editor's language models can judge candidate contradictions")

    @server.on(types.SHUTDOWN, wait=False)
    def withdraw(params: Any) -> None:
        judges.withdraw(judges.EDITOR)

    @command(server, "judgePending", JudgePendingArgs)
    async def judge_pending(a: JudgePendingArgs) -> Any:
        project = await server.project_for(folder=a.folder)
        await project.call(lambda: None)  # the store is open
        store = project.store
        assert store is not None

        def work(job: Job) -> dict[str, Any]:
            choice = judges.choose(store)
            return judges.judge_waiting_pairs(store, choice, limit=a.limit).to_dict()

        # on the project's job thread: the context keeps its own worker while the judge waits
        result: dict[str, Any] = await server.jobs.run(
            "Living Memory: judging candidate contradictions", work, project.job_worker
        )
        return result

    @command(server, "settleCandidate", SettleCandidateArgs)
    async def settle(a: SettleCandidateArgs) -> Any:
        project = await server.project_for(folder=a.folder)

        def work() -> Any:
            assert project.store is not None  # project.call runs this once the store is open
            try:
                return judges.settle(project.store, a.id, a.conflict, a.note).to_dict()
            except ValueError as e:
                raise ArgumentError("id", str(e)) from None

        return await project.call(work)
