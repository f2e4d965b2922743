import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Contradiction, ExploreResult } from '../../src/protocol/commands';
import {
  contradictionCounts,
  contradictionLabel,
  firstLine,
  flattenExplore,
  formatTokens,
  renderContradiction,
  renderIngest,
  renderObject,
  statusText,
  statusTooltip,
} from '../../src/view/format';
import { sampleUpdate } from './fixtures';


describe('token counts', () => {
  test('are short', () => {
    const cases: [number, string][] = [
      [0, '0'],
      [950, '950'],
      [1000, '1k'],
      [7800, '7.8k'],
      [7849, '7.8k'],
      [8000, '8k'],
      [9960, '10k'],
      [12_345, '12k'],
      [999_000, '999k'],
      [1_000_000, '1M'],
      [1_250_000, '1.3M'],
    ];
    for (const [n, text] of cases) {
      assert.equal(formatTokens(n), text, `${n}`);
    }
  });
});

describe('status bar', () => {
  test('shows tokens used of the budget', () => {
    assert.equal(statusText(sampleUpdate()), '$(database) 7.8k/8k');
  });

  test('the tooltip breaks the budget down by tier', () => {
    const tooltip = statusTooltip(sampleUpdate());
    assert.match(tooltip, /\| Critical \| 2\.9k \| 3k \| 4 \|/);
    assert.match(tooltip, /\| Relevant \| 2\.5k \| 2\.5k \| 6 \|/);
    assert.match(tooltip, /\| Background \| 1\.4k \| 1\.5k \| 3 \|/);
    assert.match(tooltip, /\| Index \| 1k \| 1k \| 20 \|/);
    assert.match(tooltip, /src\/auth\.py/);
    assert.match(tooltip, /living-memory\.mdc/);
    assert.match(tooltip, /Click to open the context/);
  });

  test('a context well under its budget says the budget is a ceiling', () => {
    const full = statusTooltip(sampleUpdate());
    assert.doesNotMatch(full, /ceiling/);
    const base = sampleUpdate();
    const short = statusTooltip(sampleUpdate({ tokens: { ...base.tokens, total: 900 } }));
    assert.match(short, /The budget is a ceiling: nothing else in memory is tied to this file/);
  });

  test('a detached HEAD and refused files are said', () => {
    const tooltip = statusTooltip(sampleUpdate({ branch: null, refused: ['/w/AGENTS.md'] }));
    assert.match(tooltip, /detached/);
    assert.match(tooltip, /Not written \(not ours\): `\/w\/AGENTS\.md`/);
  });
});

describe('markdown renderings', () => {
  test('any JSON object becomes tables', () => {
    const md = renderObject('Ingest result', {
      stored: 12,
      skipped: 3,
      sources: ['git', 'adr'],
      bySource: { git: 10, adr: 2 },
      samples: [{ id: 1 }],
    });
    assert.match(md, /^# Ingest result/);
    assert.match(md, /\| stored \| 12 \|/);
    assert.match(md, /\| sources \| git, adr \|/);
    assert.match(md, /## bySource\n\n\| \| \|\n\| --- \| --- \|\n\| git \| 10 \|/);
    assert.match(md, /## samples\n\n```json/);
  });

  test('an ingest summary is a row per source, with totals and skip reasons', () => {
    const md = renderIngest('Ingest result', {
      dryRun: false,
      sources: {
        git: {
          read: 72,
          added: 70,
          existing: 2,
          unchanged: 0,
          dropped: 0,
          superseded: 1,
          archived: 0,
          byKind: { episode: 70 },
          ignored: { merge: 3, trivial: 2 },
        },
        rules: { read: 3, added: 3, existing: 0, unchanged: 0, dropped: 0, superseded: 0, archived: 0, byKind: {} },
      },
      added: 73,
      existing: 2,
      dropped: 0,
      skipped: { total: 2, byReason: [['binary', 1], { reason: 'too large', count: 1 }], examples: [] },
      seconds: 0.19,
    });
    assert.match(md, /\| git \| 72 \| 70 \| 2 \| 0 \| 0 \| 1 \| 0 \| episode 70 \|/);
    assert.match(md, /\| rules \| 3 \| 3 \| 0 \| 0 \| 0 \| 0 \| 0 \| — \|/);
    assert.match(md, /Added \*\*73\*\*, already known 2, dropped as low-confidence 0 in 0\.2 s\./);
    assert.match(md, /## Skipped: 2\n\n- binary: 1\n- too large: 1/);
    assert.match(md, /Left out as noise: git 3 merge, git 2 trivial\./);
    assert.doesNotMatch(md, /Dry run/);
  });

  test('a summary of another shape is shown as it is', () => {
    assert.match(renderIngest('Ingest result', { odd: 1 }), /\| odd \| 1 \|/);
  });

  test('a non-object result is shown as JSON', () => {
    assert.match(renderObject('Odd', [1, 2]), /```json\n\[\n {2}1,/);
  });

  test('table cells escape pipes and newlines', () => {
    assert.match(renderObject('T', { note: 'a|b\nc' }), /\| note \| a\\\|b c \|/);
  });

  test('explore trees flatten depth first', () => {
    const tree: ExploreResult = {
      roots: [
        {
          id: 1,
          kind: 'fact',
          text: 'root',
          children: [
            { id: 2, kind: 'fact', text: 'child', children: [{ id: 3, kind: 'fact', text: 'grandchild', children: [] }] },
            { id: 4, kind: 'fact', text: 'second child', children: [] },
          ],
        },
      ],
      nodes: 4,
      truncated: false,
      depth: 2,
      level: 'index',
    };
    assert.deepEqual(
      flattenExplore(tree).map((f) => [f.node.id, f.depth]),
      [
        [1, 0],
        [2, 1],
        [3, 2],
        [4, 1],
      ],
    );
  });

  test('contradictions are labelled by both sides', () => {
    const side = (id: number, label: string) => ({
      id,
      kind: 'decision' as const,
      label,
      compressed: '',
      anchors: [],
      archived: false,
      supersededBy: null,
      createdAt: 0,
      text: `${label} (full)`,
    });
    const c: Contradiction = {
      id: 7,
      a: side(1, 'logs go to stdout'),
      b: side(2, 'logs go to a file'),
      status: 'open',
      resolution: null,
      note: null,
      reason: null,
      confidence: null,
      detectedAt: 0,
      resolvedAt: null,
    };
    assert.equal(contradictionLabel(c), '#7: logs go to stdout ⟷ logs go to a file');
    assert.doesNotMatch(renderContradiction(c), /Suspected/);
    const suspected: Contradiction = { ...c, id: 8, status: 'suspected' };
    assert.equal(contradictionLabel(suspected), '#8 (suspected): logs go to stdout ⟷ logs go to a file');
    assert.match(renderContradiction(suspected), /^# Contradiction #8 \(suspected\)\n\n\*Suspected: .*never shown in a context/);
    assert.equal(contradictionCounts([c]), '1 open');
    assert.equal(contradictionCounts([c, suspected, { ...suspected, id: 9 }]), '1 open, 2 suspected');
    assert.equal(contradictionCounts([]), '0 open');
  });

  test('first lines are cut with an ellipsis', () => {
    assert.equal(firstLine('  one\ntwo'), 'one');
    assert.equal(firstLine('x'.repeat(10), 5), 'xxxx…');
  });
});
