"""Ending the server when the editor that started it is gone (LSP ``initialize.processId``).

A client that dies without closing our stdin (killed, or its pipe inherited by a child that
lives on) would otherwise leave the server running for ever.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable

log = logging.getLogger("living_memory.client_watch")

POLL_SECONDS = 2.0


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as gone)."""
    if pid <= 0:
        return True  # nothing sensible to watch
    if sys.platform == "win32":
        return _alive_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[-1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def _alive_windows(pid: int) -> bool:
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return False
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


async def watch(
    pid: int,
    on_gone: Callable[[], Awaitable[None]],
    *,
    poll: float = POLL_SECONDS,
) -> None:
    """Poll ``pid`` every ``poll`` seconds; once it is gone, await ``on_gone`` and end."""
    if pid == os.getpid() or pid <= 0:
        return
    while alive(pid):
        await asyncio.sleep(poll)
    log.warning("the client process %d is gone; shutting down", pid)
    await on_gone()


async def watch_parent(
    parent: int,
    on_gone: Callable[[], Awaitable[None]],
    *,
    poll: float = POLL_SECONDS,
) -> None:
    """For a client that gives no process id: poll the process that started us (``parent``,
    ``os.getppid()`` at start); once we are handed to another (init, a subreaper) or it is
    gone, await ``on_gone`` and end."""
    if parent <= 1:
        return  # started by init itself: nothing to watch
    while os.getppid() == parent and alive(parent):
        await asyncio.sleep(poll)
    log.warning("the process that started us (%d) is gone; shutting down", parent)
    await on_gone()
