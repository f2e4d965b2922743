"""The items of a rule section searched on their own: a question one bullet of a long section
answers finds that section, through the real ingestion and search paths (hashing embedder)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import predictive.retrieval as retrieval
from predictive.ingest import run as ingest
from predictive.retrieval import find
from storage import MemoryStore, pieces

RULES = """# Agent rules

## Working rules
- Keep edits small and reversible; one concern per pull request, reviewed before merging.
- Run the formatter and the linter before committing; unformatted code fails the pipeline.
- Secrets never enter the repository; document each new environment variable in the example.
- Log through the module logger and never print to standard output from library code.
- When a change touches more than three modules, add a one-line changelog entry for it.
- Public functions carry type hints and a docstring of one line that says what they return.
- Prefer the standard library over a new dependency, and justify every dependency you add.
- Tests use real database files in temporary folders, never a mocked database connection.
- Keep functions short; split one that no longer fits on a screen into named helpers.
- Write commit messages in the imperative mood, with a body that explains why the change.
"""

# Short sections elsewhere that share some of the question's words.
OTHERS = {
    "CLAUDE.md": "# Claude\n\n## Modules\n"
    "More than three modules import the store; a change there touches them all.\n",
    ".cursor/rules/review.mdc": "---\ndescription: review\nalwaysApply: true\n---\n# Review\n"
    "A reviewer is expected to read each change to the core modules.\n",
}


def _project(root: Path, rules: str = RULES) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "AGENTS.md").write_text(rules)
    for path, text in OTHERS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def _section(store: MemoryStore, heading: str) -> int:
    found = [
        m.id
        for m in store.list(limit=100)
        if m.source == "rules" and m.text.startswith(heading) and not m.archived
    ]
    assert len(found) == 1, found
    return found[0]


QUERY = "which entry is expected when a change touches more than three modules"


def test_one_bullet_of_a_long_rule_section_finds_the_section(
    tmp_path: Path, store: MemoryStore
) -> None:
    root = _project(tmp_path / "p")
    ingest(store, root=root, options={"sources": ["rules"]})
    section = _section(store, "Agent rules > Working rules")
    assert len(pieces.of_memory(store.conn, section)) == 10
    top = find(store, QUERY, k=5)[0]
    assert top.provenance.path == "AGENTS.md" and top.provenance.kind == "rule file"
    assert top.memory is not None and top.memory.id == section
    assert section in top.memory_ids
    assert "one-line changelog entry" in top.snippet


def test_without_its_pieces_the_section_loses_to_a_short_one(
    tmp_path: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture is hard for a whole-section search: the bullet's words are diluted in ten
    bullets, and short sections elsewhere share some of them."""
    root = _project(tmp_path / "p")
    ingest(store, root=root, options={"sources": ["rules"]})
    monkeypatch.setattr(retrieval, "PIECE_SHARE", 0.0)
    found = [f.provenance.path for f in find(store, QUERY, k=5)]
    assert found.index("AGENTS.md") > 0


def test_pieces_follow_an_edited_section_and_keep_its_time(
    tmp_path: Path, store: MemoryStore
) -> None:
    root = _project(tmp_path / "p")
    before = time.time() - 1
    ingest(store, root=root, options={"sources": ["rules"]})
    # a search as of before the rules were learned does not see them through their pieces
    assert all(f.provenance.path != "AGENTS.md" for f in find(store, QUERY, as_of=before))
    edited = RULES.replace(
        "add a one-line changelog entry for it", "write a migration note in the upgrade guide"
    )
    (root / "AGENTS.md").write_text(edited)
    ingest(store, root=root, options={"sources": ["rules"]})
    section = _section(store, "Agent rules > Working rules")
    texts = pieces.of_memory(store.conn, section)
    assert any("migration note in the upgrade guide" in t for t in texts)
    assert not any("changelog entry" in t for t in texts)
    top = find(store, "where does the migration note go when a change touches modules", k=3)[0]
    assert top.provenance.path == "AGENTS.md" and top.memory is not None
    assert top.memory.id == section and "upgrade guide" in top.snippet


def test_the_answering_bullet_is_the_snippet(
    tmp_path: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By keywords alone the section is found either way; its snippet is the bullet that
    answers only through the pieces (the stretch of the section with most of the query's words
    is another)."""
    root = _project(tmp_path / "p")
    ingest(store, root=root, options={"sources": ["rules"]})

    def agents_snippet() -> str:
        found = find(store, QUERY, k=3, mode="keyword")
        return next(f.snippet for f in found if f.provenance.path == "AGENTS.md")

    bullet = "Agent rules > Working rules: - When a change touches more than three modules"
    assert agents_snippet().startswith(bullet)
    monkeypatch.setattr(retrieval, "PIECE_SHARE", 0.0)
    assert not agents_snippet().startswith(bullet)


def test_a_purged_section_leaves_no_pieces(tmp_path: Path, store: MemoryStore) -> None:
    root = _project(tmp_path / "p")
    ingest(store, root=root, options={"sources": ["rules"]})
    section = _section(store, "Agent rules > Working rules")
    store.purge(section)
    assert pieces.of_memory(store.conn, section) == []
    store.embeddings.embed_pending()
    assert pieces.count(store.conn) == 0
    assert all(f.memory is None or f.memory.id != section for f in find(store, QUERY))


def test_split_cuts_items_with_their_heading() -> None:
    text = (
        "Testing\n"
        "- Run the whole suite with pytest before every commit, inside the venv.\n"
        "- Fixtures:\n"
        "```python\n"
        "def f():\n"
        "\n"
        "    pass\n"
        "```\n"
        "- Never mock the database; use real SQLite files in temporary folders.\n"
        "  They are cheap and they behave like production.\n"
    )
    assert pieces.split(text) == [
        "Testing: - Run the whole suite with pytest before every commit, inside the venv.",
        "Testing: - Fixtures: ```python def f():  pass ```",
        "Testing: - Never mock the database; use real SQLite files in temporary folders. "
        "They are cheap and they behave like production.",
    ]


def test_a_section_of_one_item_is_not_cut() -> None:
    assert pieces.split("Style\nUse four spaces for indentation in every Python file here.") == []
    assert pieces.split("Style\n- Use four spaces for indentation in every Python file.") == []
    # a short label joins the item after it
    assert pieces.split("Style\nNote:\n- Use four spaces for indentation in Python files.") == []
