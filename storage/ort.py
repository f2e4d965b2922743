"""onnxruntime, imported with its telemetry off.

Since 1.32, importing onnxruntime on Linux and macOS writes a device id and an event database
under ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` (its OneDS telemetry), before any
session exists. ``ORT_DISABLE_TELEMETRY=1`` in the environment at import time stops that;
``disable_telemetry_events()`` turns off what remains. Import onnxruntime only through here.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import onnxruntime

_disable: Any = getattr(onnxruntime, "disable_telemetry_events", None)
if _disable is not None:
    _disable()

ort = onnxruntime

__all__ = ["ort"]
