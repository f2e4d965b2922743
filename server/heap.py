"""The language server's heap: the cycle collector set for a long-lived process that
allocates much per request, and freed memory handed back to the system.

Assembling a context allocates tens of thousands of objects. With Python's default
thresholds (700, 10, 10) that is several young collections per request and, every
twenty-odd requests, a full one that walks every object in the process (the protocol's
classes, the modules, the engine's caches): 100–160 ms at 100k memories on a loaded machine,
the tail of file-open latency (bench notes). So once the server has loaded what it keeps for
its life, those objects are moved out of the collector's sight (``gc.freeze``) and young
collections run less often; memory freed by requests is returned to the system once what
they served is logged (when the editor is quiet, :mod:`server.context`).
"""

from __future__ import annotations

import gc
import threading

from storage.embeddings import release_freed_heap

THRESHOLDS = (20_000, 20, 20)
"""Young-generation allocations between collections, and how many collections of one
generation make one of the next (Python's defaults: 700, 10, 10)."""

_lock = threading.Lock()
_tuned = False


def settle() -> None:
    """After start-up (model, vector index, first context): collect, freeze what survived
    (it lives as long as the process) and collect less often from now on."""
    global _tuned
    with _lock:
        gc.collect()
        gc.freeze()
        if not _tuned:
            gc.set_threshold(*THRESHOLDS)
            _tuned = True
    release_freed_heap()


def give_back() -> None:
    """Return the heap pages freed by the work done since to the system (cheap: well under a
    millisecond)."""
    release_freed_heap()
