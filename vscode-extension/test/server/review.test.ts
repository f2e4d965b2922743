/**
 * Team memory through the extension's typed API against the real Python server: the review
 * list, approve one proposed memory, edit one, reject one, share — and the files that change.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { describeError } from '../../src/protocol/errors';
import { reviewedMessage, shareMessage } from '../../src/view/review';
import { fileUri, makeRepo, startServer, tempDir } from './harness';
import type { TestServer } from './harness';

let server: TestServer;
let repo: string;

before(async () => {
  const base = tempDir('review');
  repo = makeRepo(path.join(base, 'repo'), { 'src/api.py': 'def handler():\n    return 1\n' });
  server = await startServer({
    folders: [repo],
    settings: {
      dataDirectory: path.join(base, 'data'),
      injectionTargets: [],
      ingestOnFirstOpen: false,
      sharedFolder: 'team/memory',
    },
  });
});

after(async () => {
  await server.stop();
});

const folder = () => fileUri(repo);

/** The memory files under the configured shared folder: relative path → text. */
function files(): Record<string, string> {
  const root = path.join(repo, 'team', 'memory');
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(full);
      } else if (entry.name !== 'README.md') {
        out[path.relative(root, full).split(path.sep).join('/')] = fs.readFileSync(full, 'utf8');
      }
    }
  };
  walk(root);
  return out;
}

describe('review and share', () => {
  test('approve one, edit one, reject one, share: the folder holds what was approved', async () => {
    const ids: number[] = [];
    for (const text of [
      'Retry webhooks three times with backoff.',
      'Log in UTC only.',
      'Always use tabs everywhere.',
    ]) {
      // an agent's memory: proposed until a person approves it
      ids.push((await server.api.remember({ text, kind: 'convention', source: 'mcp', folder: folder() })).id);
    }
    const [keep, fix, drop] = ids as [number, number, number];
    const listed = await server.api.reviewList({ folder: folder() });
    assert.deepEqual(listed.items.map((i) => i.id).sort(), [...ids].sort());
    assert.ok(listed.items.every((i) => i.review === 'proposed' && i.source === 'mcp' && i.sharedPath === null));
    assert.deepEqual((await server.api.share({ folder: folder() })).written, []);

    const approved = await server.api.approve({ ids: [keep], folder: folder() });
    assert.deepEqual(approved.changed, [keep]);
    assert.match(reviewedMessage(approved), new RegExp(`^Approved #${keep}`));
    const edited = await server.api.edit({ id: fix, text: 'Log timestamps in UTC only.', folder: folder() });
    assert.notEqual(edited.id, fix);
    const rejected = await server.api.reject({ ids: [drop], reason: 'not our style', folder: folder() });
    assert.deepEqual(rejected.changed, [drop]);
    assert.deepEqual((await server.api.reviewList({ folder: folder() })).items, []);
    assert.deepEqual(
      (await server.api.reviewList({ status: 'rejected', folder: folder() })).items.map((i) => i.id),
      [drop],
    );

    const shared = await server.api.share({ folder: folder() });
    assert.equal(shared.written.length, 2);
    assert.equal(shared.folder, path.join(repo, 'team', 'memory'));
    assert.match(shareMessage(shared), /^Shared memory: 2 files written, 0 unchanged .*Commit the folder/);
    const written = files();
    assert.deepEqual(Object.keys(written).sort(), [...shared.written].sort());
    const bodies = Object.values(written).map((t) => t.split('\n---\n')[1]?.trim());
    assert.deepEqual(bodies.sort(), [
      '# Log timestamps in UTC only\n\nLog timestamps in UTC only.',
      '# Retry webhooks three times with backoff\n\nRetry webhooks three times with backoff.',
    ]);
    const listedApproved = await server.api.reviewList({ status: 'approved', folder: folder() });
    assert.ok(listedApproved.items.every((i) => i.sharedPath !== null && shared.written.includes(i.sharedPath)));

    // editing a shared memory rewrites its file in place; rejecting it removes the file
    const keepPath = listedApproved.items.find((i) => i.id === keep)?.sharedPath;
    assert.ok(keepPath);
    const second = await server.api.edit({ id: keep, text: 'Retry webhooks five times with backoff.', folder: folder() });
    const again = await server.api.share({ folder: folder() });
    assert.deepEqual(again.written, [keepPath]);
    assert.match(files()[keepPath] ?? '', /Retry webhooks five times with backoff\./);
    await server.api.reject({ ids: [second.id], folder: folder() });
    const removed = await server.api.share({ folder: folder() });
    assert.deepEqual(removed.removed, [keepPath]);
    assert.equal(files()[keepPath], undefined);
    assert.equal(Object.keys(files()).length, 1);
  });

  test('a bad argument is an invalid-argument error the extension shows as such', async () => {
    try {
      await server.api.approve({ ids: [], folder: folder() });
      assert.fail('approve with no ids succeeded');
    } catch (e) {
      const described = describeError(e, 'Approving');
      assert.equal(described.kind, 'invalid');
      assert.match(described.message, /ids/);
    }
  });
});
