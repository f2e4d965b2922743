import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hookClientsToOffer, hookInstallArgs, hookOfferMessage } from '../../src/protocol/hooks';

function input(paths: string[], over: Partial<Parameters<typeof hookClientsToOffer>[0]> = {}) {
  const set = new Set(paths);
  return {
    folder: '/work/shop',
    home: '/home/me',
    exists: (p: string) => set.has(p),
    appName: 'Visual Studio Code',
    asked: [] as string[],
    ...over,
  };
}

describe('agent hooks offer', () => {
  test('finds the clients a home or folder shows signs of', () => {
    assert.deepEqual(hookClientsToOffer(input(['/home/me/.claude', '/work/shop/.codex'])), ['claude', 'codex']);
    assert.deepEqual(hookClientsToOffer(input([])), []);
  });

  test('Cursor is found by the editor it runs in', () => {
    assert.deepEqual(hookClientsToOffer(input([], { appName: 'Cursor' })), ['cursor']);
  });

  test('a client asked about once is not asked again', () => {
    assert.deepEqual(hookClientsToOffer(input(['/home/me/.claude', '/home/me/.cursor'], { asked: ['claude'] })), [
      'cursor',
    ]);
  });

  test('Windows paths keep their separators', () => {
    const found = hookClientsToOffer(
      input(['C:\\Users\\me\\.claude'], { folder: 'C:\\src\\shop', home: 'C:\\Users\\me' }),
    );
    assert.deepEqual(found, ['claude']);
  });

  test('installs with `python -m server hook install` for the folder', () => {
    assert.deepEqual(hookInstallArgs('cursor', '/work/shop'), [
      '-m',
      'server',
      'hook',
      'install',
      '--client',
      'cursor',
      '--root',
      '/work/shop',
    ]);
  });

  test('the question names every client found', () => {
    assert.match(hookOfferMessage(['claude']), /give Claude Code this project's memory/);
    assert.match(hookOfferMessage(['claude', 'cursor', 'codex']), /Claude Code, Cursor and Codex/);
  });
});
