/**
 * Every server command, through the extension's typed API (src/protocol/api.ts), against the
 * real Python server over stdio: argument shapes in, result shapes out, errors as the
 * extension shows them.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CancellationTokenSource, DidOpenTextDocumentNotification } from 'vscode-languageserver-protocol';
import { COMMANDS } from '../../src/ids';
import { SERVER_COMMANDS } from '../../src/protocol/commands';
import type { Kind } from '../../src/protocol/commands';
import { describeError } from '../../src/protocol/errors';
import type { ErrorKind } from '../../src/protocol/errors';
import { renderIngest, renderObject } from '../../src/view/format';
import { fileUri, makeRepo, startServer, tempDir, waitFor } from './harness';
import type { TestServer } from './harness';
import { addContradiction, addUnembedded } from './store';

let server: TestServer;
let repo: string;
let empty: string;

before(async () => {
  const base = tempDir('commands');
  repo = makeRepo(path.join(base, 'repo'), { 'src/auth.py': 'import os\n', 'src/db.py': 'x = 1\n' });
  empty = path.join(base, 'empty');
  fs.mkdirSync(empty);
  server = await startServer({
    folders: [repo, empty],
    settings: { dataDirectory: path.join(base, 'data'), debounceMs: 20, injectionTargets: [] },
  });
});

after(async () => {
  await server.stop();
});

const repoUri = () => fileUri(repo);

async function remember(text: string, kind: Kind = 'fact', extra: object = {}): Promise<number> {
  return (await server.api.remember({ text, kind, folder: repoUri(), ...extra })).id;
}

/** The call fails, and the extension would show it as `kind` with a message matching `pattern`. */
async function fails(call: Promise<unknown>, kind: ErrorKind, pattern: RegExp): Promise<string> {
  try {
    await call;
  } catch (e) {
    const described = describeError(e, 'Doing it');
    assert.equal(described.kind, kind, described.message);
    assert.match(described.message, pattern);
    return described.message;
  }
  assert.fail('the call succeeded');
}

describe('the command set', () => {
  test('the server offers exactly the commands the protocol module names', () => {
    const offered = server.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    assert.deepEqual([...offered].sort(), Object.values(SERVER_COMMANDS).sort());
  });

  test("the extension's palette commands never clash with the server's (the client registers those)", () => {
    const ours = new Set<string>(Object.values(COMMANDS).map((c) => c.id));
    for (const command of Object.values(SERVER_COMMANDS)) {
      assert.equal(ours.has(command), false, command);
    }
  });
});

describe('remember', () => {
  test('stores a memory and answers its brief', async () => {
    const result = await server.api.remember({
      text: 'We chose SQLite in WAL mode over Postgres for zero setup.',
      kind: 'decision',
      folder: repoUri(),
    });
    assert.equal(result.created, true);
    assert.equal(result.memory.kind, 'decision');
    assert.equal(result.memory.id, result.id);
    assert.ok(result.memory.label && result.memory.compressed);
    assert.equal(result.memory.archived, false);
  });

  test('the same text twice is stored once', async () => {
    const first = await server.api.remember({ text: 'Tabs are four spaces wide here.', folder: repoUri() });
    const again = await server.api.remember({ text: 'Tabs are four spaces wide here.', folder: repoUri() });
    assert.equal(again.id, first.id);
    assert.equal(again.created, false);
  });

  test('a uri anchors the file (what Remember Selection sends)', async () => {
    const u = fileUri(path.join(repo, 'src', 'db.py'));
    const result = await server.api.remember({ text: 'db.py owns migrations.', kind: 'convention', uri: u });
    assert.ok(result.memory.anchors.includes('file:src/db.py'));
  });

  test('a missing text is an invalid argument naming it', async () => {
    await fails(server.api.remember({ text: '   ', folder: repoUri() }), 'invalid', /'text'/);
    await fails(server.api.execute(SERVER_COMMANDS.remember, { kind: 'fact' }), 'invalid', /'text' is required/);
  });

  test('an unknown kind lists the kinds', async () => {
    await fails(
      server.api.execute(SERVER_COMMANDS.remember, { text: 'x', kind: 'rumour' }),
      'invalid',
      /'kind'.*decision/,
    );
  });
});

