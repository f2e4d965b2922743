/**
 * Candidate contradictions — pairs of memories on one subject that wait for a judge — as the
 * view and the messages show them. They are not contradictions yet: never in a context, shown
 * apart from the open and suspected ones. Pure (no `vscode`).
 */
import type { Contradiction, JudgeRunResult, SettledCandidate } from '../protocol/commands';

const JUDGES: Record<NonNullable<JudgeRunResult['by']>, string> = {
  endpoint: 'the configured model',
  'editor-models': "the editor's language model",
  'mcp-sampling': "an MCP client's model",
};

function side(c: Contradiction, key: 'a' | 'b'): string {
  const s = c[key];
  return s ? s.label || s.text : '(missing)';
}

/** "#4: older ⟷ newer". */
export function pendingLabel(c: Contradiction): string {
  return `#${c.id}: ${side(c, 'a')} ⟷ ${side(c, 'b')}`;
}

/** Both texts, older first, and why the pair was proposed. */
export function pendingTooltip(c: Contradiction): string {
  const why = c.reason ? `\n\n(proposed: ${c.reason})` : '';
  return (
    'A candidate (waiting for a judge, never in a context)\n\n' +
    `Older #${c.a?.id ?? '-'}: ${c.a?.text ?? ''}\n\n⟷\n\nNewer #${c.b?.id ?? '-'}: ${c.b?.text ?? ''}${why}`
  );
}

/** "3 waiting for a judge". */
export function pendingCount(list: readonly Contradiction[]): string {
  return `${list.length} waiting for a judge`;
}

/** What one judging run did, in a sentence. */
export function judgedMessage(run: JudgeRunResult): string {
  if (run.by === null) {
    return run.left > 0
      ? `Living Memory: no judge is available for the ${run.left} candidate contradiction${run.left === 1 ? '' : 's'}: ` +
          'configure livingMemory.llm or allow the editor’s language models (livingMemory.judge.useEditorModels).'
      : 'Living Memory: no candidate contradiction waits for a judge.';
  }
  const judged = run.conflicts + run.compatible;
  const parts = [`${judged} judged by ${JUDGES[run.by]}`];
  if (judged > 0) {
    parts.push(`${run.conflicts} contradiction${run.conflicts === 1 ? '' : 's'}, ${run.compatible} compatible`);
  }
  if (run.unanswered > 0) {
    parts.push(`${run.unanswered} not answered`);
  }
  parts.push(`${run.left} still waiting`);
  return `Living Memory: ${parts.join(' · ')}.`;
}

/** What a person's verdict did. */
export function settledMessage(result: SettledCandidate): string {
  return result.conflict
    ? `Living Memory: candidate #${result.candidate} is now contradiction #${result.contradiction ?? '?'} (open).`
    : `Living Memory: candidate #${result.candidate} dismissed; the same two texts are not proposed again.`;
}
