/**
 * The extension's own identifiers: the palette commands it registers, its view and its
 * configuration section. extension.ts registers exactly these (a Record over CommandId makes
 * a missing handler a type error) and the manifest test checks package.json against them.
 * No `vscode` import here, so node's test runner can load it.
 */

export const EXTENSION_ID = 'living-memory.living-memory';
export const CATEGORY = 'Living Memory';
export const CONFIG_SECTION = 'livingMemory';
export const VIEW_ID = 'livingMemory.view';
export const OUTPUT_CHANNEL = 'Living Memory';
export const DOCUMENT_SCHEME = 'living-memory';

export const COMMANDS = {
  showContext: { id: 'livingMemory.showContext', title: 'Show Context for Current File' },
  copyContext: { id: 'livingMemory.copyContext', title: 'Copy Context' },
  rememberSelection: { id: 'livingMemory.rememberSelection', title: 'Remember Selection As…' },
  searchMemory: { id: 'livingMemory.searchMemory', title: 'Search Memory' },
  exploreRelated: { id: 'livingMemory.exploreRelated', title: 'Explore Related' },
  openMemory: { id: 'livingMemory.openMemory', title: 'Open Memory…' },
  resolveContradictions: {
    id: 'livingMemory.resolveContradictions',
    title: 'Resolve Contradictions',
  },
  ingestHistory: { id: 'livingMemory.ingestHistory', title: 'Ingest History' },
  consolidateMemory: { id: 'livingMemory.consolidateMemory', title: 'Consolidate Memory' },
  showStats: { id: 'livingMemory.showStats', title: 'Memory Stats' },
  enableClaudeCodeImport: {
    id: 'livingMemory.enableClaudeCodeImport',
    title: 'Enable Claude Code Import',
  },
  installServer: { id: 'livingMemory.installServer', title: 'Install Living Memory Server' },
  restartServer: { id: 'livingMemory.restartServer', title: 'Restart Server' },
  showLog: { id: 'livingMemory.showLog', title: 'Show Log' },
  refreshView: { id: 'livingMemory.refreshView', title: 'Refresh' },
  reviewMemories: { id: 'livingMemory.reviewMemories', title: 'Review Memories for the Team' },
  approveMemory: { id: 'livingMemory.approveMemory', title: 'Approve for the Team' },
  editMemory: { id: 'livingMemory.editMemory', title: 'Edit Memory' },
  rejectMemory: { id: 'livingMemory.rejectMemory', title: 'Reject Memory' },
  shareMemories: { id: 'livingMemory.shareMemories', title: 'Share Approved Memories' },
  judgeCandidates: { id: 'livingMemory.judgeCandidates', title: 'Judge Candidate Contradictions' },
  confirmCandidate: { id: 'livingMemory.confirmCandidate', title: 'It Is a Contradiction' },
  dismissCandidate: { id: 'livingMemory.dismissCandidate', title: 'Not a Contradiction' },
} as const;

export type CommandKey = keyof typeof COMMANDS;
export type CommandId = (typeof COMMANDS)[CommandKey]['id'];

export const COMMAND_KEYS = Object.keys(COMMANDS) as CommandKey[];

/** The events that activate the extension besides its commands and view. */
export const ACTIVATION_EVENTS = ['onStartupFinished'] as const;
