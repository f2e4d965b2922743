/** What the command handlers share: the services, error reporting, the file and folder at hand. */
import * as vscode from 'vscode';
import type { ServerManager } from '../client/serverManager';
import { describeError } from '../protocol/errors';
import type { ContextStore } from '../view/contextStore';
import type { MemoryDocuments } from './documents';
import type { MemoryView } from './memoryView';

export interface Services {
  manager: ServerManager;
  store: ContextStore;
  documents: MemoryDocuments;
  view: MemoryView;
  log: vscode.LogOutputChannel;
}

/** Shows a failure readably (cancellations quietly) and logs it. */
export function reportError(error: unknown, what: string, log: vscode.LogOutputChannel): void {
  const described = describeError(error, what);
  if (described.kind === 'cancelled') {
    log.info(described.message);
    void vscode.window.showInformationMessage(described.message);
    return;
  }
  log.error(described.message);
  void vscode.window.showErrorMessage(described.message, 'Show Log').then((answer) => {
    if (answer === 'Show Log') {
      log.show();
    }
  });
}

/** Runs a command's body; any failure is reported, never thrown at the editor. */
export async function guarded(what: string, log: vscode.LogOutputChannel, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (e) {
    reportError(e, what, log);
  }
}

/** The file on screen (a `file:` URI), or undefined (no editor, an output pane, a diff…). */
export function activeFileUri(): string | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return uri?.scheme === 'file' ? uri.toString() : undefined;
}

/** The file the user means: the active editor's, else the one the last context was for. */
export function currentFile(store: ContextStore): string | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  if (uri?.scheme === 'file') {
    return uri.toString();
  }
  return store.latest?.uri;
}

/**
 * The workspace folder a command is about (its URI): the active file's, the only one, or the
 * one the user picks. undefined: no folder is open; null: the user cancelled the pick.
 */
export async function chooseFolder(store: ContextStore): Promise<string | undefined | null> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const file = currentFile(store);
  if (file) {
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(file));
    if (folder) {
      return folder.uri.toString();
    }
  }
  if (folders.length <= 1) {
    return folders[0]?.uri.toString();
  }
  const picked = await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Which folder’s memory?' });
  return picked ? picked.uri.toString() : null;
}
