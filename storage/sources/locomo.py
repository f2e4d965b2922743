"""The LoCoMo benchmark file (``locomo10.json``): one conversation per session of each sample.

The file is a list of samples ``{"sample_id", "conversation": {"speaker_a", "speaker_b",
"session_N": [turn…], "session_N_date_time": "1:56 pm on 8 May, 2023"}, …}``; a turn is
``{"speaker", "dia_id", "text"}`` plus, for shared photos, ``img_url`` / ``blip_caption`` /
``query``. ``speaker_a`` (else the first speaker of the sample) is the ``user``, the other
``assistant``; each text starts with ``"<Speaker>: "`` and a shared photo adds
``[shares a photo: <caption>]``. The session date (read as UTC, its minute being all the file
gives) is the time of the session and of each of its turns. ``session_N_date_time`` entries
without a ``session_N`` list are sessions that do not exist and are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from storage.sources.chats import Scope, as_list, parse_json, read_text
from storage.sources.records import ChatMessage, Conversation, SkipLog

TOOL: Final = "locomo"
MAX_BENCHMARK_BYTES = 50_000_000
"""The benchmark file is one JSON document of about 3 MB; this bounds what is loaded."""

_SESSION = re.compile(r"^session_(\d+)$")
_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)


def default_locations(home: Path | None = None, platform: str | None = None) -> list[Path]:
    """None: benchmark files are always named explicitly."""
    return []


def parse_date(value: Any) -> float | None:
    """Epoch seconds (UTC) from ``"1:56 pm on 8 May, 2023"``; None when it does not parse."""
    if not isinstance(value, str):
        return None
    m = _DATE.match(value)
    if not m:
        return None
    hour, minute, half, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    for fmt in ("%B", "%b"):
        try:
            month_no = datetime.strptime(month, fmt).month
            break
        except ValueError:
            continue
    else:
        return None
    try:
        dt = datetime(int(year), month_no, int(day), h, int(minute), tzinfo=timezone.utc)
    except ValueError:
        return None
    return dt.timestamp()


def read(
    root: Path | None = None,
    *,
    paths: Sequence[Path] | None = None,
    home: Path | None = None,
    platform: str | None = None,
    all_workspaces: bool = False,
    since: float | None = None,
    skips: SkipLog,
) -> Iterator[Conversation]:
    """Sessions of the LoCoMo files in ``paths`` (``root`` and workspaces do not apply)."""
    scope = Scope(TOOL, None, True, since, skips)
    for path in paths or default_locations(home, platform):
        yield from (c for c in read_file(Path(path), skips=skips) if scope.keeps(c))


def read_file(path: Path, *, skips: SkipLog) -> Iterator[Conversation]:
    """Every session of every sample of one LoCoMo JSON file, in file order."""
    where = str(path)
    text = read_text(path, TOOL, skips, limit=MAX_BENCHMARK_BYTES)
    if text is None:
        return
    data = parse_json(text, TOOL, where, skips)
    if not isinstance(data, list):
        if data is not None:
            skips.skip(TOOL, where, "unknown shape")
        return
    for n, sample in enumerate(data):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict):
            skips.skip(TOOL, f"{where}#{n}", "unknown shape")
            continue
        sample_id = str(sample.get("sample_id") or n)
        yield from _sessions(sample_id, conv, where, skips)


def _sessions(
    sample_id: str, conv: dict[str, Any], where: str, skips: SkipLog
) -> Iterator[Conversation]:
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)))
    first = conv.get("speaker_a")
    if not isinstance(first, str):
        first = next(
            (
                t.get("speaker")
                for k in numbers
                for t in as_list(conv.get(f"session_{k}"))
                if isinstance(t, dict) and isinstance(t.get("speaker"), str)
            ),
            None,
        )
    names = [s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str)]
    for k in numbers:
        turns = conv.get(f"session_{k}")
        key = f"{sample_id}:session_{k}"
        if not isinstance(turns, list):
            skips.skip(TOOL, f"{where}#{key}", "unknown shape")
            continue
        date = conv.get(f"session_{k}_date_time")
        at = parse_date(date)
        if date is not None and at is None:
            skips.skip(TOOL, f"{where}#{key}", "invalid date")
        messages: list[ChatMessage] = []
        for turn in turns:
            if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
                skips.skip(TOOL, f"{where}#{key}", "invalid turn")
                continue
            speaker = turn.get("speaker") if isinstance(turn.get("speaker"), str) else "?"
            text = f"{speaker}: {turn['text']}"
            meta: dict[str, Any] = {"dia_id": turn.get("dia_id"), "speaker": speaker}
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption:
                text += f" [shares a photo: {caption}]"
                meta["blip_caption"] = caption
            for extra in ("img_url", "query"):
                if turn.get(extra) is not None:
                    meta[extra] = turn[extra]
            messages.append(
                ChatMessage(
                    idx=len(messages),
                    role="user" if speaker == first else "assistant",
                    text=text,
                    at=at,
                    metadata=meta,
                )
            )
        if not messages:
            skips.skip(TOOL, f"{where}#{key}", "no messages")
            continue
        yield Conversation(
            tool=TOOL,
            external_id=key,
            messages=tuple(messages),
            title=f"{' & '.join(names) or sample_id} — session {k}",
            started_at=at,
            ended_at=at,
            origin=where,
            metadata={"sample_id": sample_id, "session": k, "date_time": date},
        )
