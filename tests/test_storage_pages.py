"""Resident pages of mapped files given back once loading is done (storage.pages)."""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import pytest

from storage.pages import drop_file_pages

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="MADV_PAGEOUT and /proc are Linux's"
)


def resident_kb(path: Path) -> int:
    """Resident kB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, current = 0, ""
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split(maxsplit=5)
            if "-" in fields[0] and not fields[0].endswith(":"):
                current = fields[5].rstrip("\n") if len(fields) > 5 else ""
            elif fields[0] == "Rss:" and current == str(path):
                total += int(fields[1])
    return total


@linux_only
def test_a_mapped_file_leaves_memory_and_reads_back_the_same(tmp_path: Path) -> None:
    path = (tmp_path / "data.bin").resolve()
    data = bytes(range(256)) * (4 * 4096)  # 4 MiB
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert m[:] == data  # every page touched: resident
        assert resident_kb(path) >= 4096
        assert drop_file_pages(path) >= len(data)
        assert resident_kb(path) < 1024
        assert m[:] == data  # read back from the file, unchanged


def test_a_file_that_is_not_mapped_asks_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.bin"
    path.write_bytes(b"x" * 8192)
    assert drop_file_pages(path) == 0
    assert drop_file_pages(tmp_path / "missing") == 0


def test_the_token_counter_gives_back_its_library_file_after_loading_and_counts_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building the o200k tokenizer reads its vocabularies from inside the extension file
    (≈ 33 MB resident in a process alone with it); that file's pages are given back at once,
    and counting, which does not need them, stays exact. (Whether the kernel drops a page
    also depends on other processes mapping the same file, so what is asked is checked here
    and the dropping itself on a file of this test's own above.)"""
    from predictive import tokens

    asked: list[Path] = []

    def drop(path: str | Path) -> int:
        asked.append(Path(path))
        return drop_file_pages(path)

    monkeypatch.setattr(tokens, "drop_file_pages", drop)
    encoding = tokens.RustEncoding.load()
    assert len(asked) == 1
    assert asked[0].name.startswith("_bindings") and asked[0].parent.name == "bpe_openai"
    import bpe_openai

    text = "The context engine fits each tier to its budget: 日本語, 😀, def f(x): return x+1"
    expected = bpe_openai.get_encoding("o200k_base").encode_ordinary(text)
    assert encoding.encode_ordinary(text) == list(expected)


def test_off_linux_nothing_is_asked_and_nothing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from storage.embeddings import release_freed_heap

    path = tmp_path / "data.bin"
    path.write_bytes(b"x" * 8192)
    monkeypatch.setattr(sys, "platform", "darwin")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert m[:1] == b"x"
        assert drop_file_pages(path) == 0
    assert release_freed_heap() is False
