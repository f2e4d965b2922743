import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { ErrorCodes, LSPErrorCodes, ResponseError, Trace } from 'vscode-languageserver-protocol';
import { CrashWindow } from '../../src/client/crashWindow';
import { BranchTracker } from '../../src/forward/branchTracker';
import { describeError } from '../../src/protocol/errors';
import { parseImportCheck, serverCommand } from '../../src/protocol/launch';
import { isContextUpdated } from '../../src/protocol/notifications';
import {
  didChangeConfigurationParams,
  initializationOptions,
  needsRestart,
  serverSettings,
} from '../../src/protocol/settings';
import { traceFor } from '../../src/util/trace';
import { parseMemoryId, refFrom, rememberText } from '../../src/view/args';
import { ContextStore, MAX_REMEMBERED } from '../../src/view/contextStore';
import { parseRoute, routeLocation } from '../../src/view/documentRoutes';
import type { DocumentRoute } from '../../src/view/documentRoutes';
import { sampleUpdate } from './fixtures';

const PACKAGE_ROOT = path.resolve(__dirname, '..', '..', '..');

describe('version', () => {
  test("the extension's version is the server package's (pyproject.toml)", () => {
    const pyproject = fs.readFileSync(path.join(PACKAGE_ROOT, '..', 'pyproject.toml'), 'utf8');
    const version = /^\[project\][^[]*?^version\s*=\s*"([^"]+)"/m.exec(pyproject)?.[1];
    const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.ok(version);
    assert.equal(pkg.version, version);
  });
});

describe('branch tracking', () => {
  test('the first HEAD is reported, then only changes, with the previous branch', () => {
    const t = new BranchTracker();
    assert.deepEqual(t.update('file:///r', { name: 'main' }), { folder: 'file:///r', branch: 'main', previous: null });
    assert.equal(t.update('file:///r', { name: 'main' }), undefined);
    assert.deepEqual(t.update('file:///r', { name: 'feature/x' }), {
      folder: 'file:///r',
      branch: 'feature/x',
      previous: 'main',
    });
  });

  test('a detached HEAD is branch null; a loading repository changes nothing', () => {
    const t = new BranchTracker();
    assert.equal(t.update('file:///r', undefined), undefined);
    t.update('file:///r', { name: 'main' });
    assert.deepEqual(t.update('file:///r', {}), { folder: 'file:///r', branch: null, previous: 'main' });
    assert.equal(t.update('file:///r', {}), undefined);
    assert.deepEqual(t.update('file:///r', { name: 'main' }), { folder: 'file:///r', branch: 'main', previous: null });
  });

  test('repositories are tracked apart, and a forgotten one is reported afresh', () => {
    const t = new BranchTracker();
    t.update('file:///a', { name: 'main' });
    assert.ok(t.update('file:///b', { name: 'main' }));
    t.forget('file:///a');
    assert.deepEqual(t.update('file:///a', { name: 'main' }), { folder: 'file:///a', branch: 'main', previous: null });
  });
});

describe('settings', () => {
  test('only the server keys are sent, without empty values', () => {
    const out = serverSettings({
      python: '/usr/bin/python3',
      serverInstallSource: '/tmp/x.whl',
      dataDirectory: '',
      modelDirectory: '  ',
      budget: 4000,
      logLevel: 'debug',
      injectionTargets: [],
      tierSplit: null,
      unknown: 1,
    });
    assert.deepEqual(out, { budget: 4000, logLevel: 'debug', injectionTargets: [] });
    assert.deepEqual(serverSettings(null), {});
    assert.deepEqual(serverSettings([1]), {});
  });

  test('init options and pushed configuration are wrapped in the section', () => {
    assert.deepEqual(initializationOptions({ budget: 300 }), { livingMemory: { budget: 300 } });
    assert.deepEqual(initializationOptions({}, 'file:///p/a.py'), {
      livingMemory: {},
      activeEditor: { uri: 'file:///p/a.py' },
    });
    assert.deepEqual(initializationOptions({}, null), { livingMemory: {}, activeEditor: { uri: null } });
    assert.deepEqual(didChangeConfigurationParams({ budget: 300 }), { settings: { livingMemory: { budget: 300 } } });
  });

  test('only the launch settings restart the server', () => {
    assert.equal(needsRestart((k) => k === 'livingMemory.python'), true);
    assert.equal(needsRestart((k) => k === 'livingMemory.serverInstallSource'), true);
    assert.equal(needsRestart((k) => k === 'livingMemory.budget'), false);
  });
});

