"""Builds the labelled staleness set (``bench/data/staleness_labels.json``) from real histories.

Not part of the product and sharing none of its code: each label is read off the repository's
history with plain ``git`` commands, one case at a time, so the product's batched checker
(predictive.staleness) is measured against an independent reading.

Cases are commits that say something about exactly one file (one file added or modified):

- **file**: the commit's file. *stale* when, between the commit and the repository's HEAD
  (``git rev-list L..HEAD``), it was deleted (and not brought back), renamed (``git log -M``
  over that range, renames chained), or rewritten (``git diff --numstat L HEAD``: at least half
  of the lines it had at ``L`` deleted or replaced); *valid* otherwise (a look-alike: the same
  kind of memory whose file stayed).
- **symbol**: such a commit whose message names ``name()`` where ``name`` is a whole word of
  the file at ``L``. *stale* when the file is stale as above or ``name`` is no longer a word
  of the file where it is now (removed, or moved to another file); *valid* otherwise.
- **dependency**: a commit touching only manifests and lock files whose diff adds a line
  naming a package that its message names. *stale* when no manifest at HEAD has a line
  naming it (``git grep -w``) or the manifest is stale as a file; *valid* otherwise.

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
        if len(files) == 1 and files[0][0] in ("M", "A") and len(files[0]) == 2:
            path = files[0][1]
            fate = file_fate(root, c["sha"], head, path)
            stale = fate["state"] != "kept"
            case = {**base, "type": "file", "subject": subject, "cites": {"file": path}}
            pools.setdefault(("file", "stale" if stale else "valid"), []).append(
                {**case, "label": "stale" if stale else "valid", "why": fate["why"]}
            )
            text_then = lines_at(root, c["sha"], path)
            for sym in dict.fromkeys(CALL.findall(c["message"])):
                if not word_in(text_then, sym):
                    continue
                where = lines_at(root, head, fate["now"]) if fate["now"] else None
                gone = not word_in(where, sym)
                why = fate["why"] if stale else ""
                if gone:
                    anywhere = git(root, "grep", "-w", "-l", sym, head, "--", ok=(0, 1)).strip()
                    others = len(anywhere.splitlines())
                    why = (why + "; " if why else "") + (
                        f"{sym}() no longer in {fate['now'] or path}, in {others} other file(s)"
                        if anywhere
                        else f"{sym}() no longer in any tracked file"
                    )
                label = "stale" if stale or gone else "valid"
                pools.setdefault(("symbol", label), []).append(
                    {
                        **base,
                        "type": "symbol",
                        "subject": subject,
                        "cites": {"file": path, "symbol": sym},
                        "label": label,
                        "why": why or f"{sym}() still in {fate['now']}; {fate['why']}",
                    }
                )
        manifests = [f[-1] for f in files if MANIFESTS.search(f[-1])]
        if manifests and all(MANIFESTS.search(f[-1]) or LOCKS.search(f[-1]) for f in files):
            if any(f[0] not in ("M", "A") for f in files):
                continue
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
                    stale = not at_head or fate["state"] != "kept"
                    why = (
                        "; ".join(
                            x
                            for x in (
                                "" if at_head else f"{pkg} in no manifest at HEAD",
                                fate["why"] if fate["state"] != "kept" else "",
                            )
                            if x
                        )
                        or f"{pkg} still declared; {fate['why']}"
                    )
                    pools.setdefault(("dependency", "stale" if stale else "valid"), []).append(
                        {
                            **base,
                            "type": "dependency",
                            "subject": subject,
                            "cites": {"file": manifest, "dependency": pkg},
                            "label": "stale" if stale else "valid",
                            "why": why,
                        }
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
