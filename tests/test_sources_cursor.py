"""Cursor reader: the four storage generations in real SQLite files, filters, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest
from chat_fixtures import (
    MINUTE,
    T0,
    build_cursor_workspace,
    cursor_user_dir,
    file_uri,
    iso,
    ms,
    snapshot,
    write_vscdb,
)

from storage.sources import cursor
from storage.sources.records import CodeBlock, Conversation, SkipLog


def read(project: Path | None, home: Path, **kw: object) -> tuple[list[Conversation], SkipLog]:
    skips = SkipLog()
    convs = list(cursor.read(project, home=home, platform="linux", skips=skips, **kw))
    return convs, skips


def reasons(skips: SkipLog) -> dict[str, int]:
    return {r: n for (_, r), n in skips.counts.items()}


@pytest.mark.parametrize("generation", ["A", "B", "C", "D"])
def test_each_generation_is_read_in_order_with_roles(tmp_path: Path, generation: str) -> None:
    fx = build_cursor_workspace(tmp_path, generation, tmp_path / "proj")
    before = snapshot(fx.home)
    convs, _ = read(fx.project, fx.home)
    assert [c.external_id for c in convs] == fx.ids
    conv = convs[0]
    assert conv.tool == "cursor"
    assert conv.title == "Config loading"
    assert conv.workspace == str(fx.project)
    assert conv.metadata["generation"] == generation
    got = [(m.role, m.text) for m in conv.messages]
    assert len(got) == len(fx.expected)
    for (role, text), (want_role, start) in zip(got, fx.expected):
        assert role == want_role and text.startswith(start)
    assert [m.idx for m in conv.messages] == list(range(len(conv.messages)))
    assert conv.origin.endswith("state.vscdb")
    assert snapshot(fx.home) == before  # nothing written, no -wal/-shm left behind


def test_generation_a_text_fallbacks_selections_and_times(tmp_path: Path) -> None:
    fx = build_cursor_workspace(tmp_path, "A", tmp_path / "proj")
    (conv,), _ = read(fx.project, fx.home)
    first, answer, second, _ = conv.messages
    # initText is a Lexical editor state: its paragraphs become lines.
    assert first.text == f"How does {fx.project}/src/config.py load the settings?\nThanks"
    assert first.files == ("src/config.py",)
    assert CodeBlock("CONFIG = {}", None, "src/config.py") in first.code_blocks
    assert second.text == "And the tests?"  # from delegate.a
    assert answer.code_blocks == (
        CodeBlock("def load():\n    return {}", "python", "src/config.py"),
    )
    assert conv.ended_at == T0 + 2 * MINUTE  # lastSendTime


@pytest.mark.parametrize("generation", ["B", "C"])
def test_composer_code_blocks_files_and_time_fallback(tmp_path: Path, generation: str) -> None:
    fx = build_cursor_workspace(tmp_path, generation, tmp_path / "proj")
    (conv,), _ = read(fx.project, fx.home)
    user, assistant = conv.messages
    assert user.files == ("src/config.py",)  # relevantFiles + context selection, deduplicated
    assert [b.filename for b in assistant.code_blocks] == ["src/config.py", "src/app.py"]
    assert assistant.code_blocks[1] == CodeBlock("CONFIG = load()", "python", "src/app.py")
    # No per-bubble time: the composer's createdAt stands in, and says so.
    assert user.at == T0 and user.metadata["time_source"] == "composer"
    assert (conv.started_at, conv.ended_at) == (T0, T0 + 3 * MINUTE)


def test_generation_d_order_orphans_times_tools(tmp_path: Path) -> None:
    fx = build_cursor_workspace(tmp_path, "D", tmp_path / "proj", orphans=2)
    (conv,), skips = read(fx.project, fx.home)
    user, tool, answer, thanks = conv.messages
    # Header order (z1, y2, x3, w4), not key order.
    assert [m.metadata["bubbleId"] for m in conv.messages] == ["z1", "y2", "x3", "w4"]
    assert reasons(skips) == {"orphan bubble": 2}
    # createdAt, then timingInfo (epoch ms only, relative timers ignored), then the composer.
    assert user.at == T0
    assert tool.at == T0 + MINUTE
    assert answer.at == T0 + 2 * MINUTE
    assert thanks.at == T0 and thanks.metadata["time_source"] == "composer"
    assert tool.role == "tool" and tool.metadata == {
        "bubbleId": "y2",
        "tool": "read_file",
        "kind": "call",
    }
    assert tool.text.startswith('[tool: read_file] {"targetFile": ')
    assert "[result] def load(): ..." in tool.text
    assert tool.files == ("src/config.py",)
    # The same code from codeBlocks and the fenced block is kept once.
    assert answer.code_blocks == (
        CodeBlock("def load():\n    return {}", "python", "src/config.py"),
    )
    assert user.files == ("src/config.py",)
    assert conv.metadata["summary"] == "Explained config loading."
    assert conv.metadata["version"] == 10


def test_composer_project_inferred_from_paths_and_filtered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = build_cursor_workspace(
        tmp_path, "D", tmp_path / "proj", home=home, header_in_workspace=False
    )
    other_root = tmp_path / "other"
    (other_root / ".git").mkdir(parents=True)
    other = build_cursor_workspace(
        tmp_path, "D", other_root, home=home, header_in_workspace=False, conversation_id="o"
    )
    convs, skips = read(mine.project, home)
    assert [c.external_id for c in convs] == mine.ids
    assert convs[0].workspace == str(mine.project)
    assert convs[0].metadata["workspace_inferred"] is True
    # The other composer is refused without its orphan rows being counted.
    assert reasons(skips) == {"not this workspace": 1, "orphan bubble": 1}

    everything, _ = read(mine.project, home, all_workspaces=True)
    by_id = {c.external_id: c for c in everything}
    assert set(by_id) == {*mine.ids, *other.ids}
    assert by_id["o"].workspace == str(other_root)  # its git root


def test_workspace_header_decides_over_paths(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_cursor_workspace(tmp_path, "C", tmp_path / "proj", home=home)
    other = build_cursor_workspace(tmp_path, "C", tmp_path / "other", home=home)
    convs, skips = read(tmp_path / "proj", home)
    assert other.ids[0] not in [c.external_id for c in convs]
    assert len(convs) == 1
    assert reasons(skips) == {"not this workspace": 1}
    none_root, _ = read(None, home)
    assert {c.workspace for c in none_root} == {str(tmp_path / "proj"), str(other.project)}


def test_relative_paths_only_match_files_under_the_root(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "config.py").write_text("x = 1\n")
    db = tmp_path / "globalStorage" / "state.vscdb"
    composer = {
        "_v": 10,
        "composerId": "rel",
        "createdAt": ms(T0),
        "fullConversationHeadersOnly": [{"bubbleId": "b1", "type": 1}],
    }
    nofiles = {**composer, "composerId": "nofiles"}
    write_vscdb(
        db,
        disk_kv={
            "composerData:rel": composer,
            "bubbleId:rel:b1": {"type": 1, "text": "hi", "relevantFiles": ["src/config.py"]},
            "composerData:nofiles": nofiles,
            "bubbleId:nofiles:b1": {"type": 1, "text": "hello"},
        },
    )
    skips = SkipLog()
    convs = list(cursor.read(project, paths=[db], skips=skips))
    assert [c.external_id for c in convs] == ["rel"]
    assert convs[0].workspace == str(project)
    assert reasons(skips) == {"unknown workspace": 1}
    all_convs = list(cursor.read(project, paths=[db], all_workspaces=True, skips=SkipLog()))
    assert {c.external_id: c.workspace for c in all_convs} == {
        "rel": str(project),
        "nofiles": None,
    }


def test_since_skips_old_composers_and_tabs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for generation in "ABCD":
        build_cursor_workspace(tmp_path, generation, tmp_path / "proj", home=home)
    recent, skips = read(tmp_path / "proj", home, since=T0 + 10 * MINUTE)
    assert recent == []
    assert reasons(skips) == {"older than since": 4}
    kept, _ = read(tmp_path / "proj", home, since=T0 + MINUTE)
    assert len(kept) == 4  # each was active after T0 + 1 min


def test_unknown_version_is_counted_and_still_read(tmp_path: Path) -> None:
    fx = build_cursor_workspace(tmp_path, "D", tmp_path / "proj", version=99)
    (conv,), skips = read(fx.project, fx.home)
    assert len(conv.messages) == 4
    assert reasons(skips)["unknown version"] == 1


def test_missing_bubble_rows_and_unknown_bubble_types(tmp_path: Path) -> None:
    db = tmp_path / "g" / "state.vscdb"
    write_vscdb(
        db,
        disk_kv={
            "composerData:c": {
                "_v": 3,
                "composerId": "c",
                "fullConversationHeadersOnly": [
                    {"bubbleId": "gone", "type": 1},
                    {"bubbleId": "odd", "type": 7},
                    {"bubbleId": "ok", "type": 1},
                    "not a header",
                ],
            },
            "bubbleId:c:odd": {"type": 7, "text": "?"},
            "bubbleId:c:ok": {"type": 1, "text": "fine"},
        },
    )
    skips = SkipLog()
    (conv,) = cursor.read(None, paths=[db], skips=skips)
    assert [m.text for m in conv.messages] == ["fine"]
    assert reasons(skips) == {"missing bubble": 1, "unknown bubble type": 1}


def test_corrupt_empty_and_non_sqlite_databases_are_skipped(tmp_path: Path) -> None:
    fx = build_cursor_workspace(tmp_path, "B", tmp_path / "proj")
    ws = cursor_user_dir(fx.home) / "workspaceStorage"
    (ws / "text").mkdir()
    (ws / "text" / "state.vscdb").write_text("this is not a database")
    (ws / "empty").mkdir()
    (ws / "empty" / "state.vscdb").write_bytes(b"")
    (ws / "garbled").mkdir()
    good = fx.workspace_db.read_bytes()
    # A valid header followed by garbage pages.
    (ws / "garbled" / "state.vscdb").write_bytes(good[:100] + b"\xff" * (len(good) - 100))
    before = snapshot(fx.home)
    convs, skips = read(fx.project, fx.home)
    assert [c.external_id for c in convs] == fx.ids
    assert reasons(skips) == {"corrupt database": 3}
    assert snapshot(fx.home) == before


def test_invalid_json_values_and_unknown_shapes(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    fx = build_cursor_workspace(tmp_path, "D", project)
    write_vscdb(
        fx.global_db,
        disk_kv={
            "composerData:broken": "{not json",
            "composerData:list": [1, 2],
            "composerData:strange": {"composerId": "strange"},
            "bubbleId:" + fx.ids[0] + ":bad": b"\xff\xfe{",
        },
    )
    write_vscdb(fx.workspace_db, {"workbench.panel.aichat.view.aichat.chatdata": {"x": 1}})
    convs, skips = read(project, fx.home)
    assert [c.external_id for c in convs] == fx.ids
    got = reasons(skips)
    assert got["invalid json"] == 2  # the broken composer and the undecodable bubble
    assert got["invalid utf-8"] == 1
    assert got["unknown shape"] == 3  # a list, a composer with no body, chat data without tabs


def test_too_large_value_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fx = build_cursor_workspace(tmp_path, "B", tmp_path / "proj")
    monkeypatch.setattr(cursor, "MAX_VALUE_BYTES", 100)
    convs, skips = read(fx.project, fx.home)
    assert convs == []
    assert reasons(skips) == {"too large": 1}


def test_a_sqlite_file_without_cursors_tables_is_a_counted_skip(tmp_path: Path) -> None:
    fx = build_cursor_workspace(tmp_path, "B", tmp_path / "proj")
    other = cursor_user_dir(fx.home) / "workspaceStorage" / "other" / "state.vscdb"
    other.parent.mkdir()
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE other(x)")
    conn.close()
    convs, skips = read(fx.project, fx.home)
    assert [c.external_id for c in convs] == fx.ids  # the rest is read
    assert reasons(skips) == {"not a Cursor database (no ItemTable or cursorDiskKV)": 1}


def test_one_of_cursors_tables_is_enough(tmp_path: Path) -> None:
    db = tmp_path / "only" / "state.vscdb"
    db.parent.mkdir()
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE ItemTable(key TEXT PRIMARY KEY, value BLOB)")
    conn.close()
    skips = SkipLog()
    assert list(cursor.read(None, paths=[db.parent], skips=skips)) == []
    assert skips.total == 0


@pytest.mark.parametrize("wal", [False, True])
def test_database_held_by_an_exclusive_writer_is_still_read(tmp_path: Path, wal: bool) -> None:
    fx = build_cursor_workspace(tmp_path, "B", tmp_path / "proj", wal=wal)
    writer = apsw.Connection(str(fx.workspace_db))
    try:
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("INSERT INTO ItemTable VALUES ('pending', 'uncommitted')")
        mtime = fx.workspace_db.stat().st_mtime_ns
        convs, skips = read(fx.project, fx.home)
        assert [c.external_id for c in convs] == fx.ids
        assert skips.total == 0
        assert fx.workspace_db.stat().st_mtime_ns == mtime
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_database_that_stays_locked_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fx = build_cursor_workspace(tmp_path, "B", tmp_path / "proj")

    def always_busy(self: cursor.ReadOnlyDb, mode: str) -> apsw.Connection:
        raise apsw.BusyError("database is locked")

    monkeypatch.setattr(cursor.ReadOnlyDb, "_open", always_busy)
    convs, skips = read(fx.project, fx.home)
    assert convs == []
    assert reasons(skips) == {"database locked": 1}


def test_busy_reads_fall_back_to_a_private_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fx = build_cursor_workspace(tmp_path, "B", tmp_path / "proj")
    real_open = cursor.ReadOnlyDb._open
    modes: list[str] = []

    def busy_unless_copy(self: cursor.ReadOnlyDb, mode: str) -> apsw.Connection:
        modes.append(mode)
        if mode != "copy":
            raise apsw.BusyError("database is locked")
        return real_open(self, mode)

    monkeypatch.setattr(cursor.ReadOnlyDb, "_open", busy_unless_copy)
    before = snapshot(fx.home)
    convs, skips = read(fx.project, fx.home)
    assert [c.external_id for c in convs] == fx.ids
    assert modes == ["ro", "immutable", "copy"]
    assert skips.total == 0
    assert snapshot(fx.home) == before


def test_paths_override_and_workspace_json_uri_decoding(tmp_path: Path) -> None:
    project = tmp_path / "my project é"
    fx = build_cursor_workspace(tmp_path, "B", project)
    meta = json.loads((fx.workspace_db.parent / "workspace.json").read_text())
    assert "%20" in meta["folder"] and meta["folder"] == file_uri(project)
    skips = SkipLog()
    (conv,) = cursor.read(project, paths=[fx.workspace_db], skips=skips)
    assert conv.workspace == str(project)
    assert skips.total == 0


def test_chat_tab_edge_cases(tmp_path: Path) -> None:
    db = tmp_path / "ws" / "state.vscdb"
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "workspace.json").write_text(json.dumps({"folder": file_uri(tmp_path)}))
    chat = {
        "tabs": [
            {
                "tabId": "t1",
                "bubbles": [
                    {"type": "user", "rawText": "raw question"},
                    {"type": "robot", "text": "?"},
                    {"type": "ai", "rawText": ""},
                    {"type": "ai", "text": "answer", "createdAt": iso(T0)},
                    "junk",
                ],
            },
            {"tabId": "t2", "bubbles": []},
            "junk",
        ]
    }
    write_vscdb(db, {"workbench.panel.aichat.view.aichat.chatdata": chat})
    skips = SkipLog()
    (conv,) = cursor.read(tmp_path, paths=[db], skips=skips)
    assert [(m.role, m.text) for m in conv.messages] == [
        ("user", "raw question"),
        ("assistant", "answer"),
    ]
    assert conv.messages[1].at == T0
    assert conv.title is None
    assert reasons(skips) == {"unknown bubble type": 1, "no messages": 1}


def test_closed_wal_database_is_read_without_creating_side_files(tmp_path: Path) -> None:
    fx = build_cursor_workspace(tmp_path, "D", tmp_path / "proj", wal=True)
    assert not Path(f"{fx.global_db}-wal").exists()
    before = snapshot(fx.home)
    convs, _ = read(fx.project, fx.home)
    assert [c.external_id for c in convs] == fx.ids
    assert snapshot(fx.home) == before
    assert not Path(f"{fx.global_db}-wal").exists()
    assert not Path(f"{fx.global_db}-shm").exists()
