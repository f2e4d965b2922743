import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  configuredSource,
  envPython,
  failureSummary,
  InstallError,
  installPlan,
  NoInstallSource,
  requirementFor,
  runInstall,
} from '../../src/python/install';
import type { ProcessRunner } from '../../src/python/process';

describe('install plan', () => {
  test('makes a venv with the found Python, then pip-installs the wheel the user named', () => {
    const wheel = '/dl/living_memory-0.1.0-py3-none-any.whl';
    const plan = installPlan({ basePython: '/usr/bin/python3', envDir: '/store/server-env', version: '0.1.0', source: wheel, platform: 'linux' });
    assert.equal(plan.python, '/store/server-env/bin/python');
    assert.equal(plan.requirement, wheel);
    assert.deepEqual(
      plan.steps.map((s) => [s.command, ...s.args]),
      [
        ['/usr/bin/python3', '-m', 'venv', '--clear', '/store/server-env'],
        ['/store/server-env/bin/python', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', wheel],
      ],
    );
  });

  test('with no source nothing is planned: never a package name from an index', () => {
    for (const source of [undefined, '', '   ']) {
      assert.throws(
        () => installPlan({ basePython: 'py', envDir: '/e', version: '0.1.0', source, platform: 'linux' }),
        (e: unknown) => e instanceof NoInstallSource && /never installed by name/.test(e.message),
      );
    }
  });

  test('a package name or requirement as the source is refused', () => {
    for (const source of ['living-memory', 'living-memory==0.1.0', 'living-memory>=0.1', 'somepkg']) {
      assert.throws(() => requirementFor(source, '/home/u'), NoInstallSource, source);
    }
  });

  test('paths, archives and URLs the user named are installed as they are', () => {
    assert.equal(requirementFor('/src/living-memory', '/home/u'), '/src/living-memory');
    assert.equal(requirementFor('C:\\src\\living-memory', '/home/u'), 'C:\\src\\living-memory');
    assert.equal(requirementFor('./living_memory-0.1.0.tar.gz', '/home/u'), './living_memory-0.1.0.tar.gz');
    assert.equal(requirementFor('living_memory-0.1.0-py3-none-any.whl', '/home/u'), 'living_memory-0.1.0-py3-none-any.whl');
    assert.equal(requirementFor('https://example.org/lm.whl', '/home/u'), 'https://example.org/lm.whl');
    assert.equal(requirementFor('git+https://example.org/lm.git', '/home/u'), 'git+https://example.org/lm.git');
  });

  test('the venv interpreter on Windows', () => {
    assert.equal(envPython('C:\\store\\server-env', 'win32'), 'C:\\store\\server-env\\Scripts\\python.exe');
  });

  test('the setting wins over LIVING_MEMORY_SERVER_SOURCE; blanks are unset', () => {
    assert.equal(configuredSource('/a.whl', { LIVING_MEMORY_SERVER_SOURCE: '/b.whl' }), '/a.whl');
    assert.equal(configuredSource('  ', { LIVING_MEMORY_SERVER_SOURCE: '/b.whl' }), '/b.whl');
    assert.equal(configuredSource(undefined, {}), undefined);
    assert.equal(configuredSource('', { LIVING_MEMORY_SERVER_SOURCE: ' ' }), undefined);
  });

  test('a leading ~ is the home directory', () => {
    assert.equal(requirementFor('~/wheels/lm.whl', '/home/u'), '/home/u/wheels/lm.whl');
  });
});

describe('running the install', () => {
  test("pip's ERROR lines say why it failed", () => {
    const summary = failureSummary({
      code: 1,
      stdout: 'Collecting living-memory==0.1.0\n',
      stderr: 'ERROR: Could not find a version that satisfies the requirement living-memory==0.1.0\nERROR: No matching distribution found for living-memory==0.1.0\n',
    });
    assert.equal(
      summary,
      'ERROR: Could not find a version that satisfies the requirement living-memory==0.1.0 ERROR: No matching distribution found for living-memory==0.1.0 (exit code 1)',
    );
    assert.equal(failureSummary({ code: 2, stdout: '', stderr: 'a\nb\nc\nd\ne\n' }), 'b c d e (exit code 2)');
    assert.equal(failureSummary({ code: null, stdout: '', stderr: '', error: 'py not found' }), 'py not found');
  });

  test('steps run in order and the first failure stops the rest', async () => {
    const ran: string[] = [];
    const runner: ProcessRunner = (command, _args, options) => {
      ran.push(command);
      options?.onLine?.(`line from ${command}`, 'stdout');
      return Promise.resolve(
        command === 'py' ? { code: 0, stdout: '', stderr: '' } : { code: 1, stdout: '', stderr: 'ERROR: no network' },
      );
    };
    const lines: string[] = [];
    const steps: string[] = [];
    const plan = installPlan({ basePython: 'py', envDir: '/e', version: '0.1.0', source: '/w/lm.whl', platform: 'linux' });
    await assert.rejects(
      runInstall(plan, runner, { step: (s) => steps.push(s.title), line: (l) => lines.push(l) }),
      (e: unknown) => e instanceof InstallError && /^Installing \/w\/lm\.whl failed: ERROR: no network \(exit code 1\)$/.test(e.message),
    );
    assert.deepEqual(ran, ['py', '/e/bin/python']);
    assert.equal(steps.length, 2);
    assert.deepEqual(lines, ['line from py', 'line from /e/bin/python']);
  });
});
