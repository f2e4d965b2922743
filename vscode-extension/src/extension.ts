/**
 * Living Memory for VS Code and Cursor: starts the language server, forwards what it cannot
 * see (other extensions' diagnostics, the active editor, the git branch), and shows the
 * context (status bar, view, documents) and the memory commands.
 */
import * as vscode from 'vscode';
import { registerEditorJudge } from './client/editorJudge';
import { offerHooks } from './client/hookOffer';
import { createInstaller } from './client/installer';
import { registerMcpProvider } from './client/mcpProvider';
import { onPythonExtensionChange } from './client/pythonProbes';
import { ServerManager } from './client/serverManager';
import { ActiveEditorForwarder } from './forward/activeEditor';
import { DiagnosticsForwarder } from './forward/diagnostics';
import { GitForwarder } from './forward/git';
import { COMMANDS, COMMAND_KEYS, CONFIG_SECTION, OUTPUT_CHANNEL } from './ids';
import type { CommandKey } from './ids';
import { needsRestart } from './protocol/settings';
import { Debouncer } from './util/debounce';
import { ContextStore } from './view/contextStore';
import type { Services } from './ui/common';
import { copyContext, showContext } from './ui/contextCommands';
import { MemoryDocuments } from './ui/documents';
import { confirmCandidate, dismissCandidate, judgeCandidates } from './ui/judgeCommands';
import {
  consolidateMemory,
  enableClaudeCodeImport,
  ingestHistory,
  resolveContradictions,
  showStats,
} from './ui/maintenanceCommands';
import { exploreRelated, openMemory, rememberSelection, searchMemory } from './ui/memoryCommands';
import { MemoryView } from './ui/memoryView';
import { approveMemory, editMemory, rejectMemory, reviewMemories, shareMemories } from './ui/reviewCommands';
import { StatusBar } from './ui/statusBar';

const RESTART_DELAY_MS = 1000;
const CONFIG_DELAY_MS = 300;

type Handler = (s: Services, arg?: unknown) => Promise<void> | void;

/** One handler per command of ids.ts (a missing one does not compile). */
export const HANDLERS: Record<CommandKey, Handler> = {
  showContext,
  copyContext,
  rememberSelection,
  searchMemory,
  exploreRelated,
  openMemory,
  resolveContradictions,
  ingestHistory,
  consolidateMemory,
  showStats,
  enableClaudeCodeImport,
  installServer: (s) => s.manager.install(),
  restartServer: (s) => s.manager.restart(),
  showLog: (s) => {
    s.log.show();
  },
  refreshView: (s) => s.view.refresh(),
  reviewMemories,
  approveMemory,
  editMemory,
  rejectMemory,
  shareMemories,
  judgeCandidates,
  confirmCandidate,
  dismissCandidate,
};

let manager: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel(OUTPUT_CHANNEL, { log: true });
  const server = new ServerManager(context, log, createInstaller(context, log));
  manager = server;
  const store = new ContextStore();
  const documents = new MemoryDocuments(server, store);
  const view = new MemoryView(server, store);
  const services: Services = { manager: server, store, documents, view, log };

  const diagnostics = new DiagnosticsForwarder(server);
  const activeEditor = new ActiveEditorForwarder(server);
  const git = new GitForwarder(server, log);

  const restart = new Debouncer(() => {
    log.info('launch settings changed: restarting the server');
    void server.restart();
  }, { delayMs: RESTART_DELAY_MS });
  const pushConfiguration = new Debouncer(() => {
    server.sendConfiguration();
  }, { delayMs: CONFIG_DELAY_MS });

  context.subscriptions.push(
    log,
    server,
    documents,
    view,
    new StatusBar(server, store),
    diagnostics,
    activeEditor,
    git,
    { dispose: () => {
      restart.dispose();
      pushConfiguration.dispose();
    } },
    server.onContextUpdated((update) => {
      store.update(update);
      documents.refreshContexts();
    }),
    server.onDidStart(() => {
      activeEditor.resync();
      git.resync();
      diagnostics.resync();
    }),
    server.onDidChangeState((state) => {
      if (state !== 'running') {
        store.clear();
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (needsRestart((key) => e.affectsConfiguration(key))) {
        restart.trigger();
      } else if (e.affectsConfiguration(CONFIG_SECTION)) {
        pushConfiguration.trigger();
      }
    }),
    ...COMMAND_KEYS.map((key) =>
      vscode.commands.registerCommand(COMMANDS[key].id, (arg?: unknown) => HANDLERS[key](services, arg)),
    ),
  );

  const mcp = registerMcpProvider(server);
  if (mcp) {
    context.subscriptions.push(mcp);
  }
  context.subscriptions.push(offerHooks(server, context.globalState));
  registerEditorJudge(server, context.globalState);

  void onPythonExtensionChange(() => {
    if (server.python?.source === 'pythonExtension' || server.state === 'needsInstall') {
      log.info("the Python extension's interpreter changed: restarting the server");
      restart.trigger();
    }
  }).then((sub) => {
    if (sub) {
      context.subscriptions.push(sub);
    }
  });
  void git.connect();
  void server.start();
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
