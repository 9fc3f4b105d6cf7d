// The memory soak (issue 42): 1 000 values of 1 MiB written with etcd's own
// client under the lock keyspace — junk holds, hold-shaped values whose
// holder is 1 MiB, and queue entries, none of which our API would write —
// into a platform started as `lockaudit start --demo` runs it (every role a
// process of its own, etcd with its default limits). It reports each role's
// peak resident memory (VmHWM), the peak of their sum, the largest response
// of the routes that show values, and the time until every value was
// captured, a digest sealed past them and `lockaudit verify` passed.
// Not a pass/fail test: run with `npm run soak:memory` (scripts/soakMemory.sh).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig, type EtcdCluster } from '../../core/config.js';
import { createEtcdClient } from '../../core/etcd.js';
import { PREFIX } from '../../core/keyspace.js';
import { projectRoot } from '../../core/paths.js';
import { waitFor as waitUntil } from '../support/capture.js';

const VALUES = Number(process.env.SOAK_VALUES ?? 1000);
const MIB = 1024 * 1024;
const PORT = Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 22000) + 90;
const base = `http://127.0.0.1:${PORT}`;
const env = {
  ...process.env,
  LOCKAUDIT_PORT: String(PORT),
  LOCKAUDIT_DIGEST_PERIOD_SECONDS: '10',
  LOCKAUDIT_DIGEST_SETTLE_SECONDS: '2',
  LOCKAUDIT_DIGEST_POLL_INTERVAL_MS: '1000',
};
const dataDir = process.env.LOCKAUDIT_DATA_DIR as string;

function say(line: string): void {
  process.stderr.write(`soak: ${line}\n`);
}

