"""The decision-record reader: every real sample, synthetic Nygard and MADR files, bad input."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from project_fixtures import (
    MADR_RECORD,
    NYGARD_NEW,
    NYGARD_OLD,
    make_adr_records,
    write_files,
)

from storage.sources.adr import (
    DEFAULT_DIRS,
    canonical_status,
    find_records,
    parse_date,
    parse_record,
    status_note,
)
from storage.sources.records import GENERATED_MARKER, MAX_FILE_BYTES, DecisionRecord, SkipLog
from tests.conftest import TEST_DATA

SAMPLES = TEST_DATA / "adr"
FOLDERS = ("madr", "cisagov-manage.get.gov", "alphagov-govuk-aws")
MADR = "madr/"
GOV = "cisagov-manage.get.gov/"
UK = "alphagov-govuk-aws/"


def day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def read(root: Path, **kw: object) -> tuple[dict[str, DecisionRecord], SkipLog]:
    skips = SkipLog()
    records = find_records(root, skips=skips, **kw)  # type: ignore[arg-type]
    return {r.path: r for r in records}, skips


@pytest.fixture(scope="module")
def samples() -> tuple[dict[str, DecisionRecord], SkipLog]:
    return read(SAMPLES, dirs=FOLDERS)


# --- the real samples ----------------------------------------------------------------------


def test_every_numbered_sample_is_a_record_and_the_rest_are_skipped(
    samples: tuple[dict[str, DecisionRecord], SkipLog],
) -> None:
    records, skips = samples
    for folder in FOLDERS:
        markdown = sorted(p.name for p in (SAMPLES / folder).glob("*.md"))
        numbered = [n for n in markdown if re.match(r"^\d{4}-", n)]
        got = sorted(p.split("/", 1)[1] for p in records if p.startswith(folder + "/"))
        assert got == numbered, folder
    assert Counter(p.split("/")[0] for p in records) == {
        "madr": 19,
        "cisagov-manage.get.gov": 32,
        "alphagov-govuk-aws": 38,
    }
    assert skips.counts == {("adr", "template"): 1, ("adr", "not a decision record"): 2}
    assert {(w, r) for _, w, r in skips.examples} == {
        ("madr/adr-template.md", "template"),
        ("madr/index.md", "not a decision record"),
        ("cisagov-manage.get.gov/_LICENSE_LICENSE.md", "not a decision record"),
    }
    for r in records.values():
        assert r.title and r.number is not None and r.text
        assert r.decision or r.context, r.path
        expected = "madr" if r.path.startswith(MADR) else "nygard"
        assert r.format == expected, r.path
        assert r.number == int(r.path.split("/")[1][:4])


def test_real_supersession_pairs_are_found_and_symmetric(
    samples: tuple[dict[str, DecisionRecord], SkipLog],
) -> None:
    records, _ = samples
    pairs = {(old, new) for new, r in records.items() for old in r.supersedes}
    assert pairs == {
        # "Superseded by [20. User models revisited, plus WHOIS](./0020-…)" in the status
        (f"{GOV}0012-user-models.md", f"{GOV}0020-user-models-revisited-plus-whois.md"),
        # "Superseded by [DNS Infrastructure](0015-dns-infrastructure.md)" in the status
        (
            f"{UK}0004-dns-definitions-for-hosts-and-services.md",
            f"{UK}0015-dns-infrastructure.md",
        ),
    }
    for old, new in pairs:
        assert records[old].superseded_by == (new,)
    # "Partly superseded" + "in part supersedes" links, and "Amended by" / "Amends": the
    # older record is amended (linked), not superseded (closed)
    amended = {(old, new) for new, r in records.items() for old in r.amends}
    assert amended == {
        (f"{UK}0003-aws-networking-outline.md", f"{UK}0033-ip-ranges.md"),
        (f"{UK}0010-terraform-directory-structure.md", f"{UK}0017-terraform-data-structure.md"),
    }
    for old, new in amended:
        assert records[old].amended_by == (new,) and records[old].superseded_by == ()
    # other links between records are relations (0032 refers to ADR 23, MADR 8 and 13 to
    # each other), never supersession
    assert records[f"{GOV}0032-reintroduce-epp-connection-pool.md"].links == (
        f"{GOV}0023-use-geventconnpool.md",
    )
    # 0020 never mentions 0012: the link is made from 0012's side
    assert "0012" not in records[f"{GOV}0020-user-models-revisited-plus-whois.md"].text
    assert records[f"{GOV}0012-user-models.md"].status == "superseded"
    assert records[f"{UK}0004-dns-definitions-for-hosts-and-services.md"].status == "superseded"
    assert records[f"{UK}0003-aws-networking-outline.md"].status == "partly superseded"
    # "Amended by" / "Amends" is not supersession
    assert records[f"{UK}0010-terraform-directory-structure.md"].superseded_by == ()
    assert records[f"{UK}0010-terraform-directory-structure.md"].status == "accepted"


def test_real_statuses_dates_and_titles(
    samples: tuple[dict[str, DecisionRecord], SkipLog],
) -> None:
    records, _ = samples

    def statuses(prefix: str) -> Counter[str | None]:
        return Counter(r.status for p, r in records.items() if p.startswith(prefix))

    assert statuses(UK) == {
        "accepted": 29,  # "Accepted" and one "Approved"
        "proposed": 7,  # six "Pending", one "Proposed"
        "superseded": 1,
        "partly superseded": 1,
    }
    assert statuses(GOV) == {"accepted": 26, "proposed": 5, "superseded": 1}
    assert statuses(MADR) == {None: 18, "on hold": 1}

    first = records[f"{GOV}0001-record-architecture-decisions.md"]
    assert first.title == "Record architecture decisions" and first.number == 1
    assert first.date == day("2022-08-01") and first.status == "accepted"
    assert first.context == "We need to record the architectural decisions made on this project."
    assert first.consequences == "See Michael Nygard's article, linked above."
    # "# n. Django Templates": the number comes from the file name; "Approved" → accepted
    templates = records[f"{GOV}0010-django-templates.md"]
    assert (templates.number, templates.title, templates.status) == (
        10,
        "Django Templates",
        "accepted",
    )
    # "Date: 2024-14-02" can only be year-day-month; "(back dated)" is ignored
    assert records[f"{GOV}0025-caching.md"].date == day("2024-02-14")
    assert records[f"{GOV}0023-use-geventconnpool.md"].date == day("2023-10-13")
    assert records[f"{GOV}0027-ajax-for-dynamic-content.md"].date == day("2024-05-22")
    # "# Status" at level one
    assert records[f"{GOV}0028-portfolio-session-management.md"].status == "accepted"
    # "In Review" / "Under Review" → proposed
    assert records[f"{GOV}0032-reintroduce-epp-connection-pool.md"].status == "proposed"
    # the heading says "# 3. Networking Outline" but the file is number 33
    ip = records[f"{UK}0033-ip-ranges.md"]
    assert (ip.number, ip.title, ip.date) == (33, "Networking Outline", day("2018-09-26"))
    # "## Proposal" stands for the decision
    policy = records[f"{UK}0039-non-govuk-domain-policy.md"]
    assert policy.decision.startswith("Any web page that lives on a Non-GOV.UK domain")
    assert all(r.date is None for p, r in records.items() if p.startswith(MADR))
    assert all(r.date is not None for p, r in records.items() if not p.startswith(MADR))


def test_real_options_and_chosen_outcomes(
    samples: tuple[dict[str, DecisionRecord], SkipLog],
) -> None:
    records, _ = samples
    license_ = records[f"{MADR}0001-use-CC0-or-MIT-as-license.md"]
    assert license_.title == "Dual License the Work"
    assert license_.options == (
        "CC0",
        "BSD3",
        "MIT",
        "Dual license with MIT and CC0",
        "No license",
        "Other open source licenses",
    )
    assert license_.chosen == "Dual license with MIT and CC0"
    assert (
        license_.rationale == "this lets users choose whether CC0 or MIT fits better on their work."
    )
    madr = records[f"{MADR}0000-use-markdown-architectural-decision-records.md"]
    assert madr.chosen == "MADR 4.0.0"
    assert madr.rationale is not None
    assert madr.rationale.startswith("* Implicit assumptions should be made explicit.")
    assert madr.rationale.endswith("* The MADR project is vivid.")
    assert madr.options[0] == "MADR 4.0.0 – The Markdown Architectural Decision Records"
    # a quoted name holding ", because", and quotes inside quotes
    assert records[f"{MADR}0014-allow-neutral-arguments.md"].chosen == "Neutral, because …"
    assert records[f"{MADR}0011-use-asterisk-as-list-marker.md"].chosen == "Use an asterisk"
    assert records[f"{MADR}0017-use-same-format-for-outcomes-and-options.md"].chosen == (
        'Section "Consequences" listing positive and negative consequences as '
        '"Good, because" and "Bad, because"'
    )
    # "### Consequences" under "## Decision Outcome" is not part of the decision
    toc = records[f"{MADR}0004-write-own-toc-tool.md"]
    assert toc.consequences.startswith("* Good, because `adr-log` is installable")
    assert "Bad, because another tool" not in toc.decision
    # "## Decision Drivers" is appended to the context
    drivers = records[f"{MADR}0006-use-names-as-identifier.md"]
    assert drivers.context.endswith(
        "Decision drivers:\n* Easy to read\n* Easy to write\n* Avoid copy and paste errors"
    )
    # Nygard variants: "**[SELECTED] Option 1:**", "(#2) …", "### 1. …" headings
    portfolio = records[f"{GOV}0028-portfolio-session-management.md"]
    assert portfolio.chosen == "Submit a form that passes value of selected session portfolio"
    dns = records[f"{GOV}0029-services-in-registrar-for-dns-hosting.md"]
    assert dns.options == (
        "Internal Django app",
        "Use separate services inside existing registrar app",
        "Microservice",
    )
    assert dns.chosen == "Use separate services inside existing registrar app"
    assert records[f"{GOV}0030-django-state-control.md"].options == ("django-fsm-2", "viewflow FSM")
    caching = records[f"{GOV}0025-caching.md"]
    assert caching.options[0] == "Cache static resources using Whitenoise"
    assert records[f"{GOV}0027-ajax-for-dynamic-content.md"].chosen == (
        "Extend Vanilla JavaScript with AJAX (Selected Option)"
    )
    assert all(r.rationale is None for p, r in records.items() if not p.startswith(MADR))


def test_samples_are_found_through_the_default_folders(tmp_path: Path) -> None:
    """Copied into a project the usual way, the records come out the same."""
    for folder, target in zip(
        FOLDERS, ("docs/decisions", "docs/architecture/decisions", "doc/adr")
    ):
        for src in (SAMPLES / folder).glob("*.md"):
            write_files(tmp_path, {f"{target}/{src.name}": src.read_bytes()})
    records, skips = read(tmp_path)
    assert len(records) == 19 + 32 + 38 and skips.total == 3
    old = records["docs/architecture/decisions/0012-user-models.md"]
    assert old.superseded_by == (
        "docs/architecture/decisions/0020-user-models-revisited-plus-whois.md",
    )


# --- synthetic records ----------------------------------------------------------------------


def test_synthetic_project_records(tmp_path: Path) -> None:
    titles = make_adr_records(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    records, skips = read(tmp_path)
    assert {p: r.title for p, r in records.items()} == titles
    assert skips.counts == {("adr", "template"): 1, ("adr", "not a decision record"): 1}
    old, new = records["docs/adr/0001-use-postgresql.md"], records["docs/adr/0002-use-sqlite.md"]
    assert (old.status, old.superseded_by, old.supersedes) == (
        "superseded",
        ("docs/adr/0002-use-sqlite.md",),
        (),
    )
    assert (new.status, new.supersedes) == ("accepted", ("docs/adr/0001-use-postgresql.md",))
    assert new.decision == "We will use SQLite through apsw."
    assert new.date == day("2023-06-01") and new.text == NYGARD_NEW
    madr = records["docs/adr/0003-local-embeddings.md"]
    assert madr.format == "madr" and madr.status == "accepted"
    assert madr.date == day("2024-03-05") and madr.deciders == ("Ada", "Grace")
    assert madr.options == ("A local ONNX model", "A hosted embedding API")
    assert madr.chosen == "A local ONNX model"
    assert madr.rationale == "code never leaves the machine."
    assert (
        madr.consequences
        == "* Good, because it works offline.\n* Bad, because the package is larger."
    )
    assert madr.context.startswith("Search needs embeddings without sending code")
    assert "Decision drivers:\n* Privacy\n* Offline use" in madr.context
    assert before == {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("status_line", "how"),
    [
        ("Superseded by [2. Use SQLite for storage](0002-use-sqlite.md)", "link"),
        ("Superseded by ADR-0002", "number"),
        ("Superseded by #2", "hash number"),
        ("Superseded by 2. Use SQLite for storage", "numbered title"),
        ("Superseded by Use SQLite for storage", "title"),
        (
            "Superseded by [the new one](https://example.com/repo/blob/main/docs/adr/0002-use-sqlite.md)",
            "URL file name",
        ),
    ],
)
def test_one_sided_references_resolve_and_become_symmetric(
    tmp_path: Path, status_line: str, how: str
) -> None:
    old = NYGARD_OLD.replace(
        "Superseded by [2. Use SQLite for storage](0002-use-sqlite.md)", status_line
    )
    new = NYGARD_NEW.replace(
        "Supersedes [1. Use PostgreSQL for storage](0001-use-postgresql.md)\n", ""
    )
    write_files(
        tmp_path, {"docs/adr/0001-use-postgresql.md": old, "docs/adr/0002-use-sqlite.md": new}
    )
    records, _ = read(tmp_path)
    assert records["docs/adr/0001-use-postgresql.md"].superseded_by == (
        "docs/adr/0002-use-sqlite.md",
    ), how
    assert records["docs/adr/0002-use-sqlite.md"].supersedes == (
        "docs/adr/0001-use-postgresql.md",
    ), how


def test_supersedes_on_the_newer_side_only_marks_the_older_one(tmp_path: Path) -> None:
    old = NYGARD_OLD.replace(
        "Superseded by [2. Use SQLite for storage](0002-use-sqlite.md)", "Accepted"
    )
    write_files(
        tmp_path,
        {"docs/adr/0001-use-postgresql.md": old, "docs/adr/0002-use-sqlite.md": NYGARD_NEW},
    )
    records, _ = read(tmp_path)
    older = records["docs/adr/0001-use-postgresql.md"]
    assert older.superseded_by == ("docs/adr/0002-use-sqlite.md",)
    assert older.status == "accepted"  # the status is kept as written
    assert records["docs/adr/0002-use-sqlite.md"].supersedes == ("docs/adr/0001-use-postgresql.md",)


def test_unresolvable_and_self_references_are_dropped(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "adr/0001-a.md": "# 1. A\n\n## Status\n\nSuperseded by ADR-0099\n\n## Decision\n\nA.\n",
            "adr/0002-b.md": (
                "# 2. B\n\n## Status\n\nSupersedes [itself](0002-b.md)\n\n## Decision\n\n"
                "We keep B. This superseded by [nothing](missing.md) sentence is noise.\n"
            ),
        },
    )
    records, _ = read(tmp_path)
    assert records["adr/0001-a.md"].status == "superseded"
    assert all(not r.supersedes and not r.superseded_by for r in records.values())


def test_madr_2_bullets_and_positive_negative_consequences(tmp_path: Path) -> None:
    text = (
        "# Use Plain JUnit5 for advanced test assertions\n\n"
        "* Status: superseded by [ADR-0005](0005-use-hamcrest.md)\n"
        "* Deciders: Oliver Kopp and Jane Doe\n"
        "* Date: 2018-09-14\n\n"
        "Technical Story: <https://example.org/issue/1>\n\n"
        "## Context and Problem Statement\n\nHow to write readable test assertions?\n\n"
        "## Considered Options\n\n* Plain JUnit5\n* Hamcrest\n* AssertJ\n\n"
        "## Decision Outcome\n\n"
        'Chosen option: "Plain JUnit5", because it is a standard framework.\n\n'
        "### Positive Consequences\n\n* Fewer dependencies\n\n"
        "### Negative Consequences\n\n* Assertions are wordier\n\n"
        "## Pros and Cons of the Options\n\n### Plain JUnit5\n\n* Good, because standard\n"
    )
    write_files(
        tmp_path,
        {
            "docs/adr/0004-use-plain-junit5.md": text,
            "docs/adr/0005-use-hamcrest.md": (
                "# Use Hamcrest\n\n* Status: accepted\n\n## Context and Problem Statement\n\n"
                "Readability matters.\n\n## Decision Outcome\n\nChosen option: Hamcrest, because "
                "its matchers read well\n"
            ),
        },
    )
    records, _ = read(tmp_path)
    r = records["docs/adr/0004-use-plain-junit5.md"]
    assert (r.format, r.number, r.status) == ("madr", 4, "superseded")
    assert r.deciders == ("Oliver Kopp", "Jane Doe")
    assert r.date == day("2018-09-14")
    assert r.options == ("Plain JUnit5", "Hamcrest", "AssertJ")
    assert (r.chosen, r.rationale) == ("Plain JUnit5", "it is a standard framework.")
    assert r.consequences == (
        "* Fewer dependencies\n\nNegative Consequences:\n* Assertions are wordier"
    )
    assert "Fewer dependencies" not in r.decision and "Good, because standard" not in r.decision
    assert r.superseded_by == ("docs/adr/0005-use-hamcrest.md",)
    hamcrest = records["docs/adr/0005-use-hamcrest.md"]
    assert hamcrest.supersedes == ("docs/adr/0004-use-plain-junit5.md",)
    assert (hamcrest.chosen, hamcrest.rationale) == ("Hamcrest", "its matchers read well")


def test_madr_front_matter_variants_and_pros_and_cons_as_options() -> None:
    text = (
        "---\n"
        'status: "superseded by [ADR-0007](0007-new.md)"\n'
        "date: 2023-02-01\n"
        "decision-makers:\n  - Ada\n  - Grace\n"
        "consulted: Linus\n"
        "---\n"
        "# Cache the index in memory\n\n"
        "## Context and Problem Statement\n\nStartup is slow.\n\n"
        "## Decision Outcome\n\nChosen option: `lazy loading`.\n\n"
        "## Pros and Cons of the Options\n\n### Lazy loading\n\n* Good\n\n### Eager loading\n\n"
        "* Bad\n"
    )
    r = parse_record("docs/decisions/0006-cache.md", text)
    assert r is not None
    assert (r.format, r.status, r.date) == ("madr", "superseded", day("2023-02-01"))
    assert r.deciders == ("Ada", "Grace")
    assert r.superseded_by == ("docs/decisions/0007-new.md",)  # a relative link resolves alone
    assert r.options == ("Lazy loading", "Eager loading")
    assert (r.chosen, r.rationale) == ("lazy loading", None)


def test_parse_record_rejects_templates_and_non_records() -> None:
    madr_template = (SAMPLES / "madr" / "adr-template.md").read_text(encoding="utf-8")
    assert parse_record("docs/adr/adr-template.md", madr_template) is None
    assert parse_record("docs/adr/0000-x.md", madr_template) is None  # placeholder title
    assert parse_record("docs/adr/template.md", "# 1. Real\n\n## Decision\n\nX.\n") is None
    nygard_template = "# NUMBER. TITLE\n\nDate: DATE\n\n## Status\n\nSTATUS\n"
    assert parse_record("docs/adr/0001-x.md", nygard_template) is None
    assert parse_record("docs/adr/README.md", NYGARD_NEW) is None
    assert parse_record("docs/adr/notes.md", "# Meeting notes\n\nWe talked.\n") is None
    unknown = parse_record("docs/adr/0009-options.md", "# Choices\n\n## Options\n\n- a\n- b\n")
    assert unknown is not None and unknown.format == "unknown" and unknown.options == ("a", "b")
    # a numbered record whose name mentions templates is a record
    named = parse_record("docs/adr/0010-django-templates.md", NYGARD_NEW)
    assert named is not None and named.number == 10 and named.title == "Use SQLite for storage"


def test_headings_in_code_blocks_and_html_comments_are_ignored() -> None:
    text = (
        "# 4. Keep config in TOML\n\nDate: 2022-05-01\n\n## Status\n\nAccepted\n\n"
        "## Decision\n\nUse TOML.\n\n```python\n# not a heading\n## Consequences\n```\n\n"
        "<!-- ## Consequences hidden -->\n## Consequences\n\nOne more parser.\n"
    )
    r = parse_record("adr/0004-toml.md", text)
    assert r is not None
    assert "# not a heading" in r.decision and "## Consequences" in r.decision
    assert r.consequences == "One more parser."


def test_explicit_paths_adr_dir_and_bad_files(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write_files(
        root,
        {
            ".adr-dir": "architecture/records\n",
            "architecture/records/0001-use-python.md": NYGARD_OLD,
            "architecture/records/sub/0002-nested.md": NYGARD_NEW,
            "docs/adr/0003-latin1.md": b"# 3. Caf\xe9\n\n## Decision\n\nX.\n",
            "docs/adr/0004-binary.md": b"\x00\x01\x02binary",
            "docs/adr/0005-huge.md": b"#" * (MAX_FILE_BYTES + 1),
            "docs/adr/0006-ours.md": f"{GENERATED_MARKER} -->\n# 6. Ours\n\n## Decision\n\nX.\n",
            "docs/adr/notes.txt": "not markdown",
            "elsewhere/0007-extra.md": MADR_RECORD,
        },
    )
    (tmp_path / "outside.md").write_text(NYGARD_OLD, encoding="utf-8")
    records, skips = read(root)
    assert set(records) == {
        "architecture/records/0001-use-python.md",
        "architecture/records/sub/0002-nested.md",
    }
    assert skips.counts == {
        ("adr", "invalid UTF-8"): 1,
        ("adr", "binary"): 1,
        ("adr", "too large"): 1,
        ("adr", "generated by living-memory"): 1,
    }
    # records in category subfolders still link by number and title
    assert records["architecture/records/0001-use-python.md"].superseded_by == (
        "architecture/records/sub/0002-nested.md",
    )
    only, skips = read(root, paths=["elsewhere/0007-extra.md", tmp_path / "outside.md"])
    assert list(only) == ["elsewhere/0007-extra.md"]
    assert skips.counts == {("adr", "outside the project"): 1}
    assert set(read(root, dirs=["elsewhere"])[0]) == {"elsewhere/0007-extra.md"}
    _, skips = read(root, dirs=[str(tmp_path), "../"])
    assert skips.counts == {("adr", "outside the project"): 2}
    assert "docs/adr" in DEFAULT_DIRS and "docs/architecture/decisions" in DEFAULT_DIRS


def test_dates_and_statuses() -> None:
    assert parse_date("2022-08-01") == day("2022-08-01")
    assert parse_date("2024-05-22 (back dated)") == day("2024-05-22")
    assert parse_date("2024-14-02") == day("2024-02-14")
    assert parse_date("2020/03/04") == day("2020-03-04")
    assert parse_date("14 February 2024") == day("2024-02-14")
    assert parse_date("Feb 3rd, 2021") == day("2021-02-03")
    assert parse_date("31.12.2019") == day("2019-12-31")
    assert parse_date("12/31/2019") == day("2019-12-31")
    assert parse_date("{YYYY-MM-DD when the decision was last updated}") is None
    assert parse_date("2024-02-31") is None
    assert canonical_status(["**Accepted**"]) == "accepted"
    assert canonical_status(["Approved"]) == "accepted"
    assert canonical_status(["Pending"]) == "proposed"
    assert canonical_status(["In Review"]) == "proposed"
    assert canonical_status(["Declined"]) == "rejected"
    assert canonical_status(["Deprecated by ADR-4"]) == "deprecated"
    assert canonical_status(["Accepted", "", "Superseded by [5. X](0005-x.md)"]) == "superseded"
    assert canonical_status(["Accepted", "Amended by [17. Y](0017-y.md)"]) == "accepted"
    assert canonical_status(["on hold"]) == "on hold"
    assert canonical_status(["", "  "]) is None


def test_records_are_found_by_name_and_structure_outside_the_usual_folders(
    tmp_path: Path,
) -> None:
    """A project that keeps ``docs/architecture/adr-002-….md`` gets its decisions; a file that
    is only named like a record, and records kept as test fixtures, are not decisions."""
    sources = sorted((SAMPLES / "alphagov-govuk-aws").glob("0*.md"))[:6]
    arch = tmp_path / "docs" / "architecture"
    arch.mkdir(parents=True)
    for n, src in enumerate(sources, 1):
        name = f"adr-{n:03d}-{src.name.split('-', 1)[1]}"
        (arch / name).write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    (arch / "adr-099-notes.md").write_text(
        "# 99. Meeting notes\n\n## Context\n\nWe talked about the load balancers and the DNS.\n"
    )
    fixtures = tmp_path / "tests" / "data" / "adr"
    fixtures.mkdir(parents=True)
    (fixtures / "0001-fixture.md").write_text(sources[0].read_text(encoding="utf-8"))
    records, skips = read(tmp_path)
    assert sorted(records) == sorted(f"docs/architecture/{p.name}" for p in arch.glob("adr-00*"))
    assert skips.counts[("adr", "named like a record, but no status and decision")] == 1
    assert not any(p.startswith("tests/") for p in records)


@pytest.mark.parametrize(
    ("lines", "note"),
    [
        (["Superseded. We moved to X because it scales."], "We moved to X because it scales."),
        (
            ["Accepted", "", "This was accepted because it is simpler."],
            "This was accepted because it is simpler.",
        ),
        (["* Status: superseded. We moved to Y."], "We moved to Y."),
        (
            ["Superseded by ADR-5 because the API moved"],
            "Superseded by ADR-5 because the API moved",
        ),
        (["Accepted — replaces the cron job"], "replaces the cron job"),
        (["Deprecated in favour of ADR 9."], "Deprecated in favour of ADR 9."),
        # the status alone, its date, the records it names: nothing more to say
        (["Accepted"], ""),
        (["Proposed (2024-01-01)"], ""),
        (["On hold until Q3"], ""),
        (["Superseded by [5. Use Postgres](0005-use-postgres.md)"], ""),
        (["Accepted", "Supersedes [1. Use PostgreSQL](0001-use-postgresql.md)"], ""),
        (["Superseded by Use SQLite for storage"], ""),
        (["Accepted", "Date: 2020-01-01"], ""),
    ],
)
def test_what_a_status_says_beside_the_status_is_its_note(lines: list[str], note: str) -> None:
    assert status_note(lines) == note


@pytest.mark.parametrize(
    ("status", "why"),
    [
        ("Status: Superseded. We moved to Kafka because the queue lost messages.", "We moved"),
        ("## Status\n\nAccepted\n\nThis was accepted because it needs no new server.", "This was"),
    ],
)
def test_a_records_status_explanation_is_read(status: str, why: str) -> None:
    text = f"# 4. Use a queue\n\n{status}\n\n## Decision\n\nWe will use RabbitMQ.\n"
    r = parse_record("docs/adr/0004-use-a-queue.md", text)
    assert r is not None and r.status in ("superseded", "accepted")
    assert r.status_note.startswith(why) and r.status_note.endswith(".")
    assert not r.status_note.lower().startswith(r.status)  # the status is not repeated


def test_the_real_samples_status_notes_say_more_than_the_status() -> None:
    records, _ = read(SAMPLES)
    for r in records.values():
        assert r.status is None or r.status_note.lower().strip(" .") != r.status, r.path


RFC = """# RFC: Storage Backend Migration

