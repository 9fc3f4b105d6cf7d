// Ending a session leaves every hold reading as what it was (issue 11
// defect 3, issue 12 item 3): a close of a session with more holds than one
// txn may carry under etcd's DEFAULT limits (128 ops, 1.5 MiB), and a
// force-release with revokeSession, both against a private etcd with those
// defaults and a tailer reading the log.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { closeBatches, CLOSE_BATCH_KEYS } from '../../lock/sessions.js';
import { waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';

const base = testConfig().local.portBase;
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('ending a session under etcd default limits', { timeout: 240_000 }, () => {
  let etcd!: PrivateEtcd;
  let store: AuditStore;
  let closeStore!: () => Promise<void>;
  let la!: LockApp;
  let tailer!: TailerReplica;
  let admin: string;
  const label = uniqueId('c');

  before(async () => {
    etcd = await startPrivateEtcd(base + 7, base + 17, { defaultLimits: true });
    ({ store, close: closeStore } = await tempStore());
    const config = testConfig({ LOCKAUDIT_ETCD: `${label}=${etcd.endpoint}` });
    la = await lockApp(config, store);
    admin = await la.token(uniqueId('admin-'), ['admin']);
    tailer = new TailerReplica({ cluster: { name: label, endpoints: [etcd.endpoint] }, store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    tailer.start();
  });
  // Each step guarded: a before() that failed half-way must still stop the private etcd (a live child keeps the file running).
  after(async () => {
    try {
      await tailer?.close();
      await la?.close();
      await closeStore?.();
    } finally {
      await etcd?.stop();
    }
  });

  async function setup(): Promise<{ ns: string; cls: string; caller: string; session: string }> {
    const ns = uniqueId('ns');
    const cls = `${ns}-fenced`;
    assert.equal((await la.call('PUT', `/v1/classes/${cls}`, admin, fencedClass(cls, ns))).status, 200);
    const caller = await la.token(`spiffe://test/${ns}/worker`, ['client']);
    const s = await la.call<{ id: string }>('POST', '/v1/sessions', caller, { ttlSeconds: 15 });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    return { ns, cls, caller, session: s.body.id };
  }

  async function acquireMany(caller: string, session: string, cls: string, keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 10) {
      const replies = await Promise.all(keys.slice(i, i + 10).map((key) => la.call('POST', '/v1/locks/acquire', caller, { key, session, class: cls })));
      for (const r of replies) assert.equal(r.status, 200, JSON.stringify(r.body));
    }
  }

  async function endKinds(ns: string, atLeast: bigint): Promise<Record<string, number>> {
    await waitFor('tailer checkpoint', async () => ((await readCheckpoint(store, label)) >= atLeast ? true : undefined), 60_000, 200);
    const rows = await store.rows<{ end_kind: string; n: string }>(
      `SELECT end_kind, count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String} GROUP BY end_kind`,
      { c: label, ns },
    );
    return Object.fromEntries(rows.map((r) => [r.end_kind, Number(r.n)]));
  }

  it('batches fit the default 128 ops with their marker', () => {
    assert.ok(CLOSE_BATCH_KEYS + 1 <= 128);
    assert.deepEqual(
      closeBatches(Array.from({ length: 300 }, (_, i) => String(i))).map((b) => b.length),
      [100, 100, 100],
    );
  });

  it('closing a session with 300 holds: 300 session-close ends, no expiry', async () => {
    const { ns, cls, caller, session } = await setup();
    const keys = Array.from({ length: 300 }, (_, i) => `${ns}/k${i}`);
    await acquireMany(caller, session, cls, keys);
    const closed = await la.call<{ released: string[]; revision: string }>('DELETE', `/v1/sessions/${session}`, caller);
    assert.equal(closed.status, 200, JSON.stringify(closed.body));
    assert.equal(closed.body.released.length, 300);
    assert.deepEqual(await endKinds(ns, BigInt(closed.body.revision)), { 'session-close': 300 });
  });

  it('force-release with revokeSession: force for the key, session-close for the 3 other holds, no expiry', async () => {
    const { ns, cls, caller, session } = await setup();
    const keys = [`${ns}/stuck`, `${ns}/a`, `${ns}/b`, `${ns}/c`];
    await acquireMany(caller, session, cls, keys);
    const op1 = await la.token(uniqueId('op-alice-'), ['lock-operator']);
    const op2 = await la.token(uniqueId('op-bob-'), ['lock-operator']);
    const req = await la.call<{ id: string; requestHash: string }>('POST', '/v1/force-releases', op1, {
      key: keys[0],
      reason: 'leaked holder',
      revokeSession: true,
    });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    const ok = await la.call<{ revision: string; revokedSession: boolean }>('POST', `/v1/force-releases/${req.body.id}/approve`, op2, {
      requestHash: req.body.requestHash,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.revokedSession, true);
    assert.equal((await la.call('POST', `/v1/sessions/${session}/keepalive`, caller)).status, 404);
    // Every delete of the revoke is committed by now: wait for the tailer to pass etcd's head.
    const client = new Etcd3({ hosts: [etcd.endpoint] });
    const head = BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
    client.close();
    assert.deepEqual(await endKinds(ns, head), { force: 1, 'session-close': 3 });
  });
});
