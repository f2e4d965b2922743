"""Builders of small real projects for tests: a git history, decision records, rule files.

Everything is written with real tools (``git``) or plain files under a test's ``tmp_path``;
nothing is mocked, so end-to-end ingestion tests can reuse these builders::

    repo = make_git_repo(tmp_path / "proj")            # the default scripted history
    repo.shas["merge"], repo.shas["revert"]            # labels of DEFAULT_HISTORY steps
    records = make_adr_records(repo.root)              # docs/adr with a supersession pair
    rules = make_rule_files(repo.root)                 # one rule file of every kind

Steps of ``make_git_repo(..., commits=[...])`` are dicts, applied in order on a repository
whose first branch is ``main``:

- ``{"message": "...", "files": {"path": "text" | bytes | None}}``: write (None deletes) the
  files and commit them; optional ``"author"``, ``"email"``, ``"at"`` (epoch seconds, default
  one minute after the previous step), ``"label"``, ``"allow_empty"``.
- ``{"branch": "name"}``: create the branch at the current commit and check it out
  (``{"branch": "name", "start": "label or rev"}`` starts it elsewhere).
- ``{"checkout": "name"}``: switch to an existing branch.
- ``{"merge": "name", "message": "..."}``: a real merge commit (``--no-ff``).
- ``{"revert": "label or sha"}``: ``git revert`` of that commit.
- ``{"delete_branch": "name"}``.

Labels map to full shas in ``GitRepo.shas``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.sources.records import GENERATED_MARKER

BASE_TIME = 1_700_000_000
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
}

DEFAULT_HISTORY: tuple[dict[str, Any], ...] = (
    {
        "label": "init",
        "message": "Initial commit: project skeleton",
        "files": {"README.md": "# Demo\n", "src/app.py": "print('hi')\n"},
    },
    {
        "label": "api",
        "message": "Add the API module\n\nThe API answers /health for the load balancer.",
        "files": {"src/api.py": "def health():\n    return 'ok'\n", "tests/test_api.py": "\n"},
    },
    {"branch": "feature/auth"},
    {
        "label": "auth",
        "message": "Add token auth to the API",
        "files": {"src/auth.py": "TOKEN = 'x'\n", "src/api.py": "import auth\n"},
    },
    {
        "label": "auth-docs",
        "message": "Document the auth header",
        "files": {"docs/auth.md": "Send `Authorization: Bearer`.\n"},
    },
    {"checkout": "main"},
    {
        "label": "config",
        "message": "Read settings from the environment",
        "files": {"src/config.py": "import os\n"},
    },
    {"label": "merge", "merge": "feature/auth", "message": "Merge branch 'feature/auth'"},
    {"revert": "config", "label": "revert"},
    {
        "label": "remove",
        "message": "Remove the placeholder app",
        "files": {"src/app.py": None},
    },
)


def git(root: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run git in ``root`` with an isolated configuration; its stdout, stripped."""
    full = {**os.environ, **GIT_ENV, **(env or {})}
    proc = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=full, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


