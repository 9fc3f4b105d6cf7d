// Report latencies through the API (fastify inject → report module →
// ClickHouse) beside the same SQL run bare in ClickHouse in the same run, on
// synthetic history generated inside ClickHouse (reportsData.ts).
// BENCH_REPORTS_EVENTS sets the size (default 10 000 000 events ≈ 2 M grants),
// BENCH_REPORTS_DAYS the span (default 90), BENCH_REPORTS_ITER the iterations
// per figure, BENCH_REPORTS_ONLY=contention,risk only the cases whose names
// contain one of these. Goals (issue 14): key history and token lookup p95 < 100 ms,
// holder history p95 < 500 ms, contention over the whole span < 5 s, risk
// register < 2 s (issue 22: ≤ 1 s; key history p95 < 100 ms at 100 M events,
// beside the same page before sql/140); contention through the API reads the
// hours sealed right after generation (issue 22 item 1) beside the raw query
// bare, its queries are then timed one by one, and the sealing's one-off time
// is printed; BENCH_REPORTS_STORE=<dir> keeps the generated store there for
// later runs of the same size; a compliance export of one namespace over the span is timed
// through writeGrantsExport (the export job's own writer, to a local file)
// beside ClickHouse writing the same rows as one Parquet query.
import { buildApp } from '../../api/app.js';
import { HealthState } from '../../platform/health.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { PREFIX } from '../../core/keyspace.js';
import { makeToken } from '../../core/token.js';
import { loadSql } from '../../platform/sql.js';
import { bucketFor } from '../../reports/window.js';
import { historySettings } from '../../reports/grantHistory/index.js';
import { testConfig, tempStore } from '../support/env.js';
import { writeGrantsExport } from '../../exporters/compliance/complianceExport.js';
import { sealContentionHours } from '../../reports/contention/seal.js';
import { contention as contentionReport } from '../../reports/contention/index.js';
import { benchKey, generateReportData, HOLDERS, HOT_KEYS, NAMESPACES, type GeneratedData } from './reportsData.js';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { AuditStore } from '../../core/clickhouse.js';
import { migrate } from '../../core/migrations.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { heading, percentile, report } from './report.js';

const EVENTS = Number(process.env.BENCH_REPORTS_EVENTS ?? 10_000_000);
const DAYS = Number(process.env.BENCH_REPORTS_DAYS ?? 90);
const ITER = Number(process.env.BENCH_REPORTS_ITER ?? 20);
const ITER_REPORTS = Number(process.env.BENCH_REPORTS_ITER_REPORTS ?? Math.max(3, Math.ceil(ITER / 3)));
// Warm-up runs per figure (at 100 M events one contention run takes a minute).
const WARMUP = Number(process.env.BENCH_REPORTS_WARMUP ?? 2);
// A store kept at this path: generated (and sealed) on the first run and kept; a later run with the
// same BENCH_REPORTS_EVENTS and BENCH_REPORTS_DAYS measures it again without the 15 minutes that
// generating 100 M events takes. Empty (the default): a throw-away store.
const KEEP = process.env.BENCH_REPORTS_STORE ?? '';

/** The throw-away store, or the kept one with what was generated into it before (undefined: nothing yet). */
async function openStore(): Promise<{ store: AuditStore; close: () => Promise<void>; kept?: GeneratedData }> {
  if (!KEEP) return tempStore();
  const store = new AuditStore({ mode: 'embedded', path: KEEP, database: 'lockaudit' });
  await migrate(store);
  const file = path.join(KEEP, 'bench-generated.json');
  let kept: GeneratedData | undefined;
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { asked: number; days: number; data: GeneratedData };
    if (saved.asked !== EVENTS || saved.days !== DAYS)
      throw new Error(`BENCH_REPORTS_STORE ${KEEP} holds ${saved.asked} events over ${saved.days} days, not ${EVENTS} over ${DAYS}`);
    kept = saved.data;
  }
  return { store, close: () => store.close(), kept };
}

