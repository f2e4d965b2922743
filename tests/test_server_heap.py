"""The language server's heap: the collector set for a long-lived process (server.heap)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from server import heap


def run(code: str) -> str:
    """``code`` in a fresh interpreter (the collector's settings are the process's)."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return out.stdout.strip()


def test_settling_freezes_what_is_loaded_and_collects_less_often() -> None:
    out = run(
        "import gc\n"
        "from server import heap\n"
        "before = gc.get_freeze_count()\n"
        "heap.settle()\n"
        "print(before, gc.get_freeze_count() > 1000, gc.get_threshold())\n"
    )
    assert out == f"0 True {heap.THRESHOLDS}"


def test_cyclic_garbage_made_after_settling_is_still_collected() -> None:
    out = run(
        "import gc, weakref\n"
        "from server import heap\n"
        "heap.settle()\n"
        "class Node:\n"
        "    pass\n"
        "a, b = Node(), Node()\n"
        "a.other, b.other = b, a\n"
        "gone = weakref.ref(a)\n"
        "del a, b\n"
        "gc.collect()\n"
        "heap.give_back()\n"
        "print(gone() is None)\n"
    )
    assert out == "True"


def test_settling_twice_keeps_the_settings() -> None:
    out = run(
        "import gc\n"
        "from server import heap\n"
        "heap.settle()\n"
        "heap.settle()\n"
        "print(gc.get_threshold())\n"
    )
    assert out == str(heap.THRESHOLDS)
