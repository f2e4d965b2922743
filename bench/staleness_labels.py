"""Builds the labelled staleness set (``bench/data/staleness_labels.json``) from real histories.

Not part of the product and sharing none of its code: each label is read off the repository's
history with plain ``git`` commands, one case at a time, so the product's batched checker
(predictive.staleness) is measured against an independent reading.

Cases are commits, one case per commit (and so per memory), about one file: the commit added
or modified exactly one file, and its message names no other file that existed then.

- **dependency**: a commit touching only manifests and lock files whose diff adds a line
  naming a package that its message names. *stale* when no manifest at HEAD has a line
  naming it (``git grep -w``) or the manifest is stale as a file (below); *valid* otherwise.
- **symbol**: a commit whose message names symbols (``name()``, or identifiers in backticks
  with an underscore or an inner capital) that are whole words of its file at ``L``.
  *stale* when the file is stale (below) or one of them is no longer a word of the file where
  it is now (removed, or moved to another file); *valid* otherwise.
- **file**: any other such commit. *stale* when, between the commit and the repository's
  HEAD (``git rev-list L..HEAD``), its file was deleted (and not brought back), renamed
  (``git log -M`` over that range, renames chained), or rewritten (``git diff --numstat L
  HEAD``: at least half of the lines it had at ``L`` deleted or replaced); *valid* otherwise
  (a look-alike: the same kind of memory whose file stayed).

Sampling: per repository and type, up to ``--per`` stale and ``--per`` valid cases, seeded.

    .venv/bin/python -m bench.staleness_labels --repo this=/tmp/lmclone@63b27f4 \\
        --repo gryag=/tmp/st-gryag --repo twat-search=/tmp/st-twat-search \\
        --repo dd-trace-py=/tmp/st-context-gold
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "staleness_labels.json"
MANIFESTS = re.compile(
    r"(^|/)(pyproject\.toml|requirements[\w.-]*\.(txt|in)|package\.json|setup\.cfg)$"
)
LOCKS = re.compile(r"(^|/)(poetry\.lock|uv\.lock|package-lock\.json|yarn\.lock|pnpm-lock\.yaml)$")
CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w{2,})\(\)")


def git(root: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    p = subprocess.run(
        ["git", "-C", str(root), "-c", "core.quotepath=false", *args],
        capture_output=True,
        text=True,
        errors="replace",
    )
    if p.returncode not in ok:
        raise RuntimeError(f"git {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def commits(root: Path, head: str) -> list[dict[str, Any]]:
    out = git(root, "log", "-M", "--name-status", "--format=%x1e%H%x1f%B%x1f", head)
    found = []
    for chunk in out.split("\x1e")[1:]:
        sha, message, files = chunk.split("\x1f")
        entries = [line.split("\t") for line in files.strip().splitlines() if line.strip()]
        found.append({"sha": sha, "message": message.strip(), "files": entries})
    return found


def lines_at(root: Path, rev: str, path: str) -> str | None:
    try:
        return git(root, "show", f"{rev}:{path}")
    except RuntimeError:
        return None


def file_fate(root: Path, learned: str, head: str, path: str) -> dict[str, Any]:
    """What became of ``path`` between ``learned`` and ``head``."""
    between = set(git(root, "rev-list", f"{learned}..{head}").split())
    log = git(
        root, "log", "-M", "--reverse", "--name-status", "--format=%x1e%H", f"{learned}..{head}"
    )
    cur, deleted_in, renamed = path, None, []
    for chunk in log.split("\x1e")[1:]:
        sha, _, body = chunk.partition("\n")
        if sha.strip() not in between:
            continue
        for line in body.splitlines():
            parts = line.split("\t")
            if parts[0].startswith("R") and len(parts) == 3 and parts[1] == cur:
                cur = parts[2]
                renamed.append((sha.strip()[:10], parts[2]))
                deleted_in = None
            elif parts[0] == "D" and len(parts) == 2 and parts[1] == cur:
                deleted_in = sha.strip()[:10]
            elif parts[0] == "A" and len(parts) == 2 and parts[1] == cur:
                deleted_in = None
    then = lines_at(root, learned, path) or ""
    n_then = then.count("\n") + (1 if then and not then.endswith("\n") else 0)
    now = lines_at(root, head, cur)
    if now is None or deleted_in:
        return {
            "state": "deleted",
            "why": f"{path} deleted" + (f" in {deleted_in}" if deleted_in else ""),
            "now": None,
        }
    if cur != path:
        return {
            "state": "renamed",
            "why": f"{path} renamed to {cur} in {renamed[-1][0]}",
            "now": cur,
        }
    stat = git(root, "diff", "--numstat", learned, head, "--", path).split()
    deleted = int(stat[1]) if len(stat) >= 2 and stat[1].isdigit() else 0
    if n_then and deleted >= 0.5 * n_then:
        return {
            "state": "rewritten",
            "why": f"{deleted} of the {n_then} lines it had deleted or replaced",
            "now": cur,
        }
    return {
        "state": "kept",
        "why": f"{deleted} of the {n_then} lines it had deleted or replaced",
        "now": cur,
    }


def word_in(text: str | None, name: str) -> bool:
    return (
        bool(text) and re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text or "") is not None
    )


def added_packages(root: Path, sha: str, manifest: str) -> list[str]:
    diff = git(root, "show", "--format=", "-U0", sha, "--", manifest)
    names = []
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            m = re.match(r'^\+\s*"?([A-Za-z][\w.-]*)', line)
            if m:
                names.append(m.group(1))
    return names


TICKED = re.compile(r"`([A-Za-z_][\w]*)(?:\(\))?`")
PATHLIKE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z]{1,6})(?![\w/])")


def symbols_named(message: str) -> list[str]:
    """``name()`` calls and identifiers in backticks that read as code (an underscore, an
    inner capital)."""
    ticked = [
        t for t in TICKED.findall(message) if "_" in t.strip("_") or re.search(r"[a-z][A-Z]", t)
    ]
    return list(dict.fromkeys([*CALL.findall(message), *ticked]))


def names_other_paths(root: Path, sha: str, message: str, path: str) -> bool:
    """Whether the message names a file other than ``path`` that existed at ``sha``."""
    tokens = [t for t in dict.fromkeys(PATHLIKE.findall(message)) if t != path]
    if not tokens:
        return False
    out = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch-check"],
        input="".join(f"{sha}:{t}\n" for t in tokens),
        capture_output=True,
        text=True,
    ).stdout
    return any(line.endswith(" blob") or " blob " in line for line in out.splitlines())


def dependency_case(
    root: Path, head: str, c: dict[str, Any], files: list[list[str]]
) -> dict[str, Any] | None:
    """A commit touching only manifests and lock files that adds a package it names."""
    manifests = [f[-1] for f in files if MANIFESTS.search(f[-1])]
    if not manifests or not all(MANIFESTS.search(f[-1]) or LOCKS.search(f[-1]) for f in files):
        return None
    if any(f[0] not in ("M", "A") for f in files):
        return None
    for manifest in manifests:
        for pkg in dict.fromkeys(added_packages(root, c["sha"], manifest)):
            if not re.search(rf"(?<![\w-]){re.escape(pkg)}(?![\w-])", c["message"], re.I):
                continue
            fate = file_fate(root, c["sha"], head, manifest)
            at_head = git(
                root,
                "grep",
                "-i",
                "-w",
                "-l",
                pkg,
                head,
                "--",
                "*pyproject.toml",
                "*requirements*.txt",
                "*package.json",
                "*setup.cfg",
                ok=(0, 1),
            ).strip()
            why = [f"{pkg} in no manifest at HEAD"] if not at_head else []
            if fate["state"] != "kept":
                why.append(fate["why"])
            return {
                "type": "dependency",
                "cites": {"file": manifest, "dependency": pkg},
                "stale": bool(why),
                "why": "; ".join(why) or f"{pkg} still declared; {fate['why']}",
            }
    return None


def cases_of(
    name: str, root: Path, head: str, per: int, rng: random.Random
) -> list[dict[str, Any]]:
    pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in commits(root, head):
        files = c["files"]
        base = {
            "repo": name,
            "head": head,
            "source": "git",
            "source_id": c["sha"],
            "learned_at": c["sha"],
        }
        subject = c["message"].splitlines()[0] if c["message"] else ""
        case = dependency_case(root, head, c, files) if files else None
        if case is None and len(files) == 1 and files[0][0] in ("M", "A") and len(files[0]) == 2:
            path = files[0][1]
            if names_other_paths(root, c["sha"], c["message"], path):
                continue  # a memory about one file only
            fate = file_fate(root, c["sha"], head, path)
            text_then = lines_at(root, c["sha"], path)
            named = [s for s in symbols_named(c["message"]) if word_in(text_then, s)]
            if not named:
                stale = fate["state"] != "kept"
                case = {"type": "file", "cites": {"file": path}, "stale": stale, "why": fate["why"]}
            else:
                where = lines_at(root, head, fate["now"]) if fate["now"] else None
                gone = [s for s in named if not word_in(where, s)]
                why = [fate["why"]] if fate["state"] != "kept" else []
                for sym in gone:
                    anywhere = git(root, "grep", "-w", "-l", sym, head, "--", ok=(0, 1)).strip()
                    why.append(
                        f"{sym} no longer in {fate['now'] or path}"
                        + (f", in {len(anywhere.splitlines())} other file(s)" if anywhere else "")
                    )
                case = {
                    "type": "symbol",
                    "cites": {"file": path, "symbols": named},
                    "stale": fate["state"] != "kept" or bool(gone),
                    "why": "; ".join(why) or f"{', '.join(named)} still there; {fate['why']}",
                }
        if case is None:
            continue
        label = "stale" if case.pop("stale") else "valid"
        pools.setdefault((case["type"], label), []).append(
            {**base, **case, "subject": subject, "label": label}
        )
    out = []
    for key in sorted(pools):
        pool = pools[key]
        rng.shuffle(pool)
        out += pool[:per]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repo", action="append", required=True, help="NAME=PATH[@REV]")
    ap.add_argument("--per", type=int, default=40)
    ap.add_argument("--seed", type=int, default=24)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    cases: list[dict[str, Any]] = []
    repos = {}
    for spec in a.repo:
        name, _, where = spec.partition("=")
        path, _, rev = where.partition("@")
        head = git(Path(path), "rev-parse", rev or "HEAD").strip()
        repos[name] = head
        found = cases_of(name, Path(path), head, a.per, rng)
        print(name, head[:10], len(found), "cases")
        cases += found
    OUT.write_text(
        json.dumps(
            {
                "about": __doc__,
                "repos": repos,
                "counts": {
                    f"{t}/{lab}": sum(1 for c in cases if c["type"] == t and c["label"] == lab)
                    for t in ("file", "symbol", "dependency")
                    for lab in ("stale", "valid")
                },
                "cases": cases,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
