/** Remember Selection As…, Search Memory, Explore Related, Open Memory… */
import * as vscode from 'vscode';
import { KINDS } from '../protocol/commands';
import type { Kind, SearchHit } from '../protocol/commands';
import { describeError } from '../protocol/errors';
import { parseMemoryId, refFrom, rememberText } from '../view/args';
import { firstLine, flattenExplore, kindIcon } from '../view/format';
import { Debouncer } from '../util/debounce';
import { chooseFolder, guarded } from './common';
import type { Services } from './common';

export const KIND_DESCRIPTIONS: Record<Kind, string> = {
  fact: 'something true about the project',
  decision: 'a choice that was made, and why',
  episode: 'something that happened',
  solution: 'how a problem was fixed',
  pattern: 'a recurring shape in the code',
  workflow: 'how a task is done, step by step',
  convention: 'a house rule to follow',
  preference: 'how someone likes things done',
  summary: 'a summary of other memories',
};

const SEARCH_DELAY_MS = 200;

export async function rememberSelection(s: Services): Promise<void> {
  await guarded('Remembering', s.log, async () => {
    const editor = vscode.window.activeTextEditor;
    let selection = editor ? editor.document.getText(editor.selection) : '';
    if (selection.trim() === '') {
      selection =
        (await vscode.window.showInputBox({
          title: 'Remember',
          prompt: 'Nothing is selected: what should be remembered?',
          ignoreFocusOut: true,
        })) ?? '';
      if (selection.trim() === '') {
        return;
      }
    }
    const kind = await vscode.window.showQuickPick(
      KINDS.map((k) => ({ memoryKind: k, label: k, description: KIND_DESCRIPTIONS[k], iconPath: new vscode.ThemeIcon(kindIcon(k)) })),
      { title: 'Remember as…', placeHolder: 'What kind of memory is it?', ignoreFocusOut: true },
    );
    if (!kind) {
      return;
    }
    const note = await vscode.window.showInputBox({
      title: `Remember as ${kind.label}`,
      prompt: 'An optional note: why it matters, when it applies (Enter to skip)',
      ignoreFocusOut: true,
    });
    if (note === undefined) {
      return;
    }
    const uri = editor?.document.uri.scheme === 'file' ? editor.document.uri.toString() : undefined;
    const folder = uri ? undefined : await chooseFolder(s.store);
    if (folder === null) {
      return;
    }
    const text = rememberText(selection, note, editor?.document.languageId ?? 'plaintext');
    const result = await s.manager.api.remember({ text, kind: kind.memoryKind, uri, folder });
    const message = result.created
      ? `Remembered as ${result.memory.kind} #${result.id}.`
      : `Already remembered as ${result.memory.kind} #${result.id}.`;
    const answer = await vscode.window.showInformationMessage(message, 'Open');
    if (answer === 'Open') {
      await s.documents.show({ kind: 'memory', id: result.id, folder: folder ?? undefined });
    }
  });
}

interface HitItem extends vscode.QuickPickItem {
  id: number;
}

function hitItem(hit: SearchHit & { id: number }): HitItem {
  return {
    id: hit.id,
    label: `$(${kindIcon(hit.kind)}) ${firstLine(hit.label || hit.text)}`,
    description: `#${hit.id} · ${hit.kind} · ${hit.score.toFixed(2)} · ${hit.provenance}`,
    detail: firstLine(hit.snippet || hit.compressed || hit.text, 200),
    alwaysShow: true, // the server ranks; the quick pick must not filter by label
  };
}

