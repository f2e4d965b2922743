"""Faithful short forms: does every label and compressed line say only what its text says?

    python -m bench.bench_short_forms [--before REV] [--work DIR] [--pairs 10]

Builds real memories — the twat-search dev set workspace (git, rule files and its SpecStory
chats), the decision records in ``../shared/data/adr/`` (govuk-aws, manage.get.gov, MADR)
and this repository (git, decision records, rule files) — into scratch stores with the
hashing embedder, then makes each memory's index label and compressed line twice: with the
compressor of ``--before`` (default: the commit this branch started from, ``git merge-base
HEAD main``) and with the current one, both from the same memory text.

A short form is *faithful* when every content word of it occurs as a word of the memory's
full text (:func:`predictive.faithful.unsupported`). Reported per corpus: memories, short
forms, faithful before / after, short forms that changed; and ``--pairs`` before/after pairs
of short forms that were not faithful before. The target (DESIGN §5) is ≥ 99 % faithful.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import log, machine_line, table, write_result

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
DEVSET = SHARED / "devset" / "twat-search"
ADR_SETS = ("alphagov-govuk-aws", "cisagov-manage.get.gov", "madr")


def git_out(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout


def compressor_at(rev: str) -> Any:
    """The ``DeterministicCompressor`` of ``predictive/compress.py`` at ``rev``."""
    source = git_out("show", f"{rev}:predictive/compress.py")
    path = Path(tempfile.mkdtemp(prefix="lm-compress-")) / "compress_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("compress_before", path)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules["compress_before"] = module
    spec.loader.exec_module(module)
    return module.DeterministicCompressor()


def devset_workspace(work: Path) -> Path:
    ws = work / "twat-search"
    if not (ws / ".git").is_dir():
        log(f"building the dev set workspace in {ws}")
        subprocess.run([str(DEVSET / "extract.sh"), str(ws)], check=True)
    return ws


def ingest(db: Path, root: Path, options: dict[str, Any]) -> Any:
    from predictive.ingest import run
    from storage.embeddings import HashingEmbedder
    from storage.repository import MemoryStore

    store = MemoryStore(db, embedder=HashingEmbedder(dim=384))
    summary = run(store, root=root, options=options).to_dict()
    log(f"{db.stem}: {summary['added']} memories added ({root})")
    return store


def corpora(work: Path) -> dict[str, list[Any]]:
    """Each corpus's memories (archived ones too: they have short forms as well)."""
    from storage.repository import MemoryFilter

    out: dict[str, list[Any]] = {}
    ws = devset_workspace(work)
    dev = ingest(
        work / "devset.db",
        ws,
        {"sources": ["git", "rules", "chats"], "tools": ["specstory"]},
    )
    out["devset"] = dev.list(MemoryFilter(include_archived=True), limit=100_000)
    for name in ADR_SETS:
        folder = SHARED / "adr" / name
        store = ingest(
            work / f"adr-{name}.db", folder, {"sources": ["adr"], "paths": [str(folder)]}
        )
        out[f"adr/{name}"] = store.list(MemoryFilter(include_archived=True), limit=100_000)
    own = ingest(work / "this-repo.db", REPO, {"sources": ["git", "adr", "rules"]})
    out["this repository"] = own.list(MemoryFilter(include_archived=True), limit=100_000)
    return out


def short_forms(compressor: Any, m: Any) -> tuple[str, str]:
    """(index label, compressed line) made from the memory's text (stored levels ignored;
    the summary extraction wrote is kept: both compressors get it)."""
    bare = dataclasses.replace(m, compressed=None, index_label=None)
    return compressor.index_label(bare), compressor.compressed(bare)


