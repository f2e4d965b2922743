"""Deterministic extraction: records become memories with the right kind, anchors, provenance
and confidence; what is not worth keeping is dropped, not stored."""

from __future__ import annotations

from bench.bench_extraction import evaluate, load
from predictive.conversations import LATER_REQUESTS, extract, summarise
from predictive.extract import (
    MIN_CONFIDENCE,
    convention_confidence,
    from_commit,
    from_decision,
    from_rule_file,
    paths_in,
)
from predictive.globs import glob_match
from storage.models import AnchorType, Kind
from storage.sources.adr import parse_record
from storage.sources.records import (
    ChatMessage,
    CodeBlock,
    Commit,
    Conversation,
    DecisionRecord,
    RuleFile,
    RuleItem,
)


def anchors_of(c, t: AnchorType) -> set[str]:
    return {a.value for a in c.memory.anchors if a.type is t}


def chat(*turns: tuple[str, str], **kw) -> Conversation:
    return Conversation(
        tool="claude",
        external_id="s1",
        messages=tuple(ChatMessage(i, r, t, at=100.0 + i) for i, (r, t) in enumerate(turns)),
        **kw,
    )


def test_a_commit_is_an_episode_anchored_to_files_modules_and_branch() -> None:
    c = Commit(
        sha="a" * 40,
        parents=("b" * 40,),
        author="Ada",
        email="ada@example.com",
        at=1_700_000_000.0,
        subject="fix(auth): refresh the token before it expires",
        body="The token expired mid-request.",
        files=("src/auth/jwt.py", "tests/test_jwt.py"),
        branch="feature/refresh",
    )
    cand = from_commit(c)
    m = cand.memory
    assert m.kind is Kind.EPISODE and cand.kept
    assert (m.source, m.source_id) == ("git", c.sha)
    assert m.created_at == c.at
    # what the commit says, and nothing else: who, when and which sha are metadata
    assert m.text == (
        "fix(auth): refresh the token before it expires\n\nThe token expired mid-request."
    )
    assert m.metadata["author"] == "Ada" and m.metadata["date"] == "2023-11-14"
    assert anchors_of(cand, AnchorType.FILE) == {"src/auth/jwt.py", "tests/test_jwt.py"}
    assert "auth.jwt" in anchors_of(cand, AnchorType.MODULE)  # src layout
    assert anchors_of(cand, AnchorType.BRANCH) == {"feature/refresh"}
    assert {"commit", "fix", "auth"} <= anchors_of(cand, AnchorType.TAG)
    assert [(a.type, a.ref) for a in m.artifacts] == [("commit", c.sha)]


def test_merge_and_revert_commits_are_tagged() -> None:
    merge = Commit("m" * 40, ("a" * 40, "b" * 40), "A", "a@x", 1.0, "Merge branch 'x'", "", ())
    revert = Commit(
        "r" * 40, ("m" * 40,), "A", "a@x", 2.0, 'Revert "add cache"', "", (), reverts="c" * 40
    )
    assert "merge" in anchors_of(from_commit(merge), AnchorType.TAG)
    assert from_commit(merge).memory.importance < from_commit(revert).memory.importance
    assert "revert" in anchors_of(from_commit(revert), AnchorType.TAG)
    assert from_commit(revert).memory.metadata["reverts"] == "c" * 40


def test_an_accepted_decision_record_is_active_and_a_superseded_one_is_closed() -> None:
    accepted = DecisionRecord(
        path="docs/adr/0002-use-postgres.md",
        title="Use Postgres",
        format="nygard",
        number=2,
        status="Accepted",
        date=1_600_000_000.0,
        context="We need transactions across src/orders/service.py and payments.",
        decision="We will use Postgres.",
        consequences="Ops must run a database.",
    )
    cand = from_decision(accepted, now=1_700_000_000.0)
    m = cand.memory
    assert m.kind is Kind.DECISION and m.valid_to is None and m.importance >= 0.8
    assert (m.source, m.source_id) == ("adr", accepted.path)
    assert m.text.startswith("ADR 2: Use Postgres")
    assert "Decision: We will use Postgres." in m.text
    assert accepted.path in anchors_of(cand, AnchorType.FILE)
    assert "src/orders/service.py" in anchors_of(cand, AnchorType.FILE)
    old = DecisionRecord(
        path="docs/adr/0001-use-mongo.md",
        title="Use Mongo",
        format="nygard",
        status="Superseded by ADR 2",
        superseded_by=("docs/adr/0002-use-postgres.md",),
    )
    closed = from_decision(old, now=1_700_000_000.0).memory
    assert closed.valid_to == 1_700_000_000.0