describe('launch', () => {
  test('the server runs as python -m server serve on stdio', () => {
    assert.deepEqual(serverCommand('/py', 'debug'), {
      command: '/py',
      args: ['-m', 'server', 'serve', '--stdio', '--log-level', 'debug'],
    });
  });

  test('the import check reads the version, or the exception', () => {
    assert.deepEqual(parseImportCheck(0, 'living-memory 0.1.0 python 3.11.7\n', ''), {
      ok: true,
      version: '0.1.0',
      pythonVersion: '3.11.7',
    });
    assert.deepEqual(
      parseImportCheck(1, '', "Traceback (most recent call last):\n  File ...\nModuleNotFoundError: No module named 'server'\n"),
      { ok: false, reason: "ModuleNotFoundError: No module named 'server'" },
    );
    assert.deepEqual(parseImportCheck(null, '', ''), { ok: false, reason: 'the check did not finish' });
  });
});

describe('errors', () => {
  test('each LSP error code reads as a sentence', () => {
    const invalid = new ResponseError(ErrorCodes.InvalidParams, "livingMemory.remember: argument 'text' is required");
    assert.deepEqual(describeError(invalid, 'Remembering'), {
      kind: 'invalid',
      message: "Remembering: livingMemory.remember: argument 'text' is required",
    });
    const failed = new ResponseError(LSPErrorCodes.RequestFailed, 'livingMemory.stats: the store of repo cannot be opened');
    assert.equal(describeError(failed, 'Showing the stats').kind, 'unavailable');
    assert.match(describeError(failed, 'Showing the stats').message, /^Showing the stats failed: livingMemory\.stats: the store of repo cannot be opened$/);
    assert.equal(describeError(new ResponseError(LSPErrorCodes.RequestCancelled, 'x'), 'Ingesting').kind, 'cancelled');
    assert.match(describeError(new ResponseError(ErrorCodes.InternalError, 'boom'), 'X').message, /inside the server: boom/);
    assert.deepEqual(describeError(new Error('no server'), 'X'), { kind: 'other', message: 'X failed: no server' });
    assert.equal(describeError('plain', 'X').message, 'X failed: plain');
  });
});

describe('crash window and trace', () => {
  test('three crashes within the window stop the restarts', () => {
    const w = new CrashWindow(3, 1000);
    assert.equal(w.record(0), true);
    assert.equal(w.record(100), true);
    assert.equal(w.record(200), false);
    w.reset();
    assert.equal(w.record(300), true);
    assert.equal(w.record(5000), true); // the one at 300 has left the window
    assert.equal(w.record(5100), true);
    assert.equal(w.record(5200), false);
  });

  test('the protocol trace follows the log level', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5].map(traceFor), [
      Trace.Off,
      Trace.Verbose,
      Trace.Messages,
      Trace.Off,
      Trace.Off,
      Trace.Off,
    ]);
  });
});

describe('command arguments', () => {
  test('a memory or contradiction reference comes from code, clicks and context menus', () => {
    assert.deepEqual(refFrom({ id: 4, folder: 'file:///w' }), { id: 4, folder: 'file:///w' });
    assert.deepEqual(refFrom({ type: 'item', item: { memoryId: 9 }, folder: 'file:///w' }), { id: 9, folder: 'file:///w' });
    assert.deepEqual(refFrom({ type: 'contradiction', contradiction: { id: 2 }, folder: 'f' }), { id: 2, folder: 'f' });
    assert.equal(refFrom(undefined), undefined);
    assert.equal(refFrom({ id: 0 }), undefined);
    assert.equal(refFrom({ id: 1.5 }), undefined);
    assert.equal(refFrom({ type: 'item', item: { memoryId: null } }), undefined);
  });

  test('memory ids are read from "#12" or "12"', () => {
    assert.equal(parseMemoryId('#12'), 12);
    assert.equal(parseMemoryId(' 7 '), 7);
    for (const bad of ['', '0', '#', 'twelve', '1.5', '-3']) {
      assert.equal(parseMemoryId(bad), undefined, bad);
    }
  });

  test('a remembered selection carries its note, code fenced', () => {
    assert.equal(rememberText('x = 1', 'why', 'python'), 'why\n\n```python\nx = 1\n```');
    assert.equal(rememberText('We use tabs.', undefined, 'markdown'), 'We use tabs.');
    assert.equal(rememberText('  We use tabs. ', '  ', 'plaintext'), 'We use tabs.');
  });
});

