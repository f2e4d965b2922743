/**
 * The server's `workspace/executeCommand` commands (README "Language server" → Commands):
 * names, argument and result shapes. Each takes one JSON object argument with camelCase keys.
 */
import type { ContextItem, TokenUsage } from './notifications';

export const SERVER_COMMANDS = {
  assembleContext: 'livingMemory.assembleContext',
  remember: 'livingMemory.remember',
  search: 'livingMemory.search',
  recall: 'livingMemory.recall',
  explore: 'livingMemory.explore',
  cite: 'livingMemory.cite',
  ignore: 'livingMemory.ignore',
  forget: 'livingMemory.forget',
  restore: 'livingMemory.restore',
  contradictions: 'livingMemory.contradictions',
  resolveContradiction: 'livingMemory.resolveContradiction',
  stats: 'livingMemory.stats',
  reindex: 'livingMemory.reindex',
  ingest: 'livingMemory.ingest',
  consolidate: 'livingMemory.consolidate',
  enableClaudeImport: 'livingMemory.enableClaudeImport',
  reviewList: 'livingMemory.reviewList',
  approve: 'livingMemory.approve',
  reject: 'livingMemory.reject',
  edit: 'livingMemory.edit',
  share: 'livingMemory.share',
  judgePending: 'livingMemory.judgePending',
  settleCandidate: 'livingMemory.settleCandidate',
} as const;

export type ServerCommandKey = keyof typeof SERVER_COMMANDS;

export const KINDS = [
  'fact',
  'decision',
  'episode',
  'solution',
  'pattern',
  'workflow',
  'convention',
  'preference',
  'summary',
] as const;
export type Kind = (typeof KINDS)[number];

export const ACTIVITIES = ['debugging', 'feature', 'review', 'refactor', 'deploy', 'general'];
export type Activity = 'debugging' | 'feature' | 'review' | 'refactor' | 'deploy' | 'general';
export type Level = 'index' | 'compressed' | 'summary' | 'full';
export type Resolution = 'a_wins' | 'b_wins' | 'both_valid' | 'merged' | 'dismissed';
export const RESOLUTIONS: readonly Resolution[] = ['a_wins', 'b_wins', 'both_valid', 'merged', 'dismissed'];
/** How a contradiction is settled, or `confirm`: a suspected one is real (it becomes open). */
export type ResolveAction = Resolution | 'confirm';
/**
 * `open`: shown in contexts (strong evidence or confirmed); `suspected`: a weak local finding,
 * only listed for review until confirmed or dismissed.
 */
export type ContradictionStatus = 'open' | 'suspected' | 'resolved' | 'dismissed';
export const INGEST_SOURCES = ['git', 'adr', 'rules', 'shared', 'chats', 'all'] as const;
export type IngestSource = (typeof INGEST_SOURCES)[number];

/** `folder` (a workspace folder URI) picks the store; else the folder of `uri` or the active one. */
export interface FolderArg {
  folder?: string;
}

// ---- arguments ---------------------------------------------------------------------------

export interface AssembleContextArgs extends FolderArg {
  uri?: string;
  branch?: string;
  activity?: Activity;
  budget?: number;
  diagnostics?: unknown[];
  markdown?: boolean;
  /** The contextId the caller shows: the server answers that context (or a newer one). */
  contextId?: number | null;
}

export interface RememberArgs extends FolderArg {
  text: string;
  kind?: Kind;
  anchors?: string[];
  tags?: string[];
  importance?: number;
  scope?: 'user' | 'project' | 'system';
  uri?: string;
  supersedes?: number;
  source?: string;
}

export interface SearchArgs extends FolderArg {
  query: string;
  limit?: number;
  kinds?: Kind[];
  anchors?: string[];
  branch?: string;
  mode?: 'hybrid' | 'keyword' | 'vector';
  includeArchived?: boolean;
  minSimilarity?: number;
}

export interface RecallArgs extends FolderArg {
  id: number;
  level?: Level | 'related';
  depth?: number;
  limit?: number;
}

export interface ExploreArgs extends FolderArg {
  id?: number;
  query?: string;
  depth?: number;
  maxNodes?: number;
  roots?: number;
  level?: Level;
}

export interface IdArgs extends FolderArg {
  id: number;
  context?: string;
}

export interface ForgetArgs extends FolderArg {
  id: number;
  reason?: string;
  purge?: boolean;
}

export interface ContradictionsArgs extends FolderArg {
  /** `review` (the default): open and suspected ones; `pending`: candidate pairs no judge read yet. */
  status?: 'review' | ContradictionStatus | 'pending' | 'all';
  limit?: number;
}

export interface JudgePendingArgs extends FolderArg {
  /** Pairs put to the judge at most (1–50; default: a few for the editor's models). */
  limit?: number;
}

