// The web console against a running stack fed by the simulator: `lockaudit
// start --demo` as a child process (lock API, tailer, reports, worker and the
// demo workload in one) on a three-member etcd of its own, plus `lockaudit
// simulate --outage` against it: two members stop for a while, advisory
// classes grant without quorum (token 0, spooled) and the tailer ships those
// grants once the quorum returns. Debian's chromium signs in with the demo's
// reader token. Every page shows what the stack captured — checked against the
// API's own answers, since the workload's outcomes depend on timing — a search
// leads to a timeline and a grant's detail, and reconciling an unprotected
// grant changes its row. Screenshots: test-artifacts/ui/stack-*.png.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { projectRoot } from '../../core/paths.js';
import type { Timeline } from '../../reports/timeline/index.js';
import type { TailerLag } from '../../reports/tailerLag/index.js';
import type { UnprotectedReport } from '../../reports/unprotected/index.js';
import { openBrowser, signIn, type Browser } from '../support/browser.js';
import { waitFor } from '../support/capture.js';
import { chartLines, chartRendered, chartSeries, clickBar, hideTooltip } from '../support/consoleCharts.js';
import { tempDir, testConfig } from '../support/env.js';

const PORT = 24091;
const ETCD_PORT_BASE = 27200; // the stack's own three etcd members: clients 27200–27202, peers 27210–27212
const base = `http://127.0.0.1:${PORT}`;
const run = promisify(execFile);

