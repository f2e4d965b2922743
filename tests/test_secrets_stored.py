"""No credential reaches disk: every kind, through every free-text field, in every file.

All values are synthetic and assembled from pieces, so no scanner mistakes this file for a leak;
none of them is a real credential.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from predictive.engine import ContextEngine, ContextRequest
from server.injection import Injector
from storage import Anchor, AnchorType, Kind, MemoryStore, NewMemory
from storage.embeddings import HashingEmbedder
from storage.redact import KINDS, redact
from storage.sessions import SessionStore
from storage.sources.records import ChatMessage, CodeBlock, Conversation

A36 = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zQw7E"  # 36 mixed characters
HEX32 = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

# kind → (a sentence that carries the secret, the secret itself)
SAMPLES: dict[str, tuple[str, str]] = {
    "github-classic": ("push with {} then", "ghp_" + A36),
    "github-fine-grained": ("token {} works", "github_pat_" + "11ABCDEFG0123456789_" * 4),
    "gitlab": ("gitlab {}", "glpat-" + "xXyYzZ0123456789aBcD"),
    "slack-bot": ("slack bot {}", "xox" + "b-1234567890-0987654321-" + "AbCdEfGhIjKlMnOp"),
    "slack-user": ("my slack {}", "xox" + "p-1234567890-0987654321-" + "ZyXwVuTsRqPoNmLk"),
    "slack-webhook": (
        "post to {} on deploy",
        "https://hooks.slack.com/services/" + "T0ABCDEF1/B0ABCDEF2/" + "Qr5tUv8wXy1zAb4cDe7fGh0i",
    ),
    "aws-access-key": ("the key id {} in ~/.aws", "AKIA" + "Q3DF7EXAMPL3TEST"),
    "aws-secret-bare": (
        "our aws secret is {} keep it safe",
        "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    ),
    "openai": ("old key {}.", "sk-" + "T3BlbkFJ" + "q1w2e3r4t5y6u7i8o9p0a1s2"),
    "openai-short": ("use {} for dev", "sk-" + "cd5" + "e9b1a0c7f3d2e6"),
    "openai-project": ("proj {}", "sk-" + "proj-" + A36),
    "openrouter": ("router {}", "sk-" + "or-v1-" + HEX32 + HEX32),
    "anthropic": ("claude {}", "sk-" + "ant-api03-" + A36 + "-AAAA"),
    "google": ("maps {} quota", "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "brave-in-code": ("EngineConfig(api_key='{}', enabled=True)", "BSA" + "wbw" + A36[:25]),
    "perplexity-in-code": ("Config(api_key='{}')", "pplx-" + A36 + "0123"),
    "perplexity-cli-flag": ('search -e pplx --api-key "{}" q', "pplx-" + A36[::-1] + "9876"),
    "hex-in-code": ("'deepl': EngineConfig(api_key='{}')", HEX32 + "-9beb"),
    "wrapped-in-terminal": ("EngineConfig(api_ke\ny='{}', enabled=True)", "ahWnvs" + A36[:26]),
    "stripe": ("stripe.api_key = '{}'", "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    "stripe-webhook": ("whsec {}", "whsec_" + A36),
    "twilio-sid": ("twilio account {}", "AC" + HEX32),
    "twilio-key": ("twilio api key {}", "SK" + HEX32[::-1]),
    "sendgrid": ("mail {}", "SG." + "Ab3dEf6hIj9kLm2nOp5qRs" + "." + A36 + "1234567"),
    "npm": ("//registry.npmjs.org/:_authToken={}", "npm_" + A36),
    "pypi": ("upload with {}", "pypi-AgEIcHlwaS5vcmc" + A36 + A36),
    "huggingface": ("HF {}", "hf_" + A36[:32]),
    "jwt": (
        "cookie {} expired",
        "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N",
    ),
    "private-key": (
        "key:\n{}\nend",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7V4"
        + "x9Qk2Jz\n-----END RSA PRIVATE KEY-----",
    ),
    "url-password": ("DATABASE_URL=postgres://admin:{}@db:5432/app", "S3cr3t" + "Passw0rd42"),
    "azure-storage": (
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={};",
        "Zm9vYmFy" + A36 + "==",
    ),
    "azure-client-secret": ("client secret {}", "abc" + "8Q~" + A36[:32]),
    "groq": ("groq {}", "gsk_" + A36 + "0123456789ab"),
    "digitalocean": ("doctl {}", "dop_v1_" + HEX32 + HEX32),
    "telegram": ("bot {}", "123456789:AA" + A36[:33]),
    "discord-webhook": (
        "notify {}",
        "https://discord.com/api/webhooks/" + "123456789012345678/" + A36 + "xyz",
    ),
    "assignment": ("export MY_SERVICE_TOKEN='{}'", "n0tAR3alT0ken" + "Value42"),
    "tavily": ("search with {} today", "tvly-" + A36[:32]),
    "tavily-dev": ("the dev key {} works", "tvly-dev-" + A36[::-1][:32]),
    "basic-auth": ("curl -H 'Authorization: Basic {}' https://x", "dXNlcjpT" + "ZWNyZXRQdzQy"),
    "slack-app": ("socket mode {}", "xapp-1-A0123456789-" + "1234567890123-" + HEX32 * 2),
    "google-oauth": ("oauth client secret {}", "GOCSPX-" + A36[:28]),
    "mailgun": ("mailgun {} ok", "key-" + "3ax6xnjp29jd6fds" + "4gc373sgvjxteol0"),
    "pwd": ("Server=db;Uid=sa;Pwd={};", "Sq1Serv3r" + "Pw0rd"),
    "passwd": ("passwd={}", "Unix" + "Passw0rd77"),
    "azure-sas": ("blob?sv=2020-08-04&sr=b&sig={}&se=x", "Zm9vYmFy" + A36[:20] + "%3D"),
    "sshpass": ("sshpass -p '{}' ssh root@host", "Ssh" + "Passw0rd!9"),
    "curl-user": ("curl -u admin:{} https://api.example.com", "Curl" + "Passw0rd8"),
    "docker-auth": ('{{"auths": {{"reg.io": {{"auth": "{}"}}}}}}', "ZG9ja2Vy" + "OlBhc3N3MHJk"),
    "linear": ("linear {}", "lin_api_" + A36 + "abcd"),
    "notion": ("notion {}", "secret_" + A36 + "abcdefg"),
    "heroku": ("heroku {}", "HRKU-AA" + A36 + "xyz"),
}


def text_of(kind: str) -> str:
    template, secret = SAMPLES[kind]
    return template.format(secret)


def secret_of(kind: str) -> str:
    return SAMPLES[kind][1]


def fragments(secret: str) -> list[bytes]:
    """The secret and its longest line (a private key spans lines): what must not be on disk."""
    longest = max(secret.splitlines(), key=len)
    return [secret.encode(), longest.encode()] if "\n" in secret else [secret.encode()]


def leaks(folder: Path, secret: str) -> list[str]:
    """Files under ``folder`` (database, WAL, vector index and sidecar …) holding the secret."""
    return [
        p.name
        for p in sorted(folder.rglob("*"))
        if p.is_file() and any(f in p.read_bytes() for f in fragments(secret))
    ]


def test_at_least_twenty_kinds_are_recognised() -> None:
    assert len(set(KINDS)) >= 20
    for kind in SAMPLES:
        out = redact(text_of(kind))
        assert secret_of(kind) not in out, kind
        assert "[REDACTED:" in out, kind


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_no_secret_reaches_the_database_its_wal_or_the_vector_index(
    tmp_path: Path, kind: str
) -> None:
    data = tmp_path / "data"
    store = MemoryStore(data / "memory.db", embedder=HashingEmbedder(dim=64))
    text, secret = text_of(kind), secret_of(kind)
    try:
        a = store.add(
            NewMemory(
                f"Decision: rotate credentials. {text}",
                kind=Kind.DECISION,
                summary=f"summary {text}",
                anchors=[Anchor(AnchorType.TAG, text), Anchor(AnchorType.FILE, f"cfg/{text}")],
                fact_key=f"cred {text}",
                fact_value=text,
                metadata={"note": text, "nested": [{"deep": text}]},
            )
        ).id
        b = store.add(NewMemory(f"Other decision about {kind}", kind=Kind.DECISION)).id
        store.embeddings.embed_pending()
        store.usage.record_many([a], context=f"cited because {text}")
        store.archive(b, reason=f"leaked {text}")
        cid = store.contradictions.add(a, b, reason=f"differs: {text}")
        store.contradictions.resolve(cid, "both_valid", note=f"note {text}")
        SessionStore(store).save(
            Conversation(
                "cursor",
                f"s-{kind}",
                (
                    ChatMessage(
                        0,
                        "user",
                        f"here you go {text}",
                        code_blocks=(CodeBlock(f"x = 1\n{text}\n", "python"),),
                        metadata={"toolOutput": text},
                    ),
                    ChatMessage(1, "assistant", "Thanks, stored."),
                ),
                title=f"setup {text}",
                metadata={"raw": text},
            ),
            summary=f"about {text}",
        )
        store.reindex()  # writes the vector index and its sidecar
        open_leaks = leaks(data, secret)  # the WAL still holds every page written
        names = [p.name for p in data.iterdir()]
        assert any(n.endswith("-wal") for n in names), names
        assert any(n.endswith(".usearch") for n in names), names
    finally:
        store.close()
    assert open_leaks == []
    assert leaks(data, secret) == []


def test_no_secret_reaches_the_injected_files(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "data" / "memory.db", embedder=HashingEmbedder(dim=64))
    try:
        for kind in SAMPLES:
            store.add(
                NewMemory(
                    f"Convention for {kind}: {text_of(kind)}",
                    kind=Kind.CONVENTION,
                    anchors=[Anchor(AnchorType.FILE, "app.py"), Anchor(AnchorType.TAG, kind)],
                    importance=0.9,
                )
            )
        ctx = ContextEngine(store).assemble(ContextRequest("app.py", text="x = 1\n", budget=60_000))
        folder = tmp_path / "ws"
        folder.mkdir()
        result = Injector(folder, ["cursor", "copilot", "agents"]).write(ctx.markdown)
    finally:
        store.close()
    assert len(result.written) == 3
    assert ctx.markdown.count("[REDACTED:") >= 10  # the memories are really in the context
    for kind in SAMPLES:
        assert leaks(folder, secret_of(kind)) == [], kind


def test_no_secret_in_cli_output_or_the_database(tmp_path: Path, env: dict[str, str]) -> None:
    every = "\n".join(text_of(k) for k in SAMPLES)

    def cli(*args: str, stdin: str | None = None) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "server", *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout + r.stderr

    out = cli("remember", "--json", "--tag", every.splitlines()[0], "-", stdin=every)
    mid = str(json.loads(out)["id"])
    out += cli("forget", mid, "--reason", every)
    out += cli("show", mid, "--json")
    out += cli("search", "--json", "--archived", "credentials slack stripe")
    data = Path(env["LIVING_MEMORY_DB"]).parent
    for kind in SAMPLES:
        assert secret_of(kind) not in out, kind
        assert leaks(data, secret_of(kind)) == [], kind
    assert "[REDACTED:" in out


# ---- every front door at once ---------------------------------------------------------------


def one_line(kind: str) -> bool:
    return "\n" not in text_of(kind)


def raw_traces(secret: str) -> list[bytes]:
    """What of ``secret`` must not be on disk: itself, its lowercase form (a derived topic
    word), and its first two thirds (a label cut inside it)."""
    longest = max(secret.splitlines(), key=len)
    cut = longest[: max(12, len(longest) * 2 // 3)]
    return [t.encode() for t in {longest, longest.lower(), cut}]


def traces_in(folder: Path, secret: str) -> list[str]:
    found = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            blob = p.read_bytes()
            found += [f"{p.name}: {t!r}" for t in raw_traces(secret) if t in blob]
    return found


def plant_in_project(project: Path, home: Path, every: str) -> None:
    """The secrets in a git commit, a decision record, rule files and the chats of SpecStory,
    Claude Code, Copilot and Cursor, where ``living-memory ingest`` reads them."""
    from chat_fixtures import (
        build_cursor_workspace,
        write_claude_session,
        write_copilot_session,
        write_specstory,
    )
    from project_fixtures import git

    (project / "docs" / "adr").mkdir(parents=True)
    (project / "docs" / "adr" / "0001-credentials.md").write_text(
        f"# 1. Credentials\n\nDate: 2024-05-01\n\n## Status\n\nAccepted\n\n## Context\n\n{every}\n"
        f"\n## Decision\n\nWe keep them here:\n\n{every}\n\n## Consequences\n\nNone.\n"
    )
    (project / "AGENTS.md").write_text(f"# Rules\n\n## Credentials\n\nAlways use these:\n{every}\n")
    (project / ".cursor" / "rules").mkdir(parents=True)
    (project / ".cursor" / "rules" / "creds.mdc").write_text(
        f"---\ndescription: creds\nalwaysApply: true\n---\n\nNever log these:\n{every}\n"
    )
    git(project, "add", ".")
    git(project, "commit", "-qm", f"Rotate every credential\n\n{every}")
    for kind in SAMPLES:  # a subject line each: labels are cut from it
        if one_line(kind):
            git(project, "commit", "-q", "--allow-empty", "-m", f"Set {text_of(kind)} for CI")
    write_specstory(
        project,
        text=f"<!-- Generated by SpecStory -->\n\n# Keys {text_of('tavily')} (2024-06-01 10:00:00)"
        f"\n\n_**User**_\n\n{every}\n\n---\n\n_**Assistant**_\n\nStored: {every}\n\n---\n",
    )
    claude = write_claude_session(home.parent, project, home=home)
    lines = claude.path.read_text().splitlines()
    text = json.dumps(f"Why does load() fail? {every}")[1:-1]
    claude.path.write_text("\n".join(ln.replace("Why does load() fail?", text) for ln in lines))
    copilot = write_copilot_session(home.parent, project, home=home)
    session = json.loads(copilot.path.read_text())
    session["customTitle"] = text_of("digitalocean") + " " + text_of("twilio-key")
    session["requests"][0]["message"]["text"] = every
    session["requests"][1]["message"] = f"Thanks for {every}"
    copilot.path.write_text(json.dumps(session))
    title = " ".join(text_of(k) for k in ("pypi", "digitalocean", "twilio-key", "tavily-dev"))
    build_cursor_workspace(home.parent, "D", project, home=home, title=title)


async def plant_through_mcp(project: Path, data: Path, every: str) -> None:
    from mcp_support import call, mcp_session

    singles = [text_of(k) for k in SAMPLES if one_line(k)]
    async with mcp_session(project, data) as s:
        await call(
            s,
            "remember",
            text=f"Decision: rotate. {every}",
            kind="decision",
            anchors=[f"tag:{t}" for t in singles] + [f"file:cfg/{t}" for t in singles[:20]],
            tags=singles,
            budget=50_000,
        )
        await call(
            s,
            "lock_context",
            name="all keys",
            content=every,
            tags=singles,
            note=every,
            budget=50_000,
        )
        for n, t in enumerate(singles):
            await call(s, "lock_context", name=t[:200], content=f"lock {n}: {t}", tags=[t])


def plant_through_hooks(project: Path, env: dict[str, str], every: str) -> str:
    """A Claude Code session whose prompts and transcript hold every secret, through the
    hook events an agent sends (prompt, edit, stop)."""
    import time

    from test_hooks import HOOK, shape, write_transcript

    hook_env = {**env, "LIVING_MEMORY_HOOK_SYNC": "1", "LIVING_MEMORY_HOOK_DAEMON": "0"}
    transcript = project.parent / "claude" / "session.jsonl"
    turns = [
        ("user", f"Keys for the deploy: {every}"),
        ("assistant", [{"type": "text", "text": f"Stored them in cfg/keys.py: {every}"}]),
    ]
    write_transcript(transcript, turns, project, time.time() - 60)
    values = {"CWD": str(project), "TRANSCRIPT": str(transcript), "PROMPT": every}
    said = ""
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
        r = subprocess.run(
            [*HOOK, event, "--client", "claude"],
            input=json.dumps(shape("claude", event, **values)),
            capture_output=True,
            text=True,
            env=hook_env,
            cwd=project,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        said += r.stdout + r.stderr
    return said


def test_no_planted_secret_reaches_the_data_folder_or_an_injected_file_by_any_door(
    tmp_path: Path,
) -> None:
    import asyncio

    from mcp_support import db_of, server_env
    from project_fixtures import make_git_repo

    every = "\n".join(text_of(k) for k in SAMPLES)
    assert len(SAMPLES) >= 40
    project = make_git_repo(tmp_path).root
    home, data = tmp_path / "home", tmp_path / "data"
    env = {**server_env(data), "HOME": str(home)}
    plant_in_project(project, home, every)

    def cli(*args: str, stdin: str | None = None) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "server", *args],
            cwd=project,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout + r.stderr

    channels = {
        "cli remember": lambda: cli(
            "remember",
            "--json",
            "--source",
            f"import {text_of('github-classic')}",
            "--source-id",
            text_of("stripe"),
            "--artifact",
            f"pr:{text_of('jwt')}",
            f"Note: {every}",
        ),
        "stdin": lambda: cli("remember", "--json", "-", stdin=f"From stdin: {every}"),
        "tags and anchors": lambda: cli(
            "remember",
            "--json",
            *[a for k in SAMPLES if one_line(k) for a in ("--tag", text_of(k))],
            *[a for k in SAMPLES if one_line(k) for a in ("-a", f"file:cfg/{text_of(k)}")],
            "tagged note",
        ),
        "forget reason": lambda: cli(
            "forget",
            str(json.loads(cli("remember", "--json", "to forget"))["id"]),
            "--reason",
            every,
        ),
        # git commits, decision records, rule files, SpecStory, Claude Code, Copilot, Cursor
        "ingest": lambda: cli("ingest", "--json"),
        "mcp remember and lock_context": lambda: (
            asyncio.run(plant_through_mcp(project, data, every)) or ""
        ),
        "hooks": lambda: plant_through_hooks(project, env, every),
    }
    out = {name: plant() for name, plant in channels.items()}
    ingested = json.loads(out["ingest"][out["ingest"].index("{") :])
    for source in ("git", "adr", "rules", "chats"):
        assert ingested["sources"][source]["read"] >= 1, (source, ingested["sources"][source])
    assert ingested["sources"]["chats"]["sessions"] >= 4  # SpecStory, Claude, Copilot, Cursor

    store = MemoryStore(db_of(project, data), embedder=HashingEmbedder())
    try:
        store.embeddings.embed_pending()
        store.reindex()
        sources = {m.source for m in store.list(limit=100_000)}
        from test_hooks import SESSION

        from storage.sessions import sessions_of

        assert sessions_of(store).find("claude", SESSION) is not None  # the hooks' session
        engine = ContextEngine(store, root=project)
        contexts = [
            engine.assemble(ContextRequest(path, text="x = 1\n", budget=60_000)).markdown
            for path in ("src/api.py", "AGENTS.md", "docs/adr/0001-credentials.md", "cfg/x.py")
        ]
    finally:
        store.close()
    assert {"git", "adr", "rules", "mcp"} <= sources and any(
        s.startswith("chat:") for s in sources
    ), sources
    folder = tmp_path / "ws"
    folder.mkdir()
    written = Injector(folder, ["cursor", "copilot", "agents"]).write("\n\n".join(contexts))
    assert len(written.written) == 3
    assert "[REDACTED:" in "".join(contexts)
    leaked = {}
    for kind in SAMPLES:
        secret = secret_of(kind)
        found = traces_in(data, secret) + traces_in(folder, secret)
        found += [f"output of {n}" for n, o in out.items() if secret in o]
        if found:
            leaked[kind] = found
    assert leaked == {}
