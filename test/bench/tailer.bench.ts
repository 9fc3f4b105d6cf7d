// Tailer benchmarks, each beside a baseline measured in the same run:
//  - catch-up over ≥ 300 000 revisions at K = 1, 4, 8, 16, 32 range-split
//    windows, each beside the physical limit at the same K: a no-op consumer
//    of K plain etcd watches (one connection each, as the tailer's windows)
//    over the same revision ranges — and beside one no-op watch;
//  - live lag p50/p99 (commit → durable) under a sustained write load;
//  - one revision with 20 000 events (a mass expiry): time and peak memory.
// Every tailer run is also checked for exact capture. Scale: BENCH_REVISIONS
// (default 300 000), BENCH_WINDOWS (the K values, default 1,4,8,16,32);
// BENCH_CATCHUP_ONLY=1 skips the live-lag and mass-expiry parts; BENCH_SINK_VARIANT=<json of the sink
// options, e.g. {"maxDelayMs":1000}> runs each catch-up once more with them and reports its CPU per event
// beside the default's (an A/B in the same run);
// BENCH_CPU_PROFILE_DIR writes a .cpuprofile of each tailer catch-up there.
import path from 'node:path';
import type { Etcd3, IWatchResponse } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { TailerReplica, type ReplicaOptions } from '../../tailer/replica.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { planWindows } from '../../tailer/pipeline.js';
import { assertExactCapture } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { ETCD_DEFAULT_MAX_TXN_OPS, Workload } from '../support/workload.js';
import { profiled } from './cpuProfile.js';
import { formatStages, readProfile, stageTables, TAILER_STAGES, type StageTable } from './cpuStages.js';
import { threadCpu, threadCpuSince } from './threadCpu.js';
import { heading, percentile, report } from './report.js';

const REVISIONS = Number(process.env.BENCH_REVISIONS ?? 300_000);
const CATCHUP_ONLY = process.env.BENCH_CATCHUP_ONLY === '1';
const WINDOWS = (process.env.BENCH_WINDOWS ?? '1,4,8,16,32').split(',').map(Number);
const SINK_VARIANT = process.env.BENCH_SINK_VARIANT ? (JSON.parse(process.env.BENCH_SINK_VARIANT) as ReplicaOptions['sink']) : undefined;
// The tailer's smallest window, given to the no-op split too so both cut the range alike.
const SPLIT_MIN_REVISIONS = 1_000;
const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger('warn');
const client = createEtcdClient({ name: 'bench', endpoints });
const { store, close } = await tempStore();

