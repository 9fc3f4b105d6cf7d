// Lock API acquire+release: latency p50/p99 and throughput at 1, 16 and 64
// concurrent clients (through the real fastify app, in-process), beside a
// bare etcd txn pair of the same shape measured in the same run. Seeds'
// target: acquire p99 ≤ 50 ms. Runs on a private keyspace root, so the
// tailer sees none of it. Each level also prints the etcd requests per cycle
// of both, by gRPC method, from etcd's own /metrics (messages received).
// API and bare run in alternating slices, so both see the same load from the
// machine's other tenants. BENCH_LOCK_SECONDS: seconds of each per level
// (default 5), in BENCH_LOCK_ROUNDS slices (default 5); BENCH_LOCK_LEVELS: the
// client counts (default 1,16,64); BENCH_LOCK_PROFILE=<dir>: a CPU profile of
// this process (the API and its in-process clients) during each API level.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { Etcd3 } from 'etcd3';
import { barePair, reportAgainstBare } from './barePair.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { benchCaller, lockApp } from '../support/lockApp.js';
import { heading, percentile, report } from './report.js';

const SECONDS = Number(process.env.BENCH_LOCK_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_LOCK_ROUNDS ?? 5);
const LEVELS = (process.env.BENCH_LOCK_LEVELS ?? '1,16,64').split(',').map(Number);

interface Run {
  acquireMs: number[];
  cycles: number;
  seconds: number;
  /** This process's CPU (user + system) per cycle, ms: the API and its in-process clients, or the bare etcd client. */
  cpuMsPerCycle: number;
}

async function drive(concurrency: number, cycle: (client: number) => Promise<number>, seconds = SECONDS): Promise<Run> {
  const acquireMs: number[] = [];
  let cycles = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      while (performance.now() < until) {
        acquireMs.push(await cycle(client));
        cycles++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return {
    acquireMs: acquireMs.sort((a, b) => a - b),
    cycles,
    seconds: (performance.now() - started) / 1000,
    cpuMsPerCycle: (used.user + used.system) / 1000 / cycles,
  };
}

/** etcd's own count of gRPC messages received, by method (a unary call is one; each keepalive on a stream is one). */
async function etcdRequests(endpoints: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const endpoint of endpoints) {
    const text = await (await fetch(`${endpoint}/metrics`)).text();
    for (const m of text.matchAll(/^grpc_server_msg_received_total\{[^}]*grpc_method="([^"]+)"[^}]*\} (\S+)$/gm)) {
      counts.set(m[1] as string, (counts.get(m[1] as string) ?? 0) + Number(m[2]));
    }
  }
  return counts;
}

/** Runs `fn` under the V8 CPU profiler when BENCH_LOCK_PROFILE names a directory; the profile goes to <dir>/<name>.cpuprofile. */
async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_LOCK_PROFILE;
  if (!dir) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

/** Drives a level and reports the etcd requests it cost per cycle, e.g. "Txn 2.00 + Range 0.01". */
interface Counted extends Run {
  /** etcd requests by method over the run. */
  requests: Map<string, number>;
}

async function counted(endpoints: readonly string[], concurrency: number, cycle: (client: number) => Promise<number>, seconds: number): Promise<Counted> {
  const before = await etcdRequests(endpoints);
  const run = await drive(concurrency, cycle, seconds);
  const after = await etcdRequests(endpoints);
  const requests = new Map<string, number>();
  for (const [method, n] of after) requests.set(method, n - (before.get(method) ?? 0));
  return { ...run, requests };
}

function merge(runs: readonly Counted[]): Counted {
  const requests = new Map<string, number>();
  for (const r of runs) for (const [m, n] of r.requests) requests.set(m, (requests.get(m) ?? 0) + n);
  const cycles = runs.reduce((n, r) => n + r.cycles, 0);
  return {
    acquireMs: runs.flatMap((r) => r.acquireMs).sort((a, b) => a - b),
    cycles,
    seconds: runs.reduce((n, r) => n + r.seconds, 0),
    cpuMsPerCycle: runs.reduce((n, r) => n + r.cpuMsPerCycle * r.cycles, 0) / cycles,
    requests,
  };
}

/** Requests per cycle, e.g. "Txn 2.00 + Range 0.01", and their sum. */
function perCycle(run: Counted): { text: string; total: number } {
  const parts: string[] = [];
  let total = 0;
  for (const [method, n] of run.requests) {
    const per = n / run.cycles;
    if (per < 0.005) continue;
    total += per;
    parts.push(`${method} ${per.toFixed(2)}`);
  }
  return { text: parts.join(' + ') || 'none', total };
}

/**
 * API and bare in alternating slices (ROUNDS of each per level), so both see the same load from the
 * machine's other tenants; one round when profiling, so the profile holds only the API.
 */
