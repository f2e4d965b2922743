/**
 * The editor's models as the judge against the REAL Python server: the client announces the
 * capability, the server asks `livingMemory/judge` about a waiting pair, and the extension's
 * bridge (protocol/judge.ts) answers with a fake chat model — a contradiction opens; without
 * the user's consent the pair keeps waiting and the model is never asked; a person's verdict
 * settles a pair.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { answerJudge, JUDGE_CAPABILITY, JUDGE_REQUEST } from '../../src/protocol/judge';
import type { ChatModel } from '../../src/protocol/judge';
import { fileUri, makeRepo, startServer, tempDir } from './harness';
import type { TestServer } from './harness';

const POSTGRES = 'We use PostgreSQL as the primary database';
const MYSQL = 'We moved off PostgreSQL: MySQL is the primary database now';

/** A chat model that answers from labels, as a competent model would. */
class FakeModel implements ChatModel {
  readonly name = 'fake/judge';
  readonly maxInputTokens = 100_000;
  readonly asked: string[] = [];
  constructor(private readonly conflicts: [string, string][]) {}

  send(text: string): Promise<AsyncIterable<string>> {
    this.asked.push(text);
    const [a = '', b = ''] = (text.split('A:\n')[1] ?? '').split('\n\nB:\n');
    const conflict = this.conflicts.some(([x, y]) => x === a && y === b);
    const verdict = conflict
      ? { verdict: 'supersedes', reason: 'the later one replaces it', confidence: 0.9, quote_a: a.slice(0, 20), quote_b: b.slice(0, 20) }
      : { verdict: 'compatible', reason: 'both hold', confidence: 0.8 };
    const answer = `\`\`\`json\n${JSON.stringify(verdict)}\n\`\`\``;
    return Promise.resolve(
      (async function* () {
        for (const piece of [answer.slice(0, 10), answer.slice(10)]) {
          await Promise.resolve();
          yield piece;
        }
      })(),
    );
  }
}

let server: TestServer;
let repo: string;
let consent = true;
const model = new FakeModel([[POSTGRES, MYSQL]]);

before(async () => {
  const base = tempDir('judge');
  repo = makeRepo(path.join(base, 'repo'), { 'src/db.py': 'x = 1\n' });
  server = await startServer({
    folders: [repo],
    settings: { dataDirectory: path.join(base, 'data'), injectionTargets: [], ingestOnFirstOpen: false, consolidateWhenIdleMinutes: 0 },
    experimental: JUDGE_CAPABILITY,
  });
  server.connection.onRequest(JUDGE_REQUEST, (params: unknown) =>
    answerJudge(params, { consent: () => Promise.resolve(consent), selectModel: () => Promise.resolve(model) }),
  );
});

after(async () => {
  await server.stop();
});

const folder = () => fileUri(repo);

async function waitingPair(older: string, newer: string): Promise<[number, number, number]> {
  const a = (await server.api.remember({ text: older, kind: 'decision', folder: folder() })).id;
  const b = (await server.api.remember({ text: newer, kind: 'decision', folder: folder() })).id;
  const pending = (await server.api.contradictions({ status: 'pending', folder: folder() })).contradictions;
  const row = pending.find((c) => c.a?.id === a && c.b?.id === b);
  assert.ok(row, `no candidate pair for #${a} and #${b}: ${JSON.stringify(pending)}`);
  assert.equal(row.status, 'pending');
  return [row.id, a, b];
}

async function openPairs(): Promise<string[]> {
  const open = (await server.api.contradictions({ status: 'open', folder: folder() })).contradictions;
  return open.map((c) => `${c.a?.id}-${c.b?.id}`);
}

describe("the editor's models judge candidate contradictions", () => {
  test('without consent the pair waits and the model is not asked', async () => {
    consent = false;
    const [, a, b] = await waitingPair(POSTGRES, MYSQL);
    const run = await server.api.judgePending({ folder: folder() });
    assert.equal(run.by, 'editor-models');
    assert.equal(run.unanswered, 1);
    assert.equal(model.asked.length, 0);
    assert.ok(!(await openPairs()).includes(`${a}-${b}`));
  });

  test('with consent the fake model judges the pair a contradiction', async () => {
    consent = true;
    const run = await server.api.judgePending({ folder: folder() });
    assert.equal(run.by, 'editor-models');
    assert.equal(run.conflicts, 1);
    assert.equal(run.left, 0);
    assert.equal(model.asked.length, 1);
    assert.ok(model.asked[0]?.includes(`A:\n${POSTGRES}\n\nB:\n${MYSQL}`));
    const open = (await server.api.contradictions({ status: 'open', folder: folder() })).contradictions;
    assert.ok(open.some((c) => c.a?.text === POSTGRES && c.b?.text === MYSQL && (c.reason ?? '').startsWith('judged')));
  });

  test('a person dismisses a waiting pair; it is not proposed again', async () => {
    const [id, a, b] = await waitingPair('Sessions are kept in Redis for thirty minutes', 'Sessions moved from Redis to signed cookies');
    const settled = await server.api.settleCandidate({ id, conflict: false, folder: folder() });
    assert.deepEqual(settled, { candidate: id, conflict: false, contradiction: null });
    assert.ok(!(await openPairs()).includes(`${a}-${b}`));
    const pending = (await server.api.contradictions({ status: 'pending', folder: folder() })).contradictions;
    assert.ok(!pending.some((c) => c.id === id));
  });
});
