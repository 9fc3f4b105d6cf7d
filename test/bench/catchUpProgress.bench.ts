// Catch-up progress that survives stops, and reports while catching up
// (issue 14 item 1), over history written while no tailer led: lock traffic
// with lease expiries and no /sys/clock write at all.
//  - an uninterrupted range-split catch-up: the checkpoint sampled every
//    second (how many samples advanced, the longest stall), and meanwhile
//    GET /v1/grants and GET /v1/tailers in a loop — p50/p99 beside the same
//    requests against the same store once idle;
//  - the same catch-up stopped every few seconds, 5 times, then finished:
//    where each run left the checkpoint, events written per run, total time
//    and events written beside the uninterrupted run.
// Both runs are checked for exact capture. Scale: BENCH_PROGRESS_REVISIONS
// (default 60 000), BENCH_PROGRESS_WINDOWS (default 8), BENCH_PROGRESS_RUN_MS
// (how long each stopped run leads, default 3 000), BENCH_PROGRESS_STOPS
// (default 5; 0 skips the stopped runs).
// Reports during catch-up (issue 22 item 3; issue 41: the tailer in a process of its own) are measured once per way of
// isolating the tailer's inserts from the reports (BENCH_PROGRESS_VARIANTS,
// comma-separated names of VARIANTS below; default all), each catch-up of the
// same history under a label of its own, each beside the same requests on the
// same store idle right after it (the store grows by one copy per variant).
// One variant serves the API from a store whose status reads (/v1/tailers)
// bind their parameters and so queue with every other query, as before the
// status connection (AuditStore.statusRows): its /v1/tailers figures are the
// baseline of the kept variant's.
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { buildApp, type App } from '../../api/app.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import { AuditStore, type StoreOptions } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { HealthState } from '../../platform/health.js';
import { startStoreServer, type StoreServer } from '../../platform/storeServer.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica, type ReplicaOptions } from '../../tailer/replica.js';
import { tailerMetrics, type TailerMetrics } from '../../tailer/tailerMetrics.js';
import { assertExactCapture, headRevision } from '../support/capture.js';
import { startTailerChild, type TailerChild } from '../support/children.js';
import type { ChildSpec } from '../support/tailerProcess.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { Workload } from '../support/workload.js';
import { profiled } from './cpuProfile.js';
import { heading, percentile, report } from './report.js';

const REVISIONS = Number(process.env.BENCH_PROGRESS_REVISIONS ?? 60_000);
const WINDOWS = Number(process.env.BENCH_PROGRESS_WINDOWS ?? 8);
const RUN_MS = Number(process.env.BENCH_PROGRESS_RUN_MS ?? 3_000);
const STOPS = Number(process.env.BENCH_PROGRESS_STOPS ?? 5);
const config = testConfig({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '1000000' });
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger('warn');
const client = createEtcdClient({ name: 'bench', endpoints });
const { store, close } = await tempStore();
const storePath = store.target.mode === 'embedded' ? store.target.path : '';
// How the tailer's store meets the reports' one (the API's store is `store`, as in one platform process).
// "in line": the tailer's inserts bound parameters and so ran one at a time with every report query (before issue 22).
// { apiStore }: the API (and the tailer with it) on a store of these options instead of `store`.
// 'own process': the tailer as a process of its own (`lockaudit tailer` beside `lockaudit api`, issue 41), reaching the
// store this process holds through its store server (platform/storeServer.ts), as a second role process does.
const VARIANTS: Record<string, StoreOptions | 'api store' | 'own process' | { apiStore: StoreOptions }> = {
  'inserts in line with reports': { ingestConnection: false },
  'own insert connection, default threads': { ingestSettings: {} },
  "own insert connection, inserts 1 thread (the API process's store: the default)": 'api store',
  'own insert connection, inserts priority 10': { ingestSettings: { priority: '10' } },
  'own insert connection, inserts 1 thread, status reads in line with reports (before the status connection)': { apiStore: { statusConnection: false } },
  'the tailer in a process of its own over the served store': 'own process',
};
const chosen = (process.env.BENCH_PROGRESS_VARIANTS ?? '')
  .split(',')
  .map((v) => v.trim())
  .filter(Boolean);
