import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  configuredSource,
  envPython,
  failureSummary,
  InstallError,
  installPlan,
  requirementFor,
  runInstall,
} from '../../src/python/install';
import type { ProcessRunner } from '../../src/python/process';

describe('install plan', () => {
  test('makes a venv with the found Python, then pip-installs the package of our version', () => {
    const plan = installPlan({ basePython: '/usr/bin/python3', envDir: '/store/server-env', version: '0.1.0', platform: 'linux' });
    assert.equal(plan.python, '/store/server-env/bin/python');
    assert.equal(plan.requirement, 'living-memory==0.1.0');
    assert.deepEqual(
      plan.steps.map((s) => [s.command, ...s.args]),
      [
        ['/usr/bin/python3', '-m', 'venv', '--clear', '/store/server-env'],
        ['/store/server-env/bin/python', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', 'living-memory==0.1.0'],
      ],
    );
  });

  test('installs a configured wheel or checkout instead', () => {
    const plan = installPlan({ basePython: 'py', envDir: '/e', version: '0.1.0', source: '/dl/living_memory-0.1.0-py3-none-any.whl', platform: 'linux' });
    assert.equal(plan.requirement, '/dl/living_memory-0.1.0-py3-none-any.whl');
    assert.equal(plan.steps[1]?.args.at(-1), '/dl/living_memory-0.1.0-py3-none-any.whl');
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
    assert.equal(requirementFor('~/wheels/lm.whl', '0.1.0', '/home/u'), '/home/u/wheels/lm.whl');
    assert.equal(requirementFor('living-memory>=0.1', '0.1.0', '/home/u'), 'living-memory>=0.1');
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
    const plan = installPlan({ basePython: 'py', envDir: '/e', version: '0.1.0', platform: 'linux' });
    await assert.rejects(
      runInstall(plan, runner, { step: (s) => steps.push(s.title), line: (l) => lines.push(l) }),
      (e: unknown) => e instanceof InstallError && /^Installing living-memory==0\.1\.0 failed: ERROR: no network \(exit code 1\)$/.test(e.message),
    );
    assert.deepEqual(ran, ['py', '/e/bin/python']);
    assert.equal(steps.length, 2);
    assert.deepEqual(lines, ['line from py', 'line from /e/bin/python']);
  });
});
