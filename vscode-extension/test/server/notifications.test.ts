/**
 * The notifications the extension forwards (active editor, branch, diagnostics) and the one it
 * listens to (contextUpdated), against the real server: names and shapes from
 * src/protocol/notifications.ts, diagnostics converted by src/protocol/diagnostics.ts.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  DidChangeTextDocumentNotification,
  DidOpenTextDocumentNotification,
} from 'vscode-languageserver-protocol';
import { forwardable } from '../../src/protocol/diagnostics';
import type { EditorDiagnostic } from '../../src/protocol/diagnostics';
import {
  activeEditorChanged,
  branchChanged,
  diagnosticsChanged,
  isContextUpdated,
  TIERS,
} from '../../src/protocol/notifications';
import { ContextStore } from '../../src/view/contextStore';
import { statusText } from '../../src/view/format';
import { eventually, fileUri, makeRepo, startServer, tempDir, waitFor } from './harness';
import type { TestServer } from './harness';

const BROKEN = "import os\n\n\ndef home():\n    return os.environ['HOME'].lowr()\n";
const FIXED = "import os\n\n\ndef home():\n    return os.environ['HOME'].lower()\n";
const MESSAGE = 'Cannot access attribute "lowr" for class "str"';

let server: TestServer;
let repo: string;

before(async () => {
  const base = tempDir('events');
  repo = makeRepo(path.join(base, 'repo'), {
    'src/a.py': 'A = 1\n',
    'src/b.py': 'B = 2\n',
    'src/home.py': BROKEN,
    'src/branchy.py': 'C = 3\n',
  });
  server = await startServer({
    folders: [repo],
    settings: { dataDirectory: path.join(base, 'data'), debounceMs: 20, changeDebounceMs: 20, gitPollSeconds: 0.1 },
  });
});

after(async () => {
  await server.stop();
});

const uriOf = (rel: string) => fileUri(path.join(repo, rel));

/** Opens a file in a tab as VS Code does: didOpen, then the active editor changes to it. */
async function open(rel: string, version = 1): Promise<string> {
  const uri = uriOf(rel);
  await server.connection.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri, languageId: 'python', version, text: fs.readFileSync(path.join(repo, rel), 'utf8') },
  });
  await server.connection.sendNotification(activeEditorChanged, { uri });
  return uri;
}

describe('contextUpdated', () => {
  test('opening a file announces its context, in the shape the status bar and view read', async () => {
    await server.api.remember({ text: 'a.py holds the constant A.', anchors: ['file:src/a.py'], folder: fileUri(repo) });
    const since = server.updates.length;
    const uri = await open('src/a.py');
    const update = await server.nextUpdate(since, (u) => u.uri === uri);
    assert.equal(isContextUpdated(update), true);
    assert.equal(update.folder, fileUri(repo));
    assert.equal(update.path, 'src/a.py');
    assert.equal(update.branch, 'main');
    assert.equal(update.tokens.budget, 8000);
    assert.deepEqual(Object.keys(update.tokens.tiers).sort(), [...TIERS].sort());
    for (const tier of TIERS) {
      const t = update.tokens.tiers[tier];
      assert.equal(typeof t.used, 'number');
      assert.equal(typeof t.budget, 'number');
      assert.equal(typeof t.items, 'number');
    }
    const item = update.items.find((i) => i.memoryId !== null);
    assert.ok(item);
    assert.ok(TIERS.includes(item.tier));
    assert.equal(typeof item.key, 'string');
    assert.equal(typeof item.tokens, 'number');
    // the view lists memories by the label the server sends, with no extra round trip
    assert.equal(typeof item.label, 'string');
    assert.ok(item.label && item.label.length > 0 && !item.label.includes('\n'));
    assert.equal(typeof update.generation, 'number');
    assert.equal(typeof update.elapsedMs, 'number');
    assert.match(statusText(update), /^\$\(database\) \d+(\.\d)?k?\/8k$/);
    // the default targets were written, as the tooltip lists them
    assert.ok(update.injected.some((p) => p.endsWith(path.join('.cursor', 'rules', 'living-memory.mdc'))));
    // the files are written just after the client is told (it does not wait for the disk)
    for (const p of update.injected) {
      const text = await eventually(
        () => Promise.resolve(fs.existsSync(p) && fs.readFileSync(p, 'utf8')),
        5_000,
        `${p} to be written`,
      );
      assert.match(text, /living-memory:generated/);
    }
    assert.deepEqual(update.refused, []);
  });
});

describe('livingMemory/activeEditorChanged', () => {
  test('switching tabs moves the context to that file', async () => {
    const a = uriOf('src/a.py');
    const b = await open('src/b.py');
    await server.nextUpdate(0, (u) => u.uri === b);
    const since = server.updates.length;
    await server.connection.sendNotification(activeEditorChanged, { uri: a });
    const update = await server.nextUpdate(since);
    assert.equal(update.uri, a);
    assert.equal((await server.api.assembleContext({ folder: fileUri(repo) })).file, 'src/a.py');
  });
});