const variants = Object.entries(VARIANTS).filter(([name]) => chosen.length === 0 || chosen.some((c) => name.includes(c)));
const options: ReplicaOptions = { electionTtlSeconds: 5, checkpointIntervalMs: 250, catchUpWindows: WINDOWS, splitMinRevisions: 1_000 };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function written(metrics: TailerMetrics): Promise<number> {
  return (await metrics.events.get()).values.reduce((n, v) => n + v.value, 0);
}

function waitUntil(pred: () => boolean, everyMs = 50): Promise<void> {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (pred()) {
        clearInterval(t);
        resolve();
      }
    }, everyMs);
  });
}

/** A store server on the store this process holds, for the tailer of the 'own process' variant. */
async function serve(): Promise<{ server: StoreServer; password: string }> {
  const password = randomBytes(24).toString('base64url');
  return { server: await startStoreServer({ path: storePath, password, listen: { port: 0 } }), password };
}

/** A tailer replica as a child process (test/support/tailerProcess.ts), started and closed as a replica is. */
function childReplica(spec: ChildSpec, onCheckpoint: (revision: bigint) => void): { start(): void; close(): Promise<void>; events(): number } {
  let child: TailerChild | undefined;
  let timer: NodeJS.Timeout | undefined;
  return {
    start() {
      child = startTailerChild(spec);
      timer = setInterval(() => child && onCheckpoint(child.checkpoint), 50);
    },
    async close() {
      clearInterval(timer);
      if (child) onCheckpoint(child.checkpoint);
      await child?.term();
    },
    events: () => child?.durable ?? 0,
  };
}

