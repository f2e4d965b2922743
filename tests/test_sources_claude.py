"""Claude Code reader: the main chain of the message tree, merging, projects, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_fixtures import (
    MINUTE,
    T0,
    claude_project_dir_name,
    claude_projects_dir,
    iso,
    set_mtime,
    snapshot,
    write_claude_session,
    write_jsonl,
)

from storage.sources import claude_code
from storage.sources.records import CodeBlock, Conversation, SkipLog


def read(project: Path | None, home: Path, **kw: object) -> tuple[list[Conversation], SkipLog]:
    skips = SkipLog()
    return list(claude_code.read(project, home=home, skips=skips, **kw)), skips


def reasons(skips: SkipLog) -> dict[str, int]:
    return {r: n for (_, r), n in skips.counts.items()}


def test_main_chain_is_read_in_order(tmp_path: Path) -> None:
    fx = write_claude_session(tmp_path)
    before = snapshot(fx.home)
    (conv,), skips = read(fx.project, fx.home)
    assert skips.total == 0
    got = [(m.role, m.text) for m in conv.messages]
    assert len(got) == len(fx.expected)
    for (role, text), (want_role, start) in zip(got, fx.expected):
        assert role == want_role and text.startswith(start), (role, text)
    texts = " ".join(t for _, t in got)
    # Side chain, abandoned branch, thinking and injected meta records are not there.
    for absent in ("sub-agent", "abandoned", "secret musing", "injected"):
        assert absent not in texts
    assert conv.thoughts == ("about src/config.py",)  # what the reasoning names, kept apart
    assert conv.external_id == fx.session_id
    assert conv.title == "Fix the config loader"
    assert conv.workspace == str(fx.project)
    assert conv.branch == "feature/config"
    assert (conv.started_at, conv.ended_at) == (T0, T0 + 5 * MINUTE)
    assert conv.origin == str(fx.path)
    assert snapshot(fx.home) == before


def test_streamed_lines_merge_and_tools_render(tmp_path: Path) -> None:
    fx = write_claude_session(tmp_path)
    (conv,), _ = read(fx.project, fx.home)
    msgs = conv.messages
    # Three lines of message msg_1: one assistant text, one tool call (thinking dropped).
    assert msgs[1].text == "Let me look." and msgs[1].metadata["model"] == "claude-x"
    assert msgs[1].at == T0 + 0.5 * MINUTE  # the first line of the merged reply
    read_call = msgs[2]
    assert read_call.metadata["tool"] == "Read" and read_call.metadata["kind"] == "call"
    assert read_call.files == ("src/config.py",)
    assert json.loads(read_call.text.removeprefix("[tool: Read] ")) == {
        "file_path": str(fx.project / "src" / "config.py")
    }
    result = msgs[3]
    assert result.metadata == {"uuid": "r1", "kind": "result", "tool_use_id": "tu1"}
    assert msgs[4].code_blocks == (CodeBlock("def load():\n    return {}", "python", None),)
    edit = msgs[6]
    assert edit.code_blocks == (CodeBlock("{'debug': False}", None, "src/config.py"),)


def test_long_tool_input_is_clipped(tmp_path: Path) -> None:
    fx = write_claude_session(
        tmp_path,
        extra=[
            {
                "type": "assistant",
                "uuid": "big",
                "parentUuid": "a6",
                "timestamp": iso(T0 + 6 * MINUTE),
                "cwd": str(tmp_path / "project"),
                "message": {
                    "role": "assistant",
                    "id": "msg_9",
                    "content": [{"type": "tool_use", "name": "Bash", "input": {"c": "x" * 9000}}],
                },
            }
        ],
    )
    (conv,), _ = read(fx.project, fx.home)
    last = conv.messages[-1]
    assert last.role == "tool" and len(last.text) == 2000 and last.text.endswith("…")


def test_latest_leaf_wins_and_compaction_is_followed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    base = {"cwd": str(project), "sessionId": "s", "isSidechain": False}
    fx = write_claude_session(
        tmp_path,
        project,
        extra=[
            {
                **base,
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "cb",
                "parentUuid": None,
                "logicalParentUuid": "a6",
                "timestamp": iso(T0 + 6 * MINUTE),
            },
            {
                **base,
                "type": "user",
                "uuid": "u3",
                "parentUuid": "cb",
                "timestamp": iso(T0 + 7 * MINUTE),
                "message": {"role": "user", "content": [{"type": "text", "text": "After"}]},
            },
        ],
    )
    (conv,), _ = read(fx.project, fx.home)
    assert conv.messages[-1].text == "After"
    assert conv.messages[0].text == "Why does load() fail?"  # the chain crossed the boundary
    assert len(conv.messages) == len(fx.expected) + 1


def test_other_projects_are_excluded_unless_all_workspaces(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    mine = write_claude_session(tmp_path, project, home=home, session_id="mine")
    sub = write_claude_session(tmp_path, project, home=home, session_id="sub", cwd=project / "pkg")
    sibling = write_claude_session(tmp_path, tmp_path / "proj-2", home=home, session_id="sib")
    far = write_claude_session(tmp_path, tmp_path / "elsewhere", home=home, session_id="far")
    convs, skips = read(project, home)
    assert sorted(c.external_id for c in convs) == ["mine", "sub"]
    assert {c.external_id: c.workspace for c in convs}["sub"] == str(project / "pkg")
    # "proj-2" shares the folder-name prefix: read, then refused by its cwd; "elsewhere" by name.
    assert reasons(skips) == {"not this workspace": 2}
    everything, _ = read(project, home, all_workspaces=True)
    assert sorted(c.external_id for c in everything) == ["far", "mine", "sib", "sub"]
    assert {c.workspace for c in everything} >= {str(sibling.project), str(far.project)}
    assert mine.path.parent.name == claude_project_dir_name(project)
    assert sub.path.parent.name.startswith(claude_project_dir_name(project) + "-")


def test_cwd_of_any_record_ties_a_session_to_the_root(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    folder = claude_projects_dir(tmp_path / "home") / claude_project_dir_name(project)

    def line(uuid: str, parent: str | None, cwd: str, role: str, text: str) -> dict[str, object]:
        return {
            "type": role,
            "uuid": uuid,
            "parentUuid": parent,
            "cwd": cwd,
            "timestamp": iso(T0 + 60 * int(uuid)),
            "message": {"role": role, "content": text},
        }

    lines = [
        line("1", None, "/somewhere/else", "user", "first"),
        line("2", "1", str(project / "src"), "assistant", "second"),
    ]
    write_jsonl(folder / "moved.jsonl", lines)
    (conv,), _ = read(project, tmp_path / "home")
    assert conv.workspace == str(project / "src")
    assert conv.external_id == "moved"  # no sessionId in the records: the file name


def test_dir_name_stands_in_when_records_have_no_cwd(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    folder = claude_projects_dir(tmp_path / "home") / claude_project_dir_name(project)
    write_jsonl(
        folder / "s.jsonl",
        [{"type": "user", "message": {"role": "user", "content": "no uuid, no cwd"}}],
    )
    (conv,), _ = read(project, tmp_path / "home")
    assert conv.workspace == str(project)
    assert [m.text for m in conv.messages] == ["no uuid, no cwd"]


def test_since_filters_by_last_activity_and_file_time(tmp_path: Path) -> None:
    fx = write_claude_session(tmp_path)
    assert read(fx.project, fx.home, since=T0 + 4 * MINUTE)[0]  # ended at T0 + 5 min
    convs, skips = read(fx.project, fx.home, since=T0 + 6 * MINUTE)
    assert convs == [] and reasons(skips) == {"older than since": 1}
    set_mtime(fx.path, T0)
    convs, skips = read(fx.project, fx.home, since=T0 + 4 * MINUTE)
    assert convs == [] and reasons(skips) == {"older than since": 1}  # not even opened


def test_truncated_and_invalid_lines_are_counted(tmp_path: Path) -> None:
    fx = write_claude_session(tmp_path, truncate_last=True)
    with fx.path.open("r+", encoding="utf-8") as f:
        lines = f.read().split("\n")
        lines.insert(3, "{oops")
        lines.insert(4, "[1, 2]")
        f.seek(0)
        f.write("\n".join(lines))
    (conv,), skips = read(fx.project, fx.home)
    assert reasons(skips) == {"truncated line": 1, "invalid json": 1, "invalid record": 1}
    # The cut line was the last message, "Done.": the chain ends at the tool result before it.
    assert conv.messages[-1].text == "[result] ok"


def test_invalid_utf8_binary_and_huge_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fx = write_claude_session(tmp_path)
    raw = fx.path.read_bytes().replace(b"Let me look.", b"Let me \xff look.")
    fx.path.write_bytes(raw)
    folder = fx.path.parent
    (folder / "binary.jsonl").write_bytes(b"\x00\x01\x02" * 100)
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "agent-1234.jsonl").write_text("{}\n")
    before = snapshot(fx.home)
    (conv,), skips = read(fx.project, fx.home)
    assert conv.messages[1].text == "Let me \ufffd look."
    assert reasons(skips) == {
        "invalid utf-8": 1,
        "binary file": 1,
        "no messages": 1,
        "sidechain": 1,
    }
    monkeypatch.setattr(claude_code, "MAX_LOG_BYTES", 100)
    convs, skips = read(fx.project, fx.home)
    assert convs == [] and reasons(skips)["too large"] == 2
    assert snapshot(fx.home) == before


def test_missing_keys_do_not_crash(tmp_path: Path) -> None:
    folder = claude_projects_dir(tmp_path / "home") / "-x"
    write_jsonl(
        folder / "odd.jsonl",
        [
            {"type": "user"},
            {"type": "user", "message": "not a dict"},
            {"type": "assistant", "message": {"content": 42}},
            {"type": "assistant", "message": {"content": [None, {"type": "tool_use"}]}},
            {"type": "user", "message": {"content": [{"type": "tool_result", "content": None}]}},
            {"type": "summary"},
        ],
    )
    (conv,) = claude_code.read(None, home=tmp_path / "home", skips=SkipLog())
    assert [m.text for m in conv.messages] == ["[tool: unknown]", "[result]"]
