"""The chat dispatcher, per-OS default folders and the helpers the readers share."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from chat_fixtures import (
    T0,
    build_all_chats,
    build_cursor_workspace,
    snapshot,
    write_claude_session,
    write_codex_session,
    write_copilot_session,
    write_specstory,
)

from storage.sources import chats, claude_code, codex, copilot, cursor, specstory
from storage.sources.chats import (
    fenced_code_blocks,
    json_lines,
    relative_file,
    to_epoch,
    workspace_matches,
)
from storage.sources.records import CodeBlock, SkipLog


def reasons(skips: SkipLog) -> dict[str, int]:
    out: dict[str, int] = {}
    for (_, reason), n in skips.counts.items():
        out[reason] = out.get(reason, 0) + n
    return out


# ---------------------------------------------------------------- dispatcher


def test_read_all_reads_every_tool_for_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    ids = build_all_chats(tmp_path, project)
    build_all_chats(tmp_path / "x", tmp_path / "elsewhere", home=tmp_path / "home")
    home = tmp_path / "home"
    before = snapshot(tmp_path)
    skips = SkipLog()
    convs = list(chats.read_all(project, home=home, platform="linux", skips=skips))
    got: dict[str, list[str]] = {}
    for c in convs:
        got.setdefault(c.tool, []).append(c.external_id)
        assert c.workspace == str(project)
        assert c.messages and [m.idx for m in c.messages] == list(range(len(c.messages)))
    assert {t: sorted(v) for t, v in got.items()} == {t: sorted(v) for t, v in ids.items()}
    assert list(got) == list(chats.TOOLS)  # tools are read in TOOLS order
    assert reasons(skips)["not this workspace"] == 7  # Cursor A-D, Copilot, Claude, Codex
    assert snapshot(tmp_path) == before

    some = list(chats.read_all(project, tools=["codex", "claude"], home=home, skips=SkipLog()))
    assert [c.tool for c in some] == ["codex", "claude"]
    every = list(chats.read_all(None, home=home, platform="linux", skips=SkipLog()))
    assert len(every) == 2 * (len(convs) - 1)  # without a root, no SpecStory folder to read


def test_one_failing_reader_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    project = tmp_path / "proj"
    build_all_chats(tmp_path, project)

    def boom(*args: object, **kw: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(copilot, "read", boom)
    skips = SkipLog()
    with caplog.at_level(logging.WARNING, logger="storage.sources.chats"):
        convs = list(chats.read_all(project, home=tmp_path / "home", skips=skips))
    assert {c.tool for c in convs} == {"cursor", "specstory", "claude", "codex"}
    assert reasons(skips)["reader failed: boom"] == 1
    failed = [(s, w) for s, w, r in skips.examples if r.startswith("reader failed")]
    assert failed == [("copilot", str(project))]
    assert any(r.exc_info for r in caplog.records)


def test_failure_in_the_middle_of_a_reader_keeps_what_it_yielded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    build_all_chats(tmp_path, project)
    real = claude_code._conversation
    calls = []

    def second_fails(*args: object, **kw: object) -> object:
        calls.append(1)
        if len(calls) > 1:
            raise ValueError("late")
        return real(*args, **kw)  # type: ignore[arg-type]

    write_claude_session(tmp_path, project, home=tmp_path / "home", session_id="zz")
    monkeypatch.setattr(claude_code, "_conversation", second_fails)
    skips = SkipLog()
    convs = list(chats.read_all(project, tools=["claude"], home=tmp_path / "home", skips=skips))
    assert len(convs) == 1
    assert reasons(skips) == {"reader failed: late": 1}


def test_unknown_tool_is_counted(tmp_path: Path) -> None:
    skips = SkipLog()
    assert list(chats.read_all(tmp_path, tools=["aider"], home=tmp_path, skips=skips)) == []
    assert reasons(skips) == {"unknown tool": 1}


def test_paths_per_tool_or_as_a_plain_list(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    home = tmp_path / "home"
    cur = build_cursor_workspace(tmp_path, "B", project, home=home)
    cop = write_copilot_session(tmp_path, project, home=home, fmt="jsonl")
    cla = write_claude_session(tmp_path, project, home=home)
    cod = write_codex_session(tmp_path, project, home=home)
    spec = write_specstory(project)
    junk = tmp_path / "notes.txt"
    junk.write_text("hello")

    mapping = {"claude": [cla.path], "codex": [cod.path]}
    skips = SkipLog()
    by_map = list(chats.read_all(project, tools=["claude", "codex"], paths=mapping, skips=skips))
    assert [c.tool for c in by_map] == ["claude", "codex"]

    files = [cur.workspace_db, cop.path, cla.path, cod.path, spec, junk]
    skips = SkipLog()
    by_list = list(chats.read_all(project, paths=files, skips=skips))
    assert sorted(c.tool for c in by_list) == sorted(chats.TOOLS)
    assert reasons(skips) == {"unknown format": 1}
    # Chat files found under a folder go to their tools; other files there are ignored.
    skips = SkipLog()
    by_dir = list(chats.read_all(project, paths=[home, project], skips=skips))
    assert sorted(c.tool for c in by_dir) == sorted(chats.TOOLS)
    assert skips.total == 0


def test_sniff_recognises_each_format(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    cur = build_cursor_workspace(tmp_path, "D", project)
    assert chats.sniff(cur.global_db) == "cursor"
    assert chats.sniff(write_copilot_session(tmp_path, project, fmt="jsonl").path) == "copilot"
    json_session = write_copilot_session(tmp_path, project, fmt="json", session_id="j").path
    assert chats.sniff(json_session) == "copilot"
    assert chats.sniff(write_claude_session(tmp_path, project).path) == "claude"
    assert chats.sniff(write_codex_session(tmp_path, project).path) == "codex"
    assert chats.sniff(write_specstory(project)) == "specstory"
    assert chats.sniff(tmp_path / "missing.jsonl") is None


@pytest.mark.parametrize(
    ("platform", "base"),
    [
        ("linux", ".config"),
        ("darwin", "Library/Application Support"),
        ("win32", "AppData/Roaming"),
    ],
)
def test_default_locations_per_platform(tmp_path: Path, platform: str, base: str) -> None:
    home = tmp_path
    assert cursor.default_locations(home, platform) == [home / base / "Cursor" / "User"]
    assert copilot.default_locations(home, platform)[0] == home / base / "Code" / "User"
    assert claude_code.default_locations(home, platform)[0] == home / ".claude" / "projects"
    assert codex.default_locations(home, platform)[0] == home / ".codex" / "sessions"
    assert specstory.default_locations(home, platform) == []


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_fixtures_at_default_locations_are_found(tmp_path: Path, platform: str) -> None:
    project = tmp_path / "proj"
    build_cursor_workspace(tmp_path, "C", project, platform=platform)
    write_copilot_session(tmp_path, project, platform=platform)
    tools = ["cursor", "copilot"]
    home = tmp_path / "home"
    convs = list(
        chats.read_all(project, home=home, platform=platform, tools=tools, skips=SkipLog())
    )
    assert [c.tool for c in convs] == ["cursor", "copilot"]


def test_nothing_installed_means_nothing_read(tmp_path: Path) -> None:
    skips = SkipLog()
    assert list(chats.read_all(tmp_path, home=tmp_path / "nohome", skips=skips)) == []
    assert skips.total == 0


# ---------------------------------------------------------------- helpers


def test_to_epoch_accepts_the_tools_time_forms() -> None:
    assert to_epoch(T0) == T0
    assert to_epoch(T0 * 1000) == T0
    assert to_epoch(T0 * 1_000_000) == T0
    assert to_epoch(str(int(T0 * 1000))) == T0
    assert to_epoch("2024-06-01T10:00:00.000Z") == T0
    assert to_epoch("2024-06-01T10:00:00.123456789Z") == pytest.approx(T0 + 0.123456)
    assert to_epoch("2024-06-01T12:00:00+02:00") == T0
    assert to_epoch("2024-06-01T10:00:00") == T0  # naive ISO: UTC
    for bad in (None, True, 12.5, "", "yesterday", float("nan"), [], {}):
        assert to_epoch(bad) is None


def test_fenced_code_blocks() -> None:
    text = (
        "intro\n```python:src/a.py\nx = 1\n```\n"
        "~~~\nplain\n~~~\n"
        "````md\n```inner```\n````\n"
        "```12:14:src/b.py\ny = 2\n```\n"
        "```\n\n```\n"
        "```ts\nunclosed"
    )
    assert fenced_code_blocks(text) == (
        CodeBlock("x = 1", "python", "src/a.py"),
        CodeBlock("plain", None, None),
        CodeBlock("```inner```", "md", None),
        CodeBlock("y = 2", None, "src/b.py"),
        CodeBlock("unclosed", "ts", None),
    )
    assert fenced_code_blocks("no code here") == ()


def test_paths_relative_to_the_root(tmp_path: Path) -> None:
    root = tmp_path / "my proj"
    root.mkdir()
    assert relative_file(str(root / "src" / "a.py"), root) == "src/a.py"
    assert relative_file("file://" + str(root).replace(" ", "%20") + "/b.py", root) == "b.py"
    assert relative_file("/elsewhere/c.py", root) == "/elsewhere/c.py"
    assert relative_file("rel/d.py", root) == "rel/d.py"
    assert relative_file(str(root / "e.py"), None) == str(root / "e.py")
    win = Path("C:/Users/me/proj")
    assert relative_file("file:///c%3A/Users/me/proj/src/x.ts", win) == "src/x.ts"


def test_workspace_matching(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    link = tmp_path / "link"
    link.symlink_to(root)
    assert workspace_matches(str(root), root)
    assert workspace_matches(str(root / "sub"), root)
    assert workspace_matches(str(root) + "/", root)
    assert workspace_matches(str(link), root)  # the same folder through a symlink
    assert not workspace_matches(str(tmp_path / "proj-2"), root)
    assert not workspace_matches(str(tmp_path), root)  # a parent is not the project


def test_json_lines_counts_truncated_and_invalid_lines() -> None:
    skips = SkipLog()
    text = '{"a": 1}\n{bad\n[1]\n\n{"b": 2}\n{"c": '
    assert list(json_lines(text, "t", "w", skips)) == [{"a": 1}, {"b": 2}]
    assert reasons(skips) == {"invalid json": 1, "invalid record": 1, "truncated line": 1}
    skips = SkipLog()
    assert list(json_lines('{"a": 1}\n{"c": \n', "t", "w", skips)) == [{"a": 1}]
    assert reasons(skips) == {"invalid json": 1}  # it ended with a newline: not truncated
