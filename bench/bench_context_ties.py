"""How much of a file's context is about that file, and what the always-applied rule costs.

    python -m bench.bench_context_ties [--embedder hashing|real] [--files 12]

For three projects — this repository, the dev set's workspace (built by bench_devset) and a
decision-record repository with a scripted history of feature-branch merges, bot commits and
trivial commits (built here from ../shared/data/adr/) — ingest git, decision records and rules
(and the dev set's conversations), open the files most often changed in git history, and
count the context items *tied* to the file: an item whose memory is anchored to the file or its
test pair, to its module, package or one of its imports, to one of its symbols, or to a glob
that matches it, or a project-wide rule section (DESIGN §5), or a rule section naming a folder
that holds the file. The check is made here from the memories' anchors, independently of the
engine's own reasons. Also reported: items and tokens per context, and the tokens of the
always-applied Cursor rule the server would write (the rendered context).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import CACHE_DIR, log, make_embedder, median, table, write_result

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ADR_DATA = next(
    (
        p
        for p in (REPO.parent / "shared" / "data" / "adr", Path("/work/shared/data/adr"))
        if p.is_dir()
    ),
    REPO.parent / "shared" / "data" / "adr",
)


def _git(root: Path, *args: str, author: str = "Dev <dev@example.com>", when: int = 0) -> None:
    name, _, mail = author.partition(" <")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": mail.rstrip(">"),
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": mail.rstrip(">"),
        "GIT_AUTHOR_DATE": f"{1_700_000_000 + when * 3600} +0000",
        "GIT_COMMITTER_DATE": f"{1_700_000_000 + when * 3600} +0000",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def adr_repo() -> Path:
    """Decision records added on feature branches merged with --no-ff, dependabot bumps of
    requirements.txt, a release bot, and a few trivial commits."""
    root = CACHE_DIR / "ties-adr-repo"
    if (root / ".git").is_dir():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# Infrastructure\n\nDecisions live in docs/adr.\n")
    (root / "requirements.txt").write_text("requests==2.0\n")
    (root / "deploy.sh").write_text("#!/bin/sh\nterraform apply\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "Initial commit")
    records = sorted((ADR_DATA / "alphagov-govuk-aws").glob("0*.md"))[:24]
    (root / "docs" / "adr").mkdir(parents=True)
    t = 1
    for n, rec in enumerate(records):
        branch = f"adr-{n}"
        _git(root, "checkout", "-q", "-b", branch)
        (root / "docs" / "adr" / rec.name).write_text(rec.read_text(encoding="utf-8"))
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", f"Add ADR {rec.stem}", when=t)
        if n % 3 == 0:
            with (root / "deploy.sh").open("a") as f:
                f.write(f"# step {n}: see docs/adr/{rec.name}\n")
            _git(root, "commit", "-qam", "wip", when=t + 1)
        _git(root, "checkout", "-q", "main")
        _git(root, "merge", "-q", "--no-ff", branch, "-m", f"Merge branch '{branch}'", when=t + 2)
        if n % 4 == 1:
            (root / "requirements.txt").write_text(f"requests==2.{n + 1}\n")
            _git(
                root,
                "commit",
                "-qam",
                f"Bump requests to 2.{n + 1}",
                author="dependabot[bot] <support@github.com>",
                when=t + 3,
            )
        if n % 6 == 5:
            (root / "README.md").write_text(f"# Infrastructure\n\nRelease {n}.\n")
            _git(
                root,
                "commit",
                "-qam",
                f"release: 0.{n}.0",
                author="github-actions[bot] <actions@github.com>",
                when=t + 4,
            )
        t += 5
    (root / "AGENTS.md").write_text("# Agents\n\n- Run `terraform fmt` before committing.\n")
    (root / ".cursor" / "rules").mkdir(parents=True)
    (root / ".cursor" / "rules" / "adr.mdc").write_text(
        "---\ndescription: decision records\nglobs: docs/adr/**\nalwaysApply: false\n---\n"
        "# Records\n\n- Number records with four digits and never edit an accepted one.\n"
    )
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "Add agent rules", when=t)
    return root


def busiest_files(root: Path, n: int) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "log", "--no-merges", "--name-only", "--format="],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts = Counter(line for line in out.splitlines() if line.strip())
    existing = [f for f, _ in counts.most_common() if (root / f).is_file()]
    return existing[:n]


def tied(memory: Any, facts: Any) -> bool:
    from predictive.globs import glob_match
    from predictive.rule_topics import folders_named

    for a in memory.anchors:
        t, v = a.type.value, a.value
        if t == "file" and (v == facts.path or v in facts.paired):
            return True
        if t == "module" and v in {facts.module, facts.package, *facts.imports} - {None}:
            return True
        if t == "symbol" and v in facts.symbols:
            return True
        if t == "glob" and glob_match(facts.path, v):
            return True
    meta = memory.metadata if isinstance(memory.metadata, dict) else {}
    # a project-wide rule (no globs: root AGENTS.md, CLAUDE.md, contributing) applies to
    # every file, and one that names a folder holding the file applies to it
    if memory.source == "rules" and not meta.get("globs"):
        return True
    if memory.kind.value in ("convention", "preference") and not any(
        a.type.value in ("file", "module", "symbol", "glob") for a in memory.anchors
    ):
        return True  # a project-wide convention (remembered, or learned from a chat)
    return memory.source == "rules" and any(
        facts.path.startswith(f"{d.rstrip('/')}/") for d in folders_named(memory.text)
    )


def measure(name: str, root: Path, embedder: str, n_files: int, chats: bool) -> dict[str, Any]:
    from predictive.engine import ContextEngine, ContextRequest
    from predictive.file_facts import derive_file
    from predictive.ingest import run
    from predictive.tokens import count_tokens
    from storage import MemoryStore

    d = CACHE_DIR / f"ties-{name}-{embedder}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    store = MemoryStore(d / "memory.db", embedder=make_embedder(embedder))
    sources = ["git", "adr", "rules", *(["chats"] if chats else [])]
    t0 = time.perf_counter()
    summary = run(store, root=root, options={"sources": sources}).to_dict()
    store.embeddings.embed_pending()
    log(f"{name}: {summary['added']} memories in {time.perf_counter() - t0:.1f} s")
    engine = ContextEngine(store, root=root)
    rows = []
    for path in busiest_files(root, n_files):
        text = (root / path).read_text(encoding="utf-8", errors="replace")
        facts = derive_file(path, text, None, str(root))
        ctx = engine.assemble(ContextRequest(path=path, text=text, root=str(root)), record=False)
        ids = ctx.memory_ids
        mems = {m.id: m for m in store.get_many(ids)}
        n_tied = sum(tied(mems[i], facts) for i in ids if i in mems)
        kinds = Counter(mems[i].source for i in ids if i in mems)
        rows.append(
            {
                "file": path,
                "items": len(ids),
                "tied": n_tied,
                "share": round(n_tied / len(ids), 3) if ids else None,
                "tokens": count_tokens(ctx.markdown),
                "by_source": dict(kinds),
            }
        )
    store.close()
    items = sum(r["items"] for r in rows)
    return {
        "project": name,
        "memories": summary["added"],
        "files": rows,
        "items": items,
        "tied": sum(r["tied"] for r in rows),
        "share": round(sum(r["tied"] for r in rows) / items, 3) if items else None,
        "median_tokens": median([r["tokens"] for r in rows]) if rows else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--embedder", default="hashing", choices=("hashing", "real"))
    ap.add_argument("--files", type=int, default=12)
    a = ap.parse_args(argv)
    projects: list[tuple[str, Path, bool]] = [("this-repo", REPO, False)]
    ws = CACHE_DIR / "devset-ws-twat-search"
    if (ws / ".git").is_dir():
        projects.append(("devset", ws, True))
    else:
        log("no dev-set workspace: run python -m bench.bench_devset first")
    projects.append(("adr-merges", adr_repo(), False))
    results = [measure(n, r, a.embedder, a.files, c) for n, r, c in projects]
    print(
        table(
            ["project", "files", "items", "tied", "share tied", "median tokens (Cursor rule)"],
            [
                (
                    r["project"],
                    len(r["files"]),
                    r["items"],
                    r["tied"],
                    r["share"],
                    r["median_tokens"],
                )
                for r in results
            ],
        )
    )
    for r in results:
        print(f"\n{r['project']}:")
        for f in r["files"]:
            sources = json.dumps(f["by_source"])
            print(
                f"  {f['share']!s:>5} {f['items']:>3} items {f['tokens']:>5} tok  "
                f"{f['file']}  {sources}"
            )
    print(f"\nwrote {write_result(f'context-ties-{a.embedder}', {'projects': results})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
