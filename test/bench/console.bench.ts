// The web console on a 30-day window of a busy cluster (issue 7: "the pages
// must stay responsive … aggregate in ClickHouse, not in the browser"), each
// figure beside a baseline measured in the same run:
//  - the console's API requests through fastify inject vs the same report SQL
//    run bare in ClickHouse, with each response's size and number of points
//    (aggregation means bounded payloads);
//  - each page in Debian's chromium, from navigation to every chart drawn, vs
//    the page's own API requests fetched from Node (what the browser adds),
//    with the long tasks during rendering and one interaction after it vs an
//    idle frame.
// History: synthetic grants (reportsData.ts) plus one tailer status sample a
// second for 30 days, all generated inside ClickHouse.
// BENCH_CONSOLE_EVENTS sets the size (default 10 000 000 events ≈ 2 M grants),
// BENCH_CONSOLE_ITER the iterations per API figure (default 10; pages get half).
import type { AddressInfo } from 'node:net';
import { buildApp, type App } from '../../api/app.js';
import { HealthState } from '../../platform/health.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { uiRoutes } from '../../api/routes/ui.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { loadSql } from '../../platform/sql.js';
import { LAG_BUCKET_SECONDS } from '../../reports/tailerLag/index.js';
import { CELL_SECONDS, MAX_CELL_BUCKETS, MAX_LANES } from '../../reports/timeline/index.js';
import { BUCKETS_SECONDS, bucketFor } from '../../reports/window.js';
import { openBrowser, type Browser } from '../support/browser.js';
import { tempStore, testConfig } from '../support/env.js';
import { generateReportData } from './reportsData.js';
import { heading, percentile, report } from './report.js';

const EVENTS = Number(process.env.BENCH_CONSOLE_EVENTS ?? 10_000_000);
const ITER = Number(process.env.BENCH_CONSOLE_ITER ?? 10);
const PAGE_ITER = Math.max(3, Math.ceil(ITER / 2));
const DAY_MS = 86_400_000;
const SAMPLES = 30 * 86_400; // one tailer status a second for 30 days
const MAX_BARS = 2000; // the timeline's default maxBars
const SETTINGS = { max_execution_time: 120 };

const LANES = loadSql('reports/timeline/lanes.sql');
const CELLS = loadSql('reports/timeline/cells.sql');
const GRANTS = loadSql('reports/timeline/grants.sql');
const CONTENTION = loadSql('reports/contention/contention.sql');
const LAG = loadSql('reports/tailerLag/lag.sql');

// Status samples shaped like a tailer's: 20–400 ms behind, one incident a day
// (a 10-minute catch-up peaking at 60 s), head following the generated
// grants' revisions, leadership changing hands weekly.
const TAILER_STATUS_SQL = `INSERT INTO {db:Identifier}.tailer_status
  (cluster, cluster_id, leader, checkpoint, head_revision, compact_revision, lag_revisions, lag_seconds, updated_at)
SELECT 'bench', 'cafe01', leader, head - least(lag_rev, head), head, compact, lag_rev, lag_s, at
FROM
(
    SELECT
        number AS i,
        i % 86400 AS sod,
        if(intDiv(i, 604800) % 2 = 0, 'replica-a', 'replica-b') AS leader,
        toUInt64(1000 + 5 * intDiv(i * {grants:UInt64}, {samples:UInt64})) AS head,
        toUInt64(greatest(toInt64(head) - 500000, 0)) AS compact,
        0.02 + (cityHash64(i) % 380) / 1000 + if(sod >= 7200 AND sod < 7800, 60 * (1 - abs(toInt64(sod) - 7500) / 300), 0) AS lag_s,
        toUInt64(lag_s * {revsPerSecond:Float64}) AS lag_rev,
        fromUnixTimestamp64Milli({t0:Int64} + toInt64(i) * 1000, 'UTC') AS at
    FROM numbers({samples:UInt64})
)`;

