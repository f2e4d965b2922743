"""Team memory through git: two clones of one repository, two stores, the real ``git`` and
the ``living-memory`` command line as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.test_cli import ok

SHARED = ".living-memory/shared"


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


class Clone:
    """A developer: a clone of the team's repository and a store of their own."""

    def __init__(self, base: Path, origin: Path, name: str, env: dict[str, str]) -> None:
        self.root = base / name
        subprocess.run(["git", "clone", "-q", str(origin), str(self.root)], check=True)
        git(self.root, "config", "user.name", name)
        git(self.root, "config", "user.email", f"{name.lower()}@example.com")
        git(self.root, "config", "pull.rebase", "false")
        self.env = {**env, "LIVING_MEMORY_DB": str(base / f"{name}.db")}

    def lm(self, *args: str) -> str:
        return ok(list(args), self.env, cwd=self.root)

    def lm_json(self, *args: str) -> dict:  # type: ignore[type-arg]
        return json.loads(self.lm(*args, "--json"))

    def commit_all(self, message: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)

    def files(self) -> dict[str, bytes]:
        folder = self.root / SHARED
        return {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*.md"))
            if p.name != "README.md"
        }

    def search(self, query: str, *extra: str) -> list[dict]:  # type: ignore[type-arg]
        return self.lm_json("search", query, *extra)["results"]  # type: ignore[no-any-return]

    def memories(self, query: str) -> list[str]:
        """The texts of the memories (not commits) a search finds."""
        return [r["text"] for r in self.search(query) if r["source"]["kind"] != "commit"]


