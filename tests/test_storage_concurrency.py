"""Two connections at once, threads sharing a store, a writer killed mid-ingest, a lock held
by someone else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import apsw
import pytest
from conftest import snapshot_of

from storage import DatabaseLocked, MemoryStore, NewMemory, search
from storage.embeddings import HashingEmbedder

REPO = Path(__file__).resolve().parents[1]


def _open(db: Path) -> MemoryStore:
    return MemoryStore(db, embedder=HashingEmbedder(dim=64))


def test_one_writer_and_one_reader_on_two_connections(db_path: Path) -> None:
    writer_store, reader_store = _open(db_path), _open(db_path)
    errors: list[BaseException] = []
    done = threading.Event()
    seen_counts: list[int] = []

    def write() -> None:
        try:
            for i in range(200):
                writer_store.add(NewMemory(text=f"writer memory {i} about topic {i % 13}"))
        except BaseException as e:
            errors.append(e)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                seen_counts.append(reader_store.count())
                search(reader_store, "writer memory topic 7", k=5)
                search(reader_store, "topic", mode="keyword", k=5)
                for m in reader_store.list(limit=5):
                    assert m.text.startswith("writer memory")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=write), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert errors == []
        assert seen_counts == sorted(seen_counts)  # a reader never sees the count go back
        assert writer_store.count() == reader_store.count() == 200
        vi = reader_store.vectors()
        assert len(vi) == 200
        hits = search(reader_store, "writer memory 199 about topic 4", mode="vector", k=1)
        assert hits[0].memory.text == "writer memory 199 about topic 4"
    finally:
        writer_store.close()
        reader_store.close()


def test_threads_share_one_store_with_a_connection_each(store: MemoryStore) -> None:
    errors: list[BaseException] = []
    conns: dict[str, object] = {}  # the objects themselves, so no id() is reused
    lock = threading.Lock()
    writers_done = threading.Event()

    def write(w: int) -> None:
        try:
            with lock:
                conns[f"w{w}"] = store.conn
            for i in range(50):
                store.add(NewMemory(text=f"thread {w} memory {i}", source_id=f"t{w}"))
        except BaseException as e:
            errors.append(e)

    def read() -> None:
        try:
            with lock:
                conns["reader"] = store.conn
            while not writers_done.is_set():
                search(store, "thread memory", k=3)
                store.stats()
        except BaseException as e:
            errors.append(e)

    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    reader = threading.Thread(target=read)
    reader.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join(timeout=120)
    writers_done.set()
    reader.join(timeout=120)
    assert errors == []
    assert len({id(c) for c in conns.values()}) == 5  # one connection per thread
    assert store.count() == 200
    for w in range(4):
        assert store.conn.execute(
            "SELECT count(*) FROM memories WHERE source_id = ?", (f"t{w}",)
        ).fetchone() == (50,)
    assert len(store.vectors()) == 200
    assert store.embeddings.pending() == 0


CRASHER = textwrap.dedent(
    """
    import sys
    from storage import MemoryStore, NewMemory
    from storage.embeddings import HashingEmbedder

    store = MemoryStore(sys.argv[1], embedder=HashingEmbedder(dim=64))
    store.vectors()
    for b in range(100000):
        store.add_many(
            [
                NewMemory(text=f"crash batch {b} item {i} keeps going", source_id=f"batch-{b}")
                for i in range(10)
            ]
        )
        if b == 3:
            store.vectors().save()  # an index on disk that will be stale after the crash
        print(b, flush=True)
    """
)


def test_a_writer_killed_mid_ingest_leaves_a_consistent_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHER, str(db_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    last = -1
    try:
        assert proc.stdout is not None
        while last < 40:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"writer died early: {proc.stderr.read() if proc.stderr else ''}")
            last = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    with _open(db_path) as s:
        conn = s.conn
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        batches = dict(
            conn.execute("SELECT source_id, count(*) FROM memories GROUP BY source_id").fetchall()
        )
        assert set(batches.values()) == {10}  # no half batches
        for b in range(last + 1):  # everything reported as committed is there
            assert batches.get(f"batch-{b}") == 10
        n = s.count()
        assert n == 10 * len(batches)
        assert conn.execute("SELECT count(*) FROM memories_fts").fetchone() == (n,)
        (embedded,) = conn.execute("SELECT count(*) FROM embeddings").fetchone()
        assert embedded == n
        vi = s.vectors()
        assert vi.state.action in ("caught_up", "rebuilt")
        assert len(vi) == embedded
        text = f"crash batch {last} item 7 keeps going"
        assert search(s, text, mode="vector", k=1)[0].memory.text == text
        assert search(s, text, mode="keyword", k=1)[0].memory.text == text
        ok = s.add(NewMemory(text="life goes on after the crash"))
        assert ok.created and s.count() == n + 1


def test_a_held_lock_gives_database_locked_and_loses_nothing(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVING_MEMORY_BUSY_TIMEOUT_MS", "50")
    with _open(db_path) as s:
        ids = [s.add(NewMemory(text=f"before the lock {i}")).id for i in range(3)]
        before = snapshot_of(s)
        locker = apsw.Connection(str(db_path))
        locker.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(DatabaseLocked, match="locked"):
                s.add(NewMemory(text="while locked"))
            with pytest.raises(DatabaseLocked):
                s.add_many([NewMemory(text=f"locked batch {i}") for i in range(5)])
            with pytest.raises(DatabaseLocked):
                s.update(ids[0], text="changed while locked")
            with pytest.raises(DatabaseLocked):
                s.archive(ids[1])
            assert s.count() == 3  # reading goes on under WAL
            assert search(s, "before the lock", mode="keyword")
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert snapshot_of(s) == before
        res = s.add(NewMemory(text="while locked"))
        assert res.created and s.count() == 4
        assert s.get(ids[0]).text == "before the lock 0"


def test_a_writer_waits_for_a_short_lock(db_path: Path) -> None:
    with _open(db_path) as s:
        s.add(NewMemory(text="first"))
        locker = apsw.Connection(str(db_path))
        locker.execute("BEGIN IMMEDIATE")
        locker.execute("UPDATE memories SET importance = 0.9")
        release = threading.Timer(0.2, lambda: locker.execute("COMMIT"))
        release.start()
        try:
            assert s.add(NewMemory(text="second")).created  # waits within the busy timeout
        finally:
            release.join()
            locker.close()
        assert s.count() == 2
        assert [m.importance for m in s.list(order="oldest")] == [0.9, 0.5]


def test_connections_of_finished_threads_are_closed(store: MemoryStore) -> None:
    import psutil

    store.add(NewMemory(text="counted from many short-lived threads"))
    me = psutil.Process()

    def count() -> None:
        assert store.count() == 1

    def run_threads(n: int) -> None:
        for _ in range(n):
            t = threading.Thread(target=count)
            t.start()
            t.join()

    run_threads(20)
    fds = me.num_fds()
    run_threads(200)  # without clean-up each thread would leave its connection open
    assert me.num_fds() <= fds + 4
    assert store.count() == 1