def test_a_records_status_explanation_stays_in_its_text() -> None:
    r = parse_record(
        "docs/adr/0004-use-a-queue.md",
        "# 4. Use a queue\n\nDate: 2021-03-01\n\n## Status\n\nSuperseded. We moved to Kafka "
        "because the queue lost messages under load.\n\n## Decision\n\nWe will use RabbitMQ.\n",
    )
    assert r is not None
    text = from_decision(r, now=1_700_000_000.0).memory.text
    status, why = text.split("\n")[1:3]
    assert status == "Status: superseded (2021-03-01)"
    assert why == "We moved to Kafka because the queue lost messages under load."
    plain = parse_record(
        "docs/adr/0005-x.md", "# 5. X\n\n## Status\n\nAccepted\n\n## Decision\n\nX.\n"
    )
    assert plain is not None
    assert from_decision(plain).memory.text.split("\n")[2] == ""  # no note: nothing added


def test_madr_options_and_choice_are_kept() -> None:
    r = DecisionRecord(
        path="docs/decisions/0003-queue.md",
        title="Pick a queue",
        format="madr",
        status="accepted",
        options=("RabbitMQ", "SQS"),
        chosen="SQS",
        rationale="we are on AWS",
    )
    m = from_decision(r).memory
    assert "Chosen option: SQS, because we are on AWS" in m.text
    assert "Options considered: RabbitMQ; SQS" in m.text
    assert m.metadata["chosen"] == "SQS"


def test_rule_items_become_conventions_with_glob_anchors() -> None:
    f = RuleFile(
        path=".cursor/rules/api.mdc",
        kind="cursor-mdc",
        globs=("src/api/**",),
        items=(RuleItem("Validate every request body with zod.", "API", 5),),
    )
    (cand,) = from_rule_file(f)
    assert cand.memory.kind is Kind.CONVENTION and cand.kept
    assert anchors_of(cand, AnchorType.GLOB) == {"src/api/**"}
    assert cand.memory.source_id == ".cursor/rules/api.mdc:5"
    assert cand.memory.text == "API\nValidate every request body with zod."
    assert cand.memory.index_label == "api.mdc: API"


def test_contributing_prose_is_kept_only_when_it_reads_like_a_rule() -> None:
    f = RuleFile(
        path="CONTRIBUTING.md",
        kind="contributing",
        items=(
            RuleItem("Run make lint before you open a pull request.", None, 3),
            RuleItem("Thanks for taking the time to contribute to this project!", None, 1),
            RuleItem("This document explains how the project is organised.", None, 2),
        ),
    )
    kept = [c.memory.text for c in from_rule_file(f) if c.kept]
    assert kept == ["Run make lint before you open a pull request."]


def test_convention_confidence_orders_rules_above_remarks() -> None:
    assert convention_confidence("Never commit secrets to the repository.") >= MIN_CONFIDENCE
    assert convention_confidence("Should we always squash commits?") < MIN_CONFIDENCE
    assert convention_confidence("I always forget what day it is") < MIN_CONFIDENCE
    assert convention_confidence("ok") < MIN_CONFIDENCE


def test_a_confirmed_fix_is_a_solution_with_the_error_signature_and_code() -> None:
    c = chat(
        ("user", "ImportError: cannot import name 'Foo' from 'app.models' in app/views.py"),
        (
            "assistant",
            "It is a circular import. The fix is to import inside the function:\n"
            "```python\ndef view():\n    from app.models import Foo\n```",
        ),
        ("user", "that fixed it, thanks"),
        workspace="/home/me/proj",
    )
    (sol,) = [x for x in extract(c).kept if x.memory.kind is Kind.SOLUTION]
    m = sol.memory
    assert m.text.startswith("Problem: ImportError")
    assert "from app.models import Foo" in m.text
    assert anchors_of(sol, AnchorType.ERROR)
    assert "app/views.py" in anchors_of(sol, AnchorType.FILE)
    assert m.source == "chat:claude" and m.metadata["messageIdx"] == 0
    assert sol.confidence > 0.8
    # known when the fix was said, not when the error was first pasted (--as-of)
    assert m.created_at == m.valid_from == 101.0


def test_a_fix_the_user_says_failed_is_dropped() -> None:
    c = chat(
        ("user", "KeyError: 'user_id' when saving the form"),
        ("assistant", "Add a default: `data.get('user_id')`."),
        ("user", "still getting the same error"),
    )
    result = extract(c)
    assert not [x for x in result.kept if x.memory.kind is Kind.SOLUTION]
    assert [x for x in result.dropped if x.memory.kind is Kind.SOLUTION]