@pytest.fixture
def team(tmp_path: Path, env: dict[str, str]) -> tuple[Clone, Clone, Path]:
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
    git(seed, "config", "user.name", "Seed")
    git(seed, "config", "user.email", "seed@example.com")
    (seed / "src").mkdir()
    (seed / "src" / "db.py").write_text("def connect():\n    return None\n")
    (seed / "src" / "api.py").write_text("def handler():\n    return 1\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "Add the database and api modules")
    git(seed, "push", "-q", str(origin), "main")
    return Clone(tmp_path, origin, "Alice", env), Clone(tmp_path, origin, "Bob", env), origin


def test_a_decision_travels_through_git_and_comes_back_edited_then_archived(
    team: tuple[Clone, Clone, Path],
) -> None:
    alice, bob, _ = team
    # Alice's agent remembered a decision: proposed until she approves it
    decision = "Use Postgres for the event store because aggregates need transactions."
    mid = alice.lm_json(
        "remember", decision, "--kind", "decision", "-a", "file:src/db.py", "--source", "mcp"
    )["id"]
    proposed = alice.lm_json("review", "list")["items"]
    assert [i["id"] for i in proposed] == [mid]
    assert alice.lm_json("share")["written"] == []  # nothing approved yet: nothing shared
    alice.lm("review", "approve", str(mid))
    shared = alice.lm_json("share")
    assert len(shared["written"]) == 1 and shared["written"][0].startswith("decisions/")
    alice.commit_all("Share the event store decision")
    git(alice.root, "push", "-q", "origin", "main")

    git(bob.root, "pull", "-q")
    report = json.loads(bob.lm("ingest", "shared", "--json"))
    assert report["sources"]["shared"]["added"] == 1
    found = bob.search("event store postgres")
    top = found[0]
    assert "Postgres" in top["text"]
    assert top["source"]["author"] == "Alice" and top["source"]["kind"] == "shared memory"
    assert "shared by Alice" in top["provenance"]
    context = bob.lm("context", "src/db.py")
    assert "Use Postgres for the event store" in context
    assert "shared by Alice" in context

    # Bob corrects the file by hand; Alice pulls and serves the edited text
    path = bob.root / SHARED / shared["written"][0]
    path.write_text(path.read_text().replace("Postgres", "PostgreSQL 16"))
    bob.commit_all("Name the Postgres version")
    git(bob.root, "push", "-q", "origin", "main")
    git(alice.root, "pull", "-q")
    report = json.loads(alice.lm("ingest", "--json"))  # ingest all includes the shared folder
    assert report["sources"]["shared"]["superseded"] == 1
    now = alice.search("event store postgresql")
    assert "PostgreSQL 16" in now[0]["text"]
    assert "shared by Bob" in now[0]["provenance"]
    old = alice.lm_json("show", str(mid))
    assert old["supersededBy"] == now[0]["id"]
    history = alice.search("event store postgres", "--history")
    assert any(r["id"] == mid for r in history)
    assert "PostgreSQL 16" in alice.lm("context", "src/db.py")
    # reading back what it wrote itself changes nothing; sharing again neither (no loop)
    assert alice.lm_json("share")["written"] == []
    assert git(alice.root, "status", "--porcelain") == ""

    # Bob deletes the file: archived in both stores
    git(bob.root, "rm", "-q", str(path))
    git(bob.root, "commit", "-q", "-m", "Retire the event store decision")
    report = json.loads(bob.lm("ingest", "shared", "--json"))
    assert report["sources"]["shared"]["archived"] == 1
    assert bob.memories("event store postgresql") == []
    git(bob.root, "push", "-q", "origin", "main")
    git(alice.root, "pull", "-q")
    report = json.loads(alice.lm("ingest", "shared", "--json"))
    assert report["sources"]["shared"]["archived"] == 1
    assert alice.memories("event store postgresql") == []
    assert alice.lm_json("show", str(now[0]["id"]))["archived"] is True
    assert alice.lm_json("share")["written"] == []  # an archived memory is not written back


def test_concurrent_edits_of_different_memories_merge_without_conflict(
    team: tuple[Clone, Clone, Path],
) -> None:
    alice, bob, _ = team
    a = alice.lm_json("remember", "Handlers return JSON errors.", "--kind", "convention")["id"]
    b = alice.lm_json("remember", "Run ruff before each commit.", "--kind", "workflow")["id"]
    alice.lm("share")
    alice.commit_all("Share two memories")
    git(alice.root, "push", "-q", "origin", "main")
    git(bob.root, "pull", "-q")
    bob.lm("ingest", "shared")
    ids = {
        r["text"]: r["id"] for r in bob.lm_json("review", "list", "--status", "approved")["items"]
    }

    # each edits a different memory through the review edit, then shares and commits
    alice.lm("review", "edit", str(a), "--text", "Handlers return JSON errors with a code.")
    alice.lm("share")
    alice.commit_all("Errors carry a code")
    bob.lm("review", "edit", str(ids["Run ruff before each commit."]), "--text",
           "Run ruff and mypy before each commit.")  # fmt: skip
    assert len(bob.lm_json("share")["written"]) == 1
    bob.commit_all("Mypy too")
    git(alice.root, "push", "-q", "origin", "main")
    git(bob.root, "pull", "-q", "--no-edit")  # a merge of two different files: no conflict
    git(bob.root, "push", "-q", "origin", "main")
    git(alice.root, "pull", "-q")
    assert alice.files() == bob.files() and len(alice.files()) == 2
    for clone in (alice, bob):
        clone.lm("ingest", "shared")
        texts = {
            r["text"] for r in clone.lm_json("review", "list", "--status", "approved")["items"]
        }
        assert {
            "Handlers return JSON errors with a code.",
            "Run ruff and mypy before each commit.",
        } <= texts
        assert "Run ruff before each commit." not in texts
        assert clone.lm_json("share")["written"] == []
        assert git(clone.root, "status", "--porcelain") == ""
    assert b  # Alice's own workflow memory was replaced by Bob's edit read from the file
    assert alice.lm_json("show", str(b))["supersededBy"] is not None


def test_rejecting_a_shared_memory_removes_its_file_for_everyone(
    team: tuple[Clone, Clone, Path],
) -> None:
    alice, bob, _ = team
    alice.lm("remember", "Prefer tabs in Makefiles only.", "--kind", "preference")
    alice.lm("share")
    alice.commit_all("Share a preference")
    git(alice.root, "push", "-q", "origin", "main")
    git(bob.root, "pull", "-q")
    bob.lm("ingest", "shared")
    [item] = bob.lm_json("review", "list", "--status", "approved")["items"]
    bob.lm("review", "reject", str(item["id"]), "--reason", "not true for this team")
    assert bob.memories("tabs makefiles") == []
    out = bob.lm_json("share")
    assert len(out["removed"]) == 1 and bob.files() == {}
    bob.commit_all("Drop the tabs preference")
    git(bob.root, "push", "-q", "origin", "main")
    git(alice.root, "pull", "-q")
    assert json.loads(alice.lm("ingest", "shared", "--json"))["sources"]["shared"]["archived"] == 1
    assert alice.memories("tabs makefiles") == []


def test_bad_files_are_counted_skips_with_their_paths_and_nothing_else_is_lost(
    team: tuple[Clone, Clone, Path],
) -> None:
    alice, _, _ = team
    alice.lm("remember", "Migrations are written by hand.", "--kind", "convention")
    alice.lm("share")
    folder = alice.root / SHARED
    good = dict(alice.files())
    (folder / "decisions").mkdir(exist_ok=True)
    (folder / "decisions" / "conflict-1234abcd.md").write_text(
        "---\nid: 1234abcd\nkind: decision\ncreated: 2026-01-01\n---\n\n<<<<<<< HEAD\nA\n"
        "=======\nB\n>>>>>>> other\n"
    )
    (folder / "decisions" / "no-front-matter.md").write_text("# Just a note\n\nNo front matter.\n")
    (folder / "decisions" / "bad-kind-5678abcd.md").write_text(
        "---\nid: 5678abcd\nkind: opinion\ncreated: 2026-01-01\n---\n\nText.\n"
    )
    (folder / "decisions" / "binary-9999abcd.md").write_bytes(b"---\nid: x\n\x00\x01\x02" * 10)
    with open(folder / "decisions" / "huge-aaaa1111.md", "wb") as f:
        f.write(b"---\nid: aaaa1111\nkind: decision\ncreated: 2026-01-01\n---\n\n")
        f.write(b"x" * (10 * 1024 * 1024))
    report = json.loads(alice.lm("ingest", "shared", "--json"))
    skipped = {(e["where"], e["reason"]) for e in report["skipped"]["examples"]}
    assert skipped == {
        ("decisions/conflict-1234abcd.md", "merge conflict markers"),
        ("decisions/no-front-matter.md", "no front matter"),
        ("decisions/bad-kind-5678abcd.md", "front matter 'kind' 'opinion' is not a kind"),
        ("decisions/binary-9999abcd.md", "binary"),
        ("decisions/huge-aaaa1111.md", "too large"),
    }
    assert report["skipped"]["total"] == 5
    assert report["sources"]["shared"]["unchanged"] == 1  # the good file is still known
    assert "Migrations are written by hand" in alice.search("migrations by hand")[0]["text"]
    out = alice.lm("ingest", "shared")
    assert "decisions/conflict-1234abcd.md: merge conflict markers" in out
    share = alice.lm_json("share")
    assert share["written"] == [] and share["removed"] == []
    assert {k: v for k, v in alice.files().items() if k in good} == good


def test_share_writes_only_durable_approved_team_knowledge_and_redacts_secrets(
    team: tuple[Clone, Clone, Path], tmp_path: Path
) -> None:
    alice, _, _ = team
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    alice.lm("remember", f"Deploy with the token {key} from the vault.", "--kind", "workflow")
    alice.lm("remember", "I like dark themes.", "--kind", "preference", "--scope", "user")
    alice.lm("remember", "Fixed the flaky login test on Tuesday.", "--kind", "episode")
    alice.lm("remember", "The cache is Redis.", "--kind", "decision", "--source", "chat:cursor")
    alice.lm("ingest", "git")  # commits are in the repository already: never written
    elsewhere = tmp_path / "team-notes"
    out = alice.lm_json("share", "--shared-folder", str(elsewhere))
    assert len(out["written"]) == 1 and out["written"][0].startswith("workflows/")
    text = (elsewhere / out["written"][0]).read_text()
    assert key not in text and "[REDACTED" in text
    assert text.startswith("---\nid: ") and "\nkind: workflow\n" in text
    assert not (alice.root / SHARED).exists()
    first = {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()}
    again = alice.lm_json("share", "--shared-folder", str(elsewhere))
    assert again["written"] == [] and again["unchanged"] == 1
    assert {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()} == first
    assert os.listdir(elsewhere / "workflows") == [Path(out["written"][0]).name]


def test_the_tools_own_folder_is_ignored_by_git_but_not_the_shared_memory(tmp_path: Path) -> None:
    from server.injection import _IGNORE_ALL, _ensure_ignored_dir
    from storage.sources.shared import ignored_by_git

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    own = repo / ".living-memory"
    (own / "shared" / "decisions").mkdir(parents=True)
    (own / "context.md").write_text("generated")
    (own / "shared" / "decisions" / "a-12345678.md").write_text("shared")
    (own / ".gitignore").write_bytes(_IGNORE_ALL)  # what an earlier version wrote
    shared = own / "shared"
    assert ignored_by_git(shared, "decisions/a-12345678.md")  # share warns about it
    _ensure_ignored_dir(repo, own)
    assert not ignored_by_git(shared, "decisions/a-12345678.md")
    untracked = git(repo, "status", "--porcelain", "-uall").splitlines()
    assert untracked == ["?? .living-memory/shared/decisions/a-12345678.md"]
    (own / ".gitignore").write_text("context.md\n")  # the user's own: left alone
    _ensure_ignored_dir(repo, own)
    assert (own / ".gitignore").read_text() == "context.md\n"


def test_a_store_from_before_gets_review_statuses_by_source(tmp_path: Path) -> None:
    import apsw

    from storage import MemoryStore
    from storage.schema import _V9, MIGRATIONS

    old = tmp_path / "old.db"
    conn = apsw.Connection(str(old))
    before = MIGRATIONS[: MIGRATIONS.index(_V9)]
    for number, script in enumerate(before, start=1):
        conn.execute(script)
        conn.pragma("user_version", number)
    for i, source in enumerate(("manual", "chat:cursor", "adr", "mcp", "editor-fix"), start=1):
        conn.execute(
            "INSERT INTO memories(id, kind, text, source, content_hash, created_at, updated_at, "
            "valid_from) VALUES (?, 'convention', ?, ?, ?, 0, 0, 0)",
            (i, f"memory {i}", source, f"h{i}"),
        )
    conn.close()
    with MemoryStore(old) as s:
        reviews = {m.source: m.review.value for m in s.get_many([1, 2, 3, 4, 5])}
        assert reviews == {
            "manual": "approved",
            "chat:cursor": "proposed",
            "adr": "approved",
            "mcp": "proposed",
            "editor-fix": "proposed",
        }
        assert s.shared.all() == []
