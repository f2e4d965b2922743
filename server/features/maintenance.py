"""Long jobs with ``$/progress`` and cancellation: ``livingMemory.reindex`` (embed what lacks a
vector, rebuild the keyword and vector indexes), ``livingMemory.ingest`` (git, decision records,
rule files, chats) and ``livingMemory.consolidate``: the operations of
:mod:`predictive.operations.upkeep`, whose ``progress(done, total, message=None)`` raises when
the client cancelled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from predictive import operations as ops
from predictive.operations import ConsolidateArgs, IngestArgs, ReindexArgs
from server.commands import command
from server.convert import to_wire
from server.host import COMMAND_PARAMS

if TYPE_CHECKING:
    from server.features.host import Server
    from server.jobs import Job


def setup(server: Server) -> None:
    def request_context() -> tuple[Any, Any]:
        params = COMMAND_PARAMS.get()
        token = params.work_done_token if params is not None else None
        return server.protocol.msg_id, token

    async def job(title: str, run: Callable[[Any, Job], Any], args: Any) -> Any:
        """``run(project, job)`` as a cancellable job with progress; its result in wire form."""
        project = await server.project_for(folder=args.folder)
        await project.call(lambda: None)  # the store is open
        request_id, token = request_context()

        def work(job: Job) -> Any:
            job.progress(0, 1, "starting")
            return to_wire(run(project, job))

        result = await server.jobs.run(
            title, work, project.job_worker, request_id=request_id, token=token
        )
        learned = isinstance(result, dict) and bool(result.get("added"))
        if learned and server.context is not None and project.state.request() is not None:
            server.context.request(project)  # what was learned may belong in the context
        return result

    @command(server, "ingest", IngestArgs)
    async def ingest(a: IngestArgs) -> Any:
        def run(project: Any, job: Job) -> Any:
            defaults = {
                **project.settings.commit_options,
                "shared_folder": project.settings.shared_folder,
            }
            return ops.ingest(project.store, a, project.root, job.progress, defaults)

        return await job("Living Memory: ingest", run, a)

    @command(server, "consolidate", ConsolidateArgs)
    async def consolidate(a: ConsolidateArgs) -> Any:
        def run(project: Any, job: Job) -> Any:
            return ops.consolidate(project.store, a, job.progress)

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
            request = ReindexArgs(batch, a.folder)
            return to_wire(ops.reindex(store, request, job.progress, job.check))

        return await server.jobs.run(
            "Living Memory: reindex",
            work,
            project.job_worker,
            request_id=request_id,
            token=token,
            done_message=lambda r: f"{r['embedded']} embedded, {r['vectors']} vectors",
        )
