"""Path globs as rule files write them (``src/api/**``, ``**/*.ts``, ``*.py``)."""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=2048)
def _compile(pattern: str) -> re.Pattern[str]:
    p = pattern.strip().lstrip("/")
    if p.startswith("./"):
        p = p[2:]
    if "/" not in p.rstrip("/"):
        p = "**/" + p  # like .gitignore: a bare name matches at any depth
    if p.endswith("/"):
        p += "**"
    out = []
    i = 0
    while i < len(p):
        c = p[i]
        if p.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif p.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "{":
            end = p.find("}", i)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                alts = p[i + 1 : end].split(",")
                out.append("(?:" + "|".join(re.escape(a) for a in alts) + ")")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(path: str, pattern: str) -> bool:
    """Whether a project-relative POSIX ``path`` matches ``pattern``; a pattern naming a
    folder (``src/api``) also matches everything under it."""
    if not pattern.strip():
        return False
    path = path.lstrip("./") if path.startswith("./") else path
    rx = _compile(pattern)
    if rx.match(path):
        return True
    if not any(ch in pattern for ch in "*?{"):
        base = pattern.strip().strip("/")
        return path == base or path.startswith(base + "/")
    return False


def specificity(pattern: str) -> int:
    """How many folders a glob names literally (``**/appsec/_iast/**`` 2, ``src/**`` 1,
    ``**/*.py`` 0): the more, the fewer files it applies to."""
    parts = [p for p in pattern.strip().strip("/").split("/") if p and p != "."]
    folders = parts[:-1] if parts and ("." in parts[-1] or "*" in parts[-1]) else parts
    return sum(1 for p in folders if not any(ch in p for ch in "*?[{"))
