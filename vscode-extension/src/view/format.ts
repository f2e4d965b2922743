/**
 * Text the user sees, from the server's payloads: token counts, the status bar, the tier
 * breakdown, memories, statistics and job summaries as Markdown. Pure (no `vscode`).
 */
import type {
  Contradiction,
  ContradictionSide,
  ExploreNode,
  ExploreResult,
  IngestSummary,
  Kind,
  RecalledMemory,
  RecalledRelated,
} from '../protocol/commands';
import { TIERS } from '../protocol/notifications';
import type { ContextUpdatedParams, Tier } from '../protocol/notifications';

/** 950 → "950", 7800 → "7.8k", 8000 → "8k", 12_345 → "12k", 1_250_000 → "1.3M". */
export function formatTokens(n: number): string {
  const trim = (s: string) => s.replace(/\.0$/, '');
  if (!Number.isFinite(n)) {
    return '?';
  }
  const abs = Math.abs(n);
  if (abs < 1000) {
    return String(Math.round(n));
  }
  if (abs < 9950) {
    return `${trim((n / 1000).toFixed(1))}k`;
  }
  if (abs < 999_500) {
    return `${Math.round(n / 1000)}k`;
  }
  return `${trim((n / 1_000_000).toFixed(1))}M`;
}

export const TIER_TITLES: Record<Tier, string> = {
  critical: 'Critical',
  relevant: 'Relevant',
  background: 'Background',
  index: 'Index',
};

/** The status bar text: tokens used of the budget. */
export function statusText(update: ContextUpdatedParams): string {
  return `$(database) ${formatTokens(update.tokens.total)}/${formatTokens(update.tokens.budget)}`;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function basename(p: string): string {
  const parts = p.split(/[\\/]/);
  return parts[parts.length - 1] ?? p;
}

/** Below this share of the budget the tooltip says the context stopped at what is relevant. */
const UNDER_BUDGET = 0.9;

/** The status bar tooltip: the file, and per tier what was used of its share. */
export function statusTooltip(update: ContextUpdatedParams): string {
  const lines = [
    `**Living Memory** — \`${cell(update.path)}\``,
    '',
    `Branch \`${cell(update.branch ?? 'detached')}\` · activity *${cell(update.activity)}* · ` +
      `${formatTokens(update.tokens.total)} of ${formatTokens(update.tokens.budget)} tokens`,
    '',
    '| tier | used | budget | items |',
    '| --- | ---: | ---: | ---: |',
  ];
  for (const tier of TIERS) {
    const t = update.tokens.tiers[tier];
    lines.push(`| ${TIER_TITLES[tier]} | ${formatTokens(t.used)} | ${formatTokens(t.budget)} | ${t.items} |`);
  }
  if (update.tokens.total < update.tokens.budget * UNDER_BUDGET) {
    lines.push(
      '',
      'The budget is a ceiling: nothing else in memory is tied to this file, so the rest is left unused.',
    );
  }
  if (update.injected.length > 0) {
    lines.push('', `Written to ${update.injected.map((p) => `\`${cell(basename(p))}\``).join(', ')}`);
  }
  if (update.refused.length > 0) {
    lines.push('', `Not written (not ours): ${update.refused.map((p) => `\`${cell(p)}\``).join(', ')}`);
  }
  lines.push('', 'Click to open the context.');
  return lines.join('\n');
}

export const KIND_ICONS: Record<Kind, string> = {
  fact: 'info',
  decision: 'law',
  episode: 'history',
  solution: 'tools',
  pattern: 'symbol-class',
  workflow: 'list-ordered',
  convention: 'checklist',
  preference: 'heart',
  summary: 'note',
};

export function kindIcon(kind: string): string {
  return (KIND_ICONS as Record<string, string | undefined>)[kind] ?? 'circle-outline';
}

function date(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) {
    return '—';
  }
  return new Date(seconds * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

/** A memory in full, with what it is linked to. */
export function renderMemory(m: RecalledMemory, related?: RecalledRelated): string {
  const lines = [`# ${m.kind} #${m.id}`, '', m.text, '', '---', '', '| | |', '| --- | --- |'];
  lines.push(`| kind | ${m.kind} |`);
  if (m.anchors.length > 0) {
    lines.push(`| anchors | ${m.anchors.map((a) => `\`${cell(a)}\``).join(' ')} |`);
  }
  lines.push(`| source | ${cell(m.source)} |`);
  lines.push(`| created | ${date(m.createdAt)} |`);
  if (m.validTo !== null) {
    lines.push(`| valid until | ${date(m.validTo)} |`);
  }
  if (m.supersedes !== null) {
    lines.push(`| supersedes | #${m.supersedes} |`);
  }
  if (m.supersededBy !== null) {
    lines.push(`| superseded by | #${m.supersededBy} |`);
  }
  if (m.archived) {
    lines.push('| archived | yes |');
  }
  lines.push(
    `| used | retrieved ${m.usage.retrieved}, cited ${m.usage.cited}, ignored ${m.usage.ignored} |`,
  );
  for (const a of m.artifacts) {
    lines.push(`| ${cell(a.type)} | ${cell(a.title ?? a.ref)} (\`${cell(a.ref)}\`) |`);
  }
  if (related && related.related.length > 0) {
    lines.push('', '## Related', '');
    for (const r of related.related) {
      const indent = '  '.repeat(Math.max(0, r.depth - 1));
      lines.push(`${indent}- **#${r.id}** ${r.kind} — ${r.label} *(${r.via.toLowerCase()})*`);
    }
  }
  return lines.join('\n') + '\n';
}