// In-page helpers, as plain JavaScript: tsx (esbuild keepNames) would wrap
// functions written in TypeScript here with a __name() the page does not have.
const PAGE_HELPERS = `window.__consoleBench = (() => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  const settle = async () => { await frame(); await frame(); await new Promise((r) => setTimeout(r, 50)); };
  const longTasks = () => {
    if (!PerformanceObserver.supportedEntryTypes.includes('longtask')) return { stop: async () => null };
    const seen = [];
    const po = new PerformanceObserver((list) => { for (const e of list.getEntries()) seen.push(e.duration); });
    po.observe({ type: 'longtask' });
    return { stop: async () => { await settle(); for (const e of po.takeRecords()) seen.push(e.duration); po.disconnect(); return seen; } };
  };
  return {
    /** Shows a page with no chart and no API request (the timeline's empty form). */
    async blank(hash) {
      location.hash = hash;
      const t = performance.now();
      while (document.querySelector('[data-chart]') || !document.querySelector('main form.filters')) {
        if (performance.now() - t > 10000) throw new Error('the blank page did not show');
        await frame();
      }
      await settle();
    },
    /** Navigates to hash; resolves when every named chart has finished drawing (data-rendered). */
    async navigate(hash, names, timeoutMs) {
      const tasks = longTasks();
      const rendered = () => names.every((n) => { const el = document.querySelector('[data-chart="' + n + '"][data-rendered]'); return el !== null && el.isConnected; });
      const failure = () => { const el = document.querySelector('main [role=alert]'); return el ? el.textContent : null; };
      const t0 = performance.now();
      await new Promise((resolve, reject) => {
        let timer;
        const mo = new MutationObserver(() => {
          if (rendered()) { mo.disconnect(); clearTimeout(timer); resolve(); return; }
          const f = failure();
          if (f) { mo.disconnect(); clearTimeout(timer); reject(new Error('the page shows an error: ' + f)); }
        });
        mo.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-rendered'] });
        timer = setTimeout(() => { mo.disconnect(); reject(new Error('charts ' + names.join(', ') + ' not rendered in ' + timeoutMs + ' ms')); }, timeoutMs);
        location.hash = hash;
      });
      const ms = performance.now() - t0;
      return { ms, longTasks: await tasks.stop() };
    },
    /** Dispatches an ECharts action on a drawn chart; times it to the chart's next 'finished'. Also times an idle frame. */
    async interact(name, action, timeoutMs) {
      const chart = window.lockaudit.charts.get(name);
      if (!chart) throw new Error('no chart ' + name);
      await settle();
      await frame();
      let t = performance.now();
      await frame();
      const idleMs = performance.now() - t;
      const dom = chart.getDom();
      const a = action.type === 'showTip' ? { type: 'showTip', x: Math.round(dom.clientWidth / 2), y: Math.round(dom.clientHeight / 2) } : action;
      const tasks = longTasks();
      let done;
      const finished = new Promise((r) => { done = r; });
      chart.on('finished', done);
      t = performance.now();
      chart.dispatchAction(a);
      const timedOut = await Promise.race([finished.then(() => false), new Promise((r) => setTimeout(() => r(true), timeoutMs))]);
      const ms = performance.now() - t;
      chart.off('finished', done);
      return { ms, idleMs, timedOut, longTasks: await tasks.stop() };
    },
  };
})();`;

interface Navigated {
  ms: number;
  longTasks: number[] | null;
}
interface Interacted {
  ms: number;
  idleMs: number;
  timedOut: boolean;
  longTasks: number[] | null;
}

