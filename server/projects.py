"""Workspace folders as projects: one store, engine, editor state, fix tracker and injector
per folder, with a single worker thread that does all of a project's store work.

Imported in the background after ``initialize`` (it pulls in storage, numpy, the tokenizer).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from predictive.operations import (
    DEFAULT_PROFILES,
    Activity,
    AssembledContext,
    BranchChanged,
    BudgetConfig,
    ContextEngine,
    ContextRequest,
    EditorState,
    FixTracker,
)
from predictive.session import ProjectSession
from server import heap
from server.host import Host
from server.injection import Injector, Prepared, is_generated, is_injected_path
from server.settings import Settings
from storage import MemoryStore, StoreError
from storage.embeddings import ENV_MODEL_DIR, Embedder, embedder_from_env
from storage.paths import current_branch, default_db_path, git_root, project_key
from storage.sessions import sessions_of

if TYPE_CHECKING:
    from predictive.operations import Ingested
    from server.jobs import Jobs

log = logging.getLogger("living_memory.projects")


class ContextRequests(Protocol):
    """What a project asks of the context service: refresh its active file's context."""

    def request(
        self, project: Project, delay_ms: int | None = None, *, leading: bool = True
    ) -> None: ...


class ProjectHost(Host, Protocol):
    """The server as a project sees it: its jobs and the context service, besides the rest."""

    @property
    def jobs(self) -> Jobs: ...

    @property
    def context(self) -> ContextRequests | None: ...


WARMUP_PATH = ".living-memory/warm-up"


class Unavailable(Exception):
    """The project's store could not be opened (the message says why)."""


class Embedders:
    """One embedder per model directory, loaded on first use and shared by every store.

    ``LIVING_MEMORY_EMBEDDER=hashing`` swaps in the fast model-free embedder (tests, dry
    runs), as for the command line. A model that fails to load is not retried on every call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, Embedder] = {}
        self._failed: dict[str, Exception] = {}

    def factory(self, model_dir: str | None) -> Callable[[], Embedder]:
        key = model_dir or os.environ.get(ENV_MODEL_DIR) or ""

        def make() -> Embedder:
            with self._lock:
                if key in self._failed:
                    raise self._failed[key]
                if key not in self._loaded:
                    try:
                        self._loaded[key] = self._load(key or None)
                    except Exception as e:
                        self._failed[key] = e
                        raise
                return self._loaded[key]

        return make

    @staticmethod
    def _load(model_dir: str | None) -> Embedder:
        return embedder_from_env(model_dir)


def budget_config(s: Settings) -> BudgetConfig:
    profiles = dict(DEFAULT_PROFILES)
    for name, split in s.activity_profiles.items():
        profiles[Activity(name)] = split.as_tuple()
    return BudgetConfig(total=s.budget, shares=s.tier_split.as_tuple(), profiles=profiles)


def db_path_for(folder: Path, root: Path, s: Settings) -> Path:
    """``dataDirectory``/projects/<key>/memory.db, else the CLI's default for the folder."""
    if s.data_directory:
        base = Path(s.data_directory).expanduser()
        if not base.is_absolute():
            base = folder / base
        return base / "projects" / project_key(root) / "memory.db"
    return default_db_path(folder)


class SharedStores:
    """Folders of one repository share one database: open it once, close it last."""

    def __init__(self, embedders: Embedders) -> None:
        self.embedders = embedders
        self._lock = threading.Lock()
        self._open: dict[tuple[Path, str], list[Any]] = {}  # key → [store, users]

    def acquire(self, db: Path, model_dir: str | None) -> MemoryStore:
        key = (db.resolve() if db.exists() else db, model_dir or "")
        with self._lock:
            entry = self._open.get(key)
            if entry is None:
                db.parent.mkdir(parents=True, exist_ok=True)
                store = MemoryStore(db, embedder_factory=self.embedders.factory(model_dir))
                entry = self._open[key] = [store, 0]
            entry[1] += 1
            return entry[0]

    def release(self, store: MemoryStore) -> None:
        with self._lock:
            for key, entry in list(self._open.items()):
                if entry[0] is store:
                    entry[1] -= 1
                    if entry[1] <= 0:
                        del self._open[key]
                        store.close()
                    return


