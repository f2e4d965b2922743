"""Long jobs with ``$/progress`` and cancellation: ``livingMemory.reindex`` (embed what lacks a
vector, rebuild the keyword and vector indexes), ``livingMemory.ingest`` (git, decision records,
rule files, chats: :func:`predictive.ingest.run`) and ``livingMemory.consolidate``
(:func:`predictive.consolidate.run`). Both are called as ``run(store, *, root, options,
progress)``, where ``progress(done, total, message=None)`` raises when the client cancelled,
and answer a JSON-ready dict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from server.commands import command
from server.convert import Invalid

if TYPE_CHECKING:
    from server.app import LivingMemoryServer
    from server.jobs import Job

Source = Literal["git", "adr", "rules", "chats", "all"]


Tool = Literal["cursor", "specstory", "copilot", "claude", "codex"]


@dataclass(frozen=True)
class IngestArgs:
    sources: tuple[Source, ...] = ("all",)
    since: str | None = None  # ISO date/time, epoch seconds or an age (30d)
    dry_run: bool = False
    tools: tuple[Tool, ...] | None = None  # chat tools (default: all)
    paths: tuple[str, ...] = ()  # read these files or folders instead of the usual places
    all_workspaces: bool = False  # chats of every workspace, not only this folder's
    include_merges: bool | None = None  # default: the livingMemory.ingestMergeCommits setting
    include_bots: bool | None = None  # default: livingMemory.ingestBotCommits
    include_trivial: bool | None = None  # default: livingMemory.ingestTrivialCommits
    folder: str | None = None


@dataclass(frozen=True)
class ConsolidateArgs:
    dry_run: bool = False
    folder: str | None = None


@dataclass(frozen=True)
class ReindexArgs:
    batch_size: int | None = None  # default: the livingMemory.embedBatchSize setting
    folder: str | None = None

    def __post_init__(self) -> None:
        if self.batch_size is not None and not 1 <= self.batch_size <= 4096:
            raise Invalid("argument 'batchSize' must be between 1 and 4096")


def setup(server: LivingMemoryServer) -> None:
    from server.app import COMMAND_PARAMS

    def request_context() -> tuple[Any, Any]:
        params = COMMAND_PARAMS.get()
        token = params.work_done_token if params is not None else None
        return server.protocol.msg_id, token

    async def job(title: str, run: Callable[..., Any], args: Any) -> Any:
        """``run(store, root=, options=, progress=)`` as a cancellable job with progress."""
        project = await server.project_for(folder=args.folder)
        await project.call(lambda: None)  # the store is open
        request_id, token = request_context()
        options = {k: v for k, v in asdict(args).items() if k != "folder"}
        for key, default in project.settings.commit_options.items():
            if key in options and options[key] is None:
                options[key] = default

        def work(job: Job) -> Any:
            job.progress(0, 1, "starting")
            return run(project.store, root=project.root, options=options, progress=job.progress)

        result = await server.jobs.run(
            title, work, project.job_worker, request_id=request_id, token=token
        )
        learned = isinstance(result, dict) and bool(result.get("added"))
        if learned and server.context is not None and project.state.request() is not None:
            server.context.request(project)  # what was learned may belong in the context
        return result

    @command(server, "ingest", IngestArgs)
    async def ingest(a: IngestArgs) -> Any:
        from predictive.ingest import run

        return await job("Living Memory: ingest", run, a)

    @command(server, "consolidate", ConsolidateArgs)
    async def consolidate(a: ConsolidateArgs) -> Any:
        from predictive.consolidate import run

        return await job("Living Memory: consolidate", run, a)

    @command(server, "reindex", ReindexArgs)
    async def reindex(a: ReindexArgs) -> Any:
        project = await server.project_for(folder=a.folder)
        await project.call(lambda: None)
        request_id, token = request_context()
        batch = a.batch_size or project.settings.embed_batch_size
        store = project.store
        assert store is not None

        def work(job: Job) -> dict[str, Any]:
            pending = store.embeddings.pending()
            embedded = store.embeddings.embed_pending(batch=batch, progress=job.progress)
            job.check()
            job.progress(pending, max(pending, 1), "rebuilding indexes")
            result = store.reindex(
                fts_progress=lambda done, total: job.progress(done, total, "keyword index")
            )
            return {
                "embedded": embedded,
                "keywordRows": result["fts_rows"],
                "vectors": result["vectors"],
            }

        return await server.jobs.run(
            "Living Memory: reindex",
            work,
            project.job_worker,
            request_id=request_id,
            token=token,
            done_message=lambda r: f"{r['embedded']} embedded, {r['vectors']} vectors",
        )