type Num = string | number;
interface LaneRow {
  key: string;
  grants: Num;
}
interface TimelineBody {
  mode: string;
  lanes: string[];
  totalLanes: number;
  totalGrants: number;
  bucketSeconds: number | null;
  grants: unknown[];
  cells: unknown[];
}
interface ContentionBody {
  bucketSeconds: number;
  series: unknown[];
  groups: unknown[];
  hottestKeys: unknown[];
}
interface LagBody {
  bucketSeconds: number;
  clusters: { cluster: string; series: unknown[] }[];
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const kB = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;
const secs = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);
const out = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  // scripts/bench.sh builds the console from the current source first.
  // Every step runs even when one fails, in reverse order of start.
  const cleanups: Array<() => unknown> = [];
  try {
    const { store, close } = await tempStore();
    cleanups.push(close);
    const config = testConfig({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '1000000', LOCKAUDIT_QUERY_TIMEOUT_MS: '120000' });
    const app = await buildApp(
      { config, logger: createLogger('silent'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: createMetricsRegistry() },
      [grantRoutes, reportRoutes, tailerRoutes, uiRoutes],
    );
    cleanups.push(() => app.close());

    const endMs = Date.now();
    const from30 = endMs - 30 * DAY_MS;
    heading(`Console on ${EVENTS.toLocaleString('en-US')} generated events (30 days)`);
    let t0 = performance.now();
    const data = await generateReportData(store, EVENTS, endMs);
    out(`generated ${data.events.toLocaleString('en-US')} events, ${data.grants.toLocaleString('en-US')} grants in ${secs(t0)} s`);
    t0 = performance.now();
    await fillTailerStatus(store, data.grants, from30);
    await printTailerTables(store, secs(t0));

    const { token } = await createApiToken(store, 'bench-investigator', ['investigator']);
    await measureApi(app, store, token, from30, endMs);

    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const browser = await openBrowser();
    cleanups.push(() => browser.close());
    await measureBrowser(browser, base, token, from30, endMs);
  } finally {
    for (const step of cleanups.reverse()) {
      try {
        await step();
      } catch (err) {
        process.stderr.write(`cleanup: ${String(err)}\n`);
      }
    }
  }
}

/** One status sample a second for 30 days, written where the tailer writes it; the materialized view copies each into tailer_lag_history. */
async function fillTailerStatus(store: AuditStore, grants: number, t0: number): Promise<void> {
  const revsPerSecond = (5 * grants) / SAMPLES;
  await store.command(TAILER_STATUS_SQL, { grants, samples: SAMPLES, t0, revsPerSecond }, SETTINGS);
  const [head] = await store.rows<{ head: string }>('SELECT toString(max(head_revision)) AS head FROM {db:Identifier}.tailer_lag_history');
  await store.insert('checkpoints', [{ cluster: 'bench', revision: head?.head ?? '0', leader: 'replica-b' }]);
}

async function printTailerTables(store: AuditStore, took: string): Promise<void> {
  const [history] = await store.rows<{ rows: string; first: string; last: string; maxLag: number }>(
    'SELECT toString(count()) AS rows, toString(min(at)) AS first, toString(max(at)) AS last, max(lag_seconds) AS maxLag FROM {db:Identifier}.tailer_lag_history',
  );
  const [status] = await store.rows<{ rows: string }>('SELECT toString(count()) AS rows FROM {db:Identifier}.tailer_status FINAL');
  const rows = Number(history?.rows ?? 0);
  out(
    `tailer status: ${SAMPLES.toLocaleString('en-US')} samples inserted (INSERT … SELECT) in ${took} s; tailer_lag_history has ${rows.toLocaleString('en-US')} rows` +
      ` (${history?.first} – ${history?.last}, worst lag ${history?.maxLag} s); tailer_status FINAL ${status?.rows} row(s)`,
  );
  if (rows !== SAMPLES) out(`WARNING: the materialized view copied ${rows} of ${SAMPLES} samples into tailer_lag_history`);
}

/** The bare SQL of a timeline, as reports/timeline/index.ts runs it (lanes, then bars or cells), without the gaps and the read record. */
async function bareTimeline(store: AuditStore, sel: { key?: string; keyPrefix?: string }, fromMs: number, toMs: number): Promise<unknown[]> {
  const lanes = await store.rows<LaneRow>(
    LANES.text,
    { key: sel.key ?? '', keyPrefix: sel.keyPrefix ?? '', cluster: '', fromMs, toMs, maxLanes: MAX_LANES },
    SETTINGS,
  );
  const keys = lanes.map((r) => r.key);
  const total = lanes.reduce((s, r) => s + Number(r.grants), 0);
  if (total <= MAX_BARS) return keys.length ? store.rows(GRANTS.text, { lanes: keys, cluster: '', fromMs, toMs, limit: MAX_BARS }, SETTINGS) : [];
  return store.rows(CELLS.text, { lanes: keys, cluster: '', fromMs, toMs, bucketSeconds: bucketFor(toMs - fromMs, CELL_SECONDS, MAX_CELL_BUCKETS) }, SETTINGS);
}

