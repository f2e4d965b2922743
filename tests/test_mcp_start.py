"""The MCP server's start: the model and the vector index load on a thread of their own while
the server starts, the session is initialised without waiting for them, and a tool call that
arrives before they are in waits for them and answers in full.

The server runs in-process, driven by the official SDK client (``mcp.Client``), with an
embedder whose loading is held until the test lets it finish; and as a fresh process started
the way a client starts it (``living-memory --db … mcp``: the command's own small parser, the
SDK's server layer alone)."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_support import call_error, server_env

import server.mcp_server.app as app_mod
from predictive.session import ProjectSession
from server.mcp_server.app import Backend, _collector_paused, build_server
from storage import MemoryStore, NewMemory
from storage.embeddings import Embedder, HashingEmbedder
from tests.test_mcp_learning import answer

# Found by meaning only: no word of it is in the memory, so keyword search alone finds nothing.
BY_MEANING = "paymentgateway exponentialy"


class HeldModel:
    """An embedder factory that blocks until released, counting how often it is called."""

    def __init__(self) -> None:
        self.loading = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self) -> Embedder:
        self.calls += 1
        self.loading.set()
        assert self.release.wait(60), "the test never let the model load"
        return HashingEmbedder()


def learned_store(db: Path) -> None:
    with MemoryStore(db, embedder=HashingEmbedder()) as store:
        store.add(NewMemory(text="Retries of the payment gateway back off exponentially"))
        store.add(NewMemory(text="The release checklist lives in docs/RELEASING.md"))


@pytest.mark.asyncio
async def test_a_call_made_while_the_model_loads_waits_for_it_and_answers_by_meaning(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    learned_store(db)
    model = HeldModel()
    backend = Backend(root=tmp_path, db_path=db, embedder=model)
    try:
        threads = backend.start(ingest=False)
        assert await asyncio.to_thread(model.loading.wait, 60), "the model never started loading"
        async with Client(build_server(backend)) as client:  # initialised while it loads
            early = asyncio.create_task(answer(client, "search", query=BY_MEANING))
            listed = await client.list_tools()  # the loop answers meanwhile
            await asyncio.sleep(0.3)
            waited = not early.done()
            model.release.set()
            first = await asyncio.wait_for(early, 60)
            for thread in threads:
                await asyncio.to_thread(thread.join, 60)
            later = await answer(client, "search", query=BY_MEANING)
    finally:
        model.release.set()
        backend.close()
    assert "search" in {t.name for t in listed.tools}
    assert waited, "the search answered before the model it needs was loaded"
    assert [i["id"] for i in first["items"]] == [1] == [i["id"] for i in later["items"]]
    assert first["items"][0]["score"] == later["items"][0]["score"]
    # the store is learned: nothing is being learned, whether or not its quick check was over
    assert first.get("learning", {}).get("steps", []) == []
    assert "learning" not in later
    assert model.calls == 1  # the call waited for the start's load instead of loading its own


@pytest.mark.asyncio
async def test_a_model_that_fails_to_load_at_start_is_tried_again_by_the_call(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    learned_store(db)
    calls = 0

    def flaky() -> Embedder:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("model file busy")
        return HashingEmbedder()

    backend = Backend(root=tmp_path, db_path=db, embedder=flaky)
    try:
        for thread in backend.start(ingest=False):
            thread.join(60)
        async with Client(build_server(backend)) as client:
            out = await answer(client, "search", query=BY_MEANING)
    finally:
        backend.close()
    assert calls == 2
    assert [i["id"] for i in out["items"]] == [1]


def test_the_warm_up_after_the_model_waits_until_the_server_is_built(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    learned_store(db)
    model = HeldModel()
    model.release.set()
    backend = Backend(root=tmp_path, db_path=db, embedder=model)
    try:
        warm, prepare = backend.start(ingest=False)
        prepare.join(60)  # it needs the model too: it is in
        assert model.calls == 1
        assert warm.is_alive(), "the warm-up went on before the server was built"
        build_server(backend)
        warm.join(60)
        assert not warm.is_alive()
    finally:
        backend.close()


def test_the_vector_index_loads_beside_the_workers_warm_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "memory.db"
    learned_store(db)
    monkeypatch.setattr(Backend, "prepare", lambda self, ingest=True: None)  # the warm-up alone
    backend = Backend(root=tmp_path, db_path=db, embedder=HashingEmbedder)
    gate = threading.Event()
    try:
        backend.worker.submit(gate.wait, 60)  # the worker is busy all along
        warm, _ = backend.start(ingest=False)
        store = backend.open().store
        warm.join(0.5)
        assert store.vector_cache is None, "the index was loaded before the server was built"
        build_server(backend)
        warm.join(60)
        assert store.vector_cache is not None, "the index waited for the worker"
    finally:
        gate.set()
        backend.close()


class CountedWarmSearch:
    """Counts the warm-up's warming searches (the real one runs too)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = ProjectSession.warm_search

        def counted(session: ProjectSession) -> None:
            self.calls += 1
            real(session)

        monkeypatch.setattr(ProjectSession, "warm_search", counted)