describe('search, recall, explore', () => {
  test('search ranks by keyword and answers hits with scores', async () => {
    const id = await remember('The retry budget for webhooks is five attempts.');
    const found = await server.api.search({ query: 'webhooks retry budget', limit: 3, folder: repoUri() });
    assert.equal(found.query, 'webhooks retry budget');
    assert.equal(found.count, found.results.length);
    const top = found.results[0];
    assert.ok(top);
    assert.equal(top.id, id);
    assert.equal(typeof top.score, 'number');
    assert.ok(top.label && top.text && top.kind);
    assert.equal(top.source.kind, 'memory');
    assert.equal(typeof top.provenance, 'string');
  });

  test('search filters by kind', async () => {
    await remember('Webhook payloads are signed with HMAC.', 'convention');
    const found = await server.api.search({ query: 'webhook', kinds: ['convention'], folder: repoUri() });
    assert.ok(found.results.length > 0);
    assert.deepEqual([...new Set(found.results.map((r) => r.kind))], ['convention']);
  });

  test('search can be cancelled (what a live quick pick does on each keystroke)', async () => {
    const source = new CancellationTokenSource();
    const call = server.api.search({ query: 'webhook', folder: repoUri() }, { token: source.token });
    source.cancel();
    // the server may answer before the cancel arrives; either way the call settles
    await call.then(
      (r) => {
        assert.ok(Array.isArray(r.results));
      },
      (e: unknown) => {
        assert.equal(describeError(e, 'Search').kind, 'cancelled');
      },
    );
  });

  test('recall answers every level, the full text at full', async () => {
    const text =
      'Deployments run on Fridays only before noon. The release train leaves at 11:00; anything later ' +
      'waits for Monday because on-call is thin at weekends.';
    const id = await remember(text, 'workflow');
    for (const level of ['index', 'compressed', 'summary', 'full'] as const) {
      const got = await server.api.recall({ id, level, folder: repoUri() });
      assert.equal(got.level, level);
      assert.equal(got.id, id);
      assert.ok(got.text);
      assert.equal(typeof got.next, 'string');
      assert.ok(Array.isArray(got.anchors) && Array.isArray(got.artifacts));
      assert.equal(typeof got.usage.retrieved, 'number');
    }
    assert.equal((await server.api.recall({ id, level: 'full', folder: repoUri() })).text, text);
  });

  test('recall related walks the graph (what Open Memory shows below the text)', async () => {
    const old = await remember('Sessions are stored in Redis.', 'decision');
    const id = await remember('Sessions are stored in Postgres now.', 'decision', { supersedes: old });
    const got = await server.api.related({ id, folder: repoUri() });
    assert.equal(got.level, 'related');
    assert.equal(got.memory.id, id);
    assert.deepEqual(
      got.related.map((r) => [r.id, r.via]),
      [[old, 'SUPERSEDES']],
    );
    const full = await server.api.recall({ id: old, level: 'full', folder: repoUri() });
    assert.equal(full.supersededBy, id);
  });

  test('recall of an unknown id names it', async () => {
    await fails(server.api.recall({ id: 999_999, folder: repoUri() }), 'invalid', /999999/);
  });

  test('explore from an id and from a query answers trees', async () => {
    const old = await remember('Explore root: invoices live in the billing service.', 'decision');
    const id = await remember('Explore: invoices are immutable in the billing service.', 'decision', {
      supersedes: old,
    });
    const byId = await server.api.explore({ id, depth: 2, folder: repoUri() });
    const root = byId.roots[0];
    assert.ok(root);
    assert.equal(root.id, id);
    assert.deepEqual(
      root.children.map((c) => c.id),
      [old],
    );
    assert.equal(typeof byId.nodes, 'number');
    assert.equal(typeof byId.truncated, 'boolean');
    const byQuery = await server.api.explore({ query: 'billing invoices', depth: 1, folder: repoUri() });
    assert.ok(byQuery.roots.length > 0);
    assert.ok(byQuery.roots.every((r) => Array.isArray(r.children)));
  });

  test('explore needs an id or a query', async () => {
    await fails(server.api.explore({ depth: 2, folder: repoUri() }), 'invalid', /'id'.*'query'/);
  });
});

