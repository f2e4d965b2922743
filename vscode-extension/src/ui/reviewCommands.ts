/**
 * Review Memories for the Team, Approve, Edit, Reject, Share Approved Memories: what becomes
 * team knowledge, and writing it to the shared folder of the repository.
 */
import * as vscode from 'vscode';
import { refFrom } from '../view/args';
import type { Ref } from '../view/args';
import { kindIcon } from '../view/format';
import { reviewDescription, reviewedMessage, reviewLabel, shareMessage } from '../view/review';
import { chooseFolder, guarded } from './common';
import type { Services } from './common';

/** The memory a command is about: the tree item or argument, else one the user picks. */
async function pick(s: Services, arg: unknown, title: string): Promise<Ref | undefined> {
  const ref = refFrom(arg);
  if (ref) {
    return ref;
  }
  const folder = await chooseFolder(s.store);
  if (folder === null) {
    return undefined;
  }
  const items = (await s.manager.api.reviewList({ folder })).items;
  if (items.length === 0) {
    void vscode.window.showInformationMessage('Living Memory: no memory awaits review.');
    return undefined;
  }
  const chosen = await vscode.window.showQuickPick(
    items.map((item) => ({
      label: `$(${kindIcon(item.kind)}) ${reviewLabel(item)}`,
      description: reviewDescription(item),
      detail: item.text,
      item,
    })),
    { title, placeHolder: `${items.length} proposed — pick one`, matchOnDetail: true },
  );
  return chosen ? { id: chosen.item.id, folder } : undefined;
}

async function text(s: Services, ref: Ref): Promise<string> {
  return (await s.manager.api.recall({ id: ref.id, level: 'full', folder: ref.folder })).text;
}

export async function approveMemory(s: Services, arg?: unknown): Promise<void> {
  await guarded('Approving the memory', s.log, async () => {
    const ref = await pick(s, arg, 'Approve for the Team');
    if (!ref) {
      return;
    }
    const result = await s.manager.api.approve({ ids: [ref.id], folder: ref.folder });
    void vscode.window.showInformationMessage(reviewedMessage(result));
    await s.view.refreshReviews(ref.folder);
  });
}

export async function rejectMemory(s: Services, arg?: unknown): Promise<void> {
  await guarded('Rejecting the memory', s.log, async () => {
    const ref = await pick(s, arg, 'Reject Memory');
    if (!ref) {
      return;
    }
    const reason = await vscode.window.showInputBox({
      title: `Reject #${ref.id}`,
      prompt: 'Why is it wrong? (optional; kept with the archived memory)',
      ignoreFocusOut: true,
    });
    if (reason === undefined) {
      return;
    }
    const result = await s.manager.api.reject({ ids: [ref.id], reason: reason.trim() || undefined, folder: ref.folder });
    void vscode.window.showInformationMessage(reviewedMessage(result));
    await s.view.refreshReviews(ref.folder);
  });
}

export async function editMemory(s: Services, arg?: unknown): Promise<void> {
  await guarded('Editing the memory', s.log, async () => {
    const ref = await pick(s, arg, 'Edit Memory');
    if (!ref) {
      return;
    }
    const before = await text(s, ref);
    const after = await vscode.window.showInputBox({
      title: `Edit #${ref.id}`,
      prompt: 'The corrected text (a new approved version replaces it, in the shared file too)',
      value: before,
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() === '' ? 'The text cannot be empty' : undefined),
    });
    if (after === undefined || after.trim() === before.trim()) {
      return;
    }
    const result = await s.manager.api.edit({ id: ref.id, text: after, folder: ref.folder });
    void vscode.window.showInformationMessage(`Edited #${ref.id}: #${result.id} replaces it (approved).`);
    await s.view.refreshReviews(ref.folder);
  });
}

export async function shareMemories(s: Services): Promise<void> {
  await guarded('Sharing memories', s.log, async () => {
    const folder = await chooseFolder(s.store);
    if (folder === null) {
      return;
    }
    const result = await s.manager.api.share({ folder });
    const answer = await vscode.window.showInformationMessage(shareMessage(result), 'Reveal Folder');
    if (answer === 'Reveal Folder') {
      await vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(result.folder));
    }
    await s.view.refresh();
  });
}

export async function reviewMemories(s: Services): Promise<void> {
  await guarded('Reviewing memories', s.log, async () => {
    const ref = await pick(s, undefined, 'Review Memories for the Team');
    if (!ref) {
      return;
    }
    const action = await vscode.window.showQuickPick(
      [
        { label: '$(check) Approve', description: 'share it with the team', run: approveMemory },
        { label: '$(edit) Edit', description: 'correct it: the corrected text is approved', run: editMemory },
        { label: '$(close) Reject', description: 'wrong: archive it, never share it', run: rejectMemory },
      ],
      { title: `Memory #${ref.id}`, placeHolder: 'What should happen to it?' },
    );
    await action?.run(s, ref);
  });
}
