/**
 * The server process and its LanguageClient: choosing the Python, offering the install,
 * starting, restarting, reporting crashes, passing settings.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  State,
  WorkDoneProgress,
} from 'vscode-languageclient/node';
import type {
  CloseHandlerResult,
  ErrorHandlerResult,
  LanguageClientOptions,
  NotificationType,
  ServerOptions,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { COMMANDS, CONFIG_SECTION, OUTPUT_CHANNEL } from '../ids';
import { MemoryApi } from '../protocol/api';
import { OWN_SOURCE } from '../protocol/diagnostics';
import { serverCommand } from '../protocol/launch';
import { contextUpdated, isContextUpdated } from '../protocol/notifications';
import type { ContextUpdatedParams } from '../protocol/notifications';
import {
  didChangeConfigurationParams,
  initializationOptions,
  SECTION,
  SERVER_SETTING_KEYS,
  serverSettings,
} from '../protocol/settings';
import { choosePython, describeSource, findPython } from '../python/discovery';
import type { PythonCandidate } from '../python/discovery';
import { ENV_DIR_NAME } from '../python/install';
import { traceFor } from '../util/trace';
import { EditorPythonProbes } from './pythonProbes';
import { CrashWindow } from './crashWindow';

export type ServerState = 'stopped' | 'starting' | 'running' | 'needsInstall' | 'failed';

export interface NotificationSender {
  notify<P>(type: NotificationType<P>, params: P): void;
}

const CRASH_LIMIT = 3;
const CRASH_WINDOW_MS = 3 * 60_000;
const INSTALL = 'Install Living Memory server';
const SHOW_LOG = 'Show Log';
const RESTART = 'Restart';
const OPEN_SETTINGS = 'Open Settings';

/** The raw `livingMemory` section as the server would read it. */
export function readSettings(scope?: vscode.Uri): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(CONFIG_SECTION, scope);
  const raw: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    raw[key] = config.get(key);
  }
  return raw;
}

/** The file on screen (a `file:` URI), or null: the server starts with it as the active file. */
function activeFileUri(): string | null {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return uri?.scheme === 'file' ? uri.toString() : null;
}