@dataclass
class GitRepo:
    """A scripted repository; ``shas`` maps step labels to full commit shas."""

    root: Path
    shas: dict[str, str] = field(default_factory=dict)
    clock: int = BASE_TIME

    @classmethod
    def init(cls, root: Path, *, branch: str = "main") -> GitRepo:
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q", "-b", branch)
        git(root, "config", "user.name", "Test Author")
        git(root, "config", "user.email", "author@example.com")
        git(root, "config", "commit.gpgsign", "false")
        return cls(root)

    def _tick(self, at: int | None) -> dict[str, str]:
        self.clock = at if at is not None else self.clock + 60
        stamp = f"@{self.clock} +0000"
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def rev(self, name: str) -> str:
        """A label's sha, or any revision git understands."""
        return self.shas.get(name) or git(self.root, "rev-parse", name)

    def head(self) -> str:
        return git(self.root, "rev-parse", "HEAD")

    def write(self, files: Mapping[str, str | bytes | None]) -> None:
        for rel, content in files.items():
            path = self.root / rel
            if content is None:
                git(self.root, "rm", "-q", "--", rel)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
            git(self.root, "add", "--", rel)

    def commit(
        self,
        message: str | bytes,
        files: Mapping[str, str | bytes | None] | None = None,
        *,
        author: str = "Ada Lovelace",
        email: str = "ada@example.com",
        at: int | None = None,
        allow_empty: bool = False,
        label: str | None = None,
    ) -> str:
        """Write ``files`` and commit them; bytes messages are stored as given."""
        self.write(files or {})
        env = {
            **self._tick(at),
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": email,
        }
        raw = message if isinstance(message, bytes) else message.encode("utf-8")
        msg = self.root / ".git" / "TEST_MSG"
        msg.write_bytes(raw)
        args = ["commit", "-q", "--cleanup=verbatim", "-F", str(msg)]
        if allow_empty:
            args.append("--allow-empty")
        git(self.root, *args, env=env)
        return self._label(label)

    def branch(self, name: str, start: str | None = None) -> None:
        git(self.root, "checkout", "-q", "-b", name, *([self.rev(start)] if start else []))

    def checkout(self, name: str) -> None:
        git(self.root, "checkout", "-q", name)

    def merge(self, name: str, message: str | None = None, *, label: str | None = None) -> str:
        msg = message or f"Merge branch '{name}'"
        git(self.root, "merge", "-q", "--no-ff", "-m", msg, name, env=self._tick(None))
        return self._label(label)

    def revert(self, target: str, *, label: str | None = None) -> str:
        git(self.root, "revert", "--no-edit", self.rev(target), env=self._tick(None))
        return self._label(label)

    def delete_branch(self, name: str) -> None:
        git(self.root, "branch", "-q", "-D", name)

    def _label(self, label: str | None) -> str:
        sha = self.head()
        if label:
            self.shas[label] = sha
        return sha

    def apply(self, step: Mapping[str, Any]) -> None:
        """One step of the little language described in the module docstring."""
        label = step.get("label")
        if "merge" in step:
            self.merge(step["merge"], step.get("message"), label=label)
        elif "revert" in step:
            self.revert(step["revert"], label=label)
        elif "checkout" in step:
            self.checkout(step["checkout"])
        elif "delete_branch" in step:
            self.delete_branch(step["delete_branch"])
        elif "branch" in step:
            self.branch(step["branch"], step.get("start"))
        else:
            self.commit(
                step["message"],
                step.get("files"),
                author=step.get("author", "Ada Lovelace"),
                email=step.get("email", "ada@example.com"),
                at=step.get("at"),
                allow_empty=step.get("allow_empty", False),
                label=label,
            )


def make_git_repo(
    tmp_path: Path, commits: Iterable[Mapping[str, Any]] | None = None, *, name: str = "repo"
) -> GitRepo:
    """A repository at ``tmp_path / name`` built from ``commits`` (default DEFAULT_HISTORY)."""
    repo = GitRepo.init(tmp_path / name)
    for step in DEFAULT_HISTORY if commits is None else commits:
        repo.apply(step)
    return repo


def make_big_repo(root: Path, n: int, *, files_per_commit: int = 3) -> GitRepo:
    """A linear history of ``n`` commits written at once with ``git fast-import``."""
    repo = GitRepo.init(root)
    chunks: list[bytes] = []
    for i in range(1, n + 1):
        msg = f"Commit {i}: change module {i % 97}\n".encode()
        at = BASE_TIME + i
        lines = [
            b"commit refs/heads/main",
            f"mark :{i}".encode(),
            f"author Big Author <big@example.com> {at} +0000".encode(),
            f"committer Big Author <big@example.com> {at} +0000".encode(),
            f"data {len(msg)}".encode(),
            msg,
        ]
        if i > 1:
            lines.append(f"from :{i - 1}".encode())
        for j in range(files_per_commit):
            body = f"{i}\n".encode()
            path = f"src/m{(i + j) % 200}.py"
            lines += [f"M 644 inline {path}".encode(), f"data {len(body)}".encode(), body]
        chunks.append(b"\n".join(lines) + b"\n")
    subprocess.run(
        ["git", "-C", str(root), "fast-import", "--quiet"],
        input=b"".join(chunks),
        env={**os.environ, **GIT_ENV},
        check=True,
    )
    git(root, "reset", "-q", "--hard", "main")
    repo.clock = BASE_TIME + n
    return repo


