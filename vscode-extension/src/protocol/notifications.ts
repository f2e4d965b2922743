/**
 * The server's custom notifications (README "Language server" → Notifications): names and
 * parameter shapes. Shared by the extension and the tests that drive the real server.
 */
import { NotificationType } from 'vscode-languageserver-protocol';
import type { Diagnostic } from 'vscode-languageserver-protocol';

export const ACTIVE_EDITOR_CHANGED = 'livingMemory/activeEditorChanged';
export const BRANCH_CHANGED = 'livingMemory/branchChanged';
export const DIAGNOSTICS_CHANGED = 'livingMemory/diagnosticsChanged';
export const CONTEXT_UPDATED = 'livingMemory/contextUpdated';

/** The editor switched tabs (switching sends no didOpen). */
export interface ActiveEditorChangedParams {
  uri: string;
}

/** A repository's branch changed. `folder` omitted: every folder; `branch` null: detached. */
export interface BranchChangedParams {
  folder?: string;
  branch: string | null;
  previous: string | null;
}

/** A file's complete current diagnostics from every source (an empty list clears). */
export interface DiagnosticsChangedParams {
  uri: string;
  diagnostics: Diagnostic[];
}

export const TIERS = ['critical', 'relevant', 'background', 'index'] as const;
export type Tier = (typeof TIERS)[number];

export interface TierUsage {
  used: number;
  budget: number;
  items: number;
}

export interface TokenUsage {
  total: number;
  budget: number;
  tiers: Record<Tier, TierUsage>;
}

export interface ContextItem {
  key: string;
  tier: Tier;
  level: string;
  score: number;
  tokens: number;
  memoryId: number | null;
  kind: string;
  /** The memory's one-line index label (null for items that are not a memory). */
  label?: string | null;
  /** Set when the code the memory cites changed since (\`changed\`) or is gone (\`gone\`). */
  stale?: StaleVerdict | null;
}

/** How a memory stands against the code it cites, and why (one line per finding). */
export interface StaleVerdict {
  state: 'changed' | 'gone';
  notes: string[];
}

/** The context of the active file was assembled again (and written to the targets). */
export interface ContextUpdatedParams {
  uri: string;
  folder: string;
  path: string;
  branch: string | null;
  activity: string;
  tokens: TokenUsage;
  items: ContextItem[];
  injected: string[];
  refused: string[];
  generation: number;
  /** One id per context written to the injection targets (grows; null from older servers). */
  contextId?: number | null;
  elapsedMs: number;
}

export const activeEditorChanged = new NotificationType<ActiveEditorChangedParams>(
  ACTIVE_EDITOR_CHANGED,
);
export const branchChanged = new NotificationType<BranchChangedParams>(BRANCH_CHANGED);
export const diagnosticsChanged = new NotificationType<DiagnosticsChangedParams>(
  DIAGNOSTICS_CHANGED,
);
export const contextUpdated = new NotificationType<ContextUpdatedParams>(CONTEXT_UPDATED);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A contextUpdated payload the UI can rely on (a malformed one is logged and dropped). */
export function isContextUpdated(value: unknown): value is ContextUpdatedParams {
  if (!isRecord(value) || !isRecord(value.tokens) || !isRecord(value.tokens.tiers)) {
    return false;
  }
  const tiers = value.tokens.tiers;
  return (
    typeof value.uri === 'string' &&
    typeof value.folder === 'string' &&
    typeof value.tokens.total === 'number' &&
    typeof value.tokens.budget === 'number' &&
    TIERS.every((t) => isRecord(tiers[t]) && typeof tiers[t].used === 'number') &&
    Array.isArray(value.items)
  );
}
