/**
 * The editor's side of Python discovery: the setting, the Python extension's interpreter,
 * PATH, the private environment, and the import check (run once per interpreter and start).
 */
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { PythonProbes } from '../python/discovery';
import { envPython } from '../python/install';
import { runProcess } from '../python/process';
import { which } from '../python/which';
import { importCheckCommand, parseImportCheck } from '../protocol/launch';
import type { ImportCheck } from '../protocol/launch';
import { CONFIG_SECTION } from '../ids';

const PYTHON_EXTENSION = 'ms-python.python';
const CHECK_TIMEOUT_MS = 30_000;

/** The parts of the Python extension's API that are read (both its current and older API). */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { id: string; path: string } | undefined;
    resolveEnvironment?(
      env: { id: string; path: string } | string,
    ): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined;
  };
}

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi | undefined>(PYTHON_EXTENSION);
  if (!extension) {
    return undefined;
  }
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch {
    return undefined;
  }
}

/** The active interpreter of the Python extension for the first workspace folder. */
export async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const api = await pythonExtensionApi();
  const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
  const environments = api?.environments;
  const active = environments?.getActiveEnvironmentPath?.(resource);
  if (active) {
    const resolved = await environments?.resolveEnvironment?.(active).catch(() => undefined);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  }
  return api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
}

/** Calls `listener` when the Python extension's interpreter changes (if it is installed). */
export async function onPythonExtensionChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtensionApi();
  return api?.environments?.onDidChangeActiveEnvironmentPath?.(() => {
    listener();
  });
}

export class EditorPythonProbes implements PythonProbes {
  /** Import check results by interpreter, for this round of discovery. */
  readonly checks = new Map<string, ImportCheck>();

  constructor(
    private readonly envDir: string,
    private readonly cwd: string,
  ) {}

  setting(): string | undefined {
    return vscode.workspace.getConfiguration(CONFIG_SECTION).get<string>('python');
  }

  pythonExtension(): Promise<string | undefined> {
    return pythonExtensionInterpreter();
  }

  which(command: string): Promise<string | undefined> {
    return which(command);
  }

  privateEnvironment(): Promise<string | undefined> {
    const python = envPython(this.envDir);
    return Promise.resolve(fs.existsSync(python) ? python : undefined);
  }

  async canRunServer(python: string): Promise<boolean> {
    return (await this.check(python)).ok;
  }

  async check(python: string): Promise<ImportCheck> {
    const known = this.checks.get(python);
    if (known) {
      return known;
    }
    const command = importCheckCommand(python);
    const result = await runProcess(command.command, command.args, {
      cwd: this.cwd,
      timeoutMs: CHECK_TIMEOUT_MS,
    });
    const check =
      result.error !== undefined
        ? ({ ok: false, reason: result.error } as const)
        : parseImportCheck(result.code, result.stdout, result.stderr);
    this.checks.set(python, check);
    return check;
  }
}
