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
# Lines that are a tool's output rather than someone talking about a file: tables, stack
# frames, linter and test-runner reports, tree and box drawings, git status and diffstat,
# bare path listings. A file named only there was not discussed.
_TOOL_OUTPUT = re.compile(
    r"^\s*\|"  # tables (search results, grep hits)
    r"|^\s*File \""  # stack frames
    r"|Traceback \(most recent call last\)"
    r"|\S+\.\w{1,8}:\d+(?::\d+)?(?::|\s*$|\s+(?:error|warning|note)\b)"  # path:line[:col]
    r"|^\s*-->\s"
    r"|,line=\d+,col=\d+"  # GitHub annotations (::error file=…,line=…,col=…)
    r"|\S+\.\w{1,8}::\w"  # test ids
    r"|^\s*[│╭╰┃┏┗┡└├┌┐┘┤┬┴┼═║]"  # boxes and trees
    r"|^\s*(?:modified|new file|deleted|renamed):\s"  # git status
    r"|^\s*(?:FAILED|PASSED|ERROR|SKIPPED|XFAIL|XPASS)\b"
    r"|^\s*[@\w./\\-]+\.\w{1,8}\s*$"  # a bare path
    r"|^\s*\S+\s+\|\s+\d+\s+[+-]*\s*$"  # diffstat
    r"|^\s*\d+ files? (?:changed|reformatted|left unchanged)"
)


def is_tool_output(line: str) -> bool:
    """Whether a line is a tool's output (a table row, a stack frame, a linter report…)."""
    return bool(_TOOL_OUTPUT.search(line))


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
    """On how many lines of ``texts`` each project file is talked about (lines of tool
    output do not count; a line naming a file twice counts once)."""
    counts: Counter[str] = Counter()
    if not files.by_name:
        return counts
    for text in texts:
        for line in text.split("\n"):
            if "." not in line or is_tool_output(line):
                continue
            named: set[str] = set()
            for m in _FILE_TOKEN.finditer(line):
                named.update(files.resolve(m.group(1)))
            for path in named:
                counts[path] += 1
    return counts
