"""Secret redaction: what is masked, what is left alone, and proof that secrets never reach
the database file. Fake secrets are assembled from pieces so this file holds none verbatim."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import Anchor, Artifact, MemoryStore, NewMemory
from storage.embeddings import HashingEmbedder
from storage.redact import redact, redact_value

AWS = "AKIA" + "IOSFODNN7EXAMPL3"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GH_CLASSIC = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
GH_OAUTH = "gho_" + "Z9y8X7w6V5u4T3s2R1q0" * 2
GH_FINE = "github_pat_" + "11ABCDEFG0123456789_" * 4
OPENAI = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" + "AbCdEfGh"
OPENAI_OLD = "sk-" + "T3BlbkFJ" + "q1w2e3r4t5y6u7i8o9p0a1s2"
ANTHROPIC = "sk-" + "ant-api03-" + "Qw3rTy6UiO9pAs2DfG5hJk8LzX1cV4bN7mM0" + "-AAAA"
SLACK = "xox" + "b-1234567890-0987654321-" + "AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_RESTRICTED = "rk_" + "live_" + "51H8xYzAbCdEfGhIjKlMnOp"
GOOGLE = "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    "." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
BEARER = "opaque" + "Tok3nValue0123456789abcd"
GITLAB = "glpat-" + "xXyYzZ0123456789aBcD"
NPM = "npm_" + "a1b2c3d4e5f6g7h8i9j0A1B2C3D4E5F6G7H8"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
DB_PASS = "S3cr3t" + "Passw0rd"
PEM_BODY = "MIIEowIBAAKCAQEA7V4" + "x9Qk2Jz\nBxQy8H3kL0pWm5R" + "tY2vN7cX1aZ4sD6fG8hJ0kL2\n"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "q9W8e7R6t5Y4u3I2o1P0==\n"
    "-----END RSA PRIVATE KEY-----"
)
OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAA" + "BG5vbmUAAAAEbm9uZQ\n"
    "-----END OPENSSH PRIVATE KEY-----"
)

POSITIVES = [
    # (text, the secret that must disappear, text that must survive)
    (f"the deploy user has key {AWS} in ~/.aws", AWS, "the deploy user has key"),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_access_key = "),
    (f"push with {GH_CLASSIC} then", GH_CLASSIC, "push with"),
    (f"oauth token {GH_OAUTH}", GH_OAUTH, "oauth token"),
    (f"fine-grained: {GH_FINE}", GH_FINE, "fine-grained:"),
    (f"client = OpenAI(api_key='{OPENAI}')", OPENAI, "client = OpenAI("),
    (f"old key {OPENAI_OLD}.", OPENAI_OLD, "old key"),
    (f"claude key: {ANTHROPIC}", ANTHROPIC, "claude key"),
    (f"slack bot {SLACK}", SLACK, "slack bot"),
    (f"stripe.api_key = '{STRIPE}'", STRIPE, "stripe.api_key"),
    (f"restricted {STRIPE_RESTRICTED}", STRIPE_RESTRICTED, "restricted"),
    (f"maps {GOOGLE} quota", GOOGLE, "quota"),
    (f"session cookie {JWT} expired", JWT, "expired"),
    (f"Authorization: Bearer {BEARER}", BEARER, "Authorization: Bearer "),
    (f"curl -H 'authorization: bearer {BEARER}'", BEARER, "curl -H"),
    (f"gitlab {GITLAB}", GITLAB, "gitlab"),
    (f"//registry.npmjs.org/:_authToken={NPM}", NPM, "registry.npmjs.org"),
    (f"HF token {HF}", HF, "HF token"),
    (f"key file:\n{PEM}\nend of note", "x9Qk2Jz", "end of note"),
    (f"ssh:\n{OPENSSH}", "BG5vbmUAAAAEbm9uZQ", "ssh:"),
    (
        f"DATABASE_URL=postgres://admin:{DB_PASS}@db.internal:5432/app",
        DB_PASS,
        "postgres://admin:",
    ),
    (f"mysql://root:{DB_PASS}@localhost/x", DB_PASS, "@localhost/x"),
    (f"redis://:{DB_PASS}@cache:6379/0", DB_PASS, "@cache:6379/0"),
    (f"https://bob:{DB_PASS}@git.example.com/r.git", DB_PASS, "https://bob:"),
    (f"OPENAI_API_KEY={DB_PASS}", DB_PASS, "OPENAI_API_KEY="),
    (f"export GITHUB_TOKEN='{DB_PASS}'", DB_PASS, "export GITHUB_TOKEN="),
    (f"CLIENT_SECRET: {DB_PASS}", DB_PASS, "CLIENT_SECRET"),
    (f'STRIPE_WEBHOOK_SECRET = "{DB_PASS}"', DB_PASS, "STRIPE_WEBHOOK_SECRET"),
    (f'password: "{DB_PASS}"', DB_PASS, "password:"),
    (f"DB_PASSWORD={DB_PASS}", DB_PASS, "DB_PASSWORD="),
    (f'{{"api_key": "{DB_PASS}", "user": "bob"}}', DB_PASS, '"user": "bob"'),
    (f"secret_key = '{DB_PASS}'", DB_PASS, "secret_key"),
    (f"auth_token={DB_PASS}&page=2", DB_PASS, "&page=2"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), POSITIVES, ids=[p[2] for p in POSITIVES])
def test_secrets_are_masked(text: str, secret: str, kept: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    assert kept in out
    assert redact(out) == out  # idempotent


def test_private_key_block_is_masked_whole() -> None:
    out = redact(f"before\n{PEM}\nafter")
    assert out == "before\n[REDACTED:private-key]\nafter"
    truncated = "-----BEGIN PRIVATE KEY-----\n" + PEM_BODY  # pasted without its END line
    assert "x9Qk2Jz" not in redact(truncated)


def test_url_password_keeps_user_and_host() -> None:
    out = redact(f"postgres://admin:{DB_PASS}@db.internal:5432/app")
    assert out == "postgres://admin:[REDACTED:password]@db.internal:5432/app"


def test_assignment_keeps_the_name_and_quotes() -> None:
    assert redact(f'API_KEY="{DB_PASS}"') == 'API_KEY="[REDACTED:secret]"'
    assert redact(f"MY_SERVICE_TOKEN={DB_PASS} next") == "MY_SERVICE_TOKEN=[REDACTED:secret] next"


NEGATIVES = [
    "We rotate the refresh token every hour and hash the password with argon2.",
    "The API_KEY variable must be set before running the tests.",
    'token = os.environ["X"]',
    "api_key = os.getenv('OPENAI_API_KEY')",
    "password = None",
    "token: ${GITHUB_TOKEN}",
    "SECRET_KEY = settings.SECRET_KEY",
    "password: <your password here>",
    "def get_api_key(self) -> str:",
    "refreshToken = await rotateRefreshToken(user)",
    "self.token = token",
    "client = Client(api_key=api_key)",
    "password = get_password()",
    'api_key = request.headers["X-Api-Key"]',
    "token = args.token",
    "headers['Authorization'] = f'Bearer {token}'",
    "MAX_TOKENS = 4096",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the flaky test",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "clone https://github.com/org/repo.git or git@github.com:org/repo.git",
    "see https://user@example.com/path and http://localhost:8080/a:b",
    "the task-force-alpha-bravo-charlie-delta meets; disk-usage-monitoring-tool-v2",
    "use AKIA-style keys only in CI",
    "src/auth/session.py:42 raised KeyError: 'token'",
    "",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_and_code_are_left_alone(text: str) -> None:
    assert redact(text) == text


REFERENCES = [
    "password: !secret db_password",  # Home Assistant's secrets.yaml
    "  mqtt_password: !secret mqtt_password",
    "password: !secret",
    "api_token: !env_var HA_API_TOKEN",
    "Password: !Ref DatabasePassword",  # CloudFormation
    "password: ${DB_PASSWORD}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: '{{ secrets.DB_PASSWORD }}'",
    "password: <password>",
    "password = os.environ['DB_PASSWORD']",
    "password: secrets.DB_PASSWORD",
    "token: env.GITHUB_TOKEN",
]


@pytest.mark.parametrize("text", REFERENCES)
def test_a_reference_to_a_secret_is_not_a_secret(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("password: hunter2xyz", "password: [REDACTED:secret]"),
        ('password: "hunter2xyz"', 'password: "[REDACTED:secret]"'),
        ("PASSWORD=!hunter2xyz", "PASSWORD=[REDACTED:secret]"),  # "=": no YAML tag
        (
            "http:\n  password: !secret http_pw\n  token: hunter2xyz",
            "http:\n  password: !secret http_pw\n  token: [REDACTED:secret]",
        ),
    ],
)
def test_a_literal_beside_a_reference_is_still_a_secret(text: str, masked: str) -> None:
    assert redact(text) == masked


def test_redact_value_walks_nested_structures() -> None:
    value = {"a": [f"key {GH_CLASSIC}", {"b": f"DB_PASSWORD={DB_PASS}"}], "n": 3, "t": None}
    out = redact_value(value)
    assert GH_CLASSIC not in repr(out) and DB_PASS not in repr(out)
    assert out["n"] == 3 and out["t"] is None
    assert redact_value(("x", 1)) == ["x", 1]


# ---- nothing reaches the file ---------------------------------------------------------------

FILE_SECRETS = [
    AWS,
    GH_CLASSIC,
    GH_FINE,
    OPENAI,
    ANTHROPIC,
    SLACK,
    STRIPE,
    GOOGLE,
    JWT,
    BEARER,
    DB_PASS,
    "x9Qk2Jz",
    "Tr0ub4dor" + "AndHorse",
    "Upd4ted" + "S3cretVal",
    "Anch0r" + "S3cretVal",
    "Cat3gory" + "S3cretVal",
    "N0te" + "S3cretVal",
    "R3ason" + "S3cretVal",
    "Edg3Meta" + "S3cretVal",
    "Titl3" + "S3cretVal",
]


def _file_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def test_secrets_never_reach_the_database_file(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    store = MemoryStore(db, embedder=HashingEmbedder(dim=64))
    try:
        a = store.add(
            NewMemory(
                text=f"Deploy with {AWS} and {GH_CLASSIC}; db is postgres://app:{DB_PASS}@db/x",
                summary=f"uses {OPENAI} for summaries",
                compressed=f"slack {SLACK}",
                index_label=f"stripe {STRIPE}",
                anchors=[Anchor.parse(f"tag:{GOOGLE}"), Anchor.parse("file:deploy.sh")],
                artifacts=[Artifact("url", f"https://u:{DB_PASS}@h/x", f"token {JWT}")],
                fact_key="ci.token",
                fact_value=f"GITHUB_TOKEN={'Tr0ub4dor' + 'AndHorse'}",
                metadata={"headers": {"Authorization": f"Bearer {BEARER}"}, "k": [ANTHROPIC]},
            )
        ).id
        b = store.add(NewMemory(text=f"key block\n{PEM}\n", summary=f"pat {GH_FINE}")).id
        store.update(b, text=f"API_SECRET={'Upd4ted' + 'S3cretVal'} in the new config")
        store.update(a, anchors=[Anchor.parse(f"tag:DB_PASSWORD={'Anch0r' + 'S3cretVal'}")])
        store.add_anchors(b, [Anchor.parse(f"error:AUTH_TOKEN={'Anch0r' + 'S3cretVal'}")])
        store.graph.add(
            a, b, "RELATES_TO", metadata={"why": "PASSWORD=" + "Edg3Meta" + "S3cretVal"}
        )
        cid = store.contradictions.add(a, b, reason="SECRET=" + "R3ason" + "S3cretVal")
        store.contradictions.resolve(cid, "both_valid", note="TOKEN=" + "N0te" + "S3cretVal")
        store.categories.ensure("ops", description="OPS_KEY=" + "Cat3gory" + "S3cretVal")
        store.categories.set_summary("ops", "PASSWORD=" + "Cat3gory" + "S3cretVal")
        store.add(
            NewMemory(
                text="artifact titles too",
                artifacts=[Artifact("pr", "12", "SECRET_KEY=" + "Titl3" + "S3cretVal")],
            )
        )
        for m in store.list():
            blob = repr(m.to_dict())
            for secret in FILE_SECRETS:
                assert secret not in blob
        assert "[REDACTED:" in store.get(a).text
        assert store.get(a).text.startswith("Deploy with ")
        # while the store is open (as after a crash) the WAL holds the recent writes
        open_files = _file_bytes(tmp_path)
        assert open_files.get("memory.db-wal"), "expected a WAL file while open"
        _assert_no_secrets(open_files)
    finally:
        store.close()
    files = _file_bytes(tmp_path)
    assert "memory.db" in files
    _assert_no_secrets(files)


def _assert_no_secrets(files: dict[str, bytes]) -> None:
    for name, data in files.items():
        for secret in FILE_SECRETS:
            assert secret.encode() not in data, (name, secret)
            assert secret.encode("utf-16-le") not in data, (name, secret)


@pytest.mark.parametrize(
    "text",
    [
        "a." * 50_000,  # dotted names: once quadratic, minutes per line
        "ab-" * 33_000,
        "http://" + "a:" * 50_000,
        "a+" * 50_000,
        "a:b@" * 25_000,
        "x_key=" * 16_000,
        "password: " + "a" * 100_000,
    ],
    ids=["dots", "dashes", "url-colons", "scheme-chars", "at-signs", "assignments", "long-value"],
)
def test_pathological_text_is_redacted_in_linear_time(text: str) -> None:
    # No clock here: a quadratic pattern would take many minutes on these 100 kB inputs.
    out = redact(text)
    assert len(out) <= len(text) + 20


def test_long_names_and_long_values_are_masked_whole() -> None:
    name = "A" * 150 + "_TOKEN"
    value = "Zx9" * 400
    out = redact(f"{name}={value} tail")
    assert out == f"{name}=[REDACTED:secret] tail"


# ---- formats that once slipped through ------------------------------------------------------

MIXED = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zQw7E"
PW = "S3cret" + "Pw42x"
MORE_FORMATS = [
    # (text, the secret that must disappear, text that must survive)
    (f"search with tvly-{MIXED[:32]} today", "tvly-" + MIXED[:32], "search with"),
    (f"TAVILY_API_KEY is tvly-dev-{MIXED[:32]}", MIXED[:32], "TAVILY_API_KEY is"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA", "curl -H"),
    ('{"Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"}', "YWxhZGRpbjpvcGVuc2VzYW1l", "Basic"),
    ("sent Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ== to it", "QWxhZGRpbjpvcGVuIHNlc2FtZQ", "to it"),
    ("app token xapp-1-A0123456789-1234567890123-" + "ab01" * 16, "ab01" * 16, "app token"),
    (f"client secret GOCSPX-{MIXED[:28]}", MIXED[:28], "client secret"),
    ("mailgun key-3ax6xnjp29jd6fds4gc373sgvjxteol0 ok", "3ax6xnjp29jd6fds4gc373sgvjxteol0", "ok"),
    (f"Server=db;Uid=sa;Pwd={PW};", PW, "Uid=sa;Pwd="),
    (f"passwd={PW}", PW, "passwd="),
    (f"blob?sv=2020-08-04&sr=b&sig=Zm9vYmFyYmF6{PW}%3D&se=x", PW, "&se=x"),
    (f"sshpass -p '{PW}' ssh root@host", PW, "ssh root@host"),
    (f"sshpass -p {PW} ssh root@host", PW, "sshpass -p"),
    (f"curl -u admin:{PW} https://api.example.com", PW, "curl -u admin:"),
    (f"curl -s --user admin:{PW} https://api.example.com", PW, "https://api.example.com"),
    ('{"auths": {"reg.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}}', "dXNlcjpwYXNzd29yZA", '"reg.io"'),
    (f"linear lin_api_{MIXED}abcd", MIXED, "linear"),
    (f"notion secret_{MIXED}abcdefg", MIXED, "notion"),
    (f"notion ntn_{MIXED}abcdefg", MIXED, "notion"),
    (f"heroku HRKU-AA{MIXED}xyz", MIXED, "heroku"),
]


@pytest.mark.parametrize(
    ("text", "secret", "kept"), MORE_FORMATS, ids=[t[0][:24] for t in MORE_FORMATS]
)
def test_more_formats_are_masked(text: str, secret: str, kept: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    assert kept in out
    assert redact(out) == out


LOOK_ALIKES = [
    "The basic idea is simple.",
    "Basic authentication is deprecated; use tokens instead.",
    "Basic Usage",
    "cd $PWD && ls",
    "PWD=/home/me/project",
    "OLDPWD=/tmp",
    "pwd = os.getcwd()",
    "passwd = getpass()",
    "secret_key_base = settings.x",
    "secret_santa_assignments_for_the_whole_team_party_list",
    "curl -u $USER:$PASS https://x",
    "curl -u user: https://x",
    "curl -sSL https://get.example.com | sh",
    'sshpass -p "$SSHPASS" ssh host',
    "a key-value store",
    "def check_sig(sig=None):",
    "url?sig=abc",
    'see the "auth": section',
    '"auth": true',
    "the tvly- prefix marks Tavily keys",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_of_the_new_formats_are_left_alone(text: str) -> None:
    assert redact(text) == text


GOOGLE_BODY = "SyA2eX12EtH1jTK" + "-uyJKsbDr3yzGhUvVzS8"
WRAPPED = [
    # a pasted terminal dump, wrapped at its width inside the name, the prefix and the value
    (f"EngineConfig(api_key='AIz\na{GOOGLE_BODY}', enabled=True)", GOOGLE_BODY),
    (f"EngineConfig(api_key='AI\nza{GOOGLE_BODY}', enabled=True)", GOOGLE_BODY),
    (
        "Config(api_key='\nfe261e3d-c087-4775-b04f-"
        + "5ab4eb537a97:4ff2f70c-b6e0-4555-\naa2f', x=1)",
        "5ab4eb537a97",
    ),
    (
        "Config(api_k\ney='zsk-58954e51842bb1b87a" + "23fcb68a1d1f7f94dad\ncd526a', x=1)",
        "23fcb68a1d",
    ),
    (
        "Config(api_key='\neyJhbGciOiJIUzI1NiIsInR5cCI6Ik"
        + "pXVCJ9.eyJpZCI6IjY1Mz\nhbGciOiJ', x=1)",
        "pXVCJ9.eyJpZCI6",
    ),
    (
        "q=Adam&\n\n      api_key=abcdef0123456789\n\n      be134505081c6e2b"
        + "44100ff00647f&engine=g",
        "44100ff00647f",
    ),
]


@pytest.mark.parametrize(("text", "secret"), WRAPPED, ids=[str(i) for i in range(len(WRAPPED))])
def test_a_value_a_terminal_wrapped_anywhere_is_masked_whole(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and "[REDACTED:" in out
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "x = 'abc'\ny = 'def'\nname = 'a_very_long_identifier_name'\n",
        "KEY_NAME = 'x'\nfoo('some/path/to/file.py')\n",
        "token = get()\n\n    release-2024-candidate is out\n",
        "api_key = os.environ['KEY']\n'another/string/value/here'\n",
    ],
)
def test_wrapped_look_alikes_are_left_alone(text: str) -> None:
    assert redact(text) == text


# ---- triggers: a pattern is run only on text holding one of its literals --------------------


def _every_sample() -> list[str]:
    from test_secrets_stored import SAMPLES

    texts = [t for t, _, _ in POSITIVES + MORE_FORMATS] + NEGATIVES + REFERENCES + LOOK_ALIKES
    texts += [t for t, _ in WRAPPED] + [template.format(s) for template, s in SAMPLES.values()]
    texts += [f"xai-{MIXED}{MIXED}", f"csk-{MIXED}", "shpat_" + "0f1e2d3c4b5a6978" * 2]
    return texts


def test_every_match_of_a_pattern_holds_one_of_its_triggers_where_it_says() -> None:
    from storage.redact import _PATTERNS, _folded

    matched = set()
    for text in _every_sample():
        folded = _folded(text)
        for name, triggers, pattern, _, near in _PATTERNS:
            for m in pattern.finditer(text):
                matched.add(name)
                assert any(t in _folded(m.group(0)) for t in triggers), (name, m.group(0))
                if near is not None:  # it starts at most `near` characters before a trigger
                    window = folded[m.start() : m.start() + near + max(map(len, triggers))]
                    assert any(window.find(t) in range(near + 1) for t in triggers), name
    assert matched == {name for name, *_ in _PATTERNS}  # the samples exercise every one


def test_trying_a_pattern_near_its_triggers_masks_what_trying_it_everywhere_masks() -> None:
    from storage.redact import _PATTERNS, _folded, _sub_near

    filler = "a key, a token and basic auth over https://example.com, back on track. " * 40
    texts = _every_sample()
    texts += [filler + t + filler + t for t in texts[:40]]
    near_ones = [(n, tr, p, near) for n, tr, p, _, near in _PATTERNS if near is not None]
    assert {n for n, *_ in near_ones} >= {"assignment", "url-password", "basic-auth"}
    for text in texts:
        for name, triggers, pattern, near in near_ones:
            mask = f"<{name}>"
            expected = pattern.sub(mask, text)
            assert _sub_near(pattern, mask, text, _folded(text), triggers, near) == expected


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # letters a case-insensitive pattern takes for ASCII ones: long s, dotless i, Kelvin sign
        (f"DB_PAſSWORD={DB_PASS}", DB_PASS),
        (f"CLIENT_\u212aEY={DB_PASS}", DB_PASS),
        ("curl -H 'Authorization: Basıc dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA"),
        (f"TOKEN: {DB_PASS}", DB_PASS),
    ],
)
def test_look_alike_letters_in_a_keyword_still_trigger_its_pattern(text: str, secret: str) -> None:
    assert secret not in redact(text)


def test_a_long_message_is_masked_wherever_its_secret_is() -> None:
    filler = "Ordinary prose about the build, the tests and the release. " * 2_000
    for at in (0, len(filler) // 2, len(filler)):
        text = filler[:at] + f" export GITHUB_TOKEN='{DB_PASS}' and {GH_CLASSIC} " + filler[at:]
        out = redact(text)
        assert DB_PASS not in out and GH_CLASSIC not in out
        assert out.count("[REDACTED:") == 2