/** A field of /proc/<pid>/status in KiB (VmRSS, VmHWM), 0 when the process is gone. */
function statusKib(pid: number, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Waits (test/support/capture.ts) for a check that may throw while the platform starts: a throw is "not yet". */
const waitFor = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> =>
  waitUntil(what, () => fn().catch(() => undefined), timeoutMs, 500);

const mib = (bytes: number): string => `${(bytes / MIB).toFixed(1)} MiB`;

let log = '';
const child = spawn(process.execPath, ['bin/lockaudit.js', 'start', '--demo', '--demo-workers', '1', '--demo-rate', '1'], {
  cwd: projectRoot,
  env,
  stdio: ['ignore', 'ignore', 'pipe'],
});
child.stderr?.on('data', (c: Buffer) => {
  log += c.toString();
});
const roles = (): Map<string, number> => new Map([...log.matchAll(/^lockaudit: (\w+): started \(pid (\d+)\)$/gm)].map((m) => [m[1] as string, Number(m[2])]));
// Peak of the sum of every role's resident memory, sampled; each role's own peak is its VmHWM.
let peakSumKib = 0;
const hwm = new Map<string, number>();
const sampler = setInterval(() => {
  let sum = statusKib(child.pid as number, 'VmRSS');
  for (const [name, pid] of roles()) {
    sum += statusKib(pid, 'VmRSS');
    hwm.set(`${name} (pid ${pid})`, Math.max(hwm.get(`${name} (pid ${pid})`) ?? 0, statusKib(pid, 'VmHWM')));
  }
  peakSumKib = Math.max(peakSumKib, sum);
}, 250);

try {
  await waitFor('/healthz', async () => ((await fetch(`${base}/healthz`)).status === 200 ? true : undefined), 120_000);
  const tokensFile = path.join(dataDir, 'demo-tokens.json');
  await waitFor('demo tokens', async () => (existsSync(tokensFile) ? true : undefined), 120_000);
  const tokens = JSON.parse(readFileSync(tokensFile, 'utf8')) as { investigator: string; admin: string };
  const get = async (url: string): Promise<{ status: number; bytes: number; body: string }> => {
    const r = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${tokens.investigator}` } });
    const body = await r.text();
    return { status: r.status, bytes: Buffer.byteLength(body), body };
  };
  const idleKib = peakSumKib;
  say(`platform up; resident memory of every process before the values: ${mib(idleKib * 1024)}`);

  const cluster = loadConfig().etcd.clusters[0] as EtcdCluster;
  const etcd = createEtcdClient(cluster);
  const started = Date.now();
  let last = 0n;
  for (let i = 0; i < VALUES; i++) {
    const junk = randomBytes(786_432).toString('base64'); // 1 MiB of text that does not compress
    const [key, value] =
      i % 3 === 0
        ? [`${PREFIX.hold}soak/junk-${i}`, junk]
        : i % 3 === 1
          ? [`${PREFIX.hold}soak/holder-${i}`, JSON.stringify({ holder: junk, session: '7587862000', class: 'default', epoch: 0, waitMs: 0, at: Date.now() })]
          : [`${PREFIX.queue}soak/queued-${i}/7587862000`, junk];
    const r = await etcd.put(key).value(value).exec();
    last = BigInt(r.header.revision);
  }
  const lastPutAt = Date.now();
  say(`${VALUES} values of 1 MiB put in ${((Date.now() - started) / 1000).toFixed(0)} s, the last at revision ${last}`);
  await waitFor(
    'every value captured',
    async () => {
      const t = JSON.parse((await get('/v1/tailers')).body) as { items: Array<{ cluster: string; checkpoint: string }> };
      return t.items.some((c) => c.cluster === cluster.name && BigInt(c.checkpoint) >= last) ? true : undefined;
    },
    1_800_000,
  );
  say(`captured ${((Date.now() - started) / 1000).toFixed(0)} s after the first put`);

  // The largest response of each route that shows values, every page of it.
  const largest = new Map<string, { bytes: number; pages: number; items: number }>();
  const pages = async (name: string, first: string): Promise<void> => {
    let url: string | undefined = first;
    let worst = { bytes: 0, pages: 0, items: 0 };
    while (url) {
      const r = await get(url);
      if (r.status !== 200) throw new Error(`${url}: ${r.status} ${r.body.slice(0, 300)}`);
      const page = JSON.parse(r.body) as { items?: unknown[]; nextCursor?: string | null };
      worst = { bytes: Math.max(worst.bytes, r.bytes), pages: worst.pages + 1, items: worst.items + (page.items?.length ?? 0) };
      url = page.nextCursor ? `${first}&cursor=${encodeURIComponent(page.nextCursor)}` : undefined;
      if (worst.pages > 5_000) break;
    }
    largest.set(name, worst);
  };
  const from = new Date(started - 60_000).toISOString();
  await pages('GET /v1/quarantine?limit=1000', `/v1/quarantine?limit=1000&from=${from}`);
  await pages('GET /v1/grants?limit=1000', `/v1/grants?limit=1000&from=${from}`);
  // The keyspace at the last put (the queue entries with 1 MiB values are in it) and the timeline of the prefix.
  for (const [name, url] of [
    ['GET /v1/state', `/v1/state?at=${last}&prefix=soak/&limit=1000`],
    ['GET /v1/reports/timeline', `/v1/reports/timeline?keyPrefix=soak/&from=${from}`],
  ] as const) {
    const r = await get(url);
    if (r.status !== 200) throw new Error(`${url}: ${r.status} ${r.body.slice(0, 300)}`);
    largest.set(name, { bytes: r.bytes, pages: 1, items: (JSON.parse(r.body) as { items?: unknown[] }).items?.length ?? 0 });
  }

  // A digest sealed past the values, then verify of that stretch (its own process: its peak measured too).
  const sealedFrom = new Date(Math.floor(started / 10_000) * 10_000).toISOString();
  let verifyPeakKib = 0;
  let lastVerify = '';
  const verified = await waitFor(
    'verify of the sealed periods',
    async () => {
      const v = spawn(process.execPath, ['bin/lockaudit.js', 'verify', '--from', sealedFrom], { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      v.stdout?.on('data', (c: Buffer) => (out += c.toString()));
      v.stderr?.on('data', (c: Buffer) => (out += c.toString()));
      const peek = setInterval(() => (verifyPeakKib = Math.max(verifyPeakKib, statusKib(v.pid as number, 'VmHWM'))), 100);
      const code = await new Promise<number | null>((resolve) => v.once('exit', resolve));
      clearInterval(peek);
      lastVerify = out;
      // Passed, and over a sealed period that ends after the last put.
      const periods = [...out.matchAll(/^ok\s+\S+ \S+\.\.(\S+) seq/gm)].map((m) => Date.parse(m[1] as string));
      return code === 0 && periods.some((p) => p >= lastPutAt) ? out : undefined;
    },
    1_800_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last: ${lastVerify.slice(-2_000)}`);
  });
  say(`verify passed ${((Date.now() - started) / 1000).toFixed(0)} s after the first put:\n${verified.trim()}`);

  const report = {
    values: VALUES,
    valueBytes: MIB,
    idleResidentMiB: +(idleKib / 1024).toFixed(1),
    peakResidentSumMiB: +(peakSumKib / 1024).toFixed(1),
    peakResidentByRoleMiB: Object.fromEntries([...hwm].map(([k, v]) => [k, +(v / 1024).toFixed(1)])),
    verifyPeakResidentMiB: +(verifyPeakKib / 1024).toFixed(1),
    largestResponse: Object.fromEntries([...largest].map(([k, v]) => [k, { largestBytes: v.bytes, pages: v.pages, items: v.items }])),
  };
  console.log(JSON.stringify(report, null, 2));
  mkdirSync(path.join(projectRoot, 'bench-results'), { recursive: true });
  const out = path.join(projectRoot, 'bench-results', `soak-memory-${new Date().toISOString().replace(/[:.]/g, '').slice(0, 15)}Z.json`);
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  say(`written to ${path.relative(projectRoot, out)}`);
  etcd.close();
} finally {
  clearInterval(sampler);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(60_000)]);
}
