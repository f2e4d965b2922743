"""Exact o200k counting and token-safe truncation."""

from __future__ import annotations

import threading

import bpe_openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from predictive import tokens
from predictive.tokens import ENCODING, count_tokens, truncate_to_tokens

ENC = bpe_openai.get_encoding("o200k_base")

# Pieces that stress pre-tokenization: words, cases, digits, CJK, emoji, code, whitespace runs.
PIECES = st.sampled_from(
    [
        "hello",
        "World",
        "HTTPServer",
        "don't",
        "12345",
        "3.14",
        "日本語",
        "テキスト",
        "中文",
        "😀",
        "👩‍💻",
        "é",
        "Ünïcödé",
        "def f(x):",
        "return x+1;",
        "{ }",
        "->",
        "→",
        "…",
        "<|endoftext|>",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\t",
        "\r\n",
        ".",
        ",",
        "!",
        "/",
        "'s",
        "—",
    ]
)
TEXTS = st.lists(PIECES, max_size=120).map("".join) | st.text(max_size=400)


def exact(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def test_encoding_name() -> None:
    assert ENCODING == "o200k_base"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 1),
        ("hello world", 2),
        ("Hello, world!", 4),  # Hello / , / ␣world / !
        ("…", 1),
        ("\n\n", 1),
        ("PostgreSQL", 3),
    ],
)
def test_known_counts(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_same_ids_as_the_library_for_a_known_string() -> None:
    assert ENC.encode_ordinary("Hello, world!") == [13225, 11, 2375, 0]


@pytest.mark.parametrize(
    "text",
    [
        "The team decided to use PostgreSQL because of its JSON support.",
        "def retry(fn, attempts=3):\n    for i in range(attempts):\n        return fn()\n",
        "日本語のテキストはスペースがありません。",
        "emoji 😀👩‍💻🎉 and accents é ü ñ",
        "   leading and trailing   \n\n",
    ],
)
def test_counts_equal_the_library(text: str) -> None:
    assert count_tokens(text) == exact(text)


def test_special_token_strings_count_as_plain_text() -> None:
    assert count_tokens("<|endoftext|>") == 7
    assert count_tokens("a <|endoftext|> b") == exact("a <|endoftext|> b")


def test_lone_surrogates_do_not_raise() -> None:
    assert count_tokens("bad \ud800 char") >= 3


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(TEXTS)
def test_counts_are_exact(text: str) -> None:
    assert count_tokens(text) == exact(text)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(PIECES, min_size=20, max_size=400).map("".join), st.integers(8, 200))
def test_chunked_counting_is_exact(text: str, chunk: int) -> None:
    """Cutting where the pre-tokenizer always cuts keeps the sum equal to the whole count."""
    assert tokens._count_chunked(text, chunk) == exact(text)


def test_long_text_is_counted_in_pieces_exactly() -> None:
    text = "Deploys run tests first.\nThen they build an image and verify it. " * 3_000
    assert len(text) > tokens._CHUNK_CHARS
    assert count_tokens(text) == exact(text)


def test_text_beyond_the_library_limits_is_counted() -> None:
    # ~3 tokens per character: whole, it exceeds the library's 200k-token limit
    line = "\U0001d49c\U0001d4ab\U0001d4b3 " * 20 + "\nword"
    text = line * 1_500
    assert len(text) < 1_000_000
    total = count_tokens(text)
    assert total > 200_000
    half = len(line) * 750
    assert total == count_tokens(text[:half]) + count_tokens(text[half:])
    out = truncate_to_tokens(text, 205_000)
    assert 204_900 <= count_tokens(out) <= 205_000


def test_counts_of_short_strings_are_cached() -> None:
    tokens._count_cached.cache_clear()
    for _ in range(3):
        count_tokens("a memory text the engine counts again and again")
    info = tokens._count_cached.cache_info()
    assert info.hits == 2 and info.misses == 1


