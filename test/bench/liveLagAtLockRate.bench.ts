// Live lag at full lock throughput. First the highest acquire+release rate
// the lock API (in-process, real fastify app) reaches on this machine's etcd:
// the best of 1, 16 and 64 clients. Then the API is driven at that rate, paced,
// for BENCH_LIVE_LAG_SECONDS (default 300; e.g. 20 for a quick check) with a
// tailer running in a process of its own (liveLagTailer.ts), and the bench
// prints the live lag p50/p99 — a grant's or release's commit (its txn's
// answer reaching the lock service) → durable in ClickHouse (the tailer's
// watermark passing it) — beside
// a plain etcd watch's delivery of the same revisions, and the tailer
// process's CPU seconds per second and RSS (its own process.cpuUsage and
// memoryUsage). BENCH_LIVE_PROBE_SECONDS: seconds per client level when
// measuring the highest rate (default 5).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { benchCaller, lockApp, type LockApp } from '../support/lockApp.js';
import type { TailerMessage } from './liveLagTailer.js';
import { heading, percentile, report } from './report.js';

const SECONDS = Number(process.env.BENCH_LIVE_LAG_SECONDS ?? 300);
const PROBE_SECONDS = Number(process.env.BENCH_LIVE_PROBE_SECONDS ?? 5);
const LEVELS = [1, 16, 64];

interface Setup {
  la: LockApp;
  client: string;
  session: string;
  ns: string;
  className: string;
}

/** One acquire+release of key k-<n>. */
async function cycle(s: Setup, n: number): Promise<void> {
  const key = `${s.ns}/k-${n}`;
  const got = await s.la.call<{ token: string }>('POST', '/v1/locks/acquire', s.client, { key, session: s.session, class: s.className });
  if (got.status !== 200) throw new Error(`acquire answered ${got.status}: ${JSON.stringify(got.body)}`);
  const rel = await s.la.call('POST', '/v1/locks/release', s.client, { key, session: s.session, token: got.body.token });
  if (rel.status !== 200) throw new Error(`release answered ${rel.status}`);
}

/** Closed loop: `clients` callers, each cycling as fast as it can for `seconds`; cycles per second. */
async function flatOut(s: Setup, clients: number, seconds: number): Promise<number> {
  let cycles = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      while (performance.now() < until) {
        await cycle(s, c);
        cycles++;
      }
    }),
  );
  return cycles / ((performance.now() - started) / 1000);
}

/** Paced: cycle i starts no earlier than i / rate s after the start, on `clients` callers; cycles per second reached. */
async function paced(s: Setup, clients: number, rate: number, seconds: number): Promise<number> {
  let next = 0;
  let cycles = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (;;) {
        const slot = started + (next++ * 1000) / rate;
        // Behind schedule at the end: stop anyway, the window is `seconds` long and the rate is what was reached in it.
        if (slot >= until || performance.now() >= until) return;
        const wait = slot - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        await cycle(s, c);
        cycles++;
      }
    }),
  );
  return cycles / ((performance.now() - started) / 1000);
}

