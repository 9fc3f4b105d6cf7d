// `lockaudit start --demo` as a person runs it (the README's first command,
// minus the install; a new deployment, with keys of its own): every role in one process on LOCKAUDIT_PORT, answering
// /healthz and /readyz, fed by the simulator, stopped cleanly by SIGTERM.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { loadConfig, type EtcdCluster } from '../../core/config.js';
import { createEtcdClient } from '../../core/etcd.js';
import { projectRoot } from '../../core/paths.js';
import { hasValidClockProof } from '../../core/proof.js';
import { tempDir } from '../support/env.js';

const run = promisify(execFile);
const PORT = Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24000) + 90;
const base = `http://127.0.0.1:${PORT}`;

/** A process as /proc knows it: its pid and its start time (clock ticks after boot), so a reused pid is not taken for it. */
interface ProcessRef {
  pid: number;
  start: string;
}

/** /proc/<pid>/stat's state and start time, or undefined when no such process (a thread's id is not a process). */
function procStat(pid: number): { state: string; start: string } | undefined {
  try {
    if (!new RegExp(`^Tgid:\\s+${pid}$`, 'm').test(readFileSync(`/proc/${pid}/status`, 'utf8'))) return undefined;
    // The fields after the command's closing parenthesis: state is the first, start time the 20th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] as string, start: fields[19] as string };
  } catch {
    return undefined;
  }
}

/** The running process of this pid now (taken while it is known to run). */
function processRef(pid: number): ProcessRef {
  const stat = procStat(pid);
  assert.ok(stat, `pid ${pid} is not running`);
  return { pid, start: stat.start };
}

/**
 * Running: the same process (its start time), not yet exited. A zombie (its parent gone, init slow to reap) is not;
 * nor is whatever got the pid after it — on a 2-core CI run the pid space (32 768, threads included) wraps in minutes.
 */
function alive(ref: ProcessRef): boolean {
  const stat = procStat(ref.pid);
  return stat !== undefined && stat.start === ref.start && stat.state !== 'Z';
}

