"""The context as its reader needs it (issue 19): the project's own rules that apply to the
file (nested, anchored, by path and topic), commits with the sentences that explain them and
never a cut phrase, conversations by what was said about the file, no false alarms, and the
injected file of each AI tool without what that tool loads itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

from predictive.engine import ContextEngine, ContextRequest
from predictive.excerpts import excerpt, file_terms
from predictive.file_facts import FileFacts
from predictive.ingest import run
from storage import Anchor, AnchorType, Kind, MemoryFilter, MemoryStore, NewMemory
from storage.sources.records import ChatMessage, Conversation


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "A",
            "GIT_AUTHOR_EMAIL": "a@example.com",
            "GIT_COMMITTER_NAME": "A",
            "GIT_COMMITTER_EMAIL": "a@example.com",
            "GIT_AUTHOR_DATE": "2024-03-01T12:00:00+00:00",
            "GIT_COMMITTER_DATE": "2024-03-01T12:00:00+00:00",
            "PATH": "/usr/bin:/bin",
        },
    )


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    (root / "src" / "billing").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "CLAUDE.md").write_text(
        "# Project\n\n## Money\nAmounts in `src/billing/` are integer cents; run the formatter "
        "before committing.\n"
    )
    (root / "models" / "AGENTS.md").write_text(
        "# Models\n\n## Migrations\nNever edit a released migration; add a new numbered one.\n"
    )
    (root / "AGENTS.md").write_text(
        "# Agents\n\n## Testing\nNEVER run pytest directly: use scripts/run-tests for every "
        "test run.\n\n## Billing\nChanges under `src/billing/` need a second reviewer from "
        "the payments team.\n\n## Docs\nThe documentation site is built with mkdocs.\n\n"
        "## Releases\nTag releases from the main branch only.\n\n## Logging\nLog with "
        "structlog, one event per line.\n\n## Style\nKeep modules under 500 lines.\n"
    )
    (root / "models" / "user.py").write_text("class User:\n    pass\n")
    (root / "src" / "billing" / "invoice.py").write_text("def total():\n    return 0\n")
    (root / "tests" / "test_invoice.py").write_text("def test_total():\n    assert True\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    return root


def conversation(turns: list[tuple[str, str]], **fields: str) -> Conversation:
    """A conversation of ``turns`` (role, text), one second apart from 1_700_000_000."""
    return Conversation(
        tool=fields.pop("tool", "claude"),
        external_id=fields.pop("external_id", "s-1"),
        title=fields.pop("title", "invoice totals"),
        messages=tuple(
            ChatMessage(i, r, t, at=1_700_000_000.0 + i) for i, (r, t) in enumerate(turns)
        ),
        **fields,
    )


def context(store: MemoryStore, root: Path, path: str) -> str:
    text = (root / path).read_text()
    return ContextEngine(store, root=root).assemble(ContextRequest(path=path, text=text)).markdown


def context_after(
    store: MemoryStore, tmp_path: Path, turns: list[tuple[str, str]], **fields: str
) -> str:
    """The invoice module's context once a conversation of ``turns`` is learned."""
    root = project(tmp_path)
    conv = conversation(turns, **fields)
    run(store, root=root, options={"sources": ["chats"]}, conversations=[conv])
    return context(store, root, "src/billing/invoice.py")