export class ServerManager implements NotificationSender, vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly clientSetups: ((client: LanguageClient) => void)[] = [];
  private current: PythonCandidate | undefined;
  private stateValue: ServerState = 'stopped';
  private restarting = false;
  private queue: Promise<void> = Promise.resolve();
  private readonly crashes = new CrashWindow(CRASH_LIMIT, CRASH_WINDOW_MS);
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly startEmitter = new vscode.EventEmitter<void>();
  private readonly contextEmitter = new vscode.EventEmitter<ContextUpdatedParams>();
  private readonly disposables: { dispose(): unknown }[] = [];

  /** The server's state changed. */
  readonly onDidChangeState = this.stateEmitter.event;
  /** The server is (again) running: forwarders send their whole state. */
  readonly onDidStart = this.startEmitter.event;
  readonly onContextUpdated = this.contextEmitter.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly log: vscode.LogOutputChannel,
    private readonly installer: (base: string) => Promise<boolean>,
  ) {
    this.disposables.push(
      this.stateEmitter,
      this.startEmitter,
      this.contextEmitter,
      log.onDidChangeLogLevel((level) => {
        void this.client?.setTrace(traceFor(level));
      }),
    );
  }

  get state(): ServerState {
    return this.stateValue;
  }

  get python(): PythonCandidate | undefined {
    return this.current;
  }

  get storageDir(): string {
    return this.context.globalStorageUri.fsPath;
  }

  get envDir(): string {
    return path.join(this.storageDir, ENV_DIR_NAME);
  }

  get version(): string {
    return (this.context.extension.packageJSON as { version: string }).version;
  }

  /** Runs `setup` on every client before it starts: a feature's capabilities and handlers. */
  onClient(setup: (client: LanguageClient) => void): void {
    this.clientSetups.push(setup);
  }

  /** The typed commands of the running server; a readable error when it is not running. */
  get api(): MemoryApi {
    return new MemoryApi(this.runningClient());
  }

  /** Throws the readable error when the server is not running. */
  ensureRunning(): void {
    this.runningClient();
  }

  private runningClient(): LanguageClient {
    const client = this.client;
    if (!client || this.stateValue !== 'running') {
      throw new Error(
        this.stateValue === 'starting'
          ? 'the Living Memory server is still starting; try again in a moment'
          : 'the Living Memory server is not running (see the Living Memory log, or run "Living Memory: Restart Server")',
      );
    }
    return client;
  }

  notify<P>(type: NotificationType<P>, params: P): void {
    const client = this.client;
    if (client && this.stateValue === 'running') {
      client.sendNotification(type, params).catch((e: unknown) => {
        this.log.warn(`sending ${type.method} failed: ${String(e)}`);
      });
    }
  }

  /** Receives the server's `$/progress` for a token the extension chose. */
  onProgress(
    token: string,
    handler: (value: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => void,
  ): vscode.Disposable {
    const client = this.client;
    return client ? client.onProgress(WorkDoneProgress.type, token, handler) : new vscode.Disposable(() => undefined);
  }

  /** Sends the current settings (the server pulls the per-folder ones itself). */
  sendConfiguration(): void {
    this.notify(DidChangeConfigurationNotification.type, didChangeConfigurationParams(readSettings()));
  }

  start(): Promise<void> {
    return this.enqueue(() => this.startNow());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.stopNow());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      this.crashes.reset();
      await this.stopNow();
      await this.startNow();
    });
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private setState(state: ServerState): void {
    if (state !== this.stateValue) {
      this.stateValue = state;
      this.stateEmitter.fire(state);
    }
  }

  private async startNow(): Promise<void> {
    if (this.client) {
      return;
    }
    this.setState('starting');
    fs.mkdirSync(this.storageDir, { recursive: true });
    const probes = new EditorPythonProbes(this.envDir, this.storageDir);
    const choice = await choosePython(probes);
    if (choice.kind === 'noPython') {
      this.setState('failed');
      this.log.error('no Python found (livingMemory.python, the Python extension, python3/python on PATH)');
      void this.offer(
        'Living Memory needs Python 3.10 or newer, and none was found: set livingMemory.python, ' +
          'select an interpreter with the Python extension, or put python3 on PATH.',
        [OPEN_SETTINGS, SHOW_LOG],
      );
      return;
    }
    if (choice.kind === 'needsInstall') {
      const base = choice.base;
      const check = await probes.check(base.path);
      const reason = check.ok ? 'unknown reason' : check.reason;
      this.log.warn(`${base.path} (from ${describeSource(base.source)}) cannot run the server: ${reason}`);
      this.setState('needsInstall');
      void this.offerInstall(base, reason);
      return;
    }
    const python = choice.python;
    const check = await probes.check(python.path);
    if (choice.fallbackFrom) {
      this.log.info(
        `${choice.fallbackFrom.path} (from ${describeSource(choice.fallbackFrom.source)}) cannot run the server; using the private environment`,
      );
    }
    this.log.info(
      `Python ${python.path} (from ${describeSource(python.source)})` +
        (check.ok ? `: living-memory ${check.version}, Python ${check.pythonVersion}` : ''),
    );
    this.current = python;
    if (check.ok && python.source === 'privateEnvironment' && check.version !== this.version) {
      void this.offer(
        `The Living Memory server in the private environment is version ${check.version}; ` +
          `this extension is ${this.version}.`,
        [INSTALL, SHOW_LOG],
      );
    }
    await this.launch(python.path);
  }

  private async launch(python: string): Promise<void> {
    const level = vscode.workspace.getConfiguration(CONFIG_SECTION).get<string>('logLevel') ?? 'info';
    const launch = serverCommand(python, level);
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      // never the workspace: `python -m server` must not pick up a project's own `server` package
      options: { cwd: this.storageDir, env: { ...process.env } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.log,
      diagnosticCollectionName: OWN_SOURCE,
      initializationOptions: () => initializationOptions(readSettings(), activeFileUri()),
      errorHandler: {
        error: (error, _message, count): ErrorHandlerResult => {
          this.log.error(`connection error: ${error.message}`);
          return count !== undefined && count <= 3
            ? { action: ErrorAction.Continue }
            : {
                action: ErrorAction.Shutdown,
                message:
                  'The connection to the Living Memory server keeps failing, so it was stopped. ' +
                  'See the Living Memory log, then run "Living Memory: Restart Server".',
              };
        },
        closed: (): CloseHandlerResult => this.closed(),
      },
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) {
              return result;
            }
            return result.map((value: unknown, i) =>
              params.items[i]?.section === SECTION ? serverSettings(value) : value,
            );
          },
        },
      },
    };
    const client = new LanguageClient('livingMemory', OUTPUT_CHANNEL, serverOptions, clientOptions);
    this.client = client;
    for (const setup of this.clientSetups) {
      setup(client);
    }
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Running) {
        this.restarting = false;
        this.setState('running');
        this.startEmitter.fire();
      } else if (e.newState === State.Starting) {
        this.setState('starting');
      } else {
        // stopped on its own: restarted after a crash, or given up on (connection errors)
        this.setState(this.restarting ? 'starting' : 'failed');
      }
    });
    client.onNotification(contextUpdated, (params: unknown) => {
      if (isContextUpdated(params)) {
        this.contextEmitter.fire(params);
      } else {
        this.log.warn(`ignored a malformed ${contextUpdated.method}: ${JSON.stringify(params)}`);
      }
    });
    try {
      await client.start();
      await client.setTrace(traceFor(this.log.logLevel));
    } catch (e) {
      this.log.error(`the server did not start: ${String(e)}`);
      if (this.client === client) {
        this.client = undefined;
        await client.dispose().catch(() => undefined);
        this.setState('failed');
        void this.offer(
          `The Living Memory server could not start (${python}): ${e instanceof Error ? e.message : String(e)}`,
          [SHOW_LOG, RESTART],
        );
      }
    }
  }

  /** The server process ended: restart it unless it keeps crashing, and say so either way. */
  private closed(): CloseHandlerResult {
    if (this.stateValue === 'stopped') {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    if (this.crashes.record(Date.now())) {
      this.restarting = true;
      this.log.warn('the server stopped unexpectedly; restarting it');
      void vscode.window.showWarningMessage(
        'The Living Memory server stopped unexpectedly and was restarted. The log may say why.',
      );
      return { action: CloseAction.Restart, handled: true };
    }
    this.log.error(`the server stopped ${CRASH_LIMIT} times within 3 minutes; not restarting it`);
    const client = this.client;
    this.client = undefined;
    this.setState('failed');
    if (client) {
      // after the client has finished handling the close
      setTimeout(() => {
        void client.dispose().catch(() => undefined);
      }, 0);
    }
    void this.offer(
      `The Living Memory server stopped ${CRASH_LIMIT} times within 3 minutes and is not restarted ` +
        'again. See the log for the reason, then restart it.',
      [SHOW_LOG, RESTART],
    );
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.setState('stopped');
    if (client) {
      try {
        await client.stop(5000);
      } catch (e) {
        this.log.warn(`stopping the server: ${String(e)}`);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  private async offerInstall(base: PythonCandidate, reason: string): Promise<void> {
    const answer = await vscode.window.showWarningMessage(
      `Living Memory: ${base.path} (from ${describeSource(base.source)}) cannot run the server ` +
        `(${reason}). Install the server into a private environment made with this Python?`,
      INSTALL,
      OPEN_SETTINGS,
      SHOW_LOG,
    );
    await this.answer(answer);
  }

  private async offer(message: string, actions: string[]): Promise<void> {
    const answer = await vscode.window.showErrorMessage(message, ...actions);
    await this.answer(answer);
  }

  private async answer(answer: string | undefined): Promise<void> {
    switch (answer) {
      case INSTALL:
        await vscode.commands.executeCommand(COMMANDS.installServer.id);
        break;
      case SHOW_LOG:
        this.log.show();
        break;
      case RESTART:
        await this.restart();
        break;
      case OPEN_SETTINGS:
        await vscode.commands.executeCommand('workbench.action.openSettings', `${CONFIG_SECTION}.python`);
        break;
      default:
        break;
    }
  }

  /** Installs the server with the found Python, then starts it from the private environment. */
  async install(): Promise<void> {
    const probes = new EditorPythonProbes(this.envDir, this.storageDir);
    const base = await findPython(probes);
    if (!base) {
      void this.offer('Living Memory: no Python to install the server with was found.', [OPEN_SETTINGS]);
      return;
    }
    await this.stop();
    const installed = await this.installer(base.path);
    if (installed) {
      await this.start();
    } else {
      this.setState('needsInstall');
    }
  }

  dispose(): void {
    void this.stopNow();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
