"""Exact o200k token counting and token-safe truncation (offline, through ``bpe_openai``)."""

from __future__ import annotations

import base64
import gzip
import importlib.machinery
import importlib.util
import re
import threading
from array import array
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from storage.pages import drop_file_pages

ENCODING = "o200k_base"

# The library refuses inputs of 1M characters or 200k tokens; 50k characters are at most 200k
# tokens (one token per UTF-8 byte at worst), so longer texts are counted in pieces, split where
# the o200k pre-tokenizer always splits, which keeps the sum exact.
_CHUNK_CHARS = 50_000
_SCAN_CHARS = 200_000  # how far to look for the end of a stretch without a word break
_CACHE_CHARS = 2_048  # strings up to this length are cached; longer ones are counted afresh
_CACHE_SIZE = 4_096
_MAX_CHARS = 1_000_000  # the library's limits, kept by the direct path too
_MAX_TOKENS = 200_000

_lock = threading.Lock()
_encoding: Any = None


class TokenCounter(Protocol):
    """Anything that counts tokens the way :func:`count_tokens` does."""

    def __call__(self, text: str) -> int: ...


class Encoder(Protocol):
    """What counting and cutting need of an encoding."""

    def encode_ordinary(self, text: str) -> list[int]: ...

    def byte_lengths(self, tokens: Sequence[int]) -> list[int]: ...


class RustEncoding:
    """o200k_base from ``bpe_openai``'s Rust extension alone.

    Importing the ``bpe_openai`` package reads three whole vocabularies (cl100k, o200k,
    voyage3) into Python dictionaries and keeps them: ~0.5 s of CPU and ~75 MB for the life of
    the process, before the first count. Its ``encode_ordinary`` is the Rust tokenizer's
    ``encode``, which needs none of them. The byte length of each token (needed only to cut a
    text) is read once from the package's own vocabulary file, into 400 kB."""

    def __init__(self, backend: Any, vocabulary: Path) -> None:
        self._backend = backend
        self._vocabulary = vocabulary
        self._lengths: array[int] | None = None
        self._lengths_lock = threading.Lock()

    @classmethod
    def load(cls) -> RustEncoding:
        """Loads the extension module without running the package's ``__init__``; raises
        ImportError when the package is not laid out as expected."""
        spec = importlib.util.find_spec("bpe_openai")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("bpe_openai is not installed")
        pkg = Path(next(iter(spec.submodule_search_locations)))
        ext = next(
            iter(sorted(pkg.glob("_bindings*.so")) + sorted(pkg.glob("_bindings*.pyd"))), None
        )
        vocabulary = pkg / "data" / f"{ENCODING}.tiktoken.gz"
        if ext is None or not vocabulary.is_file():
            raise ImportError(f"bpe_openai at {pkg} lacks its extension or {vocabulary.name}")
        name = "bpe_openai._bindings"
        loader = importlib.machinery.ExtensionFileLoader(name, str(ext))
        ext_spec = importlib.util.spec_from_file_location(name, str(ext), loader=loader)
        if ext_spec is None:
            raise ImportError(f"cannot load {ext}")
        module = importlib.util.module_from_spec(ext_spec)
        loader.exec_module(module)
        encoding = cls(module.tokenizer_for_encoding(ENCODING), vocabulary)
        # the vocabularies are read from inside the library file once, here
        drop_file_pages(ext)
        return encoding

    def encode_ordinary(self, text: str) -> list[int]:
        if len(text) >= _MAX_CHARS:
            raise ValueError("input too long to encode safely")
        tokens = list(self._backend.encode(_sanitize(text)))
        if len(tokens) > _MAX_TOKENS:
            raise ValueError(f"{len(tokens)} tokens exceed the limit of {_MAX_TOKENS}")
        return tokens

    def byte_lengths(self, tokens: Sequence[int]) -> list[int]:
        lengths = self._lengths
        if lengths is None:
            with self._lengths_lock:
                if self._lengths is None:
                    self._lengths = _token_lengths(self._vocabulary)
                lengths = self._lengths
        return [lengths[t] for t in tokens]