def test_a_nested_agents_section_reaches_a_file_in_its_folder(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    run(store, root=root, options={"sources": ["rules"]})
    assert "Never edit a released migration" in context(store, root, "models/user.py")
    assert "Never edit a released migration" not in context(store, root, "src/billing/invoice.py")


def test_a_rule_anchored_to_the_open_file_is_in_its_context(store: MemoryStore) -> None:
    store.add(
        NewMemory(
            "Totals are computed in cents, never in floating point.",
            kind=Kind.CONVENTION,
            source="rules",
            anchors=[Anchor(AnchorType.FILE, "src/billing/invoice.py")],
            metadata={"file": "AGENTS.md", "kind": "agents", "alwaysApply": True},
        )
    )
    result = ContextEngine(store).assemble(ContextRequest(path="src/billing/invoice.py", text=""))
    assert "never in floating point" in result.markdown


def test_a_root_rule_applies_by_the_folder_it_names_and_by_topic(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    run(store, root=root, options={"sources": ["rules"]})
    billing = context(store, root, "src/billing/invoice.py")
    assert "second reviewer from the payments team" in billing
    assert "NEVER run pytest directly" in context(store, root, "tests/test_invoice.py")
    assert "mkdocs" not in billing


def test_each_tool_file_leaves_out_what_that_tool_loads_and_the_editor_keeps_all(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    run(store, root=root, options={"sources": ["rules"]})
    result = ContextEngine(store, root=root).assemble(
        ContextRequest(path="src/billing/invoice.py", text="def total():\n    return 0\n")
    )
    claude_md, agents_md = "are integer cents", "second reviewer"
    assert claude_md in result.markdown and agents_md in result.markdown  # the editor's
    assert claude_md not in result.markdown_for("claude")  # Claude Code reads CLAUDE.md
    assert agents_md in result.markdown_for("claude")
    assert claude_md in result.markdown_for("cursor")  # Cursor reads the root AGENTS.md
    assert agents_md not in result.markdown_for("cursor")


def commit_memory(store: MemoryStore, text: str, files: list[str], at: float) -> int:
    return store.add(
        NewMemory(
            text,
            kind=Kind.EPISODE,
            source="git",
            source_id=f"{abs(hash(text)):040x}"[:40],
            anchors=[Anchor(AnchorType.FILE, f) for f in files],
            created_at=at,
            valid_from=at,
            metadata={"fileCount": len(files), "files": files},
        )
    ).id


def test_an_old_commit_body_is_shown_whole_and_no_line_is_cut(store: MemoryStore) -> None:
    body = (
        "fix(billing): round totals once (#12)\n\nTotals were rounded per line and the sum "
        "drifted by a cent because each line was rounded half up. The fix rounds the sum once "
        "at the end, so invoices match the ledger."
    )
    commit_memory(store, body, ["src/billing/invoice.py"], at=1_500_000_000.0)
    result = ContextEngine(store).assemble(ContextRequest(path="src/billing/invoice.py", text=""))
    assert "drifted by a cent because each line was rounded half up" in result.markdown
    tiers = result.markdown.split("\n## ", 1)[1]
    assert not any(line.rstrip().endswith("…") for line in tiers.splitlines())


def test_a_commit_that_touched_dozens_of_files_ranks_below_a_focused_one(
    store: MemoryStore,
) -> None:
    sweep = commit_memory(
        store,
        "chore: rename the logger everywhere\n\nMechanical rename across the tree.",
        ["src/billing/invoice.py"] + [f"src/x{i}.py" for i in range(60)],
        at=1_700_000_100.0,
    )
    focused = commit_memory(
        store,
        "fix(billing): totals in cents\n\nFloats lost cents on large invoices, so totals are "
        "now integers.",
        ["src/billing/invoice.py"],
        at=1_700_000_000.0,
    )
    result = ContextEngine(store).assemble(ContextRequest(path="src/billing/invoice.py", text=""))
    score = {i.memory_id: i.score for i in result.items}
    assert score[focused] > score[sweep]


def test_a_conversation_shows_what_was_said_about_the_file(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    turns = [
        ("user", "The invoice totals are wrong again, look at invoice.py please."),
        ("assistant", "Let me check the file."),
        (
            "assistant",
            "We identified that `total` in invoice.py sums floats, which loses cents on "
            "large invoices. The weather is nice today and nothing else matters here.",
        ),
        ("user", "From now on totals in invoice.py must be integers in cents, never floats."),
        ("assistant", "Done."),
    ]
    conv = conversation(turns)
    run(store, root=root, options={"sources": ["chats"]}, conversations=[conv])
    md = context(store, root, "src/billing/invoice.py")
    assert "We identified that `total` in invoice.py sums floats" in md
    assert "must be integers in cents, never floats" in md
    assert "Let me check the file" not in md
    # as of before the decision, it is not there yet
    early = ContextEngine(store, root=root).assemble(
        ContextRequest(
            path="src/billing/invoice.py",
            text=(root / "src/billing/invoice.py").read_text(),
            as_of=1_700_000_002.5,
        )
    )
    assert "must be integers in cents" not in early.markdown


def test_pasted_output_and_narrated_looking_are_not_what_was_said(
    store: MemoryStore, tmp_path: Path
) -> None:
    turns = [
        ("user", "invoice.py fails again: No results found! \u274c Billing Errors No results!"),
        ("user", "SYNOPSIS invoice.py total INVOICE for the invoice module"),
        ("user", "NAME invoice.py - totals of the invoice module. COMMANDS total, refund"),
        (
            "user",
            "invoice.py says total of the invoice could not be computed, total of the invoice "
            "could not be computed",
        ),
        (
            "assistant",
            "Let's check invoice.py since that's where the totals are computed:",
        ),
        (
            "assistant",
            "Let's fix the rounding in invoice.py since floats lose cents on large invoices:",
        ),
        ("user", "From now on totals in invoice.py must be integers in cents, never floats."),
        (
            "user",
            "In invoice.py, if it's called without a date it uses today, if it's called with a "
            "date it keeps that one.",
        ),
    ]
    md = context_after(store, tmp_path, turns)
    assert "must be integers in cents, never floats" in md
    assert "floats lose cents on large invoices" in md  # a step taken, with its reason
    assert "if it's called with a date it keeps that one" in md  # parallel, not pasted
    assert "No results found" not in md
    assert "SYNOPSIS" not in md and "totals of the invoice module" not in md
    assert "could not be computed" not in md
    assert "where the totals are computed" not in md  # a look, even with a reason


def test_an_assistants_glued_step_titles_are_not_what_was_said(
    store: MemoryStore, tmp_path: Path
) -> None:
    turns = [
        ("user", "Why does invoice.py round the total twice?"),
        (
            "assistant",
            "**Planning the invoice review****Reading invoice.py totals****Checking rounding**"
            "\n\n**Deciding on rounding in invoice.py**Yes. invoice.py rounds each line and "
            "then the sum, so the total drifts by a cent; it now rounds the sum once.",
        ),
    ]
    md = context_after(store, tmp_path, turns)
    assert "rounds each line and then the sum" in md
    assert "Planning the invoice review" not in md and "Reading invoice.py totals" not in md
    assert "Deciding on rounding" not in md


def test_a_reported_change_to_another_file_is_not_said_about_this_one(
    store: MemoryStore, tmp_path: Path
) -> None:
    turns = [
        ("user", "invoice.py loses a cent on large invoices, fix invoice.py please."),
        ("assistant", "Fixed the rounding: totals are summed in integer cents now."),
        ("assistant", "Updated `CHANGELOG.md` with an entry for the rounding fix."),
        ("assistant", "Created the fix documentation in `docs/fixes/rounding-fix.md`."),
    ]
    md = context_after(store, tmp_path, turns)
    assert "totals are summed in integer cents now" in md  # unnamed, but about this file
    assert "CHANGELOG.md" not in md and "rounding-fix.md" not in md


def test_a_conversation_that_only_asked_in_general_is_shown_by_its_title(
    store: MemoryStore, tmp_path: Path
) -> None:
    turns = [
        ("user", "Read the task list and start implementing the open items one by one."),
        (
            "assistant",
            "- [ ] Fix the rounding in invoice.py\n- [ ] Move invoice.py totals to cents\n"
            "- [ ] Test invoice.py refunds",
        ),
    ]
    md = context_after(store, tmp_path, turns, title="Invoice tasks")
    assert "Invoice tasks" in md  # it worked on the file: its title says what about
    assert "start implementing the open items" not in md  # a request that says nothing of it


def test_code_the_user_pasted_is_not_what_they_said(store: MemoryStore, tmp_path: Path) -> None:
    turns = [
        (
            "user",
            "In invoice.py the total must never round each line, only the sum:\n\n"
            '    def total(lines):\n        """Args:\n'
            '            lines: The invoice lines whose total is computed\n        """\n'
            "  - keep refunds negative in invoice.py",
        ),
        ("assistant", "Done: invoice.py now rounds the sum once."),
    ]
    md = context_after(store, tmp_path, turns)
    assert "only the sum" in md and "keep refunds negative" in md  # a nested item stays
    assert "The invoice lines whose total is computed" not in md


def test_a_weak_suspicion_is_never_in_the_context(store: MemoryStore) -> None:
    a = store.add(
        NewMemory(
            "Never run the suite directly.",
            kind=Kind.CONVENTION,
            anchors=[Anchor(AnchorType.FILE, "src/billing/invoice.py")],
        )
    ).id
    b = store.add(
        NewMemory(
            "Run the suite directly with coverage.",
            kind=Kind.CONVENTION,
            anchors=[Anchor(AnchorType.FILE, "src/billing/invoice.py")],
        )
    ).id
    cid = store.contradictions.add(
        a, b, reason="polarity: one says not — the other says so", status="suspected"
    )
    engine = ContextEngine(store)
    result = engine.assemble(ContextRequest(path="src/billing/invoice.py", text=""))
    assert "⚠" not in result.markdown
    store.contradictions.confirm(cid)  # the user says it is one: now it is shown
    engine.invalidate()
    result = engine.assemble(ContextRequest(path="src/billing/invoice.py", text=""))
    assert f"c{cid}" in result.markdown


def test_a_superseded_decision_is_shown_only_as_what_was(store: MemoryStore) -> None:
    path = "src/billing/invoice.py"
    old = store.add(
        NewMemory(
            "Invoices are stored as PDF files on disk.",
            kind=Kind.DECISION,
            anchors=[Anchor(AnchorType.FILE, path)],
        )
    ).id
    new = store.add(
        NewMemory(
            "Invoices are stored as rows in the ledger database.",
            kind=Kind.DECISION,
            anchors=[Anchor(AnchorType.FILE, path)],
        )
    ).id
    store.graph.supersede(old, new)
    md = ContextEngine(store).assemble(ContextRequest(path=path, text="")).markdown
    assert "rows in the ledger database" in md
    (line,) = [x for x in md.splitlines() if "PDF files on disk" in x]
    assert line.strip().startswith("- was:")


def test_an_areas_rule_is_critical_and_a_rule_for_every_file_is_background(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    for i in range(12):
        (root / "src" / f"m{i}.py").write_text("x = 1\n")
    rules = root / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "billing.mdc").write_text(
        "---\nglobs: src/billing/**\n---\n# Billing\n\nInvoices never change once sent.\n"
    )
    (rules / "python.mdc").write_text(
        "---\nglobs: '**/*.py'\n---\n# Python\n\nType hints on every public function.\n"
    )
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "rules")
    run(store, root=root, options={"sources": ["rules"]})
    md = context(store, root, "src/billing/invoice.py")
    critical, _, rest = md.partition("## Background")
    assert "Invoices never change once sent" in critical
    assert "Type hints on every public function" in rest


def test_the_commit_that_saved_a_conversation_about_the_file_comes_with_it(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    export = ".specstory/history/2024-03-01_invoices.md"
    turns = [
        ("user", "invoice.py sums floats and loses cents, fix invoice.py please."),
        ("assistant", "We identified that `total` in invoice.py sums floats."),
    ]
    conv = conversation(
        turns, tool="specstory", external_id="2024-03-01_invoices", origin=str(root / export)
    )
    run(store, root=root, options={"sources": ["chats"]}, conversations=[conv])
    saved = commit_memory(
        store,
        "Save the session\n\nTotals are integers in cents from now on, so no cent is lost.",
        [export],
        at=1_700_000_100.0,
    )
    elsewhere = commit_memory(
        store, "Tidy the docs\n\nReworded the install guide.", ["docs/a.md"], 1_700_000_200.0
    )
    ids = (
        ContextEngine(store, root=root)
        .assemble(
            ContextRequest(path="src/billing/invoice.py", text="def total():\n    return 0\n")
        )
        .memory_ids
    )
    assert saved in ids and elsewhere not in ids


def test_how_a_change_was_tested_is_shown_with_its_tests_only(store: MemoryStore) -> None:
    body = (
        "fix(billing): round totals once (#12)\n\n## Description\nTotals were rounded per line "
        "and the sum drifted by a cent because each line was rounded half up.\n\n## Testing\n"
        "- Unit tests for the rounding helper.\n\nSystem tests are not included here, as in "
        "the refunds change before this one.\n\n## Risks\nLow: only the invoice sum changes."
    )
    files = ["src/billing/invoice.py", "tests/test_invoice.py"]
    commit_memory(store, body, files, at=1_500_000_000.0)
    source = ContextEngine(store).assemble(ContextRequest(path=files[0], text="")).markdown
    test = ContextEngine(store).assemble(ContextRequest(path=files[1], text="")).markdown
    assert "drifted by a cent" in source and "only the invoice sum changes" in source
    assert "System tests are not included here" not in source
    assert "Unit tests for the rounding helper" not in source
    assert "System tests are not included here" in test


def test_one_word_in_common_does_not_make_a_project_wide_section_about_a_file(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    (root / "AGENTS.md").write_text(
        "# Agents\n\n## Example total\nA demo server with an endpoint you can call with "
        "curl while the service runs.\n\n## Invoice totals\nAn invoice total is the sum "
        "of its lines in integer cents, computed once per invoice.\n\n## Docs\nBuilt with "
        "mkdocs.\n\n## Releases\nTag from main.\n\n## Logging\nOne event per line.\n\n"
        "## Style\nShort modules.\n\n## Reviews\nTwo approvals.\n"
    )
    run(store, root=root, options={"sources": ["rules"]})
    billing = context(store, root, "src/billing/invoice.py")
    assert "sum of its lines in integer cents" in billing  # invoice and total in common
    assert "demo server" not in billing  # only "total" in common


def test_a_project_wide_section_of_hard_rules_applies_to_every_file(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    (root / "AGENTS.md").write_text(
        "# Agents\n\n## Project Rules\n1. NEVER call the release script by hand.\n"
        "2. ALWAYS ask before touching migrations.\n\n## Docs\nBuilt with mkdocs.\n\n"
        "## Releases\nTag from main.\n\n## Logging\nOne event per line.\n\n"
        "## Style\nShort modules.\n\n## Reviews\nTwo approvals.\n\n## Ports\nThe demo "
        "listens on 8080.\n"
    )
    run(store, root=root, options={"sources": ["rules"]})
    for path in ("src/billing/invoice.py", "models/user.py"):
        md = context(store, root, path)
        assert "NEVER call the release script by hand" in md  # no word in common with either
        assert "Built with mkdocs" not in md  # a project-wide section that binds nothing


def test_a_hard_wrapped_commit_body_reads_as_whole_lines(store: MemoryStore) -> None:
    body = (
        "revert(settings): fast copy off by default (#31)\n\nThe fast copy crashed on\nshutdown "
        "under uwsgi.\n\nConcrete changes:\n- `src/settings.py`: default `True`\n→ `False`. "
        "Users who opt in\n  are unaffected.\n- `tox.ini`: one env keeps it on.\n\n```ini\n"
        "[env]\nFAST_COPY=1\n```"
    )
    commit_memory(store, body, ["src/settings.py"], at=1_500_000_000.0)
    md = ContextEngine(store).assemble(ContextRequest(path="src/settings.py", text="")).markdown
    assert "The fast copy crashed on shutdown under uwsgi." in md
    assert "default `True` → `False`. Users who opt in are unaffected." in md
    assert "  [env]\n  FAST_COPY=1\n" in md  # code as it was
    assert not any(line.strip().startswith("→") for line in md.splitlines())


def test_a_subject_that_restates_the_body_is_shown_once(store: MemoryStore) -> None:
    lines = [
        "Fix result count handling",
        "- Override `num_results` with `-n` in the CLI",
        "- Respect the user's result count in every engine",
    ]
    message = " ".join(lines) + "\n\n" + lines[0] + "\n\n" + "\n".join(lines[1:])
    commit_memory(store, message, ["src/cli.py"], at=1_500_000_000.0)
    md = ContextEngine(store).assemble(ContextRequest(path="src/cli.py", text="")).markdown
    item = next(line for line in md.splitlines() if "commit" in line and "#" in line)
    assert item.endswith("] Fix result count handling")
    assert md.count("Respect the user's result count in every engine") == 1
    assert md.count("Fix result count handling") == 1


def session_memory(store: MemoryStore, title: str, mentions: dict[str, int]) -> None:
    """A conversation's own memory (as ingest writes it) whose messages are not stored: it
    says nothing about any file, only how often it named each."""
    store.add(
        NewMemory(
            f"Conversation (claude, 2024-03-01 12:00): {title}\n{len(mentions)} files.",
            kind=Kind.EPISODE,
            anchors=[Anchor(AnchorType.FILE, p) for p in mentions],
            source="chat:claude",
            source_id=title,
            metadata={
                "unit": "session",
                "tool": "claude",
                "session": title,
                "sessionTitle": title,
                "mentions": mentions,
                "chars": 20_000,
            },
        )
    )


def test_a_conversation_that_names_the_file_only_in_passing_is_left_out(
    store: MemoryStore,
) -> None:
    session_memory(store, "Renaming the user model", {"models/user.py": 24, "src/cli.py": 2})
    session_memory(store, "Splitting the CLI", {"src/cli.py": 6, "src/api.py": 9})
    ctx = ContextEngine(store).assemble(ContextRequest(path="src/cli.py", text=""))
    assert "Splitting the CLI" in ctx.markdown
    assert "Renaming the user model" not in ctx.markdown  # not even as a pointer
    user = ContextEngine(store).assemble(ContextRequest(path="models/user.py", text=""))
    assert "Renaming the user model" in user.markdown


def test_commands_run_in_one_message_belong_to_their_files_not_to_every_file(
    store: MemoryStore, tmp_path: Path
) -> None:
    root = project(tmp_path)
    turns = [
        ("user", "Fix the lint errors in src/billing/invoice.py please."),
        (
            "assistant",
            "Read file: src/billing/invoice.py\n\nI ran the checks on the invoice module.\n\n"
            "```bash\nruff check src/billing/invoice.py\npytest tests/test_invoice.py\n"
            "ruff format src/billing/invoice.py\n```",
        ),
        ("user", "Thanks, that works."),
    ]
    run(store, root=root, options={"sources": ["chats"]}, conversations=[conversation(turns)])
    [workflow] = store.list(MemoryFilter(kinds=[Kind.WORKFLOW]))
    assert workflow.text.startswith("Workflow: I ran the checks on the invoice module.")
    assert "ruff check src/billing/invoice.py" in context(store, root, "src/billing/invoice.py")
    assert "ruff check" not in context(store, root, "models/user.py")


def context_with_area_rules(store: MemoryStore, tmp_path: Path) -> str:
    """The invoice module's context under an area rule (a guide of descriptions and one hard
    rule) and a broader product rule (one section an example whose code uses the file's words)."""
    root = project(tmp_path)
    rules = root / ".cursor" / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    for i in range(12):
        (root / "src" / f"m{i}.py").write_text("x = 1\n")
    (rules / "billing.mdc").write_text(
        "---\nglobs: src/billing/**\n---\n# Billing guide\n\n"
        "## How invoice totals work\nAn invoice total is the sum of its lines; the total of "
        "an invoice is kept in cents and each invoice total is recomputed on read.\n\n"
        "## Invoice lifecycle\nAn invoice is drafted, sent, then paid; its total is frozen "
        "when the invoice is sent.\n\n"
        "## Imports\nIMPORTANT: never import the payments SDK at module level here.\n"
    )
    (rules / "product.mdc").write_text(
        "---\nglobs: src/**\n---\n# Product\n\n"
        "## Dashboard\nThe dashboard lists the open accounts.\n\n"
        "## Dashboard example\nA sample page:\n```python\ndef total(invoice):\n"
        "    invoice_total = billing.invoice_total(invoice)\n    return invoice_total\n```\n\n"
        "## Exports\nExports run nightly.\n\n## Themes\nThemes are chosen per account.\n\n"
        "## Support\nSupport answers within a day.\n"
    )
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "rules")
    run(store, root=root, options={"sources": ["rules"]})
    return context(store, root, "src/billing/invoice.py")


def test_an_areas_hard_rule_comes_before_its_descriptions(
    store: MemoryStore, tmp_path: Path
) -> None:
    md = context_with_area_rules(store, tmp_path)
    critical = md.partition("## Relevant")[0].partition("## Background")[0]
    hard = critical.index("never import the payments SDK")
    assert hard < critical.index("sum of its lines") and hard < critical.index("is drafted")


def test_a_code_example_does_not_make_a_broader_rules_section_about_the_file(
    store: MemoryStore, tmp_path: Path
) -> None:
    md = context_with_area_rules(store, tmp_path)
    assert "sum of its lines" in md  # the area's own rule, whole
    # the broader rule's example shares the file's words only in its code: a pointer at most
    assert "billing.invoice_total(invoice)" not in md


def test_the_first_sentence_under_a_fix_heading_is_among_a_commits_lines() -> None:
    body = (
        "## Description\n\n### Root cause\n\nThere is a window between creating the thread and "
        "taking the lock in the worker. The caller has released the lock by then. Another "
        "thread can drop the last reference in that window.\n\n### Fix\n\n"
        "Take a reference before creating the worker thread. The worker drops it once it "
        "holds its own reference, so the count never reaches zero.\n"
    )
    lines = excerpt(body, None, limit=3)
    assert "Take a reference before creating the worker thread." in lines


def test_a_sentence_quoting_an_expression_of_the_files_code_is_about_it() -> None:
    code = (
        "def limit(value, min_value=1):\n"
        "    return max(min_value, int(value))\n\n\ndef label(self):\n    return self.name\n"
    )
    terms = file_terms(FileFacts("src/limits.py", "python", None, None, (), (), ()), code)
    quoting = "Removed the `max(min_value, int(value))` enforcement when a value is given."
    assert terms.strength(quoting) >= 0.8
    # a short name or an expression the file does not hold says nothing about it
    assert terms.strength("Every engine sets `self.name` in its constructor.") == 0.0
    assert terms.strength("Replaced `min(a, int(value))` with a clamp.") == 0.0
    unknown = file_terms(FileFacts("src/limits.py", "python", None, None, (), (), ()), None)
    assert unknown.strength(quoting) == 0.0
    # a path the file mentions is another file, not its code
    documented = file_terms(
        FileFacts("src/limits.py", "python", None, None, (), (), ()),
        code + '"""See docs/configuration.rst."""\n',
    )
    assert documented.strength("Regenerated `docs/configuration.rst` for the new flag.") == 0.0


def test_the_first_sentence_of_a_changes_description_is_among_its_lines() -> None:
    code = "def dispatch(event, *args):\n    return _hub.dispatch(event, args)\n"
    terms = file_terms(FileFacts("core/events.py", "python", None, None, (), (), ()), code)
    body = (
        "## Description\n\nRemoves the raising helper in favour of an opt-in flag on the "
        "existing API.\n\n### Details\n\n"
        "- `dispatch()` accepts a keyword-only flag for raising errors.\n"
        "- `dispatch()` keeps the old default for every caller.\n"
        "- Every caller of `dispatch()` in the tree was migrated to the new flag.\n"
    )
    lines = excerpt(body, terms, limit=2)
    assert "Removes the raising helper in favour of an opt-in flag on the existing API." in lines
    # a lead that only introduces a list is not the change's summary
    listing = body.replace(
        "Removes the raising helper in favour of an opt-in flag on the existing API.",
        "Extends the flag to the remaining integrations listed below:",
    )
    assert not any("remaining integrations" in x for x in excerpt(listing, terms, limit=2))


def test_a_diagnosis_that_ends_in_a_colon_is_what_was_said(
    store: MemoryStore, tmp_path: Path
) -> None:
    turns = [
        ("user", "invoice.py shows the wrong totals, please look."),
        ("assistant", "The issue is that `total()` in invoice.py sums floats, not cents:"),
        ("assistant", "Here are the places in invoice.py that need the change:"),
        ("assistant", "Should invoice.py also round the refunds it computes?"),
        ("assistant", "Now I understand the issue better!"),
    ]
    md = context_after(store, tmp_path, turns)
    assert "sums floats, not cents" in md
    assert "places in invoice.py that need the change" not in md  # it only announces a list
    assert "round the refunds" not in md  # a question found nothing yet
    assert "understand the issue better" not in md  # nor an exclamation


def test_a_compound_class_attribute_is_a_name_of_the_file() -> None:
    code = (
        "class Engine:\n"
        '    engine_code: ClassVar[str] = ""\n'
        "    description: str = ''\n"
        "    maxResults: int\n"
        "\n\ndef split(\n    candidate_text: str,\n) -> list:\n"
        "    ranges_new: list[int] = []\n    return ranges_new\n"
    )
    terms = file_terms(FileFacts("src/engine.py", "python", None, None, (), (), ()), code)
    assert terms.strength("Every place should read `self.engine_code` now.") == 0.8
    assert terms.strength("Raise the maxResults default for the engine users.") == 0.8
    assert terms.strength("The description of the change is long.") == 0.0  # a plain word
    # a function's parameters and locals are not names of the file
    assert terms.strength("Keep the candidate_text and ranges_new apart here.") == 0.0


def test_a_sweep_that_says_nothing_of_the_file_is_shown_by_its_subject(
    store: MemoryStore,
) -> None:
    others = [f"src/feature{i}.py" for i in range(12)]
    commit_memory(
        store,
        "feat: weather and profiles\n\n- Created the weather service with forecasts.\n"
        "- Added a profile summariser that keeps facts about users.",
        ["src/billing/invoice.py", *others],
        at=1_700_000_000.0,
    )
    commit_memory(
        store,
        "feat: cents everywhere\n\n- Totals in invoice.py are integers in cents now.\n"
        "- Added a profile summariser that keeps facts about users.",
        ["src/billing/invoice.py", *others],
        at=1_700_000_100.0,
    )
    md = ContextEngine(store).assemble(ContextRequest(path="src/billing/invoice.py")).markdown
    assert "feat: weather and profiles" in md
    assert "weather service with forecasts" not in md  # a line of what it did elsewhere
    assert md.count("profile summariser") == 1  # the same line, whole where it says more
    assert "Totals in invoice.py are integers in cents now." in md  # it says what it did here


def test_a_long_write_up_is_shown_by_the_sentences_that_matter(store: MemoryStore) -> None:
    table = "\n".join(f"| run {i} | {i * 3} ms | {i * 5} ms |" for i in range(50))
    body = (
        "fix(billing): totals in cents (#40)\n\n## Summary\n\nTotals in invoice.py are summed "
        "in integer cents now, because floats lost a cent on large invoices.\n\n"
        f"### Benchmarks\n\n| run | before | after |\n|---|---|---|\n{table}\n"
    )
    commit_memory(store, body, ["src/billing/invoice.py"], at=1_700_000_000.0)
    md = ContextEngine(store).assemble(ContextRequest(path="src/billing/invoice.py")).markdown
    assert "summed in integer cents now, because floats lost a cent" in md
    assert "run 17" not in md  # the benchmark table is one recall away
