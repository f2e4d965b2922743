"""Reading JSON-RPC from the client without trusting it: pygls' loop, hardened.

pygls 2's ``run_async`` stalls for good on a frame without a usable ``Content-Length`` (the
body is then read as header lines and the next header is lost with it), and drops a message
it cannot structure without answering. This loop instead:

- takes ``Content-Length`` only as a decimal number from 1 to :data:`MAX_BODY_BYTES`; a header
  block without one, a line that is no header, a body cut short — each costs that frame only:
  the reader skips to the next ``Content-Length:`` (also when it follows the remains of a
  broken body on the same line) and answers a Parse error (-32700, id null);
- answers a body that is not JSON with a Parse error, a message that is not a JSON-RPC 2.0
  object or whose id is neither a number, a string nor null with Invalid Request (-32600, id
  null), and a request whose parameters do not fit the method with Invalid Params (-32602,
  its id);
- replaces lone surrogates in strings (not encodable in UTF-8) with U+FFFD before a handler
  sees them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

if TYPE_CHECKING:
    from pygls.io_ import AsyncReader
    from pygls.protocol import JsonRPCProtocol

log = logging.getLogger("living_memory.wire")

MAX_BODY_BYTES = 256 * 1024 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_CONTENT_LENGTH = b"content-length:"
_HEADER = re.compile(rb"^[A-Za-z0-9][A-Za-z0-9_\-]*:[^\r\n]*\r?\n$")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def content_length(value: bytes) -> int | None:
    """The length a ``Content-Length`` value gives, or None unless it is 1 … MAX_BODY_BYTES."""
    v = value.strip()
    if not v.isdigit() or len(v) > 12:
        return None
    n = int(v)
    return n if 0 < n <= MAX_BODY_BYTES else None


def clean_text(value: str) -> str:
    """``value`` with every lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value


def valid_id(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int) and not isinstance(value, bool))
    )


class Framing:
    """Splits a byte stream into message bodies; a broken frame is reported and skipped."""

    def __init__(self, reader: AsyncReader) -> None:
        self.reader = reader
        self.skipping = False  # after a broken frame: its remains are dropped silently

    async def next_body(self, broken: Callable[[str], None]) -> bytes | None:
        """The next message body, or None at the end of the stream."""
        length: int | None = None
        headers = 0
        bad_length = False

        def report(why: str) -> None:
            if not self.skipping:
                broken(why)
            self.skipping = True

        while True:
            try:
                line = await self.reader.readline()
            except ValueError:  # asyncio's StreamReader (TCP): a line over its limit, dropped
                report("a line too long for a header")
                continue
            if not line:
                return None
            at = line.lower().find(_CONTENT_LENGTH)
            if at > 0:  # the remains of a broken body run into the next header
                if headers or line[:at].strip():
                    report("a frame was cut short or had no usable Content-Length")
                line, length, headers, bad_length = line[at:], None, 0, False
            if not line.strip():
                if length is not None:
                    self.skipping = False
                    try:
                        body = await self.reader.readexactly(length)
                    except asyncio.IncompleteReadError:
                        return None
                    return body if len(body) == length else None
                if headers:
                    report(
                        "a frame with an invalid Content-Length"
                        if bad_length
                        else "a frame without Content-Length"
                    )
                    headers, bad_length = 0, False
                continue
            if not _HEADER.match(line):
                report("a line that is not a header")
                length, headers, bad_length = None, 0, False
                continue
            headers += 1
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = content_length(value)
                bad_length = length is None


class MessageReader:
    """Turns bodies into pygls messages and hands them to the protocol, answering what it
    cannot handle."""

    def __init__(self, protocol: JsonRPCProtocol) -> None:
        self.protocol = protocol

    def error(self, msg_id: Any, code: int, message: str) -> None:
        self.protocol._send_data(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        )

    def _structure(self, value: Any) -> Any:
        """What ``json.loads(..., object_hook=structure_message)`` gives, strings cleaned."""
        if isinstance(value, dict):
            return self.protocol.structure_message(
                {k: self._structure(v) for k, v in value.items()}
            )
        if isinstance(value, list):
            return [self._structure(v) for v in value]
        if isinstance(value, str):
            return clean_text(value)
        return value

    def handle(self, body: bytes) -> bool:
        """Handle one body; False if it was not JSON (its frame was probably broken)."""
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError) as e:
            log.warning("a message that is not JSON: %s", e)
            self.error(None, PARSE_ERROR, f"Parse error: {e}")
            return False
        if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0" or not valid_id(raw.get("id")):
            log.warning("not a JSON-RPC 2.0 message (or a bad id); answered Invalid Request")
            self.error(None, INVALID_REQUEST, "Invalid Request")
            return True
        is_request = "method" in raw and "id" in raw
        if "method" in raw and not isinstance(raw["method"], str):
            self.error(raw.get("id"), INVALID_REQUEST, "Invalid Request: method is not a string")
            return True
        try:
            message = self._structure(raw)
        except (JsonRpcException, RecursionError) as e:
            log.warning("could not read %s: %s", raw.get("method") or "a message", e)
            if is_request:
                code = e.code if isinstance(e, JsonRpcException) else INVALID_REQUEST
                if not isinstance(e, JsonRpcInvalidParams) and code != INVALID_REQUEST:
                    code = JsonRpcInvalidParams.CODE
                self.error(raw["id"], code, f"Invalid params for {raw['method']}")
            return True
        self.protocol.handle_message(message)
        return True


async def run_async(
    stop_event: threading.Event,
    reader: AsyncReader,
    protocol: JsonRPCProtocol,
    logger: logging.Logger | None = None,
    error_handler: Callable[[Exception, type[JsonRpcException]], Any] | None = None,
) -> None:
    """pygls' ``run_async`` with the framing and answers described in the module docstring."""
    framing, messages = Framing(reader), MessageReader(protocol)

    def broken(why: str) -> None:
        log.warning("skipped %s", why)
        messages.error(None, PARSE_ERROR, f"Parse error: {why}")

    while not stop_event.is_set():
        body = await framing.next_body(broken)
        if body is None:
            break
        try:
            if not messages.handle(body):
                framing.skipping = True  # the rest of a cut-short body may follow
        except Exception as exc:
            log.exception("could not handle a message")
            if error_handler is not None:
                error_handler(exc, JsonRpcException)