def _token_lengths(vocabulary: Path) -> array[int]:
    """The byte length of every token of a ``.tiktoken.gz`` file (base64 bytes, rank)."""
    ranked: dict[int, int] = {}
    with gzip.open(vocabulary, "rt", encoding="ascii") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranked[int(rank)] = len(base64.b64decode(token))
    out = array("H", bytes(2 * (max(ranked) + 1)))
    for r, n in ranked.items():
        out[r] = n
    return out


class PackageEncoding:
    """The package's own tiktoken-style encoding, when the direct path is not available."""

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding

    def encode_ordinary(self, text: str) -> list[int]:
        return list(self._encoding.encode_ordinary(text))

    def byte_lengths(self, tokens: Sequence[int]) -> list[int]:
        return [len(b) for b in self._encoding.decode_tokens_bytes(tokens)]


def _load_encoding() -> Encoder:
    try:
        return RustEncoding.load()
    except (ImportError, OSError, AttributeError):
        import bpe_openai

        return PackageEncoding(bpe_openai.get_encoding(ENCODING))


def encoding() -> Encoder:
    """The o200k_base encoding, loaded once per process (thread-safe)."""
    global _encoding
    enc = _encoding
    if enc is None:
        with _lock:
            if _encoding is None:
                _encoding = _load_encoding()
            enc = _encoding
    return enc


def _sanitize(text: str) -> str:
    """Replace lone surrogates (not encodable as UTF-8) as the tokenizer itself does."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _encode(text: str) -> list[int]:
    """Tokens of ``text`` with special-token strings treated as plain text."""
    return encoding().encode_ordinary(text)


# Where o200k pre-tokenization always splits: after a newline that precedes a letter, and
# before a space between two letters (" word" is one piece; the word before it has ended).
_CUT = re.compile(r"(?<=\n)(?=[^\W\d_])|(?<=[^\W\d_])(?= [^\W\d_])")


def _is_cut(text: str, q: int) -> bool:
    """Whether a match of ``_CUT`` really sits between letters (``str.isalpha``, i.e. \\p{L})."""
    if text[q - 1] == "\n":
        return text[q].isalpha()
    return text[q - 1].isalpha() and text[q + 1].isalpha()


def _safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The last position in (lo, hi] where pre-tokenization always splits, if any."""
    cut = None
    for m in _CUT.finditer(text, lo + 1, hi + 1):
        if m.start() <= hi and _is_cut(text, m.start()):
            cut = m.start()
    return cut


def _next_cut(text: str, pos: int, limit: int) -> int | None:
    """The first position in (pos, limit] where pre-tokenization always splits, if any."""
    for m in _CUT.finditer(text, pos + 1, limit + 1):
        if _is_cut(text, m.start()):
            return m.start()
    return None