function scalar(value: unknown): string {
  if (value === null || value === undefined) {
    return '—';
  }
  if (typeof value === 'number') {
    return Number.isInteger(value) ? value.toLocaleString('en-US') : String(value);
  }
  if (typeof value === 'string' || typeof value === 'boolean') {
    return String(value);
  }
  return JSON.stringify(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Any JSON object as Markdown: its scalar fields in a table, each nested object as a table
 * of its own, lists of scalars inline, anything deeper as JSON. Used for statistics and for
 * whatever ingest and consolidate answer.
 */
export function renderObject(title: string, value: unknown, intro?: string): string {
  const lines = [`# ${title}`, ''];
  if (intro) {
    lines.push(intro, '');
  }
  if (!isPlainObject(value)) {
    lines.push('```json', JSON.stringify(value, null, 2), '```');
    return lines.join('\n') + '\n';
  }
  const scalars: [string, unknown][] = [];
  const nested: [string, unknown][] = [];
  for (const [k, v] of Object.entries(value)) {
    const simpleList = Array.isArray(v) && v.every((x) => !isPlainObject(x) && !Array.isArray(x));
    (isPlainObject(v) || (Array.isArray(v) && !simpleList) ? nested : scalars).push([k, v]);
  }
  if (scalars.length > 0) {
    lines.push('| | |', '| --- | --- |');
    for (const [k, v] of scalars) {
      const shown = Array.isArray(v) ? v.map(scalar).join(', ') || '—' : scalar(v);
      lines.push(`| ${cell(k)} | ${cell(shown)} |`);
    }
  }
  for (const [k, v] of nested) {
    lines.push('', `## ${k}`, '');
    const flat =
      isPlainObject(v) && Object.values(v).every((x) => !isPlainObject(x) && !Array.isArray(x));
    if (flat) {
      lines.push('| | |', '| --- | --- |');
      for (const [k2, v2] of Object.entries(v)) {
        lines.push(`| ${cell(k2)} | ${cell(scalar(v2))} |`);
      }
    } else {
      lines.push('```json', JSON.stringify(v, null, 2), '```');
    }
  }
  return lines.join('\n') + '\n';
}

function side(label: string, s: ContradictionSide | null): string[] {
  if (s === null) {
    return [`## ${label}`, '', '*(missing)*'];
  }
  return [`## ${label}: ${s.kind} #${s.id}`, '', s.text];
}

export function renderContradiction(c: Contradiction): string {
  const lines = [`# Contradiction #${c.id} (${c.status})`, ''];
  if (c.status === 'suspected') {
    lines.push(
      '*Suspected: a weak finding of the local rules, never shown in a context until you confirm it.*',
      '',
    );
  }
  if (c.reason) {
    lines.push(`*${c.reason}*${c.confidence === null ? '' : ` — confidence ${c.confidence}`}`, '');
  }
  lines.push(...side('A', c.a), '', ...side('B', c.b));
  if (c.resolution) {
    lines.push('', `Resolution: **${c.resolution}**${c.note ? ` — ${c.note}` : ''}`);
  }
  return lines.join('\n') + '\n';
}

/** One line per memory of a contradiction, for pickers; a suspected one says so. */
export function contradictionLabel(c: Contradiction): string {
  const short = (s: ContradictionSide | null) => (s ? s.label || s.text : '(missing)');
  const mark = c.status === 'suspected' ? ' (suspected)' : '';
  return `#${c.id}${mark}: ${short(c.a)} ⟷ ${short(c.b)}`;
}

/** How many of a list of contradictions are open and how many suspected: "2 open, 5 suspected". */
export function contradictionCounts(list: readonly Contradiction[]): string {
  const open = list.filter((c) => c.status === 'open').length;
  const suspected = list.filter((c) => c.status === 'suspected').length;
  return suspected > 0 ? `${open} open, ${suspected} suspected` : `${open} open`;
}

export interface FlatNode {
  node: ExploreNode;
  depth: number;
}

/** An explore tree, depth first, for a list. */
export function flattenExplore(result: ExploreResult): FlatNode[] {
  const out: FlatNode[] = [];
  const walk = (node: ExploreNode, depth: number) => {
    out.push({ node, depth });
    for (const child of node.children) {
      walk(child, depth + 1);
    }
  };
  for (const root of result.roots) {
    walk(root, 0);
  }
  return out;
}

/** The first line of a text, at most `max` characters. */
export function firstLine(text: string, max = 120): string {
  const line = text.trim().split(/\r?\n/)[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const INGEST_COLUMNS = ['read', 'added', 'existing', 'unchanged', 'dropped', 'superseded', 'archived'] as const;

function count(value: unknown): string {
  return typeof value === 'number' ? value.toLocaleString('en-US') : '—';
}

/** One skip reason: `{reason, count}`, `[reason, count]` or anything else as JSON. */
function skipLine(entry: unknown): string {
  if (Array.isArray(entry) && entry.length === 2) {
    return `${scalar(entry[0])}: ${scalar(entry[1])}`;
  }
  if (isPlainObject(entry) && 'reason' in entry) {
    const n = entry.count ?? entry.n;
    return n === undefined ? scalar(entry.reason) : `${scalar(entry.reason)}: ${scalar(n)}`;
  }
  return scalar(entry);
}

/**
 * An ingestion summary: a row per source, the totals, why things were skipped. A summary of
 * another shape is shown as it is (renderObject).
 */
export function renderIngest(title: string, summary: IngestSummary): string {
  const sources = summary.sources;
  if (!isPlainObject(sources) || !Object.values(sources).every(isPlainObject)) {
    return renderObject(title, summary);
  }
  const lines = [`# ${title}`, ''];
  if (summary.dryRun === true) {
    lines.push('*Dry run: nothing was stored.*', '');
  }
  lines.push(
    `| source | ${INGEST_COLUMNS.join(' | ')} | kinds |`,
    `| --- | ${INGEST_COLUMNS.map(() => '---:').join(' | ')} | --- |`,
  );
  for (const [name, s] of Object.entries(sources)) {
    const kinds = isPlainObject(s.byKind)
      ? Object.entries(s.byKind)
          .map(([k, n]) => `${k} ${count(n)}`)
          .join(', ')
      : '';
    lines.push(`| ${cell(name)} | ${INGEST_COLUMNS.map((c) => count(s[c])).join(' | ')} | ${cell(kinds) || '—'} |`);
  }
  lines.push(
    '',
    `Added **${count(summary.added)}**, already known ${count(summary.existing)}, dropped as low-confidence ${count(summary.dropped)}` +
      (typeof summary.seconds === 'number' ? ` in ${summary.seconds.toFixed(1)} s.` : '.'),
  );
  const ignored = Object.entries(sources).flatMap(([name, s]) =>
    isPlainObject(s.ignored) ? Object.entries(s.ignored).map(([why, n]) => `${name} ${count(n)} ${why}`) : [],
  );
  if (ignored.length > 0) {
    lines.push('', `Left out as noise: ${cell(ignored.join(', '))}.`);
  }
  const skipped = summary.skipped;
  if (isPlainObject(skipped) && typeof skipped.total === 'number' && skipped.total > 0) {
    lines.push('', `## Skipped: ${count(skipped.total)}`, '');
    for (const entry of Array.isArray(skipped.byReason) ? skipped.byReason : []) {
      lines.push(`- ${cell(skipLine(entry))}`);
    }
    const examples = Array.isArray(skipped.examples) ? skipped.examples : [];
    if (examples.length > 0) {
      lines.push('', '```json', JSON.stringify(examples.slice(0, 10), null, 2), '```');
    }
  }
  return lines.join('\n') + '\n';
}
