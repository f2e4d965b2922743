"""The shared folder's file format: what is written reads back the same, byte for byte
deterministic; what is not a memory file is refused with a reason."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import Kind, Review
from storage.redact import redact
from storage.sources.shared import BadFile, SharedRecord, parse, path_for, render, title_of

RECORD = SharedRecord(
    sid="3f9a1c2e",
    kind=Kind.DECISION,
    text="Use Postgres: transactions across aggregates.\n\n- one\n- two",
    created=1_700_000_000.0,
    valid_from=1_700_000_100.0,
    valid_to=1_800_000_000.0,
    anchors=("file:src/db.py", 'tag:odd: "quoted" # not a comment', "symbol:Store.add"),
    supersedes=("0b7d4e11",),
    source="chat:cursor",
    conversation="Moving to Postgres: why?",
    artifacts=("commit:1f2e3d4c5b",),
)


def test_a_record_reads_back_as_written_and_renders_the_same_bytes() -> None:
    data = render(RECORD)
    back = parse(data.decode())
    assert back == SharedRecord(**{**RECORD.__dict__, "title": title_of(RECORD.text)})
    assert render(back) == data


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(min_size=1, max_size=200).filter(lambda t: t.strip()),
    tag=st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and "\n" not in t),
)
def test_any_text_and_anchor_round_trip(text: str, tag: str) -> None:
    record = SharedRecord("abcdef12", Kind.CONVENTION, text, 0.0, 0.0, anchors=(f"tag:{tag}",))
    try:
        back = parse(render(record).decode())
    except BadFile as e:
        assert str(e) == "merge conflict markers"  # a text that carries one is refused
        return
    assert back.anchors == (redact(f"tag:{tag}"),)
    expected = "\n".join(line.rstrip() for line in redact(text).strip().split("\n")).strip()
    assert back.text == expected


def test_a_setext_heading_is_not_a_conflict_but_markers_are() -> None:
    text = render(RECORD).decode().replace("- one", "Title\n=======\n\n- one")
    assert "=======" in parse(text).text
    with pytest.raises(BadFile, match="merge conflict markers"):
        parse(text.replace("- two", "<<<<<<< HEAD\nA\n=======\nB\n>>>>>>> theirs"))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# no front matter\n", "no front matter"),
        ("---\nid: abcdef12\nkind: decision\n", "front matter is not closed"),
        ("---\nkind: decision\ncreated: 2026-01-01\n---\nx\n", "front matter lacks 'id'"),
        ("---\nid: ABC\nkind: decision\ncreated: 2026-01-01\n---\nx\n", "'id' must be"),
        ("---\nid: abcdef12\nkind: decision\ncreated: soon\n---\nx\n", "'created' is not a time"),
        ("---\nid: abcdef12\nkind: decision\ncreated: 2026-01-01\n---\n\n", "no text"),
        ("---\nid: abcdef12\nkind: decision\nstatus: maybe\ncreated: 2026\n---\nx\n", "status"),
        ("---\nid: abcdef12\n  - stray\n---\nx\n", "bad front matter line"),
    ],
)
def test_bad_files_say_why(text: str, reason: str) -> None:
    with pytest.raises(BadFile, match=reason):
        parse(text)


def test_a_hand_written_file_needs_only_id_kind_created_and_text() -> None:
    r = parse("---\nid: team0001\nkind: convention\ncreated: 2026-01-02\n---\nUse UTC.\n")
    assert (r.text, r.kind, r.review) == ("Use UTC.", Kind.CONVENTION, Review.APPROVED)
    assert r.anchors == ()
    assert r.valid_from == r.created


def test_names_are_stable_readable_and_grouped_by_kind() -> None:
    title = title_of(RECORD.text)
    assert title == "Use Postgres: transactions across aggregates"
    assert path_for(Kind.DECISION, title, "3f9a1c2e") == (
        "decisions/use-postgres-transactions-across-aggregates-3f9a1c2e.md"
    )
    assert title_of("x" * 200).endswith("…") and len(title_of("x " * 100)) <= 72
    assert title_of(":") == ":" and title_of("###") == "Memory"  # a heading is never empty
