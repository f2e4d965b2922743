"""A deterministic generator of realistic project memories, and queries with known targets.

The memories describe an invented but plausible code base: two dozen areas (payments, auth,
search, ...), each with Python modules under ``src/`` and TypeScript files under ``web/src/``,
functions and classes named the way people name them (``retry_webhook_delivery``,
``fetchInvoiceTotals``, ``LedgerReconciler``), error signatures, branches, ADRs, PRs and
tickets. All nine kinds appear, texts run from one to six sentences, and every text is
distinct. The same ``(n, seed)`` always gives the same list.

``generate_queries`` writes, for a sample of memories, a question that paraphrases the
memory's topic (identifiers split into words, verbs swapped for synonyms, the predicate asked
about rather than stated). It is a sanity check that search finds what it should — not a
quality benchmark; LoCoMo (``bench_locomo.py``) is the quality benchmark.

    python -m bench.generate --n 20 --seed 0          # print a sample
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
from dataclasses import dataclass

from storage import Anchor, AnchorType, Artifact, Kind, NewMemory

# ---- vocabulary ----------------------------------------------------------------------------

# area -> (python modules, nouns the area deals in, external service)
AREAS: dict[str, tuple[list[str], list[str], str]] = {
    "payments": (
        ["stripe_client", "charges", "refunds", "payouts", "currency"],
        ["charge", "refund", "payout", "card", "payment_intent", "customer"],
        "Stripe",
    ),
    "billing": (
        ["invoices", "subscriptions", "proration", "tax_rates", "dunning"],
        ["invoice", "subscription", "plan", "tax_rate", "coupon", "line_item"],
        "Chargebee",
    ),
    "auth": (
        ["session", "tokens", "oauth", "password_reset", "permissions"],
        ["session", "access_token", "refresh_token", "role", "permission", "login"],
        "Auth0",
    ),
    "search": (
        ["indexer", "query_parser", "ranking", "synonyms", "facets"],
        ["document", "query", "facet", "shard", "synonym", "ranking_rule"],
        "Elasticsearch",
    ),
    "notifications": (
        ["email_sender", "push", "templates", "digest", "preferences"],
        ["email", "push_message", "template", "digest", "unsubscribe", "channel"],
        "SendGrid",
    ),
    "ingest": (
        ["csv_loader", "validators", "dedupe", "pipeline", "schema_map"],
        ["record", "batch", "row", "column", "import_job", "schema"],
        "S3",
    ),
    "inventory": (
        ["stock", "warehouses", "reservations", "sku", "replenishment"],
        ["sku", "warehouse", "reservation", "stock_level", "shipment", "bin"],
        "ShipBob",
    ),
    "orders": (
        ["checkout", "cart", "fulfilment", "returns", "order_state"],
        ["order", "cart", "checkout", "return", "fulfilment", "discount"],
        "Shopify",
    ),
    "analytics": (
        ["events", "funnels", "sessions_rollup", "exporter", "cohorts"],
        ["event", "funnel", "cohort", "metric", "dashboard", "rollup"],
        "BigQuery",
    ),
    "users": (
        ["profiles", "avatars", "onboarding", "gdpr", "teams"],
        ["profile", "avatar", "team", "invitation", "account", "consent"],
        "Clearbit",
    ),
    "storage": (
        ["uploads", "thumbnails", "quotas", "signed_urls", "lifecycle"],
        ["upload", "thumbnail", "bucket", "quota", "signed_url", "blob"],
        "GCS",
    ),
    "scheduler": (
        ["cron", "job_queue", "retries", "locks", "workers"],
        ["job", "worker", "lock", "schedule", "queue", "lease"],
        "Celery",
    ),
    "api": (
        ["routes", "middleware", "pagination", "rate_limit", "serializers"],
        ["endpoint", "request", "response", "cursor", "rate_limit", "header"],
        "Cloudflare",
    ),
    "webhooks": (
        ["dispatcher", "signatures", "delivery", "subscriptions_hooks", "replay"],
        ["webhook", "delivery", "signature", "endpoint_url", "event_payload", "attempt"],
        "Svix",
    ),
    "reporting": (
        ["pdf_export", "scheduled_reports", "aggregations", "charts", "csv_export"],
        ["report", "chart", "aggregation", "export", "column", "filter"],
        "Metabase",
    ),
    "i18n": (
        ["translations", "locale", "plurals", "timezones", "formatting"],
        ["locale", "translation", "timezone", "plural_rule", "message_key", "currency_format"],
        "Crowdin",
    ),
    "feature_flags": (
        ["flags", "rollout", "targeting", "experiments", "overrides"],
        ["flag", "rollout", "experiment", "variant", "segment", "override"],
        "LaunchDarkly",
    ),
    "audit": (
        ["audit_log", "retention", "exports_audit", "redaction", "trail"],
        ["audit_event", "actor", "retention_policy", "trail", "entry", "export"],
        "Datadog",
    ),
    "messaging": (
        ["chat", "threads", "attachments", "presence", "moderation"],
        ["message", "thread", "attachment", "presence", "mention", "reaction"],
        "Pusher",
    ),
    "geo": (
        ["geocoder", "routing", "zones", "distance", "address_parser"],
        ["address", "route", "zone", "coordinate", "postcode", "geofence"],
        "Mapbox",
    ),
    "ml": (
        ["feature_store", "training", "inference", "embeddings_svc", "drift"],
        ["feature", "model", "prediction", "embedding", "training_run", "threshold"],
        "SageMaker",
    ),
    "infra": (
        ["terraform_vars", "deploy", "healthchecks", "secrets", "autoscaling"],
        ["deployment", "container", "healthcheck", "secret", "node_pool", "replica"],
        "Kubernetes",
    ),
    "cache": (
        ["redis_client", "invalidation", "warmup", "ttl", "memoize"],
        ["cache_key", "ttl", "entry", "namespace", "eviction", "hit_rate"],
        "Redis",
    ),
    "db": (
        ["migrations", "connection_pool", "replicas", "query_builder", "backups"],
        ["migration", "connection", "replica", "transaction", "index", "backup"],
        "PostgreSQL",
    ),
}

VERBS = [
    "fetch",
    "parse",
    "validate",
    "retry",
    "sync",
    "build",
    "load",
    "render",
    "compute",
    "normalize",
    "dispatch",
    "serialize",
    "reconcile",
    "refresh",
    "cache",
    "flush",
    "resolve",
    "schedule",
    "handle",
    "apply",
    "create",
    "update",
    "delete",
    "merge",
    "export",
    "import",
    "enqueue",
    "verify",
    "format",
    "compact",
]

# verb -> synonyms a person asking a question might use instead
VERB_SYNONYMS: dict[str, list[str]] = {
    "fetch": ["get", "retrieve", "pull"],
    "parse": ["read", "decode", "interpret"],
    "validate": ["check", "verify"],
    "retry": ["re-attempt", "try again"],
    "sync": ["synchronise", "mirror"],
    "build": ["assemble", "construct", "make"],
    "load": ["read in", "open"],
    "render": ["draw", "display"],
    "compute": ["calculate", "work out"],
    "normalize": ["clean up", "canonicalise"],
    "dispatch": ["send out", "route"],
    "serialize": ["encode", "convert to JSON"],
    "reconcile": ["match up", "balance"],
    "refresh": ["renew", "reload"],
    "cache": ["memoise", "keep in memory"],
    "flush": ["write out", "empty"],
    "resolve": ["look up", "figure out"],
    "schedule": ["plan", "queue up"],
    "handle": ["deal with", "process"],
    "apply": ["use", "put in place"],
    "create": ["make", "add"],
    "update": ["change", "modify"],
    "delete": ["remove", "drop"],
    "merge": ["combine", "join"],
    "export": ["dump", "write out"],
    "import": ["bring in", "ingest"],
    "enqueue": ["queue", "push onto the queue"],
    "verify": ["confirm", "check"],
    "format": ["pretty-print", "lay out"],
    "compact": ["shrink", "squash"],
}

SUFFIXES = ["", "", "", "", "batch", "async", "for_user", "by_id", "safe", "v2", "all", "once"]
ROLES = ["Client", "Service", "Repository", "Manager", "Handler", "Serializer", "Validator"]
ROLES += ["Cache", "Builder", "Resolver", "Worker", "Adapter", "Policy", "Scheduler"]

PEOPLE = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Julia"]
PEOPLE += ["Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tomoko"]

FIELDS = ["user_id", "amount", "currency", "created_at", "email", "status", "tenant_id", "items"]
FIELDS += ["token", "expires_at", "locale", "quantity", "sku", "metadata", "cursor", "region"]

GENERIC_ERRORS = [
    ("KeyError", "KeyError: '{field}'"),
    ("TypeError", "TypeError: Cannot read properties of undefined (reading '{field}')"),
    ("TypeError", "TypeError: 'NoneType' object is not subscriptable"),
    ("ValueError", "ValueError: invalid literal for int() with base 10: '{field}'"),
    ("IntegrityError", "IntegrityError: UNIQUE constraint failed: {table}.{field}"),
    ("OperationalError", "sqlite3.OperationalError: database is locked"),
    ("TimeoutError", "TimeoutError: {service} did not answer within {n}s"),
    ("ConnectionResetError", "ConnectionResetError: [Errno 104] Connection reset by peer"),
    ("JSONDecodeError", "json.decoder.JSONDecodeError: Expecting value: line 1 column 1"),
    ("HTTPError", "HTTPError: 429 Too Many Requests from {service}"),
    ("HTTPError", "HTTPError: 502 Bad Gateway from {service}"),
    ("RecursionError", "RecursionError: maximum recursion depth exceeded"),
    ("AssertionError", "AssertionError: expected {field} to be set"),
    ("UnicodeDecodeError", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff"),
    ("MemoryError", "MemoryError in {symbol}"),
    ("DeadlockDetected", "psycopg2.errors.DeadlockDetected: deadlock detected"),
    ("SSLError", "ssl.SSLError: certificate verify failed for {service}"),
    ("PermissionError", "PermissionError: [Errno 13] Permission denied: '/var/run/{area}'"),
]

BRANCH_PREFIXES = ["feature", "fix", "chore", "refactor", "perf", "hotfix"]

TECH = ["Redis", "Kafka", "PostgreSQL", "SQLite", "gRPC", "GraphQL", "Celery", "asyncio"]
TECH += ["Pydantic", "SQLAlchemy", "FastAPI", "React Query", "Zod", "Protobuf", "msgpack"]


# ---- one memory's topic --------------------------------------------------------------------


@dataclass
class Topic:
    area: str
    module: str  # python module file stem
    noun: str
    verb: str
    symbol: str  # the function or method the memory is about
    cls: str  # a class nearby
    file: str  # repository path
    module_path: str  # dotted module
    error_class: str
    error: str  # full error signature
    service: str
    person: str
    branch: str
    number: int  # a PR/ticket-ish number unique-ish to the memory
    ts: bool  # TypeScript side instead of Python


def _camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


def _pascal(words: list[str]) -> str:
    return "".join(w.capitalize() for w in words)


def plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def words_of(identifier: str) -> str:
    """``fetchInvoiceTotals`` / ``fetch_invoice_totals`` -> ``fetch invoice totals``."""
    parts = re.split(r"[_\W]+", identifier)
    out: list[str] = []
    for p in parts:
        out += re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", p)
    return " ".join(w.lower() for w in out if w)


def _topic(rng: random.Random) -> Topic:
    area = rng.choice(list(AREAS))
    modules, nouns, service = AREAS[area]
    module = rng.choice(modules)
    noun = rng.choice(nouns)
    verb = rng.choice(VERBS)
    suffix = rng.choice(SUFFIXES)
    words = [verb, *noun.split("_"), *([*suffix.split("_")] if suffix else [])]
    ts = rng.random() < 0.3
    cls = _pascal([*noun.split("_"), rng.choice(ROLES).lower()])
    if ts:
        symbol = _camel(words)
        file = f"web/src/{area}/{_camel(module.split('_'))}.ts"
        module_path = f"web/src/{area}/{_camel(module.split('_'))}"
    else:
        symbol = "_".join(words)
        if rng.random() < 0.35:
            symbol = f"{cls}.{symbol}"
        file = f"src/{area}/{module}.py"
        module_path = f"{area}.{module}"
    error_class, template = rng.choice(GENERIC_ERRORS)
    if rng.random() < 0.3:
        error_class = _pascal([*area.split("_"), *noun.split("_"), "error"])
        template = (
            error_class
            + ": "
            + rng.choice(
                [
                    "{noun} {n} not found",
                    "could not {verb} {noun}",
                    "{noun} is in an invalid state",
                    "{service} rejected the {noun}",
                ]
            )
        )
    fmt = {
        "field": rng.choice(FIELDS),
        "table": area if not noun.endswith("s") else noun,
        "service": service,
        "n": rng.choice([5, 10, 15, 30, 60]),
        "symbol": symbol.split(".")[-1],
        "area": area,
        "noun": noun.replace("_", " "),
        "verb": verb,
    }
    error = template.format(**fmt)
    branch = f"{rng.choice(BRANCH_PREFIXES)}/{area.replace('_', '-')}-{noun.replace('_', '-')}"
    if rng.random() < 0.5:
        branch += f"-{rng.randint(100, 9999)}"
    return Topic(
        area=area,
        module=module,
        noun=noun,
        verb=verb,
        symbol=symbol,
        cls=cls,
        file=file,
        module_path=module_path,
        error_class=error_class,
        error=error,
        service=service,
        person=rng.choice(PEOPLE),
        branch=branch,
        number=rng.randint(100, 99999),
        ts=ts,
    )


# ---- sentences: (statement, question) pairs per kind ---------------------------------------
#
# The first sentence of every memory is its "lead": a statement with a matching question that
# paraphrases it. The remaining sentences are detail drawn from shared and per-kind pools.


def _fmt(template: str, t: Topic, rng: random.Random, extra: dict[str, str]) -> str:
    values = {
        "symbol": f"`{t.symbol}`",
        "symbol_words": words_of(t.symbol.split(".")[-1]),
        "symbol_last": t.symbol.split(".")[-1],
        "cls": f"`{t.cls}`",
        "file": t.file,
        "module": t.module_path,
        "noun": t.noun.replace("_", " "),
        "nouns": plural(t.noun.replace("_", " ")),
        "verb": t.verb,
        "verb_syn": rng.choice(VERB_SYNONYMS[t.verb]),
        "area": t.area.replace("_", " "),
        "service": t.service,
        "error": f"`{t.error}`",
        "error_class": t.error_class,
        "person": t.person,
        "branch": t.branch,
        "num": str(t.number),
        "field": f"`{rng.choice(FIELDS)}`",
        "tech": rng.choice(TECH),
        "tech2": rng.choice(TECH),
        "n": str(rng.choice([2, 3, 5, 10, 20, 30, 50, 100, 250, 500])),
        "pct": str(rng.choice([5, 10, 20, 25, 40, 60, 80, 95])),
        "ms": str(rng.choice([40, 80, 120, 250, 400, 800, 1500])),
        "other_person": rng.choice(PEOPLE),
        **extra,
    }
    return template.format(**values)


FACT_LEADS = [
    (
        "{symbol} in {file} returns amounts in minor units (cents), never as floats.",
        "does {symbol_words} give money in cents or as a float",
    ),
    (
        "{symbol} is only called from the nightly cron job in {module}.",
        "who calls {symbol_words}, is it the nightly job",
    ),
    (
        "{symbol} caches its result in Redis for {n} minutes, keyed by {field}.",
        "how long is the {symbol_words} result cached",
    ),
    (
        "{symbol} reads its limits from config/{area}.yaml at import time, not per request.",
        "where does {symbol_words} get its limits from",
    ),
    (
        "{cls} is not thread-safe; {symbol} must not be shared between workers.",
        "can {symbol_words} be used from several threads",
    ),
    (
        "{symbol} talks to the {service} API over HTTPS with a {n} second timeout.",
        "what timeout does {symbol_words} use when calling {service}",
    ),
    (
        "{symbol} silently skips {nouns} whose {field} is null.",
        "why are some {nouns} missing after {symbol_words}",
    ),
    (
        "The {area} {nouns} are soft-deleted: {symbol} sets deleted_at instead of removing rows.",
        "does {symbol_words} really remove {area} {nouns} or soft delete them",
    ),
    (
        "{symbol} paginates with an opaque cursor and at most {n} {nouns} per page.",
        "how does {symbol_words} paginate {nouns}",
    ),
    (
        "{symbol} emits the metric {area}.{verb}.latency_ms on every call.",
        "which metric measures {symbol_words} latency",
    ),
    (
        "{symbol} assumes timestamps are UTC; local times break the {noun} ordering.",
        "what timezone does {symbol_words} expect",
    ),
    (
        "{symbol} holds a row lock on the {noun} table until the transaction commits.",
        "does {symbol_words} lock the {noun} rows",
    ),
]

DECISION_LEADS = [
    (
        "We decided to move {noun} processing in {module} from {tech} to {tech2}.",
        "why did we switch {noun} processing to {tech2}",
    ),
    (
        "Decision: {symbol} stays synchronous; no background queue for {nouns} yet.",
        "why is {symbol_words} not run in a background queue",
    ),
    (
        "We chose {service} over building our own {noun} service for {area}.",
        "why do we use {service} instead of our own {noun} service",
    ),
    (
        "We will store {noun} state in PostgreSQL rather than in {tech}.",
        "where should {noun} state be kept, and why not {tech}",
    ),
    (
        "Agreed to version the {area} API and keep v1 of {symbol} for {n} days.",
        "how long do we keep the old {symbol_words} API version",
    ),
    (
        "We dropped optimistic locking in {cls} in favour of SELECT ... FOR UPDATE.",
        "why does {cls} use select for update and not optimistic locking",
    ),
    (
        "The team decided that {nouns} are immutable once created; changes make a new {noun}.",
        "can a {noun} be edited after it is created",
    ),
    (
        "We decided against caching {nouns} in the browser because of stale {field} values.",
        "why are {nouns} not cached client side",
    ),
    (
        "Decided to split {file} into smaller modules before adding more {noun} logic.",
        "why is {file} being split up",
    ),
    (
        "We picked idempotency keys for {symbol} so that retries never double-apply a {noun}.",
        "how do we stop {symbol_words} applying a {noun} twice",
    ),
]

EPISODE_LEADS = [
    (
        "On {date}, {symbol} started failing with {error} after the deploy of {branch}.",
        "what broke {symbol_words} after the {branch} deploy",
    ),
    (
        "Incident {date}: {area} {nouns} were duplicated because {symbol} ran twice.",
        "why were {area} {nouns} duplicated in the incident",
    ),
    (
        "During the {date} outage {service} returned errors and {symbol} retried in a tight loop.",
        "what happened to {symbol_words} when {service} was down",
    ),
    (
        "{person} spent a day chasing {error} in {file}; it only reproduced under load.",
        "which error in {file} only showed up under load for {person}",
    ),
    (
        "The {date} release rolled back because {symbol} slowed checkout by {ms} ms.",
        "why was the release rolled back, what made {symbol_words} slow",
    ),
    (
        "On {date} a migration on the {noun} table locked writes for {n} minutes.",
        "when did the {noun} table migration block writes",
    ),
    (
        "Last sprint {person} found that {symbol} leaked connections whenever {error} was raised.",
        "what leaked connections in {symbol_words}",
    ),
    (
        "We lost {noun} events on {date} when the {area} worker was OOM-killed mid-batch.",
        "why did {noun} events go missing when the worker died",
    ),
]

SOLUTION_LEADS = [
    (
        "To fix {error} in {symbol}, check that {field} is set before the {service} call.",
        "how to fix {error_class} in {symbol_words}",
    ),
    (
        "{error} from {symbol} goes away after clearing the {area} cache namespace.",
        "{error_class} in {symbol_words} keeps happening, how do I get rid of it",
    ),
    (
        "Fixed {error} by wrapping {symbol} in a transaction with a retry on serialization errors.",
        "what was the fix for {error_class} in {symbol_words}",
    ),
    (
        "When {symbol} raises {error}, bump the {service} client timeout to {n}s.",
        "{symbol_words} fails with {error_class}, what should I change",
    ),
    (
        "The cure for {error} in {file} was to pin {tech} and regenerate the lock file.",
        "how did we solve {error_class} coming from {file}",
    ),
    (
        "Workaround for {error}: call {symbol} with dry_run=True first to warm the {noun} cache.",
        "is there a workaround for {error_class} when calling {symbol_words}",
    ),
    (
        "{error} in {symbol} came from a missing index on {noun}.{field_raw}; adding it fixed it.",
        "what index fixed {error_class} in {symbol_words}",
    ),
    (
        "Solved the flaky {error_class} in tests for {file} by freezing time with freezegun.",
        "how were the flaky {error_class} tests for {file} fixed",
    ),
]

PATTERN_LEADS = [
    (
        "Every {area} handler follows the same shape: validate, {verb}, then publish an event.",
        "what structure do {area} handlers follow",
    ),
    (
        "{area} code uses the repository pattern: {cls} is the only place that touches SQL.",
        "where should SQL for {nouns} live",
    ),
    (
        "Retries in {area} always go through the decorator with_backoff, never hand-rolled loops.",
        "how should retries be written in {area} code for {nouns}",
    ),
    (
        "All {noun} mutations in {module} emit a domain event after the commit, not before.",
        "when are {noun} events published relative to the commit",
    ),
    (
        "{cls} objects are built with a builder in tests; factories live in tests/factories.py.",
        "how do tests construct {cls}",
    ),
    (
        "The {area} services pass a context object instead of globals for tenant and user.",
        "how do {area} services get the current tenant",
    ),
    (
        "Long {noun} jobs in {area} checkpoint every {n} items so they can resume after a crash.",
        "how do long {noun} jobs survive a crash",
    ),
]

WORKFLOW_LEADS = [
    (
        "To release {area}, run `make release-{area_slug}`, then tag the commit and watch CI.",
        "what are the steps to release {area} after changing {symbol_words}",
    ),
    (
        "To add a column to {noun}, write an alembic migration, backfill in batches, then deploy.",
        "how do I add a new column to the {noun} table",
    ),
    (
        "To reproduce {error_class} locally, run `pytest tests/{area_slug} -k {verb}` (DEBUG=1).",
        "how can I reproduce {error_class} on my machine",
    ),
    (
        "Rotating the {service} API key: create the new key, update the secret, restart workers.",
        "how do we rotate the {service} key",
    ),
    (
        "To replay failed {nouns}, run `python -m {module} replay --since {date}`.",
        "how do I replay {nouns} that failed",
    ),
    (
        "Before merging into main, rebase {branch} and run the {area} contract tests.",
        "what has to pass before merging {area} changes",
    ),
    (
        "To profile {symbol}, run it under py-spy and compare against the baseline flame graph.",
        "how should I profile {symbol_words}",
    ),
]

CONVENTION_LEADS = [
    (
        "In {module}, functions that touch the network end in _remote, like {symbol_last}_remote.",
        "naming of network functions in {module} such as {symbol_words}",
    ),
    (
        "{area} code never logs {field}; use the redact() helper for anything user-supplied.",
        "what must not be logged in {area} code, {field}?",
    ),
    (
        "Money in {area} is always a Decimal with two places, never a float.",
        "what type should money use in {area} {symbol_words}",
    ),
    (
        "Files under web/src/{area_slug} use named exports only; no default exports.",
        "are default exports allowed in the {area} frontend",
    ),
    (
        "Tests for {file} live next to it as test_{module_stem}.py and use the db fixture.",
        "where do tests for {file} go",
    ),
    (
        "Error classes in {area} end in Error and subclass {area_pascal}BaseError.",
        "how should {area} error classes be named in {module}",
    ),
    (
        "In {area}, timestamps are stored as UTC epoch milliseconds in columns named *_at_ms.",
        "how are timestamps stored in {area} for {nouns}",
    ),
    (
        "Feature branches for {area} are named like {branch} and squash-merged.",
        "how should {area} branches be named, like {branch}",
    ),
]

PREFERENCE_LEADS = [
    (
        "{person} prefers small PRs that touch only {area}; split cross-cutting changes.",
        "what PR size does {person} want for {area}",
    ),
    (
        "I prefer {tech} over {tech2} for new {area} code.",
        "which do I prefer for {area}, {tech} or {tech2}",
    ),
    (
        "{person} wants {nouns} tests written with pytest parametrize, not loops.",
        "how does {person} like {noun} tests written",
    ),
    (
        "Prefer explicit {cls} constructors over magic from_dict helpers in {module}.",
        "should {cls} use from_dict or a constructor",
    ),
    (
        "{person} likes review comments phrased as questions, especially on {area} changes.",
        "how does {person} like code review comments",
    ),
    (
        "I'd rather see early returns than nested ifs in {symbol} and its neighbours.",
        "what style is preferred in {symbol_words}",
    ),
]

SUMMARY_LEADS = [
    (
        "Summary of the {area} work in week {week}: {symbol} was rewritten and {noun} sync fixed.",
        "what happened in {area} in week {week}",
    ),
    (
        "Session summary: investigated {error_class} in {file} with {person}; root cause found.",
        "what did the session with {person} about {error_class} find",
    ),
    (
        "Recap of the {area} design review: {nouns} move to {tech}, {cls} gets split.",
        "what came out of the {area} design review about {cls}",
    ),
    (
        "Summary of PR #{num}: {symbol} now batches {nouns} and the {service} calls dropped.",
        "what did PR {num} change",
    ),
    (
        "Quarter summary for {area}: latency of {symbol} down {pct}%, {noun} errors halved.",
        "how did {area} and {symbol_words} latency do this quarter",
    ),
]

LEADS: dict[Kind, list[tuple[str, str]]] = {
    Kind.FACT: FACT_LEADS,
    Kind.DECISION: DECISION_LEADS,
    Kind.EPISODE: EPISODE_LEADS,
    Kind.SOLUTION: SOLUTION_LEADS,
    Kind.PATTERN: PATTERN_LEADS,
    Kind.WORKFLOW: WORKFLOW_LEADS,
    Kind.CONVENTION: CONVENTION_LEADS,
    Kind.PREFERENCE: PREFERENCE_LEADS,
    Kind.SUMMARY: SUMMARY_LEADS,
}

KIND_WEIGHTS = {
    Kind.FACT: 20,
    Kind.DECISION: 10,
    Kind.EPISODE: 14,
    Kind.SOLUTION: 15,
    Kind.PATTERN: 8,
    Kind.WORKFLOW: 8,
    Kind.CONVENTION: 10,
    Kind.PREFERENCE: 6,
    Kind.SUMMARY: 9,
}

DETAILS_COMMON = [
    "It was added in PR #{num} by {person}.",
    "Tests for it are in tests/{area_slug}/test_{module_stem}.py.",
    "The {noun} table has roughly {n}k rows in production.",
    "See ADR-{adr} for the background.",
    "Tracked in ticket {area_upper}-{num}.",
    "{other_person} reviewed it and asked for a follow-up on the {noun} edge cases.",
    "p95 latency of {symbol} is about {ms} ms in staging.",
    "This only affects tenants with more than {n} {nouns}.",
    "The related class is {cls} in {file}.",
    "Mention it in the {area} runbook when it changes.",
    "It interacts with {tech} through the shared client in {module}.",
    "Roughly {pct}% of {noun} traffic goes through this path.",
    "The {service} dashboard shows it under the {area} project.",
    "Grep for {symbol} before renaming anything here.",
]

DETAILS_BY_KIND: dict[Kind, list[str]] = {
    Kind.FACT: [
        "This is easy to miss because the docstring says otherwise.",
        "The behaviour is covered by a regression test since PR #{num}.",
        "Callers in web/src/{area_slug} rely on it.",
    ],
    Kind.DECISION: [
        "The main reason was operational cost; {tech} needed another on-call rotation.",
        "Alternatives considered: keep {tech2}, or buy a managed {noun} service.",
        "{person} signed off on it in the architecture review.",
        "We will revisit once {nouns} exceed {n} million.",
        "Consequence: {symbol} has to be migrated before the old path is removed.",
    ],
    Kind.EPISODE: [
        "About {pct}% of requests failed for {n} minutes before the alert fired.",
        "The rollback took {n} minutes; no data was lost.",
        "Postmortem written by {person}; action items are in the {area} board.",
        "The trigger was a config change in config/{area_slug}.yaml.",
        "Customers saw {error_class} in the UI until the hotfix {branch} shipped.",
    ],
    Kind.SOLUTION: [
        "The root cause was a race between two workers on the same {noun}.",
        "Verified by running the {area} integration suite twice.",
        "If it comes back, check the {service} status page first.",
        "The fix shipped in {branch}.",
        "Adding a unit test for the empty {field} case prevents a regression.",
    ],
    Kind.PATTERN: [
        "{symbol} is the canonical example.",
        "New code in {module} should copy this shape.",
        "The same approach is used in the {area} workers.",
    ],
    Kind.WORKFLOW: [
        "It takes about {n} minutes end to end.",
        "Ping {person} in #{area_slug}-dev before starting.",
        "Skip the backfill step for tenants with fewer than {n} {nouns}.",
        "The CI job is called {area_slug}-e2e.",
    ],
    Kind.CONVENTION: [
        "The linter enforces it in CI.",
        "Older code in {module} predates this and is being migrated.",
        "{person} will flag violations in review.",
    ],
    Kind.PREFERENCE: [
        "Not a hard rule, but reviews go faster this way.",
        "Mentioned in the {date} retro.",
        "It applies to {symbol} and the rest of {module}.",
    ],
    Kind.SUMMARY: [
        "Open question: whether {nouns} should move to {tech2}.",
        "Next step: {person} adds metrics around {symbol}.",
        "{n} tickets closed, {pct}% of them bugs.",
        "Follow-ups are tracked in {area_upper}-{num}.",
    ],
}

TAG_POOL = ["bug", "perf", "security", "tech-debt", "flaky-test", "migration", "ops", "ux"]
TAG_POOL += ["api", "data-loss", "refactor", "incident", "docs", "compliance", "oncall"]

BASE_TIME = dt.datetime(2023, 1, 2, 9, 0, tzinfo=dt.timezone.utc).timestamp()
SPAN_SECONDS = 730 * 86400  # two years of project history


@dataclass(frozen=True)
class Query:
    text: str
    target: int  # index into the generated list
    kind: Kind


def _extra(t: Topic, rng: random.Random, created: float) -> dict[str, str]:
    day = dt.datetime.fromtimestamp(created, tz=dt.timezone.utc)
    return {
        "date": day.strftime("%d %b %Y").lstrip("0"),
        "week": str(day.isocalendar()[1]),
        "area_slug": t.area.replace("_", "-"),
        "area_upper": t.area.upper().replace("_", "")[:6],
        "area_pascal": _pascal(t.area.split("_")),
        "module_stem": t.module,
        "field_raw": rng.choice(FIELDS),
        "adr": str(rng.randint(1, 140)).zfill(4),
    }


def _one(rng: random.Random, index: int) -> tuple[NewMemory, str]:
    kinds = list(KIND_WEIGHTS)
    kind = rng.choices(kinds, weights=[KIND_WEIGHTS[k] for k in kinds])[0]
    t = _topic(rng)
    created = BASE_TIME + rng.random() * SPAN_SECONDS
    extra = _extra(t, rng, created)
    lead, question = rng.choice(LEADS[kind])
    sentences = [_fmt(lead, t, rng, extra)]
    n_sentences = rng.choices([1, 2, 3, 4, 5, 6], weights=[12, 24, 26, 18, 12, 8])[0]
    pool = DETAILS_COMMON + DETAILS_BY_KIND[kind] * 2
    for template in rng.sample(pool, k=min(len(pool), n_sentences - 1)):
        sentences.append(_fmt(template, t, rng, extra))
    text = " ".join(sentences)
    query = _fmt(question, t, rng, extra)

    anchors = [Anchor(AnchorType.FILE, t.file), Anchor(AnchorType.MODULE, t.module_path)]
    if rng.random() < 0.25:  # a second file: the test file or a sibling module
        modules = AREAS[t.area][0]
        other = rng.choice(
            [f"tests/{t.area}/test_{t.module}.py", f"src/{t.area}/{rng.choice(modules)}.py"]
        )
        if other != t.file:
            anchors.append(Anchor(AnchorType.FILE, other))
    if kind not in (Kind.PREFERENCE, Kind.SUMMARY) or rng.random() < 0.5:
        anchors.append(Anchor(AnchorType.SYMBOL, t.symbol))
    if kind in (Kind.EPISODE, Kind.SOLUTION) or "`" + t.error + "`" in text:
        anchors.append(Anchor(AnchorType.ERROR, t.error))
    if kind == Kind.EPISODE or (t.branch in text) or rng.random() < 0.1:
        anchors.append(Anchor(AnchorType.BRANCH, t.branch))
    tags = {t.area.replace("_", "-")}
    tags.update(rng.sample(TAG_POOL, k=rng.choice([0, 1, 1, 2, 3])))
    anchors += [Anchor(AnchorType.TAG, tag) for tag in sorted(tags)]

    artifacts = []
    if "PR #" in text:
        artifacts.append(Artifact("pr", f"#{t.number}"))
    if "ADR-" in text:
        artifacts.append(Artifact("adr", f"ADR-{extra['adr']}"))

    mem = NewMemory(
        text=text,
        kind=kind,
        anchors=anchors,
        artifacts=artifacts,
        source="bench",
        source_id=f"gen-{index}",
        importance=round(rng.betavariate(2, 3), 3),
        created_at=created,
        metadata={"area": t.area, "topic_symbol": t.symbol},
    )
    return mem, query


def _norm(text: str) -> str:
    return " ".join(text.split())


def generate_with_queries(n: int, seed: int = 0) -> tuple[list[NewMemory], list[str]]:
    """``n`` distinct memories and, for each, a paraphrased question about its lead."""
    rng = random.Random(f"living-memory-bench/{seed}")
    out: list[NewMemory] = []
    questions: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        mem, q = _one(rng, len(out))
        key = _norm(mem.text)
        if key in seen:
            continue  # regenerate: every text must be distinct
        seen.add(key)
        out.append(mem)
        questions.append(q)
    return out, questions


def generate(n: int, seed: int = 0) -> list[NewMemory]:
    """``n`` distinct, realistic memories; the same ``(n, seed)`` gives the same list, and a
    smaller ``n`` gives a prefix of a larger one."""
    return generate_with_queries(n, seed)[0]


def generate_queries(n_memories: int, n_queries: int, seed: int = 0) -> list[Query]:
    """``n_queries`` questions, each paraphrasing one memory of ``generate(n_memories, seed)``.

    Targets are spread evenly over the store (a fixed, seeded sample)."""
    mems, questions = generate_with_queries(n_memories, seed)
    rng = random.Random(f"living-memory-queries/{seed}/{n_memories}")
    picks = rng.sample(range(n_memories), k=min(n_queries, n_memories))
    return [Query(questions[i], i, mems[i].kind) for i in picks]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    mems, questions = generate_with_queries(args.n, args.seed)
    for m, q in zip(mems, questions):
        print(f"[{m.kind.value}] {m.text}")
        print("   anchors:", ", ".join(str(a) for a in m.anchors))
        print("   query:  ", q)


if __name__ == "__main__":
    main()