function describeTimeline(t: TimelineBody): string {
  const drawn = t.mode === 'grants' ? `${t.grants.length} bars` : `${t.cells.length} cells of ${t.bucketSeconds} s`;
  return `mode ${t.mode}, ${t.lanes.length} of ${t.totalLanes} lanes, ${t.totalGrants.toLocaleString('en-US')} grants → ${drawn}`;
}

async function measureApi(app: App, store: AuditStore, token: string, from30: number, endMs: number): Promise<void> {
  const auth = { authorization: `Bearer ${token}` };
  const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
  const rnd = (n: number) => Math.floor(Math.random() * n);
  const hotKey = () => {
    const k = rnd(97);
    return `ns${k % 20}/acct-${k}`;
  };
  const from1h = endMs - 3_600_000;
  const window30 = `from=${iso(from30)}&to=${iso(endMs)}`;

  interface Case {
    name: string;
    prepare: () => { url: string; bare: () => Promise<unknown> };
    describe: (body: unknown) => string;
  }
  const cases: Case[] = [
    {
      name: 'timeline hot key 30 d',
      prepare: () => {
        const key = hotKey();
        return { url: `/v1/reports/timeline?key=${key}&${window30}`, bare: () => bareTimeline(store, { key }, from30, endMs) };
      },
      describe: (b) => describeTimeline(b as TimelineBody),
    },
    {
      name: 'timeline prefix ns3/ 30 d',
      prepare: () => ({ url: `/v1/reports/timeline?keyPrefix=ns3/&${window30}`, bare: () => bareTimeline(store, { keyPrefix: 'ns3/' }, from30, endMs) }),
      describe: (b) => describeTimeline(b as TimelineBody),
    },
    {
      name: 'timeline hot key 1 h',
      prepare: () => {
        const key = hotKey();
        return { url: `/v1/reports/timeline?key=${key}&from=${iso(from1h)}&to=${iso(endMs)}`, bare: () => bareTimeline(store, { key }, from1h, endMs) };
      },
      describe: (b) => describeTimeline(b as TimelineBody),
    },
    {
      name: 'contention 30 d',
      prepare: () => ({
        url: `/v1/reports/contention?${window30}`,
        bare: () =>
          store.rows(
            CONTENTION.text,
            {
              by: 'namespace',
              fromMs: from30,
              toMs: endMs,
              namespace: '',
              class: '',
              groupLimit: 10_000,
              top: 10,
              bucketSeconds: bucketFor(endMs - from30, BUCKETS_SECONDS),
            },
            SETTINGS,
          ),
      }),
      describe: (b) => {
        const c = b as ContentionBody;
        return `${c.series.length} points of ${c.bucketSeconds} s, ${c.groups.length} groups, ${c.hottestKeys.length} hot keys`;
      },
    },
    {
      name: 'tailer lag 30 d',
      prepare: () => ({
        url: `/v1/tailers/lag?${window30}`,
        bare: () => store.rows(LAG.text, { cluster: '', fromMs: from30, toMs: endMs, bucketSeconds: bucketFor(endMs - from30, LAG_BUCKET_SECONDS) }, SETTINGS),
      }),
      describe: (b) => {
        const l = b as LagBody;
        return `${l.clusters.reduce((s, c) => s + c.series.length, 0)} points of ${l.bucketSeconds} s (${l.clusters.length} cluster(s)) from ${SAMPLES.toLocaleString('en-US')} samples`;
      },
    },
  ];

  heading(`API: fastify inject vs the same report SQL bare in ClickHouse (${ITER} iterations)`);
  for (const c of cases) {
    const api: number[] = [];
    const bare: number[] = [];
    let bytes = 0;
    let body: unknown;
    const inject = async (url: string) => {
      const res = await app.inject({ method: 'GET', url, headers: auth });
      if (res.statusCode !== 200) throw new Error(`${c.name}: HTTP ${res.statusCode} ${res.body.slice(0, 300)}`);
      return res;
    };
    for (let i = 0; i < 2; i++) {
      const p = c.prepare();
      await p.bare();
      await inject(p.url);
    } // warm-up
    for (let i = 0; i < ITER; i++) {
      const p = c.prepare();
      const timeBare = async () => {
        const t = performance.now();
        await p.bare();
        bare.push(performance.now() - t);
      };
      // Alternate which goes first, so neither always finds the caches the other warmed.
      if (i % 2 === 0) await timeBare();
      const t = performance.now();
      const res = await inject(p.url);
      api.push(performance.now() - t);
      if (i % 2 === 1) await timeBare();
      bytes = Math.max(bytes, Buffer.byteLength(res.body));
      body = res.json();
    }
    for (const p of [50, 95]) {
      report({
        name: `${c.name} p${p}`,
        value: percentile(sorted(api), p),
        unit: 'ms',
        baselineName: `bare SQL p${p}`,
        baseline: percentile(sorted(bare), p),
        higherIsBetter: false,
      });
    }
    out(`  response: ${c.describe(body)}; ${kB(bytes)} (largest)`);
  }
}

