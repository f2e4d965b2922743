/**
 * Team memory as the user sees it: a memory awaiting review, the outcome of a review action
 * and of Share. Pure (no `vscode`).
 */
import type { ReviewedResult, ReviewItem, ShareResult } from '../protocol/commands';
import { firstLine } from './format';

/** The tree label of a memory awaiting review: its first line. */
export function reviewLabel(item: ReviewItem): string {
  return firstLine(item.text) || `#${item.id}`;
}

/** "convention · chat:cursor" (and where its file is, once shared). */
export function reviewDescription(item: ReviewItem): string {
  return [item.kind, item.source, item.sharedPath].filter((p) => p).join(' · ');
}

export function reviewTooltip(item: ReviewItem): string {
  return `${item.kind} #${item.id} · ${item.review} · from ${item.source} (confidence ${item.confidence})\n\n${item.text}`;
}

/** What an approve or reject did, in a sentence. */
export function reviewedMessage(result: ReviewedResult): string {
  const ids = (list: number[]) => list.map((i) => `#${i}`).join(', ');
  const same = result.ids.filter((i) => !result.changed.includes(i));
  const parts: string[] = [];
  if (result.changed.length > 0) {
    parts.push(
      result.review === 'approved'
        ? `Approved ${ids(result.changed)}: Share writes it to the shared folder.`
        : `Rejected ${ids(result.changed)}: archived, and its shared file goes on the next Share.`,
    );
  }
  if (same.length > 0) {
    parts.push(`${ids(same)} ${same.length === 1 ? 'was' : 'were'} already ${result.review}.`);
  }
  return parts.join(' ');
}

/** What Share did: files written and removed, and files it could not read. */
export function shareMessage(result: ShareResult): string {
  const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const parts = [`${plural(result.written.length, 'file')} written`];
  if (result.removed.length > 0) {
    parts.push(`${result.removed.length} removed`);
  }
  parts.push(`${result.unchanged} unchanged`);
  let message = `Shared memory: ${parts.join(', ')} (${plural(result.files, 'file')} in ${result.folder}).`;
  const read = result.read;
  if (read.added + read.superseded + read.archived > 0) {
    message += ` Read first: ${read.added} new, ${read.superseded} edited, ${read.archived} deleted.`;
  }
  if (result.skipped.total > 0) {
    const first = result.skipped.examples[0];
    message += ` Skipped ${plural(result.skipped.total, 'file')}${first ? ` (${first.where}: ${first.reason})` : ''}.`;
  }
  if (result.ignoredByGit) {
    message += ' Warning: git ignores this folder (a .gitignore), so a commit would leave it out.';
  } else if (result.written.length + result.removed.length > 0) {
    message += ' Commit the folder to share it.';
  }
  return message;
}
