/**
 * Which Python runs the server. Pure: every look-up is an injected probe, so the order is
 * unit-tested without a Python or an editor.
 *
 * Candidates, in order: the `livingMemory.python` setting, the Python extension's active
 * interpreter, `python3` then `python` on PATH. The first one that exists is *the* Python.
 * If it can import the server it runs it; else the private environment the extension
 * installed (when it exists and works) runs it; else the user is offered an install, made
 * with that Python.
 */

export type PythonSource = 'setting' | 'pythonExtension' | 'path' | 'privateEnvironment';

export interface PythonCandidate {
  path: string;
  source: PythonSource;
}

export interface PythonProbes {
  /** The `livingMemory.python` setting ('' or undefined: unset). */
  setting(): string | undefined;
  /** The Python extension's active interpreter, when that extension is installed. */
  pythonExtension(): Promise<string | undefined>;
  /** The full path of a command on PATH, if there is one. */
  which(command: string): Promise<string | undefined>;
  /** The private environment's interpreter, when that environment exists. */
  privateEnvironment(): Promise<string | undefined>;
  /** Whether `python` can import the server (and so can run it). */
  canRunServer(python: string): Promise<boolean>;
}

export const PATH_COMMANDS = ['python3', 'python'] as const;

export type Choice =
  | { kind: 'ready'; python: PythonCandidate; fallbackFrom?: PythonCandidate }
  | { kind: 'needsInstall'; base: PythonCandidate }
  | { kind: 'noPython' };

/** The first Python that exists, in the documented order. */
export async function findPython(probes: PythonProbes): Promise<PythonCandidate | undefined> {
  const configured = probes.setting()?.trim();
  if (configured) {
    return { path: configured, source: 'setting' };
  }
  const fromExtension = (await probes.pythonExtension())?.trim();
  if (fromExtension) {
    return { path: fromExtension, source: 'pythonExtension' };
  }
  for (const command of PATH_COMMANDS) {
    const found = await probes.which(command);
    if (found) {
      return { path: found, source: 'path' };
    }
  }
  return undefined;
}

/** What to run the server with, or what is missing. */
export async function choosePython(probes: PythonProbes): Promise<Choice> {
  const python = await findPython(probes);
  if (python && (await probes.canRunServer(python.path))) {
    return { kind: 'ready', python };
  }
  const privatePython = await probes.privateEnvironment();
  if (privatePython && (await probes.canRunServer(privatePython))) {
    const chosen: PythonCandidate = { path: privatePython, source: 'privateEnvironment' };
    return python ? { kind: 'ready', python: chosen, fallbackFrom: python } : { kind: 'ready', python: chosen };
  }
  return python ? { kind: 'needsInstall', base: python } : { kind: 'noPython' };
}

export function describeSource(source: PythonSource): string {
  switch (source) {
    case 'setting':
      return 'the livingMemory.python setting';
    case 'pythonExtension':
      return "the Python extension's interpreter";
    case 'path':
      return 'PATH';
    case 'privateEnvironment':
      return "the extension's private environment";
  }
}
