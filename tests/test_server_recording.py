"""When what a context served is logged: all at once when the editor is quiet, one context per
store job while files keep being opened (so the next file waits for one at most)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

import pytest

from server import context
from server.context import ContextService


class BusyProject:
    """A project whose store jobs are recorded; ``busy`` keeps its last request recent."""

    def __init__(self, waiting: int, *, busy: bool) -> None:
        self.unrecorded: deque[int] = deque(range(waiting))
        self.closed = False
        self.busy = busy
        self.last_request = time.monotonic()
        self.jobs: list[int] = []  # contexts logged by each store job, in order

    def record_served(self, limit: int | None = None) -> int:
        n = len(self.unrecorded) if limit is None else min(limit, len(self.unrecorded))
        for _ in range(n):
            self.unrecorded.popleft()
        return n

    async def call(self, fn: Any, *args: Any) -> Any:
        done = fn(*args)
        self.jobs.append(done)
        if self.busy:
            self.last_request = time.monotonic()
        return done


@pytest.fixture(autouse=True)
def short_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context, "RECORD_QUIET_S", 0.02)


def test_a_quiet_editor_gets_everything_logged_in_one_job():
    project = BusyProject(40, busy=False)
    project.last_request -= 1.0
    asyncio.run(ContextService(None)._recorder(project))  # type: ignore[arg-type]
    assert project.jobs == [40]
    assert not project.unrecorded


def test_a_busy_editor_past_the_limit_gets_one_context_logged_per_job():
    project = BusyProject(context.RECORD_WAITING_MAX, busy=True)

    async def drive() -> None:
        task = asyncio.create_task(ContextService(None)._recorder(project))  # type: ignore[arg-type]
        while len(project.unrecorded) > context.RECORD_WAITING_MAX // 2:
            await asyncio.sleep(0.005)
            project.last_request = time.monotonic()
        project.busy = False
        await asyncio.sleep(0.01)
        project.last_request -= 1.0  # the editor goes quiet: the rest in one job
        await asyncio.wait_for(task, 5)

    asyncio.run(drive())
    half = context.RECORD_WAITING_MAX // 2
    assert project.jobs[:half] == [1] * half
    assert project.jobs[half:] == [half]
    assert not project.unrecorded


def test_a_busy_editor_below_the_limit_waits_for_quiet():
    project = BusyProject(context.RECORD_WAITING_MAX - 1, busy=True)

    async def drive() -> None:
        task = asyncio.create_task(ContextService(None)._recorder(project))  # type: ignore[arg-type]
        for _ in range(10):
            await asyncio.sleep(0.01)
            project.last_request = time.monotonic()
        assert project.jobs == []  # nothing logged while files keep being opened
        project.last_request -= 1.0
        await asyncio.wait_for(task, 5)

    asyncio.run(drive())
    assert project.jobs == [context.RECORD_WAITING_MAX - 1]
