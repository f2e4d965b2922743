"""Where a project's memory lives: one data directory per project, keyed by its git root."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import platformdirs

APP_NAME = "living-memory"
DB_FILE = "memory.db"
ENV_DB = "LIVING_MEMORY_DB"
ENV_DATA_DIR = "LIVING_MEMORY_DATA_DIR"


def git_root(start: Path) -> Path | None:
    """The nearest enclosing directory with a ``.git`` entry (folder or worktree file)."""
    start = start.resolve()
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def project_key(root: Path) -> str:
    """A readable, collision-safe folder name for a project root."""
    resolved = str(root.resolve())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", root.resolve().name).strip("-") or "root"
    return f"{slug}-{hashlib.sha256(resolved.encode()).hexdigest()[:12]}"


def default_db_path(cwd: Path | None = None) -> Path:
    """``$LIVING_MEMORY_DB``, else the user data dir / projects / <git root key> / memory.db.

    Outside a git repository the working directory stands in for the root.
    """
    env = os.environ.get(ENV_DB)
    if env:
        return Path(env).expanduser()
    cwd = Path(cwd or Path.cwd())
    root = git_root(cwd) or cwd.resolve()
    base = os.environ.get(ENV_DATA_DIR)
    data = Path(base).expanduser() if base else Path(platformdirs.user_data_dir(APP_NAME))
    return data / "projects" / project_key(root) / DB_FILE


def current_branch(root: Path) -> str | None:
    """The checked-out branch from ``.git/HEAD`` (None when detached or unreadable)."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            line = git.read_text(encoding="utf-8", errors="replace").strip()
            if line.startswith("gitdir:"):
                git = (root / line[len("gitdir:") :].strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    prefix = "ref: refs/heads/"
    return head[len(prefix) :] if head.startswith(prefix) else None
