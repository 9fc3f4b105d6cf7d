// The web console against a running stack fed by the simulator: `lockaudit
// start --demo` as a child process (lock API, tailer, reports, worker and the
// demo workload in one), Debian's chromium signing in with the demo's reader
// token. Every page shows what the stack captured — checked against the API's
// own answers, since the workload's outcomes depend on timing — and a search
// leads to a timeline and a grant's detail. Screenshots: test-artifacts/ui/stack-*.png.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { projectRoot } from '../../core/paths.js';
import type { Timeline } from '../../reports/timeline/index.js';
import type { TailerLag } from '../../reports/tailerLag/index.js';
import { openBrowser, signIn, type Browser } from '../support/browser.js';
import { waitFor } from '../support/capture.js';
import { chartLines, chartRendered, chartSeries, clickChartAt, hideTooltip } from '../support/consoleCharts.js';
import { tempDir } from '../support/env.js';

const PORT = 24091;
const base = `http://127.0.0.1:${PORT}`;

describe('console on a running stack fed by the simulator', { timeout: 240_000 }, () => {
  const tmp = tempDir('lockaudit-stack-');
  let child: ChildProcess | undefined;
  let stderr = '';
  let token = '';
  let browser: Browser;
  let page: Page;
  const api = async <T>(url: string): Promise<T> => {
    const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };

  before(async () => {
    child = spawn(process.execPath, ['bin/lockaudit.js', 'start', '--demo', '--demo-workers', '8', '--demo-rate', '8'], {
      cwd: projectRoot,
      env: { ...process.env, LOCKAUDIT_DATA_DIR: tmp.dir, LOCKAUDIT_PORT: String(PORT), LOCKAUDIT_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const tokens = path.join(tmp.dir, 'demo-tokens.json');
    await waitFor('demo tokens', () => existsSync(tokens) || undefined, 90_000, 500).catch((err: Error) => {
      throw new Error(`${err.message}; lockaudit start said:\n${stderr.slice(-4000)}`);
    });
    token = (JSON.parse(readFileSync(tokens, 'utf8')) as { investigator: string }).investigator;
    // Enough history to look at: grants on several keys, an ended one, a tailer publishing lag, the first risk register (15 s after start).
    await waitFor('captured grants', async () => {
      const page = await api<{ items: { endKind: string | null }[] }>('/v1/grants?limit=200').catch(() => ({ items: [] }));
      return page.items.filter((g) => g.endKind !== null).length >= 20 || undefined;
    }, 90_000, 1000);
    await waitFor('tailer lag samples', async () => {
      const lag = await api<TailerLag>('/v1/tailers/lag?from=' + new Date(Date.now() - 3_600_000).toISOString()).catch(() => undefined);
      return (lag?.clusters[0]?.series.some((p) => p.samples > 0) ?? false) || undefined;
    }, 60_000, 1000);
    await waitFor('the demo risk register', async () => (await fetch(`${base}/v1/reports/risk-register`, { headers: { authorization: `Bearer ${token}` } })).ok || undefined, 60_000, 1000);
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
    tmp.remove();
  });

  it('searches the captured grants and goes to a key\'s timeline and a grant\'s detail', async () => {
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
    const [start, end, lane, index] = ((drawn.grants ?? [])[0] as { value: number[] }).value as [number, number, number, number];
    await clickChartAt(page, 'timeline', [start + (end - start) / 2, lane]);
    const holder = page.locator('.detail dd[data-field="Holder"]');
    await holder.waitFor();
    const grant = timeline.grants.find((g) => Date.parse(g.grantedAt) === start && g.key === key);
    assert.ok(grant, `grant at ${new Date(start).toISOString()} in the API's answer`);
    assert.equal(index, 0);
    assert.equal(await holder.innerText(), grant.holder);
    assert.equal(await page.locator('.detail dd[data-field="Token"]').innerText(), grant.token);
    await hideTooltip(page, 'timeline');
    await browser.shot('stack-timeline');
  });

  it('plots contention percentiles over time and the hottest keys', async () => {
    await page.goto(`${base}/ui/#/contention?by=namespace`);
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

  it('shows the reconciliation page', async () => {
    await page.goto(`${base}/ui/#/reconcile`);
    await page.locator('main h1', { hasText: 'Reconciliation' }).waitFor();
    await page.locator('main .loading').waitFor({ state: 'detached' });
    await browser.shot('stack-reconciliation');
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
});
