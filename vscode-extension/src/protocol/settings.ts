/**
 * The `livingMemory` settings section (README "Language server" → Settings). The server reads
 * it from `initializationOptions`, then pulls it with `workspace/configuration` (globally and
 * per folder) and again after `workspace/didChangeConfiguration`. Unknown keys are ignored by
 * the server; this module still sends only the server's keys, and leaves out empty values so
 * the server uses its own defaults for them.
 */

export const SECTION = 'livingMemory';

/** Keys the server reads (server/settings.py, camelCase). */
export const SERVER_SETTING_KEYS = [
  'dataDirectory',
  'modelDirectory',
  'budget',
  'tierSplit',
  'activityProfiles',
  'injectionTargets',
  'gitExcludeInjected',
  'captureFixes',
  'ingestOnFirstOpen',
  'ingestMergeCommits',
  'ingestBotCommits',
  'ingestTrivialCommits',
  'logLevel',
  'debounceMs',
  'changeDebounceMs',
  'gitPollSeconds',
  'embedBatchSize',
  'consolidateWhenIdleMinutes',
  'sharedFolder',
  'llm',
] as const;

/** Keys only the extension reads (how to launch and install the server). */
export const EXTENSION_SETTING_KEYS = ['python', 'serverInstallSource', 'judge.useEditorModels', 'judge.modelFamily'] as const;

export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];
export type ExtensionSettingKey = (typeof EXTENSION_SETTING_KEYS)[number];

export interface TierSplit {
  critical: number;
  relevant: number;
  background: number;
  index: number;
}

export interface ServerSettings {
  dataDirectory: string;
  modelDirectory: string;
  budget: number;
  tierSplit: TierSplit;
  activityProfiles: Record<string, TierSplit>;
  injectionTargets: ('cursor' | 'copilot' | 'agents')[];
  gitExcludeInjected: boolean;
  captureFixes: boolean;
  ingestOnFirstOpen: boolean;
  ingestMergeCommits: boolean;
  ingestBotCommits: boolean;
  ingestTrivialCommits: boolean;
  logLevel: 'error' | 'warning' | 'info' | 'debug';
  debounceMs: number;
  changeDebounceMs: number;
  gitPollSeconds: number;
  embedBatchSize: number;
  consolidateWhenIdleMinutes: number;
  /** The team's memory files, relative to the project (default `.living-memory/shared`). */
  sharedFolder: string;
  /** The optional OpenAI-compatible endpoint (server: predictive/llm_config.py). */
  llm: Record<string, unknown>;
}

const SERVER_KEYS: ReadonlySet<string> = new Set(SERVER_SETTING_KEYS);

function isServerKey(key: string): key is ServerSettingKey {
  return SERVER_KEYS.has(key);
}

/**
 * The server's part of a raw `livingMemory` section: its keys only, without unset or empty
 * values (an empty directory means "the default", which the server knows best).
 */
export function serverSettings(raw: unknown): Partial<ServerSettings> {
  const out: Record<string, unknown> = {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return out;
  }
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!isServerKey(key) || value === undefined || value === null) {
      continue;
    }
    if (typeof value === 'string' && value.trim() === '' && key !== 'logLevel') {
      continue;
    }
    out[key] = value;
  }
  return out;
}

export interface InitializationOptions {
  livingMemory: Partial<ServerSettings>;
  /**
   * Present when the client reports its active editor (`livingMemory/activeEditorChanged`):
   * then a `didOpen` never makes a document the active one (background opens, the opens a
   * restarted server is re-sent). `uri` is the file on screen at launch, if any.
   */
  activeEditor?: { uri: string | null };
}

/**
 * `initializationOptions` as the server reads them: the settings wrapped in the section name,
 * and — when `activeEditor` is given (a file URI, or null for none) — the file on screen.
 */
export function initializationOptions(raw: unknown, activeEditor?: string | null): InitializationOptions {
  const out: InitializationOptions = { livingMemory: serverSettings(raw) };
  if (activeEditor !== undefined) {
    out.activeEditor = { uri: activeEditor };
  }
  return out;
}

/** The `workspace/didChangeConfiguration` parameters (push for clients that cannot be pulled). */
export function didChangeConfigurationParams(raw: unknown): {
  settings: { livingMemory: Partial<ServerSettings> };
} {
  return { settings: { livingMemory: serverSettings(raw) } };
}

/** Settings whose change needs a new server process (everything else is applied live). */
export function needsRestart(changed: (key: string) => boolean): boolean {
  return EXTENSION_SETTING_KEYS.some((key) => changed(`${SECTION}.${key}`));
}
