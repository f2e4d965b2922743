"""A project still being learned says so: answers given while the first ingestion or the
embedding of vectors is running carry a ``learning`` note with the progress so far.

The server runs in-process, driven by the official SDK client (``mcp.Client``), with the real
``Backend.prepare`` on a thread of its own, held at a chosen progress report."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from project_fixtures import make_big_repo

from predictive.learning import Learning
from server.mcp_server.app import Backend, build_server
from storage import MemoryStore, NewMemory


class Held(Learning):
    """A progress record that holds the preparation at the first report ``at`` accepts."""

    def __init__(self, at: Callable[[int, int, str], bool]) -> None:
        super().__init__()
        self.at = at
        self.reached = threading.Event()
        self.go_on = threading.Event()
        self.report: tuple[int, int, str] | None = None

    def _hold(self, done: int, total: int, message: str) -> None:
        if self.report is None and self.at(done, total, message):
            self.report = (done, total, message)
            self.reached.set()
            assert self.go_on.wait(60), "the test never let the preparation go on"

    def ingest_progress(self, done: int, total: int, message: str | None = None) -> None:
        super().ingest_progress(done, total, message)
        self._hold(done, total, message or "")

    def embedding(self, done: int, total: int) -> None:
        super().embedding(done, total)
        self._hold(done, total, "embedding")


@pytest.fixture(autouse=True)
def hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVING_MEMORY_EMBEDDER", "hashing")


async def answer(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    res = await client.call_tool(tool, arguments)
    text = res.content[0].text  # type: ignore[union-attr]
    assert not res.is_error, f"{tool}: {text}"
    out: dict[str, Any] = json.loads(text)
    return out


async def held_until(learning: Held, backend: Backend, ingest: bool) -> threading.Thread:
    """Start the preparation and wait until it is held."""
    thread = threading.Thread(target=backend.prepare, args=(ingest,), daemon=True)
    thread.start()
    assert await asyncio.to_thread(learning.reached.wait, 60), "never reached the report"
    return thread


@pytest.mark.asyncio
async def test_answers_during_the_first_ingestion_say_how_far_it_got(tmp_path: Path) -> None:
    repo = make_big_repo(tmp_path / "repo", 200)
    learning = Held(lambda done, total, message: message.startswith("git: ") and done > 0)
    backend = Backend(root=repo.root, db_path=tmp_path / "memory.db", learning=learning)
    try:
        thread = await held_until(learning, backend, ingest=True)
        async with Client(build_server(backend)) as client:
            early = await answer(client, "search", query="change module")
            context = await answer(client, "context_for_file", path="src/m1.py")
            learning.go_on.set()
            await asyncio.to_thread(thread.join, 120)
            later = await answer(client, "search", query="change module")
    finally:
        learning.go_on.set()
        backend.close()
    assert learning.report is not None
    done = learning.report[0]
    assert 0 < done < 200
    for out in (early, context):
        note = out["learning"]
        assert note["steps"] == [{"source": "git", "unit": "commits", "done": done, "total": 200}]
        assert note["message"].startswith(f"learning: {done:,} of 200 commits")
    assert "learning" not in later and later["items"]


@pytest.mark.asyncio
async def test_answers_while_vectors_are_filled_say_how_many_are_in(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with MemoryStore(db) as store:  # no embedder: every memory waits for its vector
        for i in range(300):
            store.add(NewMemory(text=f"Deploy note {i}: the canary runs for {i} minutes"))
    learning = Held(lambda done, total, message: message == "embedding" and done > 0)
    backend = Backend(root=tmp_path, db_path=db, learning=learning)
    try:
        thread = await held_until(learning, backend, ingest=False)
        async with Client(build_server(backend)) as client:
            early = await answer(client, "search", query="canary deploy")
            learning.go_on.set()
            await asyncio.to_thread(thread.join, 120)
            later = await answer(client, "search", query="canary deploy")
    finally:
        learning.go_on.set()
        backend.close()
    assert learning.report is not None
    done = learning.report[0]
    assert early["learning"]["steps"] == [
        {"source": "vectors", "unit": "memories embedded", "done": done, "total": 300}
    ]
    assert f"learning: {done:,} of 300 memories embedded" in early["learning"]["message"]
    assert early["items"]  # what is known is answered meanwhile
    assert "learning" not in later


@pytest.mark.asyncio
async def test_a_store_with_nothing_to_learn_answers_without_a_note(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    backend = Backend(root=tmp_path, db_path=db)
    try:
        backend.prepare(ingest=False)
        async with Client(build_server(backend)) as client:
            await answer(client, "remember", text="Canary deploys run for ten minutes")
            out = await answer(client, "search", query="canary")
    finally:
        backend.close()
    assert "learning" not in out and out["items"]


def test_the_record_follows_the_ingestions_reports_per_source() -> None:
    rec = Learning()
    rec.ingest_progress(0, 1, "git: reading")  # before start: not learning
    assert rec.note() is None
    rec.start()
    assert rec.note(wait=0) == {
        "message": "learning: starting — answers may miss what is not learned yet",
        "steps": [],
    }
    rec.ingest_progress(0, 1, "git: reading")
    rec.ingest_progress(0, 2790, "git: reading 2790 commits")
    rec.ingest_progress(340, 2790, "git: 340 of 2790 commits")
    note = rec.note()
    assert note is not None and note["message"].startswith("learning: 340 of 2,790 commits —")
    rec.ingest_progress(2790, 2790, "git: 2790 of 2790 commits")
    rec.ingest_progress(2800, 2800, "adr: reading")
    rec.ingest_progress(2803, 2803, "decision records: 3 of 12")
    rec.ingest_progress(2803, 2803, "rules: reading")
    rec.ingest_progress(2804, 2804, "rules: CLAUDE.md")
    rec.ingest_progress(2805, 2805, "rules: .cursor/rules/api.mdc")
    rec.ingest_progress(1, 1, "something else: 4 of 5")  # not a source: ignored
    note = rec.note()
    assert note is not None
    assert note["message"].startswith(
        "learning: 2,790 of 2,790 commits, 3 of 12 decision records, 2 rule files —"
    )
    assert [s["source"] for s in note["steps"]] == ["git", "adr", "rules"]
    assert "total" not in note["steps"][2]  # how many rule files there are is not known
    rec.embedding(4210, 9010)
    note = rec.note()
    assert note is not None and "4,210 of 9,010 memories embedded" in note["message"]
    rec.finish()
    assert rec.note() is None


def test_a_source_that_gave_no_count_is_not_shown_once_the_next_one_starts() -> None:
    rec = Learning()
    rec.start()
    rec.ingest_progress(0, 1, "git: reading")  # not a repository: git says nothing more
    rec.ingest_progress(0, 1, "adr: reading")
    rec.ingest_progress(1, 4, "decision records: 1 of 4")
    note = rec.note()
    assert note is not None and [s["source"] for s in note["steps"]] == ["adr"]
    assert note["message"].startswith("learning: 1 of 4 decision records —")


def _later(seconds: float, action: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()), daemon=True)
    thread.start()
    return thread


def test_an_answer_before_a_learned_stores_check_is_over_waits_for_it() -> None:
    rec = Learning()
    rec.start()
    done = _later(0.05, rec.finish)
    t0 = time.monotonic()
    assert rec.note(wait=10) is None  # nothing to learn: no note at all
    assert time.monotonic() - t0 < 5
    done.join(5)


def test_an_answer_before_the_first_report_waits_for_it() -> None:
    rec = Learning()
    rec.start()
    reported = _later(0.05, lambda: rec.ingest_progress(0, 90, "git: reading 90 commits"))
    note = rec.note(wait=10)
    assert note is not None and note["message"].startswith("learning: 0 of 90 commits")
    reported.join(5)


def test_a_preparation_that_says_nothing_is_starting_after_the_wait() -> None:
    rec = Learning()
    rec.start()
    t0 = time.monotonic()
    note = rec.note(wait=0.05)
    assert time.monotonic() - t0 >= 0.04
    assert note is not None and note["message"].startswith("learning: starting")
