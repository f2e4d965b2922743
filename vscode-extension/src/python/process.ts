/** Running a child process to completion, its output streamed line by line. */
import { spawn } from 'node:child_process';

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Each line of stdout and stderr as it arrives. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Kill the process after this many milliseconds. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface RunResult {
  /** null when the process could not start or was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why the process did not run to its end (could not start, timed out, aborted). */
  error?: string;
}

export type ProcessRunner = (command: string, args: readonly string[], options?: RunOptions) => Promise<RunResult>;

function lineSplitter(emit: (line: string) => void): { push(chunk: string): void; end(): void } {
  let rest = '';
  return {
    push(chunk: string) {
      const parts = (rest + chunk).split(/\r?\n/);
      rest = parts.pop() ?? '';
      parts.forEach(emit);
    },
    end() {
      if (rest !== '') {
        emit(rest);
      }
      rest = '';
    },
  };
}

export const runProcess: ProcessRunner = (command, args, options = {}) =>
  new Promise<RunResult>((resolve) => {
    let stdout = '';
    let stderr = '';
    let error: string | undefined;
    let settled = false;
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: options.signal,
    });
    const out = lineSplitter((l) => options.onLine?.(l, 'stdout'));
    const err = lineSplitter((l) => options.onLine?.(l, 'stderr'));
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      err.push(chunk);
    });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            error = `timed out after ${options.timeoutMs} ms`;
            child.kill();
          }, options.timeoutMs);
    const finish = (code: number | null) => {
      if (settled) {
        return;
      }
      settled = true;
      if (timer) {
        clearTimeout(timer);
      }
      out.end();
      err.end();
      resolve(error === undefined ? { code, stdout, stderr } : { code, stdout, stderr, error });
    };
    child.on('error', (e: NodeJS.ErrnoException) => {
      error ??= e.name === 'AbortError' ? 'cancelled' : e.code === 'ENOENT' ? `${command} not found` : e.message;
      finish(null);
    });
    child.on('close', (code) => {
      finish(code);
    });
  });