def test_corrections_preferences_and_workflows() -> None:
    c = chat(
        ("user", "add retries to the client"),
        ("assistant", "I added a retry loop with time.sleep."),
        ("user", "No, use tenacity for retries instead of a hand-written loop."),
        ("assistant", "Switched to tenacity."),
        ("user", "Please keep functions under 40 lines."),
        ("user", "To release:\n```bash\nmake dist\ntwine upload dist/*\n```"),
    )
    kinds = {(x.memory.kind, x.rule) for x in extract(c).kept}
    assert (Kind.PREFERENCE, "correction") in kinds
    assert (Kind.PREFERENCE, "preference") in kinds
    assert (Kind.WORKFLOW, "workflow") in kinds


def test_a_correction_that_points_back_keeps_what_it_points_at() -> None:
    c = chat(
        ("user", "let the CLI take several engines"),
        ("assistant", "Now `--engines brave tavily` passes both engines to the search."),
        (
            "user",
            "No, we simply don't support this notation\n\n--engines brave tavily\n\nIt's fine.",
        ),
        ("assistant", "Understood, I reverted it."),
        ("user", "add a --json flag"),
        ("assistant", "Added --json to the search command."),
        ("user", "No, the flag is called --format json in every command."),
    )
    texts = [x.memory.text for x in extract(c).kept if x.rule == "correction"]
    assert texts == [
        "Correction: No, we simply don't support this notation --engines brave tavily It's fine.",
        "Correction: No, the flag is called --format json in every command.",
    ]


def test_questions_and_chit_chat_yield_nothing() -> None:
    c = chat(
        ("user", "Should I always use async handlers?"),
        ("assistant", "Only when the handler awaits I/O."),
        ("user", "I always forget that lol"),
    )
    assert extract(c).kept == []


def test_code_blocks_from_the_reader_count_as_the_fix() -> None:
    c = Conversation(
        tool="cursor",
        external_id="x",
        messages=(
            ChatMessage(0, "user", "TypeError: undefined is not a function"),
            ChatMessage(
                1,
                "assistant",
                "Call it as a method.",
                code_blocks=(CodeBlock("obj.run()", "js", "src/run.js"),),
            ),
            ChatMessage(2, "user", "works now"),
        ),
    )
    (sol,) = extract(c).kept
    assert "obj.run()" in sol.memory.text
    assert "src/run.js" in anchors_of(sol, AnchorType.FILE)


def test_summary_is_deterministic_and_names_topics_and_files() -> None:
    c = chat(
        ("user", "The billing export fails for invoices in src/billing/export.py"),
        ("assistant", "The invoices query misses the currency join in export."),
        ("user", "invoices export works now"),
        title="Billing export",
    )
    s = summarise(c)
    assert s == summarise(c)
    assert s.startswith("Billing export.")
    assert "invoices" in s and "export" in s
    assert "src/billing/export.py" in s
    assert "3 messages" in s


def test_summary_lists_what_the_user_asked_for_later() -> None:
    """A conversation is about all its requests: each later one's first sentence, in order,
    each once, and not a log the user pasted."""
    c = chat(
        ("user", "Add a config flag for the export."),
        ("assistant", "Added EXPORT_ENABLED."),
        ("user", "Now make the page size five. It is too long."),
        ("assistant", "Done."),
        ("user", "```\nTraceback (most recent call last):\n  File x\n```"),
        ("user", "Now make the page size five. It is too long."),
        ("user", "Add buttons to move to the next page please"),
        title="Export",
    )
    s = summarise(c)
    assert "Then: Now make the page size five. / Add buttons to move to the next page please" in s
    assert "It is too long" not in s and "Traceback" not in s
    assert s.index("Started with:") < s.index("Then:") < s.index("Topics:")
    assert "Then:" not in summarise(chat(("user", "Add a flag."), ("assistant", "Added.")))
    many = chat(*[("user", f"Please rename the field number {i}.") for i in range(10)])
    listed = summarise(many).split("Then: ")[1].split(" Topics:")[0]
    assert listed.count(" / ") == LATER_REQUESTS - 1 and "number 1." in listed


def test_paths_in_prose() -> None:
    assert paths_in("see src/a/b.py and ./lib/x.ts, also pyproject.toml") == [
        "src/a/b.py",
        "lib/x.ts",
        "pyproject.toml",
    ]


