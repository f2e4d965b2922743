"""Secrets in the dev sets' chats: after ``living-memory ingest`` of each set, is any key-shaped
string of its sources stored raw anywhere in the data folder (database, WAL, vector index)?

    python -m bench.bench_secrets_devset [--set NAME ...]

For each set the workspace is built (as bench_devset does), ingested into a fresh data folder
by the CLI (hashing embedder), and then:

- ``sourceSecrets``: the strings of the sources that redaction masks (tokens of 12+ characters
  with a letter and a digit that are gone from the redacted text), and how many of them are on
  disk raw, in lowercase, or cut to their first two thirds (``storedRaw``);
- ``keyShapedInStore``: key-shaped strings (known prefixes: tvly-, sk-, AIza, ghp_ …) found in
  the bytes of the data folder at all, whatever their source.

Writes bench/results/secrets-devset.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.bench_devset import CACHE_DIR, DEVSETS, workspace
from storage.redact import redact

RESULTS = Path(__file__).resolve().parent / "results" / "secrets-devset.json"
TOKEN = re.compile(r"[A-Za-z0-9_\-.+/=%~:]{12,}")
KEY_SHAPED = re.compile(
    rb"(?<![A-Za-z0-9_\-.])(?:tvly-|sk-|sk_live_|AIza|ghp_|gho_|github_pat_|glpat-|xox[abpre]-|xapp-|AKIA|hf_|gsk_|"
    rb"pplx-|GOCSPX-|lin_api_|HRKU-|npm_|pypi-AgE|dop_v1_)[A-Za-z0-9_\-]{16,}"
)
TEXT_SUFFIXES = {".md", ".mdc", ".json", ".jsonl", ".txt", ".yml", ".yaml", ".toml", ".env"}


def source_secrets(ws: Path) -> set[str]:
    """The strings of the workspace's text files that redaction masks."""
    found: set[str] = set()
    for p in ws.rglob("*"):
        if ".git" in p.parts or not p.is_file() or p.suffix not in TEXT_SUFFIXES:
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        kept = set(TOKEN.findall(redact(text)))
        for t in set(TOKEN.findall(text)) - kept:
            if re.search(r"[A-Za-z]", t) and re.search(r"\d", t) and "[REDACTED" not in t:
                found.add(t)
    return found


def traces(secret: str) -> list[bytes]:
    cut = secret[: max(12, len(secret) * 2 // 3)]
    return [t.encode() for t in {secret, secret.lower(), cut}]


def run_set(devset: Path) -> dict[str, Any]:
    ws = workspace(devset, rebuild=False)
    data = CACHE_DIR / f"secrets-data-{devset.name}"
    shutil.rmtree(data, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVING_MEMORY")}
    env.update(
        LIVING_MEMORY_DATA_DIR=str(data),
        LIVING_MEMORY_EMBEDDER="hashing",
        HOME=str(data / "home"),  # only the workspace's own chats (SpecStory) are read
    )
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "server", "ingest", "--json"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - t0
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    blobs = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    secrets = source_secrets(ws)
    raw = sorted(s for s in secrets if any(t in b for t in traces(s) for b in blobs.values()))
    shaped = sorted({m.decode() for b in blobs.values() for m in KEY_SHAPED.findall(b)})
    return {
        "set": devset.name,
        "ingestSeconds": round(seconds, 1),
        "memories": summary["added"],
        "sessions": summary["sources"].get("chats", {}).get("sessions"),
        "filesScanned": len(blobs),
        "sourceSecrets": len(secrets),
        "storedRaw": len(raw),
        "storedRawExamples": [s[:8] + "…" for s in raw[:10]],
        "keyShapedInStore": len(shaped),
        "keyShapedExamples": [s[:10] + "…" for s in shaped[:10]],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", help="a dev set's name (default: all)")
    a = ap.parse_args(argv)
    sets = [d for d in sorted(DEVSETS.iterdir()) if d.is_dir() and (d / "extract.sh").exists()]
    if a.set:
        sets = [d for d in sets if d.name in a.set]
    load = os.getloadavg()
    results = [run_set(d) for d in sets]
    out = {
        "machine": {"cpus": os.cpu_count(), "load": [round(x, 2) for x in load]},
        "sets": results,
    }
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    for r in results:
        print(
            f"{r['set']}: {r['sourceSecrets']} secret-shaped strings in the sources, "
            f"{r['storedRaw']} stored raw; {r['keyShapedInStore']} key-shaped strings in the "
            f"data folder ({r['memories']} memories, {r['sessions']} sessions, "
            f"{r['ingestSeconds']} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
