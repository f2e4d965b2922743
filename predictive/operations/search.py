"""Search: one ranking over memories and conversations; each result names its source."""

from __future__ import annotations

import time

from predictive.operations.memory import anchors_of
from predictive.operations.requests import AskArgs, SearchArgs, SessionSearchArgs
from predictive.operations.results import Answer, SearchResults
from predictive.retrieval import find
from predictive.staleness import latest
from storage import AccessKind, Kind, MemoryFilter, MemoryStore
from storage.session_search import SessionFirstResult, session_first
from storage.sessions import sessions_of
from storage.vector_progress import vector_progress


def ask(store: MemoryStore, a: AskArgs, via: str = "ask") -> Answer:
    """Classify ``a.question``, run the retrieval its kind calls for and cite what answers it
    (a configured model also writes an answer from those items)."""
    from predictive.ask import ask as answer
    from predictive.llm import client_for

    llm = client_for(store)  # None unless the user configured a model
    out = answer(store, a.question, limit=a.limit, as_of=a.as_of, context=via, llm=llm)
    return Answer(
        out["question"],
        out["type"],
        out["cue"],
        tuple(out["items"]),
        out.get("answer"),
        out["next"],
    )


def search_sessions(store: MemoryStore, a: SessionSearchArgs) -> SessionFirstResult:
    """Conversations first: the sessions that match best, each with its matching messages and
    the messages around them."""
    return session_first(sessions_of(store), a.query, k=a.limit, mode=a.mode)


def search(store: MemoryStore, a: SearchArgs, via: str = "search") -> SearchResults:
    """Rank everything the project knows against ``a.query``; ``via`` names the front door in
    the access log."""
    valid_at = a.valid_at
    if valid_at is None and not (a.history or a.include_archived or a.as_of is not None):
        valid_at = time.time()
    filters = MemoryFilter(
        kinds=[Kind(k) for k in a.kinds],
        anchors=anchors_of(a.anchors),
        branch=a.branch,
        include_archived=a.include_archived,
        valid_at=valid_at,
    )
    results = find(
        store,
        a.query,
        filters=filters,
        k=a.limit,
        mode=a.mode,
        as_of=a.as_of,
        min_similarity=a.min_similarity,
    )
    ids = [r.memory.id for r in results if r.memory is not None]
    if ids:
        store.usage.record_many(
            ids,
            AccessKind.RETRIEVAL,
            context=via,
            bump_generation=False,  # usage is logged; cached contexts stay valid
        )
    return SearchResults(
        a.query,
        tuple(results),
        {i: v for i, v in latest(store, ids).items() if v.stale},
        learning=vector_progress(store) if a.mode != "keyword" else None,
    )