async function main(): Promise<void> {
  const { store, close, kept } = await openStore();
  const config = testConfig({
    LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '1000000',
    LOCKAUDIT_QUERY_TIMEOUT_MS: '900000',
    LOCKAUDIT_MAX_WINDOW_DAYS: String(Math.max(DAYS + 1, 31)),
  });
  const app = await buildApp(
    { config, logger: createLogger('silent'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: createMetricsRegistry() },
    [grantRoutes, reportRoutes],
  );
  try {
    const endMs = kept?.toMs ?? Date.now();
    heading(`Reports on ${EVENTS.toLocaleString('en-US')} generated events`);
    const t0 = performance.now();
    const data = kept ?? (await generateReportData(store, EVENTS, endMs, DAYS));
    if (kept)
      process.stdout.write(
        `reused the store at ${KEEP}: ${data.events.toLocaleString('en-US')} events, ${data.grants.toLocaleString('en-US')} grants (${DAYS} days) generated before\n`,
      );
    else
      process.stdout.write(
        `generated ${data.events.toLocaleString('en-US')} events, ${data.grants.toLocaleString('en-US')} grants (${DAYS} days) in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
      );
    if (KEEP && !kept) writeFileSync(path.join(KEEP, 'bench-generated.json'), JSON.stringify({ asked: EVENTS, days: DAYS, data }));
    // Seal every whole hour before now (issue 22 item 1): the generator writes no checkpoint,
    // so the seal is as of a checkpoint above every generated revision, up to now.
    const tSeal = performance.now();
    const sealed = await sealContentionHours({ store, limits: config.reports }, { cluster: 'bench', checkpoint: 10n ** 15n, sealBeforeMs: endMs });
    const sealMs = performance.now() - tSeal;
    process.stdout.write(
      `sealed ${sealed[0]?.hours ?? 0} contention hours (${sealed[0]?.irregularHours ?? 0} irregular) in ${(sealMs / 1000).toFixed(1)} s${kept ? ' (a reused store: the hours its first run sealed stay sealed, and this time is not that of a backfill)' : ''}\n`,
    );
    await printLayout(store, data.events);
    const exportDir = mkdtempSync(path.join(tmpdir(), 'lockaudit-bench-export-'));

    const { token: investigator } = await createApiToken(store, 'bench-investigator', ['investigator']);
    const { token: auditor } = await createApiToken(store, 'bench-auditor', ['auditor']);
    const auth = (t: string) => ({ authorization: `Bearer ${t}` });
    const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
    const history = loadSql('reports/grantHistory/history.sql');
    const contention = loadSql('reports/contention/contention.sql');
    const grantsExport = loadSql('exporters/sql/grants_export.sql');
    const classes = loadSql('reports/riskRegister/classes.sql');
    const usage = loadSql('reports/riskRegister/usage.sql');
    const usageBefore = usage.text.replace(/\n\s*AND \(granted_at > d30 OR ended_at > d30\)/, '');
    if (usageBefore === usage.text) throw new Error('usage.sql: the 30-day PREWHERE line to compare against is not there');
    // Before sql/140: key history read `grants` (sorted by cluster, key, revision) with the key as
    // `'' = k OR key = k`, which hides the key from ClickHouse's read-in-order: every page sorted the whole key.
    const keyLine = "key = if({key:String} = '', key, {key:String})";
    const historyBefore = history.text.replace(keyLine, "({key:String} = '' OR key = {key:String})");
    if (historyBefore === history.text) throw new Error('history.sql: the key line to compare against is not there');
    const settings = { max_execution_time: 900 };
    const baseParams = {
      source: 'grants',
      cluster: '',
      window: 'overlapping',
      key: '',
      keyPrefix: '',
      holder: '',
      class: '',
      namespace: '',
      endKind: '',
      origin: '',
      hasToken: 0,
      token: '0',
      fromMs: 0,
      toMs: endMs + 1,
      desc: 0,
      hasCursor: 0,
      afterMs: 0,
      afterCluster: '',
      afterKey: '',
      afterRevision: '0',
      afterSpool: '',
      afterTimeline: 0,
      limit: 101,
    };
    const rnd = (n: number) => Math.floor(Math.random() * n);
    const hotKey = () => benchKey(rnd(HOT_KEYS));
    const holder = () => `spiffe://corp/worker-${rnd(HOLDERS)}`;
    const grantToken = () => {
      let g = rnd(data.grants);
      if (g % 1000 === 999) g -= 1;
      return makeToken(40, BigInt(1000 + 5 * g + 1)).toString();
    };
    const fromSpan = endMs - DAYS * 86_400_000;
    const midCursor = () => ({
      hasCursor: 1,
      afterMs: fromSpan + Math.floor((endMs - fromSpan) / 2),
      afterCluster: 'bench',
      afterKey: '',
      afterRevision: '0',
      afterSpool: '',
      afterTimeline: 0,
    });
    const namespace = () => `ns${rnd(NAMESPACES)}`;
    const exportParams = (ns: string) => ({
      cluster: '',
      key: '',
      keyPrefix: '',
      holder: '',
      class: '',
      namespace: ns,
      hasToken: 0,
      token: '0',
      origin: '',
      endKind: '',
      window: 'granted',
      fromMs: fromSpan,
      toMs: endMs + 1,
      hasLo: 0,
      loCluster: '',
      loKey: '',
      hasHi: 0,
      hiCluster: '',
      hiKey: '',
    });
    let exportRows = 0n;
    let exportBytes = 0;
    let exportN = 0;

    const tokenKeys = loadSql('reports/grantHistory/tokenKeys.sql');
    const tokenLookupRouted = async (token: string) => {
      const keys = await store.rows<{ key: string }>(tokenKeys.text, { token, cluster: '' }, settings);
      if (keys.length !== 1) throw new Error(`token ${token} names ${keys.length} keys in grant_tokens`);
      return store.rows(
        history.text,
        { ...baseParams, source: 'grants_by_key', key: keys[0]?.key ?? '', hasToken: 1, token },
        { ...settings, ...historySettings('grants_by_key') },
      );
    };
    interface Case {
      name: string;
      iter: number;
      api: () => Promise<number>;
      bare: () => Promise<unknown>;
    }
    const cases: Case[] = [
      {
        name: 'key history (hot key, page 100)',
        iter: ITER,
        api: async () => (await app.inject({ method: 'GET', url: `/v1/grants?key=${hotKey()}&limit=100&order=asc`, headers: auth(investigator) })).statusCode,
        bare: () => store.rows(history.text, { ...baseParams, source: 'grants_by_key', key: hotKey() }, { ...settings, ...historySettings('grants_by_key') }),
      },
      {
        // Before sql/140 (bare): the same page on `grants` with the pre-140 key filter, beside it on grants_by_key.
        name: 'key history on grants, no 140 (bare)',
        iter: ITER,
        api: async () => {
          await store.rows(historyBefore, { ...baseParams, key: hotKey() }, { ...settings, ...historySettings('grants') });
          return 200;
        },
        bare: () => store.rows(history.text, { ...baseParams, source: 'grants_by_key', key: hotKey() }, { ...settings, ...historySettings('grants_by_key') }),
      },
      {
        // A later page (cursor in the middle of the key's 90 days), before and after 140.
        name: 'key history page at mid-span, no 140 (bare)',
        iter: ITER,
        api: async () => {
          await store.rows(historyBefore, { ...baseParams, key: hotKey(), ...midCursor() }, { ...settings, ...historySettings('grants') });
          return 200;
        },
        bare: () =>
          store.rows(
            history.text,
            { ...baseParams, source: 'grants_by_key', key: hotKey(), ...midCursor() },
            { ...settings, ...historySettings('grants_by_key') },
          ),
      },
      {
        name: `holder history (${DAYS} d, page 100)`,
        iter: ITER,
        api: async () =>
          (
            await app.inject({
              method: 'GET',
              url: `/v1/grants?holder=${holder()}&from=${iso(fromSpan)}&to=${iso(endMs)}&limit=100&order=asc`,
              headers: auth(investigator),
            })
          ).statusCode,
        bare: () => store.rows(history.text, { ...baseParams, source: 'grants_by_holder', holder: holder(), fromMs: fromSpan, toMs: endMs }, settings),
      },
      {
        // Before sql/056: the same holder query on `grants` (sorted by key), beside it on grants_by_holder.
        name: `holder history on grants, no 056 (bare)`,
        iter: ITER,
        api: async () => {
          await store.rows(history.text, { ...baseParams, holder: holder(), fromMs: fromSpan, toMs: endMs }, settings);
          return 200;
        },
        bare: () => store.rows(history.text, { ...baseParams, source: 'grants_by_holder', holder: holder(), fromMs: fromSpan, toMs: endMs }, settings),
      },
      {
        // Bare: the API's two queries (the token's key from grant_tokens, sql/170; that key's range of grants_by_key).
        name: 'token lookup',
        iter: ITER,
        api: async () => (await app.inject({ method: 'GET', url: `/v1/grants?token=${grantToken()}&order=asc`, headers: auth(investigator) })).statusCode,
        bare: () => tokenLookupRouted(grantToken()),
      },
      {
        // Before sql/170: the same lookup on `grants` through its bloom-filter skip index, beside the routed one.
        name: 'token lookup on grants, no 170 (bare)',
        iter: ITER,
        api: async () => {
          await store.rows(history.text, { ...baseParams, hasToken: 1, token: grantToken() }, { ...settings, ...historySettings('grants') });
          return 200;
        },
        bare: () => tokenLookupRouted(grantToken()),
      },
      {
        name: 'risk register (build + store)',
        iter: ITER_REPORTS,
        api: async () =>
          (
            await app.inject({
              method: 'POST',
              url: '/v1/reports/risk-register/run',
              headers: { ...auth(auditor), 'content-type': 'application/json' },
              payload: '{}',
            })
          ).statusCode,
        bare: async () => {
          await store.rows(classes.text, { asOfMs: Date.now(), classPrefix: PREFIX.class }, settings);
          return store.rows(usage.text, { classes: ['class-0', 'class-1', 'class-2', 'class-3', 'class-4'], asOfMs: Date.now() }, settings);
        },
      },
      {
        // Before the 30-day PREWHERE (usage.sql): the same usage query reading every closed row through FINAL.
        name: 'risk register usage, no 30-day PREWHERE (bare)',
        iter: ITER_REPORTS,
        api: async () => {
          await store.rows(usageBefore, { classes: ['class-0', 'class-1', 'class-2', 'class-3', 'class-4'], asOfMs: Date.now() }, settings);
          return 200;
        },
        bare: () => store.rows(usage.text, { classes: ['class-0', 'class-1', 'class-2', 'class-3', 'class-4'], asOfMs: Date.now() }, settings),
      },
      {
        // The export job's writer (plan, chunks, stitched Parquet, sha256) to a local
        // file, beside ClickHouse answering the same rows as one Parquet query, drained.
        name: `compliance export, 1 namespace, ${DAYS} d (Parquet)`,
        iter: ITER_REPORTS,
        api: async () => {
          const out = path.join(exportDir, `export-${exportN++}.parquet`);
          const file = await writeGrantsExport(store, { format: 'parquet', fromMs: fromSpan, toMs: endMs + 1, filters: { namespace: namespace() } }, out);
          exportRows += file.rows;
          exportBytes += statSync(out).size;
          rmSync(out);
          return 200;
        },
        bare: async () => {
          let n = 0;
          for await (const chunk of await store.bytes(grantsExport.text, 'Parquet', exportParams(namespace()), settings)) n += (chunk as Buffer).length;
          return n;
        },
      },
      {
        // Through the API the report reads sealed hours (reports/contention/hours.sql); bare: the raw query (contention.sql).
        name: `contention ${DAYS} d by namespace`,
        iter: ITER_REPORTS,
        api: async () =>
          (
            await app.inject({
              method: 'GET',
              url: `/v1/reports/contention?from=${iso(fromSpan)}&to=${iso(endMs)}&by=namespace&top=10`,
              headers: auth(investigator),
            })
          ).statusCode,
        bare: () =>
          store.rows(
            contention.text,
            {
              fromMs: fromSpan,
              toMs: endMs,
              namespace: '',
              class: '',
              by: 'namespace',
              groupLimit: 10_000,
              top: 10,
              bucketSeconds: bucketFor(endMs - fromSpan),
            },
            settings,
          ),
      },
    ];

    let contentionRawP50: number | undefined;
    heading('latency: API (inject) vs the same SQL bare in ClickHouse');
    // BENCH_REPORTS_ONLY (or BENCH_REPORTS_CASES): only the figures whose name contains one of these (comma-separated), e.g. "key history".
    const only = (process.env.BENCH_REPORTS_ONLY ?? process.env.BENCH_REPORTS_CASES ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    for (const c of cases.filter((x) => only.length === 0 || only.some((o) => x.name.includes(o)))) {
      const api: number[] = [];
      const bare: number[] = [];
      for (let i = 0; i < WARMUP; i++) {
        await c.bare();
        await c.api();
      }
      for (let i = 0; i < c.iter; i++) {
        let t = performance.now();
        await c.bare();
        bare.push(performance.now() - t);
        t = performance.now();
        const status = await c.api();
        api.push(performance.now() - t);
        if (status >= 300) throw new Error(`${c.name}: HTTP ${status}`);
      }
      api.sort((a, b) => a - b);
      bare.sort((a, b) => a - b);
      if (c.name === `contention ${DAYS} d by namespace`) contentionRawP50 = percentile(bare, 50);
      for (const p of [50, 95]) {
        report({
          name: `${c.name} p${p}`,
          value: percentile(api, p),
          unit: 'ms',
          baselineName: `bare SQL p${p}`,
          baseline: percentile(bare, p),
          higherIsBetter: false,
        });
      }
    }
    if (contentionRawP50 !== undefined) {
      // Where the sealed-hours path's time goes, query by query (top keys and pending run together).
      heading(
        `contention ${DAYS} d from sealed hours: where the time goes (three runs, ms per query; top keys and pending are asked together and chdb runs them one after the other, so pending's time includes that wait)`,
      );
      const stages = new Map<string, number[]>();
      const window = { from: new Date(fromSpan).toISOString(), to: new Date(endMs).toISOString(), by: 'namespace' as const, top: 10 };
      for (let i = 0; i < 3; i++) {
        await contentionReport({ store, limits: config.reports }, window, endMs, {
          onStage: (name, ms) => stages.set(name, [...(stages.get(name) ?? []), ms]),
        });
      }
      for (const [name, ms] of stages)
        process.stdout.write(
          `${name.padEnd(46)} ${ms
            .map((m) => Math.round(m).toLocaleString('en-US'))
            .join(' / ')
            .padStart(26)}\n`,
        );
    }
    // Where contention's time goes: the same window read plain, read with FINAL,
    // and with FINAL plus the per-key window (the report adds the GROUPING SETS).
    if (only.length > 0) {
      rmSync(exportDir, { recursive: true, force: true });
      return;
    }
    heading(`contention ${DAYS} d: where the time goes (bare SQL, one run each)`);
    const windowParams = { fromMs: fromSpan, toMs: endMs };
    const stages: Array<[string, string]> = [
      [
        'scan grants (no FINAL), count',
        "SELECT count() FROM {db:Identifier}.grants PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')",
      ],
      [
        'grants FINAL, count',
        "SELECT count() FROM {db:Identifier}.grants FINAL PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')",
      ],
      [
        'grants FINAL + window per key, count',
        "SELECT countIf(g) FROM (SELECT lagInFrame(end_kind) OVER w = 'release' AS g FROM {db:Identifier}.grants FINAL PREWHERE granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC') WINDOW w AS (PARTITION BY cluster, key ORDER BY grant_revision, spool_id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW))",
      ],
    ];
    for (const [name, sql] of stages) {
      const t = performance.now();
      await store.rows(sql, windowParams, settings);
      process.stdout.write(
        `${name.padEnd(46)} ${Math.round(performance.now() - t)
          .toLocaleString('en-US')
          .padStart(8)} ms\n`,
      );
    }
    if (!kept)
      report({
        name: 'contention: sealing every hour once (backfill)',
        value: sealMs,
        unit: 'ms',
        baselineName: 'contention raw query p50',
        baseline: contentionRawP50 ?? sealMs,
        higherIsBetter: false,
      });
    if (exportN > 0)
      process.stdout.write(
        `compliance export: ${(Number(exportRows) / exportN).toFixed(0)} rows, ${(exportBytes / exportN / 1e6).toFixed(1)} MB per export on average\n`,
      );
    rmSync(exportDir, { recursive: true, force: true });
  } finally {
    await app.close();
    await close();
  }
}

async function printLayout(store: Awaited<ReturnType<typeof tempStore>>['store'], events: number): Promise<void> {
  heading('physical layout');
  const tables = await store.rows<{ name: string; engine: string; sorting_key: string; primary_key: string; create_table_query: string }>(
    "SELECT name, engine, sorting_key, primary_key, create_table_query FROM system.tables WHERE database = {db:String} AND name IN ('grants', 'grants_by_key', 'grants_by_holder', 'grant_tokens', 'events', 'risk_register', 'risk_register_runs', 'grant_history_reads', 'unprotected_reconciliations', 'contention_seals', 'contention_hours', 'contention_handoffs', 'contention_key_hours', 'contention_pending') ORDER BY name",
    { db: store.database },
  );
  const parts = await store.rows<{ table: string; parts: string; rows: string; bytes: string; raw: string }>(
    'SELECT table, toString(count()) AS parts, toString(sum(rows)) AS rows, formatReadableSize(sum(bytes_on_disk)) AS bytes, toString(sum(bytes_on_disk)) AS raw FROM system.parts WHERE database = {db:String} AND active GROUP BY table',
    { db: store.database },
  );
  const indexes = await store.rows<{ table: string; name: string; type_full: string; granularity: string }>(
    'SELECT table, name, type_full, toString(granularity) AS granularity FROM system.data_skipping_indices WHERE database = {db:String} ORDER BY table, name',
    { db: store.database },
  );
  for (const t of tables) {
    const p = parts.find((x) => x.table === t.name);
    process.stdout.write(
      `${t.name.padEnd(28)} ${t.engine} ORDER BY (${t.sorting_key}); ${p ? `${Number(p.rows).toLocaleString('en-US')} rows in ${p.parts} parts, ${p.bytes}` : 'empty'}\n`,
    );
    for (const i of indexes.filter((x) => x.table === t.name))
      process.stdout.write(`${''.padEnd(28)}   skip index ${i.name}: ${i.type_full}, granularity ${i.granularity}\n`);
  }
  // Bytes on disk per million generated events: every table and projection of the store.
  const perM = (b: number) => (b / (events / 1e6) / 1e6).toFixed(1);
  for (const p of parts) process.stdout.write(`bytes on disk: ${p.table.padEnd(28)} ${perM(Number(p.raw))} MB per million events\n`);
  const total = parts.reduce((a, p) => a + Number(p.raw), 0);
  process.stdout.write(`bytes on disk: ${'all tables'.padEnd(28)} ${perM(total)} MB per million events (${(total / 1e9).toFixed(2)} GB)\n`);
  process.stdout.write(
    'reads: grants FINAL; immutable filters (key, prefix, holder, class, namespace, token, granted_at, cursor) in PREWHERE, before FINAL merges\n',
  );
}

await main();