def test_encoding_is_loaded_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = tokens._load_encoding

    def counting() -> tokens.Encoder:
        calls.append(ENCODING)
        return real()

    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tokens, "_load_encoding", counting)
    tokens._count_cached.cache_clear()
    results: list[int] = []
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        results.append(count_tokens(f"thread {i} counts hello world"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["o200k_base"]
    assert sorted(results) == sorted(exact(f"thread {i} counts hello world") for i in range(8))


# ---- truncation ----------------------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(TEXTS, st.integers(-2, 60), st.sampled_from(["…", "", " [...]"]))
def test_truncation_never_exceeds_the_limit(text: str, limit: int, ellipsis: str) -> None:
    out = truncate_to_tokens(text, limit, ellipsis)
    assert count_tokens(out) <= max(limit, 0)
    if limit <= 0:
        assert out == ""
    elif count_tokens(text) <= limit:
        assert out == text
    else:
        body = out[: -len(ellipsis)] if ellipsis and out.endswith(ellipsis) else out
        assert text.startswith(body.rstrip())


def test_text_that_fits_is_returned_unchanged() -> None:
    text = "  keep  my\n\nwhitespace  "
    assert truncate_to_tokens(text, count_tokens(text)) == text


def test_truncation_prefers_word_boundaries() -> None:
    text = "hello world this is a long sentence that goes on and on"
    assert truncate_to_tokens(text, 5) == "hello world this is…"


def test_truncation_keeps_code_punctuation_cuts() -> None:
    assert truncate_to_tokens("def foo(x):\n    return x+1\n", 4) == "def foo(x…"


def test_truncation_of_cjk_cuts_inside_the_run() -> None:
    text = "日本語のテキストはスペースがありません。とても長い文章です。"
    out = truncate_to_tokens(text, 6)
    assert out.endswith("…") and text.startswith(out[:-1]) and count_tokens(out) == 6


def test_truncation_is_nearly_maximal_for_prose() -> None:
    text = (
        "The payments service retries failed charges with exponential backoff and a cap of "
        "thirty seconds, and every retry is logged with the idempotency key so that support "
        "can trace duplicate charges back to their origin without reading raw logs."
    )
    for limit in range(5, 40):
        out = truncate_to_tokens(text, limit)
        assert limit - 3 <= count_tokens(out) <= limit


def test_no_room_for_the_ellipsis_keeps_a_bare_prefix() -> None:
    assert truncate_to_tokens("hello world", 1) == "hello"
    assert truncate_to_tokens("hello world", 1, " [truncated]") == "hello"


def test_zero_or_negative_budget_gives_empty() -> None:
    assert truncate_to_tokens("hello", 0) == ""
    assert truncate_to_tokens("hello", -5) == ""
    assert truncate_to_tokens("", 10) == ""


def test_truncating_a_huge_text() -> None:
    text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 3_500
    out = truncate_to_tokens(text, 100)
    assert 95 <= count_tokens(out) <= 100 and out.endswith("…")


class _CountingCut:
    """Stands in for the boundary pattern and adds up how many characters it was asked to scan."""

    def __init__(self, pattern: object) -> None:
        self.pattern = pattern
        self.scanned = 0

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> object:
        end = len(text) if endpos is None else min(endpos, len(text))
        self.scanned += max(0, end - pos)
        return self.pattern.finditer(text, pos, end)  # type: ignore[attr-defined]


@pytest.mark.parametrize("unit", ["a", "/", "ab1"])
def test_text_without_word_breaks_is_scanned_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    from predictive import tokens

    cut = _CountingCut(tokens._CUT)
    monkeypatch.setattr(tokens, "_CUT", cut)
    encoded: list[int] = []
    real_encode = tokens._encode
    monkeypatch.setattr(tokens, "_encode", lambda t: encoded.append(len(t)) or real_encode(t))
    text = unit * (2_000_000 // len(unit))
    assert tokens._count_chunked(text) > 0
    assert cut.scanned <= 3 * len(text)  # linear: each stretch is looked at a few times at most
    assert max(encoded) <= tokens._CHUNK_CHARS + tokens._SCAN_CHARS


def test_the_rust_tokenizer_is_used_without_the_package_vocabularies() -> None:
    """Counting goes straight to the Rust extension (the package's import reads three whole
    vocabularies into Python); its tokens and byte lengths are the package encoding's."""
    enc = tokens.RustEncoding.load()
    texts = [
        "hello world",
        "日本語のテキスト 😀👩‍💻",
        "def f(x):\n    return x+1",
        "<|endoftext|> x",
        "é" * 300,
    ]
    for text in texts:
        ids = enc.encode_ordinary(text)
        assert ids == ENC.encode_ordinary(text)
        assert enc.byte_lengths(ids) == [len(b) for b in ENC.decode_tokens_bytes(ids)]
    assert sum(enc.byte_lengths(enc.encode_ordinary(texts[1]))) == len(texts[1].encode())
    with pytest.raises(ValueError):
        enc.encode_ordinary("a" * 1_000_000)


def test_counting_in_a_new_process_does_not_import_the_package() -> None:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys; from predictive.tokens import count_tokens, truncate_to_tokens; "
        "print(json.dumps([count_tokens('hello world'), "
        "truncate_to_tokens('hello world ' * 50, 5), 'bpe_openai' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [
        len(ENC.encode_ordinary("hello world")),
        truncate_to_tokens("hello world " * 50, 5),
        False,
    ]