/** A person's verdict on a candidate pair (`id`: its id in the `pending` list). */
export interface SettleCandidateArgs extends FolderArg {
  id: number;
  conflict: boolean;
  note?: string;
}

export interface ResolveContradictionArgs extends FolderArg {
  id: number;
  resolution: ResolveAction;
  note?: string;
  mergedId?: number;
  mergedText?: string;
}

export interface ReindexArgs extends FolderArg {
  batchSize?: number;
}

export const CHAT_TOOLS = ['cursor', 'specstory', 'copilot', 'claude', 'codex'] as const;
export type ChatTool = (typeof CHAT_TOOLS)[number];

export interface IngestArgs extends FolderArg {
  sources?: IngestSource[];
  /** Chat tools to read (default: all). */
  tools?: ChatTool[];
  /** Files or folders to read instead of the usual places. */
  paths?: string[];
  /** A date (2025-01-31), a time or an age (30d, 12h). */
  since?: string;
  dryRun?: boolean;
  /** Chats of every workspace, not only this folder's. */
  allWorkspaces?: boolean;
  /** Keep merge / bot / trivial commits (default: the livingMemory.ingest…Commits settings). */
  includeMerges?: boolean;
  includeBots?: boolean;
  includeTrivial?: boolean;
}

export interface ConsolidateArgs extends FolderArg {
  dryRun?: boolean;
}

/**
 * Whether a memory may be shared with the team: `proposed` (extracted from chats, agents,
 * fixes: waits for a person), `approved` (written to the shared folder by Share), `rejected`
 * (archived; its shared file goes on the next Share).
 */
export type ReviewStatus = 'proposed' | 'approved' | 'rejected';

export interface ReviewListArgs extends FolderArg {
  status?: ReviewStatus;
  limit?: number;
}

export interface ReviewArgs extends FolderArg {
  ids: number[];
  /** Why (reject): kept as the archive reason. */
  reason?: string;
}

/** A person's correction: a new approved version supersedes the memory. */
export interface EditArgs extends FolderArg {
  id: number;
  text: string;
  kind?: Kind;
  anchors?: string[];
}

export interface ShareArgs extends FolderArg {
  /** Default: the `livingMemory.sharedFolder` setting (`.living-memory/shared`). */
  sharedFolder?: string;
  dryRun?: boolean;
}

// ---- results -----------------------------------------------------------------------------

export interface AssembledContext {
  markdown?: string;
  tokens: TokenUsage;
  items: ContextItem[];
  file: string;
  module?: string | null;
  branch: string | null;
  activity: string;
  generation: number;
  /** The announced (and injected) context's id; null when assembled on demand. */
  contextId: number | null;
  elapsedMs: number;
  uri: string;
  folder: string;
}

/** A memory as a list entry: its labels, not its full text. */
export interface MemoryBrief {
  id: number;
  kind: Kind;
  label: string;
  compressed: string;
  anchors: string[];
  archived: boolean;
  supersededBy: number | null;
  createdAt: number;
}

export interface RememberResult {
  id: number;
  created: boolean;
  memory: MemoryBrief;
}

/** Where a search result comes from: enough to open it and to cite it. */
export interface HitSource {
  source: string;
  kind: 'commit' | 'decision record' | 'rule file' | 'conversation' | 'memory';
  path?: string;
  line?: number;
  session?: string;
  message?: number;
  commit?: string;
}

/** One result per source: a conversation, a rule file, a decision record, a commit, a memory. */
export interface SearchHit {
  id: number | null;
  unit: string;
  kind: Kind | 'conversation' | 'commit' | 'decision record' | 'rule file' | 'memory';
  text: string;
  label: string;
  snippet: string;
  compressed?: string | null;
  score: number;
  source: HitSource;
  provenance: string;
  archived: boolean;
  [key: string]: unknown;
}

export interface SearchResult {
  query: string;
  count: number;
  results: SearchHit[];
}

export interface RecalledMemory {
  id: number;
  kind: Kind;
  level: Level;
  text: string;
  next: string;
  anchors: string[];
  artifacts: { type: string; ref: string; title: string | null }[];
  source: string;
  createdAt: number;
  validFrom: number | null;
  validTo: number | null;
  archived: boolean;
  supersedes: number | null;
  supersededBy: number | null;
  usage: { retrieved: number; cited: number; ignored: number };
}

export interface RelatedMemory extends MemoryBrief {
  depth: number;
  via: string;
  from: number;
  strength: number;
}

export interface RecalledRelated {
  id: number;
  level: 'related';
  memory: MemoryBrief;
  related: RelatedMemory[];
}

