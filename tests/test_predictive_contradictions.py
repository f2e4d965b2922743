"""The local contradiction scanner: each kind of conflict, look-alikes left alone, partial
supersession linked without closing, pairs never opened twice, bad input, and the scan that
runs on ingestion (a rule file against a later commit in a real git repository)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from predictive import consolidate, ingest
from predictive.conflicts import (
    Conflict,
    Verdict,
    detect,
    pending_scan,
    record,
    scan,
    scan_and_record,
    written_at,
)
from storage import Anchor, AnchorType, Artifact, Kind, MemoryStore, NewMemory
from storage.models import ContradictionStatus, EdgeType
from storage.sources.adr import find_records
from storage.sources.records import SkipLog
from tests.project_fixtures import make_git_repo, write_files

DAY = 86400.0
T0 = 1_700_000_000.0


@pytest.fixture
def put(store: MemoryStore) -> Callable[..., int]:
    """``put(text, kind, day)`` → id of a memory written ``day`` days after T0."""

    def _put(text: str, kind: Kind = Kind.CONVENTION, day: float = 0, **kw: object) -> int:
        at = T0 + day * DAY
        return store.add(
            NewMemory(text=text, kind=kind, created_at=at, valid_from=at, **kw)  # type: ignore[arg-type]
        ).id

    return _put


def _pair(store: MemoryStore, a: int, b: int) -> list[Conflict]:
    return [c for c in scan(store, [a, b]) if c.pair == (min(a, b), max(a, b))]


# ---------------------------------------------------------------- each conflict type


@pytest.mark.parametrize(
    ("earlier", "later", "kind", "expected"),
    [
        (
            "Always squash commits before merging.",
            "Never squash commits before merging.",
            Kind.CONVENTION,
            "polarity",
        ),
        (
            "Use loguru for logging in the CLI.",
            "Don't use loguru for logging in the CLI.",
            Kind.CONVENTION,
            "polarity",
        ),
        ("request_timeout = 30", "request_timeout = 60", Kind.FACT, "value"),
        (
            "The API server listens on port 8080.",
            "The API server listens on port 9090.",
            Kind.FACT,
            "value",
        ),
        (
            "Prefer pytest over unittest for new tests.",
            "Prefer unittest over pytest for new tests.",
            Kind.CONVENTION,
            "preference",
        ),
        (
            "Use Selenium for browser automation in the scraper engines.",
            "Replace Selenium with Playwright for browser automation in the scraper engines",
            Kind.EPISODE,
            "changed",
        ),
        (
            "The keyword index scores the whole table when every word is common.",
            "keyword search: when every word is common, AND them instead of scoring the "
            "whole table",
            Kind.EPISODE,
            "changed",
        ),
    ],
)
def test_each_type_of_conflict_is_found_with_both_sides_quoted(
    store: MemoryStore,
    put: Callable[..., int],
    earlier: str,
    later: str,
    kind: Kind,
    expected: str,
) -> None:
    old = put(earlier, Kind.CONVENTION if kind is Kind.EPISODE else kind, 0)
    new = put(later, kind, 1)
    found = _pair(store, old, new)
    assert [c.type for c in found] == [expected]
    c = found[0]
    assert (c.older, c.newer) == (old, new)
    assert not c.partial
    # the reason quotes both sides (the ends of each text, where the two differ)
    assert earlier.rstrip(".")[-10:] in c.reason, c.reason
    assert later.rstrip(".")[-10:] in c.reason, c.reason


NOV_22, NOV_26 = T0, T0 + 4 * DAY
CHANGE = "Replace Selenium with Playwright for browser automation in the scraper engines"
STATE = "Use Selenium for browser automation in the scraper engines."


@pytest.mark.parametrize("note_day", [3, -1])
def test_later_and_earlier_follow_the_times_the_two_texts_were_written(
    store: MemoryStore, note_day: int
) -> None:
    """A commit of the 22nd reports the change; a note states the old way: written on the
    25th it is the later (the reason says so), on the 21st the earlier."""
    commit = store.add(
        NewMemory(CHANGE, kind=Kind.EPISODE, source="git", source_id="abc123", valid_from=NOV_22)
    ).id
    note = store.add(NewMemory(STATE, kind=Kind.CONVENTION, created_at=T0 + note_day * DAY)).id
    (c,) = _pair(store, commit, note)
    if note_day > 0:
        assert (c.older, c.newer) == (commit, note)
        assert c.reason.startswith("later: “Use Selenium"), c.reason
        assert "earlier: “Replace Selenium" in c.reason
    else:
        assert (c.older, c.newer) == (note, commit)
        assert c.reason.startswith("later: “Replace Selenium"), c.reason
        assert "earlier: “Use Selenium" in c.reason


def test_a_rule_file_read_after_a_commit_is_the_earlier_when_the_commit_changes_it(
    store: MemoryStore,
) -> None:
    """A rule file's time is when it was read, not when it was written: the side that
    reports the change is the later one."""
    commit = store.add(
        NewMemory(CHANGE, kind=Kind.EPISODE, source="git", source_id="abc123", valid_from=NOV_22)
    ).id
    rule = store.add(
        NewMemory(
            STATE, kind=Kind.CONVENTION, source="rules", source_id="CLAUDE.md:3", created_at=NOV_26
        )
    ).id
    (c,) = _pair(store, commit, rule)
    assert (c.older, c.newer) == (rule, commit)
    assert c.reason.startswith("later: “Replace Selenium")


def test_a_record_that_supersedes_another_by_number(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    old = put(
        "ADR 4: DNS definitions\nStatus: accepted\n\nDecision: one private zone per stack.",
        Kind.DECISION,
        0,
        metadata={"number": 4},
    )
    new = put(
        "ADR 15: DNS infrastructure\nStatus: accepted\n\nDecision: Route53 zones per "
        "stack. Supersedes ADR 4.",
        Kind.DECISION,
        5,
        metadata={"number": 15},
    )
    (c,) = _pair(store, old, new)
    assert (c.type, c.older, c.newer, c.partial) == ("superseded", old, new, False)
    assert "record 15 supersedes record 4" in c.reason


# ---------------------------------------------------------------- look-alikes


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Always run ruff check and ruff format before committing.",
            "Don't commit without running ruff check and ruff format first.",
        ),
        ("http_timeout = 30", "db_timeout = 60"),
        ("The API server listens on port 8080.", "PostgreSQL listens on port 5432."),
        (
            "When you edit TODO.md, lead in lines with empty checkboxes if things aren't done.",
            "When you edit TODO.md, use filled checkboxes for things that are done.",
        ),
        (
            "Prefer pytest over unittest for new tests.",
            "Use pytest fixtures instead of setUp methods.",
        ),
        (
            "Never install a package by a name this project does not own.",
            "The installer takes only a wheel or checkout the user named, never a package name "
            "from an index.",
        ),
        ("Uses `uv` for Python package management", "Quality tools: ruff, mypy, pytest"),
    ],
)
def test_look_alikes_are_not_flagged(
    store: MemoryStore, put: Callable[..., int], a: str, b: str
) -> None:
    x, y = put(a, Kind.CONVENTION, 0), put(b, Kind.CONVENTION, 1)
    assert _pair(store, x, y) == []


def test_release_series_commits_are_not_compared(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    x, y = put("release: 0.6.0", Kind.EPISODE, 0), put("release: 0.7.1", Kind.EPISODE, 1)
    assert scan(store, [x, y]) == []


# ---------------------------------------------------------------- partial supersession


def test_partial_supersession_links_without_closing(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    old = put(
        "ADR 3: Networking outline\nStatus: partly superseded\n\nDecision: one VPC per "
        "environment.\n|Staging|10.2.0.0/16|",
        Kind.DECISION,
        0,
        metadata={"number": 3},
    )
    new = put(
        "ADR 33: IP ranges\nStatus: proposed\n\nContext: This ADR in part supersedes "
        "[0003](0003-aws-networking-outline.md).\n\nDecision: |Staging|10.12.0.0/16|",
        Kind.DECISION,
        400,
        metadata={"number": 33},
    )
    opened = scan_and_record(store, [new])
    assert len(opened) == 1
    (c,) = store.contradictions.query()
    assert (c.memory_a, c.memory_b) == (old, new)
    assert c.reason is not None and c.reason.startswith("amended:")
    older = store.get(old)
    assert older.superseded_by is None and older.valid_to is None and not older.archived
    assert any(
        e.type is EdgeType.EVOLVED_INTO and e.target_id == new for e in store.graph.edges(old)
    )


# ---------------------------------------------------------------- never twice, never lineage


def test_a_pair_is_never_opened_twice_even_after_dismissal(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    a = put("Always squash commits before merging.", Kind.CONVENTION, 0)
    b = put("Never squash commits before merging.", Kind.CONVENTION, 1)
    assert len(scan_and_record(store, [a, b])) == 1
    assert scan(store, [a, b]) == []
    assert scan_and_record(store, [b]) == []
    (c,) = store.contradictions.query(ContradictionStatus.SUSPECTED)  # polarity: a weak finding
    store.contradictions.dismiss(c.id, "both fine")
    assert scan_and_record(store, [a, b]) == []
    assert len(store.contradictions.query(None)) == 1
    # recording the same conflict by hand is a no-op too
    conflict = Conflict(a, b, "polarity", "again", 0.7)
    assert record(store, [conflict, conflict]) == []


def test_a_memory_and_its_own_source_or_versions_are_not_compared(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    unit = put("Always squash commits before merging.", Kind.CONVENTION, 0)
    item = put("Never squash commits before merging.", Kind.CONVENTION, 1)
    store.graph.add(item, unit, EdgeType.DERIVED_FROM, 1.0)
    assert scan(store, [item, unit]) == []
    v1 = put(
        "Use port 8080 for the API server.",
        Kind.CONVENTION,
        0,
        source="rules",
        source_id="AGENTS.md:3",
    )
    v2 = put(
        "Use port 9090 for the API server.",
        Kind.CONVENTION,
        1,
        source="rules",
        source_id="AGENTS.md:3",
    )
    assert scan(store, [v1, v2]) == []  # two versions of one rule section
    store.graph.supersede(v1, v2)
    assert scan(store, [v2]) == []


# ---------------------------------------------------------------- bad input


def test_bad_input_is_passed_over(store: MemoryStore, put: Callable[..., int]) -> None:
    a = put("Always squash commits before merging.", Kind.CONVENTION, 0)
    b = put("Never squash commits before merging.", Kind.CONVENTION, 1)
    assert scan(store, []) == []
    assert scan(store, [987654]) == []  # a missing id
    store.archive(b, "gone")
    assert scan(store, [a, b]) == []  # an archived memory is not compared
    store.restore(b)
    blank = store.get(a)
    blank.text = "   "
    assert detect(blank, store.get(b)) is None  # an empty text has nothing to contradict
    assert record(store, [Conflict(a, 987654, "polarity", "x", 0.5)]) == []
    assert store.contradictions.query(None) == []


def test_a_judge_has_the_last_word_and_a_failing_one_leaves_it_local(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    a = put("Always squash commits before merging.", Kind.CONVENTION, 0)
    b = put("Never squash commits before merging.", Kind.CONVENTION, 1)

    def no(x: str, y: str) -> Verdict:
        return Verdict(conflict=False)

    def broken(x: str, y: str) -> Verdict:
        raise TimeoutError("endpoint down")

    def undecided(x: str, y: str) -> None:
        return None

    assert scan(store, [a, b], judge=no) == []
    assert [c.type for c in scan(store, [a, b], judge=broken)] == ["polarity"]
    assert [c.type for c in scan(store, [a, b], judge=undecided)] == ["polarity"]
    judged = scan(store, [a, b], judge=lambda x, y: Verdict(True, "LLM says so", confidence=2.0))
    assert [(c.type, c.reason, c.confidence) for c in judged] == [("judged", "LLM says so", 1.0)]


# ---------------------------------------------------------------- on every write


RULE = "# Project\n\n- Use Selenium for browser automation in the scraper tests.\n"


def test_ingestion_suspects_a_contradiction_for_a_rule_and_a_later_commit(
    tmp_path: Path, real_embedder: object
) -> None:
    """A later commit that replaces what a rule names (and did not touch the rule file): a
    change found by the local rules, so suspected (the review list), not open."""
    repo = make_git_repo(
        tmp_path,
        [
            {"message": "Add scraper tests", "files": {"CLAUDE.md": RULE, "tests/t.py": "x = 1\n"}},
            {
                "message": "Replace Selenium with Playwright for browser automation in the "
                "scraper tests",
                "files": {"tests/t.py": "x = 2\n"},
            },
        ],
    )
    with MemoryStore(tmp_path / "m.db", embedder=real_embedder) as store:  # type: ignore[arg-type]
        summary = ingest.run(store, root=repo.root, options={"sources": ["git", "rules"]})
        assert (summary.contradictions_opened, summary.contradictions_suspected) == (0, 1)
        assert store.contradictions.query() == []  # nothing open: no context shows it
        (c,) = store.contradictions.query(ContradictionStatus.SUSPECTED)
        a, b = store.get(c.memory_a), store.get(c.memory_b)
        assert {a.source, b.source} == {"git", "rules"}
        assert c.reason is not None and "Selenium" in c.reason
        # a second ingestion adds nothing new and opens nothing again
        again = ingest.run(store, root=repo.root, options={"sources": ["git", "rules"]})
        assert (again.contradictions_opened, again.contradictions_suspected) == (0, 0)
        assert len(store.contradictions.query(None)) == 1


def test_a_dry_run_ingestion_opens_nothing(tmp_path: Path, store: MemoryStore) -> None:
    repo = make_git_repo(
        tmp_path,
        [
            {"message": "Add tests", "files": {"CLAUDE.md": RULE}},
            {
                "message": "Replace Selenium with Playwright for browser automation in the "
                "scraper tests",
                "files": {"a.py": "1\n"},
            },
        ],
    )
    summary = ingest.run(
        store, root=repo.root, options={"sources": ["git", "rules"], "dryRun": True}
    )
    assert summary.contradictions_opened == 0
    assert store.contradictions.query(None) == []


def test_consolidation_scans_what_was_added_since_its_last_run(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    put("Always squash commits before merging.", Kind.CONVENTION, 0)
    put("Never squash commits before merging.", Kind.CONVENTION, 1)
    dry = consolidate.run(store, options={"dryRun": True})
    assert (dry.contradictions_opened, dry.contradictions_suspected) == (0, 1)
    assert store.contradictions.query(None) == []
    done = consolidate.run(store)
    assert (done.contradictions_opened, done.contradictions_suspected) == (0, 1)
    assert store.contradictions.query() == []  # a polarity finding is only suspected
    assert len(store.contradictions.query(ContradictionStatus.SUSPECTED)) == 1
    assert pending_scan(store)[0] == []  # nothing new since


# ---------------------------------------------------------------- decision records


NETWORKING = """# 3. Networking Outline

