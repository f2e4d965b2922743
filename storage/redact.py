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
# Each pattern comes with its triggers: lowercase literals one of which every match contains
# (as :func:`_folded` writes it); a pattern none of whose triggers is in the text cannot match
# and is not run (a substring test is ~100× cheaper than a regular expression's scan of a long
# message). A pattern whose every match starts at most ``near`` characters before one of its
# triggers is tried only there (:func:`_sub_near`), not at every character of the text.
_Keep = Callable[[re.Match[str]], str]
_PATTERNS: list[tuple[str, tuple[str, ...], re.Pattern[str], _Keep | None, int | None]] = []


def _add(
    name: str,
    triggers: tuple[str, ...],
    pattern: str,
    flags: int = 0,
    keep: _Keep | None = None,
    near: int | None = None,
) -> None:
    _PATTERNS.append((name, triggers, re.compile(pattern, flags), keep, near))


_add(
    "private-key",
    ("private key",),
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_add("aws-access-key", ("akia", "asia", "abia", "acca"), r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")
_add(
    "github-token",
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})\b",
)
_add(
    "gitlab-token",
    ("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-"),
    r"\bgl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_\-]{20,}\b",
)
_add("anthropic-key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_\-]{20,}")
_add("openrouter-key", ("sk-or-v1-",), r"\bsk-or-v1-[A-Za-z0-9]{20,}")
_add(
    "openai-key",
    ("sk-",),
    r"\bsk-(?=[A-Za-z0-9_\-]{0,200}?\d)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",
)
_add("groq-key", ("gsk_",), r"\bgsk_[A-Za-z0-9]{20,}")
_add("xai-key", ("xai-",), r"\bxai-[A-Za-z0-9]{40,}")
_add("cerebras-key", ("csk-",), r"\bcsk-[A-Za-z0-9]{20,}")
_add("perplexity-key", ("pplx-",), r"\bpplx-[A-Za-z0-9]{20,}")
_add("brave-search-key", ("bsa",), r"\bBSA[A-Za-z0-9_\-]{20,}")
_add("tavily-key", ("tvly-",), r"\btvly-(?:dev-|prod-)?[A-Za-z0-9]{16,}")
_add("google-oauth-secret", ("gocspx-",), r"\bGOCSPX-[A-Za-z0-9_\-]{20,}")
_add("mailgun-key", ("key-",), r"\bkey-[0-9a-z]{32}\b")
_add("linear-key", ("lin_api_", "lin_oauth_"), r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}")
_add(
    "notion-token",
    ("secret_", "ntn_"),
    r"\bsecret_(?=[A-Za-z0-9]{0,80}\d)[A-Za-z0-9]{40,}\b|\bntn_[A-Za-z0-9]{40,}",
)
_add("heroku-key", ("hrku-",), r"\bHRKU-[A-Za-z0-9_\-]{20,}")
# also a key that a terminal wrapped onto the next line (or cut off)
_add(
    "google-api-key",
    ("aiza",),
    r"\bAIza[0-9A-Za-z_\-]{35}"
    r"|\bAIza[0-9A-Za-z_\-]{8,34}(?:[ \t]*\r?\n[ \t]*[0-9A-Za-z_\-]{1,34})?",
)
_add(
    "slack-webhook",
    ("https://hooks.slack.com/",),
    r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{8,}",
)
_add(
    "slack-token", ("xox", "xapp-"), r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}"
)
_add(
    "discord-webhook",
    ("/api/webhooks/",),
    r"\bhttps://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w\-]{20,}",
)
_add(
    "stripe-key",
    ("_live_", "_test_", "whsec_"),
    r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}",
)
_add("twilio-key", ("ac", "sk"), r"\b(?:AC|SK)[0-9a-f]{32}\b", near=0)
_add("sendgrid-key", ("sg.",), r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}")
_add("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b")
_add("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b")
_add("pypi-token", ("pypi-age",), r"\bpypi-AgE[A-Za-z0-9_\-]{50,}")
_add("huggingface-token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b")
_add("digitalocean-token", ("_v1_",), r"\bdo[por]_v1_[a-f0-9]{64}\b")
_add(
    "shopify-token",
    ("shpat_", "shpss_", "shpca_", "shppa_"),
    r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b",
)
_add("telegram-bot-token", (":aa",), r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b")
_add(
    "azure-key",
    ("accountkey=", "sharedaccesskey=", "sharedaccesssignature=", "q~"),
    r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=[A-Za-z0-9+/=%]{20,}"
    r"|\b[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.\-]{31,34}\b",
)
_add(
    "bearer-token",
    ("bearer",),
    r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/\-]{16,}=*)",
    keep=lambda m: m.group(1) + _MASK.format("token"),
)
# Authorization: Basic base64(user:password); the header's name or a user:password shape
_add(
    "basic-auth",
    ("basic",),
    r"(?i)(\bauthorization[\"']?\s{0,5}[:=]\s{0,5}[\"']?basic\s+)([A-Za-z0-9+/]{6,}={0,2})"
    r"|(\bBasic\s+)((?=[A-Za-z0-9+/]{0,200}[0-9+/=])(?=[A-Za-z0-9+/]{0,200}[A-Z])"
    r"(?=[A-Za-z0-9+/]{0,200}[a-z])[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])",
    keep=lambda m: (m.group(1) or m.group(3)) + _MASK.format("token"),
    near=len('authorization"     :     "'),
)
# an Azure shared access signature's sig= parameter (a URL or a connection string)
_add(
    "azure-sas",
    ("sig=",),
    r"(?i)([?&;]sig=)([A-Za-z0-9%+/=_\-]{16,})",
    keep=lambda m: m.group(1) + _MASK.format("signature"),
)
# sshpass -p PASSWORD
_add(
    "sshpass",
    ("sshpass",),
    r"""(\bsshpass\b[^\n|;&]{0,80}?\s-p[ \t]*)(?!["']?\$)"""
    r"""("[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s"']{1,200})""",
    keep=lambda m: m.group(1) + _MASK.format("password"),
)
# curl -u user:password (or --user): keep the user
_add(
    "curl-user",
    ("curl",),
    r"""(\bcurl\b[^\n|;&]{0,200}?\s(?:-u|--user)(?:[ \t]+|=)?(["']?)(?!\$)[^\s:"'$]{1,100}:)"""
    r"""(?!\$|\[REDACTED)([^\s"']{1,200})""",
    keep=lambda m: m.group(1) + _MASK.format("password"),
)
# ~/.docker/config.json: "auth": "base64(user:password)", "identitytoken": "…"
_add(
    "docker-auth",
    ('"auth"', '"identitytoken"', '"registrytoken"'),
    r"""(?i)("(?:auth|identitytoken|registrytoken)"\s{0,5}:\s{0,5}")([A-Za-z0-9+/=._\-]{8,})(")""",
    keep=lambda m: m.group(1) + _MASK.format("secret") + m.group(3),
)
# scheme://user:password@host  → keep user and host
_add(
    "url-password",
    ("://",),
    r"\b([a-z][a-z0-9+.\-]{0,30}://[^\s:/@]{0,256}:)([^\s@/]{1,256})(@)",
    re.IGNORECASE,
    keep=lambda m: m.group(1) + _MASK.format("password") + m.group(3),
    near=31,  # the scheme's length
)
# --api-key VALUE, --token "VALUE", -p=VALUE style command-line flags
_add(
    "cli-secret",
    ("--",),
    r"""(?i)(--(?:api[-_]?key|token|secret|password|passwd|auth[-_]?token|access[-_]?token)"""
    r"""(?:\s+|=)(["']?))(?!\$|-|\[REDACTED)([^\s"'`]{8,})""",
    keep=lambda m: m.group(1) + _MASK.format("secret"),
)
# NAME_KEY=value, api_token: "value", CLIENT_SECRET = value, DB_PASSWORD=value.
# The match starts at the keyword; _assignment() looks back for the rest of the name (a
# pattern that starts at the name backtracks over every dotted word: quadratic).
_add(
    "assignment",
    ("key", "token", "secret", "passw", "pwd"),
    r"""(?ix)
    ((?:_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|_PWD|API_?KEY|SECRET_?KEY|
        ACCESS_?KEY|PRIVATE_?KEY|AUTH_?TOKEN|ACCESS_?TOKEN|PASSWORD|PASSWD|PWD|SECRET|TOKEN)\b
     ["']?\s*[:=]\s*)
    (["'])?
    (?!(?:os\.|process\.env|\$\{|\$[A-Z_]|env\(|getenv|settings\.|config\.|self\.|None\b|null\b|
        true\b|false\b|<|\[REDACTED|await\s|new\s|lambda\b|function\b|(?:env|secrets|vars)\.))
    ([^\s"'`,;&]{4,}(?(2)(?:\r?\n[^\s"'`,;&]{1,200}(?=\2))?))  # a quoted value wrapped once
    (\2|(?(2)(?=\s|$)))  # or cut off before its closing quote
    """,
    keep=lambda m: _assignment(m),
    near=len("private_"),
)


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")
_PATH_VALUE = re.compile(r"[/~.]|[A-Za-z]:[\\/]")
_YAML_TAG = re.compile(r"![A-Za-z_][\w-]*$")
"""A YAML local tag (``!secret``, not the ``!!str`` of a literal's type) standing for the value."""


