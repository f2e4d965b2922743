/**
 * On the first start of the server in a workspace, offer to install Living Memory's agent
 * hooks for the AI tools found (Claude Code, Cursor, Codex): once per tool, never again after
 * an answer. Installing runs `python -m server hook install` with the server's interpreter,
 * which merges the entries beside the user's own hooks.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import * as vscode from 'vscode';
import type { HookClient } from '../protocol/hooks';
import { hookClientsToOffer, hookInstallArgs, hookOfferMessage } from '../protocol/hooks';
import type { ServerManager } from './serverManager';

const ASKED_KEY = 'livingMemory.hooksOffered';
const INSTALL = 'Install';
const NOT_NOW = 'Not Now';
const NEVER = "Don't Ask Again";

function install(python: string, client: HookClient, folder: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // the folder is the project, but the command runs elsewhere: a project's own `server`
    // package must not shadow ours
    execFile(python, ['-P', ...hookInstallArgs(client, folder)], { cwd: homedir(), timeout: 60_000 }, (err, out, errOut) => {
      if (err) {
        reject(new Error(errOut.trim() || err.message));
      } else {
        resolve(out);
      }
    });
  });
}

/** Ask once the server runs; the returned disposable stops listening. */
export function offerHooks(manager: ServerManager, state: vscode.Memento): vscode.Disposable {
  let done = false;
  return manager.onDidStart(async () => {
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
    const python = manager.python?.path;
    if (done || !folder || !python) {
      return;
    }
    done = true;
    const asked = state.get<string[]>(ASKED_KEY, []);
    const clients = hookClientsToOffer({
      folder: folder.uri.fsPath,
      home: homedir(),
      exists: existsSync,
      appName: vscode.env.appName,
      asked,
    });
    if (clients.length === 0) {
      return;
    }
    const answer = await vscode.window.showInformationMessage(hookOfferMessage(clients), INSTALL, NOT_NOW, NEVER);
    if (answer === undefined || answer === NOT_NOW) {
      return;
    }
    await state.update(ASKED_KEY, [...asked, ...clients]);
    if (answer !== INSTALL) {
      return;
    }
    for (const client of clients) {
      try {
        const out = await install(python, client, folder.uri.fsPath);
        manager.log.info(`agent hooks (${client}): ${out.trim().split('\n').pop() ?? ''}`);
      } catch (e) {
        manager.log.warn(`installing the ${client} hooks failed: ${String(e)}`);
        void vscode.window.showWarningMessage(`Living Memory could not install the ${client} hooks: ${String(e)}`);
      }
    }
  });
}
