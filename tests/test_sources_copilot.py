"""Copilot Chat reader: .json sessions, replayed .jsonl mutation logs, windows, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_fixtures import (
    MINUTE,
    T0,
    copilot_session,
    copilot_user_dir,
    set_mtime,
    snapshot,
    write_copilot_session,
    write_jsonl,
)

from storage.sources import copilot
from storage.sources.records import CodeBlock, Conversation, SkipLog


def read(project: Path | None, home: Path, **kw: object) -> tuple[list[Conversation], SkipLog]:
    skips = SkipLog()
    kw.setdefault("platform", "linux")
    return list(copilot.read(project, home=home, skips=skips, **kw)), skips


def reasons(skips: SkipLog) -> dict[str, int]:
    return {r: n for (_, r), n in skips.counts.items()}


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_session_is_read_in_order(tmp_path: Path, fmt: str) -> None:
    fx = write_copilot_session(tmp_path, fmt=fmt)
    before = snapshot(fx.home)
    (conv,), skips = read(fx.project, fx.home)
    assert skips.total == 0
    got = [(m.role, m.text) for m in conv.messages]
    assert len(got) == len(fx.expected)
    for (role, text), (want_role, start) in zip(got, fx.expected):
        assert role == want_role and text.startswith(start), (role, text)
    assert conv.external_id == fx.session_id
    assert conv.title == "Config question"
    assert conv.workspace == str(fx.project)
    assert (conv.started_at, conv.ended_at) == (T0, T0 + 5 * MINUTE)
    assert conv.metadata["format"] == fmt and conv.metadata["version"] == 3
    assert snapshot(fx.home) == before


def test_references_code_tools_and_times(tmp_path: Path) -> None:
    fx = write_copilot_session(tmp_path)
    (conv,), _ = read(fx.project, fx.home)
    question, answer, tool, tail, thanks, welcome = conv.messages
    assert question.files == ("src/config.py",)  # an attached file variable
    assert question.at == T0 and question.metadata == {"requestId": "request_1"}
    assert answer.text == "Open `src/config.py` and call it:\n\n```python\nCONFIG = load()\n```"
    assert answer.files == ("src/config.py",)
    assert answer.code_blocks == (CodeBlock("CONFIG = load()", "python", None),)
    assert answer.at == T0 + 4.0  # the request time plus totalElapsed
    assert answer.metadata["model"] == "copilot/gpt-4.1"
    assert tool.metadata["tool"] == "copilot_readFile" and tool.metadata["kind"] == "call"
    assert tail.text == "That is all."  # progress messages are not text
    assert thanks.text == "Thanks!"  # an old plain-string message
    assert welcome.at == thanks.at == T0 + 5 * MINUTE


def test_replay_semantics() -> None:
    skips = SkipLog()
    text = "\n".join(
        json.dumps(e)
        for e in [
            {"kind": 0, "v": {"a": [1, 2, 3], "b": {"c": 1}}},
            {"kind": 2, "k": ["a"], "v": [9], "i": 1},  # truncate to [1], push 9
            {"kind": 2, "k": ["new"], "v": [1]},  # a missing array is created
            {"kind": 2, "k": ["a"], "i": 0},  # pure truncation
            {"kind": 1, "k": ["b", "c"], "v": 2},
            {"kind": 3, "k": ["b", "gone"]},
            {"kind": 1, "k": ["x", "y"], "v": 1},  # no "x": does not fit
            {"kind": 7, "k": []},
            {"kind": 2, "k": ["b"], "v": "not a list"},
        ]
    )
    state = copilot.replay(text, "copilot", "t", skips)
    assert state == {"a": [], "b": {"c": 2}, "new": [1]}
    assert reasons(skips) == {"invalid mutation": 2, "unknown mutation": 1}
    assert copilot.replay('{"kind": 1, "k": ["a"], "v": 1}\n', "copilot", "t", skips) is None
    assert copilot.replay('{"kind": 1, "k": [], "v": {"z": 1}}', "copilot", "t", SkipLog()) is None


def test_jsonl_with_bad_entries_keeps_the_rest(tmp_path: Path) -> None:
    fx = write_copilot_session(tmp_path, fmt="jsonl")
    with fx.path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": 1, "k": ["requests", 9, "x"], "v": 1}) + "\n")
        f.write(json.dumps({"kind": 5}) + "\n")
        f.write('{"kind": 1, "k": ["customTitle"], "v": "cut')
    (conv,), skips = read(fx.project, fx.home)
    assert conv.title == "Config question"
    assert len(conv.messages) == len(fx.expected)
    assert reasons(skips) == {"invalid mutation": 1, "unknown mutation": 1, "truncated line": 1}


def test_empty_window_sessions_only_for_every_workspace(tmp_path: Path) -> None:
    fx = write_copilot_session(tmp_path, empty_window=True)
    convs, skips = read(fx.project, fx.home)
    assert convs == [] and reasons(skips) == {"not this workspace": 1}
    (conv,), _ = read(fx.project, fx.home, all_workspaces=True)
    assert conv.workspace is None
    assert len(read(None, fx.home)[0]) == 1


def test_other_workspace_and_since(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = write_copilot_session(tmp_path, tmp_path / "proj", home=home, session_id="mine")
    write_copilot_session(tmp_path, tmp_path / "other", home=home, session_id="theirs")
    convs, skips = read(mine.project, home)
    assert [c.external_id for c in convs] == ["mine"]
    assert reasons(skips) == {"not this workspace": 1}
    assert sorted(c.external_id for c in read(None, home)[0]) == ["mine", "theirs"]
    convs, skips = read(mine.project, home, since=T0 + 6 * MINUTE)
    assert convs == [] and reasons(skips) == {"not this workspace": 1, "older than since": 1}
    set_mtime(mine.path, T0)
    _, skips = read(mine.project, home, since=T0 + MINUTE)
    assert reasons(skips)["older than since"] == 1


def test_jsonl_hides_the_json_of_the_same_session(tmp_path: Path) -> None:
    fx = write_copilot_session(tmp_path, fmt="jsonl")
    legacy = fx.path.with_suffix(".json")
    legacy.write_text(json.dumps(copilot_session(fx.project, fx.session_id)))
    convs, _ = read(fx.project, fx.home)
    assert [c.metadata["format"] for c in convs] == ["jsonl"]


def test_windows_and_macos_locations(tmp_path: Path) -> None:
    for platform in ("win32", "darwin"):
        home = tmp_path / platform
        fx = write_copilot_session(tmp_path, home=home, platform=platform)
        assert copilot_user_dir(home, platform) in fx.path.parents
        (conv,), _ = read(fx.project, home, platform=platform)
        assert conv.external_id == fx.session_id
    assert copilot.default_locations(tmp_path, "win32")[0] == (
        tmp_path / "AppData" / "Roaming" / "Code" / "User"
    )


def test_unknown_version_and_bad_files(tmp_path: Path) -> None:
    fx = write_copilot_session(tmp_path)
    data = json.loads(fx.path.read_text())
    data["version"] = 42
    fx.path.write_text(json.dumps(data))
    folder = fx.path.parent
    (folder / "broken.json").write_text('{"version": 3, "requests": [')
    (folder / "empty.json").write_text("")
    (folder / "binary.json").write_bytes(b"\x00\x01")
    (folder / "list.json").write_text("[1]")
    (folder / "norequests.json").write_text('{"version": 3}')
    (folder / "nothing.json").write_text('{"version": 3, "requests": [{"response": []}, 5]}')
    (folder / "latin1.json").write_bytes(
        json.dumps({"requests": [{"message": {"text": "caf_"}}]}).encode().replace(b"_", b"\xe9")
    )
    write_jsonl(folder / "noinit.jsonl", [{"kind": 1, "k": ["a"], "v": 1}])
    before = snapshot(fx.home)
    convs, skips = read(fx.project, fx.home)
    by_id = {c.external_id: c for c in convs}
    assert set(by_id) == {fx.session_id, "latin1"}
    assert len(by_id[fx.session_id].messages) == len(fx.expected)
    assert by_id["latin1"].messages[0].text == "caf\ufffd"
    assert reasons(skips) == {
        "unknown version": 1,
        "invalid json": 1,
        "empty file": 1,
        "binary file": 1,
        "unknown shape": 2,
        "no messages": 1,
        "invalid utf-8": 1,
        "invalid mutation": 1,
    }
    assert snapshot(fx.home) == before


def test_too_large_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fx = write_copilot_session(tmp_path)
    monkeypatch.setattr(copilot, "MAX_LOG_BYTES", 100)
    convs, skips = read(fx.project, fx.home)
    assert convs == [] and reasons(skips) == {"too large": 1}
