/** Show Context for Current File, Copy Context. */
import * as vscode from 'vscode';
import { formatTokens } from '../view/format';
import { currentFile, guarded } from './common';
import type { Services } from './common';

const NO_FILE = 'Living Memory: open a file of a workspace folder first.';

export async function showContext(s: Services): Promise<void> {
  await guarded('Showing the context', s.log, async () => {
    const uri = currentFile(s.store);
    if (!uri) {
      void vscode.window.showInformationMessage(NO_FILE);
      return;
    }
    await s.documents.show({ kind: 'context', uri }, { refresh: true });
  });
}

export async function copyContext(s: Services): Promise<void> {
  await guarded('Copying the context', s.log, async () => {
    const uri = currentFile(s.store);
    if (!uri) {
      void vscode.window.showInformationMessage(NO_FILE);
      return;
    }
    // the context the status bar and the view show (the server answers it, or a newer one)
    const shown = s.store.current(uri);
    const context = await s.manager.api.assembleContext({ uri, contextId: shown?.contextId ?? null });
    await vscode.env.clipboard.writeText(context.markdown ?? '');
    vscode.window.setStatusBarMessage(
      `$(check) Living Memory: copied the context of ${context.file} (${formatTokens(context.tokens.total)} tokens)`,
      4000,
    );
  });
}
