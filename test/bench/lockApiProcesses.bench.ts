// The lock API as users run it: `lockaudit api` in a process of its own over `lockaudit store` (the served
// store), its clients in a third process (lockDriver.ts) speaking HTTP/1.1 with keep-alive — beside the bare
// etcd txn pair of the same shape (barePair.ts) driven from that same client process, in alternating slices at
// 1, 16 and 64 clients. Each process's CPU comes from /proc/<pid>/stat over exactly the slice: the API
// process's CPU per cycle (and with the store process's share) against the bare client process's CPU per pair,
// the figure the efficiency goal is set on. lockApi.bench.ts measures the same cycle in one process through
// fastify's inject. Knobs as lockApi: BENCH_LOCK_SECONDS (per level, default 5), BENCH_LOCK_ROUNDS (slices,
// default 5), BENCH_LOCK_LEVELS (default 1,16,64); BENCH_LOCK_PROFILE=<dir>: the API process runs with
// --cpu-prof and writes its profile there when stopped (summed by scripts/cpuprofileTop.mjs).
import { execFile, fork } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadConfig } from '../../core/config.js';
import { servedStore } from '../../core/embeddedOwner.js';
import { projectRoot } from '../../core/paths.js';
import { waitFor } from '../support/capture.js';
import { fencedClass } from '../support/lockApp.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { RoleProcesses } from '../support/roleProcesses.js';
import { reportAgainstBare } from './barePair.js';
import { statCpuMs } from './threadCpu.js';
import { formatStages, LOCK_API_STAGES, readProfile, stageTables, type StageTable, type Window } from './cpuStages.js';
import type { DriverInit, DriverReply, DriverResult, DriverRun } from './lockDriver.js';
import { heading, report } from './report.js';

const SECONDS = Number(process.env.BENCH_LOCK_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_LOCK_ROUNDS ?? 5);
const LEVELS = (process.env.BENCH_LOCK_LEVELS ?? '1,16,64').split(',').map(Number);
const PORT = Number(process.env.LOCKAUDIT_BENCH_PORT_BASE ?? 26000) + 90;
const run = promisify(execFile);
/** A process's CPU so far (user + system, ms): its own threads, not its children. */
const cpuMsOf = (pid: number): number => statCpuMs(`/proc/${pid}/stat`).ms;

/** Now on the monotonic clock a V8 profile's timestamps use (µs). */
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

interface Slice extends DriverResult {
  /** The API process's and the store process's CPU over the slice, ms. */
  apiCpuMs: number;
  storeCpuMs: number;
}

function merge(slices: readonly Slice[]): Slice {
  const sum = (f: (s: Slice) => number): number => slices.reduce((n, s) => n + f(s), 0);
  return {
    kind: 'result',
    acquireMs: slices.flatMap((s) => s.acquireMs).sort((a, b) => a - b),
    cycles: sum((s) => s.cycles),
    seconds: sum((s) => s.seconds),
    cpuMs: sum((s) => s.cpuMs),
    apiCpuMs: sum((s) => s.apiCpuMs),
    storeCpuMs: sum((s) => s.storeCpuMs),
  };
}