async function interleaved(
  endpoints: readonly string[],
  concurrency: number,
  api: (client: number) => Promise<number>,
  bare: (client: number) => Promise<number>,
): Promise<{ a: Counted; b: Counted }> {
  const rounds = process.env.BENCH_LOCK_PROFILE ? 1 : ROUNDS;
  const as: Counted[] = [];
  const bs: Counted[] = [];
  for (let r = 0; r < rounds; r++) {
    bs.push(await counted(endpoints, concurrency, bare, SECONDS / rounds));
    as.push(await profiled(`lockApi-${concurrency}`, () => counted(endpoints, concurrency, api, SECONDS / rounds)));
  }
  return { a: merge(as), b: merge(bs) };
}

async function main(): Promise<void> {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  const root = `/${uniqueId('bench')}`;
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  const temp = await tempStore();
  const la = await lockApp(config, temp.store, { root });
  const etcd = new Etcd3({ hosts: cluster.endpoints });
  let stopKeepalive: (() => void) | undefined;
  let closePair: (() => Promise<void>) | undefined;
  try {
    const caller = await benchCaller(la, ns, className);
    stopKeepalive = caller.stop;
    const { client, session } = caller;

    // Baseline: the same two txns, straight to etcd (no HTTP, auth, validation, class or session logic).
    const pair = await barePair(etcd, root, ns, className);
    closePair = pair.close;
    const bare = pair.cycle;

    const api = async (clientNo: number): Promise<number> => {
      const key = `${ns}/k-${clientNo}`;
      const t0 = performance.now();
      const got = await la.call<{ token: string }>('POST', '/v1/locks/acquire', client, { key, session, class: className });
      const acquired = performance.now() - t0;
      if (got.status !== 200) throw new Error(`acquire answered ${got.status}: ${JSON.stringify(got.body)}`);
      const rel = await la.call('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
      if (rel.status !== 200) throw new Error(`release answered ${rel.status}`);
      return acquired;
    };

    // Where an API cycle's time goes: etcd txns and the high-water persistence, timed around the service's own calls.
    const spent = { txnMs: 0, persistMs: 0 };
    const { etcd: lockEtcd, epoch } = la.service.parts;
    const timed =
      <A extends unknown[], R>(fn: (...args: A) => Promise<R>, into: keyof typeof spent) =>
      async (...args: A): Promise<R> => {
        const t0 = performance.now();
        try {
          return await fn(...args);
        } finally {
          spent[into] += performance.now() - t0;
        }
      };
    lockEtcd.txn = timed(lockEtcd.txn.bind(lockEtcd), 'txnMs');
    epoch.confirmWrite = timed(epoch.confirmWrite.bind(epoch), 'persistMs');

    heading(`lock API acquire+release vs a bare etcd txn pair of the same shape (${SECONDS} s per level, etcd ${cluster.endpoints.join(',')})`);
    await drive(4, api); // warm-up: JIT, connections, caches
    await drive(4, bare);
    for (const c of LEVELS) {
      spent.txnMs = spent.persistMs = 0;
      const writesBefore = la.service.highWaterWrites;
      const { a, b } = await interleaved(cluster.endpoints, c, api, bare);
      const writes = la.service.highWaterWrites - writesBefore;
      const [ar, br] = [perCycle(a), perCycle(b)];
      const cycleMs = (c * a.seconds * 1000) / a.cycles;
      const bareMs = (c * b.seconds * 1000) / b.cycles;
      process.stdout.write(
        `   an API cycle at ${c} client(s), mean ${cycleMs.toFixed(2)} ms: etcd txns ${(spent.txnMs / a.cycles).toFixed(2)}, high-water persistence ${(spent.persistMs / a.cycles).toFixed(2)}, the rest (HTTP, auth, validation, logic, waiting for the CPU) ${(cycleMs - (spent.txnMs + spent.persistMs) / a.cycles).toFixed(2)}; a bare pair ${bareMs.toFixed(2)} ms\n`,
      );
      process.stdout.write(
        `   high-water writes at ${c} client(s): ${writes} for ${a.cycles} grants, ${(a.cycles / Math.max(1, writes)).toFixed(2)} grants per write (group commit)\n`,
      );
      process.stdout.write(
        `   etcd requests per acquire+release at ${c} client(s): API ${ar.total.toFixed(2)} (${ar.text}); bare ${br.total.toFixed(2)} (${br.text})\n`,
      );
      reportAgainstBare('', c, a, b);
      report({
        name: `process CPU per cycle, ${c} client(s)`,
        value: a.cpuMsPerCycle,
        baselineName: 'bare txn pair',
        baseline: b.cpuMsPerCycle,
        unit: 'ms',
        higherIsBetter: false,
      });
      report({
        name: `etcd requests per cycle, ${c} client(s)`,
        value: ar.total,
        baselineName: 'bare txn pair',
        baseline: br.total,
        unit: 'requests',
        higherIsBetter: false,
      });
      const p99 = percentile(a.acquireMs, 99);
      process.stdout.write(`   seeds' target acquire p99 ≤ 50 ms at ${c} client(s): ${p99 <= 50 ? 'met' : 'NOT met'} (${p99.toFixed(1)} ms)\n`);
    }
  } finally {
    stopKeepalive?.();
    await closePair?.();
    await la.close();
    await etcd.delete().prefix(`${root}`);
    etcd.close();
    await temp.close();
  }
}

await main();
