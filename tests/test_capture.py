"""A live conversation captured turn by turn (``capture_transcript`` after each ``Stop``)
learns what the whole transcript ingested at once learns, while each capture redacts and saves
only the messages that are new; a transcript rewritten before what was learned is learned whole
again; a later ingestion of the same transcript is the same conversation."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from project_fixtures import GitRepo

import storage.sessions
import storage.sources.records as records
from predictive.hook_state import load
from predictive.ingest import learn_vectors, run
from predictive.operations.capture import capture_transcript
from storage import MemoryStore
from storage.embeddings import HashingEmbedder
from storage.sessions import sessions_of

SESSION = "0f6e7d52-3c1b-4b7a-8d2e-9a1c5b3e7f20"
TURNS: list[tuple[str, str]] = [
    ("user", "We decided to use httpx instead of requests for the HTTP client in src/client.py."),
    ("assistant", "Switched src/client.py to httpx; run `pytest -q` to check."),
    ("user", "Tests fail with ImportError: cannot import name 'Client' from 'httpx.api'."),
    (
        "assistant",
        "Fixed: the import was wrong. Use `from httpx import Client` in src/client.py; "
        "then run `pytest -q` and `ruff check .` before committing.",
    ),
    ("user", "Always run `ruff check .` and `pytest -q` before committing. Never use pip."),
    ("assistant", "Noted: I ran `ruff check .` and `pytest -q`; both pass."),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = GitRepo.init(tmp_path / "proj")
    repo.commit("Add the HTTP client", {"src/client.py": "import requests\n"})
    return repo.root


def write(path: Path, turns: list[tuple[str, str]], cwd: Path, t0: float) -> None:
    """A Claude Code transcript of ``turns``, one second apart."""
    lines: list[dict[str, Any]] = []
    for n, (role, text) in enumerate(turns):
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "assistant":
            message["id"] = f"msg_{n}"
        lines.append(
            {
                "parentUuid": f"u{n - 1}" if n else None,
                "isSidechain": False,
                "type": role,
                "uuid": f"u{n}",
                "sessionId": SESSION,
                "cwd": str(cwd),
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t0 + n)),
                "message": message,
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def learned(store: MemoryStore) -> set[tuple[str, str]]:
    """What a conversation taught, its own summary memory left out (it is rewritten as the
    conversation grows)."""
    return {
        (m.kind.value, m.text)
        for m in store.list(limit=1000)
        if m.source.startswith("chat:") and m.metadata.get("unit") != "session"
    }


def test_turn_by_turn_learns_what_the_whole_transcript_teaches(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t0 = time.time() - 60
    transcript = tmp_path / f"{SESSION}.jsonl"
    redacted: list[str] = []
    real = records.redact
    monkeypatch.setattr(records, "redact", lambda text: redacted.append(text) or real(text))
    monkeypatch.setattr(
        storage.sessions, "redact", lambda text: redacted.append(text) or real(text)
    )
    with MemoryStore(tmp_path / "live.db", embedder=HashingEmbedder()) as live:
        for end in (2, 4, 6):
            write(transcript, TURNS[:end], project, t0)
            redacted.clear()
            done = capture_transcript(live, project, "claude", SESSION, transcript)
            assert done.captured and done.reason == "learned"
            # only the new turn's messages are redacted (and saved) again, each of them once
            said = Counter(t for t in redacted if t in {x for _, x in TURNS})
            assert said == Counter(text for _, text in TURNS[end - 2 : end])
            assert load(live, "claude", SESSION).learned.startswith(f"{end}:")
        assert capture_transcript(live, project, "claude", SESSION, transcript).reason == (
            "unchanged"
        )
        sessions = sessions_of(live)
        (conv,) = sessions.list(tool="claude")
        assert [m.text for m in sessions.messages(conv.id)] == [t for _, t in TURNS]
        summary = sessions.get(conv.id).summary or ""
        assert "6 messages" in summary  # the summary is the whole conversation's
        live_learned = learned(live)

        # the same transcript ingested afterwards is the conversation already learned
        report = run(
            live,
            root=project,
            options={"sources": ["chats"], "tools": ["claude"], "paths": [str(transcript)]},
        )
        assert report.sources["chats"].unchanged == 1
        assert len(sessions.list(tool="claude")) == 1

    with MemoryStore(tmp_path / "whole.db", embedder=HashingEmbedder()) as whole:
        capture_transcript(whole, project, "claude", SESSION, transcript)
        assert learned(whole) == live_learned
    assert live_learned  # the conversation taught something (else the comparison says nothing)


def test_a_rewritten_transcript_is_learned_whole_again(project: Path, tmp_path: Path) -> None:
    t0 = time.time() - 60
    transcript = tmp_path / f"{SESSION}.jsonl"
    with MemoryStore(tmp_path / "live.db", embedder=HashingEmbedder()) as store:
        write(transcript, TURNS[:4], project, t0)
        capture_transcript(store, project, "claude", SESSION, transcript)
        rewritten = [("user", "Use aiohttp for the HTTP client in src/client.py."), *TURNS[1:]]
        write(transcript, rewritten, project, t0)
        assert capture_transcript(store, project, "claude", SESSION, transcript).captured
        sessions = sessions_of(store)
        (conv,) = sessions.list(tool="claude")
        texts = [m.text for m in sessions.messages(conv.id)]
        assert texts[0] == rewritten[0][1] and len(texts) == 6


def test_a_new_title_with_no_new_message_keeps_the_conversation(
    project: Path, tmp_path: Path
) -> None:
    t0 = time.time() - 60
    transcript = tmp_path / f"{SESSION}.jsonl"
    with MemoryStore(tmp_path / "live.db", embedder=HashingEmbedder()) as store:
        write(transcript, TURNS[:4], project, t0)
        capture_transcript(store, project, "claude", SESSION, transcript)
        with transcript.open("a", encoding="utf-8") as f:  # Claude Code titles a session later
            f.write(json.dumps({"type": "summary", "summary": "Switch to httpx", "leafUuid": "u3"}))
            f.write("\n")
        assert capture_transcript(store, project, "claude", SESSION, transcript).captured
        sessions = sessions_of(store)
        (conv,) = sessions.list(tool="claude")
        assert conv.title == "Switch to httpx"
        assert [m.text for m in sessions.messages(conv.id)] == [t for _, t in TURNS[:4]]


LONG: list[tuple[str, str]] = [
    ("user", "Tests fail with ImportError: cannot import name 'Client' from 'httpx.api'."),
    ("assistant", "The fix is to use `from httpx import Client` in src/client.py."),
    ("user", "Still failing with the same error."),
    ("assistant", "Then reinstall: the old wheel shadows it, run `pip install -e .` again."),
    ("user", "Still failing, same error after the reinstall."),
    ("assistant", "The cause is a stale `httpx.pth`; delete it from site-packages."),
    ("user", "Still getting the same ImportError."),
    (
        "assistant",
        "The fix is to pin httpx: `pip install 'httpx>=0.27'` because 0.23 lacks the export.",
    ),
    ("user", "Thanks, that fixed it!"),
    ("assistant", "Good. I also updated src/client.py to the new import."),
    ("user", "Always run `ruff check .` and `pytest -q` before committing anything at all."),
    ("assistant", "Understood, I will run both before every commit."),
    ("user", "We decided to use httpx instead of requests because it supports HTTP/2."),
    ("assistant", "Recorded: httpx over requests in src/client.py."),
    ("user", "Always run `ruff check .` and `pytest -q` before committing anything at all."),
    ("assistant", "Yes, ran both; they pass."),
    ("user", "Please add a retry to the client."),
    ("assistant", "I recommend using tenacity for retries in src/client.py."),
    ("user", "Yes, go ahead with that."),
    ("assistant", "Added tenacity retries."),
    ("user", "Always run `ruff check .` and `pytest -q` before committing anything at all."),
    ("assistant", "Done, both pass."),
]


def test_each_capture_extracts_only_the_turns_a_new_message_can_change(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix confirmed four turns after its problem, a rule repeated across the conversation
    and a recommendation agreed in the next turn are learned live as the whole transcript
    teaches them, while each capture extracts from a bounded window of turns."""
    import predictive.conversations as conversations

    windows: list[int] = []  # the user turns each extraction reads candidates from
    real = conversations._decisions

    def spy(conv: Any, msgs: Any, out: Any, start: int = 0) -> None:
        windows.append(sum(1 for m in msgs[start:] if m.role == "user"))
        real(conv, msgs, out, start)

    monkeypatch.setattr(conversations, "_decisions", spy)
    t0 = time.time() - 60
    transcript = tmp_path / f"{SESSION}.jsonl"
    with MemoryStore(tmp_path / "live.db", embedder=HashingEmbedder()) as live:
        for end in range(2, len(LONG) + 1, 2):
            write(transcript, LONG[:end], project, t0)
            assert capture_transcript(live, project, "claude", SESSION, transcript).captured
        live_learned = learned(live)
        assert len(sessions_of(live).list(tool="claude")) == 1
    turns = len(LONG) // 2
    assert windows[-1] == conversations.LOOKAHEAD_TURNS + 1 < turns
    assert max(windows) == conversations.LOOKAHEAD_TURNS + 1

    windows.clear()
    with MemoryStore(tmp_path / "whole.db", embedder=HashingEmbedder()) as whole:
        run(
            whole,
            root=project,
            options={"sources": ["chats"], "tools": ["claude"], "paths": [str(transcript)]},
        )
        assert windows == [turns]  # a whole ingestion reads every turn
        whole_learned = learned(whole)
    assert live_learned == whole_learned
    texts = "\n".join(t for _, t in whole_learned)
    # the first problem's fix: three answers that did not work, confirmed four turns later
    assert any(
        t.startswith("Problem: Tests fail with ImportError") and "httpx>=0.27" in t
        for _, t in whole_learned
    )
    assert "Always run `ruff check .` and `pytest -q` before committing" in texts
    assert "tenacity" in texts  # the recommendation agreed in the next turn


