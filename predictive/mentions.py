"""Which project files a text talks about, and how often: a conversation's mentions of paths
and base names, resolved against the project's own file list."""

from __future__ import annotations

import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

# A file-like token: optional directories, a name, an extension of letters (1–8).
_FILE_TOKEN = re.compile(r"(?<![\w/.-])@?((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})\b")
MAX_FILES = 200_000


class FileIndex:
    """A project's files by base name, to resolve ``brave.py`` or ``engines/brave.py``."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.by_name: dict[str, list[str]] = defaultdict(list)
        for p in paths:
            self.by_name[PurePosixPath(p).name.lower()].append(p)

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_name.values())

    def resolve(self, token: str) -> list[str]:
        """The project paths a token names (all of them when a bare name is ambiguous)."""
        token = token.strip("@").replace("\\", "/").lstrip("./")
        name = PurePosixPath(token).name.lower()
        found = self.by_name.get(name)
        if not found:
            return []
        if "/" in token:
            tail = "/" + token.lower()
            narrowed = [p for p in found if ("/" + p.lower()).endswith(tail)]
            return narrowed or ([] if len(found) > 1 else found)
        return found

    @classmethod
    def of_project(cls, root: Path) -> FileIndex:
        """The files git tracks under ``root`` (empty outside a repository)."""
        try:
            out = subprocess.run(
                ["git", "-C", str(root), "ls-files", "-z"],
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return cls(())
        if out.returncode != 0:
            return cls(())
        names = out.stdout.decode("utf-8", "replace").split("\0")
        return cls(n for n in names[:MAX_FILES] if n)


def count(texts: Iterable[str], files: FileIndex) -> Counter[str]:
    """How many times each project file is mentioned in ``texts``."""
    counts: Counter[str] = Counter()
    if not files.by_name:
        return counts
    for text in texts:
        for m in _FILE_TOKEN.finditer(text):
            for path in files.resolve(m.group(1)):
                counts[path] += 1
    return counts
