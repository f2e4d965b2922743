/**
 * Drives the REAL Python language server over stdio through the extension's protocol
 * modules (no `vscode`): starts it the way the extension does (protocol/launch.ts), answers
 * `workspace/configuration` like VS Code would, and records what the server sends.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ConfigurationRequest,
  ExitNotification,
  InitializeRequest,
  InitializedNotification,
  LogMessageNotification,
  RegistrationRequest,
  ShowMessageNotification,
  ShutdownRequest,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
} from 'vscode-languageserver-protocol';
import type {
  ConfigurationItem,
  InitializeResult,
  LogMessageParams,
  ProgressToken,
  ShowMessageParams,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from 'vscode-languageserver-protocol';
import {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-languageserver-protocol/node';
import type { ProtocolConnection } from 'vscode-languageserver-protocol/node';
import { MemoryApi } from '../../src/protocol/api';
import { serverCommand } from '../../src/protocol/launch';
import { contextUpdated } from '../../src/protocol/notifications';
import type { ContextUpdatedParams } from '../../src/protocol/notifications';
import { initializationOptions, SECTION, serverSettings } from '../../src/protocol/settings';

export const PACKAGE_ROOT = path.resolve(__dirname, '..', '..', '..');
export const REPO_ROOT = path.resolve(PACKAGE_ROOT, '..');

/** The Python with the server installed: $LIVING_MEMORY_PYTHON, else the repository's venv. */
export function testPython(): string {
  const fromEnv = process.env.LIVING_MEMORY_PYTHON;
  if (fromEnv) {
    return fromEnv;
  }
  const venv =
    process.platform === 'win32'
      ? path.join(REPO_ROOT, '.venv', 'Scripts', 'python.exe')
      : path.join(REPO_ROOT, '.venv', 'bin', 'python');
  if (!fs.existsSync(venv)) {
    throw new Error(
      `no Python for the server: set LIVING_MEMORY_PYTHON or create ${venv} ` +
        "(cd .. && python3 -m venv .venv && .venv/bin/pip install -e '.[test]')",
    );
  }
  return venv;
}

export function fileUri(p: string): string {
  return pathToFileURL(p).href;
}

export function tempDir(prefix: string): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `lm-ext-${prefix}-`)));
}