describe('usage and lifecycle', () => {
  test('cite and ignore count', async () => {
    const id = await remember('Cite me: feature flags live in flags.yaml.');
    assert.deepEqual(await server.api.cite({ id, folder: repoUri() }), { id, citationCount: 1 });
    assert.deepEqual(await server.api.cite({ id, context: 'used', folder: repoUri() }), { id, citationCount: 2 });
    assert.deepEqual(await server.api.ignore({ id, folder: repoUri() }), { id, ignoreCount: 1 });
  });

  test('forget archives, restore brings back, purge deletes an archived memory', async () => {
    const id = await remember('Forget me: staging uses port 8081.');
    await fails(server.api.forget({ id, purge: true, folder: repoUri() }), 'invalid', /purge/);
    assert.equal((await server.api.forget({ id, reason: 'moved', folder: repoUri() })).changed, true);
    const hidden = await server.api.search({ query: 'staging port 8081', folder: repoUri() });
    assert.ok(!hidden.results.some((r) => r.id === id));
    assert.equal((await server.api.restore({ id, folder: repoUri() })).changed, true);
    const back = await server.api.search({ query: 'staging port 8081', folder: repoUri() });
    assert.ok(back.results.some((r) => r.id === id));
    await server.api.forget({ id, folder: repoUri() });
    assert.equal((await server.api.forget({ id, purge: true, folder: repoUri() })).purged, true);
    await fails(server.api.recall({ id, folder: repoUri() }), 'invalid', /no memory/);
  });
});

describe('contradictions', () => {
  async function contradiction(
    a: string,
    b: string,
    status: 'open' | 'suspected' = 'open',
  ): Promise<{ id: number; a: number; b: number }> {
    const ida = await remember(a, 'decision');
    const idb = await remember(b, 'decision');
    const db = (await server.api.stats({ folder: repoUri() })).dbPath;
    return { id: addContradiction(db, ida, idb, 'they disagree', status), a: ida, b: idb };
  }

  test('a suspected one is listed for review, marked, and confirmed into an open one', async () => {
    const c = await contradiction('Jobs run on spot instances.', 'The docs site builds nightly.', 'suspected');
    const review = await server.api.contradictions({ folder: repoUri() });
    assert.equal(review.status, 'review');
    assert.equal(review.contradictions.find((x) => x.id === c.id)?.status, 'suspected');
    const open = await server.api.contradictions({ status: 'open', folder: repoUri() });
    assert.ok(!open.contradictions.some((x) => x.id === c.id));
    assert.ok((await server.api.stats({ folder: repoUri() })).contradictionsSuspected >= 1);
    const got = await server.api.resolveContradiction({ id: c.id, resolution: 'confirm', folder: repoUri() });
    assert.equal(got.status, 'open');
    assert.equal(got.resolution, null);
    const now = await server.api.contradictions({ status: 'open', folder: repoUri() });
    assert.ok(now.contradictions.some((x) => x.id === c.id));
    await fails(
      server.api.resolveContradiction({ id: c.id, resolution: 'confirm', folder: repoUri() }),
      'invalid',
      /only a suspected one/,
    );
  });

  test('the open ones are listed with both sides in full', async () => {
    const c = await contradiction('API errors are JSON.', 'API errors are plain text.');
    const listed = await server.api.contradictions({ status: 'open', folder: repoUri() });
    assert.equal(listed.count, listed.contradictions.length);
    const mine = listed.contradictions.find((x) => x.id === c.id);
    assert.ok(mine);
    assert.deepEqual(new Set([mine.a?.id, mine.b?.id]), new Set([c.a, c.b]));
    assert.equal(mine.status, 'open');
    assert.equal(mine.reason, 'they disagree');
    assert.ok(mine.a?.text && mine.b?.text && mine.a.label);
  });

  test('a_wins with a note supersedes the loser', async () => {
    const c = await contradiction('Logs go to stdout.', 'Logs go to a file.');
    const got = await server.api.resolveContradiction({
      id: c.id,
      resolution: 'a_wins',
      note: '12-factor',
      folder: repoUri(),
    });
    assert.equal(got.status, 'resolved');
    assert.equal(got.resolution, 'a_wins');
    assert.equal(got.note, '12-factor');
    const loser = got.a?.id === c.a ? c.b : c.a;
    assert.notEqual((await server.api.recall({ id: loser, level: 'full', folder: repoUri() })).supersededBy, null);
    const open = await server.api.contradictions({ folder: repoUri() });
    assert.ok(!open.contradictions.some((x) => x.id === c.id));
  });

  test('merged stores the merged text as a memory', async () => {
    const c = await contradiction('Use UTC in the API.', 'Use local time in the UI.');
    const got = await server.api.resolveContradiction({
      id: c.id,
      resolution: 'merged',
      mergedText: 'UTC in the API, local time in the UI.',
      folder: repoUri(),
    });
    assert.equal(got.resolution, 'merged');
    assert.equal(typeof got.mergedId, 'number');
    const merged = await server.api.recall({ id: got.mergedId ?? 0, level: 'full', folder: repoUri() });
    assert.equal(merged.text, 'UTC in the API, local time in the UI.');
  });

  test('both_valid settles it; settling twice is refused', async () => {
    const c = await contradiction('Cache for 5 min.', 'Cache for 1 h.');
    assert.equal(
      (await server.api.resolveContradiction({ id: c.id, resolution: 'both_valid', folder: repoUri() })).resolution,
      'both_valid',
    );
    await fails(
      server.api.resolveContradiction({ id: c.id, resolution: 'b_wins', folder: repoUri() }),
      'invalid',
      /already/,
    );
  });

  test('dismissed leaves both memories untouched and is listed as dismissed', async () => {
    const c = await contradiction('Tabs in the Makefile.', 'Spaces in Python files.');
    const got = await server.api.resolveContradiction({ id: c.id, resolution: 'dismissed', folder: repoUri() });
    assert.equal(got.status, 'dismissed');
    const listed = await server.api.contradictions({ status: 'dismissed', folder: repoUri() });
    assert.ok(listed.contradictions.some((x) => x.id === c.id));
  });
});

