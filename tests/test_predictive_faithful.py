"""Faithful short forms: a label or compressed line never asserts what its text does not.

The examples are shaped like the ones seen in real projects (govuk-aws ADR 23, a commit with
a pull request template, a "also update requirements.txt" chat decision)."""

from __future__ import annotations

import pytest

from predictive.compress import DeterministicCompressor
from predictive.extract import from_commit
from predictive.faithful import drops_negation, is_faithful, unsupported
from storage import Kind, Memory, MemoryStore
from storage.sources.records import Commit
from tests.test_predictive_compress import mem

C = DeterministicCompressor()


def memory(text: str, kind: Kind, *anchors: str) -> Memory:
    return mem(text, kind, anchors)


ADR_23 = (
    "ADR 23: Encrypt the state bucket\n"
    "Status: Accepted (2017-06-01)\n\n"
    "Context: Terraform state holds secrets.\n\n"
    "Decision: Should it leak it will still be cryptographically protected, so the bucket is "
    "encrypted with a KMS key.\n\n"
    "Consequences: Upon rotation, old state must be re-encrypted."
)
CHAT_DECISION = (
    "When a package is added, also update requirements.txt so that the checked PR review stays "
    "in sync."
)
PR_COMMIT = Commit(
    sha="9" * 40,
    parents=("8" * 40,),
    author="David",
    email="david@example.com",
    at=1_790_000_000.0,
    subject="Add the domain request wizard",
    body="## Summary\n\nThe wizard replaces the single long form.\n\n## Checklist\n- [x] tests",
    files=("src/registrar/views/domain_request.py",),
)


@pytest.mark.parametrize(
    ("m", "must_not"),
    [
        (memory(ADR_23, Kind.DECISION, "tag:adr", "file:docs/adr/0023-encrypt.md"), "always"),
        (memory(CHAT_DECISION, Kind.DECISION, "tag:python"), "always"),
        (memory(CHAT_DECISION, Kind.CONVENTION), "always"),
        (memory(from_commit(PR_COMMIT).memory.text, Kind.EPISODE, "tag:commit"), "Summary"),
        (memory("Upon merge the ADR is whether we keep it.", Kind.DECISION, "tag:adr"), "adr"),
    ],
)
def test_real_shaped_short_forms_say_only_what_the_text_says(m: Memory, must_not: str) -> None:
    label, compressed = C.index_label(m), C.compressed(m)
    for short in (label, compressed):
        assert unsupported(short, m.text) == [], short
        assert not drops_negation(short, m.text) or "…" in short, short
    assert must_not not in label.split()
    assert not label.startswith(f"{must_not}:")


def test_labels_are_titles_or_contiguous_starts() -> None:
    adr = memory(ADR_23, Kind.DECISION, "tag:adr")
    assert C.index_label(adr) == "Encrypt the state bucket"  # the title, not "adr: upon"
    commit = memory(from_commit(PR_COMMIT).memory.text, Kind.EPISODE, "tag:commit")
    assert C.index_label(commit) == "Add the domain request wizard"  # not "commit: Summary"
    assert C.compressed(commit) == (
        "Add the domain request wizard — The wizard replaces the single long form."
    )
    long = memory(CHAT_DECISION, Kind.DECISION)
    label = C.index_label(long)
    assert label.endswith("…") and CHAT_DECISION.startswith(label[:-1])  # cut at a word


def test_the_check_itself() -> None:
    text = "We switched auth from JWT to sessions because tokens grew too large."
    assert is_faithful("auth: JWT→sessions (tokens grew too large)", text)
    assert unsupported("db: PostgreSQL", "We use the PostgreSQL database.") == ["db"]
    assert unsupported("always leak cryptographically protected", ADR_23) == ["always"]
    assert drops_negation("commit secrets to git", "Never commit secrets to git.")
    assert not drops_negation("Never commit secrets", "Never commit secrets to git.")


def test_short_forms_of_an_older_compressor_are_made_again(store: MemoryStore) -> None:
    from predictive.compress import LEVELS_FORMAT, backfill_levels
    from storage import NewMemory

    mid = store.add(NewMemory(text=ADR_23, kind=Kind.DECISION)).id
    store.levels.set({mid: {"compressed": "adr: always leak", "index_label": "adr: upon"}})
    store.cursors.set("levels", {"format": "1"})
    backfill_levels(store)
    m = store.get(mid)
    assert (m.index_label, m.compressed) != ("adr: upon", "adr: always leak")
    assert is_faithful(m.index_label or "", ADR_23) and is_faithful(m.compressed or "", ADR_23)
    assert store.cursors.get("levels")["format"] == LEVELS_FORMAT
    store.levels.set({mid: {"index_label": "kept"}})  # once per store: later edits stay
    backfill_levels(store)
    assert store.get(mid).index_label == "kept"
