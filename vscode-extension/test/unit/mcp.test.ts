import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mcpServerDefinition } from '../../src/protocol/mcp';

const base = { python: '/venv/bin/python', folder: { name: 'shop', path: '/work/shop' }, version: '0.1.0' };

describe('MCP server definition', () => {
  test('runs `python -m server mcp` for the folder, with the extension version', () => {
    const d = mcpServerDefinition(base);
    assert.equal(d.command, '/venv/bin/python');
    assert.deepEqual(d.args, ['-m', 'server', 'mcp', '--root', '/work/shop']);
    assert.equal(d.label, 'Living Memory');
    assert.equal(d.version, '0.1.0');
    assert.deepEqual(d.env, {});
  });

  test('uses the data and model folders the language server uses (relative to the folder)', () => {
    const d = mcpServerDefinition({ ...base, dataDirectory: '.memory', modelDirectory: '/models/minilm' });
    assert.deepEqual(d.env, {
      LIVING_MEMORY_DATA_DIR: '/work/shop/.memory',
      LIVING_MEMORY_MODEL_DIR: '/models/minilm',
    });
  });

  test('blank settings fall back to the defaults', () => {
    assert.deepEqual(mcpServerDefinition({ ...base, dataDirectory: '  ', modelDirectory: '' }).env, {});
  });

  test('a multi-root workspace names the folder in the label', () => {
    assert.equal(mcpServerDefinition({ ...base, multiRoot: true }).label, 'Living Memory (shop)');
  });

  test('Windows folders keep their separators', () => {
    const d = mcpServerDefinition({ ...base, folder: { name: 'w', path: 'C:\\src\\w' }, dataDirectory: 'mem' });
    assert.equal(d.env.LIVING_MEMORY_DATA_DIR, 'C:\\src\\w\\mem');
  });
});
