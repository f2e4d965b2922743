"""One search over everything: memories and conversation passages, collapsed by source, each
result with its provenance; ``--as-of``; results that do not depend on ``-n``."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from predictive.conversations import session_unit
from predictive.engine import MENTION_LINES, mention_strength
from predictive.ingest import OUTPUT_MENTION_WEIGHT
from predictive.ingest import run as ingest
from predictive.mentions import FileIndex, count, count_modules
from predictive.retrieval import find
from storage import MemoryStore
from storage.embeddings import OnnxEmbedder
from storage.passages import MAX_CHARS, split
from tests.project_fixtures import make_adr_records, make_git_repo, make_rule_files
from tests.test_cli import ok

# A SpecStory export: the fix sits deep in a long assistant answer, far from the title.
FILLER = "\n\n".join(
    f"Step {n}: I looked at the engine module and the configuration loader once more." * 3
    for n in range(30)
)
SESSION = """## SpecStory

## Debugging the result limit (26/02/2025, 18:28:08)

_**User**_

The CLI prints three hits when I ask for one. Please look.

---

_**Assistant**_

{filler}

The culprit was a clamp in `src/app/cli.py`: `max(min_value, int(value))` overrode the user's
explicit value. I removed the clamp so an explicit --limit is honoured exactly.

---

_**User**_

thanks, that fixed it
"""

LATER = """## SpecStory

## Packaging the wheel (03/03/2025, 09:00:00)

_**User**_

Build the wheel with hatch and publish the zebra release notes.

---

_**Assistant**_

