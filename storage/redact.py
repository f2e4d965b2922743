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
_add("gitlab-token", r"\bgl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_\-]{20,}\b")
_add("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}")
_add("openrouter-key", r"\bsk-or-v1-[A-Za-z0-9]{20,}")
_add(
    "openai-key", r"\bsk-(?=[A-Za-z0-9_\-]{0,200}?\d)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"
)
_add("groq-key", r"\bgsk_[A-Za-z0-9]{20,}")
_add("xai-key", r"\bxai-[A-Za-z0-9]{40,}")
_add("cerebras-key", r"\bcsk-[A-Za-z0-9]{20,}")
_add("perplexity-key", r"\bpplx-[A-Za-z0-9]{20,}")
_add("brave-search-key", r"\bBSA[A-Za-z0-9_\-]{20,}")
_add("tavily-key", r"\btvly-(?:dev-|prod-)?[A-Za-z0-9]{16,}")
_add("google-oauth-secret", r"\bGOCSPX-[A-Za-z0-9_\-]{20,}")
_add("mailgun-key", r"\bkey-[0-9a-z]{32}\b")
_add("linear-key", r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}")
_add("notion-token", r"\bsecret_(?=[A-Za-z0-9]{0,80}\d)[A-Za-z0-9]{40,}\b|\bntn_[A-Za-z0-9]{40,}")
_add("heroku-key", r"\bHRKU-[A-Za-z0-9_\-]{20,}")
# also a key that a terminal wrapped onto the next line (or cut off)
_add(
    "google-api-key",
    r"\bAIza[0-9A-Za-z_\-]{35}"
    r"|\bAIza[0-9A-Za-z_\-]{8,34}(?:[ \t]*\r?\n[ \t]*[0-9A-Za-z_\-]{1,34})?",
)
_add(
    "slack-webhook",
    r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{8,}",
)
_add("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}")
_add(
    "discord-webhook",
    r"\bhttps://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w\-]{20,}",
)
_add("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}")
_add("twilio-key", r"\b(?:AC|SK)[0-9a-f]{32}\b")
_add("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}")
_add("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b")
_add("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b")
_add("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}")
_add("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b")
_add("digitalocean-token", r"\bdo[por]_v1_[a-f0-9]{64}\b")
_add("shopify-token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b")
_add("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b")
_add(
    "azure-key",
    r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=[A-Za-z0-9+/=%]{20,}"
    r"|\b[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.\-]{31,34}\b",
)
_add(
    "bearer-token",
    r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/\-]{16,}=*)",
    keep=lambda m: m.group(1) + _MASK.format("token"),
)
# Authorization: Basic base64(user:password); the header's name or a user:password shape
_add(
    "basic-auth",
    r"(?i)(\bauthorization[\"']?\s{0,5}[:=]\s{0,5}[\"']?basic\s+)([A-Za-z0-9+/]{6,}={0,2})"
    r"|(\bBasic\s+)((?=[A-Za-z0-9+/]{0,200}[0-9+/=])(?=[A-Za-z0-9+/]{0,200}[A-Z])"
    r"(?=[A-Za-z0-9+/]{0,200}[a-z])[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])",
    keep=lambda m: (m.group(1) or m.group(3)) + _MASK.format("token"),
)
# an Azure shared access signature's sig= parameter (a URL or a connection string)
_add(
    "azure-sas",
    r"(?i)([?&;]sig=)([A-Za-z0-9%+/=_\-]{16,})",
    keep=lambda m: m.group(1) + _MASK.format("signature"),
)
# sshpass -p PASSWORD
_add(
    "sshpass",
    r"""(\bsshpass\b[^\n|;&]{0,80}?\s-p[ \t]*)(?!["']?\$)"""
    r"""("[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s"']{1,200})""",
    keep=lambda m: m.group(1) + _MASK.format("password"),
)
# curl -u user:password (or --user): keep the user
_add(
    "curl-user",
    r"""(\bcurl\b[^\n|;&]{0,200}?\s(?:-u|--user)(?:[ \t]+|=)?(["']?)(?!\$)[^\s:"'$]{1,100}:)"""
    r"""(?!\$|\[REDACTED)([^\s"']{1,200})""",
    keep=lambda m: m.group(1) + _MASK.format("password"),
)
# ~/.docker/config.json: "auth": "base64(user:password)", "identitytoken": "…"
_add(
    "docker-auth",
    r"""(?i)("(?:auth|identitytoken|registrytoken)"\s{0,5}:\s{0,5}")([A-Za-z0-9+/=._\-]{8,})(")""",
    keep=lambda m: m.group(1) + _MASK.format("secret") + m.group(3),
)
# scheme://user:password@host  → keep user and host
_add(
    "url-password",
    r"\b([a-z][a-z0-9+.\-]{0,30}://[^\s:/@]{0,256}:)([^\s@/]{1,256})(@)",
    re.IGNORECASE,
    keep=lambda m: m.group(1) + _MASK.format("password") + m.group(3),
)
# --api-key VALUE, --token "VALUE", -p=VALUE style command-line flags
_add(
    "cli-secret",
    r"""(?i)(--(?:api[-_]?key|token|secret|password|passwd|auth[-_]?token|access[-_]?token)"""
    r"""(?:\s+|=)(["']?))(?!\$|-|\[REDACTED)([^\s"'`]{8,})""",
    keep=lambda m: m.group(1) + _MASK.format("secret"),
)
# NAME_KEY=value, api_token: "value", CLIENT_SECRET = value, DB_PASSWORD=value.
# The match starts at the keyword; _assignment() looks back for the rest of the name (a
# pattern that starts at the name backtracks over every dotted word: quadratic).
_add(
    "assignment",
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


# Every pattern above needs one of these substrings; text without any is returned at once
# (most anchors, paths and short messages), which makes redaction ~10× cheaper on average.
_MAYBE_SECRET = re.compile(
    r"PRIVATE KEY|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|gl[a-z]{1,3}-|sk-|AIza|xox|"
    r"_live_|_test_|whsec_|eyJ|npm_|hf_|bearer|://|key|token|secret|passw|pwd|aws|pplx-|BSA|"
    r"gsk_|xai-|csk-|AC[0-9a-f]{32}|SK[0-9a-f]{32}|SG\.|pypi-|_v1_|shp|:AA|Q~|AccountKey|"
    r"SharedAccess|tvly-|basic|xapp-|GOCSPX-|sig=|sshpass|curl|\"auth\"|lin_|ntn_|HRKU-",
    re.IGNORECASE,
)


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
    return _CONTINUED.sub(lambda m: m.group(1) + _MASK.format("secret"), text)


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by a ``[REDACTED:kind]`` mask."""
    if not text:
        return text
    if not _MAYBE_SECRET.search(text):
        return _wrapped(text)
    for name, pattern, keep in _PATTERNS:
        if keep is None:
            text = pattern.sub(_MASK.format(name), text)
        else:
            text = pattern.sub(_skip_masked(keep), text)
    if _AWS_CONTEXT.search(text):
        text = _AWS_SECRET.sub(_aws_secret, text)
    return _wrapped(text)


KINDS: tuple[str, ...] = (*(name for name, _, _ in _PATTERNS), "aws-secret-key")
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
