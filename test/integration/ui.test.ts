// The web console (issue 7) in a real browser: Debian's chromium driven by
// playwright-core against the API on a random port, with known fixture grants
// in an embedded ClickHouse. Every page shows its content; search → timeline →
// grant detail; the reconcile action changes the row. Any console error in the
// browser fails the test. Screenshots go to test-artifacts/ui/.
// scripts/test.sh builds the console from the current source first.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { buildApp, type App } from '../../api/app.js';
import { HealthState } from '../../platform/health.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { quarantineRoutes } from '../../api/routes/quarantine.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { stateRoutes } from '../../api/routes/state.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { uiRoutes } from '../../api/routes/ui.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { runRegister } from '../../reports/riskRegister/index.js';
import { dateInZone } from '../../reports/riskRegister/status.js';
import type { GrantRow } from '../../tailer/types.js';
import { chartLines, chartRendered, chartSeries, clickChartAt, hideTooltip } from '../support/consoleCharts.js';
import { addDays, advisoryClass, classEvent, grantRows, tokenOf, type GrantSpec } from '../support/grants.js';
import { openBrowser, signIn, type Browser } from '../support/browser.js';
import { tempStore, testConfig } from '../support/env.js';

const NOW = Date.now();
const T0 = Math.floor(NOW / 60_000) * 60_000 - 3_600_000;
const DAY = 86_400_000;
const BUSY_KEY = 'hot/k-1';
const BUSY_GRANTS = 2500;

const G: Record<string, GrantSpec> = {
  g1: { key: 'pay/acct-1', class: 'ledger', holder: 'h-a', rev: 101, at: T0, waitMs: 10, end: { kind: 'release', at: T0 + 1000, rev: 105 } },
  g2: { key: 'pay/acct-1', class: 'ledger', holder: 'h-b', rev: 110, at: T0 + 1500, waitMs: 30, end: { kind: 'expiry', at: T0 + 5500, rev: 115 } },
  g3: { key: 'pay/acct-1', class: 'ledger', holder: 'h-a', rev: 120, at: T0 + 6000, waitMs: 50, end: { kind: 'force', at: T0 + 8000, rev: 125 } },
  g4: { key: 'pay/acct-1', class: 'ledger', holder: 'h-c', rev: 130, at: T0 + 9000, waitMs: 70 },
  g5: { key: 'pay/acct-2', class: 'ledger', holder: 'h-b', rev: 102, at: T0 + 100, waitMs: 20, end: { kind: 'release', at: T0 + 600, rev: 104 } },
  g7: { key: 'cat/sku-1', class: 'cache', holder: 'h-d', rev: 103, at: T0 + 200, waitMs: 0, end: { kind: 'session-close', at: T0 + 2200, rev: 106 } },
  g8: { key: 'cat/sku-1', class: 'cache', holder: 'h-e', rev: 0, spool: 'n1:000001', at: T0 + 2000, end: { kind: 'release', at: T0 + 3000, rev: 0 } },
  g9: { key: 'cat/sku-1', class: 'cache', holder: 'h-d', rev: 150, at: T0 + 2500, waitMs: 5, end: { kind: 'expiry', at: T0 + 4500, rev: 151 } },
  g11: { key: 'cat/sku-2', class: 'cache', holder: 'h-e', rev: 0, spool: 'n1:000002', at: T0 + 50_000 },
  // Written around the lock API (issue 11, defect 7): a hold put straight into etcd, and an API hold deleted by hand.
  g12: { key: 'ops/door-1', class: 'ops', holder: 'etcdctl', rev: 160, at: T0 + 1000, origin: 'foreign', end: { kind: 'release', at: T0 + 3000, rev: 161 } },
  g13: { key: 'ops/door-1', class: 'ops', holder: 'h-f', rev: 170, at: T0 + 5000, end: { kind: 'deleted', at: T0 + 8000, rev: 171 } },
};