@dataclass(frozen=True)
class Announced:
    """A context written to the injection targets and announced to the client."""

    uri: str
    context_id: int
    result: AssembledContext


class Project:
    """One workspace folder."""

    def __init__(
        self,
        server: ProjectHost,
        uri: str,
        folder: Path,
        settings: Settings,
        stores: SharedStores,
    ) -> None:
        self.server = server
        self.uri = uri
        self.folder = folder
        self.git_root = git_root(folder)
        self.root = self.git_root or folder.resolve()
        self.settings = settings
        self.stores = stores
        self.name = folder.name or str(folder)
        self.state = EditorState(root=str(self.root), documents=self.document_text)
        self.fixes = FixTracker()
        self.injector = self._injector(settings)
        self.worker = ThreadPoolExecutor(1, thread_name_prefix=f"lm-store-{self.name}")
        self.job_worker = ThreadPoolExecutor(1, thread_name_prefix=f"lm-jobs-{self.name}")
        # writes the context files: a write the file system stalls delays no context
        self.writer = ThreadPoolExecutor(1, thread_name_prefix=f"lm-files-{self.name}")
        self._writes = 0  # context files asked to be written; only the latest is
        self.session: ProjectSession | None = None
        self.error: str | None = None
        self.db_path: Path | None = None
        self.branch_from_client = False  # set once the client reports the branch itself
        self.seq = 0  # bumped by every context request; older work is stale
        self.last_request = float("-inf")  # monotonic time of the last context request
        # contexts served and not yet logged: they are logged once the editor is quiet
        # (:meth:`record_served`), so that logging never delays the next file's context
        self.unrecorded: deque[AssembledContext] = deque()
        self._checkpoint_asked = False  # a checkpoint waits on the job thread
        self.uris: dict[str, str] = {}  # relative path → the client's URI for it
        # the latest context written to the injection targets and announced (assembleContext's
        # answer for the active file: one context everywhere)
        self.announced: Announced | None = None
        self._ready = asyncio.Event()
        self.closed = False

    @property
    def branch(self) -> str | None:
        """The checked-out branch, as the editor state knows it (None: detached HEAD)."""
        return self.state.branch

    @property
    def store(self) -> MemoryStore | None:
        return self.session.store if self.session is not None else None

    @property
    def engine(self) -> ContextEngine | None:
        return self.session.engine if self.session is not None else None

    def record_served(self, limit: int | None = None) -> int:
        """On the worker: log what the contexts served since the last call held (the oldest
        ``limit`` of them, if given), then hand the heap their assembly freed back to the
        system; how many contexts were logged."""
        engine = self.engine
        done = 0
        with self._checkpoint_later():
            while self.unrecorded and (limit is None or done < limit):
                result = self.unrecorded.popleft()
                if engine is not None:
                    engine.record_retrieval(result)
                done += 1
        heap.give_back()
        return done

    @contextmanager
    def _checkpoint_later(self) -> Iterator[None]:
        """Writes on the worker whose checkpoint is left to the job thread: the next file's
        context never waits for it."""
        store = self.store
        if store is None:
            yield
            return
        with store.checkpoint_later():
            yield
        if not self._checkpoint_asked:
            self._checkpoint_asked = True
            with suppress(RuntimeError):  # the project is closing
                self.job_worker.submit(self._checkpoint, store)

    def _checkpoint(self, store: MemoryStore) -> None:
        """On the job thread: copy the write-ahead log into the database."""
        self._checkpoint_asked = False
        try:
            store.checkpoint()
        except Exception:  # a closed store or a busy database: the next one will do
            log.debug("%s: checkpoint failed", self.name, exc_info=True)

    def write_files(self, prepared: Prepared) -> None:
        """Write a context to the injection targets on the writer thread, after those asked
        before it; one that a newer context follows by then is skipped."""
        self._writes += 1
        with suppress(RuntimeError):  # the project is closing
            self.writer.submit(self._write_files, prepared, self._writes)

    def _write_files(self, prepared: Prepared, n: int) -> None:
        if n != self._writes:
            return
        try:
            written = self.injector.write(prepared)
        except Exception:
            log.warning("%s: writing the context files failed", self.name, exc_info=True)
            return
        if written.written:
            log.debug("%s: wrote %s", self.name, ", ".join(map(str, written.written)))

    def _injector(self, s: Settings) -> Injector:
        return Injector(
            self.folder,
            s.injection_targets,
            git_root=self.git_root,
            git_exclude=s.git_exclude_injected,
        )

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self, settings: Settings) -> None:
        """Take the folder's settings and open the store in the background."""
        self.settings = settings
        self.injector = self._injector(settings)
        self.server.spawn(self.open(), name=f"open {self.name}")

    async def open(self) -> None:
        """Open the store and engine in the worker; then warm the model and vector index."""
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self.worker, self._open_sync)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}" if not isinstance(e, StoreError) else str(e)
            log.error("%s: cannot open the memory store: %s", self.name, self.error, exc_info=e)
            self.server.show_once(
                f"Living Memory: the memory of {self.name} cannot be opened ({self.error}); "
                "its context and commands are off until this is fixed.",
                types.MessageType.Error,
            )
        finally:
            self._ready.set()
        if self.store is not None:
            await loop.run_in_executor(self.worker, self._warm)
            self.server.spawn(self.background(), name=f"prepare {self.name}")

    def _open_sync(self) -> None:
        self.db_path = db_path_for(self.folder, self.root, self.settings)
        store = self.stores.acquire(self.db_path, self.settings.model_directory)
        self.session = ProjectSession(
            self.root,
            store,
            budget=budget_config(self.settings),
            owns_store=False,
            state=self.state,
        )
        if not self.branch_from_client:
            self.state.apply(BranchChanged(current_branch(self.root)))
        log.info("%s: memory at %s (branch %s)", self.name, self.db_path, self.branch)

    def _warm(self) -> None:
        """Load the embedding model and the vector index before the first request needs them,
        then assemble once (tokenizer, pools, topic index) so the first real file is fast."""
        assert self.store is not None
        try:
            emb = self.store.embedder
            self.store.vectors()
            log.info("%s: embedding model %s ready", self.name, emb.model_id if emb else None)
        except Exception as e:
            log.warning("%s: semantic search is off: %s", self.name, e, exc_info=True)
            loop = self.server.loop
            if loop is not None:
                loop.call_soon_threadsafe(
                    self.server.show_once,
                    f"Living Memory: the embedding model could not be loaded ({e}); "
                    "search falls back to keywords.",
                )
        try:
            if self.engine is not None:
                self.engine.assemble(
                    ContextRequest(path=WARMUP_PATH, text="", root=str(self.root)), record=False
                )
        except Exception:
            log.warning("%s: warming up the engine failed", self.name, exc_info=True)
        # what is loaded now stays for the life of the process: out of the collector's way
        heap.settle()

    async def background(self) -> None:
        """What a store needs once after opening: the first ingestion of its project, vectors,
        then the disclosure levels."""
        if self.settings.ingest_on_first_open:
            await self.first_ingest()
        await self.embed_pending()
        if not self.closed and not self.server.shutting_down:
            await self.backfill_levels()

    async def backfill_levels(self) -> None:
        """Fill the summary / compressed / index levels the store lacks, as a cancellable
        job: the engine would otherwise compute them on every request."""
        session = self.session
        if session is None:
            return
        try:
            missing = await self.call(session.store.levels.count_lacking)
        except StoreError as e:
            log.warning("%s: counting the memories without levels failed: %s", self.name, e)
            return
        if not missing:
            await self.call(session.fill_levels)  # short forms of an older version, if any
            return
        n = await self._background_job(
            f"Living Memory: summarising {missing} memories ({self.name})",
            lambda job: session.fill_levels(job.progress, job.check),
            lambda n: f"summarised {n}",
            "filling levels",
        )
        if n is not None:
            log.info("%s: filled the levels of %d memories", self.name, n)

    async def first_ingest(self) -> None:
        """Learn git history, decision records and rule files the first time the store meets
        the project, as a cancellable job; then refresh the active file's context."""
        session = self.session
        if session is None:
            return

        def work(job: Any) -> Ingested | None:
            options = {
                **self.settings.commit_options,
                "shared_folder": self.settings.shared_folder,
            }
            return session.first_run(job.progress, options, learn=False)

        try:
            needed = await self.call(session.needs_first_run)
        except StoreError as e:
            log.warning("%s: first ingestion failed: %s", self.name, e)
            return
        if not needed:
            return
        summary = await self._background_job(
            f"Living Memory: learning {self.name}",
            work,
            lambda s: f"learned {s.added if s else 0} memories",
            "first ingestion",
        )
        if summary:
            log.info("%s: first ingestion added %d memories", self.name, summary.added)
            learned = summary.added > 0
            if learned and self.server.context is not None and self.state.request() is not None:
                self.server.context.request(self)

    async def embed_pending(self) -> None:
        """Vectors for what lacks one — memories, then conversation passages — as a
        cancellable job (the contradiction scan waiting for them runs between the two)."""
        session = self.session
        if session is None:
            return
        store = session.store
        memories, passages = await self.call(
            lambda: (store.embeddings.pending(), sessions_of(store).pending_embeddings())
        )
        if not memories and not passages:
            return
        what = f"{memories} memories" + (f" and {passages:,} passages" if passages else "")
        batch = self.settings.embed_batch_size

        def work(job: Any) -> Any:
            return session.learn(job.progress, batch=batch)

        learned = await self._background_job(
            f"Living Memory: embedding {what} ({self.name})",
            work,
            lambda n: (
                f"embedded {n.memories}" + (f", {n.passages:,} passages" if n.passages else "")
            ),
            "embedding",
        )
        if learned is not None:
            log.info(
                "%s: embedded %d memories, %d passages",
                self.name,
                learned.memories,
                learned.passages,
            )

    async def _background_job(
        self, title: str, work: Callable[[Any], Any], done: Callable[[Any], str], what: str
    ) -> Any:
        """Run ``work`` as a cancellable job with progress; its result, or None when it was
        cancelled or the store failed (logged, never raised: background work must not kill
        the server)."""
        from server.jobs import JobCancelled

        try:
            return await self.server.jobs.run(title, work, self.job_worker, done_message=done)
        except JobCancelled as e:
            log.info("%s", e)
        except StoreError as e:
            log.warning("%s: %s failed: %s", self.name, what, e)
        return None

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the project's worker thread, once the store is open."""
        await self._ready.wait()
        if self.store is None:
            raise Unavailable(f"the memory of {self.name} is unavailable: {self.error}")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.worker, fn, *args)

    async def reconfigure(self, s: Settings) -> bool:
        """Apply new settings; returns True when the store had to be reopened."""
        old = self.settings
        self.settings = s
        before, self.injector = self.injector, self._injector(s)  # writes from now on use it
        if set(old.injection_targets) - set(s.injection_targets):
            dropped = sorted(set(old.injection_targets) - set(s.injection_targets))
            await asyncio.get_running_loop().run_in_executor(self.writer, before.remove, dropped)
        reopen = (
            db_path_for(self.folder, self.root, s) != self.db_path
            or s.model_directory != old.model_directory
        )
        if reopen:
            await self._close_store()
            self._ready = asyncio.Event()
            self.session, self.error = None, None
            await self.open()
            return True
        if self.session is not None and (
            s.budget != old.budget
            or s.tier_split != old.tier_split
            or s.activity_profiles != old.activity_profiles
        ):
            self.session.configure(budget_config(s))
        return False

    async def _close_store(self) -> None:
        session = self.session
        if session is None:
            return
        loop = asyncio.get_running_loop()
        try:  # what was served and not yet logged is logged now
            await loop.run_in_executor(self.worker, self.record_served)
        except Exception:
            log.warning("%s: logging what was served failed", self.name, exc_info=True)
        try:
            session.close()  # its checker; the store is shared and released here
            await loop.run_in_executor(self.worker, self.stores.release, session.store)
        except Exception:
            log.warning("%s: closing the store failed", self.name, exc_info=True)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self._close_store()
        self.worker.shutdown(wait=False, cancel_futures=True)
        self.job_worker.shutdown(wait=False, cancel_futures=True)
        self.writer.shutdown(wait=False)  # the last context asked for is still written

    # ---- paths -----------------------------------------------------------------------------

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except (ValueError, OSError):
            return path.as_posix()

    def document_text(self, rel: str) -> str | None:
        """The editor's text of an open document of this project (None when it is not open)."""
        uri = self.uris.get(rel)
        return None if uri is None else open_text(self.server, uri)

    def contains(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self.folder.resolve())
            return True
        except (ValueError, OSError):
            return False