class CountedEngineWarmUp:
    """Tells when the warm-up's last job, building the context engine, is done."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.done = threading.Event()
        real = Backend._warm_engine

        def counted(backend: Backend, session: ProjectSession) -> None:
            real(backend, session)
            self.done.set()

        monkeypatch.setattr(Backend, "_warm_engine", counted)


@asynccontextmanager
async def warming_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait_s: float
) -> AsyncIterator[tuple[Backend, threading.Event, CountedWarmSearch]]:
    """A backend started with its worker held by the yielded gate, the warm-up's search
    waiting ``wait_s`` for a first call; yielded once the worker's share of the warm-up is
    queued; on leaving, the warm-up is waited for to its end (the context engine)."""
    db = tmp_path / "memory.db"
    learned_store(db)
    searches = CountedWarmSearch(monkeypatch)
    engines = CountedEngineWarmUp(monkeypatch)
    monkeypatch.setattr(app_mod, "WARM_SEARCH_AFTER_S", wait_s)
    backend = Backend(root=tmp_path, db_path=db, embedder=HashingEmbedder)
    gate = threading.Event()
    try:
        backend.worker.submit(gate.wait, 60)
        warm, prepare = backend.start(ingest=False)
        await asyncio.to_thread(prepare.join, 60)
        build_server(backend)
        await asyncio.to_thread(warm.join, 60)
        yield backend, gate, searches
        gate.set()
        assert await asyncio.to_thread(engines.done.wait, 60), "the engine was never built"
    finally:
        gate.set()
        backend.close()


@pytest.mark.asyncio
async def test_a_call_queued_during_the_warm_up_spares_its_warming_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with warming_up(tmp_path, monkeypatch, 0.2) as (backend, gate, searches):
        call = asyncio.create_task(backend.call(lambda store: store.count()))
        await asyncio.sleep(0.1)  # queued behind the warm-up
        gate.set()
        assert await asyncio.wait_for(call, 60) == 2
    assert searches.calls == 0


@pytest.mark.asyncio
async def test_without_a_call_the_warm_up_warms_the_worker_by_a_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with warming_up(tmp_path, monkeypatch, 0.05) as (_, _, searches):
        pass
    assert searches.calls == 1


def test_the_collector_is_back_on_after_the_start_even_when_it_fails() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), _collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("the SDK could not be imported")
    assert gc.isenabled()
    gc.unfreeze()


@pytest.mark.asyncio
async def test_a_fresh_process_answers_initialize_a_search_and_a_bad_call(tmp_path: Path) -> None:
    db = tmp_path / "store" / "memory.db"
    db.parent.mkdir()
    learned_store(db)
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "--db", str(db), "mcp", "--no-ingest", "--root", str(root)],
        env=server_env(tmp_path / "data"),
        cwd=str(root),
    )
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            hello = await session.initialize()
            found = await session.call_tool("search", {"query": BY_MEANING})
            refused = await call_error(session, "recall", id=0)
            unknown = await session.call_tool("no_such_tool", {})
            again = await session.call_tool("recall", {"id": 2, "level": "full"})
    assert hello.server_info.name == "living-memory"
    assert hello.capabilities.tools is not None
    assert not found.is_error
    assert [i["id"] for i in json.loads(found.content[0].text)["items"]] == [1]  # type: ignore[union-attr]
    assert "id" in refused and "greater than or equal to 1" in refused
    assert unknown.is_error and "no_such_tool" in unknown.content[0].text  # type: ignore[union-attr]
    assert "docs/RELEASING.md" in json.loads(again.content[0].text)["text"]  # type: ignore[union-attr]
    assert (tmp_path / "stderr.log").read_text() == ""
