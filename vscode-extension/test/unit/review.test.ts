import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ReviewItem, ShareResult } from '../../src/protocol/commands';
import { refFrom } from '../../src/view/args';
import { reviewDescription, reviewedMessage, reviewLabel, shareMessage } from '../../src/view/review';

const item: ReviewItem = {
  id: 7,
  kind: 'convention',
  label: 'tests: real sqlite',
  compressed: 'tests: real SQLite, no mocks',
  anchors: [],
  archived: false,
  supersededBy: null,
  createdAt: 0,
  text: 'Tests never mock the database.\nThey use a real SQLite file.',
  review: 'proposed',
  source: 'chat:cursor',
  confidence: 0.7,
  sharedPath: null,
};

const shared: ShareResult = {
  folder: '/repo/.living-memory/shared',
  written: ['conventions/tests-never-mock-7c1d2e3f.md'],
  removed: [],
  unchanged: 3,
  kept: [],
  files: 4,
  bytes: 1800,
  read: { read: 3, added: 1, updated: 0, unchanged: 2, superseded: 0, archived: 0 },
  skipped: { total: 1, byReason: [], examples: [{ source: 'shared', where: 'decisions/x.md', reason: 'merge conflict markers' }] },
  seconds: 0.01,
  dryRun: false,
  ignoredByGit: false,
};

describe('review in the view', () => {
  test('an item shows its first line, kind and source, and its file once shared', () => {
    assert.equal(reviewLabel(item), 'Tests never mock the database.');
    assert.equal(reviewDescription(item), 'convention · chat:cursor');
    assert.equal(reviewDescription({ ...item, sharedPath: 'conventions/a-1.md' }), 'convention · chat:cursor · conventions/a-1.md');
  });

  test('an inline action on a review item names its memory and folder', () => {
    assert.deepEqual(refFrom({ type: 'review', item, folder: 'file:///repo' }), { id: 7, folder: 'file:///repo' });
  });

  test('approve and reject say what changed and what already was', () => {
    assert.equal(
      reviewedMessage({ review: 'approved', ids: [7, 8], changed: [7] }),
      'Approved #7: Share writes it to the shared folder. #8 was already approved.',
    );
    assert.equal(
      reviewedMessage({ review: 'rejected', ids: [7], changed: [7] }),
      'Rejected #7: archived, and its shared file goes on the next Share.',
    );
  });

  test('share reports files, what it read first, and a skipped file with its path', () => {
    assert.equal(
      shareMessage(shared),
      'Shared memory: 1 file written, 3 unchanged (4 files in /repo/.living-memory/shared). ' +
        'Read first: 1 new, 0 edited, 0 deleted. Skipped 1 file (decisions/x.md: merge conflict markers). ' +
        'Commit the folder to share it.',
    );
    assert.match(shareMessage({ ...shared, ignoredByGit: true }), /Warning: git ignores this folder/);
    assert.equal(
      shareMessage({ ...shared, written: [], read: { ...shared.read, added: 0 }, skipped: { total: 0, byReason: [], examples: [] } }),
      'Shared memory: 0 files written, 3 unchanged (4 files in /repo/.living-memory/shared).',
    );
  });
});
