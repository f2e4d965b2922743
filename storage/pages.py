"""Resident pages of mapped files given back once what needed them is done."""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

_MADV_PAGEOUT = 21  # Linux ≥ 5.4: reclaim these pages now (their contents stay valid)


def drop_file_pages(path: str | os.PathLike[str]) -> int:
    """Ask the kernel to reclaim the resident pages of the file ``path`` mapped into this
    process; the bytes of mappings it was asked about (0 where that cannot be asked).

    Loading a native library reads much of its file into resident pages — the dynamic
    loader's read-ahead, data used once while loading (the o200k vocabularies inside the token
    counter's extension, ≈ 33 MB) — that the process never touches again. ``MADV_PAGEOUT``
    keeps contents valid: a page needed later is read back from the file, so only what is
    really used stays resident. Only Linux is asked; elsewhere nothing is done."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        target = os.path.realpath(Path(path))
        asked = 0
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) < 6 or fields[5].rstrip("\n") != target:
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if madvise(start, end - start, _MADV_PAGEOUT) == 0:
                    asked += end - start
        return asked
    except (OSError, AttributeError, ValueError):
        return 0
