"""Long work (embedding, reindexing, ingestion, consolidation) with ``$/progress`` and
cancellation.

A job runs in a worker thread and reports through :class:`Job`; the client sees a
work-done progress (its own ``workDoneToken`` when the command request carried one, else a
token the server creates when the client supports ``window.workDoneProgress``). The job
stops at its next checkpoint when the client cancels the progress
(``window/workDoneProgress/cancel``) or the request (``$/cancelRequest``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from server.host import Host

log = logging.getLogger("living_memory.jobs")

REPORT_EVERY_S = 0.1


class JobCancelled(Exception):
    """The client cancelled the job; what was committed before stays."""


class Job:
    """Handed to the work function: report progress, check for cancellation."""

    def __init__(self, server: Host, title: str, token: types.ProgressToken | None) -> None:
        self.server = server
        self.title = title
        self.token = token
        self.cancelled = threading.Event()
        self.done = 0
        self.total = 0
        self.message: str | None = None
        self._last = 0.0

    def check(self) -> None:
        """Raise :class:`JobCancelled` if the client asked to stop."""
        if self.cancelled.is_set():
            raise JobCancelled(f"{self.title}: cancelled after {self.done} of {self.total}")

    def progress(self, done: int, total: int, message: str | None = None) -> None:
        """Thread-safe; throttled; also a cancellation checkpoint."""
        self.done, self.total = done, total
        if message is not None:
            self.message = message
        now = time.monotonic()
        if self.token is not None and (now - self._last >= REPORT_EVERY_S or done >= total):
            self._last = now
            pct = int(100 * done / total) if total else None
            text = f"{done}/{total}" + (f" · {self.message}" if self.message else "")
            value = types.WorkDoneProgressReport(message=text, percentage=pct, cancellable=True)
            loop = self.server.loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._report, value)
        self.check()

    def _report(self, value: types.WorkDoneProgressReport) -> None:
        if self.token is None:
            return
        try:
            self.server.work_done_progress.report(self.token, value)
        except Exception:
            log.debug("progress report failed", exc_info=True)


class Jobs:
    """The server's running jobs, by request id, for ``$/cancelRequest``."""

    def __init__(self, server: Host) -> None:
        self.server = server
        self.by_request: dict[Any, Job] = {}
        self.running: set[Job] = set()

    def cancel_all(self) -> None:
        """Shutting down: every job stops at its next checkpoint (its commits stay)."""
        for job in list(self.running):
            job.cancelled.set()

    def cancel_request(self, msg_id: Any) -> None:
        job = self.by_request.get(msg_id)
        if job is not None:
            log.info("%s: cancelled by the client", job.title)
            job.cancelled.set()

    async def _token(self, given: Any | None) -> types.ProgressToken | None:
        if given is not None:
            return given
        if not self.server.client_supports("window.work_done_progress"):
            return None
        token = f"living-memory/{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), 5)
        except Exception:
            log.info("the client did not accept a progress token", exc_info=True)
            return None
        return token

    async def run(
        self,
        title: str,
        work: Callable[[Job], Any],
        executor: Executor | None,
        *,
        request_id: Any | None = None,
        token: Any | None = None,
        done_message: Callable[[Any], str] | None = None,
    ) -> Any:
        """Run ``work(job)`` in ``executor`` with progress; return its result.

        Raises :class:`JobCancelled` when the client cancelled it."""
        token = await self._token(token)
        job = Job(self.server, title, token)
        progress = self.server.work_done_progress
        watch: Future[Any] | None = None
        if token is not None:
            progress.begin(
                token,
                types.WorkDoneProgressBegin(title=title, cancellable=True, percentage=0),
            )
            watch = progress.tokens.get(token)
            if watch is not None:

                def cancel_job(f: Future[Any]) -> None:
                    if f.cancelled():
                        job.cancelled.set()

                watch.add_done_callback(cancel_job)
        if request_id is not None:
            self.by_request[request_id] = job
        self.running.add(job)
        end = "done"
        try:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(executor, work, job)
            end = done_message(result) if done_message else "done"
            return result
        except JobCancelled:
            end = f"cancelled after {job.done} of {job.total}"
            raise
        except Exception as e:
            end = f"failed: {e}"
            raise
        finally:
            self.running.discard(job)
            if request_id is not None:
                self.by_request.pop(request_id, None)
            if token is not None:
                try:
                    progress.end(token, types.WorkDoneProgressEnd(message=end))
                except Exception:
                    log.debug("progress end failed", exc_info=True)
                progress.tokens.pop(token, None)
