"""No input crashes a chat reader: arbitrary JSON built from each format's own keys."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from chat_fixtures import write_vscdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.sources import claude_code, codex, copilot, cursor, specstory
from storage.sources.records import SkipLog

KEYS = [
    # Claude Code / Codex
    "type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "isMeta", "cwd",
    "gitBranch", "sessionId", "timestamp", "message", "role", "content", "text", "id",
    "name", "input", "tool_use_id", "summary", "leafUuid", "payload", "git", "branch",
    "arguments", "output", "call_id",
    # Copilot
    "kind", "k", "v", "i", "version", "requests", "response", "value", "inlineReference",
    "variableData", "variables", "result", "timings", "totalElapsed", "fsPath", "path", "uri",
    "toolId", "invocationMessage", "creationDate", "customTitle",
    # Cursor
    "tabs", "tabId", "bubbles", "rawText", "delegate", "initText", "selections",
    "allComposers", "composerId", "conversation", "bubbleId", "richText",
    "suggestedCodeBlocks", "codeBlocks", "code", "language", "toolFormerData", "params",
    "timingInfo", "clientStartTime", "relevantFiles", "attachedFileCodeChunksUris",
    "fullConversationHeadersOnly", "_v", "createdAt", "lastUpdatedAt", "context",
    "fileSelections", "latestConversationSummary",
]  # fmt: skip
WORDS = ["user", "assistant", "ai", "tool_use", "tool_result", "text", "message",
         "session_meta", "response_item", "function_call", "function_call_output",
         "inlineReference", "toolInvocationSerialized", "/p/a.py", "file:///p/b.py",
         "2024-06-01T10:00:00Z", "```py\nx\n```", "a", "b", ""]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**45),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(WORDS),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=6),
    ),
    max_leaves=25,
)
records = st.lists(st.dictionaries(st.sampled_from(KEYS), values, max_size=8), max_size=8)
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def drain(reader: Any, root: Path | None, **kw: Any) -> SkipLog:
    skips = SkipLog()
    for conv in reader.read(root, skips=skips, **kw):
        assert [m.idx for m in conv.messages] == list(range(len(conv.messages)))
        assert conv.messages and conv.external_id
    return skips


def jsonl(path: Path, lines: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


@FUZZ
@given(records)
def test_claude_and_codex_never_raise(lines: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        jsonl(home / ".claude" / "projects" / "-p" / "s.jsonl", lines)
        jsonl(home / ".codex" / "sessions" / "rollout-x.jsonl", lines)
        for root in (None, Path("/p")):
            drain(claude_code, root, home=home)
            drain(codex, root, home=home)


@FUZZ
@given(values, records)
def test_copilot_never_raises(session: Any, entries: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "chatSessions"
        folder.mkdir()
        (folder / "a.json").write_text(json.dumps(session))
        (folder / "b.json").write_text(json.dumps({"version": 3, "requests": session}))
        jsonl(folder / "c.jsonl", [{"kind": 0, "v": session}, *entries])
        drain(copilot, None, paths=[folder])


@FUZZ
@given(values, values, values, st.lists(values, max_size=4))
def test_cursor_never_raises(chat: Any, composers: Any, body: Any, bubbles: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "state.vscdb"
        kv = {"composerData:c": body, "composerData:d": {"_v": 3, "conversation": bubbles}}
        headers = [{"bubbleId": str(n), "type": 1} for n in range(len(bubbles))]
        kv["composerData:e"] = {"fullConversationHeadersOnly": headers}
        kv.update({f"bubbleId:e:{n}": b for n, b in enumerate(bubbles)})
        items = {
            "workbench.panel.aichat.view.aichat.chatdata": chat,
            "composer.composerData": composers,
        }
        write_vscdb(db, items, kv)
        for root in (None, Path("/p")):
            drain(cursor, root, paths=[db])


@FUZZ
@given(st.lists(st.sampled_from([
    "_**User**_", "_**Assistant**_", "_**Agent (x)**_", "_**User (2024-01-01 10:00Z)**_",
    "---", "```", "````py", "~~~", "<details>", "</details>", "<summary>Tool</summary>",
    "<think>", "</think>", "# Title (2024-01-01 10:00:00)", "text", "",
]), max_size=30))  # fmt: skip
def test_specstory_never_raises(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        history = project / ".specstory" / "history"
        history.mkdir(parents=True)
        (history / "x.md").write_text("\n".join(lines))
        drain(specstory, project)
