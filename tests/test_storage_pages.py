"""Resident pages of mapped files given back once loading is done (storage.pages)."""

from __future__ import annotations

import mmap
import subprocess
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


@linux_only
def test_a_file_that_is_not_mapped_asks_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.bin"
    path.write_bytes(b"x" * 8192)
    assert drop_file_pages(path) == 0
    assert drop_file_pages(tmp_path / "missing") == 0


@linux_only
def test_the_token_counter_keeps_none_of_its_library_file_resident_and_counts_exactly() -> None:
    """Building the o200k tokenizer reads its vocabularies from inside the extension file
    (≈ 33 MB resident before they were given back); counting does not need them."""
    code = (
        "from pathlib import Path\n"
        "from predictive import tokens\n"
        "from tests.test_storage_pages import resident_kb\n"
        "n = tokens.count_tokens('The context engine fits each tier to its budget.')\n"
        "enc = tokens.encoding()\n"
        "assert isinstance(enc, tokens.RustEncoding), type(enc)\n"
        "lib = [l.split(maxsplit=5)[5].strip() for l in open('/proc/self/maps')\n"
        "       if 'bpe_openai/_bindings' in l][0]\n"
        "print(n, resident_kb(Path(lib)) // 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    count, resident_mb = (int(x) for x in out.stdout.split())
    import bpe_openai

    expected = len(
        bpe_openai.get_encoding("o200k_base").encode_ordinary(
            "The context engine fits each tier to its budget."
        )
    )
    assert count == expected
    assert resident_mb < 8
