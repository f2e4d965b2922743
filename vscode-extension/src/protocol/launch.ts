/**
 * How the server process is started (`python -m server serve`, LSP over stdio) and how a
 * Python is checked for it. Shared by the extension and the tests, so the tests start the
 * server exactly the way the extension does.
 */

export const SERVER_PACKAGE = 'living-memory';

export interface LaunchCommand {
  command: string;
  args: string[];
}

/** The server on stdio; `logLevel` applies until the client's setting arrives. */
export function serverCommand(python: string, logLevel = 'info'): LaunchCommand {
  return { command: python, args: ['-m', 'server', 'serve', '--stdio', '--log-level', logLevel] };
}

/**
 * Imports what the server needs (`server.lsp` is ours: a stray package called `server` fails
 * here) and prints the installed package version, or `unknown` for a source checkout.
 */
export const IMPORT_CHECK = [
  'import importlib.metadata as m, sys',
  'import server.lsp, server.app, storage',
  'try:',
  `    v = m.version("${SERVER_PACKAGE}")`,
  'except m.PackageNotFoundError:',
  '    v = "unknown"',
  'print("living-memory " + v + " python " + sys.version.split()[0])',
].join('\n');

export function importCheckCommand(python: string): LaunchCommand {
  return { command: python, args: ['-c', IMPORT_CHECK] };
}

export type ImportCheck =
  | { ok: true; version: string; pythonVersion: string }
  | { ok: false; reason: string };

/** Reads the check's output: its last line, or the error's last line (the exception). */
export function parseImportCheck(exitCode: number | null, stdout: string, stderr: string): ImportCheck {
  const match = /living-memory (\S+) python (\S+)/.exec(stdout);
  if (exitCode === 0 && match) {
    return { ok: true, version: match[1] ?? 'unknown', pythonVersion: match[2] ?? 'unknown' };
  }
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const last = lines[lines.length - 1];
  return {
    ok: false,
    reason: last ?? (exitCode === null ? 'the check did not finish' : `exit code ${exitCode}`),
  };
}