async function measureBrowser(browser: Browser, base: string, token: string, from30: number, endMs: number): Promise<void> {
  const page = browser.page;
  page.setDefaultTimeout(60_000);
  await page.context().addInitScript({ content: PAGE_HELPERS });
  await page.goto(`${base}/ui/`);
  await page.locator('form.signin').waitFor();
  await page.evaluate(`sessionStorage.setItem('lockaudit.token', ${JSON.stringify(token)})`);
  const blank = () => page.evaluate('window.__consoleBench.blank("#/timeline")');
  await blank();

  const window30 = { from: new Date(from30).toISOString(), to: new Date(endMs).toISOString() };
  const hot = 'ns3/acct-3';
  const fetchAll = async (paths: string[]) => {
    await Promise.all(
      paths.map(async (p) => {
        const res = await fetch(`${base}${p}`, { headers: { authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`${p}: HTTP ${res.status}`);
      }),
    );
  };
  interface PageCase {
    name: string;
    hash: string;
    charts: string[];
    requests: () => string[];
    interaction: { label: string; chart: string; action: Record<string, unknown> };
  }
  const zoom = { label: 'dataZoom to 10 %', chart: 'timeline', action: { type: 'dataZoom', start: 45, end: 55 } };
  const pages: PageCase[] = [
    {
      name: 'timeline hot key 30 d',
      hash: `#/timeline?${new URLSearchParams({ key: hot, ...window30 })}`,
      charts: ['timeline'],
      requests: () => [`/v1/reports/timeline?${new URLSearchParams({ key: hot, ...window30 })}`],
      interaction: zoom,
    },
    {
      name: 'timeline prefix ns3/ 30 d',
      hash: `#/timeline?${new URLSearchParams({ keyPrefix: 'ns3/', ...window30 })}`,
      charts: ['timeline'],
      requests: () => [`/v1/reports/timeline?${new URLSearchParams({ keyPrefix: 'ns3/', ...window30 })}`],
      interaction: zoom,
    },
    {
      name: 'contention 30 d',
      hash: `#/contention?${new URLSearchParams(window30)}`,
      charts: ['contention-wait', 'contention-hold', 'contention-volume', 'contention-hot'],
      requests: () => [`/v1/reports/contention?${new URLSearchParams(window30)}`],
      interaction: { label: 'hover (showTip) wait chart', chart: 'contention-wait', action: { type: 'showTip' } },
    },
    {
      name: 'tailers 30 d',
      hash: '#/tailers?span=30%20d',
      charts: ['tailer-lag'],
      requests: () => {
        const to = Date.now();
        return [
          '/v1/tailers',
          '/v1/gaps',
          `/v1/tailers/lag?${new URLSearchParams({ from: new Date(to - 30 * DAY_MS).toISOString(), to: new Date(to).toISOString() })}`,
        ];
      },
      interaction: { label: 'hover (showTip) lag chart', chart: 'tailer-lag', action: { type: 'showTip' } },
    },
  ];

  heading(`browser (chromium): hash navigation → every chart drawn vs the page's API request(s) fetched from Node (${PAGE_ITER} iterations)`);
  const interactions: { name: string; label: string; ms: number[]; idle: number[]; timedOut: number; longest: number }[] = [];
  for (const pc of pages) {
    const browser: number[] = [];
    const fetched: number[] = [];
    const longest: number[] = [];
    const blocking: number[] = [];
    const inter = { name: pc.name, label: pc.interaction.label, ms: [] as number[], idle: [] as number[], timedOut: 0, longest: 0 };
    let longTasksSupported = true;
    for (let i = -1; i < PAGE_ITER; i++) {
      // i = -1: warm-up
      let fetchMs = 0;
      const timeFetch = async () => {
        const t = performance.now();
        await fetchAll(pc.requests());
        fetchMs = performance.now() - t;
      };
      if (i % 2 === 0) await timeFetch(); // alternate which goes first, as above
      await blank();
      const nav = (await page.evaluate(`window.__consoleBench.navigate(${JSON.stringify(pc.hash)}, ${JSON.stringify(pc.charts)}, 120000)`)) as Navigated;
      const act = (await page.evaluate(
        `window.__consoleBench.interact(${JSON.stringify(pc.interaction.chart)}, ${JSON.stringify(pc.interaction.action)}, 5000)`,
      )) as Interacted;
      if (i % 2 !== 0) await timeFetch();
      if (i < 0) continue;
      fetched.push(fetchMs);
      browser.push(nav.ms);
      if (nav.longTasks === null) longTasksSupported = false;
      const tasks = nav.longTasks ?? [];
      longest.push(Math.max(0, ...tasks));
      blocking.push(tasks.reduce((s, d) => s + Math.max(0, d - 50), 0));
      inter.ms.push(act.ms);
      inter.idle.push(act.idleMs);
      if (act.timedOut) inter.timedOut += 1;
      inter.longest = Math.max(inter.longest, ...(act.longTasks ?? []));
    }
    for (const p of [50, 95]) {
      report({
        name: `${pc.name} p${p}`,
        value: percentile(sorted(browser), p),
        unit: 'ms',
        baselineName: `its API request(s) p${p}`,
        baseline: percentile(sorted(fetched), p),
        higherIsBetter: false,
      });
    }
    out(
      longTasksSupported
        ? `  main thread during render: longest task ${Math.round(Math.max(...longest))} ms (median ${Math.round(percentile(sorted(longest), 50))} ms), total blocking time median ${Math.round(percentile(sorted(blocking), 50))} ms`
        : '  main thread during render: this chromium reports no long tasks (PerformanceObserver longtask unsupported)',
    );
    interactions.push(inter);
  }

  heading('browser: an interaction after rendering (dispatchAction → chart redrawn) vs an idle frame');
  for (const it of interactions) {
    report({
      name: `${it.name}: ${it.label} p50`,
      value: percentile(sorted(it.ms), 50),
      unit: 'ms',
      baselineName: 'idle frame p50',
      baseline: percentile(sorted(it.idle), 50),
      higherIsBetter: false,
    });
    out(
      `  worst ${Math.round(Math.max(...it.ms))} ms, longest task ${Math.round(it.longest)} ms${it.timedOut ? `; ${it.timedOut} time(s) no redraw within 5 s` : ''}`,
    );
  }

  heading('browser console errors');
  const errors = browser.takeErrors();
  out(errors.length ? errors.map((e) => `  ${e}`).join('\n') : 'none');
}

await main();