/** What /proc says of each process still running: state, parent, command line (a failed wait names them). */
function described(refs: ProcessRef[]): string {
  return refs
    .filter(alive)
    .map((r) => {
      let status = '';
      let cmd = '';
      try {
        status = readFileSync(`/proc/${r.pid}/status`, 'utf8')
          .split('\n')
          .filter((l) => /^(State|PPid|SigIgn|SigCgt):/.test(l))
          .join(' ');
        cmd = readFileSync(`/proc/${r.pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        // ended meanwhile
      }
      return `${r.pid} [${status}] ${cmd}`;
    })
    .join('; ');
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

describe('lockaudit start --demo', { timeout: 360_000 }, () => {
  const tmp = tempDir('lockaudit-start-');
  // The demo as `npm run demo` runs it: on services of its own (a port block and data dir of its own), not the
  // suite's etcd, whose history other tests filled with hand-written holds, forged markers and compactions (the
  // demo's tailer rightly alarms on those; the test makes its own foreign write below).
  // Nor the suite's configured origin secret: a new deployment makes its own keys (core/tailerSecret.ts).
  const { LOCKAUDIT_ORIGIN_SECRET: _suiteSecret, ...userEnv } = process.env;
  const env = {
    ...userEnv,
    LOCKAUDIT_DATA_DIR: tmp.dir,
    LOCKAUDIT_LOCAL_PORT_BASE: String(Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24000) + 600),
    LOCKAUDIT_PORT: String(PORT),
    LOCKAUDIT_LOG_LEVEL: 'warn',
    // Digests sealed every 5 s, so `verify` has periods to check while the platform runs.
    LOCKAUDIT_DIGEST_PERIOD_SECONDS: '5',
    LOCKAUDIT_DIGEST_SETTLE_SECONDS: '2',
    LOCKAUDIT_DIGEST_POLL_INTERVAL_MS: '1000',
  };
  let child: ChildProcess | undefined;
  let stderr = '';
  before(async () => {
    await run(process.execPath, ['bin/lockaudit.js', 'services', 'up'], { cwd: projectRoot, env, timeout: 120_000 });
  });
  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    // Only what `services up` started for this data dir (its pid files).
    await run(process.execPath, ['bin/lockaudit.js', 'services', 'down'], { cwd: projectRoot, env, timeout: 60_000 }).catch(() => undefined);
    tmp.remove();
  });

  it('serves health, readiness and grant history from the demo workload, then stops on SIGTERM', async () => {
    const startedAt = Date.now();
    child = spawn(process.execPath, ['bin/lockaudit.js', 'start', '--demo', '--demo-workers', '4', '--demo-rate', '4'], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });

    const health = await waitFor('/healthz', async () => ((await fetch(`${base}/healthz`)).status === 200 ? true : undefined), 60_000);
    assert.equal(health, true);
    let lastReady = '';
    const ready = await waitFor(
      '/readyz 200',
      async () => {
        const r = await fetch(`${base}/readyz`);
        lastReady = `${r.status} ${await r.clone().text()}`;
        return r.status === 200 ? ((await r.json()) as Record<string, unknown>) : undefined;
      },
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last answer ${lastReady}; stderr: ${stderr.slice(-3000)}`);
    });
    assert.deepEqual(ready, { status: 'ready' }); // no token: the status only

    const tokensFile = path.join(tmp.dir, 'demo-tokens.json');
    await waitFor('demo tokens', async () => (existsSync(tokensFile) ? true : undefined), 120_000);
    const tokens = JSON.parse(readFileSync(tokensFile, 'utf8')) as { investigator: string; admin: string };
    const detail = (await (await fetch(`${base}/readyz`, { headers: { authorization: `Bearer ${tokens.admin}` } })).json()) as {
      checks: Array<{ ok: boolean }>;
    };
    assert.deepEqual(
      detail.checks.map((c) => c.ok),
      [true, true, true, true],
    );
    // The simulator grants, the tailer captures, the report reads: the whole path in one process.
    const items = await waitFor(
      'captured grants',
      async () => {
        const r = await fetch(`${base}/v1/grants?namespace=payments&limit=5`, { headers: { authorization: `Bearer ${tokens.investigator}` } });
        const body = (await r.json()) as { items?: Array<{ token: string; holder: string }> };
        return body.items && body.items.length > 0 ? body.items : undefined;
      },
      120_000,
    );
    assert.match(items[0]?.token ?? '', /^\d+$/);
    assert.match(items[0]?.holder ?? '', /^spiffe:\/\/sim\.lockaudit\//);

    // A write around the lock API and a value no decoder takes: alerts, listed for admins — never out of rotation.
    const etcd = createEtcdClient(loadConfig({ env }).etcd.clusters[0] as EtcdCluster);
    try {
      // A new deployment's keys: the lock API's origin secret and the tailer's own, apart; the tailer's clock
      // writes carry the proof of its own key, which the API's does not make.
      const origin = Buffer.from(readFileSync(path.join(tmp.dir, 'origin-secret'), 'utf8').trim(), 'utf8');
      const tailerKey = Buffer.from(readFileSync(path.join(tmp.dir, 'tailer-secret'), 'utf8').trim(), 'utf8');
      assert.notDeepEqual(tailerKey, origin);
      const [kv] = (await etcd.kv.range({ key: Buffer.from('/sys/clock') })).kvs;
      assert.ok(kv, 'the tailer writes its clock');
      const clock = JSON.parse(kv.value.toString()) as { at: number; mac?: string };
      const put = { createRevision: kv.create_revision, version: kv.version };
      assert.ok(hasValidClockProof(tailerKey, clock, put), 'the clock write is proven with the tailer key');
      assert.equal(hasValidClockProof(origin, clock, put), false, "the lock API's key proves no clock write");
      assert.doesNotMatch(stderr, /the tailer's proofs use the lock API's origin secret/);
      await etcd
        .put('/l/payments/by-hand')
        .value(JSON.stringify({ holder: 'spiffe://rogue/etcdctl', session: '1', class: 'c', epoch: 1, waitMs: 0, at: Date.now() }))
        .exec();
      await etcd
        .put('/l/payments/rogue')
        .value(JSON.stringify({ holder: 'x', session: '1', class: 'c', epoch: 70000, waitMs: 1e21, at: 0 }))
        .exec();
    } finally {
      etcd.close();
    }
    const alarmed = await waitFor(
      'the foreign write alarmed',
      async () => {
        const r = await fetch(`${base}/readyz`, { headers: { authorization: `Bearer ${tokens.admin}` } });
        const body = (await r.json()) as { status: string; alarms: Array<{ code: string }> };
        return body.alarms.some((a) => a.code === 'LOCKAUDIT_ALARM_FOREIGN_WRITE') ? { status: r.status, body } : undefined;
      },
      60_000,
    );
    assert.equal(alarmed.status, 200);
    assert.equal(alarmed.body.status, 'ready');
    const quarantined = await waitFor(
      'the rogue value quarantined',
      async () => {
        const r = await fetch(`${base}/v1/quarantine`, { headers: { authorization: `Bearer ${tokens.investigator}` } });
        const body = (await r.json()) as { items?: Array<{ key: string }> };
        return body.items?.some((q) => q.key === '/l/payments/rogue') ? true : undefined;
      },
      60_000,
    );
    assert.equal(quarantined, true);
    assert.deepEqual(await (await fetch(`${base}/readyz`)).json(), { status: 'ready' });
    assert.equal((await fetch(`${base}/readyz`)).status, 200);

    // The store commands while the platform runs (issue 41 item 3): through the process that holds the embedded
    // store, which serves it on loopback (core/embeddedOwner.ts) — before, each refused with the data dir's lock.
    const cli = async (args: string[]): Promise<{ stdout: string; stderr: string }> => {
      try {
        return await run(process.execPath, ['bin/lockaudit.js', ...args], { cwd: projectRoot, env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string; message: string };
        throw new Error(`lockaudit ${args.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}${e.message}`);
      }
    };
    assert.match((await cli(['migrate', '--no-buckets'])).stderr, /schema up to date \(0 applied/);
    assert.match((await cli(['doctor'])).stdout, /clickhouse/i);
    const csv = path.join(tmp.dir, 'grants.csv');
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    await cli(['export', 'grants', '--from', from, '--to', to, '--format', 'csv', '--out', csv]);
    const exported = readFileSync(csv, 'utf8').trim().split('\n');
    assert.ok(exported.length >= 2, `the captured grants exported: ${exported.length - 1} rows`);
    assert.ok(
      exported.some((line) => line.includes(items[0]?.holder ?? '?')),
      'a grant the API serves is in the export',
    );
    const made = (await cli(['token', 'create', '--identity', 'ivy@corp', '--roles', 'investigator'])).stdout.trim();
    assert.match((await cli(['token', 'list'])).stdout, new RegExp(`${made.slice(3, 15)}\\s+ivy@corp`));
    // verify with database access, once the worker sealed a digest after the start (5 s periods here).
    const sealedFrom = new Date(Math.ceil(startedAt / 5_000) * 5_000 + 5_000).toISOString();
    let lastVerify = '';
    const verified = await waitFor(
      'a period verified while running',
      async () => {
        const r = await run(process.execPath, ['bin/lockaudit.js', 'verify', '--from', sealedFrom], { cwd: projectRoot, env, timeout: 180_000 }).then(
          (o) => ({ code: 0, out: o.stdout + o.stderr }),
          (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, out: err.stdout + err.stderr }),
        );
        lastVerify = r.out;
        assert.doesNotMatch(r.out, /holds the embedded ClickHouse/, r.out);
        return r.code === 0 ? r.out : undefined;
      },
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last: ${lastVerify}`);
    });
    assert.match(verified, /^ok /m);

    // Each role is a process of its own under start (cli/supervisor.ts): the tailer killed -9 is started again,
    // and capture goes on.
    const pids = (): Map<string, number> =>
      new Map([...stderr.matchAll(/^lockaudit: (\w+): started \(pid (\d+)\)$/gm)].map((m) => [m[1] as string, Number(m[2])]));
    assert.deepEqual([...pids().keys()].sort(), ['api', 'store', 'tailer', 'worker']);
    const tailerPid = pids().get('tailer') as number;
    // A grant made after `sinceMs` in grant history: capture goes on (the demo grants a few a second).
    const capturedSince = async (sinceMs: number): Promise<true | undefined> => {
      const r = await fetch(`${base}/v1/grants?from=${new Date(sinceMs).toISOString()}&limit=100`, {
        headers: { authorization: `Bearer ${tokens.investigator}` },
      });
      const items = ((await r.json()) as { items?: Array<{ grantedAt: string }> }).items ?? [];
      return items.some((i) => Date.parse(i.grantedAt) > sinceMs) ? true : undefined;
    };
    const tailerKilledAt = Date.now();
    process.kill(tailerPid, 'SIGKILL');
    await waitFor('the tailer started again', async () => (pids().get('tailer') !== tailerPid ? true : undefined), 60_000);
    assert.match(stderr, new RegExp(`tailer \\(pid ${tailerPid}\\) exited on SIGKILL after \\d+ s: starting it again in 1 s`));
    await waitFor('capture going on after the restart', () => capturedSince(tailerKilledAt), 120_000);
    // The store process killed -9: started again, then the roles after it (their client named the old one).
    const storePid = pids().get('store') as number;
    const apiPid = pids().get('api') as number;
    const storeKilledAt = Date.now();
    process.kill(storePid, 'SIGKILL');
    await waitFor(
      'the store and the roles started again',
      async () => (pids().get('store') !== storePid && pids().get('api') !== apiPid ? true : undefined),
      120_000,
    );
    await waitFor('/readyz 200 after the store restart', async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), 120_000);
    await waitFor('capture going on after the store restart', () => capturedSince(storeKilledAt), 120_000);
    const running = [...pids().values()].map(processRef);

    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    // A token in a log is a token anyone who reads the log can present: none of the captured grants' is in the run's log.
    for (const item of items) if (item.token !== '0') assert.equal(stderr.includes(item.token), false, `token of ${item.holder} in the log`);
    // Every role process ended with it.
    assert.deepEqual(running.filter(alive), [], described(running));
  });

  it('start killed -9 leaves no role process behind (each ends when its supervisor goes)', async () => {
    let log = '';
    const sup = spawn(process.execPath, ['bin/lockaudit.js', 'start'], { cwd: projectRoot, env, stdio: ['ignore', 'ignore', 'pipe'] });
    sup.stderr?.on('data', (c: Buffer) => {
      log += c.toString();
    });
    await waitFor('/healthz', async () => ((await fetch(`${base}/healthz`)).status === 200 ? true : undefined), 90_000);
    const roles = [...log.matchAll(/^lockaudit: (\w+): started \(pid (\d+)\)$/gm)].map((m) => processRef(Number(m[2])));
    assert.equal(roles.length, 4, log);
    const gone = new Promise((resolve) => sup.once('exit', resolve));
    sup.kill('SIGKILL');
    await gone;
    // Each role stops within a minute of its supervisor's death (SIGKILL after 60 s, cli/main.ts): the wait allows that
    // minute and the time a loaded machine takes to deliver the disconnect and reap the process.
    await waitFor('every role process ended', async () => (roles.some(alive) ? undefined : true), 90_000).catch((err: Error) => {
      throw new Error(`${err.message}; still running: ${described(roles)}; log: ${log.slice(-2_000)}`);
    });
  });
  it('start stopped while its store still starts stops cleanly (exit 0), the store with it', async () => {
    let log = '';
    const sup = spawn(process.execPath, ['bin/lockaudit.js', 'start'], { cwd: projectRoot, env, stdio: ['ignore', 'ignore', 'pipe'] });
    sup.stderr?.on('data', (c: Buffer) => {
      log += c.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      sup.once('exit', (code, signal) => resolve({ code, signal })),
    );
    // The line is written as the store process is spawned: it has not served yet (it opens the engine first).
    const pid = await waitFor('the store process spawned', async () => /^lockaudit: store: started \(pid (\d+)\)$/m.exec(log)?.[1], 60_000);
    const store = processRef(Number(pid));
    sup.kill('SIGTERM');
    const { code, signal } = await exited;
    // Before: the signal's default action ended the supervisor at once, leaving the store to notice it was gone.
    assert.equal(signal, null, `the supervisor ended by ${signal}; log: ${log}`);
    assert.equal(code, 0, log);
    assert.equal(alive(store), false, described([store]));
  });
});