describe('console on a running stack fed by the simulator', { timeout: 240_000 }, () => {
  const tmp = tempDir('lockaudit-stack-');
  let child: ChildProcess | undefined;
  let stackEnv: NodeJS.ProcessEnv | undefined;
  let stderr = '';
  let token = '';
  let operatorToken = ''; // reconciling is a lock-operator's job
  let browser: Browser;
  let page: Page;
  const api = async <T>(url: string): Promise<T> => {
    const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };

  before(async () => {
    // Redis and MinIO are the suite's shared ones; etcd is the stack's own, so stopping two members hurts nobody else.
    const shared = testConfig();
    const env = {
      ...process.env,
      LOCKAUDIT_DATA_DIR: tmp.dir,
      LOCKAUDIT_LOCAL_PORT_BASE: String(ETCD_PORT_BASE),
      LOCKAUDIT_LOCAL_ETCD_MEMBERS: '3',
      LOCKAUDIT_REDIS_URL: shared.redis.url,
      LOCKAUDIT_S3_ENDPOINT: shared.s3.endpoint,
      LOCKAUDIT_S3_ACCESS_KEY: shared.s3.accessKey,
      LOCKAUDIT_S3_SECRET_KEY: shared.s3.secretKey,
      LOCKAUDIT_PORT: String(PORT),
      LOCKAUDIT_LOG_LEVEL: 'warn',
    };
    stackEnv = env;
    await run(process.execPath, ['bin/lockaudit.js', 'services', 'up', '--only', 'etcd'], { cwd: projectRoot, env });
    child = spawn(process.execPath, ['bin/lockaudit.js', 'start', '--demo', '--demo-workers', '8', '--demo-rate', '8'], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const tokens = path.join(tmp.dir, 'demo-tokens.json');
    await waitFor('demo tokens', () => existsSync(tokens) || undefined, 90_000, 500).catch((err: Error) => {
      throw new Error(`${err.message}; lockaudit start said:\n${stderr.slice(-4000)}`);
    });
    const demo = JSON.parse(readFileSync(tokens, 'utf8')) as { investigator: string; operators: string[] };
    token = demo.investigator;
    operatorToken = demo.operators[0] ?? '';
    // More load and an outage in its middle third, through the demo's own fleet tokens.
    const sim = await run(
      process.execPath,
      ['bin/lockaudit.js', 'simulate', '--url', base, '--tokens', tokens, '--workers', '8', '--rate', '10', '--duration', '24', '--outage', '--seed', '7'],
      { cwd: projectRoot, env },
    );
    assert.match(sim.stderr, /outage over/);
    // Enough history to look at: ended grants, unprotected grants shipped after the outage, a tailer publishing lag, the first risk register.
    await waitFor(
      'captured grants',
      async () => {
        const page = await api<{ items: { endKind: string | null }[] }>('/v1/grants?limit=200').catch(() => ({ items: [] }));
        return page.items.filter((g) => g.endKind !== null).length >= 20 || undefined;
      },
      90_000,
      1000,
    );
    await waitFor(
      'unprotected grants shipped after the outage',
      async () => {
        const report = await api<UnprotectedReport>('/v1/reports/unprotected').catch(() => undefined);
        return (report?.items.length ?? 0) > 0 || undefined;
      },
      90_000,
      1000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; simulate said:\n${sim.stderr.slice(-2000)}`);
    });
    await waitFor(
      'tailer lag samples',
      async () => {
        const lag = await api<TailerLag>('/v1/tailers/lag?from=' + new Date(Date.now() - 3_600_000).toISOString()).catch(() => undefined);
        return (lag?.clusters[0]?.series.some((p) => p.samples > 0) ?? false) || undefined;
      },
      60_000,
      1000,
    );
    await waitFor(
      'the demo risk register',
      async () => (await fetch(`${base}/v1/reports/risk-register`, { headers: { authorization: `Bearer ${token}` } })).ok || undefined,
      60_000,
      1000,
    );
    browser = await openBrowser();
    page = browser.page;
    await signIn(page, base, token);
  });

  afterEach(() => {
    assert.deepEqual(browser.takeErrors(), [], 'the browser logged errors');
  });

  after(async () => {
    await browser?.close();
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    // The stack's etcd members, stopped by the pid files `services up` wrote.
    if (stackEnv) await run(process.execPath, ['bin/lockaudit.js', 'services', 'down'], { cwd: projectRoot, env: stackEnv });
    tmp.remove();
  });

  it("searches the captured grants and goes to a key's timeline and a grant's detail", async () => {
    await page.goto(`${base}/ui/#/grants?namespace=payments`);
    const rows = page.locator('table.grants tbody tr');
    await rows.first().waitFor();
    assert.ok((await rows.count()) > 0);
    await browser.shot('stack-grants');
    const key = await rows.first().locator('a').first().innerText();
    assert.match(key, /^payments\//);
    await rows.first().locator('a').first().click();
    await page.locator('nav a.active', { hasText: 'Key timeline' }).waitFor();
    await chartRendered(page, 'timeline');
    // The chart holds what the API says this key had (the page asked for the same window: none given).
    const drawn = await chartSeries(page, 'timeline');
    const mode = await page.locator('.timeline').getAttribute('data-mode');
    assert.equal(mode, 'grants');
    const timeline = await api<Timeline>(`/v1/reports/timeline?key=${encodeURIComponent(key)}`);
    assert.ok((drawn.grants ?? []).length >= 1);
    assert.ok((drawn.grants ?? []).length <= timeline.grants.length, 'the page drew no grant the API does not know');
    // Click the first bar the page drew: [start, end, lane, index] of its data.
    const [start, end, lane] = ((drawn.grants ?? [])[0] as { value: number[] }).value as [number, number, number];
    await clickBar(page, 'timeline', [start, end, lane]);
    const holder = page.locator('.detail dd[data-field="Holder"]');
    await holder.waitFor();
    const grant = timeline.grants.find((g) => Date.parse(g.grantedAt) === start && g.key === key);
    assert.ok(grant, `grant at ${new Date(start).toISOString()} in the API's answer`);
    assert.equal(await holder.innerText(), grant.holder);
    assert.equal(await page.locator('.detail dd[data-field="Token"]').innerText(), grant.token);
    await hideTooltip(page, 'timeline');
    await browser.shot('stack-timeline');
  });

  it('plots contention percentiles over time and the hottest keys', async () => {
    await page.goto(`${base}/ui/#/contention?by=namespace&span=1%20h`);
    for (const name of ['contention-wait', 'contention-hold', 'contention-volume', 'contention-hot']) await chartRendered(page, name);
    const waits = await chartLines(page, 'contention-wait');
    assert.ok((waits['wait p50'] ?? []).length >= 1, 'the wait p50 line has points');
    assert.ok((await page.locator('table.hot tbody tr').count()) >= 1);
    assert.match(await page.locator('table.groups').innerText(), /payments/);
    await browser.shot('stack-contention');
  });

  it('shows the risk register the demo built', async () => {
    await page.goto(`${base}/ui/#/risk`);
    await page.locator('table.register tbody tr').first().waitFor();
    assert.ok((await page.locator('table.register tbody tr').count()) >= 1);
    await browser.shot('stack-risk-register');
  });

  it('shows the tailer leading, its checkpoint and its lag over time', async () => {
    await page.goto(`${base}/ui/#/tailers?span=1%20h`);
    const row = page.locator('table.tailers tbody tr').first();
    await row.waitFor();
    assert.doesNotMatch(await row.innerText(), /no leader/);
    await chartRendered(page, 'tailer-lag');
    const lag = await chartLines(page, 'tailer-lag');
    const seconds = Object.entries(lag).find(([name]) => name.endsWith('lag (s)'))?.[1] ?? [];
    assert.ok(seconds.length >= 1, `lag points: ${JSON.stringify(lag)}`);
    assert.ok(seconds.every((s) => s >= 0));
    await browser.shot('stack-tailers');
  });
  it('lists the unprotected grants of the outage, and an operator reconciling one changes its row', async () => {
    await page.click('nav .signout');
    await signIn(page, base, operatorToken);
    const rows = page.locator('table.unprotected tbody tr');
    // The demo's spool shipper may still be shipping grants of the outage: the page and the API agree on a
    // settled list (the same count read twice around the page load), never on whatever each caught mid-ship.
    const report = await waitFor(
      'the console and the API list the same unprotected grants',
      async () => {
        const before = await api<UnprotectedReport>('/v1/reports/unprotected');
        await page.goto(`${base}/ui/#/reconcile`);
        await page.reload();
        await rows.first().waitFor();
        const shown = await rows.count();
        const settled = await api<UnprotectedReport>('/v1/reports/unprotected');
        return shown === settled.items.length && before.items.length === settled.items.length ? settled : undefined;
      },
      60_000,
      1_000,
    );
    assert.equal(await rows.count(), report.items.length);
    const first = report.items[0];
    assert.ok(first);
    const row = page.locator(`table.unprotected tbody tr[data-id="${first.id}"]`);
    assert.match(await row.innerText(), /not reconciled/);
    await browser.shot('stack-reconciliation');
    await row.locator('input[name=note]').fill('outage drill: checked the writes, nothing to repair');
    await row.locator('button', { hasText: 'Reconcile' }).click();
    await row.locator('.reconciled').waitFor();
    assert.match(await row.innerText(), /outage drill: checked the writes/);
    const after = await api<UnprotectedReport>('/v1/reports/unprotected');
    assert.equal(after.items.find((i) => i.id === first.id)?.reconciliation?.note, 'outage drill: checked the writes, nothing to repair');
    await browser.shot('stack-reconciliation-after');
  });
});