def _assignment(m: re.Match[str]) -> str:
    """Mask the value of ``NAME_TOKEN = value`` unless the value is plainly code: a call or
    subscript (``get_password()``, ``headers["X"]``), the variable passed through
    (``api_key=api_key``, ``token = args.token``), or a YAML tag that looks the value up
    (``password: !secret db_password``)."""
    lhs, quote, value, close = m.group(1), m.group(2) or "", m.group(3), m.group(4) or ""
    if lhs.lstrip("_").upper().startswith("PWD") and _PATH_VALUE.match(value):
        return m.group(0)  # PWD=/home/me/project: the shell's working directory
    if not quote and _YAML_TAG.match(value) and lhs.rstrip().endswith(":"):
        return m.group(0)  # a reference to a secret (!secret, !env_var, !Ref …), not one
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


# A bare AWS secret access key: 40 characters of base64 with upper and lower case and a digit,
# not hex (commit ids), within 120 characters after "aws", "secret" or an access key id.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_CONTEXT = re.compile(r"(?i)aws|secret|\[REDACTED:aws-access-key\]")
_HEX = re.compile(r"[0-9a-fA-F]+")


def _aws_secret(m: re.Match[str]) -> str:
    v = m.group(0)
    if (
        _HEX.fullmatch(v)
        or not (any(c.isupper() for c in v) and any(c.islower() for c in v))
        or not any(c.isdigit() for c in v)
        or not _AWS_CONTEXT.search(m.string, max(0, m.start() - 120), m.start())
    ):
        return v
    return _MASK.format("aws-secret-key")


