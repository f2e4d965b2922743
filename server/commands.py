"""``workspace/executeCommand`` plumbing: typed arguments, JSON results, LSP errors.

A command takes one JSON object argument (or none), converted to the command's frozen
dataclass (camelCase keys, unknown keys ignored). Errors map to LSP errors:

- a wrong or missing argument → ``InvalidParams`` (-32602) naming the argument;
- a store that cannot be used, a feature not built yet → ``RequestFailed`` (-32803);
- a cancelled job → ``RequestCancelled`` (-32800);
- anything else → ``InternalError`` (-32603), logged with its traceback; the server goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcRequestCancelled,
)

from predictive.operations.errors import ArgumentError
from server.convert import ConversionError, Invalid, camel, structure

if TYPE_CHECKING:
    from server.features.host import Server

log = logging.getLogger("living_memory.commands")

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed
A = TypeVar("A")
PREFIX = "livingMemory."


class RequestFailed(Exception):
    """The request was fine but cannot be served now (message says why)."""


def parse_arguments(command: str, cls: type[A], arguments: tuple[Any, ...]) -> A:
    """The command's single object argument as ``cls``; InvalidParams naming what is wrong."""
    if len(arguments) > 1:
        raise JsonRpcInvalidParams(
            message=f"{command}: expects one object argument, got {len(arguments)} arguments"
        )
    raw = arguments[0] if arguments else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(
            message=f"{command}: expects its arguments as one object, got {type(raw).__name__}"
        )
    try:
        return structure(raw, cls)
    except ConversionError as e:
        detail = "; ".join(
            f"argument '{p}' {m}" if m == "is required" else (f"argument '{p}': {m}" if p else m)
            for p, m in e.problems
        )
        raise JsonRpcInvalidParams(message=f"{command}: {detail}") from None
    except Invalid as e:
        raise JsonRpcInvalidParams(message=f"{command}: {e}") from None


def command(
    server: Server, name: str, args: type[A]
) -> Callable[[Callable[[A], Awaitable[Any]]], Callable[[A], Awaitable[Any]]]:
    """Register ``livingMemory.<name>``: ``fn(args) -> JSON-able result``."""
    full = name if name.startswith(PREFIX) else PREFIX + name

    def decorator(fn: Callable[[A], Awaitable[Any]]) -> Callable[[A], Awaitable[Any]]:
        async def handler(ls: Any, *arguments: Any) -> Any:  # pygls evaluates these hints
            parsed = parse_arguments(full, args, arguments)
            try:
                return await fn(parsed)
            except JsonRpcException:
                raise
            except Exception as e:
                raise map_error(full, e) from e

        handler.__name__ = f"command_{name}"
        server.command(full)(handler)
        return fn

    return decorator


def map_error(command: str, e: BaseException) -> JsonRpcException:
    from server.jobs import JobCancelled
    from server.projects import Unavailable

    if isinstance(e, ArgumentError):
        return JsonRpcInvalidParams(message=f"{command}: {camel(e.argument)}: {e.message}")
    if isinstance(e, (ConversionError, Invalid)):
        return JsonRpcInvalidParams(message=f"{command}: {e}")
    if isinstance(e, JobCancelled):
        return JsonRpcRequestCancelled(message=f"{command}: {e}")
    if isinstance(e, (RequestFailed, Unavailable)):
        return JsonRpcException(message=f"{command}: {e}", code=REQUEST_FAILED)
    try:
        from storage import InvalidInput, NotFound, StoreError

        if isinstance(e, (InvalidInput, NotFound)):
            return JsonRpcInvalidParams(message=f"{command}: {e}")
        if isinstance(e, StoreError):
            return JsonRpcException(message=f"{command}: {e}", code=REQUEST_FAILED)
    except ImportError:  # pragma: no cover
        pass
    try:
        import apsw

        if isinstance(e, apsw.BusyError):
            return JsonRpcException(
                message=f"{command}: the database is locked by another process; try again",
                code=REQUEST_FAILED,
            )
        if isinstance(e, apsw.Error):
            return JsonRpcException(message=f"{command}: database error: {e}", code=REQUEST_FAILED)
    except ImportError:  # pragma: no cover
        pass
    log.error("%s failed", command, exc_info=e)
    return JsonRpcInternalError(message=f"{command} failed: {type(e).__name__}: {e}")
