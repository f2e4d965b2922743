/** Resolve Contradictions, Ingest History, Consolidate Memory, Memory Stats, Claude Code import. */
import * as vscode from 'vscode';
import { INGEST_SOURCES } from '../protocol/commands';
import type { Contradiction, IngestSource, ResolveAction } from '../protocol/commands';
import { refFrom } from '../view/args';
import {
  contradictionCounts,
  contradictionLabel,
  firstLine,
  renderContradiction,
  renderIngest,
  renderObject,
} from '../view/format';
import { chooseFolder, guarded } from './common';
import type { Services } from './common';
import { runJob } from './progress';

interface ResolutionItem extends vscode.QuickPickItem {
  resolution: ResolveAction;
}

function resolutionItems(c: Contradiction): ResolutionItem[] {
  const confirm: ResolutionItem[] =
    c.status === 'suspected'
      ? [{ resolution: 'confirm', label: 'It is a contradiction', description: 'confirm it: shown in contexts from now on' }]
      : [];
  return [
    ...confirm,
    { resolution: 'a_wins', label: 'A is right', detail: firstLine(c.a?.text ?? '', 200), description: 'B is superseded' },
    { resolution: 'b_wins', label: 'B is right', detail: firstLine(c.b?.text ?? '', 200), description: 'A is superseded' },
    { resolution: 'both_valid', label: 'Both are valid', description: 'they apply in different cases' },
    { resolution: 'merged', label: 'Merge them…', description: 'write one memory that replaces both' },
    { resolution: 'dismissed', label: 'Not a contradiction', description: 'dismiss it; both stay as they are' },
  ];
}

export async function resolveContradictions(s: Services, arg?: unknown): Promise<void> {
  await guarded('Resolving the contradiction', s.log, async () => {
    const ref = refFrom(arg);
    const folder = ref?.folder ?? (await chooseFolder(s.store));
    if (folder === null) {
      return;
    }
    const api = s.manager.api;
    const open = (await api.contradictions({ status: 'review', limit: 200, folder })).contradictions;
    let chosen = ref ? open.find((c) => c.id === ref.id) : undefined;
    if (!chosen) {
      if (open.length === 0) {
        void vscode.window.showInformationMessage('Living Memory: there are no open or suspected contradictions.');
        await s.view.refresh();
        return;
      }
      const picked = await vscode.window.showQuickPick(
        open.map((c) => ({ label: contradictionLabel(c), detail: c.reason ?? undefined, c })),
        { title: 'Resolve Contradictions', placeHolder: `${contradictionCounts(open)} — pick one`, matchOnDetail: true },
      );
      if (!picked) {
        return;
      }
      chosen = picked.c;
    }
    const c = chosen;
    await s.documents.showResult(`Contradiction ${c.id}`, renderContradiction(c));
    const resolution = await vscode.window.showQuickPick(resolutionItems(c), {
      title: contradictionLabel(c),
      placeHolder: 'How is it settled? (the loser is superseded, never deleted)',
      ignoreFocusOut: true,
    });
    if (!resolution) {
      return;
    }
    let mergedText: string | undefined;
    if (resolution.resolution === 'merged') {
      mergedText = await vscode.window.showInputBox({
        title: 'The merged memory',
        prompt: 'One memory that replaces both',
        value: [c.a?.text, c.b?.text].filter((t) => t).join(' '),
        ignoreFocusOut: true,
        validateInput: (v) => (v.trim() === '' ? 'the merged text cannot be empty' : undefined),
      });
      if (mergedText === undefined) {
        return;
      }
    }
    const note = await vscode.window.showInputBox({
      title: 'Note',
      prompt: 'Why? (optional, Enter to skip)',
      ignoreFocusOut: true,
    });
    if (note === undefined) {
      return;
    }
    const result = await api.resolveContradiction({
      id: c.id,
      resolution: resolution.resolution,
      note: note.trim() || undefined,
      mergedText,
      folder,
    });
    void vscode.window.showInformationMessage(
      resolution.resolution === 'confirm'
        ? `Contradiction #${result.id} confirmed: it is open and shown with its memories.`
        : `Contradiction #${result.id} resolved (${result.resolution ?? resolution.resolution})` +
            (result.mergedId ? `; merged into #${result.mergedId}.` : '.'),
    );
    await s.view.refresh();
  });
}

