// Sealing that holds across API processes (issue 21 item 5), on a private etcd
// with default limits (ports 27461-27462) restored with the same cluster id,
// under a tailer capturing into this file's store. An API process that never
// saw the history — a new replica, a fresh container, no high-water file —
// must not grant a token below one already issued: it finds the audit
// store's highest captured grant. And GET /v1/epoch says `sealed` exactly
// when acquire refuses, before any acquire has tried.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { storeHighWater } from '../../roles/lockHighWater.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';

type Json = Record<string, unknown>;
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const db = fileStore();
/** Every API process and the tailer of one deployment share the proof-of-origin key. */
const ORIGIN_SECRET = `origin-${'s'.repeat(40)}`;

describe('sealing across API processes: the audit store is the shared high-water', { timeout: 300_000 }, () => {
  const label = uniqueId('seal');
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  const dirs: Array<{ dir: string; remove: () => void }> = [];
  const apps: LockApp[] = [];
  let etcd: PrivateEtcd;
  let client: Etcd3;
  let tailer: TailerReplica;
  let cluster: { name: string; endpoints: string[] };
  let first: LockApp;
  let user: string;
  let op1: string;
  let op2: string;
  /** The highest token granted before each restore. */
  let maxBeforeRestore = 0n;
  let snapshotLow: string;
  let snapshotHigh: string;

  /** A lock API process of its own data dir: a fresh one has no high-water file. */
  async function apiProcess(highWaterStore?: AuditStore): Promise<LockApp> {
    const data = tempDir('lockaudit-seal-');
    dirs.push(data);
    const la = await lockApp(testConfig({ LOCKAUDIT_DATA_DIR: data.dir, LOCKAUDIT_ORIGIN_SECRET: ORIGIN_SECRET }), db.store, {
      cluster,
      highWaterSource: storeHighWater(highWaterStore ?? db.store),
    });
    apps.push(la);
    return la;
  }

  /** A reply that is not "etcd unreachable" (etcd restarting under the call). */
  async function answered(what: string, call: () => Promise<{ status: number; body: Json }>): Promise<{ status: number; body: Json }> {
    return waitFor(
      what,
      async () => {
        const res = await call();
        return res.body.error === 'LOCKAUDIT_ERR_QUORUM_LOST' || res.status === 500 ? undefined : res;
      },
      30_000,
      200,
    );
  }

  async function session(la: LockApp): Promise<string> {
    const res = await answered('a session', () => la.call<Json>('POST', '/v1/sessions', user, { ttlSeconds: 15 }));
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
    return res.body.id as string;
  }

  function acquire(la: LockApp, s: string, key: string): Promise<{ status: number; body: Json }> {
    return answered(`an answer to acquire ${key}`, () =>
      la.call<Json>('POST', '/v1/locks/acquire', user, { key: `${ns}/${key}`, session: s, class: className }),
    );
  }

  function epochState(la: LockApp): Promise<{ status: number; body: Json }> {
    return answered('GET /v1/epoch', () => la.call<Json>('GET', '/v1/epoch', user));
  }

  /** n grants, each released; returns the highest token and the revision after the last release. */
  async function grants(la: LockApp, s: string, n: number): Promise<{ maxToken: bigint; last: bigint }> {
    let maxToken = 0n;
    let last = 0n;
    for (let i = 0; i < n; i++) {
      const g = await acquire(la, s, `k${i % 4}`);
      assert.equal(g.status, 200, JSON.stringify(g.body));
      const token = BigInt(g.body.token as string);
      if (token > maxToken) maxToken = token;
      const rel = await la.call<Json>('POST', '/v1/locks/release', user, { key: `${ns}/k${i % 4}`, session: s, token: token.toString() });
      assert.equal(rel.status, 200, JSON.stringify(rel.body));
      last = BigInt(g.body.revision as string) + 1n;
    }
    return { maxToken, last };
  }

  async function captured(upTo: bigint): Promise<void> {
    await waitFor(`the tailer past revision ${upTo}`, async () => ((await readCheckpoint(db.store, label)) >= upTo ? true : undefined), 60_000, 100);
  }

  async function restoreSeen(generation: number): Promise<void> {
    await waitFor(
      `restore ${generation} recorded by the tailer`,
      async () => {
        const rows = await db.store.rows<{ g: number }>('SELECT max(generation) AS g FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {c:String}', {
          c: label,
        });
        return Number(rows[0]?.g ?? 0) >= generation ? true : undefined;
      },
      60_000,
      200,
    );
  }

  before(async () => {
    etcd = await startPrivateEtcd(27_461, 27_462, { defaultLimits: true });
    cluster = { name: label, endpoints: [etcd.endpoint] };
    client = createEtcdClient(cluster);
    first = await apiProcess();
    const admin = await first.token(uniqueId('admin-'), ['admin']);
    op1 = await first.token(uniqueId('op-a-'), ['lock-operator']);
    op2 = await first.token(uniqueId('op-b-'), ['lock-operator']);
    user = await first.token(`spiffe://test/${ns}/w`, ['client']);
    assert.equal((await first.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
    tailer = new TailerReplica(
      { cluster, store: db.store, log: log.child({ cluster: label }), health: new HealthState() },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 300, restoreCheckIntervalMs: 300, originSecret: Buffer.from(ORIGIN_SECRET, 'utf8') },
    );
    tailer.start();

    const s = await session(first);
    await grants(first, s, 2);
    snapshotLow = await etcd.snapshot('low.db');
    const later = await grants(first, s, 30);
    snapshotHigh = await etcd.snapshot('high.db');
    maxBeforeRestore = later.maxToken;
    await captured(later.last);
    // Same member name, peer URL and token: the same cluster id, revisions restart below the ones granted at.
    await etcd.restore(snapshotLow);
    // The tailer has seen the restore and moved the rolled-back grants out of `events`: they must still count.
    await restoreSeen(1);
  });

  after(async () => {
    await tailer?.close();
    for (const la of apps) await la.close();
    client?.close();
    await etcd?.stop();
    for (const d of dirs) d.remove();
  });

  it('a new API process without a high-water file refuses to grant below a token already issued', async () => {
    const fresh = await apiProcess();
    const s = await session(fresh);
    const res = await acquire(fresh, s, 'fresh');
    if (res.status === 200)
      assert.fail(`granted token ${res.body.token as string} at epoch ${res.body.epoch as number}, below ${maxBeforeRestore} issued before the restore`);
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
    assert.equal((await epochState(fresh)).body.sealed, true, '/v1/epoch agrees with the refusal');
  });

  it('/v1/epoch says sealed before any acquire tried, in a fresh process and in the one that granted', async () => {
    for (const [name, la] of [
      ['fresh', await apiProcess()],
      ['first', first],
    ] as const) {
      const state = await epochState(la);
      assert.equal(state.status, 200, JSON.stringify(state.body));
      assert.equal(state.body.sealed, true, `${name}: /v1/epoch must say sealed while acquire refuses: ${JSON.stringify(state.body)}`);
      assert.match(state.body.reason as string, /grant guard key is at revision \d+, below revision \d+/, `${name}: says why`);
      const res = await acquire(la, await session(la), `probe-${name}`);
      assert.equal(res.status, 503, `${name}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
      assert.equal((await epochState(la)).body.sealed, true, `${name}: still sealed`);
    }
  });

  it('after the two-person advance every process grants above every token issued, and /v1/epoch says unsealed', async () => {
    const fresh = await apiProcess();
    const req = await answered('an advance request', () => fresh.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'etcd restored from a snapshot' }));
    assert.equal(req.status, 202, JSON.stringify(req.body));
    const ok = await fresh.call<Json>('POST', `/v1/epoch/advance/${req.body.id as string}/approve`, op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.epoch, 2);
    let highest = 0n;
    let last = 0n;
    for (const [name, la] of [
      ['fresh', fresh],
      ['first', first],
      ['another', await apiProcess()],
    ] as const) {
      assert.equal((await epochState(la)).body.sealed, false, `${name}: unsealed by the advance`);
      const g = await grants(la, await session(la), 3);
      assert.ok(g.maxToken > maxBeforeRestore, `${name}: token ${g.maxToken} must exceed ${maxBeforeRestore}`);
      if (g.maxToken > highest) highest = g.maxToken;
      if (g.last > last) last = g.last;
    }
    maxBeforeRestore = highest;
    await captured(last);
  });

  it('an epoch rolled back is sealed though its revisions are above every captured one (the token orders epochs first)', async () => {
    // snapshotHigh: epoch 1 at revisions above the epoch-2 grants just made. A high-water of revisions alone
    // would let a new process grant epoch 1 tokens there — below the epoch-2 tokens already issued.
    await etcd.restore(snapshotHigh);
    const fresh = await apiProcess();
    const state = await epochState(fresh);
    assert.equal(state.body.epoch, 1, 'the restored /sys/epoch');
    const res = await acquire(fresh, await session(fresh), 'rolled-epoch');
    if (res.status === 200)
      assert.fail(`granted token ${res.body.token as string} at epoch ${res.body.epoch as number}, below ${maxBeforeRestore} issued at epoch 2`);
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
    assert.equal((await epochState(fresh)).body.sealed, true);
  });

  it('a process idle across the restore does not grant below what others granted after it last looked', async () => {
    const starter = await apiProcess();
    const req = await answered('an advance request', () => starter.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'etcd restored again' }));
    assert.equal(
      (await starter.call<Json>('POST', `/v1/epoch/advance/${req.body.id as string}/approve`, op2, { requestHash: req.body.requestHash })).status,
      200,
    );
    // Started now: its seed and its own view end here, then it makes no call until after the restore.
    const idle = await apiProcess();
    assert.equal((await epochState(idle)).body.sealed, false);
    const snapshot = await etcd.snapshot('idle.db');
    const others = await grants(starter, await session(starter), 20);
    await captured(others.last);
    await etcd.restore(snapshot);
    const res = await acquire(idle, await session(idle), 'idle');
    if (res.status === 200) assert.fail(`granted token ${res.body.token as string}, below ${others.maxToken} granted by another process before the restore`);
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
    assert.equal((await epochState(idle)).body.sealed, true);
  });

  it('a process that cannot read the shared high-water refuses to grant, and /v1/epoch says why', async () => {
    // A ClickHouse server nobody listens on: the read fails for real.
    const unreachable = new AuditStore({ mode: 'server', url: 'http://127.0.0.1:1', database: 'lockaudit' });
    try {
      const blind = await apiProcess(unreachable);
      const res = await acquire(blind, await session(blind), 'blind');
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.equal(res.body.error, 'LOCKAUDIT_ERR_LOCK_HIGHWATER_UNKNOWN');
      assert.match(res.body.message as string, /could not be read from the audit store/);
      const state = await blind.call<Json>('GET', '/v1/epoch', user);
      assert.equal(state.status, 503);
      assert.equal(state.body.error, 'LOCKAUDIT_ERR_LOCK_HIGHWATER_UNKNOWN');
    } finally {
      await unreachable.close();
    }
  });
});
