"""How much of a project a rule's glob covers: the share of the tracked files it matches.

A glob over a tenth of the files or less (``**/appsec/_iast/**``, ``**/*.cpp`` in a Python
project) is about an area, and its rule about the file on screen; one over most files
(``**/*.py``) is project-wide policy. The file list is read once (``git ls-files``) and again
after :data:`REFRESH_SECONDS`; each pattern's share is remembered until then.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

from predictive.globs import glob_match
from predictive.mentions import tracked_files

REFRESH_SECONDS = 600.0
AREA_SHARE = 0.25
"""A glob over at most this share of the files is about an area of the project."""


class GlobBreadth:
    """The share of a project's files each glob matches (None when the files are unknown)."""

    def __init__(self, root: str | Path | None) -> None:
        self.root = root
        self._files: list[str] = []
        self._read_at = -math.inf
        self._shares: dict[str, float] = {}
        self._lock = threading.Lock()

    def share(self, pattern: str) -> float | None:
        with self._lock:
            if self.root is None:
                return None
            if time.monotonic() - self._read_at > REFRESH_SECONDS:
                self._files = tracked_files(self.root)
                self._read_at = time.monotonic()
                self._shares.clear()
            if not self._files:
                return None
            if pattern not in self._shares:
                hits = sum(1 for f in self._files if glob_match(f, pattern))
                self._shares[pattern] = max(hits, 1) / len(self._files)
            return self._shares[pattern]


def glob_weight(share: float) -> float:
    """0.65 for a glob over every file, rising to 1.0 for one over 1 % of them or fewer."""
    return 0.65 + 0.35 * min(1.0, math.log10(1.0 / share) / 2.0)
