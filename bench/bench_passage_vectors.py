"""What conversation passage vectors earn: a dev set's search and prefetch with them, without
them (keyword + memory and summary vectors), and with vectors of each passage's first tokens.

    python -m bench.bench_passage_vectors [--set twat-search] [--tokens 128 ...]

The set is ingested as ``bench_devset`` ingests it (real model, its cached store and vectors).
Each variant is a copy of that store in which only the passage vectors differ:

- ``all``: as ingested (every passage worth a vector has one; a message has its first
  passage's);
- ``none``: no passage or message vector (their rows kept, marked learned: keyword only); the
  memories' and the conversation summaries' vectors stay;
- ``first N``: each passage's vector made from its first N tokens only (``--tokens N``; the
  model reads at most 256).

Each copy is asked the set's questions (search R@k, through ``living-memory search``'s path)
and opened at its prefetch files (prefetch recall at 5 and 10 items), scored by the set's own
``score.py``. Beside each: what its vectors cost the model, in passages and tokens (and the
sum of squared lengths, which attention grows with).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_devset import DEVSETS, ask, ingest, prefetch, score, workspace
from bench.common import CACHE_DIR, log, machine_line, table, write_result


def _copy_store(store_dir: Path, to: Path) -> Path:
    to.mkdir(parents=True)
    for f in store_dir.iterdir():
        if f.name.startswith("memory.db"):
            shutil.copy2(f, to / f.name)
    return to / "memory.db"


def _cost(texts: list[str], tokens: int) -> dict[str, int]:
    from tokenizers import Tokenizer

    from storage.embeddings import default_model_files

    tok = Tokenizer.from_file(str(default_model_files().tokenizer))
    tok.enable_truncation(tokens)
    tok.no_padding()
    lens = np.asarray([len(e.ids) for e in tok.encode_batch(texts)] or [0], dtype=np.int64)
    return {
        "passages": len(texts),
        "tokens": int(lens.sum()),
        "tokens_squared_millions": round(float((lens.astype(float) ** 2).sum()) / 1e6, 1),
    }


def _evaluate(
    label: str, db: Path, ws: Path, devset: Path, k: int, embedder: Any, out: Path
) -> dict[str, Any]:
    from storage import MemoryStore

    questions = [json.loads(x) for x in (devset / "questions.jsonl").read_text().splitlines()]
    cases = [json.loads(x) for x in (devset / "prefetch.jsonl").read_text().splitlines()]
    store = MemoryStore(db, embedder=embedder)
    try:
        searched, _ = ask(store, questions, k)
        fetched, _ = prefetch(store, ws, cases)
    finally:
        store.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"search-{label}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in searched))
    (out / f"prefetch-{label}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in fetched))
    _, s = score(devset, ["--search", str(out / f"search-{label}.jsonl")])
    _, p5 = score(devset, ["--prefetch", str(out / f"prefetch-{label}.jsonl"), "--budget", "5"])
    _, p10 = score(devset, ["--prefetch", str(out / f"prefetch-{label}.jsonl"), "--budget", "10"])
    row = {
        "variant": label,
        "R@1": s["overall"].get("R@1"),
        "R@5": s["overall"].get("R@5"),
        "R@10": s["overall"].get("R@10"),
        "prefetch@5": p5["overall"].get("recall(macro)"),
        "prefetch@10": p10["overall"].get("recall(macro)"),
        "leakage": p10["overall"].get("leakage"),
    }
    log(f"{label}: {row}")
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", default="twat-search")
    p.add_argument("--tokens", type=int, action="append", default=[])
    p.add_argument("--k", type=int, default=10)
    a = p.parse_args(argv)

    import apsw

    from bench.bench_devset import CachedEmbedder
    from storage.embeddings import OnnxEmbedder

    devset = DEVSETS / a.set
    ws = workspace(devset, rebuild=False)
    store, _ = ingest(ws, a.set, "real", rebuild=False)
    embedder = store.embedder
    store.close()
    source = CACHE_DIR / f"devset-store-{a.set}-real"
    work = Path(tempfile.mkdtemp(prefix="passage-vectors-", dir=CACHE_DIR))
    rows: list[dict[str, Any]] = []
    try:
        db = _copy_store(source, work / "all")
        conn = apsw.Connection(str(db))
        texts = [
            t for (t,) in conn.execute("SELECT text FROM passages WHERE embedding IS NOT NULL")
        ]
        conn.close()
        rows.append({**_evaluate("all", db, ws, devset, a.k, embedder, work), **_cost(texts, 256)})

        db = _copy_store(source, work / "none")
        conn = apsw.Connection(str(db))
        with conn:
            conn.execute("UPDATE passages SET embedding = NULL")
            conn.execute("UPDATE messages SET embedding = NULL")
        conn.close()
        none = _evaluate("none", db, ws, devset, a.k, embedder, work)
        rows.append({**none, "passages": 0, "tokens": 0, "tokens_squared_millions": 0.0})

        for n in a.tokens:
            short = CachedEmbedder(_Shorter(OnnxEmbedder(max_length=n), n))
            db = _copy_store(source, work / f"first{n}")
            conn = apsw.Connection(str(db))
            found = list(conn.execute("SELECT id, text FROM passages WHERE embedding IS NOT NULL"))
            log(f"first {n} tokens: embedding {len(found)} passages")
            for start in range(0, len(found), 256):
                part = found[start : start + 256]
                vecs = short.embed([t for _, t in part]).astype("<f4")
                with conn:
                    conn.executemany(
                        "UPDATE passages SET embedding = ? WHERE id = ?",
                        [(v.tobytes(), pid) for (pid, _), v in zip(part, vecs)],
                    )
            with conn:
                conn.execute(
                    "UPDATE messages SET embedding = (SELECT p.embedding FROM passages p "
                    "WHERE p.message_id = messages.id AND p.ord = 0) WHERE embedding IS NOT NULL"
                )
            conn.close()
            row = _evaluate(f"first {n}", db, ws, devset, a.k, embedder, work)
            rows.append({**row, **_cost([t for _, t in found], n)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(machine_line())
    print(
        table(
            [
                "passage vectors",
                "R@1",
                "R@5",
                "R@10",
                "prefetch@5",
                "prefetch@10",
                "passages",
                "tokens embedded",
            ],
            [
                (
                    r["variant"],
                    r["R@1"],
                    r["R@5"],
                    r["R@10"],
                    r["prefetch@5"],
                    r["prefetch@10"],
                    r["passages"],
                    f"{r['tokens']:,}",
                )
                for r in rows
            ],
        )
    )
    write_result(f"passage-vectors-{a.set}", {"set": a.set, "rows": rows})


class _Shorter:
    """The model reading a text's first ``n`` tokens, under an identity of its own (its
    vectors are cached apart from the full model's)."""

    def __init__(self, inner: Any, n: int) -> None:
        self.inner = inner
        self.n = n

    @property
    def model_id(self) -> str:
        return f"{self.inner.model_id}-first{self.n}"

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.inner.embed(texts))


if __name__ == "__main__":
    main()
