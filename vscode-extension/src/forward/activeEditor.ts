/** Active editor changes → `livingMemory/activeEditorChanged` (switching tabs sends no didOpen). */
import * as vscode from 'vscode';
import type { NotificationSender } from '../client/serverManager';
import { activeEditorChanged } from '../protocol/notifications';

export class ActiveEditorForwarder implements vscode.Disposable {
  private last: string | undefined;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly sender: NotificationSender) {
    this.subscription = vscode.window.onDidChangeActiveTextEditor((editor) => {
      this.send(editor);
    });
  }

  resync(): void {
    this.last = undefined;
    this.send(vscode.window.activeTextEditor);
  }

  private send(editor: vscode.TextEditor | undefined): void {
    const uri = editor?.document.uri;
    if (uri?.scheme !== 'file') {
      return; // output panes, previews, diff views: the context stays with the last file
    }
    const text = uri.toString();
    if (text === this.last) {
      return;
    }
    this.last = text;
    this.sender.notify(activeEditorChanged, { uri: text });
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
