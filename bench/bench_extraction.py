"""Extraction precision and recall on a hand-labelled sample of conversations.

    python -m bench.bench_extraction [--verbose]

``bench/data/extraction_labelled.json`` lists, per conversation, the memories a careful reader
would extract (a kind and a phrase the text must contain). Every extracted memory that matches
no expectation is a false positive; every expectation that nothing matches is a miss.
Candidates below the confidence floor are dropped before matching, as ingestion drops them.
The rules were tuned on the ``tuning`` split; the ``held-out`` split was written afterwards and
never tuned on, so its numbers are the ones to trust.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import machine, machine_line, table, write_result

DATA = Path(__file__).resolve().parent / "data" / "extraction_labelled.json"


def load(path: Path = DATA) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["conversations"]


def to_conversation(item: dict[str, Any]) -> Any:
    from storage.sources.records import ChatMessage, Conversation

    return Conversation(
        tool="claude",
        external_id=item["id"],
        messages=tuple(
            ChatMessage(i, role, text, at=1_700_000_000.0 + i)
            for i, (role, text) in enumerate(item["messages"])
        ),
    )


def evaluate(items: list[dict[str, Any]], client: Any = None) -> dict[str, Any]:
    """Per conversation: what was extracted, what matched; overall precision and recall.
    ``client``: a configured LLM whose validated proposals are merged in (as ingestion does)."""
    from predictive.conversations import extract
    from predictive.llm_extract import extract_with

    rows = []
    extracted = correct = expected = found = dropped = 0
    for item in items:
        conv = to_conversation(item)
        result = extract(conv)
        extract_with(client, conv, result)
        dropped += len(result.dropped)
        want = item["expect"]
        hit = [False] * len(want)
        for c in result.kept:
            extracted += 1
            ok = False
            for i, w in enumerate(want):
                if (
                    c.memory.kind.value == w["kind"]
                    and w["contains"].lower() in c.memory.text.lower()
                ):
                    hit[i] = ok = True
            correct += ok
            rows.append(
                (item["id"], c.memory.kind.value, round(c.confidence, 2), ok, c.memory.text)
            )
        expected += len(want)
        found += sum(hit)
        for w, h in zip(want, hit):
            if not h:
                rows.append((item["id"], w["kind"], None, "missed", w["contains"]))
    return {
        "conversations": len(items),
        "extracted": extracted,
        "correct": correct,
        "expected": expected,
        "found": found,
        "dropped_low_confidence": dropped,
        "precision": round(correct / extracted, 3) if extracted else None,
        "recall": round(found / expected, 3) if expected else None,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--verbose", "-v", action="store_true", help="list every extracted item")
    p.add_argument(
        "--devset-workspace",
        type=Path,
        help="also score the dev set's conversations (a workspace built by bench_devset)",
    )
    a = p.parse_args(argv)
    items = load()
    print(machine_line())
    from predictive.llm import client_for
    from predictive.llm_config import config_from_env

    client = client_for(None, config_from_env()[0])  # LIVING_MEMORY_LLM_*: merged like ingest
    if client is not None:
        print(f"with the LLM {client.config.model} at {client.config.url}")
    results: dict[str, Any] = {}
    for split in ("tuning", "held-out", "all"):
        chosen = [i for i in items if split == "all" or i.get("split") == split]
        res = results[split] = evaluate(chosen, client)
        if a.verbose and split != "all":
            print(f"\n{split}:")
            print(
                table(
                    ["conversation", "kind", "conf", "right", "text"],
                    [
                        (r[0], r[1], r[2], r[3], " ".join(str(r[4]).split())[:70])
                        for r in res["rows"]
                    ],
                )
            )
    print()
    for split, res in results.items():
        print(
            f"{split:<9} {res['conversations']:>3} conversations: extracted {res['extracted']} "
            f"({res['dropped_low_confidence']} dropped, low confidence), {res['correct']} right "
            f"→ precision {res['precision']}; found {res['found']} of {res['expected']} "
            f"expected → recall {res['recall']}"
        )
    if a.devset_workspace is not None:
        dev = results["devset"] = evaluate_devset(a.devset_workspace)
        if a.verbose:
            for r in dev["rows"]:
                print(f"  {r[2]!s:<5} {r[1]:<10} {' '.join(r[3].split())[:90]}")
        print(
            f"devset    {dev['conversations']:>3} conversations: kept {dev['kept']}, "
            f"{dev['right']} right, {dev['wrong']} wrong, {dev['unlabelled']} unlabelled "
            f"→ precision {dev['precision']}; found {dev['found']} of {dev['expected']} expected "
            f"in the sample → recall {dev['recall']}"
        )
    if client is not None:
        results["llm"] = client.stats()
    write_result("extraction-llm" if client else "extraction", {"machine": machine(), **results})


DEVSET_LABELS = Path(__file__).resolve().parent / "data" / "devset_extraction_labels.json"


def evaluate_devset(workspace: Path, labels_path: Path = DEVSET_LABELS) -> dict[str, Any]:
    """Precision over every item kept from the dev set's conversations (hand labels), recall
    over the knowledge expected in a sample of them."""
    from predictive.conversations import extract
    from storage.sources.records import SkipLog
    from storage.sources.specstory import read

    labels = json.loads(labels_path.read_text(encoding="utf-8"))
    kept_labels: dict[str, bool] = labels["kept"]
    convs = list(read(workspace, paths=None, all_workspaces=True, skips=SkipLog()))
    right = wrong = unlabelled = 0
    rows = []
    kept_by_session: dict[str, list[Any]] = {}
    for conv in convs:
        for c in extract(conv).kept:
            kept_by_session.setdefault(conv.external_id, []).append(c)
            text = c.memory.text
            label = next(
                (
                    v
                    for k, v in kept_labels.items()
                    if k.split("|", 1)[0] == c.memory.source_id
                    and text.startswith(k.split("|", 1)[1])
                ),
                None,
            )
            if label is None:
                unlabelled += 1
            elif label:
                right += 1
            else:
                wrong += 1
            rows.append((c.memory.source_id, c.memory.kind.value, label, text))
    found = 0
    for e in labels["expected"]:
        found += any(
            c.memory.kind.value in e["kinds"] and e["contains"].lower() in c.memory.text.lower()
            for c in kept_by_session.get(e["session"], [])
        )
    judged = right + wrong
    return {
        "conversations": len(convs),
        "kept": len(rows),
        "right": right,
        "wrong": wrong,
        "unlabelled": unlabelled,
        "precision": round(right / judged, 3) if judged else None,
        "expected": len(labels["expected"]),
        "found": found,
        "recall": round(found / len(labels["expected"]), 3),
        "rows": rows,
    }


if __name__ == "__main__":
    main()
