"""Text first, meaning behind: an ingestion is searchable by keyword before its vectors are in,
search and context say how far the vectors have come, and the vectors that follow are bounded
runs that skip what has no meaning to place."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest

from predictive.ingest import learn_vectors, run
from predictive.operations import SearchArgs
from predictive.operations.search import search
from predictive.session import ProjectSession
from storage import MemoryStore, NewMemory
from storage.embeddings import BATCH_CELLS, HashingEmbedder, _token_batches
from storage.passages import worth_a_vector
from storage.sessions import sessions_of
from storage.sources.records import ChatMessage, Conversation
from storage.vector_progress import vector_progress
from tests.project_fixtures import make_git_repo

LOG = "\n".join(
    f"2025-02-25 02:37:{s:02d},644 - __main__ - INFO - engine {s} answered in {s * 7} ms"
    for s in range(12)
)


def conversation(n: int) -> Conversation:
    answer = "\n\n".join(
        f"The canary deploy waits {i} minutes before the retry loop gives up on the queue."
        for i in range(30)
    )
    return Conversation(
        tool="claude",
        external_id=f"c{n}",
        title=f"Deploys {n}",
        messages=(
            ChatMessage(0, "user", "why does the canary deploy stop early?", at=1000.0),
            ChatMessage(1, "assistant", answer, at=1001.0),
            ChatMessage(2, "user", f"here is the log:\n{LOG}", at=1002.0),
        ),
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path).root


def test_an_ingestion_without_learning_is_searchable_by_keyword_and_says_so(
    project: Path, tmp_path: Path
) -> None:
    store = MemoryStore(tmp_path / "m.db", embedder=HashingEmbedder())
    try:
        summary = run(
            store,
            root=project,
            options={"sources": ["git", "chats"]},
            conversations=[conversation(i) for i in range(3)],
            learn=False,
        )
        assert summary.added > 0 and summary.learned is None
        assert store.stats().embedded == 0  # no vector yet
        pending = store.embeddings.pending() + sessions_of(store).pending_embeddings()
        progress = vector_progress(store)
        assert progress is not None and progress.embedded == 0 and progress.total > 0

        found = search(store, SearchArgs(query="canary deploy"))
        assert found.results  # the keyword part answers at once
        assert found.to_dict()["learning"] == {"embedded": 0, "total": progress.total}
        assert "learning" not in search(store, SearchArgs("canary", mode="keyword")).to_dict()

        reports: list[str] = []
        learned = learn_vectors(store, progress=lambda d, t, m: reports.append(m), batch=4)
        assert learned.memories + learned.passages == pending
        assert any(m.endswith("memories") for m in reports)
        assert any(m.endswith("passages") for m in reports)
        assert store.embeddings.pending() == 0
        assert sessions_of(store).pending_embeddings() == 0
        assert "learning" not in search(store, SearchArgs(query="canary deploy")).to_dict()
        again = learn_vectors(store)
        assert (again.memories, again.passages) == (0, 0)  # nothing is embedded twice
    finally:
        store.close()


def test_a_stopped_learning_keeps_what_it_wrote_and_the_next_takes_up_the_rest(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path / "m.db", embedder=HashingEmbedder())
    try:
        with store.vectors_later():
            store.add_many(
                [NewMemory(text=f"the retry budget of job {i} is short") for i in range(40)]
            )
        assert store.embeddings.pending() == 40

        def stop_after_two(done: int, total: int, message: str) -> None:
            if done >= 8:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            learn_vectors(store, progress=stop_after_two, batch=4)
        assert store.embeddings.pending() == 32
        assert learn_vectors(store, batch=4).memories == 32
        assert store.embeddings.pending() == 0
    finally:
        store.close()


def test_a_session_learns_in_the_background_after_the_first_run(
    project: Path, tmp_path: Path
) -> None:
    session = ProjectSession.open(project, tmp_path / "m.db", embedder=HashingEmbedder)
    try:
        first = session.first_run(learn=False)
        assert first is not None and first.added > 0
        assert session.store.embeddings.pending() == first.added
        learned = session.learn()
        assert learned.memories == first.added
        progress = vector_progress(session.store)
        assert progress is not None and progress.complete
    finally:
        session.close()


def test_context_says_how_far_the_vectors_are(project: Path, tmp_path: Path) -> None:
    session = ProjectSession.open(project, tmp_path / "m.db", embedder=HashingEmbedder)
    try:
        session.first_run(learn=False)
        from predictive.operations.requests import ContextArgs

        (project / "src").mkdir(exist_ok=True)
        target = project / "src" / "app.py"
        target.write_text("print('hi')\n")
        early = session.context(ContextArgs(path=str(target)), record=False).to_dict()
        assert early["learning"]["embedded"] < early["learning"]["total"]
        session.learn()
        later = session.context(ContextArgs(path=str(target)), record=False).to_dict()
        assert "learning" not in later
    finally:
        session.close()


def test_passages_without_meaning_get_no_vector_but_stay_searchable(tmp_path: Path) -> None:
    rng = random.Random(3)
    blob = base64.b64encode(bytes(rng.randrange(256) for _ in range(900))).decode()
    minified = "function a(b){return b.map(function(c){return c*2}).filter(Boolean)};" * 12
    dump = " ".join(f"0x{rng.randrange(1 << 32):08x}" for _ in range(80))
    for noise in (LOG, blob, minified, dump):
        assert not worth_a_vector(noise), noise[:60]
    prose = "The canary deploy waits ten minutes before the retry loop gives up. " * 6
    code = "def load(path):\n    with open(path) as f:\n        return json.load(f)\n" * 4
    assert worth_a_vector(prose) and worth_a_vector(code) and worth_a_vector("ok")

    store = MemoryStore(tmp_path / "m.db", embedder=HashingEmbedder())
    try:
        sessions = sessions_of(store)
        sessions.save(conversation(1))
        sessions.embed_pending()
        assert sessions.pending_embeddings() == 0
        rows = list(store.conn.execute("SELECT text, embedding IS NULL FROM passages"))
        assert [t for t, empty in rows if empty] == [f"here is the log:\n{LOG}"]
        progress = vector_progress(store)
        assert progress is not None and progress.complete  # judged, so not pending
        hits = store.conn.execute(
            "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'answered'"
        ).fetchone()[0]
        assert hits == 1
    finally:
        store.close()


def test_model_runs_are_bounded_by_rows_and_attention_size() -> None:
    rng = random.Random(5)
    lengths = [rng.choice([3, 12, 40, 128, 256]) for _ in range(300)]
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    runs = list(_token_batches(order, lengths, 64))
    assert sorted(i for r in runs for i in r) == list(range(300))  # each text once
    for r in runs:
        width = max(lengths[i] for i in r)
        assert len(r) <= 64
        assert len(r) == 1 or len(r) * width * width <= BATCH_CELLS
    assert max(len(r) for r in runs) == 64  # short texts share a run
    assert all(len(r) <= 2 for r in runs if max(lengths[i] for i in r) == 256)