export async function ingestHistory(s: Services): Promise<void> {
  await guarded('Ingesting history', s.log, async () => {
    const folder = await chooseFolder(s.store);
    if (folder === null) {
      return;
    }
    const sourceItems = INGEST_SOURCES.filter((x) => x !== 'all').map((source) => ({
      label: source,
      picked: true,
      description: {
        git: 'commit history',
        adr: 'architecture decision records',
        rules: 'rule files of AI tools (AGENTS.md, .cursor/rules, …)',
        shared: "the team's shared memory files (.living-memory/shared)",
        chats: 'saved AI chats',
      }[source],
    }));
    const sources = await vscode.window.showQuickPick(sourceItems, {
      title: 'Ingest History: sources',
      canPickMany: true,
      ignoreFocusOut: true,
    });
    if (!sources || sources.length === 0) {
      return;
    }
    let allWorkspaces = false;
    if (sources.some((x) => x.label === 'chats')) {
      const scope = await vscode.window.showQuickPick(
        [
          { label: "This workspace's chats", all: false },
          { label: 'Chats of every workspace', all: true, description: 'Cursor, Copilot, Claude Code, Codex…' },
        ],
        { title: 'Ingest History: which chats', ignoreFocusOut: true },
      );
      if (!scope) {
        return;
      }
      allWorkspaces = scope.all;
    }
    const since = await vscode.window.showInputBox({
      title: 'Ingest History: since',
      prompt: 'Only what is newer than a date (2025-01-31) or an age (30d) — Enter for everything',
      ignoreFocusOut: true,
    });
    if (since === undefined) {
      return;
    }
    const mode = await vscode.window.showQuickPick(
      [
        { label: 'Ingest', dryRun: false, description: 'store what is found' },
        { label: 'Preview only', dryRun: true, description: 'dry run: report what would be stored' },
      ],
      { title: 'Ingest History', ignoreFocusOut: true },
    );
    if (!mode) {
      return;
    }
    const args = {
      sources: sources.length === sourceItems.length ? (['all'] as IngestSource[]) : sources.map((x) => x.label as IngestSource),
      since: since.trim() || undefined,
      dryRun: mode.dryRun,
      allWorkspaces,
      folder,
    };
    const result = await runJob(s.manager, 'Living Memory: ingesting history', (options) =>
      s.manager.api.ingest(args, options),
    );
    await s.documents.showResult(
      mode.dryRun ? 'Ingest preview' : 'Ingest result',
      renderIngest(mode.dryRun ? 'Ingest preview' : 'Ingest result', result),
    );
  });
}

export async function consolidateMemory(s: Services): Promise<void> {
  await guarded('Consolidating memory', s.log, async () => {
    const folder = await chooseFolder(s.store);
    if (folder === null) {
      return;
    }
    const api = s.manager.api;
    const preview = await runJob(s.manager, 'Living Memory: consolidation preview', (options) =>
      api.consolidate({ dryRun: true, folder }, options),
    );
    await s.documents.showResult(
      'Consolidation preview',
      renderObject('Consolidation preview', preview, 'Nothing has been changed yet.'),
    );
    const answer = await vscode.window.showInformationMessage(
      'Apply the consolidation shown in the preview?',
      {
        modal: true,
        detail:
          'Missing levels are filled, decay scores refreshed, near duplicates linked and fact contradictions opened; nothing is merged, archived or deleted.',
      },
      'Apply',
    );
    if (answer !== 'Apply') {
      return;
    }
    const result = await runJob(s.manager, 'Living Memory: consolidating', (options) =>
      api.consolidate({ dryRun: false, folder }, options),
    );
    await s.documents.showResult('Consolidation result', renderObject('Consolidation result', result));
    await s.view.refresh();
  });
}

export async function showStats(s: Services): Promise<void> {
  await guarded('Showing the memory stats', s.log, async () => {
    const folder = await chooseFolder(s.store);
    if (folder === null) {
      return;
    }
    await s.documents.show({ kind: 'stats', folder }, { refresh: true });
  });
}

export async function enableClaudeCodeImport(s: Services): Promise<void> {
  await guarded('Enabling the Claude Code import', s.log, async () => {
    const folder = await chooseFolder(s.store);
    if (folder === null) {
      return;
    }
    const result = await s.manager.api.enableClaudeImport({ folder });
    const message = result.changed
      ? `Added the line @.living-memory/context.md to ${result.file}: Claude Code now reads the context.`
      : `${result.file} already imports the Living Memory context.`;
    const show = result.warning ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const answer = await show(result.warning ? `${message} Note: ${result.warning}.` : message, 'Open CLAUDE.md');
    if (answer === 'Open CLAUDE.md') {
      await vscode.window.showTextDocument(vscode.Uri.file(result.file));
    }
  });
}