/** GET `url` in a loop until `stop()`, latencies in ms (sorted). Every answer must be 200. */
async function latencies(app: App, token: string, url: string, stop: () => boolean, atLeast = 0): Promise<number[]> {
  const out: number[] = [];
  while (!stop() || out.length < atLeast) {
    const t0 = performance.now();
    const r = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    out.push(performance.now() - t0);
    if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body.slice(0, 300)}`);
    await sleep(20);
  }
  return out.sort((a, b) => a - b);
}

heading(`catch-up progress over ≥ ${REVISIONS.toLocaleString('en-US')} revisions with expiries and no clock writes, ${WINDOWS} windows`);
const w = new Workload(client, uniqueId('prog'));
const from = (await headRevision(client)) + 1n;
const writeStarted = Date.now();
await w.history(REVISIONS);
const to = await headRevision(client);
process.stdout.write(
  `wrote ${(to - from + 1n).toLocaleString()} revisions, ${w.expected.length.toLocaleString()} lock events in ${((Date.now() - writeStarted) / 1000).toFixed(1)} s, no clock write\n`,
);

const app = await buildApp(
  { config, logger: createLogger('silent'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: createMetricsRegistry() },
  [grantRoutes, tailerRoutes],
);
const { token } = await createApiToken(store, 'bench-investigator', ['investigator']);
const grantsUrl = `/v1/grants?namespace=${w.ns}&limit=100`;

// 1. Uninterrupted, once per variant: checkpoint sampled every second, reports in a loop meanwhile,
// then the same requests on the same store idle.
let uninterrupted = { seconds: NaN, events: NaN };
for (const [variant, opts] of variants) {
  heading(`reports during catch-up: ${variant}`);
  const apiStore =
    typeof opts === 'object' && 'apiStore' in opts ? new AuditStore({ mode: 'embedded', path: storePath, database: store.database }, opts.apiStore) : store;
  const api =
    apiStore === store
      ? app
      : await buildApp(
          {
            config,
            logger: createLogger('silent'),
            store: apiStore,
            verifier: new ApiTokenVerifier(apiStore),
            health: new HealthState(),
            metrics: createMetricsRegistry(),
          },
          [grantRoutes, tailerRoutes],
        );
  const ownProcess = opts === 'own process';
  const tailerStore =
    opts === 'api store' || ownProcess || apiStore !== store
      ? apiStore
      : new AuditStore({ mode: 'embedded', path: storePath, database: store.database }, opts as StoreOptions);
  const label = uniqueId('bench');
  await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'bench' }]);
  const metrics = tailerMetrics(new Registry());
  let checkpoint = from - 1n;
  const served = ownProcess ? await serve() : undefined;
  const replica = served
    ? childReplica({ store: { url: served.server.address, password: served.password }, cluster: { name: label, endpoints }, options }, (r) => (checkpoint = r))
    : new TailerReplica({ cluster: { name: label, endpoints }, store: tailerStore, log, metrics, onCheckpoint: (r) => (checkpoint = r) }, options);
  // How long the event loop (the API's and the tailer's, one process as in `lockaudit start`) was held: what a request waits for besides ClickHouse.
  const loopBusy = monitorEventLoopDelay({ resolution: 10 });
  loopBusy.enable();
  const started = performance.now();
  replica.start();
  const samples: bigint[] = [];
  const sampler = setInterval(() => samples.push(checkpoint), 1_000);
  const caughtUp = (): boolean => checkpoint >= to;
  const {
    result: [grants, tailers],
  } = await profiled(`catchUp-${label}`, () =>
    Promise.all([latencies(api, token, grantsUrl, caughtUp), latencies(api, token, '/v1/tailers', caughtUp), waitUntil(caughtUp)]),
  );
  const seconds = (performance.now() - started) / 1000;
  loopBusy.disable();
  clearInterval(sampler);
  await replica.close();
  if (tailerStore !== store && tailerStore !== apiStore) await tailerStore.close();
  const busy = { grants, tailers };
  let advanced = 0;
  let stall = 0;
  let longest = 0;
  for (let i = 1; i < samples.length; i += 1) {
    if ((samples[i] as bigint) > (samples[i - 1] as bigint)) {
      advanced += 1;
      stall = 0;
    } else longest = Math.max(longest, (stall += 1));
  }
  const events = 'events' in replica ? replica.events() : await written(metrics);
  await served?.server.close();
  if (opts === 'api store') uninterrupted = { seconds, events };
  process.stdout.write(`uninterrupted: ${seconds.toFixed(1)} s, ${events.toLocaleString()} events; checkpoint each second: ${samples.join(' ')}\n`);
  report({ name: `${variant}: catch-up events/s`, value: events / seconds, baselineName: 'events', baseline: events, unit: 'events/s', higherIsBetter: true });
  report({
    name: `${variant}: checkpoint samples (1 s apart) that advanced`,
    value: advanced,
    baselineName: 'samples during the catch-up',
    baseline: Math.max(0, samples.length - 1),
    unit: 'samples',
    higherIsBetter: true,
  });
  report({
    name: `${variant}: longest checkpoint stall`,
    value: longest,
    baselineName: 'catch-up duration',
    baseline: seconds,
    unit: 's',
    higherIsBetter: false,
  });
  await assertExactCapture(store, label, client, from, to, w.expected);

  // The same requests against the same store, idle (every row in, no tailer running).
  const n = Math.max(busy.grants.length, busy.tailers.length, 100);
  let count = 0;
  const enough = (): boolean => ++count > n;
  const loopIdle = monitorEventLoopDelay({ resolution: 10 });
  loopIdle.enable();
  const idleGrants = await latencies(api, token, grantsUrl, enough);
  count = 0;
  const idleTailers = await latencies(api, token, '/v1/tailers', enough);
  loopIdle.disable();
  if (api !== app) await api.close();
  if (apiStore !== store) await apiStore.close();
  process.stdout.write(
    `requests: /v1/grants ${busy.grants.length} during catch-up, ${idleGrants.length} idle; /v1/tailers ${busy.tailers.length} during, ${idleTailers.length} idle\n`,
  );
  for (const p of [50, 99]) {
    report({
      name: `${variant}: GET /v1/grants p${p} during catch-up`,
      value: percentile(busy.grants, p),
      baselineName: `same, idle store`,
      baseline: percentile(idleGrants, p),
      unit: 'ms',
      higherIsBetter: false,
    });
    report({
      name: `${variant}: GET /v1/tailers p${p} during catch-up`,
      value: percentile(busy.tailers, p),
      baselineName: `same, idle store`,
      baseline: percentile(idleTailers, p),
      unit: 'ms',
      higherIsBetter: false,
    });
  }
  for (const p of [50, 99]) {
    report({
      name: `${variant}: event loop delay p${p} during catch-up`,
      value: loopBusy.percentile(p) / 1e6,
      baselineName: 'same, idle store',
      baseline: loopIdle.percentile(p) / 1e6,
      unit: 'ms',
      higherIsBetter: false,
    });
  }
  report({
    name: `${variant}: event loop delay max during catch-up`,
    value: loopBusy.max / 1e6,
    baselineName: 'same, idle store',
    baseline: loopIdle.max / 1e6,
    unit: 'ms',
    higherIsBetter: false,
  });
  report({
    name: `${variant}: GET /v1/tailers max during catch-up`,
    value: busy.tailers.at(-1) ?? NaN,
    baselineName: 'same, idle store',
    baseline: idleTailers.at(-1) ?? NaN,
    unit: 'ms',
    higherIsBetter: false,
  });
}

// 2. Stopped every RUN_MS of leadership, 5 times, then run to the end.
if (STOPS > 0) {
  const label = uniqueId('bench');
  await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'bench' }]);
  const metrics = tailerMetrics(new Registry());
  const started = performance.now();
  let advancedRuns = 0;
  for (let i = 0; i <= STOPS; i += 1) {
    const last = i === STOPS;
    const before = await readCheckpoint(store, label);
    const eventsBefore = await written(metrics);
    let leading = false;
    let checkpoint = before;
    const replica = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, metrics, onLeader: (l) => (leading ||= l), onCheckpoint: (r) => (checkpoint = r) },
      options,
    );
    replica.start();
    await waitUntil(() => leading);
    if (last) await waitUntil(() => checkpoint >= to);
    else await sleep(RUN_MS);
    await replica.close();
    const after = await readCheckpoint(store, label);
    if (!last && after > before) advancedRuns += 1;
    process.stdout.write(
      `${last ? 'final run' : `stop ${i + 1}`}: checkpoint ${before} → ${after} (+${(after - before).toLocaleString()} of ${(to - from + 1n).toLocaleString()} revisions), ${((await written(metrics)) - eventsBefore).toLocaleString()} events written\n`,
    );
  }
  const seconds = (performance.now() - started) / 1000;
  const events = await written(metrics);
  report({
    name: `runs stopped after ${RUN_MS / 1000} s that advanced the checkpoint`,
    value: advancedRuns,
    baselineName: 'runs stopped mid catch-up',
    baseline: STOPS,
    unit: 'runs',
    higherIsBetter: true,
  });
  report({
    name: `catch-up stopped ${STOPS}×: total time`,
    value: seconds,
    baselineName: 'uninterrupted catch-up',
    baseline: uninterrupted.seconds,
    unit: 's',
    higherIsBetter: false,
  });
  report({
    name: `catch-up stopped ${STOPS}×: events written`,
    value: events,
    baselineName: 'uninterrupted catch-up',
    baseline: uninterrupted.events,
    unit: 'events',
    higherIsBetter: false,
  });
  await assertExactCapture(store, label, client, from, to, w.expected);
}

await app.close();
client.close();
await close();