# A quoted value after a key-like name that a terminal's wrap has broken (``api_ke⏎y='…'``),
# the value too, anywhere (``'AIz⏎aSy…'``, ``'⏎eyJhbGci…⏎…'``); a mask already in it counts.
_QUOTED = re.compile(r"""(["'])((?:[A-Za-z0-9_\-./+:=%~\[\]]|\r?\n){12,2000})\1""")
_KEYED = re.compile(r"""(?i)(?:key|token|secret|passw(?:or)?d)["']?[:=]$""")


def _keyed_value(m: re.Match[str]) -> str:
    before = "".join(m.string[max(0, m.start() - 60) : m.start()].split())
    if not _KEYED.search(before) or sum(not c.isspace() for c in m.group(2)) < 12:
        return m.group(0)
    return m.group(1) + _MASK.format("secret") + m.group(1)


# The rest of a masked value that a terminal wrapped onto the next line (after a blank line and
# an indent, too): a run of 8+ token characters with a letter and a digit that starts the line.
_CONTINUED = re.compile(
    r"(\[REDACTED:[a-z-]+\][ \t]*\r?\n(?:[ \t]*\r?\n)?[ \t]*)"
    r"((?=[A-Za-z0-9_\-+/%]{0,200}\d)(?=[A-Za-z0-9_\-+/%]{0,200}[A-Za-z])[A-Za-z0-9_\-+/%]{8,200})"
    r"(?=[&\"'\s]|$)"
)


