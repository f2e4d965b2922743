/**
 * Installing the server into a private virtual environment (in the extension's global
 * storage): `python -m venv --clear <env>`, then `<env>/python -m pip install <source>`.
 * The plan is pure (unit-tested); running it needs only node.
 *
 * The server is installed only from a source the user named — a wheel, a source archive or a
 * checkout of this project, as a path or a URL — never by a package name from an index: the
 * name `living-memory` on PyPI belongs to an unrelated project.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { ProcessRunner, RunResult } from './process';

/** Environment variable naming what to install when the setting is empty (offline wheels). */
export const SOURCE_ENV = 'LIVING_MEMORY_SERVER_SOURCE';
export const ENV_DIR_NAME = 'server-env';

export interface InstallStep {
  title: string;
  command: string;
  args: string[];
}

export interface InstallPlan {
  envDir: string;
  python: string;
  requirement: string;
  steps: InstallStep[];
}

export interface InstallOptions {
  basePython: string;
  envDir: string;
  /** The extension's version (for the log). */
  version: string;
  /** A wheel, a source directory or archive, as a path or a URL (required). */
  source?: string | undefined;
  platform?: NodeJS.Platform;
  home?: string;
}

/** The interpreter inside a virtual environment. */
export function envPython(envDir: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32'
    ? path.win32.join(envDir, 'Scripts', 'python.exe')
    : path.posix.join(envDir, 'bin', 'python');
}

/** The configured source (setting, else environment variable) or undefined. */
export function configuredSource(setting: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const value = setting?.trim() || env[SOURCE_ENV]?.trim();
  return value ? value : undefined;
}

/** Why there is nothing to install: no source named, or one that is a package name. */
export class NoInstallSource extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoInstallSource';
  }
}

export const NO_SOURCE_MESSAGE =
  'No install source is set. Set livingMemory.serverInstallSource (or LIVING_MEMORY_SERVER_SOURCE) ' +
  'to a Living Memory wheel (.whl), source archive or checkout folder; the server is never ' +
  'installed by name from a package index.';

const URL_SOURCE = /^(?:https?|file):\/\/|^git\+(?:https?|ssh|file):\/\//i;
const ARCHIVE = /\.(?:whl|tar\.gz|tgz|zip)$/i;

/**
 * What pip installs: a path (a leading `~` expanded) or a URL the user named. A bare name or
 * requirement (`living-memory`, `foo>=1`) is refused: pip would fetch whatever an index
 * serves under that name.
 */
export function requirementFor(source: string | undefined, home = os.homedir()): string {
  const value = source?.trim();
  if (!value) {
    throw new NoInstallSource(NO_SOURCE_MESSAGE);
  }
  if (value === '~' || value.startsWith('~/') || value.startsWith('~\\')) {
    return path.join(home, value.slice(1));
  }
  if (URL_SOURCE.test(value) || path.isAbsolute(value) || path.win32.isAbsolute(value)) {
    return value;
  }
  if (value.startsWith('./') || value.startsWith('../') || value.startsWith('.\\') || ARCHIVE.test(value)) {
    return value;
  }
  throw new NoInstallSource(
    `"${value}" looks like a package name, and the server is never installed by name from a ` +
      'package index. Set livingMemory.serverInstallSource to the path or URL of a Living Memory ' +
      'wheel, source archive or checkout.',
  );
}

export function installPlan(options: InstallOptions): InstallPlan {
  const platform = options.platform ?? process.platform;
  const python = envPython(options.envDir, platform);
  const requirement = requirementFor(options.source, options.home);
  return {
    envDir: options.envDir,
    python,
    requirement,
    steps: [
      {
        title: 'Creating a private Python environment',
        command: options.basePython,
        args: ['-m', 'venv', '--clear', options.envDir],
      },
      {
        title: `Installing ${requirement}`,
        command: python,
        args: ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', requirement],
      },
    ],
  };
}

export class InstallError extends Error {
  constructor(
    readonly step: InstallStep,
    readonly result: RunResult,
  ) {
    super(`${step.title} failed: ${failureSummary(result)}`);
    this.name = 'InstallError';
  }
}

/** The lines that say why pip (or venv) failed: its `ERROR:` lines, else the last lines. */
export function failureSummary(result: RunResult, maxLines = 4): string {
  if (result.error !== undefined) {
    return result.error;
  }
  const lines = `${result.stdout}\n${result.stderr}`
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const errors = lines.filter((l) => /^(ERROR|Error):/.test(l));
  const chosen = (errors.length > 0 ? errors : lines).slice(-maxLines);
  const code = result.code === null ? 'it did not finish' : `exit code ${result.code}`;
  return chosen.length > 0 ? `${chosen.join(' ')} (${code})` : code;
}

export interface InstallProgress {
  step(step: InstallStep, index: number, count: number): void;
  line(line: string): void;
}

/** Runs the plan's steps in order; the first failing one throws an InstallError. */
export async function runInstall(
  plan: InstallPlan,
  run: ProcessRunner,
  progress: InstallProgress,
  options: { cwd?: string; signal?: AbortSignal; env?: NodeJS.ProcessEnv } = {},
): Promise<void> {
  for (const [index, step] of plan.steps.entries()) {
    progress.step(step, index, plan.steps.length);
    const result = await run(step.command, step.args, {
      cwd: options.cwd,
      env: options.env,
      signal: options.signal,
      onLine: (line) => {
        progress.line(line);
      },
    });
    if (result.code !== 0) {
      throw new InstallError(step, result);
    }
  }
}
