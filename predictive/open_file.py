"""Whether a memory is the file open in the editor: a decision record or a rule file read from
that very file. Its text is already on screen, so a context for that file need not repeat it.

Paths are compared as the project writes them (relative, ``/``-separated, normalised); an
absolute open path matches a memory's relative path that it ends with, part for part.
"""

from __future__ import annotations

import posixpath

from storage.models import Memory

FILE_SOURCES = frozenset({"adr", "rules"})
"""Sources whose memories are read from one file of the project (decision records, rules)."""
_ARTIFACT_TYPES = {"adr": "adr", "rules": "file"}
"""The artifact each of those sources records its file as."""


def _norm(path: str) -> str:
    """A path in the project's form: ``/``-separated, without ``./`` and ``a/../``."""
    p = path.strip().replace("\\", "/")
    return posixpath.normpath(p) if p else ""


def source_file(m: Memory) -> str | None:
    """The file a decision record or rule memory was read from (None for any other memory)."""
    if m.source not in FILE_SOURCES:
        return None
    if m.source == "rules":
        file = m.metadata.get("file")
        if isinstance(file, str) and file:
            return _norm(file)
    wanted = _ARTIFACT_TYPES[m.source]
    for a in m.artifacts:
        if a.type == wanted and a.ref:
            return _norm(a.ref)
    if not m.source_id:
        return None
    # a rule's source id is "path:line"; a record's is its path
    return _norm(m.source_id.rsplit(":", 1)[0] if m.source == "rules" else m.source_id)


def _same_file(open_path: str, file: str) -> bool:
    """Whether the open path is ``file``: equal, or absolute and ending with it part for part."""
    if open_path == file:
        return True
    is_absolute = open_path.startswith("/") or open_path[1:3] == ":/"
    return is_absolute and not file.startswith("../") and open_path.endswith("/" + file)


def is_the_open_file(m: Memory, path: str) -> bool:
    """Whether ``m``'s text is the file open at ``path`` itself: a decision record or rule
    file memory read from that file."""
    file, open_path = source_file(m), _norm(path)
    if not file or not open_path:
        return False
    return _same_file(open_path, file)


__all__ = ["FILE_SOURCES", "is_the_open_file", "source_file"]