Status: Proposed

Problem
- The single-file database cannot serve several bot processes; full-text search is tied to it.

Options
1. Move to a server database and port the search index.
2. Keep both backends behind an abstraction layer.

Recommendation
- Adopt (1): a server-first schema with versioned migrations.

Impact
- Operations need one more service.

Acceptance Criteria
- Migrations run on an empty database.
"""


def test_rfc_records_in_any_records_folder_are_found_and_read(tmp_path: Path) -> None:
    """Records kept in a folder named like their home (``docs/rfcs``, ``design-docs``,
    ``architecture/decisions`` under a package…) are read, whatever their file names; an
    RFC-style record (Problem / Options / Recommendation as bare lines) has its parts."""
    write_files(
        tmp_path,
        {
            "docs/rfcs/storage-backend.md": RFC,
            "docs/rfcs/README.md": "# RFCs\n\nThe index of proposals.\n",
            "handbook/design-docs/cache.md": RFC.replace("Storage Backend", "Cache Layer"),
            "services/api/decisions/use-grpc.md": (
                "# Use gRPC\n\n## Context\n\nServices talk over HTTP+JSON.\n\n"
                "## Decision\n\nWe use gRPC between services.\n"
            ),
            "docs/guides/setup.md": "# Setup\n\nProblem\n- none\n",
            "tests/rfcs/fixture.md": RFC,
        },
    )
    records, _ = read(tmp_path)
    assert sorted(records) == [
        "docs/rfcs/storage-backend.md",
        "handbook/design-docs/cache.md",
        "services/api/decisions/use-grpc.md",
    ]
    r = records["docs/rfcs/storage-backend.md"]
    assert r.title == "RFC: Storage Backend Migration"
    assert r.status == "proposed"
    assert "cannot serve several bot processes" in r.context
    assert r.decision.startswith("- Adopt (1)")
    assert r.options[0].startswith("Move to a server database")
    assert "one more service" in r.consequences
    assert "Acceptance" not in r.decision
    assert records["services/api/decisions/use-grpc.md"].decision == "We use gRPC between services."


def test_bare_section_words_inside_prose_are_not_headings() -> None:
    """A section word is a heading only alone on its line after a blank line, with text
    after it: a sentence, a list item or a line inside a paragraph stays text."""
    text = (
        "# Use queues\n\nStatus: accepted\n\n## Context\n\nWe had a line that says\nProblem\n"
        "in the middle of a paragraph.\n\n- Options\n- more\n\n## Decision\n\nUse queues.\n"
    )
    r = parse_record("docs/adr/0001-use-queues.md", text)
    assert r is not None
    assert "Problem\nin the middle" in r.context
    assert "- Options" in r.context
    assert r.decision == "Use queues."
