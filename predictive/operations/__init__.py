"""Every memory operation, written once over a store, with typed requests and results — and
the one door to ``predictive`` for the front doors (``server/`` imports only this package and
:mod:`predictive.session`; ``tests/test_layers.py`` holds it to that).

The CLI, the language server and the MCP server are thin front doors over these functions;
they convert their own spelling of requests and turn results to the wire form
(``result.to_dict()`` with camelCase keys) in one place each.

Names are resolved on first use (the hooks' and the MCP server's start-up time is measured):
importing one name loads only the module that defines it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from predictive import hook_state, judges, llm_config
    from predictive.budget import DEFAULT_PROFILES, BudgetConfig
    from predictive.citation import citation
    from predictive.compress import fill_levels
    from predictive.consolidate import print_changes
    from predictive.engine import AssembledContext, ContextEngine, ContextRequest
    from predictive.fit_to_budget import BudgetTooSmall, dumps, fit_items, fit_tree, tokens_of
    from predictive.fixes import FixTracker, record_fix
    from predictive.learning import Learning
    from predictive.llm import HostUnavailable, Send
    from predictive.llm_config import LlmConfig
    from predictive.operations.context import context_for_file, project_path
    from predictive.operations.contradictions import contradictions, resolve_contradiction
    from predictive.operations.errors import ArgumentError, Invalid
    from predictive.operations.locked_contexts import lock, locked_context, locked_contexts
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
        LockArgs,
        LockedContextArgs,
        LockedListArgs,
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
    from predictive.operations.results import (
        Answer,
        Brief,
        CategoriesRefreshed,
        Consolidated,
        Ingested,
        Locked,
        LockedContexts,
        LockedContextView,
        Recalled,
        RecalledRelated,
        Result,
    )
    from predictive.operations.review import approve, edit, reject, review_list, share
    from predictive.operations.search import ask, search, search_sessions
    from predictive.operations.upkeep import consolidate, ingest, reindex, stats
    from predictive.retrieval import Found
    from predictive.signals import (
        Activity,
        BranchChanged,
        Diagnostic,
        DiagnosticsChanged,
        DocumentOpened,
        DocumentSaved,
        FileOpened,
    )
    from predictive.staleness import check as check_staleness
    from predictive.state import EditorState
    from predictive.team import folder_of as shared_folder_of
    from predictive.team import read_folder as read_shared_folder
    from predictive.tokens import count_tokens

_EXPORTS: dict[str, tuple[str, str | None]] = {
    # the operations, their requests and results
    "context_for_file": ("predictive.operations.context", "context_for_file"),
    "project_path": ("predictive.operations.context", "project_path"),
    "contradictions": ("predictive.operations.contradictions", "contradictions"),
    "resolve_contradiction": ("predictive.operations.contradictions", "resolve_contradiction"),
    "ArgumentError": ("predictive.operations.errors", "ArgumentError"),
    "Invalid": ("predictive.operations.errors", "Invalid"),
    "lock": ("predictive.operations.locked_contexts", "lock"),
    "locked_context": ("predictive.operations.locked_contexts", "locked_context"),
    "locked_contexts": ("predictive.operations.locked_contexts", "locked_contexts"),
    "anchors_of": ("predictive.operations.memory", "anchors_of"),
    "cite": ("predictive.operations.memory", "cite"),
    "explore": ("predictive.operations.memory", "explore"),
    "forget": ("predictive.operations.memory", "forget"),
    "ignore": ("predictive.operations.memory", "ignore"),
    "levels_of": ("predictive.operations.memory", "levels_of"),
    "memory_of": ("predictive.operations.memory", "memory_of"),
    "recall": ("predictive.operations.memory", "recall"),
    "related": ("predictive.operations.memory", "related"),
    "remember": ("predictive.operations.memory", "remember"),
    "restore": ("predictive.operations.memory", "restore"),
    "AskArgs": ("predictive.operations.requests", "AskArgs"),
    "ConsolidateArgs": ("predictive.operations.requests", "ConsolidateArgs"),
    "ContextArgs": ("predictive.operations.requests", "ContextArgs"),
    "ContradictionsArgs": ("predictive.operations.requests", "ContradictionsArgs"),
    "EditArgs": ("predictive.operations.requests", "EditArgs"),
    "ExploreArgs": ("predictive.operations.requests", "ExploreArgs"),
    "FolderArgs": ("predictive.operations.requests", "FolderArgs"),
    "ForgetArgs": ("predictive.operations.requests", "ForgetArgs"),
    "IdArgs": ("predictive.operations.requests", "IdArgs"),
    "IngestArgs": ("predictive.operations.requests", "IngestArgs"),
    "LockArgs": ("predictive.operations.requests", "LockArgs"),
    "LockedContextArgs": ("predictive.operations.requests", "LockedContextArgs"),
    "LockedListArgs": ("predictive.operations.requests", "LockedListArgs"),
    "RecallArgs": ("predictive.operations.requests", "RecallArgs"),
    "ReindexArgs": ("predictive.operations.requests", "ReindexArgs"),
    "RelatedArgs": ("predictive.operations.requests", "RelatedArgs"),
    "RememberArgs": ("predictive.operations.requests", "RememberArgs"),
    "ResolveArgs": ("predictive.operations.requests", "ResolveArgs"),
    "ReviewArgs": ("predictive.operations.requests", "ReviewArgs"),
    "ReviewListArgs": ("predictive.operations.requests", "ReviewListArgs"),
    "SearchArgs": ("predictive.operations.requests", "SearchArgs"),
    "SessionSearchArgs": ("predictive.operations.requests", "SessionSearchArgs"),
    "ShareArgs": ("predictive.operations.requests", "ShareArgs"),
    "Answer": ("predictive.operations.results", "Answer"),
    "Brief": ("predictive.operations.results", "Brief"),
    "CategoriesRefreshed": ("predictive.operations.results", "CategoriesRefreshed"),
    "Consolidated": ("predictive.operations.results", "Consolidated"),
    "Ingested": ("predictive.operations.results", "Ingested"),
    "Locked": ("predictive.operations.results", "Locked"),
    "LockedContexts": ("predictive.operations.results", "LockedContexts"),
    "LockedContextView": ("predictive.operations.results", "LockedContextView"),
    "Recalled": ("predictive.operations.results", "Recalled"),
    "RecalledRelated": ("predictive.operations.results", "RecalledRelated"),
    "Result": ("predictive.operations.results", "Result"),
    "approve": ("predictive.operations.review", "approve"),
    "edit": ("predictive.operations.review", "edit"),
    "reject": ("predictive.operations.review", "reject"),
    "review_list": ("predictive.operations.review", "review_list"),
    "share": ("predictive.operations.review", "share"),
    "ask": ("predictive.operations.search", "ask"),
    "search": ("predictive.operations.search", "search"),
    "search_sessions": ("predictive.operations.search", "search_sessions"),
    "consolidate": ("predictive.operations.upkeep", "consolidate"),
    "ingest": ("predictive.operations.upkeep", "ingest"),
    "reindex": ("predictive.operations.upkeep", "reindex"),
    "stats": ("predictive.operations.upkeep", "stats"),
    # what the editor tells the engine and what the engine answers (the language server)
    "Activity": ("predictive.signals", "Activity"),
    "BranchChanged": ("predictive.signals", "BranchChanged"),
    "Diagnostic": ("predictive.signals", "Diagnostic"),
    "DiagnosticsChanged": ("predictive.signals", "DiagnosticsChanged"),
    "DocumentOpened": ("predictive.signals", "DocumentOpened"),
    "DocumentSaved": ("predictive.signals", "DocumentSaved"),
    "FileOpened": ("predictive.signals", "FileOpened"),
    "EditorState": ("predictive.state", "EditorState"),
    "FixTracker": ("predictive.fixes", "FixTracker"),
    "record_fix": ("predictive.fixes", "record_fix"),
    "AssembledContext": ("predictive.engine", "AssembledContext"),
    "ContextEngine": ("predictive.engine", "ContextEngine"),
    "ContextRequest": ("predictive.engine", "ContextRequest"),
    "BudgetConfig": ("predictive.budget", "BudgetConfig"),
    "DEFAULT_PROFILES": ("predictive.budget", "DEFAULT_PROFILES"),
    # shaping an answer for an agent: tokens, a budget, citations, a memory's levels
    "BudgetTooSmall": ("predictive.fit_to_budget", "BudgetTooSmall"),
    "dumps": ("predictive.fit_to_budget", "dumps"),
    "fit_items": ("predictive.fit_to_budget", "fit_items"),
    "fit_tree": ("predictive.fit_to_budget", "fit_tree"),
    "tokens_of": ("predictive.fit_to_budget", "tokens_of"),
    "count_tokens": ("predictive.tokens", "count_tokens"),
    "citation": ("predictive.citation", "citation"),
    "fill_levels": ("predictive.compress", "fill_levels"),
    "Found": ("predictive.retrieval", "Found"),
    # upkeep a front door reports on or starts itself
    "print_changes": ("predictive.consolidate", "print_changes"),
    "check_staleness": ("predictive.staleness", "check"),
    "shared_folder_of": ("predictive.team", "folder_of"),
    "read_shared_folder": ("predictive.team", "read_folder"),
    # settings and state the front doors keep (a module where the door uses several names)
    "Learning": ("predictive.learning", "Learning"),
    "LlmConfig": ("predictive.llm_config", "LlmConfig"),
    "llm_config": ("predictive.llm_config", None),
    "hook_state": ("predictive.hook_state", None),
    # the chain of contradiction judges, and a host's model (the editor's, an MCP client's)
    "judges": ("predictive.judges", None),
    "HostUnavailable": ("predictive.llm", "HostUnavailable"),
    "Send": ("predictive.llm", "Send"),
}
__all__ = [
    "DEFAULT_PROFILES",
    "Activity",
    "Answer",
    "ArgumentError",
    "AskArgs",
    "AssembledContext",
    "BranchChanged",
    "Brief",
    "BudgetConfig",
    "BudgetTooSmall",
    "CategoriesRefreshed",
    "ConsolidateArgs",
    "Consolidated",
    "ContextArgs",
    "ContextEngine",
    "ContextRequest",
    "ContradictionsArgs",
    "Diagnostic",
    "DiagnosticsChanged",
    "DocumentOpened",
    "DocumentSaved",
    "EditArgs",
    "EditorState",
    "ExploreArgs",
    "FileOpened",
    "FixTracker",
    "FolderArgs",
    "ForgetArgs",
    "Found",
    "HostUnavailable",
    "IdArgs",
    "IngestArgs",
    "Ingested",
    "Invalid",
    "Learning",
    "LlmConfig",
    "LockArgs",
    "Locked",
    "LockedContextArgs",
    "LockedContextView",
    "LockedContexts",
    "LockedListArgs",
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
    "Send",
    "SessionSearchArgs",
    "ShareArgs",
    "anchors_of",
    "approve",
    "ask",
    "check_staleness",
    "citation",
    "cite",
    "consolidate",
    "context_for_file",
    "contradictions",
    "count_tokens",
    "dumps",
    "edit",
    "explore",
    "fill_levels",
    "fit_items",
    "fit_tree",
    "forget",
    "hook_state",
    "ignore",
    "ingest",
    "judges",
    "levels_of",
    "llm_config",
    "lock",
    "locked_context",
    "locked_contexts",
    "memory_of",
    "print_changes",
    "project_path",
    "read_shared_folder",
    "recall",
    "record_fix",
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
    "shared_folder_of",
    "stats",
    "tokens_of",
]


def __getattr__(name: str) -> Any:
    """``name`` from the module that defines it, imported now (a submodule of this package is
    imported the same way)."""
    where = _EXPORTS.get(name)
    if where is None:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module = importlib.import_module(where[0])
    value = module if where[1] is None else getattr(module, where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


class _Operations(types.ModuleType):
    """This package: a submodule named like the function it defines (``search``,
    ``contradictions``, ``locked_contexts``) does not take the function's place once it is
    imported."""

    def __setattr__(self, name: str, value: Any) -> None:
        where = _EXPORTS.get(name)
        if isinstance(value, types.ModuleType) and where is not None and where[1] is not None:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Operations
