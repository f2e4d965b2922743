/** The status bar item: tokens used of the budget; the tier breakdown in its tooltip. */
import * as vscode from 'vscode';
import type { ServerManager, ServerState } from '../client/serverManager';
import { COMMANDS } from '../ids';
import type { ContextStore } from '../view/contextStore';
import { statusText, statusTooltip } from '../view/format';
import { activeFileUri } from './common';

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly disposables: { dispose(): unknown }[] = [];

  constructor(
    private readonly manager: ServerManager,
    private readonly store: ContextStore,
  ) {
    this.item = vscode.window.createStatusBarItem('livingMemory.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Living Memory';
    this.disposables.push(
      this.item,
      manager.onDidChangeState(() => {
        this.render();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => {
        this.render();
      }),
      store.onDidChange(() => {
        this.render();
      }),
    );
    this.render();
    this.item.show();
  }

  private render(): void {
    const state: ServerState = this.manager.state;
    const item = this.item;
    item.backgroundColor = undefined;
    switch (state) {
      case 'starting':
        item.text = '$(loading~spin) Living Memory';
        item.tooltip = 'Living Memory: the server is starting';
        item.command = COMMANDS.showLog.id;
        return;
      case 'needsInstall':
        item.text = '$(cloud-download) Living Memory';
        item.tooltip = 'Living Memory: the server is not installed for this Python. Click to install it.';
        item.command = COMMANDS.installServer.id;
        item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
        return;
      case 'failed':
      case 'stopped':
        item.text = '$(error) Living Memory';
        item.tooltip = `Living Memory: the server is ${state === 'failed' ? 'not running (it failed)' : 'stopped'}. Click to restart it.`;
        item.command = COMMANDS.restartServer.id;
        item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
        return;
      case 'running':
        break;
    }
    const update = this.store.current(activeFileUri());
    item.command = COMMANDS.showContext.id;
    if (!update) {
      item.text = '$(database) Living Memory';
      item.tooltip = 'Living Memory: open a file to see its context.';
      return;
    }
    item.text = statusText(update);
    const tooltip = new vscode.MarkdownString(statusTooltip(update));
    tooltip.supportThemeIcons = true;
    item.tooltip = tooltip;
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
