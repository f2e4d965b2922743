"""Secret redaction applied to every text before it is stored."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_MASK = "[REDACTED:{}]"

# Order matters: private key blocks first (they span lines), then specific token shapes,
# then the generic assignment and URL-password rules.
# Every repetition that a match may have to backtrack over is bounded ({0,100} …): an
# unbounded one made redaction quadratic, minutes for a 30 kB line of dotted names.
_PATTERNS: list[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str] | None]] = []


def _add(name: str, pattern: str, flags: int = 0, keep: Callable | None = None) -> None:
    _PATTERNS.append((name, re.compile(pattern, flags), keep))


_add(
    "private-key",
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_add("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")
_add("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})\b")
_add("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b")
_add("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}\b")
_add("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}\b")
_add("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b")
_add("slack-token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")
_add("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")
_add("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b")
_add("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b")
_add("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b")
_add(
    "bearer-token",
    r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/\-]{16,}=*)",
    keep=lambda m: m.group(1) + _MASK.format("token"),
)
# scheme://user:password@host  → keep user and host
_add(
    "url-password",
    r"\b([a-z][a-z0-9+.\-]{0,30}://[^\s:/@]{0,256}:)([^\s@/]{1,256})(@)",
    re.IGNORECASE,
    keep=lambda m: m.group(1) + _MASK.format("password") + m.group(3),
)
# NAME_KEY=value, api_token: "value", CLIENT_SECRET = value, DB_PASSWORD=value.
# The match starts at the keyword; _assignment() looks back for the rest of the name (a
# pattern that starts at the name backtracks over every dotted word: quadratic).
_add(
    "assignment",
    r"""(?ix)
    ((?:_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|_PWD|API_?KEY|SECRET_?KEY|
        ACCESS_?KEY|PRIVATE_?KEY|AUTH_?TOKEN|ACCESS_?TOKEN|PASSWORD|SECRET|TOKEN)\b
     ["']?\s*[:=]\s*)
    (["']?)
    (?!(?:os\.|process\.env|\$\{|\$[A-Z_]|env\(|getenv|settings\.|config\.|self\.|None\b|null\b|
        true\b|false\b|<|\[REDACTED|await\s|new\s|lambda\b|function\b))
    ([^\s"'`,;&]{4,})(\2)
    """,
    keep=lambda m: _assignment(m),
)


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")


def _assignment(m: re.Match[str]) -> str:
    """Mask the value of ``NAME_TOKEN = value`` unless the value is plainly code: a call or
    subscript (``get_password()``, ``headers["X"]``) or the variable passed through
    (``api_key=api_key``, ``token = args.token``)."""
    lhs, quote, value, close = m.group(1), m.group(2), m.group(3), m.group(4)
    if not quote:
        text, start = m.string, m.start()
        while start > 0 and m.start() - start < 200 and text[start - 1] in _NAME_CHARS:
            start -= 1
        name = text[start : m.start()] + re.match(r"[\w]*", lhs).group(0)  # type: ignore[union-attr]
        last = re.split(r"[.\-]", name)[-1].lower()
        if any(c in value for c in "([{") or (
            _IDENTIFIER.fullmatch(bare := value.rstrip(")]}"))
            and bare.split(".")[-1].lower() == last
        ):
            return m.group(0)
    return lhs + quote + _MASK.format("secret") + close


# Every pattern above needs one of these substrings; text without any is returned at once
# (most anchors, paths and short messages), which makes redaction ~10× cheaper on average.
_MAYBE_SECRET = re.compile(
    r"PRIVATE KEY|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|glpat-|sk-|AIza|xox[abprs]-|"
    r"_live_|_test_|eyJ|npm_|hf_|bearer|://|key|token|secret|passw|pwd",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by a ``[REDACTED:kind]`` mask."""
    if not text or not _MAYBE_SECRET.search(text):
        return text
    for name, pattern, keep in _PATTERNS:
        if keep is None:
            text = pattern.sub(_MASK.format(name), text)
        else:
            text = pattern.sub(_skip_masked(keep), text)
    return text


def _skip_masked(keep: Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    def sub(m: re.Match[str]) -> str:
        if "[REDACTED:" in m.group(0):
            return m.group(0)
        return keep(m)

    return sub


def redact_value(value: Any) -> Any:
    """Redact strings inside nested JSON-like values (metadata)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value