async function main(): Promise<void> {
  const suite = testConfig();
  const endpoints = suite.etcd.clusters[0]?.endpoints ?? [];
  const data = tempDir('lockaudit-bench-procs-');
  const label = uniqueId('bench');
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOCKAUDIT_DATA_DIR: data.dir,
    LOCKAUDIT_ETCD: `${label}=${endpoints.join(',')}`,
    LOCKAUDIT_ORIGIN_SECRET: `origin-${'b'.repeat(40)}`,
    LOCKAUDIT_LOG_LEVEL: 'warn',
  };
  const roles = new RoleProcesses(env);
  const driver = fork(fileURLToPath(new URL('./lockDriver.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], cwd: projectRoot, env: process.env });
  const replies: DriverReply[] = [];
  let wake: (() => void) | undefined;
  driver.on('message', (m: DriverReply) => {
    replies.push(m);
    wake?.();
  });
  const ask = async (msg: DriverInit | DriverRun): Promise<DriverReply> => {
    driver.send(msg);
    while (replies.length === 0) await new Promise<void>((r) => (wake = r));
    const reply = replies.shift() as DriverReply;
    if (reply.kind === 'error') throw new Error(`lock driver: ${reply.message}`);
    return reply;
  };
  const cli = async (args: string[]): Promise<string> =>
    (await run(process.execPath, ['bin/lockaudit.js', ...args], { cwd: projectRoot, env, timeout: 120_000 })).stdout.trim();
  const url = `http://127.0.0.1:${PORT}`;
  let keepalive: NodeJS.Timeout | undefined;
  /** The API slices, for the cost model: several slices of a level are one window per slice, merged below. */
  const windows: Window[] = [];
  const profileDir = process.env.BENCH_LOCK_PROFILE;
  try {
    const config = loadConfig({ env });
    const chPath = config.clickhouse.mode === 'embedded' ? config.clickhouse.path : '';
    const store = roles.start(['store']);
    await waitFor('the store process serving', async () => (servedStore(chPath)?.pid === store.pid ? true : undefined), 60_000, 100);
    const admin = await cli(['token', 'create', '--identity', uniqueId('admin-'), '--roles', 'admin']);
    const client = await cli(['token', 'create', '--identity', `spiffe://bench/${ns}`, '--roles', 'client']);
    const api = roles.start(['api'], {
      LOCKAUDIT_PORT: String(PORT),
      ...(profileDir ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${profileDir}`.trim() } : {}),
    });
    await waitFor(`${url}/healthz`, async () => ((await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined), 90_000, 200);
    const call = async (method: string, route: string, token: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
      const res = await fetch(`${url}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const put = await call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns));
    if (put.status !== 200) throw new Error(`PUT class answered ${put.status}: ${JSON.stringify(put.body)}`);
    const session = (await call('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id as string;
    keepalive = setInterval(() => void call('POST', `/v1/sessions/${session}/keepalive`, client).catch(() => undefined), 5_000);
    await ask({ kind: 'init', url, token: client, session, ns, className, endpoints, root: `/${label}` });

    const slice = async (mode: DriverRun['mode'], concurrency: number, seconds: number): Promise<Slice> => {
      const [api0, store0, startUs] = [cpuMsOf(api.pid as number), cpuMsOf(store.pid as number), nowUs()];
      const r = (await ask({ kind: 'run', mode, concurrency, seconds })) as DriverResult;
      if (mode === 'api' && concurrency !== 4) windows.push({ name: `${concurrency} client(s)`, startUs, endUs: nowUs(), units: r.cycles });
      return { ...r, apiCpuMs: cpuMsOf(api.pid as number) - api0, storeCpuMs: cpuMsOf(store.pid as number) - store0 };
    };

    heading(`lock API over HTTP, API, store and clients in processes of their own, vs the bare etcd txn pair (${SECONDS} s per level)`);
    await slice('api', 4, 2); // warm-up: JIT, connections, caches
    await slice('bare', 4, 1);
    for (const c of LEVELS) {
      const as: Slice[] = [];
      const bs: Slice[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        bs.push(await slice('bare', c, SECONDS / ROUNDS));
        as.push(await slice('api', c, SECONDS / ROUNDS));
      }
      const [a, b] = [merge(as), merge(bs)];
      const per = (ms: number, s: Slice): number => ms / s.cycles;
      process.stdout.write(
        `   CPU per cycle at ${c} client(s), ms: API process ${per(a.apiCpuMs, a).toFixed(3)}, store process ${per(a.storeCpuMs, a).toFixed(3)}, ` +
          `the HTTP clients ${per(a.cpuMs, a).toFixed(3)}; bare pair's client ${per(b.cpuMs, b).toFixed(3)} ` +
          `(the API and store processes idle during the bare slices: ${per(b.apiCpuMs, b).toFixed(3)}, ${per(b.storeCpuMs, b).toFixed(3)})\n`,
      );
      reportAgainstBare('HTTP ', c, a, b);
      report({
        name: `API process CPU per cycle, ${c} client(s)`,
        value: per(a.apiCpuMs, a),
        baselineName: "bare pair's client process",
        baseline: per(b.cpuMs, b),
        unit: 'ms',
        higherIsBetter: false,
      });
      report({
        name: `API + store processes CPU per cycle, ${c} client(s)`,
        value: per(a.apiCpuMs + a.storeCpuMs, a),
        baselineName: "bare pair's client process",
        baseline: per(b.cpuMs, b),
        unit: 'ms',
        higherIsBetter: false,
      });
    }
  } finally {
    if (keepalive) clearInterval(keepalive);
    if (driver.connected) {
      driver.send({ kind: 'stop' });
      await new Promise((r) => driver.once('exit', r));
    }
    await roles.stopAll();
    data.remove();
  }
  if (profileDir) costModel(profileDir, windows);
}

/** The API process's profile (the newest in `dir`), by stage per cycle at each level. */
function costModel(dir: string, windows: readonly Window[]): void {
  const [file] = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (!file) throw new Error(`no .cpuprofile in ${dir}: the API process did not write one`);
  const tables = stageTables(readProfile(file), LOCK_API_STAGES, windows);
  // A level's slices together: µs per cycle over all its cycles.
  const byLevel = new Map<string, StageTable[]>();
  for (const t of tables) byLevel.set(t.window.name, [...(byLevel.get(t.window.name) ?? []), t]);
  const merged = [...byLevel].map(([name, ts]): StageTable => {
    const units = ts.reduce((n, t) => n + t.window.units, 0);
    const perUnitUs = new Map<string, number>();
    for (const t of ts) for (const [s, v] of t.perUnitUs) perUnitUs.set(s, (perUnitUs.get(s) ?? 0) + (v * t.window.units) / units);
    return { window: { name, startUs: 0, endUs: 0, units }, perUnitUs, totalPerUnitUs: [...perUnitUs.values()].reduce((a, b) => a + b, 0) };
  });
  heading(`the lock API's cost model: its main thread's CPU per acquire+release cycle, by stage (${path.basename(file)})`);
  process.stdout.write(`${formatStages(merged, 'cycle')}\n`);
}

await main();