describe('context store', () => {
  test('keeps the latest context per file and falls back to the latest one', () => {
    const store = new ContextStore();
    const seen: (string | undefined)[] = [];
    const sub = store.onDidChange((u) => seen.push(u?.uri));
    const a = sampleUpdate({ uri: 'file:///w/a.py' });
    const b = sampleUpdate({ uri: 'file:///w/b.py' });
    store.update(a);
    store.update(b);
    assert.equal(store.forUri('file:///w/a.py'), a);
    assert.equal(store.forUri('file:///w/other.py'), b);
    assert.equal(store.forUri(undefined), b);
    store.clear();
    assert.equal(store.latest, undefined);
    sub.dispose();
    store.update(a);
    assert.deepEqual(seen, ['file:///w/a.py', 'file:///w/b.py', undefined]);
  });

  test('the current context is the file on screen’s, never another file’s', () => {
    const store = new ContextStore();
    const a = sampleUpdate({ uri: 'file:///w/a.py', contextId: 4 });
    const pkg = sampleUpdate({ uri: 'file:///w/package.json', contextId: 5 });
    store.update(a);
    store.update(pkg); // a background open the server announced anyway
    assert.equal(store.current('file:///w/a.py'), a);
    assert.equal(store.current('file:///w/b.py'), undefined);
    assert.equal(store.current(undefined), pkg); // no file on screen: the latest
    store.update(sampleUpdate({ uri: 'file:///w/a.py', contextId: 3 })); // older: ignored
    assert.equal(store.current('file:///w/a.py'), a);
    const newer = sampleUpdate({ uri: 'file:///w/a.py', contextId: 6 });
    store.update(newer);
    assert.equal(store.current('file:///w/a.py'), newer);
  });

  test('remembers a bounded number of files', () => {
    const store = new ContextStore();
    for (let i = 0; i <= MAX_REMEMBERED; i++) {
      store.update(sampleUpdate({ uri: `file:///w/${i}.py` }));
    }
    const latest = store.latest;
    assert.equal(store.forUri('file:///w/0.py'), latest); // forgotten: the latest stands in
    assert.equal(store.forUri('file:///w/1.py')?.uri, 'file:///w/1.py');
  });

  test('a malformed contextUpdated is recognised', () => {
    assert.equal(isContextUpdated(sampleUpdate()), true);
    assert.equal(isContextUpdated({ uri: 'x' }), false);
    assert.equal(isContextUpdated(null), false);
    const broken = sampleUpdate() as unknown as { tokens: { tiers: Record<string, unknown> } };
    delete broken.tokens.tiers.index;
    assert.equal(isContextUpdated(broken), false);
  });
});

describe('document routes', () => {
  test('round trip through path and query', () => {
    const routes: DocumentRoute[] = [
      { kind: 'context', uri: 'file:///w/src/a%20b.py' },
      { kind: 'memory', id: 12, folder: 'file:///w' },
      { kind: 'memory', id: 3, folder: undefined },
      { kind: 'stats', folder: 'file:///w' },
      { kind: 'result', key: '4', title: 'Ingest result' },
    ];
    for (const route of routes) {
      const { path: p, query } = routeLocation(route);
      assert.deepEqual(parseRoute(p, query), route, p);
    }
    assert.equal(routeLocation({ kind: 'context', uri: 'file:///w/src/a%20b.py' }).path, '/context/a b.py (context).md');
    assert.equal(parseRoute('/elsewhere', ''), undefined);
    assert.equal(parseRoute('/context/x.md', ''), undefined);
  });
});