describe('stats and context', () => {
  test('stats describe the store', async () => {
    const stats = await server.api.stats({ folder: repoUri() });
    assert.ok(stats.memories >= 1);
    assert.equal(stats.folder, repoUri());
    assert.equal(stats.branch, 'main');
    assert.equal(stats.modelId, 'hashing-64');
    assert.ok(fs.existsSync(stats.dbPath));
    assert.deepEqual(stats.injectionTargets, []);
  });

  test('assembleContext for a file: the Markdown Show Context displays and Copy Context copies', async () => {
    await remember('auth.py must never log tokens.', 'decision', { anchors: ['file:src/auth.py'] });
    const u = fileUri(path.join(repo, 'src', 'auth.py'));
    const got = await server.api.assembleContext({ uri: u });
    assert.equal(got.file, 'src/auth.py');
    assert.equal(got.uri, u);
    assert.equal(got.folder, repoUri());
    assert.match(got.markdown ?? '', /never log tokens/);
    assert.ok(got.tokens.total <= got.tokens.budget);
    assert.equal(got.tokens.budget, 8000);
    assert.ok(got.items.some((i) => i.kind === 'decision' && typeof i.memoryId === 'number'));
  });

  test('assembleContext takes overrides', async () => {
    const u = fileUri(path.join(repo, 'src', 'auth.py'));
    const got = await server.api.assembleContext({ uri: u, budget: 300, activity: 'review', markdown: false });
    assert.equal(got.tokens.budget, 300);
    assert.equal(got.activity, 'review');
    assert.equal('markdown' in got, false);
  });

  test('assembleContext defaults to the active file', async () => {
    const since = server.updates.length;
    const u = fileUri(path.join(repo, 'src', 'db.py'));
    await server.connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri: u, languageId: 'python', version: 1, text: 'x = 1\n' },
    });
    await server.nextUpdate(since, (x) => x.uri === u);
    assert.equal((await server.api.assembleContext({ folder: repoUri() })).file, 'src/db.py');
  });

  test('assembleContext without an active file names uri; a tiny budget is refused', async () => {
    await fails(server.api.assembleContext({ folder: fileUri(empty) }), 'invalid', /uri/);
    await fails(server.api.assembleContext({ budget: 10, folder: repoUri() }), 'invalid', /'budget'/);
  });

  test('an unknown folder is an invalid argument', async () => {
    await fails(server.api.stats({ folder: 'file:///nowhere/at/all' }), 'invalid', /folder/);
  });
});

describe('Claude Code import', () => {
  test('adds the import line once', async () => {
    const claude = path.join(repo, 'CLAUDE.md');
    fs.writeFileSync(claude, '# House rules\n\nBe brief.');
    const first = await server.api.enableClaudeImport({ folder: repoUri() });
    assert.equal(first.changed, true);
    assert.equal(first.file, claude);
    assert.match(first.warning ?? '', /agents/); // injectionTargets is [] in this workspace
    assert.equal(fs.readFileSync(claude, 'utf8'), '# House rules\n\nBe brief.\n\n@.living-memory/context.md\n');
    const again = await server.api.enableClaudeImport({ folder: repoUri() });
    assert.equal(again.changed, false);
  });
});

