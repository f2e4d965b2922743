"""Codex reader: rollout files, injected boilerplate, tool calls, projects, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_fixtures import (
    MINUTE,
    T0,
    iso,
    set_mtime,
    snapshot,
    write_codex_session,
    write_jsonl,
)

from storage.sources import codex
from storage.sources.records import CodeBlock, Conversation, SkipLog


def read(project: Path | None, home: Path, **kw: object) -> tuple[list[Conversation], SkipLog]:
    skips = SkipLog()
    return list(codex.read(project, home=home, skips=skips, **kw)), skips


def reasons(skips: SkipLog) -> dict[str, int]:
    return {r: n for (_, r), n in skips.counts.items()}


def test_rollout_is_read_without_boilerplate(tmp_path: Path) -> None:
    fx = write_codex_session(tmp_path)
    before = snapshot(fx.home)
    (conv,), skips = read(fx.project, fx.home)
    assert skips.total == 0
    got = [(m.role, m.text) for m in conv.messages]
    assert len(got) == len(fx.expected)
    for (role, text), (want_role, start) in zip(got, fx.expected):
        assert role == want_role and text.startswith(start), (role, text)
    assert conv.metadata["injected"] == 3  # developer, environment_context, AGENTS.md
    assert conv.external_id == fx.session_id
    assert conv.workspace == str(fx.project)
    assert conv.branch == "main"
    assert conv.metadata["commit"] == "abc123"
    assert conv.title is None
    assert (conv.started_at, conv.ended_at) == (T0, T0 + 3 * MINUTE)
    assert conv.messages[0].at == T0 + 0.2 * MINUTE
    assert snapshot(fx.home) == before


def test_tool_calls_outputs_files_and_code(tmp_path: Path) -> None:
    fx = write_codex_session(tmp_path)
    (conv,), _ = read(fx.project, fx.home)
    _, answer, shell, shell_out, patch, patch_out, _ = conv.messages
    assert answer.code_blocks == (CodeBlock("return {'debug': False}", "python", None),)
    assert shell.metadata == {"tool": "shell", "kind": "call", "call_id": "call_1"}
    assert json.loads(shell.text.removeprefix("[tool: shell] "))["command"] == [
        "cat",
        "src/config.py",
    ]
    # The JSON envelope of a function output is opened to its "output".
    assert shell_out.text == "[result] def load():\n    return {}"
    assert shell_out.metadata == {"kind": "result", "call_id": "call_1"}
    assert patch.files == ("src/config.py",)  # from "*** Update File:"
    assert patch_out.text == "[result] Success."


def test_other_projects_and_since(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = write_codex_session(tmp_path, tmp_path / "proj", home=home, session_id="a" * 8)
    write_codex_session(
        tmp_path, tmp_path / "other", home=home, session_id="b" * 8, start=T0 + 60 * MINUTE
    )
    convs, skips = read(mine.project, home)
    assert [c.external_id for c in convs] == ["a" * 8]
    assert reasons(skips) == {"not this workspace": 1}
    assert len(read(mine.project, home, all_workspaces=True)[0]) == 2
    assert len(read(None, home)[0]) == 2
    recent, skips = read(None, home, since=T0 + 30 * MINUTE)
    assert [c.external_id for c in recent] == ["b" * 8]
    assert reasons(skips) == {"older than since": 1}
    set_mtime(mine.path, T0)
    _, skips = read(None, home, since=T0 + 30 * MINUTE)
    assert reasons(skips) == {"older than since": 1}


def test_without_session_meta_the_file_name_gives_the_id(tmp_path: Path) -> None:
    fx = write_codex_session(tmp_path, with_meta=False)
    (conv,), _ = read(None, fx.home)
    assert conv.external_id == fx.session_id  # the uuid at the end of the file name
    assert conv.workspace == str(fx.project)  # from turn_context
    assert conv.branch is None


def test_legacy_rollout_with_items_at_top_level(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "rollout-2025-01-01-12345678-1234-1234-1234-123456789abc.jsonl"

    def msg(role: str, text: str) -> dict[str, object]:
        return {"type": "message", "role": role, "content": [{"type": "text", "text": text}]}

    write_jsonl(
        path,
        [
            {"id": "legacy-id", "timestamp": iso(T0), "instructions": None},
            {"record_type": "state"},
            msg("user", "<user_instructions>x</user_instructions>"),
            msg("user", "hi"),
            msg("assistant", "hello"),
            {"type": "function_call", "name": "shell", "arguments": "not json", "call_id": "c"},
        ],
    )
    skips = SkipLog()
    (conv,) = codex.read(None, paths=[tmp_path / "sessions"], skips=skips)
    assert conv.external_id == "legacy-id"
    assert [(m.role, m.text) for m in conv.messages] == [
        ("user", "hi"),
        ("assistant", "hello"),
        ("tool", "[tool: shell] not json"),
    ]
    assert conv.started_at == T0
    assert conv.workspace is None
    assert skips.total == 0


def test_unknown_workspace_is_refused_for_a_root(tmp_path: Path) -> None:
    path = tmp_path / "rollout-x.jsonl"
    item = {"type": "message", "role": "user", "content": "plain string"}
    write_jsonl(path, [{"type": "response_item", "payload": item}])
    skips = SkipLog()
    assert list(codex.read(tmp_path, paths=[path], skips=skips)) == []
    assert reasons(skips) == {"unknown workspace": 1}
    (conv,) = codex.read(None, paths=[path], skips=SkipLog())
    assert conv.messages[0].text == "plain string"


def test_bad_input_is_counted(tmp_path: Path) -> None:
    fx = write_codex_session(tmp_path, truncate_last=True)
    folder = fx.path.parent
    (folder / "rollout-bin.jsonl").write_bytes(b"\x00" * 64)
    (folder / "rollout-empty.jsonl").write_text("\n\n")
    (folder / "rollout-junk.jsonl").write_bytes(b'{"type": "event_msg"}\n\xff\xfe\n')
    before = snapshot(fx.home)
    (conv,), skips = read(None, fx.home)
    assert conv.messages[-1].text == "[result] Success."  # the cut last message is gone
    assert reasons(skips) == {
        "truncated line": 1,
        "binary file": 1,
        "no messages": 2,
        "invalid utf-8": 1,
        "invalid json": 1,
    }
    assert snapshot(fx.home) == before


def test_too_large_rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fx = write_codex_session(tmp_path)
    monkeypatch.setattr(codex, "MAX_LOG_BYTES", 100)
    convs, skips = read(fx.project, fx.home)
    assert convs == [] and reasons(skips) == {"too large": 1}
