"""Text first, meaning behind: an ingestion is searchable by keyword before its vectors are in,
search and context say how far the vectors have come, and the vectors that follow are bounded
runs that skip what has no meaning to place."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import numpy as np
import pytest

from predictive.ingest import learn_vectors, run
from predictive.operations import SearchArgs
from predictive.operations.search import search
from predictive.session import ProjectSession
from storage import MemoryStore, NewMemory
from storage.embeddings import BATCH_CELLS, HashingEmbedder, _token_batches
from storage.passages import fences_at, model_text, said, worth_a_vector
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


class RecordingEmbedder(HashingEmbedder):
    """The test embedder, keeping every text it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


TEST_RUN = (
    "\n".join(f"tests/unit/test_engine_{i}.py::test_search_{i} PASSED" for i in range(40))
    + "\n"
    + "\n".join(f"src/engines/e{i}.py:{i + 3}:1: F401 `os` imported but unused" for i in range(30))
)


def chat(*messages: tuple[str, str], n: int = 1) -> Conversation:
    return Conversation(
        tool="claude",
        external_id=f"t{n}",
        title=f"Tests {n}",
        messages=tuple(
            ChatMessage(i, role, text, at=1000.0 + i) for i, (role, text) in enumerate(messages)
        ),
    )


def test_a_passage_of_tool_output_gets_no_vector_and_stays_searchable(tmp_path: Path) -> None:
    answer = (
        "Let me run the whole suite to see where the engines stand.\n\n```bash\npytest -q\n"
        f"```\n\n```\n{TEST_RUN}\n```\n\nThe suite passes; the unused imports are ruff's."
    )
    emb = RecordingEmbedder()
    store = MemoryStore(tmp_path / "m.db", embedder=emb)
    try:
        sessions = sessions_of(store)
        sessions.save(chat(("user", "run the tests please"), ("assistant", answer)))
        sessions.embed_pending()
        assert sessions.pending_embeddings() == 0
        rows = list(store.conn.execute("SELECT text, embedding FROM passages ORDER BY id"))
        assert len(rows) >= 4  # the output runs over passages of its own
        output_only = [t for t, v in rows if v is None]
        assert output_only and all("PASSED" in t or "F401" in t for t in output_only)
        # the passages inside the block after the first are known to be output too
        assert any(not t.startswith("```") and "```" not in t for t in output_only)
        # the model read every other passage, whole, and none of the output-only ones
        assert sorted(emb.seen) == sorted({t for t, v in rows if v is not None})
        assert any("Let me run the whole suite" in t for t in emb.seen)
        assert any("pytest -q" in t for t in emb.seen)
        assert any("The suite passes" in t for t in emb.seen)
        progress = vector_progress(store)
        assert progress is not None and progress.complete
        for word in ("test_search_17", "imported"):
            hits = store.conn.execute(
                "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (word,)
            ).fetchone()[0]
            assert hits >= 1, word
    finally:
        store.close()


def test_the_model_reads_a_passage_whole_unless_it_is_only_tool_output() -> None:
    mixed = (
        "The failure comes from the pinned client:\n"
        '```\nTraceback (most recent call last):\n  File "api.py", line 3\n'
        "ImportError: cannot import name 'Client'\n```\n"
        "tests/test_api.py:12: error\n"
        "2025-02-25 02:37:01,644 - api - ERROR - engine failed\n"
        "| engine | status |\n"
        "So we pin httpx below 0.28.\n"
        "```python\nimport httpx\n```"
    )
    assert said(mixed) == (
        "The failure comes from the pinned client:\nSo we pin httpx below 0.28.\nimport httpx"
    )
    assert model_text(mixed) == mixed  # someone said something: the model reads it all
    assert model_text("```python\nimport httpx\n```") == "```python\nimport httpx\n```"
    assert model_text(f"```\n{TEST_RUN}\n```") is None
    assert model_text(TEST_RUN) is None  # lines of tool output, unfenced
    assert model_text("Привіт, як справи?") == "Привіт, як справи?"  # words in any script
    assert model_text("```\nПривіт\n```\n42 -> 43") is None
    # a passage that starts inside a block of output is read as such
    tail = "engine 4 answered\n```\nThat was the slow one."
    assert said(tail, (0, "```", "")) == "That was the slow one."
    assert model_text(tail, (0, "```", "")) == tail
    assert model_text("engine 4 answered\nengine 5 answered\n```", (0, "```", "")) is None


def test_fences_are_followed_across_a_message() -> None:
    message = (
        "Here is the change:\n```diff\n- old\n+ new\n  ```\n  inside the diff\n```\n"
        "Now the output:\n```text\nline one\nline two\n```\nDone."
    )
    offsets = [message.index(x) for x in ("+ new", "inside the diff", "Now", "line two", "Done")]
    fences = fences_at(message, offsets)
    # an indented fence inside a diff does not close it
    assert [f and f[2] for f in fences] == ["diff", "diff", None, "text", None]


def test_a_text_the_model_would_read_twice_is_embedded_once(tmp_path: Path) -> None:
    retry = "Please retry the deploy of the canary with the queue drained first."
    emb = RecordingEmbedder()
    store = MemoryStore(tmp_path / "m.db", embedder=emb)
    try:
        sessions = sessions_of(store)
        sessions.save(chat(("user", retry), ("assistant", "Done."), ("user", retry), n=1))
        sessions.save(chat(("user", retry), n=2))
        sessions.embed_pending()
        assert emb.seen.count(retry) == 1
        vectors = [
            v
            for (v,) in store.conn.execute(
                "SELECT embedding FROM passages WHERE text = ?", (retry,)
            )
        ]
        assert len(vectors) == 3 and len(set(vectors)) == 1 and vectors[0] is not None
    finally:
        store.close()
