import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { choosePython, findPython } from '../../src/python/discovery';
import type { PythonProbes } from '../../src/python/discovery';
import { which } from '../../src/python/which';

interface Machine {
  setting?: string;
  pythonExtension?: string;
  onPath?: Record<string, string>;
  privateEnv?: string;
  /** Interpreters that can import the server. */
  canRun?: string[];
}

/** Probes over a described machine, recording what was asked. */
function probes(m: Machine, asked: string[] = []): PythonProbes {
  return {
    setting: () => {
      asked.push('setting');
      return m.setting;
    },
    pythonExtension: () => {
      asked.push('pythonExtension');
      return Promise.resolve(m.pythonExtension);
    },
    which: (command) => {
      asked.push(`which ${command}`);
      return Promise.resolve(m.onPath?.[command]);
    },
    privateEnvironment: () => {
      asked.push('privateEnvironment');
      return Promise.resolve(m.privateEnv);
    },
    canRunServer: (python) => {
      asked.push(`check ${python}`);
      return Promise.resolve(m.canRun?.includes(python) ?? false);
    },
  };
}

const everything: Machine = {
  setting: '/opt/py/bin/python',
  pythonExtension: '/home/u/.venv/bin/python',
  onPath: { python3: '/usr/bin/python3', python: '/usr/bin/python' },
};

describe('python discovery order', () => {
  test('the livingMemory.python setting comes first, and nothing else is asked', async () => {
    const asked: string[] = [];
    assert.deepEqual(await findPython(probes(everything, asked)), {
      path: '/opt/py/bin/python',
      source: 'setting',
    });
    assert.deepEqual(asked, ['setting']);
  });

  test("then the Python extension's interpreter", async () => {
    const found = await findPython(probes({ ...everything, setting: '' }));
    assert.deepEqual(found, { path: '/home/u/.venv/bin/python', source: 'pythonExtension' });
  });

  test('a blank setting counts as unset', async () => {
    const found = await findPython(probes({ ...everything, setting: '   ' }));
    assert.equal(found?.source, 'pythonExtension');
  });

  test('then python3 on PATH, before python', async () => {
    const asked: string[] = [];
    const found = await findPython(probes({ onPath: everything.onPath }, asked));
    assert.deepEqual(found, { path: '/usr/bin/python3', source: 'path' });
    assert.deepEqual(asked, ['setting', 'pythonExtension', 'which python3']);
  });

  test('python when there is no python3', async () => {
    const found = await findPython(probes({ onPath: { python: '/usr/bin/python' } }));
    assert.deepEqual(found, { path: '/usr/bin/python', source: 'path' });
  });

  test('nothing when there is no Python at all', async () => {
    assert.equal(await findPython(probes({})), undefined);
  });
});

describe('choosing the Python that runs the server', () => {
  test('the found Python runs it when it can import the server', async () => {
    const asked: string[] = [];
    const choice = await choosePython(probes({ ...everything, canRun: ['/opt/py/bin/python'] }, asked));
    assert.deepEqual(choice, { kind: 'ready', python: { path: '/opt/py/bin/python', source: 'setting' } });
    assert.ok(!asked.includes('privateEnvironment'));
  });

  test('else the private environment, when it works', async () => {
    const choice = await choosePython(
      probes({ ...everything, privateEnv: '/store/server-env/bin/python', canRun: ['/store/server-env/bin/python'] }),
    );
    assert.deepEqual(choice, {
      kind: 'ready',
      python: { path: '/store/server-env/bin/python', source: 'privateEnvironment' },
      fallbackFrom: { path: '/opt/py/bin/python', source: 'setting' },
    });
  });

  test('else an install is offered, made with the found Python', async () => {
    const choice = await choosePython(probes({ ...everything, setting: undefined, privateEnv: '/broken/python' }));
    assert.deepEqual(choice, {
      kind: 'needsInstall',
      base: { path: '/home/u/.venv/bin/python', source: 'pythonExtension' },
    });
  });

  test('a working private environment is used even without any other Python', async () => {
    const choice = await choosePython(probes({ privateEnv: '/env/python', canRun: ['/env/python'] }));
    assert.deepEqual(choice, { kind: 'ready', python: { path: '/env/python', source: 'privateEnvironment' } });
  });

  test('no Python at all is said so', async () => {
    assert.deepEqual(await choosePython(probes({})), { kind: 'noPython' });
  });
});

describe('which', () => {
  test('finds the first executable on PATH, skipping non-executables and directories', async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'lm-which-'));
    const [a, b, c] = ['a', 'b', 'c'].map((d) => path.join(base, d));
    for (const dir of [a, b, c] as string[]) {
      fs.mkdirSync(dir);
    }
    fs.writeFileSync(path.join(a as string, 'python3'), 'not executable', { mode: 0o644 });
    fs.mkdirSync(path.join(b as string, 'python3'));
    fs.writeFileSync(path.join(c as string, 'python3'), '#!/bin/sh\n', { mode: 0o755 });
    const PATH = [a, b, c].join(':');
    assert.equal(await which('python3', { PATH }, 'linux'), path.join(c as string, 'python3'));
    assert.equal(await which('python9', { PATH }, 'linux'), undefined);
    assert.equal(await which('python3', {}, 'linux'), undefined);
  });

  test('on Windows tries the PATHEXT extensions', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lm-which-win-'));
    fs.writeFileSync(path.join(dir, 'python.EXE'), '');
    assert.equal(await which('python', { Path: dir, PATHEXT: '.COM;.EXE' }, 'win32'), path.join(dir, 'python.EXE'));
  });
});