def measure(before: Any, after: Any, groups: dict[str, list[Any]], n_pairs: int) -> dict:
    from predictive.faithful import unsupported

    rows: list[list[Any]] = []
    per: dict[str, Any] = {}
    bad_pairs: dict[str, list[dict[str, Any]]] = {}
    totals = {"forms": 0, "before_ok": 0, "after_ok": 0, "changed": 0, "memories": 0}
    unfaithful_after: list[dict[str, Any]] = []
    for name, memories in groups.items():
        forms = before_ok = after_ok = changed = 0
        for m in memories:
            old, new = short_forms(before, m), short_forms(after, m)
            for level, o, n in zip(("label", "compressed"), old, new):
                forms += 1
                o_bad, n_bad = unsupported(o, m.text), unsupported(n, m.text)
                before_ok += not o_bad
                after_ok += not n_bad
                changed += o != n
                if o_bad and o != n:
                    bad_pairs.setdefault(name, []).append(
                        {
                            "corpus": name,
                            "memory": m.id,
                            "kind": m.kind.value,
                            "level": level,
                            "text": " ".join(m.text.split())[:160],
                            "before": o,
                            "unsupported": o_bad,
                            "after": n,
                        }
                    )
                if n_bad:
                    unfaithful_after.append(
                        {"corpus": name, "memory": m.id, "level": level, "form": n, "words": n_bad}
                    )
        per[name] = {
            "memories": len(memories),
            "shortForms": forms,
            "faithfulBefore": before_ok / forms if forms else None,
            "faithfulAfter": after_ok / forms if forms else None,
            "changed": changed,
        }
        rows.append(
            [
                name,
                len(memories),
                forms,
                per[name]["faithfulBefore"],
                per[name]["faithfulAfter"],
                changed,
            ]
        )
        totals["forms"] += forms
        totals["before_ok"] += before_ok
        totals["after_ok"] += after_ok
        totals["changed"] += changed
        totals["memories"] += len(memories)
    rows.append(
        [
            "all",
            totals["memories"],
            totals["forms"],
            totals["before_ok"] / totals["forms"],
            totals["after_ok"] / totals["forms"],
            totals["changed"],
        ]
    )
    # the pairs: round robin over the corpora, so each kind of source shows
    pairs: list[dict[str, Any]] = []
    queues = [list(v) for v in bad_pairs.values()]
    while len(pairs) < n_pairs and any(queues):
        for q in queues:
            if q and len(pairs) < n_pairs:
                pairs.append(q.pop(0))
    return {
        "table": table(
            ["corpus", "memories", "short forms", "faithful before", "faithful after", "changed"],
            rows,
        ),
        "perCorpus": per,
        "total": {
            "memories": totals["memories"],
            "shortForms": totals["forms"],
            "faithfulBefore": totals["before_ok"] / totals["forms"],
            "faithfulAfter": totals["after_ok"] / totals["forms"],
            "changed": totals["changed"],
        },
        "pairs": pairs,
        "unfaithfulAfter": unfaithful_after[:50],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--before", help="git revision of the compressor to compare with")
    p.add_argument("--work", type=Path, help="scratch folder (default: a new temporary one)")
    p.add_argument("--pairs", type=int, default=10)
    a = p.parse_args(argv)
    os.environ["LIVING_MEMORY_EMBEDDER"] = "hashing"
    before_rev = a.before or git_out("merge-base", "HEAD", "main").strip()
    work = a.work or Path(tempfile.mkdtemp(prefix="lm-short-forms-"))
    work.mkdir(parents=True, exist_ok=True)
    from predictive.compress import DeterministicCompressor

    before = compressor_at(before_rev)
    groups = corpora(work)
    result = measure(before, DeterministicCompressor(), groups, a.pairs)
    print(machine_line())
    print(f"before: predictive/compress.py at {before_rev[:10]}; after: the working tree\n")
    print(result["table"])
    print(f"\n{len(result['pairs'])} short forms that were not faithful before, and now:\n")
    for i, pair in enumerate(result["pairs"], 1):
        print(f"{i}. [{pair['corpus']} · {pair['kind']} · {pair['level']}] {pair['text'][:110]}")
        print(f"   before: {pair['before']}   (not in the text: {', '.join(pair['unsupported'])})")
        print(f"   after:  {pair['after']}")
    if result["unfaithfulAfter"]:
        print(f"\nstill not faithful ({len(result['unfaithfulAfter'])} shown):")
        for u in result["unfaithfulAfter"][:10]:
            print(f"   [{u['corpus']} · {u['level']}] {u['form']}  ({', '.join(u['words'])})")
    out = write_result("short_forms", {"before": before_rev, **result})
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
