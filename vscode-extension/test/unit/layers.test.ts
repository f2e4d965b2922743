import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';

const SRC = path.resolve(__dirname, '..', '..', '..', 'src');

/** Modules that must load without an editor (the wire format and everything unit-tested). */
const PURE = ['protocol', 'python', 'view', 'util', 'ids.ts', 'forward/branchTracker.ts', 'client/crashWindow.ts'];

function files(entry: string): string[] {
  const full = path.join(SRC, entry);
  if (fs.statSync(full).isFile()) {
    return [full];
  }
  return fs
    .readdirSync(full)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(full, f));
}

describe('layers', () => {
  test('the protocol modules and the pure helpers never import vscode', () => {
    const checked = PURE.flatMap(files);
    assert.ok(checked.length >= 15);
    for (const file of checked) {
      const text = fs.readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /from ['"]vscode['"]|require\(['"]vscode['"]\)|from ['"]vscode-languageclient/, file);
    }
  });

  test('the wire format lives in src/protocol only: no other module spells a livingMemory/ method', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const name of fs.readdirSync(dir)) {
        const full = path.join(dir, name);
        if (fs.statSync(full).isDirectory()) {
          walk(full);
        } else if (!full.startsWith(path.join(SRC, 'protocol')) && /'livingMemory\/\w+'/.test(fs.readFileSync(full, 'utf8'))) {
          offenders.push(full);
        }
      }
    };
    walk(SRC);
    assert.deepEqual(offenders, []);
  });
});