Done: the wheel builds with hatch; the zebra release notes are in CHANGELOG.md.
"""


def _project(tmp_path: Path) -> Path:
    repo = make_git_repo(tmp_path)
    root = repo.root
    make_adr_records(root)
    make_rule_files(root)
    (root / "src" / "app").mkdir(parents=True, exist_ok=True)
    (root / "src" / "app" / "cli.py").write_text("def main():\n    pass\n")
    (root / "CHANGELOG.md").write_text("# Changes\n")
    _commit_at(root, None, "cli")
    hist = root / ".specstory" / "history"
    hist.mkdir(parents=True)
    (hist / "2025-02-26_18-28-debugging-the-result-limit.md").write_text(
        SESSION.format(filler=FILLER)
    )
    (hist / "2025-03-03_09-00-packaging-the-wheel.md").write_text(LATER)
    return root


@pytest.fixture
def project_store(tmp_path: Path, store: MemoryStore) -> tuple[Path, MemoryStore]:
    root = _project(tmp_path)
    ingest(store, root=root, options={"sources": ["all"]})
    return root, store


def test_plain_search_finds_a_fix_inside_a_long_conversation(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = _project(tmp_path)
    ok(["ingest"], env, cwd=root)
    hits = json.loads(ok(["search", "explicit limit clamp honoured", "--json"], env, cwd=root))[
        "results"
    ]
    top = hits[0]
    assert top["kind"] == "episode" and top["source"]["kind"] == "conversation"
    assert top["source"]["session"] == "2025-02-26_18-28-debugging-the-result-limit"
    assert top["source"]["path"].endswith("2025-02-26_18-28-debugging-the-result-limit.md")
    assert isinstance(top["source"]["message"], int)
    assert "max(min_value, int(value))" in top["snippet"]
    text = ok(["search", "explicit limit clamp honoured"], env, cwd=root)
    assert "conversation: " in text and "debugging-the-result-limit" in text


def test_every_result_names_its_source(project_store: tuple[Path, MemoryStore]) -> None:
    _, store = project_store
    seen_kinds = set()
    for query in ("database decision postgres", "tests conventions", "limit clamp", "commit"):
        for r in find(store, query, k=20):
            d = r.to_dict()
            src = d["source"]
            seen_kinds.add(src["kind"])
            assert src["source"] and src["kind"] and d["label"] and d["provenance"]
            if src["kind"] == "commit":
                assert len(src["commit"]) >= 7
            elif src["kind"] in ("decision record", "rule file"):
                assert src["path"] and not src["path"].startswith("/")
            elif src["kind"] == "conversation":
                assert src["session"] and src["path"]
    assert {"commit", "decision record", "rule file", "conversation"} <= seen_kinds


def test_hits_of_one_source_collapse_into_one_result(
    project_store: tuple[Path, MemoryStore],
) -> None:
    _, store = project_store
    found = find(store, "engine module configuration loader step", k=10)
    units = [r.unit for r in found]
    assert len(units) == len(set(units))
    top = found[0]
    assert top.unit.startswith("session:specstory:") and len(top.passage_ids) > 1


def test_results_do_not_depend_on_how_many_are_asked(
    project_store: tuple[Path, MemoryStore],
) -> None:
    _, store = project_store
    for query in ("postgres decision", "limit clamp explicit value", "hatch wheel release"):
        few = [r.unit for r in find(store, query, k=2)]
        many = [r.unit for r in find(store, query, k=25)]
        assert few == many[:2]


def test_as_of_leaves_out_what_was_learned_later(
    project_store: tuple[Path, MemoryStore],
) -> None:
    _, store = project_store
    now = find(store, "zebra release notes hatch wheel", k=5)
    assert "packaging-the-wheel" in (now[0].provenance.session or "")
    before = find(store, "zebra release notes hatch wheel", k=5, as_of=1_740_700_000.0)
    assert all("packaging-the-wheel" not in (r.provenance.session or "") for r in before)
    assert all(r.memory is None or r.memory.valid_from <= 1_740_700_000.0 for r in before)


def test_cli_context_as_of_excludes_later_conversations(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = _project(tmp_path)
    ok(["ingest"], env, cwd=root)
    later = json.loads(ok(["context", "CHANGELOG.md", "--json"], env, cwd=root))
    labels = [i["label"] or "" for i in later["items"]]
    assert any("Packaging the wheel" in x for x in labels)
    early = json.loads(
        ok(["context", "CHANGELOG.md", "--as-of", "2025-03-01", "--json"], env, cwd=root)
    )
    assert not any("Packaging the wheel" in (i["label"] or "") for i in early["items"])


def test_a_conversation_is_a_memory_anchored_to_the_files_it_mentions(
    project_store: tuple[Path, MemoryStore],
) -> None:
    _, store = project_store
    m = store.find_by_source("chat:specstory", "2025-02-26_18-28-debugging-the-result-limit")
    assert m is not None and m.kind.value == "episode"
    assert "file:src/app/cli.py" in [str(a) for a in m.anchors]
    assert m.metadata["mentions"]["src/app/cli.py"] == 1
    assert m.index_label == "conversation: Debugging the result limit"


def test_passages_cut_long_text_at_boundaries() -> None:
    text = "\n\n".join(f"Paragraph {n} " + "word " * 60 for n in range(20))
    parts = split(text)
    assert len(parts) > 1 and all(len(p) <= MAX_CHARS * 1.3 for _, p in parts)
    for offset, piece in parts:
        assert text[offset : offset + len(piece)] == piece
    assert all(p.startswith("Paragraph") for _, p in parts)
    assert split("short") == [(0, "short")] and split("  \n ") == []
    assert split("x" * 2500)[1][0] == MAX_CHARS  # no boundary at all: cut at the limit


def test_file_mentions_resolve_base_names_and_paths() -> None:
    files = FileIndex(["src/a/engine.py", "src/b/engine.py", "src/a/cli.py", "README.md"])
    assert files.resolve("cli.py") == ["src/a/cli.py"]
    assert files.resolve("b/engine.py") == ["src/b/engine.py"]
    assert sorted(files.resolve("engine.py")) == ["src/a/engine.py", "src/b/engine.py"]
    assert files.resolve("c/engine.py") == []
    talk = "see `cli.py` and @README.md, then src/a/cli.py; notcli.pyx\nFix cli.py next."
    tool_output = (
        "| src/a/cli.py | 3 |\n"
        "src/a/cli.py:12:5: E501 line too long\n"
        '  File "src/a/cli.py", line 3, in main\n'
        "├── cli.py\n"
        "src/a/cli.py\n"
        "modified:   src/a/cli.py\n"
        "FAILED tests/test_cli.py::test_main"
    )
    assert count([talk, tool_output], files) == {"src/a/cli.py": 2, "README.md": 1}
    assert count([talk, tool_output], files, in_output=True) == {"src/a/cli.py": 6}
    assert files.named([talk, tool_output], in_output=True) == {"src/a/cli.py": 6}
    assert files.named([talk, tool_output]) == {"src/a/cli.py": 2, "README.md": 1}


def _commit_at(root: Path, when: int | None, message: str) -> None:
    """Commit everything in ``root`` (at ``when``, seconds since the epoch; None: now)."""
    env = (
        {}
        if when is None
        else {"GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    )
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            message,
        ],
        check=True,
        env={**os.environ, **env},
    )


def test_a_shared_base_name_means_the_file_that_existed_when_it_was_said(
    tmp_path: Path,
) -> None:
    root = tmp_path / "p"
    (root / "services").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "services" / "profile.py").write_text("x = 1\n")
    _commit_at(root, 1_000_000, "services")
    (root / "repositories").mkdir()
    (root / "repositories" / "profile.py").write_text("y = 1\n")
    _commit_at(root, 2_000_000, "repositories")
    files = FileIndex.of_project(root)
    both = ["repositories/profile.py", "services/profile.py"]
    talk = "Open profile.py and fix it.\nThen profile.py again."
    # before the second file existed, the name meant the first
    assert files.named([talk], at=1_500_000) == {"services/profile.py": 2}
    # later, or with no time, it may mean either
    assert sorted(files.resolve("profile.py", 2_500_000)) == both
    assert sorted(files.named([talk])) == both
    # before either existed (the conversation that made them): both, as without a time
    assert sorted(files.resolve("profile.py", 500_000)) == both
    # a path is never narrowed by time
    assert files.resolve("repositories/profile.py", 1_500_000) == ["repositories/profile.py"]
    # without git's history nothing is narrowed
    assert sorted(FileIndex(both).resolve("profile.py", 1_500_000)) == both


def test_modules_named_as_code_resolve_to_their_files() -> None:
    engines = ["src/pkg/engines/critique.py", "src/pkg/engines/brave.py", "docs/critique.md"]
    files = FileIndex([*engines, "src/pkg/cli.py", "src/pkg/a/config.py", "src/pkg/b/config.py"])
    talk = (
        "Affected engines: `critique`, `brave` and `cli`.\n"  # cli: too short to count bare
        "from pkg.engines.critique import CritiqueEngine\n"
        "`config` is ambiguous; pkg.a.config is not.\n"
        "A critique of the brave new world, in prose.\n"
        "| `critique` | 3 |"  # a table row: tool output
    )
    assert count_modules([talk], files) == {
        "src/pkg/engines/critique.py": 1.0,
        "src/pkg/engines/brave.py": 0.5,
        "src/pkg/a/config.py": 0.5,
    }
    assert count_modules(["`critique`"], FileIndex(["README.md"])) == {}


def test_a_conversation_counts_the_files_its_reasoning_names(
    tmp_path: Path, store: MemoryStore
) -> None:
    root = _project(tmp_path)
    (root / ".specstory" / "history" / "2025-03-05_10-00-tidy-the-changelog.md").write_text(
        "## Tidy the changelog (05/03/2025, 10:00:00)\n\n_**User**_\n\nTidy it up.\n\n---\n\n"
        "_**Assistant**_\n\n<think>I should open CHANGELOG.md and src/app/cli.py first.\n"
        "The key sk-live-1234567890abcdef1234 must not leak.</think>\n\nDone, it is tidy.\n"
    )
    ingest(store, root=root, options={"sources": ["all"]})
    m = store.find_by_source("chat:specstory", "2025-03-05_10-00-tidy-the-changelog")
    assert m is not None
    assert m.metadata["mentions"] == {"CHANGELOG.md": 1, "src/app/cli.py": 1}
    assert "file:CHANGELOG.md" in [str(a) for a in m.anchors]
    rows = store.conn.execute("SELECT metadata FROM sessions").fetchall()
    stored = " ".join(str(r[0]) for r in rows) + " ".join(
        str(r[0]) for r in store.conn.execute("SELECT text FROM messages").fetchall()
    )
    assert "I should open" not in stored and "sk-live" not in stored


def test_a_conversation_means_the_same_named_file_that_existed_while_it_ran(
    tmp_path: Path, store: MemoryStore
) -> None:
    root = tmp_path / "p"
    (root / "src" / "app").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src" / "app" / "cli.py").write_text("def main():\n    pass\n")
    _commit_at(root, 1_740_787_200, "app")  # 2025-03-01
    (root / "src" / "other").mkdir()
    (root / "src" / "other" / "cli.py").write_text("def run():\n    pass\n")
    _commit_at(root, 1_741_564_800, "other")  # 2025-03-10
    hist = root / ".specstory" / "history"
    hist.mkdir(parents=True)
    (hist / "2025-03-05_10-00-the-entry-point.md").write_text(
        "## The entry point (05/03/2025, 10:00:00)\n\n_**User**_\n\nWhy does cli.py exit "
        "early?\n\n---\n\n_**Assistant**_\n\nIn cli.py, `main` returns before parsing.\n"
    )
    ingest(store, root=root, options={"sources": ["all"]})
    m = store.find_by_source("chat:specstory", "2025-03-05_10-00-the-entry-point")
    assert m is not None
    assert set(m.metadata["mentions"]) == {"src/app/cli.py"}


def test_a_file_named_only_in_tool_output_ties_a_conversation_weakly(
    tmp_path: Path, store: MemoryStore
) -> None:
    root = _project(tmp_path)
    frames = "".join(f'  File "src/app/cli.py", line {n}, in main\n' for n in range(1, 4))
    (root / ".specstory" / "history" / "2025-03-06_10-00-the-failing-run.md").write_text(
        "## The failing run (06/03/2025, 10:00:00)\n\n_**User**_\n\nIt fails:\n\n"
        f"Traceback (most recent call last):\n{frames}ValueError: boom\n\n---\n\n"
        "_**Assistant**_\n\nThe limit was off by one; CHANGELOG.md now says so.\n"
    )
    ingest(store, root=root, options={"sources": ["all"]})
    m = store.find_by_source("chat:specstory", "2025-03-06_10-00-the-failing-run")
    assert m is not None
    mentions = m.metadata["mentions"]
    assert mentions["src/app/cli.py"] == pytest.approx(3 * OUTPUT_MENTION_WEIGHT)
    assert mentions["src/app/cli.py"] < mentions["CHANGELOG.md"] == 1
    assert "file:src/app/cli.py" in [str(a) for a in m.anchors]


def test_a_conversation_that_names_a_file_on_more_lines_is_tied_more_strongly(
    store: MemoryStore,
) -> None:
    from storage.sources.records import ChatMessage, Conversation

    def tie(lines: int, chars: int) -> float:
        conv = Conversation(
            tool="claude",
            external_id=f"c{lines}-{chars}",
            messages=(ChatMessage(0, "assistant", "x" * chars),),
            started_at=1_700_000_000.0,
        )
        added = store.add(session_unit(conv, "", Counter({"src/app/cli.py": lines})))
        return mention_strength(store.get_many([added.id])[0], "src/app/cli.py", MENTION_LINES)

    # one more line naming the file outweighs a conversation ten times as long
    assert tie(2, 20_000) > tie(1, 2_000)
    assert tie(3, 2_000) > tie(2, 2_000) > tie(1, 2_000)
    assert tie(1, 20_000) > tie(0, 2_000)


def test_search_rejects_bad_input(store: MemoryStore) -> None:
    from storage import InvalidInput

    with pytest.raises(InvalidInput, match="empty"):
        find(store, "   ")
    with pytest.raises(InvalidInput, match="at least 1"):
        find(store, "x", k=0)
    assert find(store, "nothing stored yet") == []


def test_the_real_model_finds_a_paraphrase_deep_in_a_conversation(
    tmp_path: Path, real_embedder: OnnxEmbedder
) -> None:
    from storage.sessions import sessions_of
    from storage.sources.records import ChatMessage, Conversation

    long_answer = "\n\n".join(
        [f"I checked module {n} and its configuration; nothing to change there." for n in range(30)]
        + ["The database connection pool ran dry under load, so I raised its size to forty."]
    )
    conv = Conversation(
        tool="claude",
        external_id="pool",
        messages=(
            ChatMessage(0, "user", "Something is off in production again, please have a look."),
            ChatMessage(1, "assistant", long_answer),
        ),
        started_at=1_700_000_000.0,
        origin="/home/me/.claude/projects/x/pool.jsonl",
    )
    with MemoryStore(tmp_path / "memory.db", embedder=real_embedder) as store:
        sessions = sessions_of(store)
        sessions.save(conv, summary="Investigating a hang")
        sessions.embed_pending()
        query = "db connections exhausted"  # "connections" stems like "connection"; db ≠ database
        (top,) = find(store, query, k=1)
        assert top.provenance.session == "pool" and top.provenance.message == 1
        assert "ran dry under load" in top.snippet
        (semantic,) = find(store, "db links used up", k=1, mode="vector")  # meaning alone
        assert semantic.provenance.message == 1 and "ran dry" in semantic.snippet


def test_as_of_knows_a_conversation_only_up_to_that_instant(store: MemoryStore) -> None:
    """A conversation going on at T is searched only in what was said before T: a passage
    said later is not found ``--as-of`` T, and is found without it."""
    from storage.session_search import search_passages
    from storage.sessions import SessionStore
    from storage.sources.records import ChatMessage, Conversation

    t0 = 1_740_000_000.0
    conv = Conversation(
        tool="specstory",
        external_id="s1",
        title="Tuning the importer",
        started_at=t0,
        ended_at=t0 + 7200,
        messages=(
            ChatMessage(0, "user", "The importer is slow on large walrus archives.", at=t0),
            ChatMessage(1, "assistant", "I profiled the walrus importer loop.", at=t0 + 60),
            ChatMessage(2, "user", "Later: switch the walrus importer to streaming.", at=t0 + 7000),
        ),
    )
    SessionStore(store).save(conv, summary="Tuning the importer")
    said = {p.text for p in search_passages(store, "walrus importer", mode="keyword")}
    assert any("streaming" in t for t in said)
    before = {
        p.text for p in search_passages(store, "walrus importer", mode="keyword", before=t0 + 3600)
    }
    assert before and not any("streaming" in t for t in before)
    assert search_passages(store, "walrus importer", mode="keyword", before=t0) == []
    found = find(store, "switch to streaming", k=5, as_of=t0 + 3600, mode="keyword")
    assert all("streaming" not in r.snippet for r in found)


def test_a_conversation_is_found_by_what_it_is_about(store: MemoryStore) -> None:
    """A conversation whose title and summary say what the question asks is found by them,
    even when no message shares the question's words; ``--as-of`` T leaves out the summary
    of a conversation still going on at T (it speaks of what was said later)."""
    from storage.session_search import summary_ranking
    from storage.sessions import SessionStore
    from storage.sources.records import ChatMessage, Conversation

    t0 = 1_740_000_000.0
    sessions = SessionStore(store)

    def save(ext: str, title: str, summary: str, start: float, end: float, known: bool) -> None:
        conv = Conversation(
            tool="specstory",
            external_id=ext,
            title=title,
            started_at=start,
            ended_at=end if known else None,  # an export without an end: its last message
            messages=(
                ChatMessage(0, "user", "go", at=start),
                ChatMessage(1, "assistant", "Done, see the diff.", at=end),
            ),
        )
        sessions.save(conv, summary=summary)

    save("paging", "Paging the stored facts", "Facts listed five per page", t0, t0 + 60, True)
    save("later", "Walrus importer", "Walrus importer streaming", t0, t0 + 7200, True)
    save("open", "Walrus importer", "Walrus importer streaming", t0, t0 + 7200, False)
    sessions.embed_pending()
    found = find(store, "facts listed per page", k=3)
    assert found[0].provenance.session == "paging"
    assert "five per page" in found[0].snippet
    qv = store.embedder.embed(["walrus importer streaming"])[0]  # type: ignore[union-attr]
    assert {s.external_id for s, _ in summary_ranking(store, qv)} >= {"later", "open"}
    going_on = {s.external_id for s, _ in summary_ranking(store, qv, before=t0 + 3600)}
    assert not going_on & {"later", "open"}
    over = {s.external_id for s, _ in summary_ranking(store, qv, before=t0 + 7201)}
    assert over >= {"later", "open"}


def test_a_question_that_names_a_kind_of_source_prefers_that_kind(store: MemoryStore) -> None:
    from storage import Kind, NewMemory

    text = "Storage moves to SQLite, and its full-text index to FTS5"
    store.add(NewMemory(text=text, kind=Kind.DECISION, source="adr", source_id="docs/adr/2.md"))
    store.add(NewMemory(text=text + " tables", kind=Kind.FACT, source="git", source_id="abc123"))
    asked = "where does storage move, and its full-text index"
    plain = find(store, asked, k=2)
    by_record = find(store, f"per the storage proposal, {asked}", k=2)
    by_commit = find(store, f"in which commit {asked}", k=2)
    assert {f.provenance.kind for f in plain} == {"decision record", "commit"}
    assert by_record[0].provenance.kind == "decision record"
    assert by_commit[0].provenance.kind == "commit"
    assert by_commit[0].score > 0 and by_commit[1].provenance.kind == "decision record"
