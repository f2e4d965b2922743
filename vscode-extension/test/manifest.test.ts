/**
 * The packaged extension (.vsix, made by `npm run package` before the tests): its manifest
 * contributes what the code registers — the commands of src/ids.ts (extension.ts registers
 * exactly those), the settings of src/protocol/settings.ts, the view, the activation events —
 * and it carries the bundle.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, test } from 'node:test';
import { ACTIVATION_EVENTS, CATEGORY, COMMANDS, CONFIG_SECTION, VIEW_ID } from '../src/ids';
import { MCP_PROVIDER_ID, MCP_PROVIDER_LABEL } from '../src/protocol/mcp';
import { EXTENSION_SETTING_KEYS, SERVER_SETTING_KEYS } from '../src/protocol/settings';
import { unzip } from './zip';

const PACKAGE_ROOT = path.resolve(__dirname, '..', '..');

interface Manifest {
  name: string;
  version: string;
  publisher: string;
  main: string;
  engines: { vscode: string };
  activationEvents: string[];
  contributes: {
    commands: { command: string; title: string; category: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
    views: Record<string, { id: string; name: string }[]>;
    configuration: { properties: Record<string, unknown> };
    mcpServerDefinitionProviders: { id: string; label: string }[];
  };
}

let files: Map<string, Buffer>;
let manifest: Manifest;

before(() => {
  const source = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as Manifest;
  const vsix = path.join(PACKAGE_ROOT, `${source.name}-${source.version}.vsix`);
  assert.ok(fs.existsSync(vsix), `${vsix} is missing: run npm run package first`);
  files = unzip(fs.readFileSync(vsix));
  manifest = JSON.parse((files.get('extension/package.json') ?? Buffer.from('{}')).toString('utf8')) as Manifest;
});

describe('the packaged manifest', () => {
  test('contributes exactly the commands the extension registers, titled and categorised', () => {
    const contributed = manifest.contributes.commands.map((c) => [c.command, c.title, c.category]);
    const registered = Object.values(COMMANDS).map((c) => [c.id, c.title, CATEGORY]);
    assert.deepEqual(contributed.sort(), registered.sort());
  });

  test('menus name only registered commands', () => {
    const ids = new Set<string>(Object.values(COMMANDS).map((c) => c.id));
    for (const [menu, entries] of Object.entries(manifest.contributes.menus)) {
      for (const entry of entries) {
        assert.ok(ids.has(entry.command), `${menu}: ${entry.command}`);
      }
    }
  });

  test('contributes every setting the extension reads or passes to the server', () => {
    const expected = [...SERVER_SETTING_KEYS, ...EXTENSION_SETTING_KEYS].map((k) => `${CONFIG_SECTION}.${k}`);
    assert.deepEqual(Object.keys(manifest.contributes.configuration.properties).sort(), expected.sort());
  });

  test('activates at startup (to forward diagnostics, editors and branches) and shows its view', () => {
    assert.deepEqual(manifest.activationEvents, [...ACTIVATION_EVENTS]);
    assert.deepEqual(
      manifest.contributes.views.explorer?.map((v) => [v.id, v.name]),
      [[VIEW_ID, 'Living Memory']],
    );
  });

  test('runs on VS Code 1.82 and current Cursor builds, at the server package’s version', () => {
    assert.equal(manifest.engines.vscode, '^1.82.0');
    const pyproject = fs.readFileSync(path.join(PACKAGE_ROOT, '..', 'pyproject.toml'), 'utf8');
    assert.equal(manifest.version, /^version\s*=\s*"([^"]+)"/m.exec(pyproject)?.[1]);
  });

  test('contributes the MCP server definition provider the extension registers', () => {
    assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders, [
      { id: MCP_PROVIDER_ID, label: MCP_PROVIDER_LABEL },
    ]);
  });

  test('carries the bundle it names, with every command id in it, and no node_modules', () => {
    const main = `extension/${manifest.main.replace(/^\.\//, '')}`;
    const bundle = files.get(main)?.toString('utf8');
    assert.ok(bundle, `${main} is not in the package`);
    for (const c of Object.values(COMMANDS)) {
      assert.ok(bundle.includes(c.id), c.id);
    }
    assert.ok(bundle.includes('livingMemory/contextUpdated'));
    assert.match(bundle, /require\("vscode"\)/);
    assert.doesNotMatch(bundle, /require\("vscode-languageclient/);
    assert.ok(![...files.keys()].some((name) => name.includes('node_modules/')));
    assert.ok(files.has('extension/LICENSE.txt'));
    assert.ok(files.has('extension/readme.md'));
  });
});
