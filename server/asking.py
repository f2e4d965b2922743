"""Asking a client from a worker thread: the request runs on the event loop, the thread waits."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any


def ask_from_thread(
    loop: asyncio.AbstractEventLoop, request: Coroutine[Any, Any, Any], timeout: float, who: str
) -> Any:
    """``request``'s answer, run on ``loop`` while this thread waits at most ``timeout``
    seconds; a request left unanswered is cancelled and raises :class:`TimeoutError`."""
    future = asyncio.run_coroutine_threadsafe(request, loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"{who} did not answer in {timeout:.0f} s") from None