Date: 2017-06-30

## Status

Partly superseded

## Context

We need an IP addressing strategy.

## Decision

 * 1 VPC per environment

**These IP ranges have been superseded by [ADR #0033](0033-ip-ranges.md).**

|Environment|IP Range|
|-----------|--------|
|Staging|10.2.0.0/16|
"""

IP_RANGES = """# 33. IP ranges

Date: 2018-09-26

## Status

Pending

## Context

This ADR in part supersedes [0003](0003-aws-networking-outline.md).

## Decision

|Environment|IP Range|
|-----------|--------|
|Staging|10.12.0.0/16|
"""

USE_X = """# 5. Use X

Date: 2018-01-01

## Status

Accepted

## Context

See [the networking outline](0003-aws-networking-outline.md) for the ranges.

## Decision

Use X for the proxy.
"""


def test_a_partly_superseded_record_stays_valid_linked_and_contradicted(
    tmp_path: Path, store: MemoryStore
) -> None:
    write_files(
        tmp_path,
        {
            "docs/adr/0003-aws-networking-outline.md": NETWORKING,
            "docs/adr/0033-ip-ranges.md": IP_RANGES,
            "docs/adr/0005-use-x.md": USE_X,
        },
    )
    records = {r.path.rsplit("/", 1)[-1]: r for r in find_records(tmp_path, skips=SkipLog())}
    three, thirty_three = records["0003-aws-networking-outline.md"], records["0033-ip-ranges.md"]
    assert three.status == "partly superseded" and thirty_three.status == "proposed"
    assert three.superseded_by == () and three.amended_by == ("docs/adr/0033-ip-ranges.md",)
    assert thirty_three.amends == ("docs/adr/0003-aws-networking-outline.md",)
    assert records["0005-use-x.md"].links == ("docs/adr/0003-aws-networking-outline.md",)

    summary = ingest.run(store, root=tmp_path, options={"sources": ["adr"]})
    assert summary.sources["adr"].superseded == 0
    by_path = {m.source_id: m for m in store.list(limit=10)}
    old = by_path["docs/adr/0003-aws-networking-outline.md"]
    new = by_path["docs/adr/0033-ip-ranges.md"]
    assert old.superseded_by is None and old.valid_to is None
    assert "Partly superseded by ADR 33 (0033-ip-ranges.md)" in old.text
    # the link to another record is a relation, not a file anchor of a path that is not there
    anchors = {str(a) for m in by_path.values() for a in m.anchors}
    assert "file:0033-ip-ranges.md" not in anchors
    assert "file:0003-aws-networking-outline.md" not in anchors
    assert any(
        e.type is EdgeType.EVOLVED_INTO and e.target_id == new.id for e in store.graph.edges(old.id)
    )
    linked = by_path["docs/adr/0005-use-x.md"]
    assert any(
        e.type is EdgeType.RELATES_TO and e.target_id == old.id
        for e in store.graph.edges(linked.id)
    )
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert (c.memory_a, c.memory_b) == (old.id, new.id)
    assert c.reason is not None and "partly supersedes" in c.reason


def test_a_record_without_a_number_is_named_by_its_title_in_the_reason(
    tmp_path: Path, store: MemoryStore
) -> None:
    """The amending record has no number (file and title unnumbered): the reason names it by
    its title, never as "record None"."""
    write_files(
        tmp_path,
        {
            "docs/adr/0003-aws-networking-outline.md": NETWORKING.replace(
                "[ADR #0033](0033-ip-ranges.md)", "[IP ranges](ip-ranges.md)"
            ),
            "docs/adr/ip-ranges.md": IP_RANGES.replace("# 33. IP ranges", "# IP ranges"),
        },
    )
    ingest.run(store, root=tmp_path, options={"sources": ["adr"]})
    by_path = {m.source_id: m for m in store.list(limit=10)}
    assert by_path["docs/adr/ip-ranges.md"].metadata["number"] is None
    (c,) = store.contradictions.query(ContradictionStatus.OPEN)
    assert c.reason is not None and "None" not in c.reason
    assert c.reason.startswith("amended: record “IP ranges” partly supersedes record 3:"), c.reason


def test_record_numbers_count_within_one_folder(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    text = "ADR {n}: {t}\nStatus: accepted\n\nDecision: {d}"
    old = put(
        text.format(n=8, t="Postgres", d="Keep PostgreSQL."),
        Kind.DECISION,
        0,
        source="adr",
        source_id="infra/adr/0008-postgres.md",
        metadata={"number": 8},
    )
    new = put(
        text.format(n=13, t="Front matter", d="Use YAML front matter. Supersedes ADR 8."),
        Kind.DECISION,
        5,
        source="adr",
        source_id="docs/adr/0013-front-matter.md",
        metadata={"number": 13},
    )
    assert _pair(store, old, new) == []
    remembered = put("We now use managed databases: this supersedes ADR 8.", Kind.DECISION, 9)
    assert [c.type for c in _pair(store, old, remembered)] == ["superseded"]


def test_huge_and_odd_texts_are_read_without_trouble(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    blob = "x" * 150_000
    table = "|" + "|".join("cell" for _ in range(5000)) + "\n"
    ids = [
        put(blob, Kind.FACT, 0),
        put("Never " + blob, Kind.CONVENTION, 1),
        put(table * 5, Kind.FACT, 2),
        put("timeout = 30 " * 2000, Kind.FACT, 3),
        put("😀 ünïcödé — ‘quotes’ ≠ ascii; don’t panic", Kind.CONVENTION, 4),
    ]
    assert isinstance(scan(store, ids), list)


# ---------------------------------------------------------------- rules of issue 13, item 1
# each rule: a pair it must flag (earlier, later, expected type) and a look-alike pair it must not

RULE_PAIRS: dict[str, tuple[str, str, str, tuple[str, str]]] = {
    "one slot swapped after a verb of choice": (
        "Uses poetry for dependency management in this repository.",
        "Uses hatch for dependency management in this repository.",
        "value",
        # the same frame, but the slot follows a verb that adds (run this, and that)
        (
            "Run mypy before committing changes to this repository.",
            "Run pytest before committing changes to this repository.",
        ),
    ),
    "an object swapped, not the subject": (
        "The importer signs with the private key from the environment for every request.",
        "The importer signs with the session token from the environment for every request.",
        "value",
        (
            "The importer signs with the private key from the environment for every request.",
            "The exporter signs with the private key from the environment for every request.",
        ),
    ),
    "a modifier swapped names two things": (
        "Uses poetry for dependency management in this repository.",
        "Uses hatch for dependency management in this repository.",
        "value",
        (
            "This table lists the headers supported by the News Search API.",
            "This table lists the headers supported by the Video Search API.",
        ),
    ),
    "a number swapped is left to the value rule": (
        "The nightly build of the docs runs on three runners.",
        "The nightly build of the docs runs on 5 runners.",
        "value",
        (
            "Explorer plan: for 1000 searches, the prorated cost is $8.50.",
            "Bootstrap plan: for 1000 searches, the prorated cost is $6.67.",
        ),
    ),
    "another unit after per": (
        "The passage vectors of the index are loaded per query.",
        "The passage vectors of the index are loaded per store.",
        "value",
        (
            "The passage vectors of the index are loaded per query.",
            "The passage vectors of the index are loaded per query and cached per store.",
        ),
    ),
    "another tool for the same purpose": (
        "The CLI uses click for argument parsing and help pages.",
        "The CLI relies on typer for argument parsing and help pages of every command.",
        "value",
        (
            "The CLI uses click for argument parsing and help pages.",
            "The test runner uses argparse for argument parsing and help pages.",
        ),
    ),
    "so many per unit against all in one": (
        "The importer writes all rows of a file in one transaction.",
        "The importer writes the rows of a file 1000 rows per transaction so readers wait less.",
        "value",
        (
            "The importer writes all rows of a file in one transaction.",
            "The exporter reads 200 files per batch and sends them to the archive.",
        ),
    ),
    "a multiple in words against one in figures": (
        "Retries of a failed upload wait twice the base delay.",
        "Retries of a failed upload wait 3× the base delay.",
        "value",
        (
            "Retries of a failed upload wait twice the base delay.",
            "Retries of a failed upload wait 2× the base delay.",
        ),
    ),
    "a number word against a figure": (
        "The nightly build of the docs runs on three runners.",
        "The nightly build of the docs runs on 5 runners.",
        "value",
        (
            "The nightly build of the docs runs on three runners.",
            "The nightly build of the docs runs on 3 runners.",
        ),
    ),
    "a phrase the later text says not": (
        "Templates of the site are compiled per request.",
        "Templates of the site are compiled once at start-up (not per request).",
        "changed",
        (
            "Templates of the site are compiled once at start-up and cached.",
            "Templates of the site are compiled once at start-up (not per request).",
        ),
    ),
    "a setting on against off": (
        "Request logging in the proxy stays on.",
        "Request logging in the proxy is turned off.",
        "polarity",
        (
            "Request logging in the proxy is turned off.",
            "Request logging in the proxy depends on the log level.",
        ),
    ),
    "a closed list and a new member of it": (
        "Jobs of the queue can only be in state queued, running, done or failed.",
        "Jobs of the queue can now be cancelled (state 'cancelled': stopped by a user).",
        "changed",
        (
            "Jobs of the queue can only be in state queued, running, done or failed.",
            "Jobs of the queue that crash end in state 'failed' with their traceback.",
        ),
    ),
    "two defaults for the same thing left out": (
        "When no region is given, upload to every configured region.",
        "Use 'eu-west' as the default region when no region is given.",
        "value",
        (
            "When no region is given, upload to every configured region.",
            "When no region is given, log a warning before the upload starts.",
        ),
    ),
    "a typed field with another type": (
        "class UploadSettings:\n    timeout: int\n    bucket: str\n    region: str",
        "class UploadSettings:\n    timeout: float\n    bucket: str\n    region: str",
        "value",
        ("class Point:\n    x: float\n    y: float", "class Job:\n    x: int\n    name: str"),
    ),
    "a thing merged into another": (
        "The billing service keeps its own Redis instance for session locks.",
        "Merge the billing Redis instance into the shared cache cluster.",
        "changed",
        (
            "The shared cache cluster holds the session locks of every service.",
            "Merge the billing Redis instance into the shared cache cluster.",
        ),
    ),
    "a thing moved away from where it was": (
        "Static assets are served by the nginx tier in front of the app servers.",
        "Move static assets away from the nginx tier to a CDN bucket.",
        "changed",
        (
            "Static assets are served from the CDN bucket with long cache headers.",
            "Move static assets to the CDN bucket.",
        ),
    ),
    "a successor for what was chosen": (
        "We will use the celery-beat library to schedule the nightly jobs.",
        (
            "The nightly jobs run on apscheduler, a drop-in replacement for the unmaintained "
            "celery-beat library."
        ),
        "changed",
        (
            "We will use the celery-beat library to schedule the nightly jobs.",
            "celery-beat needs a replacement for its broken timezone handling upstream.",
        ),
    ),
    "a subject that no longer does it": (
        "A failed health check restarts the worker process.",
        "A failed health check alone no longer restarts the worker (the supervisor decides).",
        "changed",
        (
            "A failed health check restarts the worker process.",
            "The restart script alone no longer needs root.",
        ),
    ),
    "a measured choice beats the earlier one": (
        "The ranker fuses keyword and vector scores with reciprocal rank fusion (mode = rrf).",
        (
            "ranker: weighted fusion of keyword and vector scores by default — it beat rrf on "
            "the labelled questions"
        ),
        "changed",
        (
            "The ranker fuses keyword and vector scores with reciprocal rank fusion (mode = rrf).",
            "ranker: the new tokenizer beat the old one on the labelled questions",
        ),
    ),
    "a count of what a setting counts": (
        "open_sessions(query, top_sessions=3): the best sessions by summary, then their messages.",
        "open_sessions reads 5 sessions by default (best on the labelled questions).",
        "value",
        (
            (
                "open_sessions(query, top_sessions=3): the best sessions by summary, then their "
                "messages."
            ),
            "The importer reads 5 sessions per batch from the archive.",
        ),
    ),
    "a field retyped beside its old type": (
        "timeout: int  # seconds, validated as a whole number",
        "timeout: float  # float instead of int for sub-second waits",
        "value",
        ("timeout: int  # seconds", "retries: int  # attempts before giving up"),
    ),
    "a consequence after so keeps its own polarity": (
        "Every API response says Cache-Control: no-store, so the CDN keeps no copy.",
        "Let the CDN cache public API responses instead of sending no-store on every response.",
        "changed",
        (
            "Every API response says Cache-Control: no-store, so the CDN keeps no copy.",
            "The CDN keeps no copy of private API responses (Cache-Control: no-store).",
        ),
    ),
    "None is a value, not a negation": (
        "load_config() prints the parsed settings and returns None.",
        "Remove the debug print of the parsed settings from load_config().",
        "changed",
        (
            "load_config() prints the parsed settings and returns None.",
            "Remove the retry loop from save_config().",
        ),
    ),
    "a number with its thousands set off by a comma and a space": (
        "The free plan allows 2, 000 searches a month.",
        "The free plan allows 5, 000 searches a month.",
        "value",
        (
            "The free plan allows 2, 000 searches a month.",
            "The free plan allows 2,000 searches a month.",
        ),
    ),
    "a key one text gives several values is no setting of it": (
        "The build machine has 4 workers for the test suite.",
        "The build machine has 8 workers for the test suite.",
        "value",
        (
            "The build machine has 2 workers for unit tests and 8 workers for the test suite.",
            "The build machine has 4 workers for the test suite.",
        ),
    ),
    "over is a choice only after a verb of choice or in a slogan": (
        "Prefer composition over inheritance for new widgets.",
        "Prefer inheritance over composition for new widgets.",
        "preference",
        (
            "Evidence recall: the mean over questions of each category.",
            "Recall by category: the number of questions of each category.",
        ),
    ),
    "enable or disable at once is no negation": (
        "The response cache of an engine is enabled in its settings.",
        "The response cache of an engine is disabled in its settings.",
        "polarity",
        (
            "You can enable or disable the response cache of any engine in its settings.",
            "The response cache of any engine is kept in its settings.",
        ),
    ),
    "a word that bounds a number names no setting": (
        "The importer keeps 20 files open at once.",
        "The importer keeps 50 files open at once.",
        "value",
        (
            "The free plan allows up to 2,000 searches a month.",
            "The pro plan allows up to 20,000 requests a month.",
        ),
    ),
    "a negation is against what it says no to, two words of it": (
        "Never commit the API key to the repository.",
        "Commit the API key to the repository for the CI job.",
        "polarity",
        (
            "The local engine (no API key required) answers offline queries.",
            "The local engine answers offline queries with a cached key.",
        ),
    ),
    "left out against taken in": (
        "Vendored files and generated files are ingested like any other source file.",
        (
            "Vendored files and generated files are left out by default (--include-vendored "
            "keeps them)."
        ),
        "polarity",
        (
            "Vendored files are left out by default.",
            "Generated files are ingested like any other source file.",
        ),
    ),
}


# ---------------------------------------------------------------- records that act on another

RECORD_PAIRS: dict[str, tuple[str, str, str, tuple[str, str]]] = {
    "a record that revisits an earlier one": (
        (
            "ADR 4: Render pages on the server\nStatus: Accepted\n\nDecision: We render every "
            "page on the server with Jinja templates."
        ),
        (
            "ADR 9: Client-side rendering for the dashboard\nStatus: Accepted\n\nContext: ADR 4 "
            "chose server rendering for every page. We are revisiting that decision for the "
            "dashboard, whose charts update live.\n\nDecision: Render the dashboard in the "
            "browser with Preact."
        ),
        "changed",
        (
            (
                "ADR 4: Render pages on the server\nStatus: Accepted\n\nDecision: We render "
                "every page on the server with Jinja templates."
            ),
            (
                "ADR 9: Charts on the dashboard\nStatus: Accepted\n\nContext: ADR 4 chose "
                "server rendering for every page; the dashboard follows it.\n\nDecision: Render "
                "the charts on the server as SVG."
            ),
        ),
    ),
    "a record titled with an action": (
        "The search service ships its logs through a local Elasticsearch proxy on each host.",
        (
            "ADR 12: Retire the Elasticsearch proxy\nStatus: Accepted\n\nDecision: Services "
            "send their logs to the managed Elasticsearch endpoint directly."
        ),
        "changed",
        (
            "The search service writes its logs to a local file on each host.",
            (
                "ADR 12: Retire the Elasticsearch proxy\nStatus: Accepted\n\nDecision: Services "
                "send their logs to the managed Elasticsearch endpoint directly."
            ),
        ),
    ),
}
"""Decision records (kind decision when they start "ADR N:") against what they change."""


def _kind(text: str) -> Kind:
    """A decision record ("ADR N: …") is a decision; every other rule text a fact."""
    return Kind.DECISION if text.startswith("ADR ") else Kind.FACT


@pytest.mark.parametrize("rule", [*RULE_PAIRS, *RECORD_PAIRS])
def test_each_new_rule_fires_and_leaves_its_look_alike(
    store: MemoryStore, put: Callable[..., int], rule: str
) -> None:
    earlier, later, expected, (like_a, like_b) = {**RULE_PAIRS, **RECORD_PAIRS}[rule]
    old, new = put(earlier, _kind(earlier), 0), put(later, _kind(later), 1)
    found = _pair(store, old, new)
    assert [c.type for c in found] == [expected], rule
    assert (found[0].older, found[0].newer) == (old, new)
    x, y = put(like_a, _kind(like_a), 2), put(like_b, _kind(like_b), 3)
    assert _pair(store, x, y) == [], rule


def test_an_earlier_record_cannot_revisit_a_later_one(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    later = put(
        "ADR 9: Client-side rendering\nStatus: Accepted\n\nDecision: Render in the browser.",
        Kind.DECISION,
        0,
    )
    earlier = put(
        "ADR 4: Server rendering\nStatus: Accepted\n\nContext: We may revisit ADR 9 one day."
        "\n\nDecision: Render on the server.",
        Kind.DECISION,
        1,
    )
    assert detect(store.get(earlier), store.get(later)) is None
    assert _pair(store, earlier, later) == []


def test_a_decision_records_time_counts_only_when_the_record_is_dated(
    tmp_path: Path, store: MemoryStore
) -> None:
    body = "\n\n## Status\n\nAccepted\n\n## Decision\n\nUse Selenium for the scraper.\n"
    write_files(
        tmp_path,
        {
            "docs/adr/0001-dated.md": "# 1. Dated\n\nDate: 2023-11-14" + body,
            "docs/adr/0002-undated.md": "# 2. Undated" + body,
        },
    )
    ingest.run(store, root=tmp_path, options={"sources": ["adr"]})
    by_path = {m.source_id: m for m in store.list(limit=10)}
    dated, undated = by_path["docs/adr/0001-dated.md"], by_path["docs/adr/0002-undated.md"]
    assert written_at(dated) == dated.valid_from
    assert time.gmtime(dated.valid_from)[:3] == (2023, 11, 14)
    assert written_at(undated) is None  # read now: when it was written is unknown


# ---------------------------------------------------------------- issue 19: strong evidence only


def _rule(put: Callable[..., int], text: str, path: str, line: int = 1, day: float = 0) -> int:
    """A section of the rule file ``path``, as rule ingestion stores it."""
    return put(
        text,
        Kind.CONVENTION,
        day,
        source="rules",
        source_id=f"{path}:{line}",
        artifacts=[Artifact("file", path)],
        metadata={"file": path, "line": line},
    )


def _commit(put: Callable[..., int], text: str, files: list[str], day: float = 1) -> int:
    """A commit that changed ``files``, as git ingestion stores it."""
    sha = f"{abs(hash(text)):040x}"[:40]
    return put(
        text,
        Kind.EPISODE,
        day,
        source="git",
        source_id=sha,
        artifacts=[Artifact("commit", sha)],
        anchors=[Anchor(AnchorType.FILE, f) for f in files],
        metadata={"sha": sha, "files": files},
    )


def _statuses(store: MemoryStore) -> dict[tuple[int, int], ContradictionStatus]:
    return {(c.memory_a, c.memory_b): c.status for c in store.contradictions.query(None)}


def test_a_weak_local_finding_is_recorded_suspected_and_never_open(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    a = put("Always squash commits before merging.", Kind.CONVENTION, 0)
    b = put("Never squash commits before merging.", Kind.CONVENTION, 1)
    (cid,) = scan_and_record(store, [b])
    # what the context engine asks for the memories of a file: nothing
    assert store.contradictions.query(ContradictionStatus.OPEN, memory_ids=[a, b]) == []
    (c,) = store.contradictions.query(ContradictionStatus.SUSPECTED)
    assert c.id == cid and c.reason is not None and c.reason.startswith("polarity:")
    assert not any(e.type is EdgeType.CONTRADICTS for e in store.graph.edges(a, direction="both"))


@pytest.mark.parametrize(
    ("type_", "status"),
    [
        ("value", ContradictionStatus.SUSPECTED),
        ("preference", ContradictionStatus.SUSPECTED),
        ("changed", ContradictionStatus.SUSPECTED),
        ("polarity", ContradictionStatus.SUSPECTED),
        ("superseded", ContradictionStatus.OPEN),
        ("amended", ContradictionStatus.OPEN),
        ("judged", ContradictionStatus.OPEN),
    ],
)
def test_record_opens_only_strong_evidence(
    store: MemoryStore, put: Callable[..., int], type_: str, status: ContradictionStatus
) -> None:
    a, b = put("one side", Kind.FACT, 0), put("the other side", Kind.FACT, 1)
    (cid,) = record(store, [Conflict(a, b, type_, "why", 0.7)])
    assert store.contradictions.get(cid).status is status
    edges = [e for e in store.graph.edges(a, direction="both") if e.type is EdgeType.CONTRADICTS]
    assert bool(edges) is (status is ContradictionStatus.OPEN)


def test_a_record_superseding_another_and_a_judge_open_a_contradiction(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    old = put(
        "ADR 4: DNS definitions\nStatus: accepted\n\nDecision: one private zone per stack.",
        Kind.DECISION,
        0,
        metadata={"number": 4},
    )
    new = put(
        "ADR 15: DNS infrastructure\nStatus: accepted\n\nDecision: Route53 zones per "
        "stack. Supersedes ADR 4.",
        Kind.DECISION,
        5,
        metadata={"number": 15},
    )
    (cid,) = scan_and_record(store, [new])
    (c,) = store.contradictions.query(ContradictionStatus.OPEN, memory_ids=[old])
    assert c.id == cid and c.reason is not None and c.reason.startswith("superseded:")
    # a judge's verdict is strong evidence too, even for what the local rules only suspect
    a = put("Always squash commits before merging.", Kind.CONVENTION, 0)
    b = put("Never squash commits before merging.", Kind.CONVENTION, 1)
    (jid,) = scan_and_record(store, [b], judge=lambda x, y: Verdict(True, "they disagree"))
    assert store.contradictions.get(jid).status is ContradictionStatus.OPEN
    assert _statuses(store)[(a, b)] is ContradictionStatus.OPEN


def test_a_fact_key_with_two_values_opens_a_contradiction(store: MemoryStore) -> None:
    a = store.add(NewMemory(text="The db port is 5432", fact_key="db.port", fact_value="5432"))
    b = store.add(NewMemory(text="The db port is 6543", fact_key="db.port", fact_value="6543"))
    out = consolidate.run(store)
    assert (out.contradictions_opened, out.contradictions_suspected) == (1, 0)
    (c,) = store.contradictions.query(ContradictionStatus.OPEN, memory_ids=[a.id])
    assert (c.memory_a, c.memory_b) == (a.id, b.id) and c.reason == "different values for db.port"


def test_two_sections_of_one_file_never_contradict(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    # the same two texts from two files: suspected (so the rule would fire)
    x = _rule(put, "The API server listens on port 8080.", "AGENTS.md", 3)
    y = _rule(put, "The API server listens on port 9090.", "CLAUDE.md", 3)
    assert [c.type for c in _pair(store, x, y)] == ["value"]
    # … from two sections of one file: never recorded, not even suspected
    a = _rule(put, "The admin server listens on port 7070.", "CONTRIBUTING.md", 10)
    b = _rule(put, "The admin server listens on port 7171.", "CONTRIBUTING.md", 40)
    assert _pair(store, a, b) == []
    assert scan_and_record(store, [a, b]) != []  # x and y are recorded …
    assert (a, b) not in _statuses(store)  # … a and b are not


def test_a_commit_never_contradicts_the_rule_file_or_record_it_changed(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    rule = _rule(put, "The API server listens on port 8080.", "AGENTS.md", 3)
    elsewhere = _commit(put, "The API server listens on port 9090.", ["server.py"], 1)
    assert [c.type for c in _pair(store, rule, elsewhere)] == ["value"]  # the control
    touched = _commit(put, "The API server listens on port 9091.", ["server.py", "AGENTS.md"], 2)
    assert _pair(store, rule, touched) == []
    # the project may sit below the git root: the commit's path is longer
    below = _commit(put, "The API server listens on port 9092.", ["svc/AGENTS.md"], 3)
    assert _pair(store, rule, below) == []
    record_id = put(
        "ADR 7: Admin port\nStatus: accepted\n\nDecision: The admin console listens on port 7070.",
        Kind.DECISION,
        0,
        source="adr",
        source_id="docs/adr/0007-admin-port.md",
        artifacts=[Artifact("adr", "docs/adr/0007-admin-port.md")],
        metadata={"number": 7},
    )
    added = _commit(
        put, "The admin console listens on port 7171.", ["docs/adr/0007-admin-port.md"], 4
    )
    assert _pair(store, record_id, added) == []


def test_a_commit_and_a_rule_never_conflict_by_polarity_or_change_wording_alone(
    store: MemoryStore, put: Callable[..., int]
) -> None:
    never = _rule(put, "Never run pytest directly.", "AGENTS.md", 5)
    hooks = _rule(put, "Never skip pre-commit hooks before commits.", "AGENTS.md", 9)
    ci = _commit(put, "Run the coverage suite with pytest-cov enabled.", [".github/ci.yml"], 1)
    skip = _commit(put, "Skip pre-commit hooks before commits on test files.", ["hooks.yml"], 2)
    assert _pair(store, never, ci) == [] and _pair(store, hooks, skip) == []
    # the same wording between two rule files is still suspected: the detector fires
    other = _rule(put, "Skip pre-commit hooks before commits on the test files.", "CLAUDE.md")
    assert [c.type for c in _pair(store, hooks, other)] == ["polarity"]
    # a commit that names what replaces something the rule names is still a candidate
    selenium = _rule(put, "Use Selenium for browser automation in the scraper tests.", "CLAUDE.md")
    swap = _commit(
        put, "Replace Selenium with Playwright for browser automation in the scraper tests", [], 3
    )
    assert [c.type for c in _pair(store, selenium, swap)] == ["changed"]
    scan_and_record(store, [selenium, swap])
    assert _statuses(store)[(selenium, swap)] is ContradictionStatus.SUSPECTED


def test_a_suspected_contradiction_reaches_a_context_only_once_confirmed(
    store: MemoryStore,
) -> None:
    from predictive.engine import ContextEngine, ContextRequest

    path = "src/payments/amounts.py"
    on_file = [Anchor.parse(f"file:{path}")]
    a = store.add(NewMemory("Amounts are stored in cents", kind=Kind.DECISION, anchors=on_file))
    b = store.add(
        NewMemory("Amounts are stored as decimal dollars", kind=Kind.DECISION, anchors=on_file)
    )
    cid = store.contradictions.add(a.id, b.id, reason="value: cents vs dollars", status="suspected")

    def critical() -> set[str]:
        result = ContextEngine(store).assemble(ContextRequest(path=path, text="x = 1\n"))
        return {i.key for i in result.items if i.tier.value == "critical"}

    assert f"c{cid}" not in critical()
    store.contradictions.confirm(cid)
    assert f"c{cid}" in critical()