async function head(c: Etcd3 = client): Promise<bigint> {
  return BigInt((await c.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

/** The baseline: one plain watch from `from`, counting events until it passes `to`. */
async function noopWatch(from: bigint, to: bigint, c: Etcd3 = client): Promise<{ events: number; seconds: number }> {
  const started = process.hrtime.bigint();
  let events = 0;
  const watcher = c.watch().inRange({ start: '/l/', end: '/sys0' }).startRevision(from.toString()).withPreviousKV().watcher();
  await new Promise<void>((resolve, reject) => {
    watcher.on('error', reject);
    watcher.on('data', (res: IWatchResponse) => {
      for (const ev of res.events) {
        if (BigInt(ev.kv.mod_revision) > to) return resolve();
        events += 1;
      }
    });
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await watcher.cancel().catch(() => undefined);
  return { events, seconds };
}

/**
 * The physical limit at K: K plain watches over the tailer's own split of
 * [from, to] (planWindows), each on its own connection as the tailer's
 * catch-up windows are, consuming nothing. Ends when every window is through.
 */
async function noopSplit(from: bigint, to: bigint, k: number): Promise<{ events: number; seconds: number; windows: number; cpuMs: number }> {
  const specs = planWindows(from - 1n, to, k, BigInt(SPLIT_MIN_REVISIONS));
  const clients = specs.map(() => createEtcdClient({ name: 'bench-noop', endpoints }));
  try {
    const started = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    const parts = await Promise.all(specs.map((w, i) => noopWatch(w.start, w.end === undefined ? to : w.end - 1n, clients[i])));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const used = process.cpuUsage(cpu);
    return { events: parts.reduce((n, p) => n + p.events, 0), seconds, windows: specs.length, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    for (const c of clients) c.close();
  }
}

/**
 * Waits (up to 60 s) until the store merges nothing: the merges an earlier catch-up left behind would otherwise
 * run on this process's threads during the next one and be counted as its CPU.
 */
async function settled(): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const [row] = await store.rows<{ n: string }>('SELECT toString(count()) AS n FROM system.merges');
    if (row?.n === '0') return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function tailerCatchUp(from: bigint, to: bigint, options: ReplicaOptions): Promise<{ seconds: number; label: string }> {
  await settled();
  const label = uniqueId('bench');
  await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'bench' }]);
  const started = process.hrtime.bigint();
  let done: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    done = resolve;
  });
  const replica = new TailerReplica(
    { cluster: { name: label, endpoints }, store, log, onWatermark: (r) => r >= to && done() },
    { electionTtlSeconds: 5, checkpointIntervalMs: 250, ...options },
  );
  replica.start();
  await reached;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await replica.close();
  return { seconds, label };
}

heading(`tailer catch-up (≥ ${REVISIONS.toLocaleString('en-US')} revisions)`);
const w = new Workload(client, uniqueId('bench'));
const from = (await head()) + 1n;
const writeStarted = Date.now();
await w.history(REVISIONS);
const to = BigInt(await w.clock());
await w.clock(); // a change after the range: it tells the plain watch the range is over
process.stdout.write(
  `wrote ${(to - from + 1n).toLocaleString()} revisions, ${w.expected.length.toLocaleString()} lock events in ${((Date.now() - writeStarted) / 1000).toFixed(1)} s\n`,
);

const baseline = await noopWatch(from, to);
const stageTablesSeen: StageTable[] = [];
const baseRate = baseline.events / baseline.seconds;
report({ name: 'no-op consumer, one etcd watch', value: baseRate, baselineName: 'same', baseline: baseRate, unit: 'events/s', higherIsBetter: true });

// At each K: the no-op limit, then the tailer (ratio tailer / no-op at the same K), and each against one watch.
for (const k of WINDOWS) {
  const limit = await noopSplit(from, to, k);
  if (limit.events !== baseline.events) throw new Error(`no-op split at K=${k} saw ${limit.events} events, one watch ${baseline.events}`);
  const limitRate = limit.events / limit.seconds;
  report({
    name: `no-op consumer, ${k} range-split watches`,
    value: limitRate,
    baselineName: 'no-op consumer, one etcd watch',
    baseline: baseRate,
    unit: 'events/s',
    higherIsBetter: true,
  });
  await settled();
  const threads = threadCpu();
  const prof = await profiled(`tailer-catchup-K${k}`, () =>
    tailerCatchUp(from, to, k === 1 ? { catchUpWindows: 1 } : { catchUpWindows: k, splitMinRevisions: SPLIT_MIN_REVISIONS }),
  );
  const byThread = threadCpuSince(threads);
  const run = prof.result;
  const events = baseline.events;
  const perEventUs = (ms: number): number => (ms * 1000) / events;
  const storeMs = [...byThread].filter(([g]) => g.startsWith('store: ')).reduce((n, [, ms]) => n + ms, 0);
  const shown = [...byThread].filter(([, ms]) => perEventUs(ms) >= 0.1).sort((a, b) => b[1] - a[1]);
  process.stdout.write(
    `  (K=${k}: ${prof.wallSeconds.toFixed(1)} s wall, ${prof.cpuSeconds.toFixed(1)} s CPU of this process on all threads)\n` +
      `  CPU per captured event at K=${k}: the store engine's threads ${perEventUs(storeMs).toFixed(1)} µs; by thread: ` +
      `${shown.map(([g, ms]) => `${g} ${perEventUs(ms).toFixed(1)}`).join(', ')}\n`,
  );
  report({
    name: `tailer CPU per captured event, ${k} window(s)`,
    value: perEventUs(prof.cpuSeconds * 1000),
    baselineName: `no-op consumer of ${limit.windows} watch(es)`,
    baseline: perEventUs(limit.cpuMs),
    unit: 'µs',
    higherIsBetter: false,
  });
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  if (dir) {
    const [table] = stageTables(readProfile(path.join(dir, `tailer-catchup-K${k}.cpuprofile`)), TAILER_STAGES, [
      { name: `K=${k}`, startUs: 0, endUs: Number.MAX_SAFE_INTEGER, units: events },
    ]);
    if (table) stageTablesSeen.push(table);
  }
  const rate = baseline.events / run.seconds;
  report({
    name: `tailer catch-up, ${k} window(s), end to end`,
    value: rate,
    baselineName: `no-op consumer, ${limit.windows} watch(es)`,
    baseline: limitRate,
    unit: 'events/s',
    higherIsBetter: true,
  });
  report({
    name: `tailer catch-up, ${k} window(s), vs one watch`,
    value: rate,
    baselineName: 'no-op consumer, one etcd watch',
    baseline: baseRate,
    unit: 'events/s',
    higherIsBetter: true,
  });
  await assertExactCapture(store, run.label, client, from, to, w.expected);
  if (SINK_VARIANT) {
    await settled();
    const cpu = process.cpuUsage();
    const variant = await tailerCatchUp(from, to, {
      ...(k === 1 ? { catchUpWindows: 1 } : { catchUpWindows: k, splitMinRevisions: SPLIT_MIN_REVISIONS }),
      sink: SINK_VARIANT,
    });
    const used = process.cpuUsage(cpu);
    report({
      name: `tailer CPU per captured event, ${k} window(s), sink ${JSON.stringify(SINK_VARIANT)}`,
      value: perEventUs((used.user + used.system) / 1000),
      baselineName: 'the default sink, this run',
      baseline: perEventUs(prof.cpuSeconds * 1000),
      unit: 'µs',
      higherIsBetter: false,
    });
    report({
      name: `tailer catch-up, ${k} window(s), sink ${JSON.stringify(SINK_VARIANT)}`,
      value: baseline.events / variant.seconds,
      baselineName: 'the default sink, this run',
      baseline: rate,
      unit: 'events/s',
      higherIsBetter: true,
    });
    await assertExactCapture(store, variant.label, client, from, to, w.expected);
  }
}
if (stageTablesSeen.length > 0) {
  heading("the tailer's cost model: its main thread's CPU per captured event, by stage (the store engine's threads are in the line above each)");
  process.stdout.write(`${formatStages(stageTablesSeen, 'event')}\n`);
}

if (!CATCHUP_ONLY) {
  heading('live lag under a sustained write load (commit → durable in ClickHouse)');
  {
    const label = uniqueId('bench');
    await store.insert('checkpoints', [{ cluster: label, revision: ((await head()) - 0n).toString(), leader: 'bench' }]);
    const waiting: Array<{ revision: bigint; at: number }> = [];
    const lags: number[] = [];
    const replica = new TailerReplica(
      {
        cluster: { name: label, endpoints },
        store,
        log,
        onWatermark: (r) => {
          const now = Date.now();
          while (waiting.length > 0 && (waiting[0] as { revision: bigint }).revision <= r) lags.push(now - (waiting.shift() as { at: number }).at);
        },
      },
      { electionTtlSeconds: 5, checkpointIntervalMs: 250, sink: { maxDelayMs: 50 } },
    );
    replica.start();
    await new Promise((r) => setTimeout(r, 2_000));
    const lw = new Workload(client, uniqueId('live'));
    const s = await lw.session();
    const rate = 500; // grants + releases per second
    const seconds = 20;
    const t0 = Date.now();
    let n = 0;
    while (Date.now() - t0 < seconds * 1_000) {
      const batch = Array.from({ length: rate / 10 }, () => n++);
      await Promise.all(
        batch.map(async (i) => {
          const rev = await lw.grant(s, `k/${i}`);
          waiting.push({ revision: BigInt(rev), at: Date.now() });
        }),
      );
      waiting.sort((a, b) => (a.revision < b.revision ? -1 : 1));
      const sleepMs = t0 + (n / rate) * 1_000 - Date.now();
      if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
    }
    const end = BigInt(await lw.clock());
    while ((await readCheckpoint(store, label)) < end) await new Promise((r) => setTimeout(r, 100));
    await replica.close();
    lags.sort((a, b) => a - b);
    // Baseline: the same writes seen by a plain watch (commit → delivered), measured now.
    const watchLags: number[] = [];
    {
      const pending = new Map<string, number>();
      const watcher = await client.watch().prefix(`/l/${lw.ns}/w/`).create();
      let got = 0;
      const all = new Promise<void>((resolve) => {
        watcher.on('put', (kv) => {
          const at = pending.get(kv.key.toString());
          if (at !== undefined) watchLags.push(Date.now() - at);
          got += 1;
          if (got === 1_000) resolve();
        });
      });
      for (let i = 0; i < 1_000; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, async (_, j) => {
            const key = `/l/${lw.ns}/w/${i + j}`;
            pending.set(key, Date.now());
            await client.put(key).value('x');
          }),
        );
        await new Promise((r) => setTimeout(r, 100));
      }
      await all;
      await watcher.cancel();
      watchLags.sort((a, b) => a - b);
    }
    report({
      name: `live lag p50 at ${rate} grants/s`,
      value: percentile(lags, 50),
      baselineName: 'plain watch delivery p50',
      baseline: percentile(watchLags, 50),
      unit: 'ms',
      higherIsBetter: false,
    });
    report({
      name: `live lag p99 at ${rate} grants/s`,
      value: percentile(lags, 99),
      baselineName: 'plain watch delivery p99',
      baseline: percentile(watchLags, 99),
      unit: 'ms',
      higherIsBetter: false,
    });
  }

  heading('one revision with 20 000 events (mass expiry)');
  {
    const label = uniqueId('bench');
    const mw = new Workload(client, uniqueId('mass'));
    await store.insert('checkpoints', [{ cluster: label, revision: (await head()).toString(), leader: 'bench' }]);
    let target = 0n;
    let reachedAt = 0;
    const replica = new TailerReplica(
      {
        cluster: { name: label, endpoints },
        store,
        log,
        onWatermark: (r) => {
          if (target > 0n && r >= target && reachedAt === 0) reachedAt = Date.now();
        },
      },
      { electionTtlSeconds: 5, checkpointIntervalMs: 250 },
    );
    replica.start();
    const s = await mw.session();
    const paths = Array.from({ length: 20_000 }, (_, i) => `m/${i}`);
    for (let i = 0; i < paths.length; i += ETCD_DEFAULT_MAX_TXN_OPS) await mw.grantMany(s, paths.slice(i, i + ETCD_DEFAULT_MAX_TXN_OPS));
    const settle = BigInt(await mw.clock());
    while ((await readCheckpoint(store, label)) < settle) await new Promise((r) => setTimeout(r, 100));
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 10);
    const t0 = Date.now();
    const ex = await mw.expire(s);
    target = BigInt(ex.revision);
    while (reachedAt === 0) await new Promise((r) => setTimeout(r, 20));
    clearInterval(sampler);
    await replica.close();
    // Baseline: a plain watch receiving the same revision (from etcd, no decoding or writing).
    await mw.clock();
    const b0 = Date.now();
    await noopWatch(target, target);
    const watchMs = Date.now() - b0;
    report({
      name: '20 000-event revision: expiry → durable',
      value: reachedAt - t0,
      baselineName: 'plain watch of that revision',
      baseline: watchMs,
      unit: 'ms',
      higherIsBetter: false,
    });
    report({
      name: '20 000-event revision: peak RSS growth',
      value: (peak - rssBefore) / 1024 / 1024,
      baselineName: 'RSS before (MiB)',
      baseline: rssBefore / 1024 / 1024,
      unit: 'MiB',
      higherIsBetter: false,
    });
  }
}

client.close();
await close();