/** Waits until the grants table shows exactly `n` rows, every one of them of `key`. */
async function grantRowsOf(page: Page, key: string, n: number): Promise<void> {
  await page.waitForFunction(
    ([k, count]) => {
      const rows = [...document.querySelectorAll('table.grants tbody tr')];
      return rows.length === count && rows.every((r) => (r as HTMLElement).innerText.includes(k as string));
    },
    [key, n] as const,
  );
}

describe('web console', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let app: App;
  let base: string;
  let browser: Browser;
  let page: Page;
  let adminToken: string;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    await store.insert(
      'grants',
      Object.values(G).map((s) => grantRows(s).open),
    );
    await store.insert(
      'grants',
      Object.values(G)
        .map((s) => grantRows(s).closed)
        .filter((r): r is GrantRow => r !== undefined),
    );
    const today = dateInZone(NOW, 'UTC');
    await store.insert('events', [
      classEvent('cache', advisoryClass('cache', 'cat', addDays(today, 90), 'risk@corp'), 10, NOW - 50 * DAY),
      classEvent('flags', advisoryClass('flags', 'cfg', addDays(today, 10)), 11, NOW - 50 * DAY),
      classEvent('report-gen', advisoryClass('report-gen', 'rep', addDays(today, -5)), 13, NOW - 49 * DAY),
      // The last event captured before the gap (revisions 200–250) and the first after it: the gap's wall-clock span.
      { ...classEvent('gap-edge', null, 199, T0 + 20_000), key: '/sys/clock', event_type: 'clock', op: 'put' },
      { ...classEvent('gap-edge', null, 251, T0 + 35_000), key: '/sys/clock', event_type: 'clock', op: 'put' },
    ]);
    // The captured changes of pay/ for the keyspace page (revisions as in G: g5 101–104 … g2 from 110).
    const hold = (key: string, holder: string, rev: number, kind: 'grant' | 'release', grantRev = rev) => ({
      ...classEvent('x', null, rev, T0 + rev),
      key: `/l/${key}`,
      event_type: kind,
      op: kind === 'grant' ? 'put' : 'delete',
      namespace: 'pay',
      lock_path: key.slice(4),
      class: 'ledger',
      holder,
      session: '7',
      token: String(grantRev),
      epoch: 0,
      grant_revision: String(grantRev),
    });
    await store.insert('events', [
      hold('pay/acct-1', 'h-a', 101, 'grant'),
      hold('pay/acct-2', 'h-b', 102, 'grant'),
      hold('pay/acct-2', 'h-b', 104, 'release', 102),
      hold('pay/acct-1', 'h-a', 105, 'release', 101),
      hold('pay/acct-1', 'h-b', 110, 'grant'),
    ]);
    // A busy key: 2 500 grants, one a second from T0, each held 500 ms — too many to draw one by one.
    const busy = Array.from({ length: BUSY_GRANTS }, (_, i): GrantSpec => ({
      key: BUSY_KEY,
      class: 'ledger',
      holder: `h-${i % 4}`,
      rev: 1000 + i,
      at: T0 + i * 1000,
      end: { kind: 'release', at: T0 + i * 1000 + 500, rev: 5000 + i },
    }));
    await store.insert(
      'grants',
      busy.map((s) => grantRows(s).open),
    );
    await store.insert(
      'grants',
      busy.map((s) => grantRows(s).closed).filter((r): r is GrantRow => r !== undefined),
    );
    await store.insert('checkpoints', [{ cluster: 'c1', revision: '500', leader: 'replica-a' }]);
    await store.insert('tailer_status', [
      {
        cluster: 'c1',
        cluster_id: 'cafe01',
        leader: 'replica-a',
        checkpoint: '500',
        head_revision: '520',
        compact_revision: '180',
        lag_revisions: '20',
        lag_seconds: 1.5,
        updated_at: NOW,
      },
    ]);
    await store.insert('gaps', [{ cluster: 'c1', from_revision: '200', to_revision: '250', detected_at: NOW - DAY, reason: 'compacted before capture' }]);

    const config = testConfig({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '100000' });
    const ctx = {
      config,
      logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
      store,
      verifier: new ApiTokenVerifier(store),
      health: new HealthState(),
      metrics: createMetricsRegistry(),
    };
    app = await buildApp(ctx, [tailerRoutes, quarantineRoutes, grantRoutes, reportRoutes, stateRoutes, uiRoutes]);
    adminToken = (await createApiToken(store, 'root@corp', ['admin'])).token;
    const run = await app.inject({
      method: 'POST',
      url: '/v1/reports/risk-register/run',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      payload: '{}',
    });
    assert.equal(run.statusCode, 201, run.body);
    // An earlier night's register, to look back at.
    await runRegister(
      { store, limits: config.reports },
      { runId: 'night-before', asOfMs: NOW - 2 * DAY, timeZone: 'UTC', trigger: 'schedule', requestedBy: 'scheduler' },
    );
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

    browser = await openBrowser();
    page = browser.page;
  });

  afterEach(() => {
    assert.deepEqual(browser.takeErrors(), [], 'the browser logged errors');
  });

  after(async () => {
    await browser?.close();
    await app?.close();
    await closeStore?.();
  });

  const shot = (name: string) => browser.shot(name);

  it('serves the console at /ui and signs in with an API token kept in sessionStorage', async () => {
    const res = await fetch(`${base}/ui`, { redirect: 'manual' });
    assert.equal(res.status, 302);
    // The bundle (ECharts is most of it) travels compressed when the browser accepts it.
    const html = await (await fetch(`${base}/ui/`)).text();
    const bundle = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(bundle, html);
    const js = await fetch(`${base}${bundle}`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(js.status, 200);
    assert.equal(js.headers.get('content-encoding'), 'gzip');
    await page.goto(`${base}/ui/`);
    await page.locator('form.signin').waitFor();
    await shot('signin');
    await page.fill('input[name=token]', adminToken);
    await page.click('form.signin button');
    await page.locator('nav a.active', { hasText: 'Grants' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('lockaudit.token')), adminToken);
  });

  it('searches grants by key, pages them and downloads the CSV', async () => {
    await page.fill('input[name=key]', 'pay/acct-1');
    await page.fill('input[name=limit]', '3');
    await page.click('form.filters button[type=submit]');
    // The unfiltered first page may still be on screen when the search is sent, and the page is emptied while the
    // filtered one loads: wait for the filtered result itself, not for any third row.
    await grantRowsOf(page, 'pay/acct-1', 3);
    assert.equal(await page.locator('table.grants tbody tr').count(), 3);
    // Newest first, as audit logs open: the grant still held, then the older ones.
    const firstRow = await page.locator('table.grants tbody tr').first().innerText();
    assert.match(firstRow, /h-c[\s\S]*held/);
    assert.match(firstRow, new RegExp(tokenOf(G.g4 as GrantSpec)));
    await shot('grants');
    await page.click('a.next');
    await page.waitForFunction(() => document.querySelectorAll('table.grants tbody tr').length === 1);
    assert.match(await page.locator('table.grants tbody tr').first().innerText(), new RegExp(`h-a[\\s\\S]*${tokenOf(G.g1 as GrantSpec)}`));
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('text=Download CSV')]);
    assert.equal(download.suggestedFilename(), 'grants.csv');
    const csv = readFileSync(await download.path(), 'utf8');
    assert.match(csv, /pay\/acct-1/);
    assert.match(csv, /h-a/);
    // Oldest first on request: the first grant heads the page.
    await page.selectOption('select[name=order]', 'asc');
    await page.click('form.filters button[type=submit]');
    await page.waitForFunction((token) => document.querySelector('table.grants tbody tr')?.textContent?.includes(token) ?? false, tokenOf(G.g1 as GrantSpec));
    assert.match(await page.locator('table.grants tbody tr').first().innerText(), /h-a/);
    await page.click('a.next'); // the order carries over to the next page: the held grant last
    await page.waitForFunction(() => document.querySelectorAll('table.grants tbody tr').length === 1);
    assert.match(await page.locator('table.grants tbody tr').first().innerText(), /h-c[\s\S]*held/);
  });

  it("goes from a search result to the key timeline and a grant's detail", async () => {
    await page.click('a:has-text("First page")');
    await grantRowsOf(page, 'pay/acct-1', 3);
    await page.locator('table.grants tbody tr').first().locator('a', { hasText: 'pay/acct-1' }).click();
    await page.locator('nav a.active', { hasText: 'Key timeline' }).waitFor();
    await chartRendered(page, 'timeline');
    const drawn = await chartSeries(page, 'timeline');
    assert.deepEqual(Object.fromEntries(Object.entries(drawn).map(([k, v]) => [k, v.length])), { grants: 4, expiry: 1, 'force-release': 1 }); // g2 expired, g3 was force-released
    assert.equal(await page.locator('.timeline .gaps li').count(), 1);
    assert.match(await page.locator('.timeline .gaps li').innerText(), /c1: revisions 200–250/);
    // Click the middle of g2's bar (lane 0: the key's only lane).
    const g2 = G.g2 as GrantSpec;
    await clickChartAt(page, 'timeline', [g2.at + ((g2.end?.at ?? g2.at) - g2.at) / 2, 0]);
    const detail = page.locator('.detail');
    await detail.locator('dd[data-field="Holder"]').waitFor();
    assert.equal(await detail.locator('dd[data-field="Holder"]').innerText(), 'h-b');
    assert.equal(await detail.locator('dd[data-field="Token"]').innerText(), tokenOf(G.g2 as GrantSpec));
    assert.equal(await detail.locator('dd[data-field="Waited"]').innerText(), '30 ms');
    assert.equal(await detail.locator('dd[data-field="Ended by"]').innerText(), 'expiry');
    await hideTooltip(page, 'timeline'); // not over the screenshot
    await shot('timeline');
  });

  it("marks a foreign grant and a hold deleted by hand on the key timeline, and says so in the grant's detail", async () => {
    await page.goto(
      `${base}/ui/#/timeline?${new URLSearchParams({ key: 'ops/door-1', from: new Date(T0).toISOString(), to: new Date(T0 + 10_000).toISOString() })}`,
    );
    await chartRendered(page, 'timeline');
    const drawn = await chartSeries(page, 'timeline');
    assert.deepEqual(Object.fromEntries(Object.entries(drawn).map(([k, v]) => [k, v.length])), {
      grants: 2,
      expiry: 0,
      'force-release': 0,
      deleted: 1,
      foreign: 1,
    });
    assert.deepEqual(
      (drawn.foreign as Array<{ value: number[] }>).map((d) => d.value),
      [[T0 + 1000, 0]],
      "at the foreign grant's start",
    );
    assert.deepEqual(
      (drawn.deleted as Array<{ value: number[] }>).map((d) => d.value),
      [[T0 + 8000, 0]],
      "at the deleted hold's end",
    );
    assert.match(await page.locator('.timeline').innerText(), /■ deleted by hand; ● foreign grant/);
    await clickChartAt(page, 'timeline', [T0 + 2000, 0]);
    const detail = page.locator('.detail');
    await detail.locator('dd[data-field="Origin"]').waitFor();
    assert.match(await detail.locator('dd[data-field="Origin"]').innerText(), /^foreign/);
    await clickChartAt(page, 'timeline', [T0 + 6500, 0]);
    await detail.locator('dd[data-field="Holder"]', { hasText: 'h-f' }).waitFor();
    assert.equal(await detail.locator('dd[data-field="Ended by"]').innerText(), 'deleted');
    assert.equal(await detail.locator('dd[data-field="Origin"]').innerText(), 'lock API');
    await hideTooltip(page, 'timeline');
    await shot('timeline-foreign-deleted');
  });

  it('draws a busy key as buckets aggregated by the API, and a click on a bucket zooms into its grants', async () => {
    const from = new Date(T0).toISOString();
    const to = new Date(T0 + 3_000_000).toISOString();
    await page.goto(`${base}/ui/#/timeline?${new URLSearchParams({ key: BUSY_KEY, from, to })}`);
    await chartRendered(page, 'timeline');
    assert.equal(await page.locator('.timeline').getAttribute('data-mode'), 'buckets');
    // 2 500 s of grants in 30 s buckets (50 minutes in at most 240): 84 cells, not 2 500 bars.
    const cells = await chartSeries(page, 'timeline');
    assert.equal((cells.cells ?? []).length, Math.ceil(BUSY_GRANTS / 30));
    assert.match(await page.locator('.timeline .summary').innerText(), new RegExp(`^${BUSY_GRANTS} grants .* each cell is 30 s`));
    await hideTooltip(page, 'timeline');
    await shot('timeline-buckets');
    // The first bucket, [T0, T0 + 30 s): its middle, lane 0.
    await clickChartAt(page, 'timeline', [T0 + 15_000, 0]);
    await page.locator('.timeline[data-mode="grants"]').waitFor();
    await chartRendered(page, 'timeline');
    const hash = new URLSearchParams(await page.evaluate(() => location.hash.split('?')[1] ?? ''));
    assert.equal(hash.get('key'), BUSY_KEY);
    assert.equal(hash.get('from'), from);
    assert.equal(hash.get('to'), new Date(T0 + 30_000).toISOString());
    // Holds overlapping [T0, T0 + 30 s]: grants 0..30 (the one at 30 s is granted at the window's end).
    assert.equal(((await chartSeries(page, 'timeline')).grants ?? []).length, 31);
  });

  it('shows contention percentiles and the hottest keys', async () => {
    await page.goto(`${base}/ui/#/contention?namespace=pay&by=key&top=5`);
    await page.locator('table.hot tbody tr').first().waitFor();
    for (const name of ['contention-wait', 'contention-hold', 'contention-volume', 'contention-hot']) await chartRendered(page, name);
    // The percentile lines carry the fixture's waits: pay/acct-1 and -2 waited 10, 20, 30, 50 and 70 ms in the last hour.
    const waits = await chartLines(page, 'contention-wait');
    assert.deepEqual(Object.keys(waits), ['wait p50', 'wait p95', 'wait p99']);
    assert.ok((waits['wait p99'] ?? []).length > 0, 'the p99 line has points');
    assert.ok(
      (waits['wait p99'] ?? []).every((v) => v <= 70),
      `p99 within the fixture's waits: ${JSON.stringify(waits)}`,
    );
    const hot = await page.locator('table.hot tbody tr').first().innerText();
    assert.match(hot, /^pay\/acct-1\s+4\s+3/);
    const group = await page.locator('table.groups tbody tr', { hasText: 'pay/acct-1' }).innerText();
    assert.match(group, /\d+ ms/);
    assert.equal(await page.locator('table.groups thead th').nth(3).innerText(), 'Wait p50');
    await shot('contention');
  });

  it('shows the risk register with a colour per status', async () => {
    await page.goto(`${base}/ui/#/risk`);
    await page.locator('table.register tbody tr').first().waitFor();
    const status = async (cls: string) => (await page.locator('table.register tbody tr', { hasText: cls }).getAttribute('class')) ?? '';
    assert.equal(await status('cache'), 'status-ok');
    assert.equal(await status('flags'), 'status-expiring');
    assert.equal(await status('report-gen'), 'status-expired');
    const colour = await page.locator('tr.status-expired td.status').evaluate((td) => getComputedStyle(td).backgroundColor);
    assert.equal(colour, 'rgb(248, 215, 218)');
    assert.match(await page.locator('main').innerText(), /Register of \d{4}-\d\d-\d\d/);
    assert.deepEqual((await page.locator('table.register thead th').allInnerTexts()).slice(-2), ['Foreign grants 24h / 30d', 'Deleted by hand 24h / 30d']);
    await shot('risk-register');
    // An earlier night's register, by its date.
    const earlier = dateInZone(NOW - 2 * DAY, 'UTC');
    await page.fill('form.filters input[name=date]', earlier);
    await page.click('form.filters button[type=submit]');
    await page.locator('main p', { hasText: `Register of ${earlier} (not today)` }).waitFor();
    assert.match(await page.locator('main').innerText(), /nightly run/);
    assert.equal(await page.locator('table.register tbody tr').count(), 3);
    await shot('risk-register-earlier');
  });

  it('lists unprotected grants with their overlaps, and reconciling changes the row', async () => {
    await page.goto(`${base}/ui/#/reconcile`);
    const row = page.locator('table.unprotected tbody tr', { hasText: 'cat/sku-1' });
    await row.waitFor();
    assert.equal(await page.locator('table.unprotected tbody tr').count(), 2);
    const before = await row.innerText();
    assert.match(before, /not reconciled/);
    assert.match(before, /h-d \(token /); // the protected grants that overlapped it
    await shot('reconciliation');
    await row.locator('input[name=note]').fill('Both writers touched sku-1; cache rebuilt');
    await row.locator('button', { hasText: 'Reconcile' }).click();
    await row.locator('.reconciled').waitFor();
    const afterText = await row.innerText();
    assert.match(afterText, /Both writers touched sku-1; cache rebuilt/);
    assert.match(afterText, /root@corp/);
    assert.doesNotMatch(afterText, /not reconciled/);
    await shot('reconciliation-after');
  });

  it('shows tailer health per cluster and the gaps', async () => {
    // A restore (etcd rewound, same token: the cluster id unchanged), detected before the compaction gap.
    await store.insert('gaps', [
      {
        cluster: 'c1',
        from_revision: '301',
        to_revision: '340',
        detected_at: NOW - 2 * DAY,
        reason: 'restore: head 300 below checkpoint 340',
        kind: 'restore',
        history_lost: 0,
        generation: 1,
        previous_cluster_id: 'cafe01',
        cluster_id: 'cafe01',
      },
    ]);
    const gapsAnswer = await fetch(`${base}/v1/gaps?cluster=c1`, { headers: { authorization: `Bearer ${adminToken}` } });
    assert.equal(gapsAnswer.status, 200);
    assert.deepEqual(
      ((await gapsAnswer.json()) as { items: Array<Record<string, unknown>> }).items.map((g) => [
        g.fromRevision,
        g.kind,
        g.historyLost,
        g.previousClusterId,
        g.clusterId,
      ]),
      [
        ['200', 'compaction', true, null, null],
        ['301', 'restore', false, 'cafe01', 'cafe01'],
      ],
    );
    await page.goto(`${base}/ui/#/tailers`);
    const row = page.locator('table.tailers tbody tr', { hasText: 'replica-a' });
    await row.waitFor();
    assert.match(await row.innerText(), /^c1\s+replica-a\s+500\s+520\s+20\s+1\.5 s\s+180/);
    assert.match(await page.locator('table.gaps tbody tr').first().innerText(), /c1\s+200\s+250.*compacted before capture/);
    assert.match(await page.locator('table.gaps tbody tr').first().innerText(), /compacted before capture\s+compaction\s+—$/);
    assert.match(
      await page.locator('table.gaps tbody tr').nth(1).innerText(),
      /^c1\s+301\s+340\s.*restore: head 300 below checkpoint 340\s+restore\s+cafe01 → cafe01$/,
    );
    await chartRendered(page, 'tailer-lag');
    // The status sample the fixture published is in the lag history: one point at 1.5 s, 20 revisions.
    const lag = await chartLines(page, 'tailer-lag');
    assert.deepEqual(lag, { 'c1 lag (s)': [1.5], 'c1 lag (revisions)': [20] });
    await shot('tailers');
  });

  it('draws the tailer lag chart when the page is still waiting for its quarantine section after building the chart', async () => {
    // The page builds the chart, then awaits its quarantine section before it is shown: a chart box observed while
    // not yet in the page must still draw once it is (it used to take the first resize callback, made while
    // detached, for the page having been replaced, and never drew).
    await page.route('**/v1/quarantine?*', async (route) => {
      await new Promise((r) => setTimeout(r, 400));
      await route.continue();
    });
    try {
      await page.goto(`${base}/ui/#/`);
      await page.goto(`${base}/ui/#/tailers`);
      await page.locator('table.tailers tbody tr', { hasText: 'replica-a' }).waitFor();
      await chartRendered(page, 'tailer-lag');
      assert.deepEqual(await chartLines(page, 'tailer-lag'), { 'c1 lag (s)': [1.5], 'c1 lag (revisions)': [20] });
    } finally {
      await page.unroute('**/v1/quarantine?*');
    }
  });

  it('shows quarantined changes on the tailer page: escaped, long values cut with the whole value a click away, a page at a time', async () => {
    const markup = '<img src=x onerror="window.__pwned=1">';
    const long = `{"holder":"${'x'.repeat(300)}","waitMs":1e21}`;
    await store.insert('quarantine', [
      { cluster: 'c1', revision: '18446744073709551000', key: '/l/pay/acct-9', op: 'put', value: markup, reason: 'decode: not JSON', at: NOW - 3_000 },
      { cluster: 'c1', revision: '612', key: '/l/pay/acct-8', op: 'put', value: long, reason: 'decode: waitMs out of range', at: NOW - 2_000 },
      ...Array.from({ length: 50 }, (_, i) => ({
        cluster: 'c1',
        revision: String(700 + i),
        key: `/l/fill/k-${i}`,
        op: 'put',
        value: '{}',
        reason: 'decode: missing holder',
        at: NOW - 1_000 + i,
      })),
    ]);
    await page.goto(`${base}/ui/#/tailers`);
    await page.reload(); // the previous test left the tailer page open: render it again
    const rows = page.locator('table.quarantine tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 50, 'the first page');
    assert.match(await rows.nth(0).innerText(), /^c1\s+18446744073709551000\s+\/l\/pay\/acct-9\s+put\s+decode: not JSON\s/);
    // The raw value is text, never markup.
    assert.equal(await rows.nth(0).locator('code.raw').innerText(), markup);
    assert.equal(await page.locator('table.quarantine img').count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    // A long value: cut to 120 characters, its length said, the whole of it on a click.
    const cut = rows.nth(1).locator('details.raw');
    assert.match(await rows.nth(1).innerText(), /^c1\s+612\s+\/l\/pay\/acct-8\s+put\s+decode: waitMs out of range\s/);
    assert.equal(await cut.locator('summary code').innerText(), `${long.slice(0, 120)}…`);
    assert.match(await cut.locator('summary').innerText(), new RegExp(`\\(${long.length} characters: show all\\)`));
    assert.equal(await cut.locator('pre').isVisible(), false);
    await cut.locator('summary').click();
    assert.equal(await cut.locator('pre').innerText(), long);
    await shot('tailers-quarantine');
    // The next page on request; the button goes when there is no more.
    await page.click('button.more');
    await page.waitForFunction(() => document.querySelectorAll('table.quarantine tbody tr').length === 52);
    assert.deepEqual(
      (await rows.allInnerTexts()).slice(48).map((r) => r.split('\t')[2]),
      ['/l/fill/k-46', '/l/fill/k-47', '/l/fill/k-48', '/l/fill/k-49'],
    );
    assert.equal(await page.locator('button.more').count(), 0);
  });

  it('opens the key timeline on the busiest keys and the keyspace on the present, never on an empty page', async () => {
    await page.goto(`${base}/ui/#/timeline`);
    await page.locator('.timeline p.every-key').waitFor();
    assert.match(await page.locator('.timeline p.every-key').innerText(), /^The busiest keys from /);
    await page.goto(`${base}/ui/#/keyspace?cluster=c1`);
    await page.locator('p.summary').waitFor();
    assert.match(await page.locator('p.summary').innerText(), /^c1 at revision \d+ \(captured through \d+\)/);
    assert.equal(await page.locator('input[name=slider]').count(), 1, 'the slider to move back from the present');
  });

  it('shows the keyspace at a moment with a revision slider, the diff between two moments, and is linked from a grant', async () => {
    await page.goto(`${base}/ui/#/keyspace?cluster=c1&prefix=pay/&at=103`);
    await page.locator('table.holds tbody tr').nth(1).waitFor();
    assert.deepEqual(
      (await page.locator('table.holds tbody tr').allInnerTexts()).map((r) => r.split('\t').slice(0, 2).join(' ')),
      ['pay/acct-1 h-a', 'pay/acct-2 h-b'],
    );
    assert.equal(await page.locator('input[name=slider]').getAttribute('value'), '103');
    await page.goto(`${base}/ui/#/keyspace?cluster=c1&prefix=pay/&at=110&from=103`);
    await page.locator('table.diff tbody tr').first().waitFor();
    const diff = (await page.locator('table.diff tbody tr').allInnerTexts()).join('\n');
    assert.match(diff, /appeared\tpay\/acct-1\th-b\t110/);
    assert.match(diff, /ended\tpay\/acct-1\th-a\t105\trelease/);
    assert.match(diff, /ended\tpay\/acct-2\th-b\t104\trelease/);
    assert.match(diff, /holder changed\tpay\/acct-1\th-a → h-b/);
    await shot('keyspace');
    // From a grant in the search results to the keyspace at its grant revision.
    await page.goto(`${base}/ui/#/grants?key=pay/acct-1&limit=50&order=asc`);
    await page.locator('table.grants a.at-grant').first().click();
    await page.locator('table.holds tbody tr').first().waitFor();
    assert.match(await page.locator('p.summary').innerText(), /c1 at revision 101/);
    assert.match(await page.locator('table.holds tbody tr').first().innerText(), /pay\/acct-1\th-a/);
  });

  it("shows only the pages the token's roles can read, and says why a page is closed", async () => {
    const auditor = (await createApiToken(store, 'audrey@corp', ['auditor'])).token;
    await page.click('nav .signout');
    await signIn(page, base, auditor);
    assert.deepEqual(await page.locator('nav a').allInnerTexts(), ['Risk register', 'Tailer health', 'Keyspace at a moment']);
    assert.equal(await page.locator('nav .whoami').innerText(), 'audrey@corp');
    // The landing page is the first one the token can read.
    await page.locator('table.register tbody tr').first().waitFor();
    await page.goto(`${base}/ui/#/tailers`);
    await page.locator('table.quarantine tbody tr').first().waitFor(); // the auditor role reads quarantined changes
    await page.goto(`${base}/ui/#/grants`);
    assert.match(await page.locator('main .error').innerText(), /needs one of the roles investigator; the token of audrey@corp has auditor/);
    const investigator = (await createApiToken(store, 'ivy@corp', ['investigator'])).token;
    await page.click('nav .signout');
    await signIn(page, base, investigator);
    await page.goto(`${base}/ui/#/reconcile`);
    await page.locator('table.unprotected tbody tr').first().waitFor();
    assert.equal(await page.locator('table.unprotected form.reconcile').count(), 0, 'no reconcile action without the lock-operator role');
    assert.match(await page.locator('table.unprotected tbody tr').first().innerText(), /a lock-operator reconciles/);
  });

  it("a scoped token's pages read its namespaces only, say so, and offer no action the API would refuse (issue 44)", async () => {
    const scoped = (await createApiToken(store, 'pat@pay', ['investigator', 'lock-operator'], { scope: { namespaces: ['cat', 'pay'], clusters: [] } })).token;
    await page.click('nav .signout');
    await signIn(page, base, scoped);
    await page.goto(`${base}/ui/#/grants`);
    const keys = page.locator('table.grants tbody tr td:nth-child(2)');
    await keys.first().waitFor();
    const shown = await keys.allInnerTexts();
    assert.ok(shown.length > 0 && shown.every((k) => /^(pay|cat)\//.test(k)), shown.join(', '));
    assert.ok(!shown.some((k) => k.startsWith('ops/')), 'ops/door-1 is outside the scope');
    assert.equal(await page.locator('main p.narrowed').innerText(), "Narrowed to this token's scope: namespaces cat, pay.");
    await page.goto(`${base}/ui/#/reconcile`);
    await page.locator('table.unprotected tbody tr').first().waitFor();
    assert.equal(await page.locator('table.unprotected form.reconcile').count(), 0, 'reconciling refuses a scoped token: no form');
    assert.match(await page.locator('table.unprotected tbody tr').first().innerText(), /reconciling needs a token without a scope/);
  });
});
