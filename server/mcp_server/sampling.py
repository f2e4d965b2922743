"""An MCP client's sampling as the contradiction judge.

Third in the chain of judges (:mod:`predictive.judges`: after a configured endpoint and the
editor's models): for the length of one ``judge_pending`` tool call, when the client offers
``sampling``, a few waiting pairs are put to the client's model through
``sampling/createMessage``. The question is asked from the store's worker thread, which waits
for the answer; the server's event loop goes on serving the session meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import ClientCapabilities, SamplingCapability, SamplingMessage, TextContent

from predictive.operations import HostUnavailable, Send
from server.asking import ask_from_thread

log = logging.getLogger("living_memory.mcp")

REQUEST_TIMEOUT_S = 90.0
"""How long one question waits for the client (its model, and its user's approval)."""


def offers_sampling(session: Any) -> bool:
    """The client announced the ``sampling`` capability."""
    try:
        wanted = ClientCapabilities(sampling=SamplingCapability())
        return bool(session.check_client_capability(wanted))
    except Exception:
        log.debug("could not read the client's capabilities", exc_info=True)
        return False


def sampling_send(
    session: Any,
    loop: asyncio.AbstractEventLoop,
    related_request_id: Any = None,
    timeout: float = REQUEST_TIMEOUT_S,
) -> Send:
    """Ask the client's model through sampling, from a thread other than ``loop``'s."""

    def send(messages: list[dict[str, str]], max_tokens: int) -> str:
        if loop.is_closed():
            raise HostUnavailable("the MCP session is gone")

        async def ask() -> Any:
            with warnings.catch_warnings():  # sampling is deprecated by a newer protocol only
                warnings.simplefilter("ignore")
                return await session.create_message(
                    [
                        SamplingMessage(
                            role="user",
                            content=TextContent(type="text", text=messages[-1]["content"]),
                        )
                    ],
                    max_tokens=max_tokens,
                    system_prompt=messages[0]["content"],
                    temperature=0.0,
                    include_context="none",
                    related_request_id=related_request_id,
                )

        try:
            result = ask_from_thread(loop, ask(), timeout, "the MCP client")
        except MCPError as e:
            raise HostUnavailable(f"the MCP client declined: {e}") from None
        content = getattr(result, "content", None)
        if not isinstance(content, TextContent):
            raise HostUnavailable("the MCP client's model answered no text")
        return content.text

    return send
