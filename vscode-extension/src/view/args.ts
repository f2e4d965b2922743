/**
 * Command arguments as they arrive: `{id, folder}` from code and tree item clicks, the tree
 * node itself from a view's context menu, nothing from the palette. Pure (no `vscode`).
 */

export interface Ref {
  id: number;
  folder?: string | undefined;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

function folderOf(value: Record<string, unknown>): string | undefined {
  return typeof value.folder === 'string' ? value.folder : undefined;
}

/** The memory or contradiction a command was invoked on, if any. */
export function refFrom(arg: unknown): Ref | undefined {
  const value = record(arg);
  if (!value) {
    return undefined;
  }
  if (typeof value.id === 'number' && Number.isInteger(value.id) && value.id > 0) {
    return { id: value.id, folder: folderOf(value) };
  }
  const item = record(value.item);
  if (value.type === 'item' && item && typeof item.memoryId === 'number') {
    return { id: item.memoryId, folder: folderOf(value) };
  }
  if (value.type === 'review' && item && typeof item.id === 'number') {
    return { id: item.id, folder: folderOf(value) };
  }
  const contradiction = record(value.contradiction);
  const pairNode = value.type === 'contradiction' || value.type === 'pendingPair';
  if (pairNode && contradiction && typeof contradiction.id === 'number') {
    return { id: contradiction.id, folder: folderOf(value) };
  }
  return undefined;
}

/** "#12", "12" or " 12 " → 12; anything else → undefined. */
export function parseMemoryId(text: string): number | undefined {
  const match = /^\s*#?(\d+)\s*$/.exec(text);
  if (!match) {
    return undefined;
  }
  const id = Number(match[1]);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/** The text stored by "Remember Selection As…": the note, then the selection (fenced for code). */
export function rememberText(selection: string, note: string | undefined, languageId: string): string {
  const body = selection.trim();
  const prose = ['markdown', 'plaintext', 'restructuredtext', 'latex', ''].includes(languageId);
  const shown = prose || body === '' ? body : `\`\`\`${languageId}\n${body}\n\`\`\``;
  const trimmedNote = note?.trim();
  return trimmedNote ? (shown ? `${trimmedNote}\n\n${shown}` : trimmedNote) : shown;
}
