/**
 * Settings: the manifest's `livingMemory.*` settings, the protocol module's key list and the
 * server's own settings (server/settings.py) agree, and the server takes them the way the
 * extension passes them (initializationOptions, workspace/configuration per folder,
 * workspace/didChangeConfiguration).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DidChangeConfigurationNotification, DidOpenTextDocumentNotification } from 'vscode-languageserver-protocol';
import {
  didChangeConfigurationParams,
  EXTENSION_SETTING_KEYS,
  SECTION,
  SERVER_SETTING_KEYS,
  serverSettings,
} from '../../src/protocol/settings';
import { fileUri, makeRepo, PACKAGE_ROOT, startServer, tempDir } from './harness';
import type { TestServer } from './harness';
import { serverSettingDefaults } from './store';

interface Property {
  default?: unknown;
  scope?: string;
  description?: string;
  markdownDescription?: string;
}

const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  contributes: { configuration: { properties: Record<string, Property> } };
};
const properties = manifest.contributes.configuration.properties;

/** What VS Code answers for the section when the user changed nothing. */
function manifestDefaults(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, p] of Object.entries(properties)) {
    out[key.slice(SECTION.length + 1)] = p.default;
  }
  return out;
}

describe('the settings agree', () => {
  test('the manifest contributes exactly the server’s and the extension’s settings', () => {
    const expected = [...SERVER_SETTING_KEYS, ...EXTENSION_SETTING_KEYS].map((k) => `${SECTION}.${k}`).sort();
    assert.deepEqual(Object.keys(properties).sort(), expected);
  });

  test('every setting is described and scoped', () => {
    for (const [key, p] of Object.entries(properties)) {
      assert.ok(p.description ?? p.markdownDescription, key);
      assert.ok(p.scope, key);
      assert.ok('default' in p, key);
    }
  });

  test('the protocol module names every setting the server reads', () => {
    assert.deepEqual(Object.keys(serverSettingDefaults()).sort(), [...SERVER_SETTING_KEYS].sort());
  });

  test("the manifest's defaults are the server's (an empty path or object stands for the server's default)", () => {
    const server = Object.fromEntries(Object.entries(serverSettingDefaults()).filter(([, v]) => v !== null));
    const isEmpty = (v: unknown) =>
      v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0;
    // {} leaves every field at the server's default (llm: none configured)
    const objectDefault = (key: string, v: unknown) => isEmpty(v) && typeof server[key] === 'object';
    const given = Object.entries(serverSettings(manifestDefaults()));
    const manifest = Object.fromEntries(given.filter(([k, v]) => !objectDefault(k, v)));
    const emptied = new Set(given.filter(([k, v]) => objectDefault(k, v)).map(([k]) => k));
    const expected = Object.fromEntries(Object.entries(server).filter(([k]) => !emptied.has(k)));
    assert.deepEqual(manifest, expected);
  });
});

describe('the server takes the settings', () => {
  let server: TestServer;
  let alpha: string;
  let beta: string;

  before(async () => {
    const base = tempDir('settings');
    alpha = makeRepo(path.join(base, 'alpha'), { 'a.py': 'A = 1\n' });
    beta = makeRepo(path.join(base, 'beta'), { 'b.py': 'B = 1\n' });
    server = await startServer({
      folders: [alpha, beta],
      settings: { ...manifestDefaults(), dataDirectory: path.join(base, 'data'), debounceMs: 20 },
      folderSettings: { [fileUri(beta)]: { budget: 300, injectionTargets: ['agents'] } },
    });
  });

  after(async () => {
    await server.stop();
  });

  async function openAndWait(file: string) {
    const uri = fileUri(file);
    const since = server.updates.length;
    await server.connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: 'python', version: 1, text: fs.readFileSync(file, 'utf8') },
    });
    return server.nextUpdate(since, (u) => u.uri === uri);
  }

  test('the defaults are accepted without a complaint', async () => {
    const update = await openAndWait(path.join(alpha, 'a.py'));
    assert.equal(update.tokens.budget, 8000);
    assert.equal(update.injected.length, 3);
    assert.deepEqual(server.messages, []);
  });

  test('folder settings come from workspace/configuration with the folder’s scopeUri', async () => {
    const update = await openAndWait(path.join(beta, 'b.py'));
    assert.equal(update.tokens.budget, 300);
    assert.deepEqual(update.injected, [path.join(beta, '.living-memory', 'context.md')]);
  });

  test('a change is applied live after workspace/didChangeConfiguration', async () => {
    await openAndWait(path.join(alpha, 'a.py'));
    const since = server.updates.length;
    server.settings = { ...server.settings, budget: 500 };
    await server.connection.sendNotification(
      DidChangeConfigurationNotification.type,
      didChangeConfigurationParams(server.settings),
    );
    const update = await server.nextUpdate(since, (u) => u.tokens.budget === 500);
    assert.equal(update.uri, fileUri(path.join(alpha, 'a.py')));
  });

  test('a bad value is reported once, by name, and its default used', async () => {
    const since = server.updates.length;
    server.settings = { ...server.settings, budget: 5 };
    await server.connection.sendNotification(
      DidChangeConfigurationNotification.type,
      didChangeConfigurationParams(server.settings),
    );
    const update = await server.nextUpdate(since, (u) => u.tokens.budget === 8000);
    assert.equal(update.uri, fileUri(path.join(alpha, 'a.py')));
    const complaints = server.messages.filter((m) => /livingMemory.*budget/.test(m.message));
    assert.equal(complaints.length, 1);
    assert.match(complaints[0]?.message ?? '', /budget must be between 200 .*using the default/);
  });
});
