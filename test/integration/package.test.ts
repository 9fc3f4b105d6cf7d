// The package as a user installs it (issue 43 item 7): `npm pack` of this checkout (its dist/ built by the suite),
// installed into a scratch directory outside the checkout from the npm cache, and the installed
// `lockaudit start --demo` serves: /readyz answers 200 and grant history fills, so every role loaded what it needs
// from the package (a packed build once missed the tailer's SQL files and failed as the tailer loaded).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { projectRoot } from '../../core/paths.js';
import { waitFor } from '../support/capture.js';
import { tempDir } from '../support/env.js';

const run = promisify(execFile);
const PORT = Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24000) + 96;
const base = `http://127.0.0.1:${PORT}`;

describe('the npm package, installed elsewhere', { timeout: 600_000 }, () => {
  const tmp = tempDir('lockaudit-pack-');
  let child: ChildProcess | undefined;
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    tmp.remove();
  });

  it('packs, installs and starts: /readyz 200 and captured grants', async () => {
    // The npm on PATH (scripts/node.sh puts Node 24 first on PATH, which npm then runs on).
    const npm = 'npm';
    await run(npm, ['pack', '--ignore-scripts', '--pack-destination', tmp.dir], { cwd: projectRoot, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
    const tarball = readdirSync(tmp.dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    const app = path.join(tmp.dir, 'app');
    await run('mkdir', ['-p', app]);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true }));
    await run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(tmp.dir, tarball)], {
      cwd: app,
      timeout: 480_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    const bin = path.join(app, 'node_modules', 'lockaudit', 'bin', 'lockaudit.js');
    assert.ok(existsSync(bin), 'the installed bin');
    const data = path.join(tmp.dir, 'data');
    let stderr = '';
    child = spawn(process.execPath, [bin, 'start', '--demo', '--demo-workers', '2', '--demo-rate', '4', '--log-format', 'json'], {
      cwd: app,
      env: { ...process.env, LOCKAUDIT_DATA_DIR: data, LOCKAUDIT_PORT: String(PORT), LOCKAUDIT_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    await waitFor(
      '/readyz 200 from the installed package',
      async () => ((await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
      120_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; stderr: ${stderr.slice(-3000)}`);
    });
    const tokensFile = path.join(data, 'demo-tokens.json');
    await waitFor('demo tokens', async () => (existsSync(tokensFile) ? true : undefined), 120_000, 500);
    const { investigator } = JSON.parse(readFileSync(tokensFile, 'utf8')) as { investigator: string };
    const items = await waitFor(
      'grants captured by the installed tailer',
      async () => {
        const r = await fetch(`${base}/v1/grants?limit=5`, { headers: { authorization: `Bearer ${investigator}` } });
        const body = (await r.json()) as { items?: unknown[] };
        return body.items && body.items.length > 0 ? body.items : undefined;
      },
      120_000,
      500,
    );
    assert.ok(items.length > 0);
    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr.slice(-3000));
  });
});
