"""Bad input: every refusal is an InvalidInput (a ValueError) with a readable message, and the
database is exactly as it was before the call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from storage import (
    Anchor,
    AnchorType,
    Artifact,
    InvalidInput,
    MemoryFilter,
    MemoryStore,
    NewMemory,
    StoreError,
)
from storage.rows import MAX_TEXT_CHARS

Snapshot = Callable[[], object]


def _new(**kw: Any) -> NewMemory:
    kw.setdefault("text", "a perfectly good memory")
    return NewMemory(**kw)


BAD_MEMORIES = [
    pytest.param(_new(text=""), "text is empty", id="empty-text"),
    pytest.param(_new(text=" \t\n  "), "text is empty", id="whitespace-text"),
    pytest.param(_new(text="abc\x00def"), "NUL", id="nul-bytes"),
    pytest.param(_new(text=42), "must be a string", id="not-a-string"),
    pytest.param(_new(text="x" * (MAX_TEXT_CHARS + 1)), "limit", id="huge-text"),
    pytest.param(_new(summary="s\x00"), "NUL", id="nul-summary"),
    pytest.param(_new(summary="s" * (MAX_TEXT_CHARS + 1)), "limit", id="huge-summary"),
    pytest.param(_new(importance=1.01), "between 0 and 1", id="importance-high"),
    pytest.param(_new(importance=-0.5), "between 0 and 1", id="importance-low"),
    pytest.param(_new(importance=float("nan")), "between 0 and 1", id="importance-nan"),
    pytest.param(_new(importance="very"), "between 0 and 1", id="importance-str"),
    pytest.param(_new(confidence=3), "between 0 and 1", id="confidence"),
    pytest.param(_new(kind="opinion"), "unknown kind 'opinion'", id="unknown-kind"),
    pytest.param(_new(scope="world"), "unknown scope", id="unknown-scope"),
    pytest.param(_new(anchors=["file:x.py"]), "Anchor", id="anchor-not-anchor"),
    pytest.param(_new(anchors=[Anchor("planet", "mars")]), "anchor type", id="anchor-type"),  # type: ignore[arg-type]
    pytest.param(_new(anchors=[Anchor(AnchorType.FILE, "  ")]), "empty", id="anchor-blank"),
    pytest.param(_new(artifacts=[Artifact("commit", "")]), "artifact ref", id="artifact-ref"),
    pytest.param(_new(artifacts=[("commit", "abc")]), "Artifact", id="artifact-tuple"),
    pytest.param(_new(metadata={"f": print}), "JSON", id="metadata-object"),
    pytest.param(_new(metadata={"x": float("inf")}), "JSON", id="metadata-inf"),
    pytest.param(_new(metadata=["a", "list"]), "dict", id="metadata-list"),
    pytest.param(_new(valid_from="tomorrow"), "valid_from", id="valid-from"),
    pytest.param(_new(valid_to=float("nan")), "valid_to", id="valid-to-nan"),
    pytest.param("just a string", "NewMemory", id="not-a-newmemory"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_MEMORIES)
def test_bad_memory_is_refused_and_nothing_changes(
    store: MemoryStore, snapshot: Snapshot, bad: Any, message: str
) -> None:
    store.add(NewMemory(text="a memory that was here before"))
    before = snapshot()
    with pytest.raises(InvalidInput, match=message) as err:
        store.add(bad)
    assert isinstance(err.value, ValueError) and isinstance(err.value, StoreError)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300
    assert snapshot() == before
    assert store.count() == 1


def test_text_at_the_limit_is_accepted(store: MemoryStore) -> None:
    res = store.add(NewMemory(text="y" * MAX_TEXT_CHARS))
    assert len(store.get(res.id).text) == MAX_TEXT_CHARS


def test_blank_optional_levels_mean_not_filled(store: MemoryStore) -> None:
    m = store.get(store.add(NewMemory(text="t", summary="  ", compressed="")).id)
    assert m.summary is None and m.compressed is None


@pytest.mark.parametrize("text", ["", "   ", "file:", "tag:  ", "error:"])
def test_anchor_parse_refuses_empty_values(text: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        Anchor.parse(text)


def test_anchor_parse() -> None:
    assert Anchor.parse("file:src/a.py") == Anchor(AnchorType.FILE, "src/a.py")
    assert Anchor.parse("symbol: MemoryStore.add ") == Anchor(AnchorType.SYMBOL, "MemoryStore.add")
    assert Anchor.parse("auth") == Anchor(AnchorType.TAG, "auth")
    # an unknown prefix is part of a tag, not an error
    assert Anchor.parse("http://x") == Anchor(AnchorType.TAG, "http://x")
    assert str(Anchor.parse("branch:main")) == "branch:main"


def test_other_refusals_leave_the_database_alone(store: MemoryStore, snapshot: Snapshot) -> None:
    a = store.add(NewMemory(text="a")).id
    b = store.add(NewMemory(text="b")).id
    before = snapshot()
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: store.graph.add(a, a, "RELATES_TO"), "two different"),
        (lambda: store.graph.add(a, b, "RELATES_TO", strength=-1), "between 0 and 1"),
        (lambda: store.graph.add(a, b, "relates"), "unknown edge type"),
        (lambda: store.graph.add(a, b, "RELATES_TO", metadata={"x": object()}), "JSON"),
        (lambda: store.graph.supersede(a, a), "itself"),
        (lambda: store.contradictions.add(b, b), "itself"),
        (lambda: store.list(order="shuffle"), "unknown order"),
        (lambda: store.list(MemoryFilter(kinds=["opinion"])), "unknown kind"),  # type: ignore[list-item]
        (lambda: store.usage.record(a, "glance"), "unknown access kind"),
        (lambda: store.update(a, colour="red"), "cannot update colour"),
        (lambda: store.update(a, anchors=[Anchor(AnchorType.TAG, "")]), "empty"),
        (lambda: store.update(a, valid_from=None), "valid_from"),
        (lambda: store.add_anchors(a, ["tag:x"]), "Anchor"),  # type: ignore[list-item]
        (lambda: store.usage.set_decay_scores({a: "high"}), "decay"),  # type: ignore[dict-item]
        (lambda: store.contradictions.query("pending"), "unknown status"),
        (lambda: store.graph.traverse(a, types=["LIKES"]), "unknown edge type"),
    ]
    for call, message in calls:
        with pytest.raises(InvalidInput, match=message):
            call()
        assert snapshot() == before, message
