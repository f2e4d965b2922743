"""Every memory operation, written once over a store, with typed requests and results.

The CLI, the language server and the MCP server are thin front doors over these functions;
they convert their own spelling of requests and turn results to the wire form
(``result.to_dict()`` with camelCase keys) in one place each.
"""

from predictive.operations.context import context_for_file, relative_path
from predictive.operations.contradictions import contradictions, resolve_contradiction
from predictive.operations.errors import ArgumentError, Invalid
from predictive.operations.memory import (
    anchors_of,
    cite,
    explore,
    forget,
    ignore,
    levels_of,
    memory_of,
    recall,
    related,
    remember,
    restore,
)
from predictive.operations.requests import (
    AskArgs,
    ConsolidateArgs,
    ContextArgs,
    ContradictionsArgs,
    ExploreArgs,
    FolderArgs,
    ForgetArgs,
    IdArgs,
    IngestArgs,
    RecallArgs,
    ReindexArgs,
    RelatedArgs,
    RememberArgs,
    ResolveArgs,
    SearchArgs,
    SessionSearchArgs,
)
from predictive.operations.results import Answer, Brief, Recalled, RecalledRelated, Result
from predictive.operations.search import ask, search, search_sessions
from predictive.operations.upkeep import consolidate, ingest, reindex, stats

__all__ = [
    "Answer",
    "ArgumentError",
    "AskArgs",
    "Brief",
    "ConsolidateArgs",
    "ContextArgs",
    "ContradictionsArgs",
    "ExploreArgs",
    "FolderArgs",
    "ForgetArgs",
    "IdArgs",
    "IngestArgs",
    "Invalid",
    "RecallArgs",
    "Recalled",
    "RecalledRelated",
    "ReindexArgs",
    "RelatedArgs",
    "RememberArgs",
    "ResolveArgs",
    "Result",
    "SearchArgs",
    "SessionSearchArgs",
    "anchors_of",
    "ask",
    "cite",
    "consolidate",
    "context_for_file",
    "contradictions",
    "explore",
    "forget",
    "ignore",
    "ingest",
    "levels_of",
    "memory_of",
    "recall",
    "reindex",
    "related",
    "relative_path",
    "remember",
    "resolve_contradiction",
    "restore",
    "search",
    "search_sessions",
    "stats",
]