export interface ExploreNode {
  id: number;
  kind: Kind;
  text: string;
  children: ExploreNode[];
  via?: string;
  strength?: number;
  depth?: number;
}

export interface ExploreResult {
  roots: ExploreNode[];
  nodes: number;
  truncated: boolean;
  depth: number;
  level: Level;
}

export interface ContradictionSide extends MemoryBrief {
  text: string;
}

export interface Contradiction {
  id: number;
  a: ContradictionSide | null;
  b: ContradictionSide | null;
  /** `pending`: a candidate pair from the `pending` list (its id is the candidate's). */
  status: ContradictionStatus | 'pending';
  resolution: Resolution | null;
  note: string | null;
  reason: string | null;
  confidence: number | null;
  detectedAt: number;
  resolvedAt: number | null;
  mergedId?: number | null;
}

/** One run of the chain of judges over the waiting pairs (`by`: null when none could judge). */
export interface JudgeRunResult {
  by: 'endpoint' | 'editor-models' | 'mcp-sampling' | null;
  opened: number[];
  conflicts: number;
  compatible: number;
  unanswered: number;
  left: number;
}

export interface SettledCandidate {
  candidate: number;
  conflict: boolean;
  contradiction: number | null;
}

export interface ContradictionsResult {
  status: string;
  count: number;
  contradictions: Contradiction[];
  /** In the review list: memories whose cited code changed or is gone, gone ones first. */
  stale?: StaleMemory[];
}

/** A memory whose cited code changed (\`changed\`) or is gone (\`gone\`). */
export interface StaleMemory {
  id: number;
  kind: string;
  label: string | null;
  compressed: string | null;
  state: 'changed' | 'gone';
  notes: string[];
}

/** Store statistics; the store adds counts this list does not name. */
export interface StatsResult {
  memories: number;
  active: number;
  archived: number;
  superseded: number;
  byKind: Record<string, number>;
  bySource: Record<string, number>;
  edges: number;
  contradictionsOpen: number;
  contradictionsSuspected: number;
  embedded: number;
  pendingEmbeddings: number;
  generation: number;
  dbBytes: number;
  modelId: string;
  folder: string;
  root: string;
  branch: string | null;
  dbPath: string;
  injectionTargets: string[];
  [key: string]: unknown;
}

export interface ReindexResult {
  embedded: number;
  keywordRows: number;
  vectors: number;
}

export interface ClaudeImportResult {
  file: string;
  changed: boolean;
  warning?: string;
}

export interface ReviewItem extends MemoryBrief {
  text: string;
  review: ReviewStatus;
  source: string;
  confidence: number;
  /** Its file, relative to the shared folder, once shared. */
  sharedPath: string | null;
}

export interface ReviewListResult {
  status: ReviewStatus;
  count: number;
  items: ReviewItem[];
}

export interface ReviewedResult {
  review: ReviewStatus;
  ids: number[];
  /** The ids whose status changed (the others already had it). */
  changed: number[];
}

export interface ShareResult {
  /** The shared folder (absolute). */
  folder: string;
  /** Files written, relative to the folder. */
  written: string[];
  /** Files of rejected memories removed. */
  removed: string[];
  unchanged: number;
  /** Files of rejected memories left in place: someone changed them since. */
  kept: string[];
  files: number;
  bytes: number;
  /** What reading the folder first brought in. */
  read: { read: number; added: number; updated: number; unchanged: number; superseded: number; archived: number };
  skipped: { total: number; byReason: unknown[]; examples: { source: string; where: string; reason: string }[] };
  seconds: number;
  dryRun: boolean;
  /** A .gitignore hides the folder: a commit would leave the files out. */
  ignoredByGit: boolean;
}

/** Ingest and consolidate answer a JSON summary whose fields are the implementation's. */
export type JobSummary = Record<string, unknown>;

/** What one ingestion source did (`living-memory ingest --json`). */
export interface IngestSourceSummary {
  read?: number;
  added?: number;
  existing?: number;
  unchanged?: number;
  dropped?: number;
  superseded?: number;
  archived?: number;
  /** Old-format memories brought up to date. */
  rewritten?: number;
  /** Noise left out, by reason (merge, bot, trivial). */
  ignored?: Record<string, number>;
  byKind?: Record<string, number>;
  sessions?: number;
  messages?: number;
  seconds?: number;
  [key: string]: unknown;
}

/** The summary `livingMemory.ingest` answers; every field is optional to the reader. */
export interface IngestSummary {
  dryRun?: boolean;
  since?: string | null;
  sources?: Record<string, IngestSourceSummary>;
  added?: number;
  existing?: number;
  dropped?: number;
  skipped?: { total?: number; byReason?: unknown[]; examples?: unknown[] };
  seconds?: number;
  [key: string]: unknown;
}
