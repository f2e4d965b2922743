/**
 * Installing the server into a private virtual environment (in the extension's global
 * storage): `python -m venv --clear <env>`, then `<env>/python -m pip install <requirement>`.
 * The plan is pure (unit-tested); running it needs only node.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { SERVER_PACKAGE } from '../protocol/launch';
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
  /** The extension's version: the server package of the same version is installed. */
  version: string;
  /** A wheel, a source directory or archive, or a pip requirement; empty: the index. */
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

/** What pip installs: the source (a leading `~` expanded), else the package at our version. */
export function requirementFor(source: string | undefined, version: string, home = os.homedir()): string {
  if (!source) {
    return `${SERVER_PACKAGE}==${version}`;
  }
  if (source === '~' || source.startsWith('~/') || source.startsWith('~\\')) {
    return path.join(home, source.slice(1));
  }
  return source;
}

export function installPlan(options: InstallOptions): InstallPlan {
  const platform = options.platform ?? process.platform;
  const python = envPython(options.envDir, platform);
  const requirement = requirementFor(options.source, options.version, options.home);
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
