"""What the embedding model reads of a dev set's conversation passages: every passage worth a
vector (as before) against every one but those that are nothing but what a program printed
(``passages.model_text``), each distinct text once.

    python -m bench.bench_model_text [--set twat-search ...]

Reads the store ``bench_devset`` built for the set (``bench/.cache/devset-store-<set>-real``,
or ``-hashing``: only the passages' texts are read) and counts, with the model's tokenizer cut
at the 256 tokens it reads: passages given a vector and the tokens the model runs over.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.common import CACHE_DIR, log, machine_line, table, write_result

BATCH = 64  # rows an embedding run reads at a time (SessionStore.embed_pending's default)


def measure(name: str) -> dict[str, Any]:
    import apsw
    from tokenizers import Tokenizer

    from storage import passages
    from storage.embeddings import default_model_files

    db = next(
        (
            CACHE_DIR / f"devset-store-{name}-{e}" / "memory.db"
            for e in ("real", "hashing")
            if (CACHE_DIR / f"devset-store-{name}-{e}" / "memory.db").is_file()
        ),
        None,
    )
    if db is None:
        raise SystemExit(f"no store for {name}: run python -m bench.bench_devset --set {name}")
    tok = Tokenizer.from_file(str(default_model_files().tokenizer))
    tok.enable_truncation(256)
    tok.no_padding()

    def tokens(texts: list[str]) -> int:
        return sum(len(e.ids) for e in tok.encode_batch(texts)) if texts else 0

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = list(conn.execute("SELECT id, text, message_id, start FROM passages ORDER BY id"))
        whole = [t for _, t, _, _ in rows if passages.worth_a_vector(t)]
        read: dict[int, str] = {}
        for i in range(0, len(rows), BATCH):
            read.update(passages.model_texts(conn, rows[i : i + BATCH]))
    finally:
        conn.close()
    kept = [t for t in read.values() if t]
    distinct = list(dict.fromkeys(kept))
    row = {
        "set": name,
        "passages": len(rows),
        "before_vectors": len(whole),
        "before_tokens": tokens(whole),
        "after_vectors": len(kept),
        "after_texts": len(distinct),
        "after_tokens": tokens(distinct),
    }
    log(f"{name}: {row}")
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", action="append", default=[])
    a = p.parse_args(argv)
    rows = [measure(n) for n in (a.set or ["twat-search", "gryag"])]
    print(machine_line())
    print(
        table(
            [
                "set",
                "passages",
                "with a vector: before",
                "tokens read: before",
                "with a vector: after",
                "texts embedded: after",
                "tokens read: after",
            ],
            [
                (
                    r["set"],
                    r["passages"],
                    r["before_vectors"],
                    f"{r['before_tokens']:,}",
                    r["after_vectors"],
                    r["after_texts"],
                    f"{r['after_tokens']:,} ({r['after_tokens'] / r['before_tokens']:.0%})",
                )
                for r in rows
            ],
        )
    )
    write_result("model-text", {"rows": rows})


if __name__ == "__main__":
    main()