def write_files(root: Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write text (UTF-8) or bytes files under ``root``; their paths."""
    written = []
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


NYGARD_OLD = """# 1. Use PostgreSQL for storage

Date: 2023-01-10

## Status

Superseded by [2. Use SQLite for storage](0002-use-sqlite.md)

## Context

We need a database for the server.

## Decision

We will use PostgreSQL.

## Consequences

Everyone needs a database server running locally.
"""

NYGARD_NEW = """# 2. Use SQLite for storage

Date: 2023-06-01

## Status

Accepted

Supersedes [1. Use PostgreSQL for storage](0001-use-postgresql.md)

## Context

A local tool should not need a database server.

## Decision

We will use SQLite through apsw.

## Consequences

One file per project; no server to run.
"""

MADR_RECORD = """---
status: accepted
date: 2024-03-05
deciders: [Ada, Grace]
---
# Embed memories with a local model

## Context and Problem Statement

Search needs embeddings without sending code to a remote service.

## Decision Drivers

* Privacy
* Offline use

## Considered Options

* A local ONNX model
* A hosted embedding API

## Decision Outcome

Chosen option: "A local ONNX model", because code never leaves the machine.

### Consequences

* Good, because it works offline.
* Bad, because the package is larger.
"""

ADR_TEMPLATE = """# NUMBER. TITLE

Date: DATE

## Status

STATUS

## Context

The issue motivating this decision.
"""


def make_adr_records(root: Path, directory: str = "docs/adr") -> dict[str, str]:
    """Two Nygard records (the second supersedes the first), one MADR record, a template and
    an index under ``root / directory``; returns {relative path: title} of the real records."""
    write_files(
        root,
        {
            f"{directory}/0001-use-postgresql.md": NYGARD_OLD,
            f"{directory}/0002-use-sqlite.md": NYGARD_NEW,
            f"{directory}/0003-local-embeddings.md": MADR_RECORD,
            f"{directory}/template.md": ADR_TEMPLATE,
            f"{directory}/README.md": "# Decision log\n\n* [1](0001-use-postgresql.md)\n",
        },
    )
    return {
        f"{directory}/0001-use-postgresql.md": "Use PostgreSQL for storage",
        f"{directory}/0002-use-sqlite.md": "Use SQLite for storage",
        f"{directory}/0003-local-embeddings.md": "Embed memories with a local model",
    }


GENERATED_HEAD = f"{GENERATED_MARKER} — written by Living Memory. -->\n\n"

RULE_FILES: dict[str, str] = {
    ".cursorrules": "- Use type hints everywhere.\n- Prefer pathlib over os.path.\n",
    ".cursor/rules/api.mdc": (
        "---\ndescription: API conventions\nglobs: src/api/**, src/auth.py\n"
        "alwaysApply: false\n---\n# API\n\n- Every handler returns JSON.\n"
    ),
    "CLAUDE.md": (
        "# Project\n\n@docs/conventions.md\n@.living-memory/context.md\n\n"
        "- Run `pytest -q` before committing.\n"
    ),
    "docs/conventions.md": "# Conventions\n\n- Never log secrets.\n",
    "AGENTS.md": "## Testing\n\n1. Tests use real SQLite files, no mocks.\n",
    ".github/copilot-instructions.md": "Answer in British English.\n",
    ".github/instructions/tests.instructions.md": (
        '---\napplyTo: "tests/**/*.py"\n---\n- Use tmp_path for files.\n'
    ),
    "CONTRIBUTING.md": "# Contributing\n\n- Keep pull requests small.\n",
    # written by the tool itself: must never be read back
    ".cursor/rules/living-memory.mdc": (
        f"---\nalwaysApply: true\n---\n{GENERATED_HEAD}- generated rule\n"
    ),
    ".github/instructions/living-memory.instructions.md": (
        f'---\napplyTo: "**"\n---\n{GENERATED_HEAD}- generated rule\n'
    ),
    ".living-memory/context.md": f"{GENERATED_HEAD}- generated context\n",
}


def make_rule_files(root: Path) -> dict[str, str]:
    """One rule file of every kind, plus the tool's own generated files; returns RULE_FILES."""
    write_files(root, RULE_FILES)
    return dict(RULE_FILES)
