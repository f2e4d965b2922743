/**
 * "Install Living Memory server" for real: discovery finds a Python that cannot run the server,
 * the install plan makes a private environment with it and pip-installs the server from a
 * local checkout (what livingMemory.serverInstallSource / LIVING_MEMORY_SERVER_SOURCE do
 * offline), discovery then picks that environment, and the server runs from it — with the
 * real embedding model. pip fetches the server's dependencies from the package index (or its
 * cache).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { choosePython } from '../../src/python/discovery';
import type { PythonProbes } from '../../src/python/discovery';
import { envPython, InstallError, installPlan, runInstall } from '../../src/python/install';
import { runProcess } from '../../src/python/process';
import { which } from '../../src/python/which';
import { importCheckCommand, parseImportCheck } from '../../src/protocol/launch';
import { eventually, fileUri, makeRepo, PACKAGE_ROOT, REPO_ROOT, startServer, tempDir, testPython } from './harness';
import type { TestServer } from './harness';

const VERSION = (JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** The server's source tree, as a user's checkout would have it (never built in the repo). */
function copySource(to: string): string {
  const skip = (name: string) => name === '__pycache__' || name.endsWith('.pyc');
  for (const item of ['pyproject.toml', 'README.md', 'server', 'storage', 'predictive']) {
    fs.cpSync(path.join(REPO_ROOT, item), path.join(to, item), {
      recursive: true,
      filter: (src) => !skip(path.basename(src)),
    });
  }
  return to;
}

async function canRun(python: string, cwd: string): Promise<ReturnType<typeof parseImportCheck>> {
  const check = importCheckCommand(python);
  const result = await runProcess(check.command, check.args, { cwd, timeoutMs: 60_000 });
  return parseImportCheck(result.code, result.stdout, result.stderr);
}

describe('installing the server into a private environment', { timeout: INSTALL_TIMEOUT_MS }, () => {
  let base: string;
  let bare: string;
  let envDir: string;
  let server: TestServer | undefined;

  /** Discovery as the extension runs it, on a PATH whose only Python lacks the server. */
  const probes = (): PythonProbes => ({
    setting: () => undefined,
    pythonExtension: () => Promise.resolve(undefined),
    which: (command) => which(command, { PATH: path.dirname(envPython(bare)) }),
    privateEnvironment: () => Promise.resolve(fs.existsSync(envPython(envDir)) ? envPython(envDir) : undefined),
    canRunServer: async (python) => (await canRun(python, base)).ok,
  });

  before(async () => {
    base = tempDir('install');
    bare = path.join(base, 'bare');
    envDir = path.join(base, 'server-env');
    const made = await runProcess(testPython(), ['-m', 'venv', '--without-pip', bare], { cwd: base });
    assert.equal(made.code, 0, made.stderr);
  });

  after(async () => {
    await server?.stop();
  });

  test('discovery finds a Python without the server and offers the install', async () => {
    const choice = await choosePython(probes());
    assert.deepEqual(choice, {
      kind: 'needsInstall',
      base: { path: path.join(path.dirname(envPython(bare)), 'python3'), source: 'path' },
    });
  });

  test('the install makes the environment; discovery then runs the server from it', async () => {
    const choice = await choosePython(probes());
    assert.ok(choice.kind === 'needsInstall');
    const plan = installPlan({
      basePython: choice.base.path,
      envDir,
      version: VERSION,
      source: copySource(fs.mkdtempSync(path.join(base, 'checkout-'))),
    });
    const steps: string[] = [];
    const lines: string[] = [];
    await runInstall(plan, runProcess, { step: (s) => steps.push(s.title), line: (l) => lines.push(l) }, { cwd: base });
    assert.deepEqual(steps, ['Creating a private Python environment', `Installing ${plan.requirement}`]);
    assert.ok(lines.some((l) => /Successfully installed .*living-memory-/.test(l)), lines.slice(-5).join('\n'));

    const check = await canRun(plan.python, base);
    assert.deepEqual(check.ok && check.version, VERSION);
    const after = await choosePython(probes());
    assert.deepEqual(after, {
      kind: 'ready',
      python: { path: plan.python, source: 'privateEnvironment' },
      fallbackFrom: choice.base,
    });
  });

  test('the installed server answers, with the real embedding model', async () => {
    const repo = makeRepo(path.join(base, 'repo'), { 'src/pay.py': 'RETRIES = 5\n' });
    server = await startServer({
      folders: [repo],
      python: envPython(envDir),
      realModel: true,
      settings: { dataDirectory: path.join(base, 'data'), injectionTargets: [], ingestOnFirstOpen: false },
    });
    const folder = fileUri(repo);
    const id = (
      await server.api.remember({ text: 'The payment service retries failed webhooks five times.', folder })
    ).id;
    const stats = await server.api.stats({ folder });
    assert.notEqual(stats.modelId, 'hashing-64');
    const found = await eventually(
      async () => {
        const r = await server?.api.search({ query: 'how often are callback deliveries attempted again', mode: 'vector', folder });
        return r?.results.some((x) => x.id === id) ? r : undefined;
      },
      60_000,
      'a semantic match',
    );
    assert.equal(found.results[0]?.id, id);
  });

  test('a failing pip is reported with its own words', async () => {
    const choice = await choosePython(probes());
    const basePython = choice.kind === 'ready' && choice.fallbackFrom ? choice.fallbackFrom.path : testPython();
    const plan = installPlan({
      basePython,
      envDir: path.join(base, 'broken-env'),
      version: VERSION,
      source: path.join(base, 'no-such-wheel-0.1.0-py3-none-any.whl'),
    });
    await assert.rejects(
      runInstall(plan, runProcess, { step: () => undefined, line: () => undefined }, { cwd: base }),
      (e: unknown) => {
        assert.ok(e instanceof InstallError);
        assert.equal(e.step.title, `Installing ${plan.requirement}`);
        assert.match(e.message, /^Installing .*no-such-wheel.* failed: ERROR: .*\(exit code 1\)$/);
        return true;
      },
    );
  });
});