def _wrapped(text: str) -> str:
    """The checks that only matter for text with line breaks (a terminal's wrap)."""
    if "\n" not in text:
        return text
    text = _QUOTED.sub(_keyed_value, text)
    if "[REDACTED:" not in text:
        return text
    return _CONTINUED.sub(lambda m: m.group(1) + _MASK.format("secret"), text)


def _folded(text: str) -> str:
    """``text`` as the triggers are written: lowercase, with the letters a case-insensitive
    pattern takes for ``i`` and ``s`` (dotless ı, long ſ) written so (the Kelvin sign's
    lowercase is k already). Of the same length as ``text`` unless it holds an ``İ``."""
    folded = text.lower()
    if not folded.isascii():
        folded = folded.replace("ı", "i").replace("ſ", "s")
    return folded


def _sub_near(
    pattern: re.Pattern[str],
    repl: str | _Keep,
    text: str,
    folded: str,
    triggers: tuple[str, ...],
    near: int,
) -> str:
    """``pattern.sub(repl, text)`` for a pattern whose every match starts at most ``near``
    characters before an occurrence of one of ``triggers`` in ``folded`` (``text`` folded,
    character for character): the pattern is tried at those places only, left to right."""
    starts: set[int] = set()
    for t in triggers:
        at = folded.find(t)
        while at >= 0:
            starts.update(range(max(0, at - near), at + 1))
            at = folded.find(t, at + 1)
    out: list[str] = []
    done = 0
    for start in sorted(starts):
        if start < done:
            continue
        m = pattern.match(text, start)
        if m is None:
            continue
        out += (text[done : m.start()], repl if isinstance(repl, str) else repl(m))
        done = m.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


_ANY_TRIGGER = re.compile(
    "|".join(
        re.escape(t)
        for t in sorted({t for _, ts, *_ in _PATTERNS for t in ts} | {"aws"}, key=len, reverse=True)
    )
)
"""Any pattern's trigger (or the bare AWS secret's context): one scan that tells most short
texts (anchors, names, metadata) at once that they hold nothing to mask."""
_SHORT = 2_000
"""Texts up to this length are scanned for any trigger first; a longer one nearly always has
one, and testing each pattern's triggers costs it less than one more scan."""


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by a ``[REDACTED:kind]`` mask."""
    if not text:
        return text
    folded = _folded(text)
    if len(text) <= _SHORT and not _ANY_TRIGGER.search(folded):
        return _wrapped(text)
    for name, triggers, pattern, keep, near in _PATTERNS:
        if not any(t in folded for t in triggers):
            continue
        repl = _MASK.format(name) if keep is None else _skip_masked(keep)
        if near is None or len(folded) != len(text):
            masked = pattern.sub(repl, text)
        else:
            masked = _sub_near(pattern, repl, text, folded, triggers, near)
        if masked != text:
            text, folded = masked, _folded(masked)
    if "aws" in folded or "secret" in folded:
        text = _AWS_SECRET.sub(_aws_secret, text)
    return _wrapped(text)


KINDS: tuple[str, ...] = (*(name for name, *_ in _PATTERNS), "aws-secret-key")
"""The names of every kind of secret that :func:`redact` recognises."""


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
