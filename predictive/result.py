"""The base of every typed result: ``to_dict()`` gives its fields as JSON-ready, snake_case
data (the front doors turn keys to camelCase in one place, ``server.convert.to_wire``)."""

from __future__ import annotations

import dataclasses
from typing import Any


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: results and other objects by their ``to_dict``."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class Result:
    """Base of every result: ``to_dict()`` gives its fields as JSON-ready data."""

    def to_dict(self) -> dict[str, Any]:
        return {
            f.metadata.get("wire", f.name): plain(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
        }
