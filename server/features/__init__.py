"""The server's features, one module each; every module has ``setup(server)``.

The order matters only for lifecycle events: ``lifecycle`` creates the projects on
``initialized`` before the other features' listeners run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.features import (
    branch,
    context,
    contradictions,
    diagnostics,
    documents,
    idle,
    injection,
    judge,
    lifecycle,
    maintenance,
    memory,
    team,
)

if TYPE_CHECKING:
    from server.features.host import Server

MODULES = (
    lifecycle,
    documents,
    branch,
    diagnostics,
    context,
    memory,
    contradictions,
    judge,
    maintenance,
    injection,
    idle,
    team,
)


def setup_all(server: Server) -> None:
    for module in MODULES:
        module.setup(server)