describe('one context everywhere', () => {
  test('status bar, view, Copy Context and the injected files show the same context', async () => {
    const a = uriOf('src/a.py');
    const since = server.updates.length;
    await server.connection.sendNotification(activeEditorChanged, { uri: uriOf('src/b.py') });
    await server.connection.sendNotification(activeEditorChanged, { uri: a });
    await server.nextUpdate(since, (u) => u.uri === a);
    await new Promise((r) => setTimeout(r, 300)); // any later announcement arrives too
    const store = new ContextStore();
    for (const u of server.updates) {
      store.update(u); // what the extension does with every contextUpdated
    }
    const shown = store.current(a); // the status bar and the view
    assert.ok(shown && typeof shown.contextId === 'number');
    assert.equal(store.current(uriOf('src/never-opened.py')), undefined); // never another file's
    const copied = await server.api.assembleContext({ uri: a, contextId: shown.contextId });
    assert.equal(copied.contextId, shown.contextId);
    assert.deepEqual(copied.tokens, shown.tokens);
    assert.deepEqual(
      copied.items.map((i) => i.key),
      shown.items.map((i) => i.key),
    );
    const injected = shown.injected.find((p) => p.endsWith(path.join('.living-memory', 'context.md')));
    assert.ok(injected && copied.markdown);
    assert.ok(fs.readFileSync(injected, 'utf8').includes(copied.markdown.trim()));
    // an older context for the same file never replaces the one shown
    store.update({ ...shown, contextId: shown.contextId - 1, tokens: { ...shown.tokens, total: 1 } });
    assert.equal(store.current(a)?.contextId, shown.contextId);
  });
});

describe('livingMemory/branchChanged', () => {
  test('the branch the extension reports is the context’s, and .git/HEAD is no longer read', async () => {
    const uri = await open('src/branchy.py');
    await server.nextUpdate(0, (u) => u.uri === uri);
    const since = server.updates.length;
    await server.connection.sendNotification(branchChanged, {
      folder: fileUri(repo),
      branch: 'fix/login-crash',
      previous: 'main',
    });
    const update = await server.nextUpdate(since, (u) => u.branch === 'fix/login-crash');
    assert.equal(update.uri, uri);
    // the server trusts the client now: a different .git/HEAD is not read back
    fs.writeFileSync(path.join(repo, '.git', 'HEAD'), 'ref: refs/heads/elsewhere\n');
    await new Promise((r) => setTimeout(r, 600)); // six polling periods
    assert.equal((await server.api.stats({ folder: fileUri(repo) })).branch, 'fix/login-crash');
  });

  test('a detached HEAD is branch null', async () => {
    await server.connection.sendNotification(branchChanged, {
      folder: fileUri(repo),
      branch: null,
      previous: 'fix/login-crash',
    });
    await eventually(
      async () => (await server.api.stats({ folder: fileUri(repo) })).branch === null,
      10_000,
      'a detached HEAD',
    );
    await server.connection.sendNotification(branchChanged, { folder: fileUri(repo), branch: 'main', previous: null });
  });
});

describe('livingMemory/diagnosticsChanged', () => {
  /** A diagnostic as vscode.languages.getDiagnostics() gives it (severity 0 = Error). */
  const pyright: EditorDiagnostic = {
    range: { start: { line: 4, character: 0 }, end: { line: 4, character: 5 } },
    message: MESSAGE,
    severity: 0,
    source: 'pyright',
    code: 'reportAttributeAccessIssue',
  };

  test('errors make the activity debugging', async () => {
    const uri = await open('src/home.py');
    await server.nextUpdate(0, (u) => u.uri === uri);
    const since = server.updates.length;
    await server.connection.sendNotification(diagnosticsChanged, { uri, diagnostics: forwardable([pyright]) });
    const update = await server.nextUpdate(since, (u) => u.uri === uri && u.activity === 'debugging');
    assert.equal(update.path, 'src/home.py');
  });

  test('an error that goes away after an edit is stored as a solution', async () => {
    const uri = uriOf('src/home.py');
    await server.connection.sendNotification(DidChangeTextDocumentNotification.type, {
      textDocument: { uri, version: 2 },
      contentChanges: [{ text: FIXED }],
    });
    await server.connection.sendNotification(diagnosticsChanged, { uri, diagnostics: [] });
    const found = await eventually(
      async () => {
        const r = await server.api.search({ query: 'lowr attribute', kinds: ['solution'], mode: 'keyword', folder: fileUri(repo) });
        return r.results.length > 0 ? r : undefined;
      },
      20_000,
      'a captured fix',
    );
    const memory = found.results[0];
    assert.ok(memory && memory.id !== null);
    const full = await server.api.recall({ id: memory.id, level: 'full', folder: fileUri(repo) });
    assert.ok(full.anchors.includes('file:src/home.py'));
    assert.ok(full.anchors.some((a) => a.startsWith('error:')));
    assert.match(full.text, /\.lowr\(\)/);
    assert.match(full.text, /\.lower\(\)/);
  });

  test('our own diagnostics are never sent (they would feed the server its own output)', () => {
    const ours: EditorDiagnostic = { ...pyright, source: 'living-memory' };
    assert.deepEqual(forwardable([ours]), []);
  });
});

describe('robustness', () => {
  test('malformed notifications are ignored and the server keeps serving', async () => {
    await server.connection.sendNotification('livingMemory/branchChanged', { branch: 42 });
    await server.connection.sendNotification('livingMemory/activeEditorChanged', { nope: true });
    await server.connection.sendNotification('livingMemory/diagnosticsChanged', { uri: uriOf('src/a.py'), diagnostics: 'x' });
    const stats = await server.api.stats({ folder: fileUri(repo) });
    assert.ok(stats.memories >= 1);
    await waitFor(() => server.logs.some((l) => /ignored malformed parameters/.test(l.message)), 10_000, 'a log line');
    assert.equal(server.exitCode, undefined);
  });
});