class Registry:
    """The projects of the open workspace folders; maps documents to them."""

    def __init__(self, server: ProjectHost) -> None:
        self.server = server
        self.embedders = Embedders()
        self.stores = SharedStores(self.embedders)
        self.projects: dict[str, Project] = {}  # folder path → project
        self.implicit_allowed = True  # no folders: a file's git root becomes its project
        self.active: Project | None = None

    def settings_for(self, project_uri: str | None) -> Settings:
        per = getattr(self.server, "folder_settings", {})
        return per.get(project_uri, self.server.settings) if project_uri else self.server.settings

    def add_folder(self, uri: str, *, start: bool = True) -> Project | None:
        """The project of a workspace folder (``start``: open its store now; else the caller
        calls :meth:`Project.start` once the folder's settings are known)."""
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path is None:
            log.info("ignoring workspace folder %s (not a file: URI)", uri)
            return None
        folder = Path(path)
        key = str(folder.resolve())
        if key in self.projects:
            return self.projects[key]
        self.implicit_allowed = False
        project = Project(self.server, uri, folder, self.settings_for(uri), self.stores)
        self.projects[key] = project
        if start:
            project.start(project.settings)
        return project

    async def remove_folder(self, uri: str) -> None:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path is None:
            return
        project = self.projects.pop(str(Path(path).resolve()), None)
        if project is not None:
            if self.active is project:
                self.active = None
            await project.close()

    def locate(self, uri: Any) -> tuple[Project, Path, str] | None:
        """The project, absolute path and relative path of a document URI — or None for
        non-file URIs, files outside every folder, and the tool's own injected files."""
        if not isinstance(uri, str) or not uri.startswith("file:"):
            return None
        fs = to_fs_path(uri)
        if not fs:
            return None
        path = Path(fs)
        best: Project | None = None
        for p in self.projects.values():
            if p.contains(path) and (best is None or len(str(p.folder)) > len(str(best.folder))):
                best = p
        if best is None and self.implicit_allowed:
            best = self._implicit(path)
        if best is None or is_injected_path(best.folder, path):
            return None
        rel = best.relative(path)
        best.uris[rel] = uri
        return best, path, rel

    def _implicit(self, path: Path) -> Project | None:
        """A client without workspace folders: the file's repository is the project."""
        start = path.parent
        root = git_root(start) if start.exists() else None
        if root is None:
            return None
        from pygls.uris import from_fs_path

        uri = from_fs_path(str(root)) or ""
        key = str(root.resolve())
        if key not in self.projects:
            project = Project(self.server, uri, root, self.server.settings, self.stores)
            self.projects[key] = project
            project.start(project.settings)
        return self.projects[key]

    def by_folder(self, folder: str | None) -> Project | None:
        """A project by folder URI or path (None: the active one, else the first)."""
        if folder:
            path = to_fs_path(folder) if folder.startswith("file:") else folder
            if path:
                key = str(Path(path).resolve())
                if key in self.projects:
                    return self.projects[key]
                for p in self.projects.values():
                    if p.contains(Path(path)):
                        return p
            return None
        if self.active is not None and not self.active.closed:
            return self.active
        return next(iter(self.projects.values()), None)

    async def close(self) -> None:
        for p in list(self.projects.values()):
            await p.close()


def open_text(server: Host, uri: str) -> str | None:
    """The editor's copy of a document when it is open (pygls' workspace; reading it from the
    project's worker takes the text as it is at that moment: the workspace replaces a
    document's text whole on every change)."""
    doc = server.workspace.text_documents.get(unquote(uri))
    return doc.source if doc is not None else None


def disk_text(path: Path) -> str | None:
    """A file's text from disk, unless it is huge, binary or one of the tool's own files."""
    try:
        if path.stat().st_size > 1_000_000:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192] or is_generated(data):
        return None
    return data.decode("utf-8", errors="replace")
