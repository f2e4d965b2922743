import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { forwardable, OWN_SOURCE, toLspDiagnostic, toLspSeverity } from '../../src/protocol/diagnostics';
import type { EditorDiagnostic } from '../../src/protocol/diagnostics';

const range = { start: { line: 4, character: 2 }, end: { line: 4, character: 9 } };

describe('severity conversion', () => {
  test('vscode Error..Hint (0..3) become LSP 1..4', () => {
    assert.deepEqual([0, 1, 2, 3].map(toLspSeverity), [1, 2, 3, 4]);
  });

  test('anything else is refused', () => {
    for (const bad of [-1, 4, 1.5, Number.NaN]) {
      assert.throws(() => toLspSeverity(bad), RangeError);
    }
  });
});

describe('editor diagnostics as LSP diagnostics', () => {
  test('range, severity, message, source and a plain code are kept', () => {
    const d: EditorDiagnostic = { range, message: 'bad', severity: 0, source: 'pyright', code: 'reportX' };
    assert.deepEqual(toLspDiagnostic(d), {
      range: { start: { line: 4, character: 2 }, end: { line: 4, character: 9 } },
      severity: 1,
      message: 'bad',
      source: 'pyright',
      code: 'reportX',
    });
  });

  test('a code with a link becomes code + codeDescription', () => {
    const d: EditorDiagnostic = {
      range,
      message: 'm',
      severity: 1,
      code: { value: 2304, target: { toString: () => 'https://example.invalid/2304' } },
    };
    const out = toLspDiagnostic(d);
    assert.equal(out.code, 2304);
    assert.deepEqual(out.codeDescription, { href: 'https://example.invalid/2304' });
    assert.equal(out.severity, 2);
    assert.equal('source' in out, false);
  });

  test('tags are kept when LSP knows them', () => {
    const out = toLspDiagnostic({ range, message: 'm', severity: 3, tags: [1, 2, 7] });
    assert.deepEqual(out.tags, [1, 2]);
    assert.equal(out.severity, 4);
  });

  test("the extension's own diagnostics are not forwarded", () => {
    const out = forwardable([
      { range, message: 'theirs', severity: 0, source: 'eslint' },
      { range, message: 'ours', severity: 0, source: OWN_SOURCE },
    ]);
    assert.deepEqual(out.map((d) => d.message), ['theirs']);
  });
});
