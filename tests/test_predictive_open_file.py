"""Whether a memory is the file open in the editor: the decision record or rule file read from
that very file is; other records, rules of other files, commits that touched it are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictive import ingest
from predictive.open_file import is_the_open_file, source_file
from storage import Anchor, AnchorType, Kind, MemoryStore, NewMemory
from tests.project_fixtures import write_files

RECORD = """# 1. Use Postgres for storage

Date: 2023-01-10

## Status

Accepted

## Decision

We will use PostgreSQL 15 for all persistent storage, with one schema per service.
"""
OTHER_RECORD = RECORD.replace("# 1. Use Postgres", "# 2. Use Redis").replace(
    "PostgreSQL 15 for all persistent storage", "Redis for the session cache"
)
RULES = """# Project rules

- Always run the migrations with alembic before the tests.
- Never commit secrets to the repository.
"""


@pytest.fixture
def project(tmp_path: Path, store: MemoryStore) -> dict[str, list[int]]:
    """A project's records and rule file, ingested: memory ids by source file."""
    write_files(
        tmp_path / "proj",
        {
            "docs/adr/0001-use-postgres.md": RECORD,
            "docs/adr/0002-use-redis.md": OTHER_RECORD,
            "CLAUDE.md": RULES,
        },
    )
    ingest.run(store, root=tmp_path / "proj", options={"sources": ["adr", "rules"]})
    by_file: dict[str, list[int]] = {}
    for m in store.list(limit=20):
        by_file.setdefault(source_file(m) or "", []).append(m.id)
    return by_file


def test_a_decision_record_is_the_open_file_it_was_read_from(
    store: MemoryStore, project: dict[str, list[int]]
) -> None:
    (record,) = project["docs/adr/0001-use-postgres.md"]
    (other,) = project["docs/adr/0002-use-redis.md"]
    for details in (True, False):  # with or without its artifacts loaded
        m, o = store.get_many([record, other], details=details)
        assert is_the_open_file(m, "docs/adr/0001-use-postgres.md")
        assert is_the_open_file(m, "./docs/adr/0001-use-postgres.md")
        assert is_the_open_file(m, "docs\\adr\\0001-use-postgres.md")
        assert is_the_open_file(m, "/home/me/proj/docs/adr/0001-use-postgres.md")
        assert not is_the_open_file(o, "docs/adr/0001-use-postgres.md")
        assert not is_the_open_file(m, "adr/0001-use-postgres.md")  # another file
        assert not is_the_open_file(m, "/home/me/proj/docs/adr/x0001-use-postgres.md")
        assert not is_the_open_file(m, "")


def test_each_rule_of_a_rule_file_is_the_open_file(
    store: MemoryStore, project: dict[str, list[int]]
) -> None:
    rules = project["CLAUDE.md"]
    assert len(rules) >= 1
    for m in store.get_many(rules, details=False):
        assert m.kind is Kind.CONVENTION
        assert is_the_open_file(m, "CLAUDE.md")
        assert not is_the_open_file(m, "docs/CLAUDE.md")
        assert not is_the_open_file(m, "docs/adr/0001-use-postgres.md")


def test_a_memory_about_the_file_is_not_the_file(store: MemoryStore) -> None:
    path = "docs/adr/0001-use-postgres.md"
    commit = store.add(
        NewMemory(
            "docs: record the storage decision",
            kind=Kind.EPISODE,
            source="git",
            source_id="abc123",
            anchors=[Anchor(AnchorType.FILE, path)],
        )
    )
    note = store.add(
        NewMemory("ADR 1: Use Postgres for storage", kind=Kind.DECISION, source_id=path, anchors=[])
    )
    assert not is_the_open_file(store.get(commit.id), path)
    assert not is_the_open_file(store.get(note.id), path)  # a note, not the record read
