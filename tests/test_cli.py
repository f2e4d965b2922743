"""The ``living-memory`` command line, run as a real subprocess against real database files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import apsw
import pytest


def run(
    args: list[str],
    env: dict[str, str],
    *,
    stdin: bytes | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "server", *args],
        env=env,
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=120,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


def ok(args: list[str], env: dict[str, str], **kw: object) -> str:
    r = run(args, env, **kw)  # type: ignore[arg-type]
    assert r.returncode == 0, f"{args} failed: {r.stderr}"
    return r.stdout


def fails(args: list[str], env: dict[str, str], **kw: object) -> str:
    """Run a command that must fail with exit 2 and a single line on stderr; return it."""
    r = run(args, env, **kw)  # type: ignore[arg-type]
    assert r.returncode == 2, f"{args} should fail with 2, got {r.returncode}: {r.stderr}"
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one error line, got: {r.stderr!r}"
    assert lines[0].startswith("error: ")
    assert "Traceback" not in r.stderr
    return lines[0]


def remember(env: dict[str, str], *args: str) -> int:
    out = json.loads(ok(["remember", "--json", *args], env))
    return out["id"]


def test_remember_then_search_finds_it(env: dict[str, str]) -> None:
    mid = remember(
        env,
        "--kind",
        "decision",
        "-a",
        "file:src/db.py",
        "We chose PostgreSQL over MongoDB for JSON support",
    )
    remember(env, "--kind", "convention", "Always run ruff before committing")
    hits = json.loads(ok(["search", "PostgreSQL database", "--json"], env))["results"]
    assert hits[0]["id"] == mid
    assert hits[0]["kind"] == "decision"
    assert hits[0]["anchors"] == ["file:src/db.py"]
    assert hits[0]["source"] == {"source": "manual", "kind": "memory", "path": "src/db.py"}
    assert {"unit", "label", "score", "provenance", "snippet"} <= hits[0].keys()
    text = ok(["search", "PostgreSQL"], env)
    assert f"#{mid}" in text and "PostgreSQL" in text


def test_remember_twice_is_stored_once(env: dict[str, str]) -> None:
    assert ok(["remember", "same  text here"], env).strip() == "Remembered #1"
    assert ok(["remember", "same text here"], env).strip() == "Already remembered as #1"
    assert json.loads(ok(["stats", "--json"], env))["memories"] == 1


def test_remember_reads_stdin(env: dict[str, str]) -> None:
    mid = json.loads(ok(["remember", "--json", "-"], env, stdin=b"from standard input"))["id"]
    assert json.loads(ok(["show", str(mid), "--json"], env))["text"] == "from standard input"


def test_remember_rejects_invalid_utf8_on_stdin(env: dict[str, str]) -> None:
    line = fails(["remember", "-"], env, stdin=b"\xff\xfe bad")
    assert "UTF-8" in line
    assert json.loads(ok(["stats", "--json"], env))["memories"] == 0


def test_show_json_and_levels(env: dict[str, str]) -> None:
    mid = remember(
        env,
        "-k",
        "solution",
        "-a",
        "symbol:refreshToken",
        "-t",
        "auth",
        "--importance",
        "0.9",
        "--artifact",
        "commit:abc123",
        "Await the promise in refreshToken to stop the TypeError",
    )
    shown = json.loads(ok(["show", str(mid), "--json"], env))
    assert shown["kind"] == "solution"
    assert shown["importance"] == 0.9
    assert sorted(shown["anchors"]) == ["symbol:refreshToken", "tag:auth"]
    assert shown["artifacts"] == [{"type": "commit", "ref": "abc123", "title": None}]
    text = ok(["show", str(mid), "--level", "summary"], env)
    assert "(summary level; --level full shows more)" in text and "Await the promise" in text


def test_secrets_never_reach_output_or_disk(env: dict[str, str], tmp_path: Path) -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    mid = remember(env, f"deploy uses key {secret} and postgres://app:hunter22@db/prod")
    shown = json.loads(ok(["show", str(mid), "--json"], env))
    assert secret not in shown["text"] and "hunter22" not in shown["text"]
    assert "postgres://app:" in shown["text"] and "@db/prod" in shown["text"]
    for f in (tmp_path / "data").iterdir():
        assert secret.encode() not in f.read_bytes()


def test_related_links_and_walks(env: dict[str, str]) -> None:
    a = remember(env, "Auth uses JWT access tokens")
    b = remember(env, "Refresh tokens rotate on every use")
    c = remember(env, "Token rotation is stored in Redis")
    ok(["related", str(a), "--link", str(b), "--type", "LEADS_TO", "--strength", "0.8"], env)
    ok(["related", str(b), "--link", str(c), "--type", "depends_on"], env)
    walk = json.loads(ok(["related", str(a), "--json", "--direction", "out"], env))["related"]
    assert [(r["id"], r["depth"], r["via"]) for r in walk] == [
        (b, 1, "LEADS_TO"),
        (c, 2, "DEPENDS_ON"),
    ]
    assert walk[1]["strength"] == pytest.approx(0.8)
    one = json.loads(ok(["related", str(a), "--json", "--depth", "1"], env))["related"]
    assert [r["id"] for r in one] == [b]
    strong = json.loads(ok(["related", str(a), "--json", "--min-strength", "0.9"], env))
    assert strong["related"] == []


def test_forget_archives_and_restore_brings_back(env: dict[str, str]) -> None:
    mid = remember(env, "Use feature flags for risky payment changes")
    ok(["forget", str(mid), "--reason", "outdated"], env)
    assert json.loads(ok(["search", "feature flags", "--json"], env))["results"] == []
    archived = json.loads(ok(["search", "feature flags", "--json", "--archived"], env))["results"]
    assert [h["id"] for h in archived] == [mid]
    shown = json.loads(ok(["show", str(mid), "--json"], env))
    assert shown["archived"] is True and shown["archiveReason"] == "outdated"
    ok(["restore", str(mid)], env)
    found = json.loads(ok(["search", "feature flags", "--json"], env))["results"]
    assert [h["id"] for h in found] == [mid]


def test_purge_needs_archive_first(env: dict[str, str]) -> None:
    mid = remember(env, "Temporary note about the staging database")
    assert "not archived" in fails(["forget", str(mid), "--purge"], env)
    assert json.loads(ok(["stats", "--json"], env))["memories"] == 1
    ok(["forget", str(mid)], env)
    ok(["forget", str(mid), "--purge"], env)
    assert f"no memory #{mid}" in fails(["show", str(mid)], env)
    assert json.loads(ok(["stats", "--json"], env))["memories"] == 0


def test_supersedes_and_current(env: dict[str, str]) -> None:
    old = remember(env, "-k", "decision", "Sessions are stored in JWT cookies")
    new = remember(
        env,
        "-k",
        "decision",
        "--supersedes",
        str(old),
        "Sessions are stored server-side in Redis, not JWT cookies",
    )
    shown = json.loads(ok(["show", str(old), "--json"], env))
    assert shown["supersededBy"] == new and shown["validTo"] is not None
    current = json.loads(ok(["search", "sessions JWT cookies", "--json"], env))["results"]
    assert [h["id"] for h in current] == [new]
    everything = json.loads(ok(["search", "sessions JWT cookies", "--history", "--json"], env))
    everything = everything["results"]
    assert {h["id"] for h in everything} == {old, new}
    assert everything[0]["id"] == new  # the superseded one is ranked down


def test_search_filters_by_kind_and_anchor(env: dict[str, str]) -> None:
    d = remember(env, "-k", "decision", "-a", "file:src/pay.py", "Payments retry three times")
    remember(env, "-k", "fact", "-a", "file:src/mail.py", "Payments emails go out nightly")
    assert [
        h["id"]
        for h in json.loads(ok(["search", "payments", "--kind", "decision", "--json"], env))[
            "results"
        ]
    ] == [d]
    assert [
        h["id"]
        for h in json.loads(ok(["search", "payments", "-a", "file:src/pay.py", "--json"], env))[
            "results"
        ]
    ] == [d]


def test_stats_and_reindex(env: dict[str, str]) -> None:
    for i in range(5):
        remember(env, "-k", "fact", f"fact number {i} about caching layer {i * 7}")
    st = json.loads(ok(["stats", "--json"], env))
    assert st["memories"] == 5 and st["embedded"] == 5 and st["pendingEmbeddings"] == 0
    assert st["byKind"] == {"fact": 5}
    assert st["indexCount"] == 5  # the vector index's own size, not null
    out = json.loads(ok(["reindex", "--json"], env))
    assert out == {"keywordRows": 5, "embedded": 0, "vectors": 5}
    remember(env, "-k", "fact", "a sixth fact about the caching layer")
    assert json.loads(ok(["stats", "--json"], env))["indexCount"] == 6
    assert "6 in the index" in ok(["stats"], env)


def test_search_embeds_memories_added_without_vectors(env: dict[str, str]) -> None:
    remember(env, "The build uses esbuild for the extension bundle")
    # vectors lost (say, written by a crashed run) are embedded again before searching
    env2 = {**env, "LIVING_MEMORY_EMBEDDER": "hashing"}
    db = Path(env["LIVING_MEMORY_DB"])
    conn = apsw.Connection(str(db))
    conn.execute("DELETE FROM embeddings")
    conn.close()
    assert json.loads(ok(["stats", "--json"], env2))["pendingEmbeddings"] == 1
    hits = json.loads(ok(["search", "esbuild bundle", "--json", "--mode", "vector"], env2))[
        "results"
    ]
    assert len(hits) == 1
    assert json.loads(ok(["stats", "--json"], env2))["pendingEmbeddings"] == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["frobnicate"], "invalid choice"),
        (["search"], "required"),
        (["show", "abc"], "not a memory id"),
        (["show", "0"], "not a memory id"),
        (["remember", "--importance", "3", "x"], "between 0 and 1"),
        (["remember", "--kind", "opinion", "x"], "not one of"),
        (["remember", "--anchor", "file:", "x"], "empty value"),
        (["remember", "--artifact", "nocolon", "x"], "TYPE:REF"),
        (["remember", "   "], "empty"),
        (["search", "x", "--valid-at", "yesterday"], "not a time"),
        (["search", "x", "-n", "0"], "positive integer"),
        (["related", "1", "--type", "LIKES"], "not one of"),
        (["show", "42"], "no memory #42"),
        ([], "required"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(
    env: dict[str, str], args: list[str], needle: str
) -> None:
    assert needle in fails(args, env)


def test_corrupt_database_is_refused_and_untouched(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    content = b"these are my notes, not a database\n" * 50
    bad.write_bytes(content)
    line = fails(["--db", str(bad), "remember", "hello"], env)
    assert "not a valid Living Memory database" in line
    assert bad.read_bytes() == content
    assert not (tmp_path / "notes.db-wal").exists()


def test_truncated_sqlite_file_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    good = tmp_path / "m.db"
    ok(["--db", str(good), "remember", "something worth keeping"], env)
    for extra in tmp_path.glob("m.db-*"):
        extra.unlink()
    data = good.read_bytes()
    broken = tmp_path / "broken.db"
    broken.write_bytes(data[:100] + b"\x00" * 50 + data[150:2000])
    before = broken.read_bytes()
    fails(["--db", str(broken), "search", "something"], env)
    assert broken.read_bytes() == before


def test_locked_database_fails_cleanly(env: dict[str, str]) -> None:
    remember(env, "first memory before the lock")
    holder = apsw.Connection(env["LIVING_MEMORY_DB"])
    holder.execute("BEGIN EXCLUSIVE")
    try:
        line = fails(["remember", "second memory"], {**env, "LIVING_MEMORY_BUSY_TIMEOUT_MS": "200"})
        assert "locked" in line
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert json.loads(ok(["stats", "--json"], env))["memories"] == 1
    remember(env, "second memory")
    assert json.loads(ok(["stats", "--json"], env))["memories"] == 2


def test_unwritable_directory(env: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    line = fails(["--db", str(blocker / "sub" / "m.db"), "remember", "x"], env)
    assert "data directory" in line
    assert blocker.read_text() == "x"


def test_default_database_is_keyed_by_git_root(env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in env.items() if k != "LIVING_MEMORY_DB"}
    env["LIVING_MEMORY_DATA_DIR"] = str(tmp_path / "userdata")
    repo = tmp_path / "myproject"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    ok(["remember", "from the root"], env, cwd=repo)
    ok(["remember", "from a subfolder"], env, cwd=repo / "src" / "deep")
    dbs = list((tmp_path / "userdata" / "projects").glob("*/memory.db"))
    assert len(dbs) == 1 and dbs[0].parent.name.startswith("myproject-")
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    ok(["remember", "another project"], env, cwd=other)
    assert len(list((tmp_path / "userdata" / "projects").glob("*/memory.db"))) == 2
    st = json.loads(ok(["stats", "--json"], env, cwd=repo / "src"))
    assert st["memories"] == 2


def test_real_model_end_to_end(env: dict[str, str]) -> None:
    env = {k: v for k, v in env.items() if k != "LIVING_MEMORY_EMBEDDER"}
    target = remember(
        env,
        "-k",
        "decision",
        "We chose PostgreSQL over MongoDB for JSON support and team expertise",
    )
    remember(env, "-k", "convention", "Always run the linter before committing code")
    remember(env, "-k", "solution", "The flaky upload test was fixed by raising the timeout")
    hits = json.loads(ok(["search", "which relational store holds our data", "--json"], env))[
        "results"
    ]
    assert hits and hits[0]["id"] == target
    st = json.loads(ok(["stats", "--json"], env))
    assert st["modelId"].startswith("all-MiniLM-L6-v2-onnx-int8@")
    assert st["embedded"] == 3


def test_context_for_a_file(env: dict[str, str], tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/fix/login-timeout\n")
    (repo / "src").mkdir()
    (repo / "src" / "login.py").write_text("from auth.session import SessionStore\n")
    d = remember(
        env,
        "-k",
        "decision",
        "-a",
        "file:src/login.py",
        "Login goes through SessionStore; never read cookies directly",
    )
    c = remember(env, "-k", "convention", "Always log the request id on auth failures")
    i = remember(env, "-a", "module:auth.session", "SessionStore keeps sessions in Redis")
    out = json.loads(ok(["context", "src/login.py", "--json"], env, cwd=repo))
    assert out["file"] == "src/login.py" and out["branch"] == "fix/login-timeout"
    assert out["activity"] == "debugging"  # a fix/ branch
    tiers = {item["memoryId"]: item["tier"] for item in out["items"] if item["memoryId"]}
    assert tiers[d] == "critical" and tiers[c] == "background" and tiers[i] == "relevant"
    assert out["tokens"]["total"] <= out["tokens"]["budget"] == 8000
    text = ok(
        [
            "context",
            str(repo / "src" / "login.py"),
            "--budget",
            "300",
            "--branch",
            "main",
            "--activity",
            "feature",
        ],
        env,
    )
    assert "## Critical" in text and f"#{d}" in text and "activity: feature" in text


def test_context_with_diagnostics(env: dict[str, str], tmp_path: Path) -> None:
    diags = tmp_path / "d.json"
    diags.write_text(
        json.dumps(
            [
                {
                    "severity": 1,
                    "message": "x is not defined",
                    "range": {"start": {"line": 1, "character": 0}},
                }
            ]
        )
    )
    out = json.loads(
        ok(["context", "a.py", "--diagnostics", f"@{diags}", "--json"], env, cwd=tmp_path)
    )
    assert out["activity"] == "debugging"
    line = fails(["context", "a.py", "--diagnostics", "[{"], env, cwd=tmp_path)
    assert "--diagnostics" in line
    assert "cannot read" in fails(["context", "a.py", "--diagnostics", "@/nonexistent"], env)
    assert "budget" in fails(["context", "a.py", "--budget", "100"], env)
    assert "not one of" in fails(["context", "a.py", "--activity", "napping"], env)
    assert "not a file" in fails(["context", str(tmp_path)], env)


def test_contradictions_are_listed_and_resolved_from_the_command_line(
    env: dict[str, str],
) -> None:
    a = remember(env, "-k", "convention", "Always squash merge pull requests")
    said = ok(["remember", "-k", "convention", "Never squash merge pull requests"], env)
    assert "may contradict (suspected) what the memory holds" in said
    b = a + 1
    listed = json.loads(ok(["contradictions", "--json"], env))  # the review list
    assert listed["status"] == "review" and listed["count"] == 1
    c = listed["contradictions"][0]
    cid = c["id"]
    assert {c["a"]["id"], c["b"]["id"]} == {a, b} and "polarity" in c["reason"]
    assert c["status"] == "suspected"
    assert json.loads(ok(["contradictions", "--status", "open", "--json"], env))["count"] == 0
    text = ok(["contradictions"], env)
    assert f"contradiction {cid} [suspected]" in text and "Never squash" in text
    assert "resolve ID confirm" in text
    stats = ok(["stats"], env)
    assert "0 open contradictions, 1 suspected" in stats
    confirmed = ok(["resolve", str(cid), "confirm", "--note", "really"], env)
    assert f"Confirmed contradiction {cid}" in confirmed
    assert "is open: only a suspected one" in fails(["resolve", str(cid), "confirm"], env)
    opened = json.loads(ok(["contradictions", "--status", "open", "--json"], env))
    assert [x["id"] for x in opened["contradictions"]] == [cid]
    assert opened["contradictions"][0]["note"] == "confirmed: really"
    assert f"contradiction {cid} [open]" in ok(["contradictions"], env)
    assert "needs exactly one" in fails(["resolve", str(cid), "merged"], env)
    out = ok(["resolve", str(cid), "a_wins", "--note", "team vote"], env)
    assert f"#{c['a']['id']} stands" in out
    loser = c["b"]["id"]
    assert json.loads(ok(["show", str(loser), "--json"], env))["supersededBy"] == c["a"]["id"]
    assert "already resolved" in fails(["resolve", str(cid), "b_wins"], env)
    assert json.loads(ok(["contradictions", "--json"], env))["count"] == 0


def test_pending_candidates_are_listed_apart_from_the_review_list(env: dict[str, str]) -> None:
    old = remember(env, "-k", "decision", "We use PostgreSQL as the primary database")
    new = remember(
        env, "-k", "decision", "We moved off PostgreSQL: MySQL is the primary database now"
    )
    assert json.loads(ok(["contradictions", "--json"], env))["count"] == 0  # no judge here
    listed = json.loads(ok(["contradictions", "--pending", "--json"], env))
    assert listed["status"] == "pending" and listed["count"] == 1
    (c,) = listed["contradictions"]
    assert (c["status"], c["a"]["id"], c["b"]["id"]) == ("pending", old, new)
    text = ok(["contradictions", "--status", "pending"], env)
    assert f"candidate {c['id']} [pending]" in text and "MySQL" in text
    assert "never shown in a context" in text


def test_ask_classifies_and_cites(env: dict[str, str]) -> None:
    mid = remember(env, "-k", "decision", "We chose PostgreSQL over MongoDB for JSON support")
    out = json.loads(ok(["ask", "why did we choose PostgreSQL?", "--json"], env))
    assert out["type"] == "decision"
    assert out["items"][0]["id"] == mid and out["items"][0]["provenance"]
    assert "decision question" in ok(["ask", "why did we choose PostgreSQL?"], env)