export async function searchMemory(s: Services): Promise<void> {
  await guarded('Searching memory', s.log, async () => {
    const folder = await chooseFolder(s.store);
    if (folder === null) {
      return;
    }
    const api = s.manager.api;
    const pick = vscode.window.createQuickPick<HitItem>();
    pick.title = 'Search Living Memory';
    pick.placeholder = 'Type to search decisions, facts, solutions…';
    pick.matchOnDescription = false;
    pick.matchOnDetail = false;
    let running: vscode.CancellationTokenSource | undefined;
    const search = new Debouncer(() => {
      running?.cancel();
      const query = pick.value.trim();
      if (query === '') {
        pick.items = [];
        pick.busy = false;
        return;
      }
      const source = new vscode.CancellationTokenSource();
      running = source;
      pick.busy = true;
      api.search({ query, limit: 20, folder }, { token: source.token }).then(
        (result) => {
          if (running !== source) {
            return;
          }
          pick.items = result.results
            .filter((h): h is SearchHit & { id: number } => h.id !== null)
            .map(hitItem);
          if (result.count === 0) {
            pick.items = [];
          }
          pick.busy = false;
        },
        (e: unknown) => {
          if (running !== source) {
            return;
          }
          pick.busy = false;
          const described = describeError(e, 'Search');
          if (described.kind !== 'cancelled') {
            pick.items = [];
            pick.placeholder = described.message;
          }
        },
      );
    }, { delayMs: SEARCH_DELAY_MS });
    const chosen = await new Promise<HitItem | undefined>((resolve) => {
      pick.onDidChangeValue(() => {
        search.trigger();
      });
      pick.onDidAccept(() => {
        resolve(pick.selectedItems[0]);
        pick.hide();
      });
      pick.onDidHide(() => {
        resolve(undefined);
      });
      pick.show();
    });
    search.dispose();
    running?.cancel();
    pick.dispose();
    if (chosen) {
      await s.documents.show({ kind: 'memory', id: chosen.id, folder });
    }
  });
}

export async function exploreRelated(s: Services, arg?: unknown): Promise<void> {
  await guarded('Exploring related memories', s.log, async () => {
    const ref = refFrom(arg);
    let folder = ref?.folder;
    let start: { id: number } | { query: string };
    if (ref) {
      start = { id: ref.id };
    } else {
      const chosen = await chooseFolder(s.store);
      if (chosen === null) {
        return;
      }
      folder = chosen;
      const editor = vscode.window.activeTextEditor;
      const selected = editor ? firstLine(editor.document.getText(editor.selection), 200) : '';
      const input = await vscode.window.showInputBox({
        title: 'Explore Related',
        prompt: 'A memory id (#12) or what to search for',
        value: selected,
        ignoreFocusOut: true,
      });
      if (!input?.trim()) {
        return;
      }
      const id = parseMemoryId(input);
      start = id === undefined ? { query: input.trim() } : { id };
    }
    const result = await s.manager.api.explore({ ...start, depth: 2, maxNodes: 50, level: 'index', folder });
    const nodes = flattenExplore(result);
    if (nodes.length === 0) {
      void vscode.window.showInformationMessage('Living Memory: nothing found to explore from.');
      return;
    }
    const items = nodes.map(({ node, depth }) => ({
      id: node.id,
      label: `${'\u2003'.repeat(depth)}$(${kindIcon(node.kind)}) ${firstLine(node.text)}`,
      description: `#${node.id} · ${node.kind}${node.via ? ` · ${node.via.toLowerCase()}` : ''}`,
    }));
    const chosen = await vscode.window.showQuickPick(items, {
      title: `Related memories${result.truncated ? ' (first 50)' : ''}`,
      placeHolder: 'Pick a memory to open it in full',
      matchOnDescription: true,
    });
    if (chosen) {
      await s.documents.show({ kind: 'memory', id: chosen.id, folder });
    }
  });
}

export async function openMemory(s: Services, arg?: unknown): Promise<void> {
  await guarded('Opening the memory', s.log, async () => {
    let ref = refFrom(arg);
    if (!ref) {
      const folder = await chooseFolder(s.store);
      if (folder === null) {
        return;
      }
      const input = await vscode.window.showInputBox({
        title: 'Open Memory',
        prompt: 'The memory id',
        placeHolder: '#12',
        validateInput: (v) => (parseMemoryId(v) === undefined ? 'a positive number, like 12 or #12' : undefined),
      });
      const id = input === undefined ? undefined : parseMemoryId(input);
      if (id === undefined) {
        return;
      }
      ref = { id, folder };
    }
    await s.documents.show({ kind: 'memory', id: ref.id, folder: ref.folder }, { refresh: true });
  });
}