function startTailer(): Promise<{ child: ChildProcess; messages: (on: (m: TailerMessage) => void) => void }> {
  const child = fork(fileURLToPath(new URL('./liveLagTailer.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const listeners: Array<(m: TailerMessage) => void> = [];
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the tailer process exited (${code}) before it was ready`)));
    child.on('message', (m: TailerMessage) => {
      for (const l of listeners) l(m);
      if (m.type === 'ready') resolve({ child, messages: (on) => listeners.push(on) });
    });
  });
}

async function main(): Promise<void> {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  const ns = uniqueId('live');
  const className = `${ns}-fenced`;
  const temp = await tempStore();
  // The default keyspace root: the tailer sees this traffic.
  const la = await lockApp(config, temp.store);
  const etcd = new Etcd3({ hosts: cluster.endpoints });
  let stopKeepalive: (() => void) | undefined;
  let tailer: ChildProcess | undefined;
  try {
    const caller = await benchCaller(la, ns, className);
    stopKeepalive = caller.stop;
    const { client, session } = caller;
    const s: Setup = { la, client, session, ns, className };

    heading(`live lag at full lock throughput (etcd ${cluster.endpoints.join(',')})`);
    await flatOut(s, 4, 2); // warm-up
    let best = { clients: 1, rate: 0 };
    for (const c of LEVELS) {
      const rate = await flatOut(s, c, PROBE_SECONDS);
      process.stdout.write(`   highest rate: ${c} client(s) reach ${rate.toFixed(0)} acquire+release cycles/s\n`);
      if (rate > best.rate) best = { clients: c, rate };
    }
    process.stdout.write(
      `   driving ${best.rate.toFixed(0)} cycles/s (${(2 * best.rate).toFixed(0)} commits/s) on ${best.clients} client(s) for ${SECONDS} s with a tailer running (pid below)\n`,
    );

    const started = await startTailer();
    tailer = started.child;
    process.stdout.write(`   tailer process pid ${tailer.pid}\n`);
    // Commits waiting for the watermark, and for the plain watch by revision (the watch may deliver before the commit is noted).
    const pending: Array<{ revision: bigint; at: number }> = [];
    const lags: number[] = [];
    const commitAt = new Map<string, number>();
    const seenAt = new Map<string, number>();
    const watchLags: number[] = [];
    let watermarkAt = 0;
    const usage: Array<{
      cpuMs: number;
      rssBytes: number;
      heapBytes: number;
      heapTotalBytes: number;
      externalBytes: number;
      anonBytes: number;
      fileBytes: number;
      at: number;
    }> = [];
    let purged: (p: { before: number; after: number }) => void = () => undefined;
    const purge = new Promise<{ before: number; after: number }>((r) => (purged = r));
    const engine: Array<{ metrics: Record<string, number>; at: number }> = [];
    let watermark = 0n;
    let closed: () => void = () => undefined;
    const isClosed = new Promise<void>((r) => (closed = r));
    started.messages((m) => {
      if (m.type === 'usage') usage.push(m);
      else if (m.type === 'engine') engine.push(m);
      else if (m.type === 'purged') purged(m);
      else if (m.type === 'closed') closed();
      else if (m.type === 'watermark') {
        watermark = BigInt(m.revision);
        watermarkAt = m.at;
        let kept = 0;
        for (const p of pending) {
          if (p.revision <= watermark) lags.push(m.at - p.at);
          else pending[kept++] = p;
        }
        pending.length = kept;
      }
    });
    // The baseline: a plain watch on the same keys, commit → delivered to this process.
    const watcher = await etcd.watch().prefix(`/l/${ns}/`).create();
    watcher.on('data', (res) => {
      const now = Date.now();
      for (const e of res.events) {
        const rev = String(e.kv.mod_revision);
        const at = commitAt.get(rev);
        if (at === undefined) seenAt.set(rev, now);
        else {
          watchLags.push(Math.max(0, now - at));
          commitAt.delete(rev);
        }
      }
    });

    // A commit is noted when its txn's answer reaches the lock service (every successful txn: grants and releases).
    const lockEtcd = la.service.parts.etcd;
    const txn = lockEtcd.txn.bind(lockEtcd);
    let measuring = false;
    lockEtcd.txn = async (...args) => {
      const res = await txn(...args);
      if (!measuring || !res.succeeded) return res;
      const at = Date.now();
      const rev = String(res.header.revision);
      const revision = BigInt(rev);
      if (revision <= watermark) lags.push(Math.max(0, watermarkAt - at));
      else pending.push({ revision, at });
      const seen = seenAt.get(rev);
      if (seen === undefined) commitAt.set(rev, at);
      else {
        watchLags.push(Math.max(0, seen - at));
        seenAt.delete(rev);
      }
      return res;
    };
    const t0 = Date.now();
    measuring = true;
    const rate = await paced(s, best.clients, best.rate, SECONDS);
    measuring = false;
    const t1 = Date.now();
    const last = pending.reduce((m, p) => (p.revision > m ? p.revision : m), 0n);
    while (watermark < last) await new Promise((r) => setTimeout(r, 50));
    await watcher.cancel();
    tailer.send({ type: 'purge' });
    const afterPurge = await purge;
    tailer.send({ type: 'stop' });
    await isClosed;
    tailer = undefined;

    lags.sort((a, b) => a - b);
    watchLags.sort((a, b) => a - b);
    // CPU and RSS over the driven window only (not the tailer's start-up): the last sample before it, then those inside.
    const idle = usage.filter((u) => u.at < t0).at(-1) ?? usage[0]!;
    const inside = [idle, ...usage.filter((u) => u.at >= t0 && u.at <= t1)];
    const lastUsage = inside[inside.length - 1]!;
    const cpuPerSecond = (lastUsage.cpuMs - idle.cpuMs) / (lastUsage.at - idle.at);
    const rss = inside.map((u) => u.rssBytes / 1024 / 1024);
    process.stdout.write(`   reached ${rate.toFixed(0)} cycles/s (${lags.length} commits measured, ${watchLags.length} seen by the plain watch)\n`);
    report({
      name: `live lag p50 at ${best.rate.toFixed(0)} lock cycles/s`,
      value: percentile(lags, 50),
      baselineName: 'plain watch delivery p50',
      baseline: percentile(watchLags, 50),
      unit: 'ms',
      higherIsBetter: false,
    });
    report({
      name: `live lag p99 at ${best.rate.toFixed(0)} lock cycles/s`,
      value: percentile(lags, 99),
      baselineName: 'plain watch delivery p99',
      baseline: percentile(watchLags, 99),
      unit: 'ms',
      higherIsBetter: false,
    });
    report({
      name: 'paced lock rate reached with the tailer',
      value: rate,
      baselineName: 'highest rate without it',
      baseline: best.rate,
      unit: 'cycles/s',
      higherIsBetter: true,
    });
    report({ name: 'tailer process CPU', value: cpuPerSecond, baselineName: 'one core', baseline: 1, unit: 'cpu-s/s', higherIsBetter: false });
    report({
      name: 'tailer process RSS, peak',
      value: Math.max(...rss),
      baselineName: 'RSS idle, before the load',
      baseline: rss[0]!,
      unit: 'MiB',
      higherIsBetter: false,
    });
    report({
      name: 'tailer process RSS, end',
      value: rss[rss.length - 1]!,
      baselineName: 'RSS idle, before the load',
      baseline: rss[0]!,
      unit: 'MiB',
      higherIsBetter: false,
    });
    // Flat after warm-up? The first minute is warm-up (caches, the sink's buffers, V8's heap sizing); then RSS, V8's heap
    // and the native rest (RSS − heap − external) at each minute, and the end against the one-minute mark.
    const mib = (b: number): string => (b / 1024 / 1024).toFixed(0);
    const warm = inside.find((u) => u.at >= t0 + 60_000);
    for (const u of inside.filter((x, i) => i === 0 || Math.floor((x.at - t0) / 60_000) !== Math.floor((inside[i - 1]!.at - t0) / 60_000))) {
      process.stdout.write(
        `   t+${Math.round((u.at - t0) / 1000)} s: RSS ${mib(u.rssBytes)} MiB = V8 heap ${mib(u.heapBytes)} (committed ${mib(u.heapTotalBytes)}) + external ${mib(u.externalBytes)} + native ${mib(u.rssBytes - u.heapBytes - u.externalBytes)}; anonymous ${mib(u.anonBytes)} + file-backed ${mib(u.fileBytes)}\n`,
      );
      // The engine's own account of the native side at that moment (its memory tracker; caches inside it).
      const e = engine.filter((x) => x.at <= u.at + 1_000).at(-1);
      if (e)
        process.stdout.write(
          `      ClickHouse: ${Object.entries(e.metrics)
            .filter(([, v]) => v > 0)
            .map(([k, v]) => `${k} ${mib(v)}`)
            .join(', ')} MiB\n`,
        );
    }
    if (warm) {
      report({
        name: 'tailer RSS, end',
        value: lastUsage.rssBytes / 1024 / 1024,
        baselineName: 'RSS after one minute (warm)',
        baseline: warm.rssBytes / 1024 / 1024,
        unit: 'MiB',
        higherIsBetter: false,
      });
      report({
        name: 'tailer V8 heap, end',
        value: lastUsage.heapBytes / 1024 / 1024,
        baselineName: 'V8 heap after one minute',
        baseline: warm.heapBytes / 1024 / 1024,
        unit: 'MiB',
        higherIsBetter: false,
      });
      const native = (u: { rssBytes: number; heapBytes: number; externalBytes: number }): number => (u.rssBytes - u.heapBytes - u.externalBytes) / 1024 / 1024;
      report({
        name: 'tailer native memory (RSS − V8), end',
        value: native(lastUsage),
        baselineName: 'native after one minute',
        baseline: native(warm),
        unit: 'MiB',
        higherIsBetter: false,
      });
      report({
        name: 'tailer V8 heap committed, end',
        value: lastUsage.heapTotalBytes / 1024 / 1024,
        baselineName: 'committed after one minute',
        baseline: warm.heapTotalBytes / 1024 / 1024,
        unit: 'MiB',
        higherIsBetter: false,
      });
      // Anonymous memory outside V8's committed heap and the buffers it tracks: the engine, gRPC's native side, stacks.
      const outside = (u: typeof lastUsage): number => (u.anonBytes - u.heapTotalBytes - u.externalBytes) / 1024 / 1024;
      report({
        name: 'tailer anonymous RSS outside V8, end',
        value: outside(lastUsage),
        baselineName: 'the same after one minute',
        baseline: outside(warm),
        unit: 'MiB',
        higherIsBetter: false,
      });
      report({
        name: 'tailer anonymous RSS, end',
        value: lastUsage.anonBytes / 1024 / 1024,
        baselineName: 'anonymous after one minute',
        baseline: warm.anonBytes / 1024 / 1024,
        unit: 'MiB',
        higherIsBetter: false,
      });
      // Flat or growing: the second half's samples against the first half's (after warm-up), mean against mean.
      const settled = inside.filter((u) => u.at >= warm.at);
      const half = Math.floor(settled.length / 2);
      const mean = (xs: typeof settled): number => xs.reduce((a, u) => a + u.rssBytes, 0) / xs.length / 1024 / 1024;
      if (half > 0)
        report({
          name: 'tailer RSS, mean of the second half',
          value: mean(settled.slice(half)),
          baselineName: 'mean of the first half after warm-up',
          baseline: mean(settled.slice(0, half)),
          unit: 'MiB',
          higherIsBetter: false,
        });
    }
    report({
      name: 'tailer anonymous RSS after SYSTEM JEMALLOC PURGE',
      value: afterPurge.after / 1024 / 1024,
      baselineName: 'just before it, load over',
      baseline: afterPurge.before / 1024 / 1024,
      unit: 'MiB',
      higherIsBetter: false,
    });
  } finally {
    stopKeepalive?.();
    tailer?.kill();
    await la.close();
    await etcd.delete().prefix(`/l/${ns}/`);
    etcd.close();
    await temp.close();
  }
}

await main();
