"""A project session: how every front door finds its project, opens its memory and gets it
ready.

The command line, the language server, the MCP server and agent hooks each hold one session per
project: the project's root, its store (with the one embedder it loads lazily), a long-lived
context engine, and the preparation a store needs before its answers are whole — the first
ingestion of a project it has never met, vectors for what lacks one, the disclosure levels.
Each step is written here once; the front doors only choose the thread it runs on and how its
progress is shown. A session is used from one thread at a time per store connection (the store
keeps a connection per thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from predictive.budget import BudgetConfig
from predictive.compress import fill_levels, reset_stale_levels
from predictive.learning import Learning
from predictive.operations.errors import ArgumentError
from predictive.retrieval import find
from predictive.staleness import Staleness
from predictive.state import EditorState
from predictive.tokens import count_tokens
from predictive.upkeep_results import Ingested
from storage import MemoryStore
from storage.embeddings import Embedder, embedder_from_env
from storage.paths import default_db_path, git_root

if TYPE_CHECKING:
    from predictive.engine import AssembledContext, ContextEngine
    from predictive.ingest import Learned
    from predictive.operations.prompt import BriefArgs, PromptAnswer, PromptArgs
    from predictive.operations.requests import ContextArgs

Progress = Callable[..., None]  # (done, total, message=None); raising cancels the step
Check = Callable[[], None]  # raises to cancel between pages
LEVELS_PAGE = 500  # memories per transaction when filling levels
WARM_QUERY = "what this project decided and why"


def find_root(given: Path | str | None = None, *, start: Path | None = None) -> Path:
    """The project a front door serves: the repository holding ``given`` (a folder that must
    exist; the folder itself outside a repository); without one, the repository holding
    ``start`` (a file's folder; default the working directory), else the working directory."""
    if given is not None:
        folder = Path(given).expanduser()
        if not folder.is_dir():
            raise ArgumentError("root", f"{folder} is not a folder")
        return git_root(folder) or folder.resolve()
    here = start if start is not None and start.is_dir() else Path.cwd()
    return git_root(here) or Path.cwd().resolve()


@dataclass(frozen=True)
class Prepared:
    """What :meth:`ProjectSession.prepare` did."""

    first_run: Ingested | None  # what the first ingestion did; None when it was not needed
    embedded: int
    levels: int
    passages: int = 0  # conversation passages and summaries embedded


class ProjectSession:
    """One project's root, store, engine and preparation."""

    def __init__(
        self,
        root: Path,
        store: MemoryStore,
        *,
        budget: BudgetConfig | None = None,
        owns_store: bool = True,
        learning: Learning | None = None,
        state: EditorState | None = None,
    ) -> None:
        self.root = root
        self.store = store
        self.learning = learning or Learning()
        self.state = state or EditorState(root=str(root))
        self._budget = budget
        self._owns_store = owns_store
        self._engine: ContextEngine | None = None
        self._staleness: Staleness | None = None
        self._lock = threading.Lock()
        self._model_ran = False  # the embedder's first run is behind it

    @classmethod
    def open(
        cls,
        root: Path,
        db: Path | None = None,
        *,
        model_dir: Path | str | None = None,
        embedder: Callable[[], Embedder] | None = None,
        budget: BudgetConfig | None = None,
        learning: Learning | None = None,
    ) -> ProjectSession:
        """A session over the store at ``db`` (default: the project's own database), whose
        embedder is loaded on first use from ``model_dir`` (or ``embedder``)."""
        path = db or default_db_path(root)
        factory = embedder or (lambda: embedder_from_env(model_dir))
        store = MemoryStore(path, embedder_factory=factory)
        return cls(root, store, budget=budget, learning=learning)

    @property
    def engine(self) -> ContextEngine:
        """The long-lived context engine (its caches make a repeated context cheap)."""
        from predictive.engine import ContextEngine  # a search never needs it

        with self._lock:
            if self._engine is None:
                self._engine = ContextEngine(
                    self.store, budget=self._budget, root=self.root, staleness=self._staleness
                )
                self._staleness = self._engine.staleness  # one checker for the session
            return self._engine

    def configure(self, budget: BudgetConfig | None) -> None:
        """A new budget: the next context is assembled by a fresh engine."""
        with self._lock:
            self._budget = budget
            self._engine = None

    def load_vectors(self) -> None:
        """Load the embedder (with its first run) and the vector index now: most of their
        loading releases the GIL, so another thread's work goes on beside it."""
        store = self.store
        embedder = store.embedder
        if store.vectors() is not None and embedder is not None and not self._model_ran:
            embedder.embed([WARM_QUERY])
            self._model_ran = True

    def warm(self, *, engine: bool = True, search: bool = True) -> None:
        """Load now what the first answer would otherwise wait for: the token counter, the
        embedder and the vector index (:meth:`load_vectors`), with ``search`` the calling thread's
        connection to the store (by one search that records nothing) and, with ``engine``, the
        context engine. An answer that needs a part another thread is still loading waits for
        it."""
        count_tokens(WARM_QUERY)
        self.load_vectors()
        if search:
            self.warm_search()
        if engine:
            self.engine  # noqa: B018

    def warm_search(self) -> None:
        """Open the calling thread's connection to the store and warm its caches, by one search
        that records nothing."""
        find(self.store, WARM_QUERY)

    # ---- preparation -----------------------------------------------------------------------

    def first_run(
        self,
        progress: Progress | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        learn: bool = True,
    ) -> Ingested | None:
        """Learn git history, decision records and rule files the first time the store meets
        the project; what it did, or None when that was done before. Without ``learn`` the
        vectors are left for :meth:`learn`."""
        from predictive.ingest import first_run

        return first_run(
            self.store, self.root, progress=progress, options=dict(options or {}), learn=learn
        )

    def needs_first_run(self) -> bool:
        from predictive.ingest import needs_first_run

        return needs_first_run(self.store)

    def embed_pending(self, progress: Progress | None = None, *, batch: int | None = None) -> int:
        """Embed the memories that lack a vector from the current model; how many."""
        if not self.store.embeddings.pending():
            return 0
        if batch is None:
            return self.store.embeddings.embed_pending(progress=progress)
        return self.store.embeddings.embed_pending(batch=batch, progress=progress)

    def embed_messages(self, progress: Progress | None = None) -> int:
        """Embed the conversation passages and summaries that lack a vector; how many."""
        from storage.sessions import sessions_of

        sessions = sessions_of(self.store)
        if not sessions.pending_embeddings():
            return 0
        return sessions.embed_pending(progress=progress)

    def fill_levels(self, progress: Progress | None = None, check: Check | None = None) -> int:
        """Fill the summary, compressed and index levels the store lacks (deterministic), a
        page per transaction; without them the engine computes them on every request."""
        reset_stale_levels(self.store)  # short forms of an older compressor are made again
        missing = self.store.levels.count_lacking()
        done = last = 0
        while missing:
            if check is not None:
                check()
            page = self.store.levels.lacking(after_id=last, limit=LEVELS_PAGE)
            if not page:
                break
            last = page[-1].id  # a memory that cannot be filled is not retried forever
            filled = {m.id: lv for m in page if (lv := fill_levels(m))}
            if filled:
                self.store.levels.set(filled)
            done += len(page)
            if progress is not None:
                progress(done, max(done, missing))
        return done

    def has_learning_to_do(self) -> bool:
        """Whether a memory or a passage lacks its vector or the contradiction scan is behind,
        told by a few queries (:meth:`learn` first imports the ingestion, ≈ 60 ms of CPU at
        every start of a learned store)."""
        from storage.conflict_pairs import scan_behind
        from storage.sessions import sessions_of

        store = self.store
        return bool(
            store.embeddings.pending()
            or sessions_of(store).pending_embeddings()
            or scan_behind(store)
        )

    def learn(self, progress: Progress | None = None, *, batch: int | None = None) -> Learned:
        """Vectors for what lacks one (memories, then the contradiction scan that waits for
        them, then conversation passages), a small transaction at a time, taking up what an
        earlier process left; ``progress`` may raise to stop between batches."""
        from predictive.ingest import LEARN_BATCH, learn_vectors

        return learn_vectors(self.store, progress=progress, batch=batch or LEARN_BATCH)

    def prepare(
        self,
        *,
        ingest: bool = True,
        options: Mapping[str, Any] | None = None,
        check: Check | None = None,
    ) -> Prepared:
        """Everything a store needs once after opening, in order, with its progress kept in
        :attr:`learning` until the vectors are in (answers given meanwhile say so): the text
        of a first ingestion is searchable by keyword before its vectors are computed."""
        self.learning.start()
        try:
            summary = None
            if ingest and self.needs_first_run():
                from predictive.ingest import first_run

                summary = first_run(
                    self.store,
                    self.root,
                    progress=self.learning.ingest_progress,
                    options=dict(options or {}),
                    learn=False,
                )

            def report(done: int, total: int, message: str | None = None) -> None:
                if check is not None:
                    check()
                self.learning.learning_progress(done, total, message)

            learned = self.learn(report) if self.has_learning_to_do() else None
            self.learning.finish()  # missing levels are computed on request meanwhile
            levels = self.fill_levels(check=check)
        finally:
            self.learning.finish()
        if learned is None:  # nothing was missing
            return Prepared(summary, 0, levels)
        return Prepared(summary, learned.memories, levels, learned.passages)

    # ---- operations ------------------------------------------------------------------------

    def context(self, a: ContextArgs, *, record: bool = True) -> AssembledContext:
        """The context for a file of this project, by the session's engine, with what the
        editor shows of it (:attr:`state`) unless the request says otherwise."""
        from predictive.operations.context import context_for_file

        return context_for_file(self.store, a, self.root, self.engine, self.state, record=record)

    def answer_prompt(self, a: PromptArgs) -> PromptAnswer:
        """The memories that answer a prompt an agent was given (its hooks ask)."""
        from predictive.operations.prompt import answer_prompt

        return answer_prompt(self.store, self.root, a)

    def brief(self, a: BriefArgs) -> PromptAnswer:
        """The project brief an agent gets when a session starts."""
        from predictive.operations.prompt import project_brief

        return project_brief(self.store, a)

    def close(self) -> None:
        """Stop the citation checker; close the store (and save its vector index) when the
        session opened it."""
        if self._staleness is not None:
            self._staleness.close()
        if self._owns_store:
            self.store.close()
