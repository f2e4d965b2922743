"""Extraction with a configured LLM: items proposed for conversation messages, kept only when
their quote occurs in the message they cite and their text says what the message says.

The local rules (:mod:`predictive.conversations`) always run; what the model adds is merged
in, never replacing them, and an item the rules found already is not added twice. Messages
are pre-filtered (prose of user and assistant turns, pastes and logs left out) and sent in a
few windows per conversation, concurrently under the client's limit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from predictive.conversations import Extraction, _memory, _own_words, _prose
from predictive.extract import Candidate
from predictive.faithful import unsupported, words
from predictive.llm import LlmClient, quoted
from storage import Kind
from storage.sources.records import ChatMessage, Conversation

PURPOSE = "extraction"
KINDS = ("decision", "convention", "solution", "workflow", "preference")
WINDOW_CHARS = 6_000
MESSAGE_CHARS = 1_500
MAX_WINDOWS = 6
MIN_QUOTE_CHARS = 12
MAX_UNSUPPORTED_SHARE = 0.3
"""At most this share of an item's content words may be missing from its message."""
CONFIDENCE = 0.65
SAME_ITEM = 0.6
"""Word overlap (Jaccard) from which a proposed item repeats one the rules found."""

SCHEMA = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "required": ["kind", "text", "quote", "message"],
                "properties": {
                    "kind": {"type": "string", "enum": list(KINDS)},
                    "text": {"type": "string", "minLength": 10, "maxLength": 400},
                    "quote": {"type": "string", "minLength": MIN_QUOTE_CHARS, "maxLength": 600},
                    "message": {"type": "integer"},
                },
            },
        }
    },
}
SYSTEM = (
    "You read part of a conversation between a developer and an AI coding assistant and list "
    "what a teammate should remember: decisions taken (with their reason), conventions or "
    "rules the developer wants followed, solutions (problem and fix), workflows (commands in "
    "order) and preferences. Only what the messages state; nothing you infer. For each item "
    "give its kind, a one-sentence text, the message number it comes from, and a quote copied "
    "exactly from that message. No item is fine. "
    'Answer as JSON: {"items": [{"kind": "...", "text": "...", "quote": "...", "message": 0}]}.'
)


def _windows(msgs: Sequence[ChatMessage]) -> list[list[tuple[ChatMessage, str]]]:
    out: list[list[tuple[ChatMessage, str]]] = []
    current: list[tuple[ChatMessage, str]] = []
    size = 0
    for m in msgs:
        text = _prose(_own_words(m) if m.role == "user" else m.text)
        text = "\n".join(line for line in text.split("\n") if line.strip())[:MESSAGE_CHARS]
        if len(text) < 40:
            continue
        if current and size + len(text) > WINDOW_CHARS:
            out.append(current)
            current, size = [], 0
        current.append((m, text))
        size += len(text)
    if current:
        out.append(current)
    return out[:MAX_WINDOWS]


def _overlap(a: str, b: str) -> float:
    wa, wb = set(words(a)), set(words(b))
    return len(wa & wb) / max(1, len(wa | wb))


def propose(client: LlmClient, conv: Conversation) -> list[Candidate]:
    """The model's validated candidates for ``conv`` (none when it fails or is not used)."""
    if not client.uses(PURPOSE):
        return []
    msgs = [m for m in conv.messages if m.role in ("user", "assistant") and m.text.strip()]
    windows = _windows(msgs)

    def ask(window: list[tuple[ChatMessage, str]]) -> list[Candidate]:
        shown = {m.idx: (m, text) for m, text in window}
        body = "\n\n".join(f"[message {m.idx}, {m.role}]\n{text}" for m, text in window)
        answer: Any = client.ask_json(PURPOSE, SYSTEM, body, SCHEMA)
        if answer is None:
            return []
        out = []
        for item in answer["items"]:
            found = shown.get(item["message"])
            if found is None:
                client.discard(PURPOSE, "cites a message it was not shown")
                continue
            m, text = found
            if not quoted(item["quote"], text):
                client.discard(PURPOSE, "quote not in the message")
                continue
            extra = unsupported(item["text"], m.text)
            if len(extra) > MAX_UNSUPPORTED_SHARE * max(1, len(words(item["text"]))):
                client.discard(PURPOSE, f"unsupported words: {', '.join(extra[:4])}")
                continue
            digest = hashlib.sha1(item["text"].encode()).hexdigest()[:8]
            c = _memory(conv, Kind(item["kind"]), item["text"], m.idx, "llm", CONFIDENCE, [m])
            c.memory.source_id = f"{c.memory.source_id}-{item['kind']}-{digest}"
            c.memory.metadata["quote"] = " ".join(item["quote"].split())
            out.append(c)
        return out

    return [c for found in client.map(ask, windows) for c in found]


def merge(extraction: Extraction, proposed: Sequence[Candidate]) -> int:
    """Add the proposed candidates the rules did not find already; returns how many."""
    added = 0
    for c in proposed:
        repeats = any(
            (k.message_idx == c.message_idx and k.memory.kind == c.memory.kind)
            or _overlap(k.memory.text, c.memory.text) >= SAME_ITEM
            for k in extraction.kept
        )
        if not repeats:
            extraction.add(c)
            added += 1
    return added


def extract_with(client: LlmClient | None, conv: Conversation, extraction: Extraction) -> int:
    """Merge the model's proposals for ``conv`` into ``extraction`` (no client: nothing)."""
    if client is None:
        return 0
    return merge(extraction, propose(client, conv))
