"""Every memory operation, written once over a store, with typed requests and results.

The CLI, the language server and the MCP server are thin front doors over these functions;
they convert their own spelling of requests and turn results to the wire form
(``result.to_dict()`` with camelCase keys) in one place each.
"""

from predictive.operations.context import context_for_file, project_path
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
    EditArgs,
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
    ReviewArgs,
    ReviewListArgs,
    SearchArgs,
    SessionSearchArgs,
    ShareArgs,
)
from predictive.operations.results import Answer, Brief, Recalled, RecalledRelated, Result
from predictive.operations.review import approve, edit, reject, review_list, share
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
    "EditArgs",
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
    "ReviewArgs",
    "ReviewListArgs",
    "SearchArgs",
    "SessionSearchArgs",
    "ShareArgs",
    "anchors_of",
    "approve",
    "ask",
    "cite",
    "consolidate",
    "context_for_file",
    "contradictions",
    "edit",
    "explore",
    "forget",
    "ignore",
    "ingest",
    "levels_of",
    "memory_of",
    "project_path",
    "recall",
    "reindex",
    "reject",
    "related",
    "remember",
    "resolve_contradiction",
    "restore",
    "review_list",
    "search",
    "search_sessions",
    "share",
    "stats",
]
