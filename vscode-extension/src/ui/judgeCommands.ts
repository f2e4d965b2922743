/**
 * Candidate contradictions in the view: Judge Candidate Contradictions (the chain of judges:
 * the configured model, else the editor's language models), and a person's own verdict on one
 * pair (It Is a Contradiction / Not a Contradiction).
 */
import * as vscode from 'vscode';
import { refFrom } from '../view/args';
import { judgedMessage, settledMessage } from '../view/pending';
import { chooseFolder, guarded } from './common';
import type { Services } from './common';

function folderOf(arg: unknown): string | undefined {
  const value = typeof arg === 'object' && arg !== null ? (arg as Record<string, unknown>) : undefined;
  return typeof value?.folder === 'string' ? value.folder : undefined;
}

export async function judgeCandidates(s: Services, arg?: unknown): Promise<void> {
  await guarded('Judging the candidate contradictions', s.log, async () => {
    const folder = folderOf(arg) ?? (await chooseFolder(s.store));
    if (folder === null) {
      return;
    }
    const run = await s.manager.api.judgePending({ folder });
    void vscode.window.showInformationMessage(judgedMessage(run));
    await s.view.refresh();
  });
}

async function settle(s: Services, arg: unknown, conflict: boolean): Promise<void> {
  const ref = refFrom(arg);
  if (!ref) {
    void vscode.window.showInformationMessage('Living Memory: pick a candidate contradiction in the Living Memory view.');
    return;
  }
  const result = await s.manager.api.settleCandidate({ id: ref.id, conflict, folder: ref.folder });
  void vscode.window.showInformationMessage(settledMessage(result));
  await s.view.refresh();
}

export async function confirmCandidate(s: Services, arg?: unknown): Promise<void> {
  await guarded('Confirming the contradiction', s.log, () => settle(s, arg, true));
}

export async function dismissCandidate(s: Services, arg?: unknown): Promise<void> {
  await guarded('Dismissing the candidate', s.log, () => settle(s, arg, false));
}
