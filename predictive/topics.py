"""The Index tier's topics: what the memories tied to one file are about."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from typing import get_args

from storage import AnchorType, Memory
from storage.sources.rules import Kind as RuleKind

# Tags that say where a memory came from, not what it is about.
_SOURCE_TAGS = frozenset({"rule", "commit", "merge", "revert", *get_args(RuleKind)})
MAX_TOPICS = 8
IDS_PER_TOPIC = 3


def is_topic_tag(label: str) -> bool:
    """A tag that says what a memory is about (not where it came from)."""
    return label not in _SOURCE_TAGS and not label.startswith("chat-")


def file_topics(memories: Sequence[Memory]) -> list[tuple[str, int, list[int]]]:
    """(label, count, the best ids) of the tags and modules shared by ``memories`` (best
    first), commonest first; a topic only one memory has is no topic."""
    counts: Counter[str] = Counter()
    ids: dict[str, list[int]] = {}
    for m in memories:
        seen: set[str] = set()
        for a in m.anchors:
            if a.type is AnchorType.TAG:
                label = a.value
                if not is_topic_tag(label):
                    continue
            elif a.type is AnchorType.MODULE:
                label = a.value
            else:
                continue
            if label in seen:
                continue
            seen.add(label)
            counts[label] += 1
            ids.setdefault(label, []).append(m.id)
    shared = ((label, n) for label, n in counts.items() if n > 1)
    best = heapq.nsmallest(MAX_TOPICS, shared, key=lambda kv: (-kv[1], kv[0]))
    return [(label, n, ids[label][:IDS_PER_TOPIC]) for label, n in best]
