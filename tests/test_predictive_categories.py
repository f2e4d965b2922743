"""Categories with evolving summaries on real stores: derived areas, incremental summaries,
the tree for explore, the Index tier, and an LLM summary line only when it is valid."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from predictive import ingest, llm
from predictive.categories import (
    MIN_MEMBERS,
    area_renderings,
    areas_for_path,
    category_of,
    category_tree,
    derive,
    refresh_categories,
)
from predictive.engine import ContextEngine, ContextRequest
from predictive.llm import LlmClient
from predictive.llm_config import LlmConfig
from storage import Anchor, AnchorType, Kind, Level, MemoryStore
from storage import category_sync as cs
from tests.llm_server import FakeLlm
from tests.project_fixtures import make_git_repo

Add = Callable[..., int]


@pytest.fixture(autouse=True)
def _fresh_llm_state() -> Iterator[None]:
    """Each test starts with closed breakers and free slots (a port may be reused)."""
    llm.reset()
    yield
    llm.reset()


def files(*paths: str) -> list[Anchor]:
    return [Anchor(AnchorType.FILE, p) for p in paths]


def summaries(store: MemoryStore) -> dict[str, tuple[str | None, str | None]]:
    return {
        r[0]: (r[1], r[2])
        for r in store.conn.execute("SELECT name, summary, fingerprint FROM categories")
    }


@pytest.fixture
def project(add: Add) -> dict[str, int]:
    ids = {
        "jwt": add(
            "Decision: use JWT access tokens with a 15 minute expiry for the API.",
            kind=Kind.DECISION,
            anchors=files("src/auth/tokens.py"),
            importance=0.9,
            created_at=1_700_000_000,
        ),
        "sessions": add(
            "Fixed: session refresh raced with logout; lock around refresh.",
            kind=Kind.SOLUTION,
            anchors=files("src/auth/session.py", "src/auth/tokens.py"),
            created_at=1_710_000_000,
        ),
        "hash": add(
            "Passwords are hashed with argon2id, never bcrypt.",
            kind=Kind.CONVENTION,
            anchors=files("src/auth/passwords.py"),
            created_at=1_705_000_000,
        ),
        "oauth": add(
            "OAuth callback handler added for GitHub login.",
            kind=Kind.EPISODE,
            anchors=files("src/auth/oauth/github.py"),
            created_at=1_706_000_000,
        ),
        "pay1": add(
            "Stripe webhooks are verified with the signing secret before parsing.",
            kind=Kind.CONVENTION,
            anchors=[*files("src/payments/webhooks.py"), Anchor(AnchorType.TAG, "security")],
        ),
        "pay2": add(
            "Refunds go through the payments queue, not inline.",
            kind=Kind.DECISION,
            anchors=files("src/payments/refunds.py"),
        ),
        "pay3": add(
            "Charge retries back off exponentially.",
            kind=Kind.PATTERN,
            anchors=[*files("src/payments/retry.py"), Anchor(AnchorType.TAG, "security")],
        ),
        "lone": add("The docs site builds with mkdocs.", anchors=files("docs/site/index.md")),
        "sec": add(
            "Secrets never go into logs.",
            kind=Kind.CONVENTION,
            anchors=[Anchor(AnchorType.TAG, "security"), Anchor(AnchorType.TAG, "commit")],
        ),
        "commit1": add("chore: bump", anchors=[Anchor(AnchorType.TAG, "commit")]),
        "commit2": add("chore: bump again", anchors=[Anchor(AnchorType.TAG, "commit")]),
    }
    return ids


def test_areas_come_from_directories_and_nest(store: MemoryStore, project: dict[str, int]) -> None:
    report = refresh_categories(store)
    names = {
        n: (o, p)
        for n, o, p in store.conn.execute(
            "SELECT c.name, c.origin, p.name FROM categories c LEFT JOIN categories p "
            "ON p.id = c.parent_id"
        )
    }
    assert names["src/auth/"] == ("area", "src/")
    assert names["src/payments/"] == ("area", "src/")
    assert names["security"] == ("tag", None)  # a topic tag three memories share
    assert "commit" not in names  # where a memory came from is no topic
    assert "docs/site/" not in names and "src/auth/oauth/" not in names  # one memory only
    assert report.created == len(names) and report.summarised == len(names)
    auth = category_of(store, project["sessions"])
    assert [c.name for c in auth] == ["src/auth/"]
    assert {c.name for c in category_of(store, project["pay1"])} == {"src/payments/", "security"}
    assert category_of(store, project["lone"]) == []


def test_a_summary_counts_kinds_names_salient_items_and_subareas(
    store: MemoryStore, project: dict[str, int]
) -> None:
    refresh_categories(store)
    auth = summaries(store)["src/auth/"][0] or ""
    first, key = auth.split("\n")[:2]
    assert first.startswith("4 memories (")
    assert "1 decision" in first and "1 solution" in first and "1 convention" in first
    assert "2023-11 – 2024-03" in first
    assert key.startswith("Key: Decision: use JWT") and f"(#{project['jwt']})" in key
    src = summaries(store)["src/"][0] or ""
    assert src.startswith("7 memories") and "Ask about: auth/, payments/" in src


def test_only_changed_categories_are_summarised_again(
    store: MemoryStore, add: Add, project: dict[str, int]
) -> None:
    refresh_categories(store)
    before = summaries(store)
    again = refresh_categories(store)
    assert again.summarised == 0 and summaries(store) == before
    add(
        "Tokens are rotated on every refresh.",
        kind=Kind.DECISION,
        anchors=files("src/auth/tokens.py"),
    )
    third = refresh_categories(store)
    after = summaries(store)
    changed = {n for n in after if after[n] != before[n]}
    assert changed == {"src/auth/", "src/"}  # the area and the area above it
    assert third.summarised == 2 and third.members_added == 1
    assert (after["src/auth/"][0] or "").startswith("5 memories")


def test_an_archived_member_leaves_its_category(
    store: MemoryStore, project: dict[str, int]
) -> None:
    refresh_categories(store)
    store.archive(project["jwt"], "test")
    report = refresh_categories(store)
    assert report.members_removed == 1
    assert (summaries(store)["src/auth/"][0] or "").startswith("3 memories")
    assert category_of(store, project["jwt"]) == []
    store.restore(project["jwt"])
    refresh_categories(store)
    assert (summaries(store)["src/auth/"][0] or "").startswith("4 memories")


def test_an_area_that_falls_below_the_minimum_is_removed(
    store: MemoryStore, project: dict[str, int]
) -> None:
    refresh_categories(store)
    for key in ("pay1", "pay2"):
        store.archive(project[key], "test")
    report = refresh_categories(store)
    names = set(summaries(store))
    assert "src/payments/" not in names and report.deleted >= 1
    assert "src/auth/" in names


def test_categories_a_user_made_are_left_alone(store: MemoryStore, project: dict[str, int]) -> None:
    store.categories.assign(project["lone"], "onboarding")
    store.categories.set_summary("onboarding", "my own words")
    refresh_categories(store)
    refresh_categories(store)
    assert store.categories.of(project["lone"]) == ["onboarding"]
    assert summaries(store)["onboarding"][0] == "my own words"


def test_the_tree_for_explore(store: MemoryStore, project: dict[str, int]) -> None:
    refresh_categories(store)
    tree = category_tree(store)
    src = next(n for n in tree if n.name == "src/")
    assert src.total == 7 and src.members == 0
    assert [c.name for c in src.children] == ["src/auth/", "src/payments/"]
    assert json.loads(json.dumps(src.to_dict()))["children"][0]["total"] == 4
    shallow = category_tree(store, root="src/", depth=0)
    assert len(shallow) == 1 and shallow[0].children == ()
    assert category_tree(store, root="no such category") == []


def test_bad_paths_never_make_areas() -> None:
    rows = [
        (i, "file", p)
        for i in range(1, MIN_MEMBERS + 2)
        for p in ("/etc/passwd", "../outside/x.py", "C:/Windows/x.dll", "", "README.md")
    ]
    assert derive(rows).wanted == {}


def test_a_memory_without_files_joins_the_area_of_its_module(store: MemoryStore, add: Add) -> None:
    for i in range(3):
        add(f"engine note {i}", anchors=files(f"src/pkg/engines/e{i}.py"))
    mid = add(
        "the engines share one base class", anchors=[Anchor(AnchorType.MODULE, "pkg.engines.base")]
    )
    refresh_categories(store)
    assert [c.name for c in category_of(store, mid)] == ["src/pkg/engines/"]


def test_the_index_tier_shows_the_files_area(store: MemoryStore, project: dict[str, int]) -> None:
    refresh_categories(store)
    areas = areas_for_path(store, "src/auth/new_module.py")
    assert [a.name for a in areas] == ["src/auth/", "src/"]
    assert area_renderings(areas)
    ctx = ContextEngine(store).assemble(ContextRequest(path="src/auth/new_module.py", text="x = 1"))
    assert "Area src/auth/: 4 memories" in ctx.markdown
    assert any(i.key == "areas" and i.tier.value == "index" for i in ctx.items)
    elsewhere = ContextEngine(store).assemble(ContextRequest(path="tools/x.py", text="x = 1"))
    assert "Area " not in elsewhere.markdown


def _area_row(cid: int, name: str, members: int, summary: str) -> cs.CategoryRow:
    return cs.CategoryRow(cid, name, "area", None, None, summary, None, None, members)


def test_the_area_lines_point_only_at_what_the_context_does_not_show() -> None:
    own = _area_row(
        2,
        "src/pkg/engines/",
        12,
        "12 memories (12 episodes), 2025-02 – 2025-03\n"
        "Key: Workflow: read a.py; run ruff (#84); fix: the key lookup (#7); retry (#9)\n"
        "Ask about: brave, base",
    )
    parent = _area_row(1, "src/pkg/", 30, "30 memories (30 episodes), 2025-01 – 2025-03")
    full = area_renderings([own, parent], shown=[84, 9])[Level.FULL]
    assert full == (
        "Area src/pkg/engines/: 12 memories (12 episodes), 2025-02 – 2025-03 · "
        "Key: fix: the key lookup (#7) · Ask about: brave, base"
    )  # a large own area: the enclosing one is left out
    none_left = area_renderings([own], shown=[84, 7, 9])[Level.FULL]
    assert "Key:" not in none_left and "Ask about: brave, base" in none_left
    small = _area_row(2, "src/pkg/engines/", 3, "3 memories (3 episodes), 2025-02")
    assert area_renderings([small, parent])[Level.INDEX] == "Areas: src/pkg/engines/, src/pkg/"
    then = area_renderings([small, parent], as_of=1.0e9)
    assert then[Level.FULL] == "Area src/pkg/engines/\nArea src/pkg/"  # no summary of today


def test_dry_run_changes_nothing(store: MemoryStore, project: dict[str, int], snapshot) -> None:  # type: ignore[no-untyped-def]
    before = snapshot()
    report = refresh_categories(store, dry_run=True)
    assert report.categories >= 3 and "src/auth/" in report.would_create
    assert snapshot() == before


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    f = FakeLlm()
    yield f
    f.close()


def _client(fake: FakeLlm, store: MemoryStore) -> LlmClient:
    return LlmClient(LlmConfig(url=fake.url, model="test-model"), store=store)


def test_a_valid_llm_summary_line_replaces_the_key_items(
    store: MemoryStore, project: dict[str, int], fake: FakeLlm
) -> None:
    def answer(body: dict) -> str:
        prompt = body["messages"][1]["content"]
        if "Area: src/auth/" not in prompt:
            return "not json"
        return json.dumps(
            {
                "summary": "Auth uses JWT access tokens with a 15 minute expiry; "
                "passwords are hashed with argon2id.",
                "cited": [project["jwt"], project["hash"]],
            }
        )

    fake.replies = [answer]
    report = refresh_categories(store, llm=_client(fake, store))
    auth = (summaries(store)["src/auth/"][0] or "").split("\n")
    assert auth[1].startswith("Auth uses JWT access tokens") and f"#{project['jwt']}" in auth[1]
    assert not any(line.startswith("Key: ") for line in auth)
    assert report.llm_summaries == 1
    pay = summaries(store)["src/payments/"][0] or ""
    assert "\nKey: " in pay  # its answer was not JSON: the deterministic summary stays


@pytest.mark.parametrize(
    "summary, cited",
    [
        ("Auth moved to Kerberos tickets managed by Keycloak clusters.", None),  # not in items
        ("Auth uses JWT access tokens with a 15 minute expiry.", [99999]),  # unknown id
    ],
)
def test_an_unfaithful_llm_summary_is_discarded(
    store: MemoryStore,
    project: dict[str, int],
    fake: FakeLlm,
    summary: str,
    cited: list[int] | None,
) -> None:
    fake.replies = [json.dumps({"summary": summary, "cited": cited or [project["jwt"]]})]
    client = _client(fake, store)
    refresh_categories(store, llm=client)
    assert all("Kerberos" not in (s or "") for s, _ in summaries(store).values())
    assert "\nKey: " in (summaries(store)["src/auth/"][0] or "")
    assert client.stats()["invalid"] >= 1
    assert store.conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 0


def test_a_memory_in_two_subareas_counts_once_in_their_parent(store: MemoryStore, add: Add) -> None:
    for i in range(3):
        add(f"api note {i}", anchors=files(f"src/api/a{i}.py"))
        add(f"db note {i}", anchors=files(f"src/db/d{i}.py"))
    both = add(
        "the api reads the db through one session", anchors=files("src/api/x.py", "src/db/y.py")
    )
    refresh_categories(store)
    assert {c.name for c in category_of(store, both)} == {"src/api/", "src/db/"}
    src = category_tree(store, root="src/")[0]
    assert src.total == 7 and sum(c.members for c in src.children) == 8
    assert (summaries(store)["src/"][0] or "").startswith("7 memories")


def test_after_ingest_new_memories_join_the_categories_that_exist(
    store: MemoryStore, add: Add, project: dict[str, int]
) -> None:
    refresh_categories(store)
    before = summaries(store)
    joined = add(
        "Refresh tokens are single use.", kind=Kind.DECISION, anchors=files("src/auth/t.py")
    )
    for i in range(3):
        add(f"cli note {i}", anchors=files(f"src/cli/c{i}.py"))
    quick = refresh_categories(store, full=False)
    assert quick.full is False and quick.created == 0
    assert [c.name for c in category_of(store, joined)] == ["src/auth/"]
    after = summaries(store)
    assert {n for n in after if after[n] != before[n]} == {"src/auth/", "src/"}
    assert "src/cli/" not in after  # a new area waits for the full refresh
    full = refresh_categories(store)
    assert full.full is True and "src/cli/" in summaries(store)


def test_a_store_never_refreshed_gets_a_full_refresh(
    store: MemoryStore, project: dict[str, int]
) -> None:
    report = refresh_categories(store, full=False)
    assert report.full is True and "src/auth/" in summaries(store)


def test_ingesting_a_history_files_it_into_areas(store: MemoryStore, tmp_path: Path) -> None:
    steps = [
        {
            "message": f"Billing: invoice rounding rule {i} uses banker's rounding",
            "files": {f"app/billing/m{i}.py": f"x = {i}\n"},
        }
        for i in range(3)
    ] + [
        {
            "message": f"Search: the index is rebuilt nightly, change {i}",
            "files": {f"app/search/s{i}.py": f"y = {i}\n"},
        }
        for i in range(3)
    ]
    repo = make_git_repo(tmp_path, steps)
    summary = ingest.run(store, root=repo.root, options={"sources": ["git"]})
    assert summary.categories.full is True  # the first refresh of this store
    names = set(summaries(store))
    assert {"app/billing/", "app/search/"} <= names
    repo.apply(
        {
            "message": "Billing: credit notes reuse the invoice number space",
            "files": {"app/billing/credit.py": "z = 1\n"},
        }
    )
    again = ingest.run(store, root=repo.root, options={"sources": ["git"]})
    assert again.categories.full is False and again.categories.members_added == 1
    assert (summaries(store)["app/billing/"][0] or "").startswith("4 memories")
    dry = ingest.run(store, root=repo.root, options={"sources": ["git"], "dryRun": True})
    assert dry.categories is None


def test_an_areas_key_lists_what_holds_never_its_latest_commits(
    store: MemoryStore, project: dict[str, int], add: Add
) -> None:
    for n in range(4):
        add(
            f"jobs: retry step {n} of the nightly export",
            kind=Kind.EPISODE,
            anchors=files(f"src/jobs/step{n}.py"),
            created_at=1_720_000_000 + n,
        )
    refresh_categories(store)
    jobs = summaries(store)["src/jobs/"][0] or ""
    assert jobs.startswith("4 memories (4 episodes)")
    assert "Key: " not in jobs  # four commits: none is what the area holds
    auth = summaries(store)["src/auth/"][0] or ""
    key = next(line for line in auth.split("\n") if line.startswith("Key: "))
    assert f"(#{project['jwt']})" in key and f"(#{project['oauth']})" not in key


def test_a_store_summarised_by_an_older_format_is_summarised_anew(
    store: MemoryStore, project: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from predictive import categories

    monkeypatch.setattr(categories, "SUMMARY_FORMAT", categories.SUMMARY_FORMAT - 1)
    refresh_categories(store)
    assert refresh_categories(store).summarised == 0  # nothing changed since
    monkeypatch.undo()
    again = refresh_categories(store)
    assert again.summarised == len(summaries(store))


def test_a_store_whose_category_paths_collide_derives_categories_without_error(
    store: MemoryStore, add: Add
) -> None:
    """dd-trace-py's shape: a fixture folder and the folder holding it both end with too few
    members (their big commits join three larger areas), so the fixture folder is given up to
    its parent, then the parent to nothing; the fixture folder must not come back."""
    wide = [
        f"{d}/m{n}.py" for d in ("ddtrace/appsec", "ddtrace/llmobs", "tests/appsec") for n in (1, 2)
    ]
    big = [
        add(f"big change {i}", anchors=files(f"benchmarks/bm/iast_fixtures/s{i}.py", *wide))
        for i in range(3)
    ]
    big.append(add("bench utils", anchors=files("benchmarks/bm/flask_utils.py", *wide)))
    derivation = derive(cs.current_anchors(store.conn))
    for name, (_, parent, _) in derivation.wanted.items():
        assert parent is None or parent in derivation.wanted, name
    report = refresh_categories(store)
    names = set(summaries(store))
    assert report.created == len(names)
    assert {"ddtrace/appsec/", "ddtrace/llmobs/", "tests/appsec/"} <= names
    assert not any(n.startswith("benchmarks/") for n in names)  # given up, not revived
    assert {c.name for c in category_of(store, big[0])} == {
        "ddtrace/appsec/",
        "ddtrace/llmobs/",
        "tests/appsec/",
    }
    from predictive.consolidate import run

    assert run(store, options={"dryRun": True}).categories.dry_run is True


def test_an_area_that_gave_way_is_not_brought_back_by_its_parent() -> None:
    """Nested small areas giving way one after the other (a real project's anchors, reduced):
    an area already folded into its parent is not re-parented when the parent gives way."""
    rows = [
        (122, "file", "app/handlers/chat.py"),
        (122, "file", "app/utils/__init__.py"),
        (122, "file", "docs/plans/WHATS_NEXT.md"),
        (122, "file", "scripts/tests/test_hybrid_search.py"),
        (131, "file", "app/handlers/chat.py"),
        (131, "file", "app/utils/__init__.py"),
        (131, "file", "docs/plans/MEMORY_TOOL_CALLING_REDESIGN.md"),
        (131, "file", "scripts/tests/test_memory_tools_phase5.py"),
        (171, "file", "scripts/tests/test_multi_level_context.py"),
        (189, "file", "app/handlers/chat.py"),
        (189, "file", "scripts/warp/entrypoint.sh"),
        (190, "file", "app/main.py"),
        (190, "file", "docs/fixes/donation_scheduler_analysis_2025_10_25.md"),
    ]
    out = derive(rows)
    every = set().union(*out.members.values()) if out.members else set()
    assert every <= {122, 131, 171, 189, 190}
    assert all(parent is None or parent in out.wanted for _, parent, _ in out.wanted.values())
