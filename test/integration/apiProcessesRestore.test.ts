// Two lock API processes and a tailer, each a `lockaudit` process of its own over one store, as a user runs them:
// `lockaudit store` holds the embedded store and serves it (core/embeddedOwner.ts), `lockaudit api` twice and
// `lockaudit tailer` reach it through that process. On a private etcd with default limits (ports 27481-27482),
// restored between grants (issue 41 item 6): neither API process ever issues a token below one the other issued.
// Both refuse until the two-person advance — requested at one process, approved at the other — and grant above
// every earlier token after it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AuditStore } from '../../core/clickhouse.js';
import { loadConfig } from '../../core/config.js';
import { servedStore } from '../../core/embeddedOwner.js';
import { projectRoot } from '../../core/paths.js';
import { waitFor } from '../support/capture.js';
import { tempDir, uniqueId } from '../support/env.js';
import { fencedClass } from '../support/lockApp.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';
import { RoleProcesses } from '../support/roleProcesses.js';

type Json = Record<string, unknown>;
const run = promisify(execFile);
const BASE = Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24000);

describe('two API processes and a tailer process over one served store, etcd restored between them', { timeout: 420_000 }, () => {
  const data = tempDir('lockaudit-procs-');
  const label = uniqueId('procs');
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  let etcd: PrivateEtcd;
  let env: NodeJS.ProcessEnv;
  let roles: RoleProcesses;
  let store: AuditStore;
  const urls = [`http://127.0.0.1:${BASE + 80}`, `http://127.0.0.1:${BASE + 81}`];
  const tokens: Record<'admin' | 'op1' | 'op2' | 'user', string> = { admin: '', op1: '', op2: '', user: '' };
  /** Every token either process issued, in the order granted. */
  const issued: Array<{ by: number; token: bigint }> = [];

  async function cli(args: string[]): Promise<string> {
    return (await run(process.execPath, ['bin/lockaudit.js', ...args], { cwd: projectRoot, env, timeout: 120_000 })).stdout.trim();
  }

  async function call(i: number, method: string, route: string, token: string, body?: unknown): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${urls[i]}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  /** A reply that is not "etcd unreachable" (etcd restarting under the call). */
  function answered(what: string, fn: () => Promise<{ status: number; body: Json }>): Promise<{ status: number; body: Json }> {
    return waitFor(
      what,
      async () => {
        const res = await fn().catch(() => undefined);
        return !res || res.body.error === 'LOCKAUDIT_ERR_QUORUM_LOST' || res.status === 500 ? undefined : res;
      },
      60_000,
      200,
    );
  }

  async function session(i: number): Promise<string> {
    const res = await answered('a session', () => call(i, 'POST', '/v1/sessions', tokens.user, { ttlSeconds: 15 }));
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
    return res.body.id as string;
  }

  function acquire(i: number, s: string, key: string): Promise<{ status: number; body: Json }> {
    return answered(`acquire ${key} at API ${i}`, () =>
      call(i, 'POST', '/v1/locks/acquire', tokens.user, { key: `${ns}/${key}`, session: s, class: className }),
    );
  }

  /** n grants alternating between the two processes, each released; returns the revision after the last release. */
  async function grants(sessions: string[], n: number): Promise<bigint> {
    let last = 0n;
    for (let k = 0; k < n; k++) {
      const i = k % 2;
      const key = `k${k % 3}`;
      const g = await acquire(i, sessions[i] as string, key);
      assert.equal(g.status, 200, JSON.stringify(g.body));
      const token = BigInt(g.body.token as string);
      for (const earlier of issued) assert.ok(token > earlier.token, `API ${i} issued ${token}, not above ${earlier.token} that API ${earlier.by} issued`);
      issued.push({ by: i, token });
      const rel = await call(i, 'POST', '/v1/locks/release', tokens.user, { key: `${ns}/${key}`, session: sessions[i], token: token.toString() });
      assert.equal(rel.status, 200, JSON.stringify(rel.body));
      last = BigInt(g.body.revision as string) + 1n;
    }
    return last;
  }

  async function captured(upTo: bigint): Promise<void> {
    await waitFor(
      `the tailer process past revision ${upTo}`,
      async () => {
        const rows = await store.rows<{ r: string }>('SELECT toString(max(revision)) AS r FROM {db:Identifier}.checkpoints WHERE cluster = {c:String}', {
          c: label,
        });
        return BigInt(rows[0]?.r ?? '0') >= upTo ? true : undefined;
      },
      120_000,
      200,
    );
  }

  before(async () => {
    etcd = await startPrivateEtcd(27_481, 27_482, { defaultLimits: true });
    env = {
      ...process.env,
      LOCKAUDIT_DATA_DIR: data.dir,
      LOCKAUDIT_ETCD: `${label}=${etcd.endpoint}`,
      LOCKAUDIT_ORIGIN_SECRET: `origin-${'p'.repeat(40)}`,
      LOCKAUDIT_TAILER_ELECTION_TTL_SECONDS: '3',
      LOCKAUDIT_LOG_LEVEL: 'warn',
    };
    roles = new RoleProcesses(env);
    const config = loadConfig({ env });
    assert.equal(config.clickhouse.mode, 'embedded');
    const chPath = config.clickhouse.mode === 'embedded' ? config.clickhouse.path : '';
    const holder = roles.start(['store']);
    await waitFor('the store process serving', async () => (servedStore(chPath)?.pid === holder.pid ? true : undefined), 60_000, 100);
    // This test process too goes through it (it cannot open the data dir the store process holds).
    store = new AuditStore(config.clickhouse);
    assert.equal(store.target.mode, 'server');
    tokens.admin = await cli(['token', 'create', '--identity', uniqueId('admin-'), '--roles', 'admin']);
    tokens.op1 = await cli(['token', 'create', '--identity', uniqueId('op-a-'), '--roles', 'lock-operator']);
    tokens.op2 = await cli(['token', 'create', '--identity', uniqueId('op-b-'), '--roles', 'lock-operator']);
    tokens.user = await cli(['token', 'create', '--identity', `spiffe://test/${ns}/w`, '--roles', 'client']);
    roles.start(['tailer']);
    roles.start(['api'], { LOCKAUDIT_PORT: String(BASE + 80) });
    roles.start(['api'], { LOCKAUDIT_PORT: String(BASE + 81) });
    for (const url of urls)
      await waitFor(`${url}/healthz`, async () => ((await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined), 90_000, 200);
  });

  after(async () => {
    // Roles first, the store process last; each by its own pid.
    await roles?.stopAll();
    await store?.close();
    await etcd?.stop();
    data.remove();
  });

  it('both refuse after the restore, and after the advance both grant above every token either issued', async () => {
    assert.equal((await call(0, 'PUT', `/v1/classes/${className}`, tokens.admin, fencedClass(className, ns))).status, 200);
    const sessions = [await session(0), await session(1)];
    await grants(sessions, 4);
    const low = await etcd.snapshot('low.db');
    await captured(await grants(sessions, 20));
    const before = issued.length;
    assert.ok(new Set(issued.map((t) => t.by)).size === 2, 'both processes granted');

    // The same cluster id, revisions restart below the ones granted at.
    await etcd.restore(low);
    await waitFor(
      'the restore recorded by the tailer process',
      async () => {
        const rows = await store.rows<{ g: number }>('SELECT max(generation) AS g FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {c:String}', {
          c: label,
        });
        return Number(rows[0]?.g ?? 0) >= 1 ? true : undefined;
      },
      120_000,
      200,
    );
    for (const i of [0, 1]) {
      const res = await acquire(i, await session(i), `after-restore-${i}`);
      if (res.status === 200) assert.fail(`API ${i} granted ${res.body.token as string} after the restore, below tokens already issued`);
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.equal(res.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
      assert.equal((await answered('GET /v1/epoch', () => call(i, 'GET', '/v1/epoch', tokens.user))).body.sealed, true);
    }

    // Requested at one process, approved at the other.
    const req = await answered('an advance request', () => call(1, 'POST', '/v1/epoch/advance', tokens.op1, { reason: 'etcd restored from a snapshot' }));
    assert.equal(req.status, 202, JSON.stringify(req.body));
    const ok = await call(0, 'POST', `/v1/epoch/advance/${req.body.id as string}/approve`, tokens.op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    await waitFor(
      'both unsealed',
      async () => {
        for (const i of [0, 1]) if ((await call(i, 'GET', '/v1/epoch', tokens.user)).body.sealed !== false) return undefined;
        return true;
      },
      60_000,
      200,
    );
    await grants([await session(0), await session(1)], 6);
    assert.equal(issued.length, before + 6);
  });
});