def test_globs_match_like_rule_files_mean() -> None:
    assert glob_match("src/api/users.ts", "src/api/**")
    assert not glob_match("src/apis/users.ts", "src/api/**")
    assert glob_match("a/b/c.test.ts", "**/*.test.ts")
    assert glob_match("deep/x.py", "*.py")
    assert glob_match("src/api/v1/x.go", "src/api")
    assert glob_match("web/App.tsx", "web/*.{ts,tsx}")
    assert not glob_match("x.py", "")


def test_labelled_sample_floor() -> None:
    """The held-out numbers are reported by bench/bench_extraction.py; here only a floor that
    catches a regression in the rules (precision must stay high on both splits)."""
    items = load()
    held = evaluate([i for i in items if i["split"] == "held-out"])
    tuned = evaluate([i for i in items if i["split"] == "tuning"])
    assert held["precision"] >= 0.8 and tuned["precision"] >= 0.9
    assert held["recall"] >= 0.5 and tuned["recall"] >= 0.9


def test_a_request_for_one_change_is_not_a_convention() -> None:
    c = chat(
        ("user", "We now have you.py and youcom.py and we should only have you.py"),
        ("assistant", "Merged them."),
        ("user", "Now go ahead and add a command called `git pr` that opens the pull request."),
        ("assistant", "Added."),
        ("user", "But we shouldn't remove the old helper, just use it as a stub."),
    )
    assert [x for x in extract(c).kept if x.memory.kind is Kind.CONVENTION] == []


def test_a_standing_rule_is_a_convention_that_keeps_its_message() -> None:
    c = chat(
        ("user", "Let me explain the setup."),
        ("assistant", "Go on."),
        ("user", "Each module in engines should always read its own API key variables."),
    )
    (conv,) = [x for x in extract(c).kept if x.memory.kind is Kind.CONVENTION]
    assert conv.memory.source_id == "s1#2:convention"
    assert conv.memory.metadata["messageIdx"] == 2 and conv.message_idx == 2


def test_pasted_documents_and_logs_yield_no_rules() -> None:
    doc = "\n\n".join(
        [
            "Here is the library's documentation:",
            "Flags are always separated from your command by an isolated `--`.",
            "You can always append `-- --help` to any command to get usage information.",
            "Specifically, do not name your module any of the following: sys, os, re.",
            "2025-02-25 02:37:12,913 - app.api - ERROR - You must set an API key",
        ]
        * 8
    )
    c = chat(("user", doc), ("assistant", "Thanks, noted."))
    assert [x for x in extract(c).kept if x.memory.kind is Kind.CONVENTION] == []


def test_an_unconfirmed_fix_is_a_suggestion_not_a_solution() -> None:
    c = chat(
        ("user", "ValueError: invalid literal for int() with base 10: 'x' in app/cli.py"),
        ("assistant", "The fix is to validate the input first:\n```python\nint(v or 0)\n```"),
        ("user", "Now let's add the export command."),
    )
    result = extract(c)
    assert not [x for x in result.kept if x.memory.kind is Kind.SOLUTION]
    assert [x for x in result.dropped if x.memory.kind is Kind.SOLUTION]


def test_an_instruction_repeated_in_a_conversation_becomes_a_workflow() -> None:
    step = "Then run `./cleanup.py status` to see the lints and tests, and update TODO.md."
    c = chat(
        ("user", f"Implement phase 1. {step}"),
        ("assistant", "Done."),
        ("user", f"Continue with phase 2. {step}"),
        ("assistant", "Done."),
        ("user", f"Go on. {step}"),
    )
    found = [x for x in extract(c).kept if x.rule == "repeated"]
    assert len(found) == 1 and found[0].memory.kind is Kind.WORKFLOW
    assert "./cleanup.py status" in found[0].memory.text


def test_a_workflow_keeps_the_commands_not_one_off_checks_of_particular_lines() -> None:
    c = chat(
        ("user", "the linter fails"),
        (
            "assistant",
            "Read file: src/app.py\n\nI'll fix the lint errors.\n\n```bash\nruff check --fix .\n"
            "python -m pytest\nruff check src/app.py:220:17 src/db.py:38\n"
            "curl http://localhost.example.com:8080/health\n```",
        ),
        ("user", "Thanks, that works."),
    )
    [w] = [x.memory.text for x in extract(c).kept if x.rule == "workflow"]
    assert w.splitlines() == [
        "Workflow: I'll fix the lint errors.",
        "1. `ruff check --fix .`",
        "2. `python -m pytest`",
        "3. `curl http://localhost.example.com:8080/health`",
    ]
