"""The server's plumbing in-process: event fan-out isolates failing features, commands map
failures to LSP errors, typed conversion, forgiving settings, owned-file injection."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from server import settings as settings_mod
from server.app import LivingMemoryServer, create_server
from server.commands import command, parse_arguments
from server.convert import ConversionError, structure, unstructure
from server.injection import (
    GENERATED_MARKER,
    TARGETS,
    Injector,
    enable_claude_import,
    is_generated,
)
from server.projects import Project
from tests.server_support import uri

# ---- event fan-out ---------------------------------------------------------------------------


def test_a_failing_feature_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture):
    server = LivingMemoryServer()
    ran: list[str] = []

    @server.on("livingMemory/test", wait=False)
    def broken(params: object) -> None:
        raise RuntimeError("feature bug")

    @server.on("livingMemory/test", wait=False)
    async def fine(params: object) -> None:
        ran.append("fine")

    with caplog.at_level(logging.ERROR, logger="living_memory.server"):
        asyncio.run(server.fan_out("livingMemory/test", {}))
    assert ran == ["fine"]
    (record,) = [r for r in caplog.records if "feature" in r.getMessage()]
    assert "broken" in record.getMessage() and record.exc_info is not None


def test_events_wait_until_the_projects_exist():
    server = LivingMemoryServer()
    seen: list[str] = []

    @server.on("livingMemory/test")
    def listener(params: object) -> None:
        seen.append("ran")

    async def scenario() -> None:
        task = asyncio.ensure_future(server.fan_out("livingMemory/test", {}))
        await asyncio.sleep(0.05)
        assert seen == []
        server.started.set()
        await task

    asyncio.run(scenario())
    assert seen == ["ran"]


def test_every_feature_registers_without_conflicts():
    server = create_server()
    assert "livingMemory.enableClaudeImport" in server.protocol.fm.commands
    assert "livingMemory/diagnosticsChanged" in server.protocol.fm.features


# ---- commands --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Args:
    name: str
    count: int = 1


def test_an_unexpected_failure_is_an_internal_error_with_a_traceback(
    caplog: pytest.LogCaptureFixture,
):
    server = LivingMemoryServer()

    @command(server, "boom", Args)
    async def boom(a: Args) -> None:
        raise ZeroDivisionError("division by zero")

    handler = server.protocol.fm.commands["livingMemory.boom"]
    with (
        caplog.at_level(logging.ERROR, logger="living_memory.commands"),
        pytest.raises(JsonRpcInternalError) as info,
    ):
        asyncio.run(handler({"name": "x"}))
    assert "ZeroDivisionError" in info.value.message
    assert any(r.exc_info for r in caplog.records)


def test_arguments_are_parsed_into_the_dataclass():
    assert parse_arguments("c", Args, ({"name": "n", "count": 3},)) == Args("n", 3)
    assert parse_arguments("c", Args, ({"name": "n", "extra": True},)) == Args("n", 1)


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ((), "argument 'name' is required"),
        (({"name": 5},), "argument 'name': expected a string"),
        (({"name": "n", "count": True},), "argument 'count': expected an integer"),
        (({}, {}), "one object argument"),
        (([1, 2],), "one object"),
    ],
)
def test_bad_arguments_are_invalid_params_naming_the_argument(arguments: tuple, needle: str):
    with pytest.raises(JsonRpcInvalidParams) as info:
        parse_arguments("livingMemory.c", Args, arguments)
    assert needle in info.value.message and info.value.message.startswith("livingMemory.c: ")


# ---- conversion and settings -----------------------------------------------------------------


def test_keys_are_camel_case_on_the_wire_and_snake_case_accepted():
    s = structure({"debounce_ms": 50, "gitPollSeconds": 1.5}, settings_mod.Settings)
    assert (s.debounce_ms, s.git_poll_seconds) == (50, 1.5)
    assert unstructure(s)["debounceMs"] == 50


def test_conversion_names_every_bad_key():
    with pytest.raises(ConversionError) as info:
        structure({"budget": "x", "tierSplit": {"critical": "y"}}, settings_mod.Settings)
    paths = [p for p, _ in info.value.problems]
    assert paths == ["budget", "tierSplit.critical"]


def test_settings_keep_the_good_keys_and_default_the_bad_ones():
    s, problems = settings_mod.load(
        {"budget": -1, "debounceMs": 10, "injectionTargets": ["cursor"], "whatever": 1}
    )
    assert s.budget == 8000 and s.debounce_ms == 10 and s.injection_targets == ("cursor",)
    assert len(problems) == 1 and "budget" in problems[0] and "default" in problems[0]


def test_settings_wrapped_in_their_section_are_unwrapped():
    raw = settings_mod.section_of({"livingMemory": {"budget": 4000}})
    assert settings_mod.load(raw)[0].budget == 4000


def test_tier_split_must_add_up():
    _, problems = settings_mod.load({"tierSplit": {"critical": 0.5}})
    assert "add up to 1" in problems[0]


# ---- injection -------------------------------------------------------------------------------


def test_injector_writes_only_what_changed(tmp_path: Path):
    inj = Injector(tmp_path, ["agents", "cursor"])
    first = inj.write("# ctx\n")
    assert len(first.written) == 2
    path = tmp_path / TARGETS["agents"].path
    os.utime(path, (1, 1))
    second = inj.write("# ctx\n")
    assert second.written == [] and len(second.unchanged) == 2
    assert path.stat().st_mtime == 1
    assert len(inj.write("# other\n").written) == 2


def test_injector_refuses_a_file_it_did_not_write(tmp_path: Path):
    path = tmp_path / TARGETS["cursor"].path
    path.parent.mkdir(parents=True)
    path.write_text("my rule\n")
    result = Injector(tmp_path, ["cursor"]).write("# ctx\n")
    assert result.refused == [path] and path.read_text() == "my rule\n"


def test_injector_removes_only_its_own_files(tmp_path: Path):
    inj = Injector(tmp_path, ["agents", "copilot"])
    inj.write("# ctx\n")
    user = tmp_path / TARGETS["cursor"].path
    user.parent.mkdir(parents=True)
    user.write_text("mine\n")
    removed = inj.remove(["agents", "copilot", "cursor"])
    assert sorted(removed) == sorted(
        [tmp_path / TARGETS["agents"].path, tmp_path / TARGETS["copilot"].path]
    )
    assert user.read_text() == "mine\n"


def test_generated_files_carry_the_marker(tmp_path: Path):
    Injector(tmp_path, ["agents"]).write("# ctx\n")
    text = (tmp_path / TARGETS["agents"].path).read_text()
    assert text.startswith(GENERATED_MARKER) and is_generated(text)
    assert not is_generated("# CLAUDE.md\n")


def test_claude_import_creates_the_file_when_missing(tmp_path: Path):
    result = enable_claude_import(tmp_path)
    assert result["changed"] is True
    assert (tmp_path / "CLAUDE.md").read_text() == "@.living-memory/context.md\n"


# ---- injection never writes outside the folder (issue 14) -----------------------------------


def test_a_planted_temporary_symlink_is_never_written_through(tmp_path: Path):
    folder, victim = tmp_path / "ws", tmp_path / "victim.txt"
    (folder / ".cursor" / "rules").mkdir(parents=True)
    victim.write_text("precious\n")
    for pid in range(os.getpid() - 50, os.getpid() + 50):  # the old predictable names
        (folder / ".cursor" / "rules" / f".living-memory.mdc.{pid}.tmp").symlink_to(victim)
    result = Injector(folder, ["cursor"]).write("# ctx\n")
    assert result.written == [folder / TARGETS["cursor"].path]
    assert victim.read_text() == "precious\n"
    assert not (folder / TARGETS["cursor"].path).is_symlink()


def test_a_symlinked_git_exclude_is_neither_read_nor_replaced(tmp_path: Path):
    folder, outside = tmp_path / "ws", tmp_path / "outside-exclude"
    (folder / ".git" / "info").mkdir(parents=True)
    outside.write_text("# not yours\n/private-path\n")
    (folder / ".git" / "info" / "exclude").symlink_to(outside)
    result = Injector(folder, ["cursor"], git_root=folder).write("# ctx\n")
    assert result.written
    assert (folder / ".git" / "info" / "exclude").is_symlink()
    assert outside.read_text() == "# not yours\n/private-path\n"


def test_a_symlinked_git_info_folder_is_left_alone(tmp_path: Path):
    folder, outside = tmp_path / "ws", tmp_path / "outside-info"
    (folder / ".git").mkdir(parents=True)
    outside.mkdir()
    (folder / ".git" / "info").symlink_to(outside, target_is_directory=True)
    Injector(folder, ["cursor"], git_root=folder).write("# ctx\n")
    assert list(outside.iterdir()) == []


def test_a_user_file_that_quotes_the_marker_is_not_overwritten(tmp_path: Path):
    path = tmp_path / TARGETS["agents"].path
    path.parent.mkdir(parents=True)
    mine = f"# Notes\n\nThe tool's files begin with {GENERATED_MARKER} -->.\n"
    path.write_text(mine)
    result = Injector(tmp_path, ["agents"]).write("# ctx\n")
    assert result.refused == [path]
    assert path.read_text() == mine
    assert Injector(tmp_path, ["agents"]).remove(["agents"]) == []
    assert path.read_text() == mine


def test_a_symlinked_claude_md_is_refused(tmp_path: Path):
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# theirs\n")
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "CLAUDE.md").symlink_to(outside)
    with pytest.raises(OSError):
        enable_claude_import(folder)
    assert outside.read_text() == "# theirs\n"


# ---- custom notifications --------------------------------------------------------------------


class _Sink:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.sent.append(data)


def test_a_custom_notification_is_sent_as_its_json_values_unchanged():
    """Parameters already in wire form (a context's items) go out as they are: keys that are
    not identifiers, nested lists and nulls intact."""
    import json

    server = LivingMemoryServer()
    sink = _Sink()
    server.protocol.set_writer(sink)
    server.connected = True
    params = {
        "uri": "file:///p/a.py",
        "items": [{"key": "m1", "tier": "critical", "score": 0.5, "stale": None}],
        "tokens": {"total": 10, "by tier": {"index": 3}},
        "injected": [],
    }
    server.notify("livingMemory/contextUpdated", params)
    header, _, body = b"".join(sink.sent).partition(b"\r\n\r\n")
    assert int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0]) == len(body)
    assert json.loads(body) == {
        "jsonrpc": "2.0",
        "method": "livingMemory/contextUpdated",
        "params": params,
    }


def test_prepare_reads_and_writes_nothing(tmp_path: Path):
    user = tmp_path / TARGETS["cursor"].path
    user.parent.mkdir(parents=True)
    user.write_text("my rule\n")
    prepared = Injector(tmp_path, ["agents", "cursor"]).prepare("# ctx\n")
    assert [t.name for t, _ in prepared.files] == ["agents"]
    assert prepared.refused == [user]
    assert not (tmp_path / TARGETS["agents"].path).exists()


def test_a_target_turned_off_after_prepare_is_not_written(tmp_path: Path):
    prepared = Injector(tmp_path, ["agents", "cursor"]).prepare("# ctx\n")
    result = Injector(tmp_path, ["agents"]).write(prepared)
    assert result.written == [tmp_path / TARGETS["agents"].path]
    assert not (tmp_path / TARGETS["cursor"].path).exists()


def test_context_files_are_written_off_the_callers_thread_and_the_latest_wins(tmp_path: Path):
    project = Project(None, uri(tmp_path), tmp_path, settings_mod.Settings(), None)  # type: ignore[arg-type]
    writes: list[bytes] = []
    write = project.injector.write

    def recorded(prepared: Any) -> Any:
        writes.append(prepared.files[0][1])
        return write(prepared)

    project.injector.write = recorded  # type: ignore[method-assign]
    gate = threading.Event()
    project.writer.submit(gate.wait, 10)  # the file system stalls
    for text in ("# one\n", "# two\n", "# three\n"):
        project.write_files(project.injector.prepare(text))  # returns at once
    gate.set()
    project.writer.shutdown(wait=True)
    assert len(writes) == 1 and b"# three" in writes[0]
    assert "# three" in (tmp_path / TARGETS["agents"].path).read_text()
