"""Which commits are knowledge: merges, bots and trivial commits are left out by default;
a commit's memory is its subject and what its body says, never boilerplate."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictive.commit_noise import CommitFilter, meaningful_body, noise
from predictive.extract import from_commit
from predictive.ingest import GIT_FORMAT, run
from storage.repository import MemoryStore
from storage.sources.records import Commit
from tests.project_fixtures import make_git_repo


def commit(
    subject: str,
    body: str = "",
    *,
    author: str = "Ada Lovelace",
    email: str = "ada@example.com",
    parents: int = 1,
    reverts: str | None = None,
) -> Commit:
    return Commit(
        sha="c" * 40,
        parents=tuple(str(i) * 40 for i in range(parents)),
        author=author,
        email=email,
        at=1_790_000_000.0,
        subject=subject,
        body=body,
        files=("wrangler.jsonc",),
        reverts=reverts,
    )


@pytest.mark.parametrize(
    ("c", "reason"),
    [
        (commit("Merge branch 'main' into feature/ledger", parents=2), "merge"),
        (commit("merge main"), "merge"),  # a squashed or rebased "merge" is no merge either
        (commit("Merge pull request #2041 from cisagov/za/1810-fix-docs"), "merge"),
        (
            commit(
                "Bump django from 4.2.1 to 4.2.7",
                "Bumps [django](https://github.com/django/django) from 4.2.1 to 4.2.7.",
                author="dependabot[bot]",
                email="49699333+dependabot[bot]@users.noreply.github.com",
            ),
            "bot",
        ),
        (commit("chore(deps): update dependency vite to v5", author="renovate[bot]"), "bot"),
        (commit("Update CHANGELOG for release", author="github-actions"), "bot"),
        (commit("chore: release 1.4.0", author="release-please[bot]"), "bot"),
        (  # an app account's upkeep, explained or not
            commit(
                "chore: update anthropic latest version to 0.117.0 (#19184)",
                "Update anthropic lockfiles.\nThis updates only the lockfiles for the package.",
                author="octo-sts[bot]",
                email="200755185+octo-sts[bot]@users.noreply.github.com",
            ),
            "bot",
        ),
        (
            commit("ci: update one-pipeline", "Updates the pipeline.", author="campaigns[bot]"),
            "bot",
        ),
        (commit("Sync the translations", author="translator[bot]"), "bot"),
        (commit("lol tabs"), "trivial"),
        (commit("idk maybe works"), "trivial"),
        (commit("Initial commit"), "trivial"),
        (commit("wip"), "trivial"),
        (commit("fix"), "trivial"),
        (commit("fix: typo"), "trivial"),
        (commit("Update README.md"), "trivial"),
        (commit("fixup! Add the ledger", "Signed-off-by: Ada <ada@example.com>"), "trivial"),
    ],
)
def test_noise_is_recognised(c: Commit, reason: str) -> None:
    assert noise(c) == reason
    assert CommitFilter().excludes(c) == reason


@pytest.mark.parametrize(
    "c",
    [
        commit("Add token auth to the API"),
        commit(  # a coding agent's change that says what it fixed and why
            "Fix: Initial type error fixes and test setup improvements",
            "Commented out the cache decorators. This resolved a `TypeError` that was "
            "preventing test collection.",
            author="coding-agent[bot]",
            email="161369871+coding-agent[bot]@users.noreply.github.com",
        ),
        commit("fix(auth): refresh the token before it expires"),
        commit("Cache", "The ledger totals are cached for 60 s; invalidated on every write."),
        commit('Revert "Add caching"', "This reverts commit abc1234.", reverts="abc1234"),
        commit("Document the auth header"),
    ],
)
def test_knowledge_is_kept(c: Commit) -> None:
    assert noise(c) is None or c.reverts
    assert CommitFilter().excludes(c) is None


def test_each_kind_of_noise_can_be_kept() -> None:
    merge = commit("Merge branch 'x'", parents=2)
    bot = commit("Bump x", author="dependabot[bot]")
    trivial = commit("wip")
    keep_all = CommitFilter(merges=True, bots=True, trivial=True)
    assert [keep_all.excludes(c) for c in (merge, bot, trivial)] == [None, None, None]
    assert CommitFilter(merges=True).excludes(bot) == "bot"


def test_a_commit_reads_as_what_it_says() -> None:
    c = commit(
        "Store sessions in Redis",
        "## Summary\n\nSessions outgrew the cookie (4 kB); Redis keeps them server-side.\n\n"
        "## Checklist\n- [x] tests\n- [ ] docs\n\n<!-- describe the change -->\n"
        "Co-authored-by: Grace <grace@example.com>\nSigned-off-by: Ada <ada@example.com>",
    )
    text = from_commit(c).memory.text
    assert text == (
        "Store sessions in Redis\n\n## Summary\n\n"
        "Sessions outgrew the cookie (4 kB); Redis keeps them server-side."
    )
    for boilerplate in ("Commit ", "Ada", "2026", "Files:", "Signed-off-by", "[x]", "<!--"):
        assert boilerplate not in text
    assert meaningful_body("Signed-off-by: A <a@x>\n\n") == ""


def test_an_old_store_is_rewritten_once(store: MemoryStore, tmp_path: Path) -> None:
    """Memories stored by the former extraction ("Commit <sha> by … on …:", merges kept) are
    rewritten or archived by the next git ingestion; a second run changes nothing."""
    repo = make_git_repo(tmp_path)
    run(store, root=repo.root, options={"sources": ["git"], "include_merges": True})
    api = store.find_by_source("git", repo.shas["api"])
    merge = store.find_by_source("git", repo.shas["merge"])
    assert api is not None and merge is not None
    store.update(api.id, text=f"Commit {repo.shas['api'][:10]} by Ada on 2023-11-14: " + api.text)
    store.cursors.set("git", {"format": "1"})

    s = run(store, root=repo.root, options={"sources": ["git"]}).sources["git"]
    assert s.rewritten == 1 and s.archived == 1 and s.added == 0
    assert store.get(api.id).text.startswith("Add the API module\n\n")
    assert store.get(merge.id).archived
    assert store.cursors.get("git")["format"] == GIT_FORMAT
    again = run(store, root=repo.root, options={"sources": ["git"]}).sources["git"]
    assert again.read == 0 and again.rewritten == 0


def test_pull_request_template_boilerplate_is_not_knowledge() -> None:
    body = (
        "The exporter dropped the last batch on shutdown because the flush ran after the\n"
        "thread was joined.\n\n"
        '<img width="1490" alt="Screenshot"\nsrc="https://example.com/a.png"\n/>\n\n'
        "![graph](https://example.com/b.png)\n"
        "https://tracker.example.com/browse/PROJ-123\n\n"
        "## Checklist\n"
        "- The PR description includes an overview of the change\n"
        "- Release note makes sense to a user of the library\n\n"
        "## Reviewer Checklist\n"
        "- [x] Reviewer has checked that all the criteria below are met\n\n"
        "## Risks\n"
        "Low: shutdown only.\n\n"
        "## Additional Notes\n\n"
        "Claude session: `9f8553c5-6d78`\n"
        "Resume: `claude --resume 9f8553c5-6d78`\n\n"
        "🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\n"
        "PR by Bits\n\nComment @datadog to request changes\n"
    )
    kept = meaningful_body(body)
    assert "dropped the last batch on shutdown because" in kept
    assert "Low: shutdown only." in kept
    for dropped in (
        "Release note makes sense",
        "Reviewer has checked",
        "Screenshot",
        "example.com",
        "claude --resume",
        "Claude session",
        "Generated with",
        "PR by",
        "to request changes",
        "Additional Notes",
        "Checklist",
    ):
        assert dropped not in kept, dropped


def test_a_crash_commit_keeps_its_error_not_every_frame() -> None:
    frames = "\n".join(
        f"#{i} 0x00{i:02d} frame_{i} (src/native/map.cpp:{100 + i})" for i in range(20)
    )
    body = (
        "## Description\n\n"
        "Guard taint queries without a context: the map was read after the GC freed it.\n\n"
        f"```\nError UnixSignal: SEGV_MAPERR\n{frames}\n```\n\n"
        "```python\n" + "\n".join(f"step_{i}()" for i in range(8)) + "\n```\n\n"
        "Jira: [PROJ-69136](https://tracker.example.com/browse/PROJ-69136)\n\n"
        "## Risks\n\nNone\n\n"
        "## Additional Notes\n\nN/A\n\n"
        "[PROJ-69136]: https://tracker.example.com/browse/PROJ-69136?origin=abc\n"
    )
    kept = meaningful_body(body)
    assert "the map was read after the GC freed it" in kept
    assert "Error UnixSignal: SEGV_MAPERR" in kept and "#1 0x0001 frame_1" in kept
    assert "frame_2 " not in kept and "… (18 more lines)" in kept
    assert all(f"step_{i}()" in kept for i in range(8))  # code is kept whole
    for dropped in ("PROJ-69136", "Risks", "None", "Additional Notes", "N/A"):
        assert dropped not in kept, dropped
    # a section that says something is kept, "No" included when more follows
    assert "Low: only when" in meaningful_body("## Risks\n\nNo.\nLow: only when the flag is on.")