describe('long jobs', () => {
  test('reindex reports progress on the token the extension passes', async () => {
    const db = (await server.api.stats({ folder: repoUri() })).dbPath;
    addUnembedded(db, 40, 'reindex');
    const progress = server.watchProgress('ext-reindex');
    const got = await server.api.reindex({ batchSize: 8, folder: repoUri() }, { workDoneToken: 'ext-reindex' });
    assert.ok(got.embedded >= 40);
    assert.ok(got.vectors >= 40);
    assert.equal(typeof got.keywordRows, 'number');
    const kinds = progress.map((p) => p.kind);
    assert.equal(kinds[0], 'begin');
    assert.ok(kinds.includes('report'));
    assert.equal(kinds.at(-1), 'end');
    assert.equal((await server.api.stats({ folder: repoUri() })).pendingEmbeddings, 0);
  });

  test('cancelling the request (the progress notification’s Cancel) stops the job', async () => {
    const db = (await server.api.stats({ folder: repoUri() })).dbPath;
    addUnembedded(db, 3000, 'cancel');
    const progress = server.watchProgress('ext-cancel');
    const source = new CancellationTokenSource();
    const call = server.api.reindex({ batchSize: 1, folder: repoUri() }, { token: source.token, workDoneToken: 'ext-cancel' });
    await waitFor(() => progress.some((p) => p.kind === 'report'), 20_000, 'a progress report');
    source.cancel();
    await fails(call, 'cancelled', /cancelled/);
    await waitFor(() => progress.at(-1)?.kind === 'end', 20_000, 'the end of the progress');
    assert.ok((await server.api.stats({ folder: repoUri() })).pendingEmbeddings > 0);
  });

  test('ingest answers a JSON summary with progress', async () => {
    const progress = server.watchProgress('ext-ingest');
    const summary = await server.api.ingest(
      { sources: ['git', 'rules'], dryRun: true, folder: repoUri() },
      { workDoneToken: 'ext-ingest' },
    );
    const raw: unknown = summary; // the server's JSON, whatever the type says
    assert.ok(typeof raw === 'object' && raw !== null && !Array.isArray(raw));
    assert.equal(summary.dryRun, true);
    assert.deepEqual(Object.keys(summary.sources ?? {}).sort(), ['git', 'rules']);
    assert.equal(typeof summary.sources?.git?.added, 'number');
    // what Ingest History shows
    const shown = renderIngest('Ingest preview', summary);
    assert.match(shown, /^\| git \| \d+ \| \d+ \|/m);
    assert.match(shown, /Dry run: nothing was stored/);
    assert.equal(progress[0]?.kind, 'begin');
    await waitFor(() => progress.at(-1)?.kind === 'end', 10_000, 'the end of the progress');
  });

  test('ingest takes the chat options (tools, paths, allWorkspaces)', async () => {
    const chats = tempDir('chats');
    const summary = await server.api.ingest({
      sources: ['chats'],
      tools: ['claude', 'codex'],
      paths: [chats],
      allWorkspaces: false,
      dryRun: true,
      folder: repoUri(),
    });
    assert.equal(typeof summary.sources?.chats, 'object');
    await fails(
      server.api.execute(SERVER_COMMANDS.ingest, { sources: ['chats'], tools: ['notepad'], folder: repoUri() }),
      'invalid',
      /tools/,
    );
  });

  test('ingest refuses an unknown source', async () => {
    await fails(
      server.api.execute(SERVER_COMMANDS.ingest, { sources: ['email'], folder: repoUri() }),
      'invalid',
      /sources\[0\]/,
    );
  });

  test('consolidate (dry run, as the preview does) answers a summary', async () => {
    const summary = (await server.api.consolidate({ dryRun: true, folder: repoUri() })) as Record<string, unknown>;
    assert.ok(typeof summary === 'object' && !Array.isArray(summary));
    assert.equal(summary.dryRun, true);
    for (const key of ['levelsFilled', 'decayUpdated', 'similarLinked', 'contradictionsOpened']) {
      assert.equal(typeof summary[key], 'number', key);
    }
    assert.match(renderObject('Consolidation preview', summary), /similarLinked/);
  });
});