def _tokens(text: str, chunk_chars: int = _CHUNK_CHARS) -> list[int]:
    """Tokens of a text of any length, encoded in pieces cut at pre-tokenizer boundaries.

    A stretch with no such boundary is encoded whole when it ends within ``_SCAN_CHARS``
    characters; a longer one (or one beyond the library's limits) is cut blindly every
    ``chunk_chars`` characters, so the work stays linear in the length of the text. Only there
    can the count differ from the exact one, by a token or two per cut.
    """
    out: list[int] = []
    start, n = 0, len(text)
    no_cut_until = -1  # known: no boundary up to here
    while n - start > chunk_chars:
        cut = None
        if start + chunk_chars > no_cut_until:
            cut = _safe_cut(text, start + chunk_chars // 2, start + chunk_chars)
        if cut is None:
            limit = min(n, start + max(chunk_chars, _SCAN_CHARS))
            if start + chunk_chars < no_cut_until:
                limit = no_cut_until
            else:
                cut = _next_cut(text, start + chunk_chars, limit) or (n if limit == n else None)
            if cut is None:
                no_cut_until = limit
                out += _encode(text[start : start + chunk_chars])
                start += chunk_chars
                continue
            try:
                out += _encode(text[start:cut])
                start = cut
                continue
            except ValueError:  # TokenLimitError, or a million characters in one go
                cut = start + chunk_chars
        out += _encode(text[start:cut])
        start = cut
    return out + _encode(text[start:])


def _count_chunked(text: str, chunk_chars: int = _CHUNK_CHARS) -> int:
    """Exact count of a long text (see :func:`_tokens`)."""
    return len(_tokens(text, chunk_chars))


def _count_uncached(text: str) -> int:
    """The exact count, without touching the cache."""
    return _count_chunked(text) if len(text) > _CHUNK_CHARS else len(_encode(text))


@lru_cache(maxsize=_CACHE_SIZE)
def _count_cached(text: str) -> int:
    """Cached count of a short string."""
    return len(_encode(text))


def count_tokens(text: str) -> int:
    """The exact number of o200k_base tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    if len(text) <= _CACHE_CHARS:
        return _count_cached(text)
    return _count_uncached(text)


def _boundaries(text: str, max_tokens: int) -> list[int]:
    """Character offsets after each of the first tokens of ``text`` that end on a character."""
    window = min(len(text), max(64, 8 * (max_tokens + 2)))
    while True:
        part = text[:window]
        tokens = _tokens(part)
        if len(tokens) > max_tokens + 1 or window >= len(text):
            break
        window = min(len(text), window * 2)
    tokens = tokens[: max_tokens + 2]
    char_at_byte: dict[int, int] = {}
    pos = 0
    for i, ch in enumerate(part):
        char_at_byte[pos] = i
        pos += len(ch.encode("utf-8"))
    char_at_byte[pos] = len(part)
    out: list[int] = []
    pos = 0
    for length in encoding().byte_lengths(tokens):
        pos += length
        if pos in char_at_byte and char_at_byte[pos] > 0:
            out.append(char_at_byte[pos])
    return sorted(set(out))


def _longest_fitting(text: str, cuts: list[int], max_tokens: int, ellipsis: str) -> int:
    """The largest cut whose stripped prefix plus ``ellipsis`` fits, or 0."""

    def fits(c: int) -> bool:
        prefix = text[:c].rstrip()
        return bool(prefix) and _count_uncached(prefix + ellipsis) <= max_tokens

    lo, hi, best = 0, len(cuts) - 1, -1
    while lo <= hi:  # counts are nearly monotone in the cut; every answer is verified
        mid = (lo + hi) // 2
        if fits(cuts[mid]):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    for j in range(min(len(cuts) - 1, best + 4), best, -1):  # where counts dip
        if fits(cuts[j]):
            best = j
            break
    if best < 0:
        return 0
    cut = cuts[best]
    if cut >= len(text) or not (text[cut].isalnum() and text[cut - 1].isalnum()):
        return cut
    # inside a word: back up to a near word boundary; text without spaces (CJK) keeps the cut
    for k in range(cut - 1, max(0, cut - max(12, cut // 4)), -1):
        if not text[k].isalnum():
            return k if fits(k) else cut
    return cut


def truncate_to_tokens(text: str, max_tokens: int, ellipsis: str = "…") -> str:
    """The longest prefix of ``text`` that, with ``ellipsis`` appended, has at most
    ``max_tokens`` tokens; ``text`` itself when it fits; ``""`` when ``max_tokens <= 0``.

    When not even one token of text fits beside the ellipsis, the prefix is returned without it.
    """
    if max_tokens <= 0 or not text:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    text = _sanitize(text)
    cuts = _boundaries(text, max_tokens)
    for ell in dict.fromkeys((ellipsis, "")):
        cut = _longest_fitting(text, cuts, max_tokens, ell)
        if cut:
            return text[:cut].rstrip() + ell
    return ""


__all__ = ["ENCODING", "TokenCounter", "count_tokens", "encoding", "truncate_to_tokens"]