def test_a_projects_file_index_is_kept_until_git_changes_it(project: Path) -> None:
    """The file list a warm process reuses is read again once git's index changes, and what
    a text names is the same counted once or from the kept counts."""
    from predictive.mentions import count, count_modules, project_index

    first = project_index(project)
    assert project_index(project) is first
    texts = ["Edit src/client.py and `client` there.", "see src/client.py", "nothing"]
    once = count(texts, first) + count_modules(texts, first)
    assert first.named(texts) == once == first.named(texts) and once["src/client.py"] > 2
    GitRepo(project).commit("Add the server", {"src/server.py": "x = 1\n"})
    again = project_index(project)
    assert again is not first and again.resolve("server.py") == ["src/server.py"]


class RecordingEmbedder(HashingEmbedder):
    """The test embedder, keeping every text it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> Any:
        self.seen.extend(texts)
        return super().embed(texts)


def test_a_secret_in_a_captured_turn_never_reaches_the_store_or_the_model(
    project: Path, tmp_path: Path
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    password = "S3cr3t" + "Passw0rd42"
    turns = [
        *TURNS[:2],
        ("user", f"The deploy token is {token}; put it in src/client.py."),
        (
            "assistant",
            f"Done:\n```python\nTOKEN = '{token}'\nDB = 'postgres://app:{password}@db/x'\n```",
        ),
        ("user", f"And the database: use DB_PASSWORD={password} from now on."),
        ("assistant", "Stored it in the environment, not in src/client.py."),
    ]
    transcript = tmp_path / f"{SESSION}.jsonl"
    data = tmp_path / "data"
    data.mkdir()
    embedder = RecordingEmbedder()
    with MemoryStore(data / "memory.db", embedder=embedder) as store:
        for end in (2, 4, 6):  # turn by turn, as the hooks capture it
            write(transcript, turns[:end], project, time.time() - 60)
            assert capture_transcript(store, project, "claude", SESSION, transcript).captured
        learn_vectors(store)
        sessions = sessions_of(store)
        (conv,) = sessions.list(tool="claude")
        stored = [m.text for m in sessions.messages(conv.id)]
        assert len(stored) == 6 and "[REDACTED:" in stored[2] and "[REDACTED:" in stored[3]
        hits = store.conn.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", ('"a1B2c3D4e5F6g7H8"',)
        ).fetchone()[0]
        assert hits == 0
    assert embedder.seen  # the messages were embedded, from their redacted text
    assert not [t for t in embedder.seen if token in t or password in t]
    for f in data.rglob("*"):
        if f.is_file():
            raw = f.read_bytes()
            assert token.encode() not in raw and password.encode() not in raw, f.name
            assert b"a1B2c3D4e5F6g7H8" not in raw, f.name
