"""LoCoMo benchmark reader on files of LoCoMo's shape built here (the real file, CC BY-NC, is
read by bench/bench_locomo.py only)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

from storage.sources import chats, locomo
from storage.sources.records import SkipLog


def sample() -> list[dict[str, object]]:
    return [
        {
            "sample_id": "conv-x",
            "qa": [],
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Bob", "dia_id": "D1:1", "text": "Hi Ann!"},
                    {
                        "speaker": "Ann",
                        "dia_id": "D1:2",
                        "text": "Look at my dog.",
                        "img_url": ["https://example.com/dog.jpg"],
                        "blip_caption": "a photo of a dog",
                        "query": "dog",
                    },
                ],
                "session_2_date_time": "10:04 am on 19 June, 2023",
                "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Back again."}],
                "session_3_date_time": "9:00 am on 1 July, 2023",  # no session_3: not a session
            },
        }
    ]


def test_synthetic_file(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(sample()))
    skips = SkipLog()
    one, two = locomo.read(paths=[path], skips=skips)
    assert skips.total == 0
    assert (one.tool, one.external_id, two.external_id) == (
        "locomo",
        "conv-x:session_1",
        "conv-x:session_2",
    )
    assert [(m.idx, m.role, m.text) for m in one.messages] == [
        (0, "assistant", "Bob: Hi Ann!"),
        (1, "user", "Ann: Look at my dog. [shares a photo: a photo of a dog]"),
    ]
    assert one.messages[1].metadata == {
        "dia_id": "D1:2",
        "speaker": "Ann",
        "blip_caption": "a photo of a dog",
        "img_url": ["https://example.com/dog.jpg"],
        "query": "dog",
    }
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc).timestamp()
    assert one.started_at == one.ended_at == one.messages[0].at == when
    assert two.started_at == datetime(2023, 6, 19, 10, 4, tzinfo=timezone.utc).timestamp()
    assert one.title == "Ann & Bob — session 1"
    assert one.workspace is None


def test_dates() -> None:
    assert (
        locomo.parse_date("12:05 am on 1 Jan, 2024")
        == datetime(2024, 1, 1, 0, 5, tzinfo=timezone.utc).timestamp()
    )
    assert (
        locomo.parse_date("12:05 pm on 1 January, 2024")
        == datetime(2024, 1, 1, 12, 5, tzinfo=timezone.utc).timestamp()
    )
    for bad in ("noon on Monday", "1:00 pm on 31 February, 2023", None, 5):
        assert locomo.parse_date(bad) is None


def test_bad_input(tmp_path: Path) -> None:
    data = sample()
    conv = data[0]["conversation"]
    assert isinstance(conv, dict)
    conv["session_1_date_time"] = "sometime"
    conv["session_2"] = [{"speaker": "Ann"}, "junk"]
    conv["session_4"] = "not a list"
    data.append({"sample_id": "broken"})
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    skips = SkipLog()
    (only,) = locomo.read(paths=[path], skips=skips)
    assert only.started_at is None
    assert {r: n for (_, r), n in skips.counts.items()} == {
        "invalid date": 1,
        "invalid turn": 2,
        "no messages": 1,
        "unknown shape": 2,
    }
    (tmp_path / "cut.json").write_text(json.dumps(sample())[:50])
    skips = SkipLog()
    assert list(locomo.read(paths=[tmp_path / "cut.json"], skips=skips)) == []
    assert skips.counts[("locomo", "invalid json")] == 1


def test_read_all_reads_locomo_only_when_named(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(sample()))
    assert chats.sniff(path) == "locomo"
    convs = list(chats.read_all(None, tools=["locomo"], paths=[path], skips=SkipLog()))
    assert len(convs) == 2
    assert "locomo" not in chats.TOOLS


def locomo_shaped(samples: int = 4, sessions: int = 6, turns: int = 9) -> list[dict[str, object]]:
    """A file shaped like locomo10.json: samples of numbered sessions with their date-times,
    turns with ``dia_id`` (some with image captions), a ``qa`` list with evidence."""
    data: list[dict[str, object]] = []
    for s in range(samples):
        conv: dict[str, object] = {"speaker_a": f"A{s}", "speaker_b": f"B{s}"}
        for n in range(1, sessions + 1):
            conv[f"session_{n}_date_time"] = f"{1 + n % 12}:0{n % 6} pm on {n} May, 2023"
            session = []
            for t in range(1, turns + n % 3 + 1):
                turn: dict[str, object] = {
                    "speaker": f"A{s}" if t % 2 else f"B{s}",
                    "dia_id": f"D{n}:{t}",
                    "text": f"Turn {t} of session {n} in sample {s}: topic {t * n}.",
                }
                if t % 5 == 0:
                    turn.update(img_url=["https://example.com/p.jpg"], blip_caption="a photo")
                session.append(turn)
            conv[f"session_{n}"] = session
        qa = [{"question": "What?", "answer": "x", "evidence": ["D1:1"], "category": 1}]
        data.append({"sample_id": f"conv-{s}", "qa": qa, "conversation": conv})
    return data


def test_a_locomo_shaped_file_is_read_whole_and_untouched(tmp_path: Path) -> None:
    raw = locomo_shaped()
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    want_sessions = 0
    want_turns = 0
    for s in raw:
        conversation = s["conversation"]
        assert isinstance(conversation, dict)
        for key, value in conversation.items():
            if re.fullmatch(r"session_\d+", key):
                want_sessions += 1
                want_turns += len(value)
    mtime = path.stat().st_mtime_ns
    skips = SkipLog()
    convs = list(locomo.read(paths=[path], skips=skips))
    assert skips.total == 0
    assert len({c.metadata["sample_id"] for c in convs}) == len(raw)
    assert len(convs) == want_sessions
    assert sum(len(c.messages) for c in convs) == want_turns
    assert len({c.external_id for c in convs}) == len(convs)
    assert all(c.started_at is not None for c in convs)
    assert all(m.metadata["dia_id"] for c in convs for m in c.messages)
    assert path.stat().st_mtime_ns == mtime
