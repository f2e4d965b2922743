"""Replay benchmark: scripted editing sessions over a small project, each step labelled with
the memories it needs. Reports the share of needed memories the assembled context contains
(target > 70 %) and the share of context tokens spent on memories no step asked for.

    .venv/bin/python -m bench.bench_replay [--embedder real|hashing] [--distractors 400]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from predictive.compress import backfill_levels
from predictive.engine import ContextEngine, ContextRequest
from predictive.signals import Diagnostic
from storage import Anchor, AnchorType, Artifact, Kind, MemoryStore, NewMemory

FILES: dict[str, str] = {
    "src/payments/stripe_client.py": (
        "import json\nfrom payments.retry import backoff\nfrom auth.tokens import service_token\n\n"
        "class StripeClient:\n    def charge(self, amount_cents, currency):\n        ...\n"
        "    def refund(self, charge_id):\n        ...\n"
    ),
    "src/payments/retry.py": (
        "import random\nimport time\n\ndef backoff(fn, attempts=3):\n    ...\n"
    ),
    "src/auth/tokens.py": (
        "import jwt\nfrom auth.keys import signing_key\n\ndef issue_token(user):\n    ...\n"
        "def refresh_token(token):\n    ...\ndef service_token():\n    ...\n"
    ),
    "src/auth/session.py": (
        "from auth.tokens import refresh_token\nfrom storage.redis import client\n\n"
        "class SessionStore:\n    ...\n"
    ),
    "src/api/routes.py": (
        "from payments.stripe_client import StripeClient\nfrom auth.session import SessionStore\n"
        "\ndef checkout(request):\n    ...\n"
    ),
    "tests/test_stripe_client.py": (
        "import pytest\nfrom payments.stripe_client import StripeClient\n\n"
        "def test_charge_uses_idempotency_key():\n    ...\n"
    ),
    "web/src/components/Checkout.tsx": (
        "import React from 'react';\nimport { postCheckout } from '../api/client';\n\n"
        "export function Checkout() { return null; }\n"
    ),
    "web/src/api/client.ts": (
        "import axios from 'axios';\n\nexport async function postCheckout(body: unknown) {}\n"
    ),
}


def A(t: str, v: str) -> Anchor:
    return Anchor(AnchorType(t), v)


# key → memory. Anchors are what an ingester would plausibly have attached.
LABELLED: dict[str, NewMemory] = {
    "stripe_idem": NewMemory(
        "Every Stripe charge sends an idempotency key derived from the order id, so retries "
        "never double-charge.",
        kind=Kind.DECISION,
        anchors=[A("file", "src/payments/stripe_client.py")],
        artifacts=[Artifact("adr", "docs/adr/0004-idempotent-charges.md")],
    ),
    "cents": NewMemory(
        "Amounts are integers in cents everywhere; never floats.",
        kind=Kind.DECISION,
        anchors=[A("module", "payments")],
    ),
    "sdk": NewMemory(
        "We call Stripe through the official stripe SDK, not raw requests, for webhooks "
        "signature checks.",
        kind=Kind.DECISION,
        anchors=[A("module", "payments.stripe_client")],
    ),
    "retry_policy": NewMemory(
        "backoff() retries 3 times with full jitter; never wrap it in another retry loop.",
        kind=Kind.PATTERN,
        anchors=[A("module", "payments.retry"), A("symbol", "backoff")],
    ),
    "refund_fix": NewMemory(
        "Refund failed with AttributeError: 'Refund' has no attribute 'charge_id' — fixed by "
        "using refund.charge.id.",
        kind=Kind.SOLUTION,
        anchors=[
            A("file", "src/payments/stripe_client.py"),
            A(
                "error",
                "pyright:reportattributeaccessissue: cannot access attribute <v> for class <v>",
            ),
        ],
    ),
    "jwt_rotation": NewMemory(
        "Refresh tokens rotate on every use; the old token is revoked in Redis.",
        kind=Kind.DECISION,
        anchors=[A("file", "src/auth/tokens.py"), A("tag", "auth")],
    ),
    "jwt_alg": NewMemory(
        "Tokens are signed with EdDSA keys from auth.keys; HS256 is forbidden.",
        kind=Kind.DECISION,
        anchors=[A("module", "auth.keys"), A("tag", "auth")],
    ),
    "session_redis": NewMemory(
        "Sessions live in Redis with a 14-day TTL, keyed by session id.",
        kind=Kind.DECISION,
        anchors=[A("file", "src/auth/session.py")],
    ),
    "redis_timeout_fix": NewMemory(
        "ConnectionError: Timeout reading from Redis in SessionStore — fixed by setting "
        "socket_timeout=2 and retry_on_timeout.",
        kind=Kind.SOLUTION,
        anchors=[A("module", "storage.redis"), A("tag", "redis")],
    ),
    "routes_auth": NewMemory(
        "Every API route checks the session before touching payments.",
        kind=Kind.CONVENTION,
        anchors=[A("file", "src/api/routes.py")],
    ),
    "test_fixtures": NewMemory(
        "Payment tests use the stripe-mock fixture; never hit the real Stripe API in tests.",
        kind=Kind.CONVENTION,
        anchors=[A("file", "tests/test_stripe_client.py"), A("tag", "testing")],
    ),
    "checkout_ui": NewMemory(
        "Checkout disables the pay button while postCheckout is pending to avoid double submits.",
        kind=Kind.DECISION,
        anchors=[A("file", "web/src/components/Checkout.tsx")],
    ),
    "axios_interceptor": NewMemory(
        "The axios client attaches the CSRF token in an interceptor; do not add it per call.",
        kind=Kind.PATTERN,
        anchors=[A("file", "web/src/api/client.ts")],
    ),
    "lint": NewMemory("Always run ruff and eslint before committing.", kind=Kind.CONVENTION),
    "refund_branch": NewMemory(
        "Partial refunds are allowed up to the captured amount; refunds above it are rejected.",
        kind=Kind.FACT,
        anchors=[A("tag", "refunds")],
    ),
    "ts_error_fix": NewMemory(
        "TS2345 Argument of type 'unknown' is not assignable — fixed by validating the body "
        "with zod before postCheckout.",
        kind=Kind.SOLUTION,
        anchors=[A("file", "web/src/api/client.ts")],
    ),
}


@dataclass
class Step:
    file: str
    needs: set[str]
    branch: str | None = "main"
    diagnostics: tuple[Diagnostic, ...] = ()
    label: str = ""


@dataclass
class Session:
    name: str
    steps: list[Step] = field(default_factory=list)


def sessions() -> list[Session]:
    refund_err = Diagnostic(
        "src/payments/stripe_client.py",
        1,
        'Cannot access attribute "charge_id" for class "Refund"',
        "reportAttributeAccessIssue",
        "pyright",
        9,
        15,
    )
    return [
        Session(
            "payments feature",
            [
                Step(
                    "src/payments/stripe_client.py",
                    {"stripe_idem", "cents", "sdk", "retry_policy"},
                    "feature/refunds",
                    label="open client",
                ),
                Step(
                    "src/payments/retry.py",
                    {"retry_policy", "cents"},
                    "feature/refunds",
                    label="switch to retry",
                ),
                Step(
                    "tests/test_stripe_client.py",
                    {"test_fixtures", "stripe_idem"},
                    "feature/refunds",
                    label="open test",
                ),
                Step(
                    "src/payments/stripe_client.py",
                    {"refund_fix", "stripe_idem"},
                    "feature/refunds",
                    (refund_err,),
                    label="error appears",
                ),
                Step(
                    "src/payments/stripe_client.py",
                    {"refund_branch", "stripe_idem"},
                    "feature/refunds",
                    label="error fixed",
                ),
            ],
        ),
        Session(
            "auth debugging",
            [
                Step("src/auth/tokens.py", {"jwt_rotation", "jwt_alg"}, "fix/session-timeout"),
                Step(
                    "src/auth/session.py",
                    {"session_redis", "redis_timeout_fix", "jwt_rotation"},
                    "fix/session-timeout",
                ),
                Step("src/api/routes.py", {"routes_auth", "session_redis"}, "fix/session-timeout"),
            ],
        ),
        Session(
            "frontend",
            [
                Step(
                    "web/src/components/Checkout.tsx", {"checkout_ui", "axios_interceptor"}, "main"
                ),
                Step(
                    "web/src/api/client.ts",
                    {"axios_interceptor", "ts_error_fix"},
                    "main",
                    (
                        Diagnostic(
                            "web/src/api/client.ts",
                            1,
                            "Argument of type 'unknown' is not assignable to parameter of "
                            "type 'CheckoutBody'.",
                            "2345",
                            "ts",
                            3,
                            40,
                        ),
                    ),
                ),
            ],
        ),
    ]


def distractors(n: int, seed: int = 7) -> list[NewMemory]:
    rng = random.Random(seed)
    areas = ["billing", "search", "analytics", "email", "catalog", "inventory", "admin", "cdn"]
    verbs = ["caches", "batches", "validates", "logs", "paginates", "retries", "indexes"]
    out = []
    for i in range(n):
        area = rng.choice(areas)
        kind = rng.choice(list(Kind))
        out.append(
            NewMemory(
                f"The {area} service {rng.choice(verbs)} "
                f"{rng.choice(['orders', 'users', 'events'])}"
                f" in {area}/{rng.choice(['worker', 'api', 'jobs'])}_{i}.py; note {i}: "
                + " ".join(
                    rng.choice(
                        [
                            "it",
                            "runs",
                            "nightly",
                            "with",
                            "a",
                            "queue",
                            "and",
                            "metrics",
                            "dashboards",
                        ]
                    )
                    for _ in range(rng.randint(8, 40))
                ),
                kind=kind,
                anchors=[A("file", f"src/{area}/module_{i % 50}.py"), A("tag", area)],
                importance=rng.random(),
            )
        )
    return out


def run(embedder: str, n_distractors: int, budget: int) -> dict:
    from storage.embeddings import HashingEmbedder, load_embedder

    emb = load_embedder() if embedder == "real" else HashingEmbedder()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "project"
        for rel, text in FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        store = MemoryStore(Path(d) / "memory.db", embedder=emb)
        ids = {}
        for key, mem in LABELLED.items():
            ids[key] = store.add(mem).id
        store.add_many(distractors(n_distractors))
        backfill_levels(store)
        engine = ContextEngine(store, root=root, budget=None)
        key_of = {v: k for k, v in ids.items()}
        rows = []
        for s in sessions():
            for step in s.steps:
                t0 = time.perf_counter()
                result = engine.assemble(
                    ContextRequest(
                        path=step.file,
                        branch=step.branch,
                        diagnostics=step.diagnostics,
                        root=str(root),
                        budget=budget,
                    )
                )
                ms = (time.perf_counter() - t0) * 1e3
                shown = {key_of[i] for i in result.memory_ids if i in key_of}
                found = step.needs & shown
                item_tokens = {i.memory_id: i.tokens for i in result.items if i.memory_id}
                needed_ids = {ids[k] for k in step.needs}
                wasted = sum(t for mid, t in item_tokens.items() if mid not in needed_ids)
                rows.append(
                    {
                        "session": s.name,
                        "step": step.label or step.file,
                        "file": step.file,
                        "needed": len(step.needs),
                        "found": len(found),
                        "missing": sorted(step.needs - shown),
                        "tiers_of_needed": {
                            k: next(i.tier.value for i in result.items if i.memory_id == ids[k])
                            for k in sorted(found)
                        },
                        "tokens": result.tokens["total"],
                        "unneeded_tokens": wasted,
                        "ms": round(ms, 2),
                    }
                )
        store.close()
    recall = sum(r["found"] for r in rows) / sum(r["needed"] for r in rows)
    per_step = statistics.mean(r["found"] / r["needed"] for r in rows)
    waste = sum(r["unneeded_tokens"] for r in rows) / max(1, sum(r["tokens"] for r in rows))
    return {
        "embedder": embedder,
        "distractors": n_distractors,
        "budget": budget,
        "needed_present": recall,
        "needed_present_per_step": per_step,
        "unneeded_token_share": waste,
        "steps": rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--embedder", choices=["real", "hashing"], default="real")
    p.add_argument("--distractors", type=int, default=400)
    p.add_argument("--budget", type=int, default=8000)
    p.add_argument("--json", type=Path, help="also write the result here")
    a = p.parse_args(argv)
    out = run(a.embedder, a.distractors, a.budget)
    for r in out["steps"]:
        miss = f" missing {', '.join(r['missing'])}" if r["missing"] else ""
        print(
            f"{r['session']:<18} {r['step']:<34} {r['found']}/{r['needed']} "
            f"{r['tokens']:>5} tok {r['unneeded_tokens']:>5} unneeded {r['ms']:>7.1f} ms{miss}"
        )
    print(
        f"\nneeded memories present: {out['needed_present']:.1%} "
        f"(per step {out['needed_present_per_step']:.1%}); tokens on memories no step "
        f"needed: {out['unneeded_token_share']:.1%}"
    )
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