/** A folder that looks like a git repository (`.git/HEAD`) with some files. */
export function makeRepo(root: string, files: Record<string, string> = {}, branch = 'main'): string {
  fs.mkdirSync(path.join(root, '.git', 'info'), { recursive: true });
  fs.writeFileSync(path.join(root, '.git', 'HEAD'), `ref: refs/heads/${branch}\n`);
  for (const [rel, text] of Object.entries(files)) {
    const p = path.join(root, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
  }
  return root;
}

type Progress = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

export interface StartOptions {
  folders: string[];
  /** The `livingMemory` section: sent as initializationOptions and on workspace/configuration. */
  settings?: Record<string, unknown>;
  /** Per-folder overrides answered for a `scopeUri`. */
  folderSettings?: Record<string, Record<string, unknown>>;
  /** Use the real embedding model (default: the hashing embedder, for speed). */
  realModel?: boolean;
  python?: string;
  env?: Record<string, string>;
  /** Sent as the client's `experimental` capabilities (what the extension's features announce). */
  experimental?: Record<string, unknown>;
}

export class TestServer {
  readonly updates: ContextUpdatedParams[] = [];
  readonly messages: ShowMessageParams[] = [];
  readonly logs: LogMessageParams[] = [];
  readonly progress = new Map<ProgressToken, Progress[]>();
  readonly api: MemoryApi;
  stderr = '';
  exitCode: number | null | undefined;
  settings: Record<string, unknown>;
  folderSettings: Record<string, Record<string, unknown>>;
  initializeResult: InitializeResult | undefined;
  private readonly exited: Promise<void>;

  constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly connection: ProtocolConnection,
    options: StartOptions,
  ) {
    this.settings = options.settings ?? {};
    this.folderSettings = options.folderSettings ?? {};
    this.api = new MemoryApi(connection);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => {
      child.on('exit', (code) => {
        this.exitCode = code;
        resolve();
      });
    });
    connection.onNotification(contextUpdated, (p) => this.updates.push(p));
    connection.onNotification(ShowMessageNotification.type, (p) => this.messages.push(p));
    connection.onNotification(LogMessageNotification.type, (p) => this.logs.push(p));
    connection.onRequest(WorkDoneProgressCreateRequest.type, (p) => {
      this.watchProgress(p.token);
      return null;
    });
    connection.onRequest(ConfigurationRequest.type, (p) => p.items.map((i) => this.configuration(i)));
    connection.onRequest(RegistrationRequest.type, () => null);
  }

  /** Records `$/progress` for a token (server-created ones are watched automatically). */
  watchProgress(token: ProgressToken): Progress[] {
    const list: Progress[] = this.progress.get(token) ?? [];
    if (!this.progress.has(token)) {
      this.progress.set(token, list);
      this.connection.onProgress(WorkDoneProgress.type, token, (value) => list.push(value));
    }
    return list;
  }

  /** What VS Code answers for a `livingMemory` configuration item. */
  configuration(item: ConfigurationItem): unknown {
    if (item.section !== SECTION) {
      return null;
    }
    const scoped = item.scopeUri === undefined ? {} : (this.folderSettings[item.scopeUri] ?? {});
    // what the extension's configuration middleware answers: the server's keys, no empties
    return serverSettings({ ...this.settings, ...scoped });
  }

  /** The contextUpdated notifications after index `since` that match, waiting for one. */
  async nextUpdate(
    since: number,
    match: (u: ContextUpdatedParams) => boolean = () => true,
    timeoutMs = 20_000,
  ): Promise<ContextUpdatedParams> {
    return waitFor(() => this.updates.slice(since).find(match), timeoutMs, 'a contextUpdated');
  }

  async stop(): Promise<void> {
    if (this.exitCode === undefined) {
      try {
        await withTimeout(this.connection.sendRequest(ShutdownRequest.type), 10_000);
        await this.connection.sendNotification(ExitNotification.type);
      } catch {
        this.child.kill();
      }
      await withTimeout(this.exited, 10_000).catch(() => this.child.kill('SIGKILL'));
    }
    this.connection.dispose();
  }
}

export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`timed out after ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function waitFor<T>(
  get: () => T | undefined | null | false,
  timeoutMs = 20_000,
  what = 'a condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = get();
    if (value !== undefined && value !== null && value !== false) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Awaits `get()` until it gives a value (not undefined, null or false). */
export async function eventually<T>(
  get: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  what = 'a condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value !== undefined && value !== null && value !== false) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts the server, initializes it with the folders and settings, and waits for `initialized`. */
export async function startServer(options: StartOptions): Promise<TestServer> {
  const python = options.python ?? testPython();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('LIVING_MEMORY_')) {
      env[k] = v;
    }
  }
  if (!options.realModel) {
    env.LIVING_MEMORY_EMBEDDER = 'hashing';
  }
  Object.assign(env, options.env);
  const launch = serverCommand(python, 'info');
  const child = spawn(launch.command, launch.args, { cwd: os.tmpdir(), env, stdio: 'pipe' });
  const connection = createProtocolConnection(
    new StreamMessageReader(child.stdout),
    new StreamMessageWriter(child.stdin),
  );
  const server = new TestServer(child, connection, options);
  connection.listen();
  server.initializeResult = await withTimeout(
    connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      // VS Code sends both; the server falls back to rootUri without workspace folders
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      rootUri: options.folders[0] === undefined ? null : fileUri(options.folders[0]),
      workspaceFolders: options.folders.map((f) => ({ uri: fileUri(f), name: path.basename(f) })),
      initializationOptions: initializationOptions(options.settings ?? {}),
      capabilities: {
        workspace: { configuration: true, workspaceFolders: true, didChangeConfiguration: {} },
        window: { workDoneProgress: true, showMessage: {} },
        textDocument: { synchronization: { didSave: true } },
        ...(options.experimental ? { experimental: options.experimental } : {}),
      },
    }),
    30_000,
  );
  await connection.sendNotification(InitializedNotification.type, {});
  return server;
}
