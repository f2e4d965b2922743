/**
 * Agent hooks the extension offers to install on first run: which AI tools it finds for a
 * workspace folder, and the command that installs Living Memory's hooks into one
 * (`python -m server hook install --client C --root FOLDER`). No `vscode` import: decided here
 * and unit-tested; client/hookOffer.ts asks the user and runs it.
 */

export type HookClient = 'claude' | 'cursor' | 'codex';

export const HOOK_CLIENT_NAMES: Record<HookClient, string> = {
  claude: 'Claude Code',
  cursor: 'Cursor',
  codex: 'Codex',
};

export interface HookOfferInput {
  /** The workspace folder's path. */
  folder: string;
  /** The user's home folder. */
  home: string;
  /** Whether a path exists (injected, so this stays testable). */
  exists: (path: string) => boolean;
  /** The editor's name (`vscode.env.appName`): Cursor runs its own hooks. */
  appName: string;
  /** Clients the user was already asked about (never asked twice). */
  asked: readonly string[];
}

function join(base: string, name: string): string {
  const sep = base.includes('\\') && !base.includes('/') ? '\\' : '/';
  return base.replace(/[\\/]+$/, '') + sep + name;
}

/** The clients this machine or folder shows signs of, that were not offered before. */
export function hookClientsToOffer(input: HookOfferInput): HookClient[] {
  const seen = (name: string) => input.exists(join(input.folder, name)) || input.exists(join(input.home, name));
  const found: HookClient[] = [];
  if (seen('.claude')) {
    found.push('claude');
  }
  if (/cursor/i.test(input.appName) || seen('.cursor')) {
    found.push('cursor');
  }
  if (seen('.codex')) {
    found.push('codex');
  }
  return found.filter((c) => !input.asked.includes(c));
}

/** The arguments (after the interpreter) that install the hooks of `client` for `folder`. */
export function hookInstallArgs(client: HookClient, folder: string): string[] {
  return ['-m', 'server', 'hook', 'install', '--client', client, '--root', folder];
}

/** The question, naming the clients found. */
export function hookOfferMessage(clients: readonly HookClient[]): string {
  const names = clients.map((c) => HOOK_CLIENT_NAMES[c]);
  const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}` : names[0];
  return (
    `Living Memory can give ${list} this project's memory at every prompt and learn each session ` +
    'as it happens, through the agent hooks. Install them in this project?'
  );
}
