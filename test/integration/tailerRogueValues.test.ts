// Values written straight into etcd that the decoder or ClickHouse could not
// take used to stop capture for the whole cluster (issue 11, defect 2). Here
// they go in with a plain etcd3 client, and the API grants after them must
// still be captured; the rogue changes keep their raw event rows and sit in
// quarantine with a reason naming the field.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { checkpointAtHead, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('tailer: rogue values written straight into etcd', { timeout: 120_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  let la: LockApp;
  let replica: TailerReplica | undefined;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    la = await lockApp(config, store);
  });
  after(async () => {
    await replica?.close();
    await la.close();
    client.close();
    await closeStore();
  });

  it('quarantines what does not fit, keeps the raw rows, and later API grants are still captured', async () => {
    const label = uniqueId('c');
    const ns = uniqueId('ns');
    await checkpointAtHead(store, client, label);
    replica = new TailerReplica({ cluster: { name: label, endpoints }, store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    replica.start();

    const rogue = JSON.stringify({ holder: 'x', session: '1', class: 'c', epoch: 70000, waitMs: 1e21, at: 0 });
    const bigWait = JSON.stringify({ holder: 'x', session: '1', class: 'c', epoch: 1, waitMs: 1e21, at: 1_000 });
    const farAt = JSON.stringify({ holder: 'x', session: '1', class: 'c', epoch: 1, waitMs: 0, at: 1e17 });
    const r1 = await client.put(`/l/${ns}/rogue`).value(rogue).exec();
    await client.put(`/l/${ns}/wait`).value(bigWait).exec();
    await client.put(`/l/${ns}/at`).value(farAt).exec();
    const d1 = await client.delete().key(`/l/${ns}/rogue`).exec(); // its delete: the previous value is just as bad

    // Then ordinary API traffic.
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    const cls = `${ns}-fenced`;
    assert.equal((await la.call('PUT', `/v1/classes/${cls}`, admin, fencedClass(cls, ns))).status, 200);
    const caller = await la.token(`spiffe://test/${ns}/worker`, ['client']);
    const session = await la.call<{ id: string }>('POST', '/v1/sessions', caller, { ttlSeconds: 15 });
    const got = await la.call<{ token: string; revision: string }>('POST', '/v1/locks/acquire', caller, {
      key: `${ns}/after`,
      session: session.body.id,
      class: cls,
    });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const rel = await la.call<{ revision: string }>('POST', '/v1/locks/release', caller, {
      key: `${ns}/after`,
      session: session.body.id,
      token: got.body.token,
    });
    assert.equal(rel.status, 200, JSON.stringify(rel.body));

    await waitFor(
      'checkpoint past the release',
      async () => ((await readCheckpoint(store, label)) >= BigInt(rel.body.revision) ? true : undefined),
      45_000,
      200,
    );

    const grants = await store.rows<{ key: string; token: string; end_kind: string }>(
      `SELECT key, token, end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String}`,
      { c: label, ns },
    );
    assert.deepEqual(grants, [{ key: `${ns}/after`, token: got.body.token, end_kind: 'release' }]);

    const quarantined = await store.rows<{ key: string; op: string; reason: string; value: string }>(
      `SELECT key, op, reason, value FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND key LIKE {p:String} ORDER BY revision`,
      { c: label, p: `/l/${ns}/%` },
    );
    assert.deepEqual(
      quarantined.map((q) => [q.key.slice(ns.length + 4), q.op, q.reason.replace(/ must .*$/, '')]),
      [
        ['rogue', 'put', 'hold value /epoch'],
        ['wait', 'put', 'hold value /waitMs'],
        ['at', 'put', 'hold value /at'],
        ['rogue', 'delete', 'previous hold value /epoch'],
      ],
    );
    assert.equal(quarantined[0]?.value, rogue);

    const raw = await store.rows<{ revision: string; event_type: string; value: string }>(
      `SELECT revision, event_type, value FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key = {k:String} ORDER BY revision`,
      { c: label, k: `/l/${ns}/rogue` },
    );
    assert.deepEqual(
      raw.map((r) => [r.revision, r.event_type]),
      [
        [String(r1.header.revision), 'other'],
        [String(d1.header.revision), 'other'],
      ],
    );
    assert.equal(raw[0]?.value, rogue);
  });

  it('keeps keys and values apart that differ only in bytes that are not UTF-8 (one txn, two keys an insider wrote)', async () => {
    const label = uniqueId('c');
    const ns = uniqueId('ns');
    await checkpointAtHead(store, client, label);
    await replica?.close();
    replica = new TailerReplica({ cluster: { name: label, endpoints }, store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    replica.start();
    const key = (tail: number[]): Buffer => Buffer.concat([Buffer.from(`/l/${ns}/k`, 'utf8'), Buffer.from(tail)]);
    // Before etcdText both keys read /l/<ns>/k\uFFFD: one (revision, key) row, the other change gone without a trace.
    const txn = await client
      .if(key([0xff]), 'Version', '==', 0)
      .then(
        client.put(key([0xff])).value(Buffer.from([0x7b, 0xff])),
        client.put(key([0xfe])).value(Buffer.from([0x7b, 0xfe])),
        client.put(key([0xef, 0xbf, 0xbd])).value('\uFFFD'),
      )
      .commit();
    const revision = BigInt(txn.header.revision);
    await waitFor('checkpoint past the txn', async () => ((await readCheckpoint(store, label)) >= revision ? true : undefined), 45_000, 200);
    const rows = await store.rows<{ key: string; value: string }>(
      `SELECT key, value FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision = {r:UInt64} ORDER BY key`,
      { c: label, r: revision.toString() },
    );
    assert.deepEqual(rows, [
      { key: `/l/${ns}/k\uFFFD--`, value: '\uFFFD--' },
      { key: `/l/${ns}/k\uFFFDFE`, value: '{\uFFFDFE' },
      { key: `/l/${ns}/k\uFFFDFF`, value: '{\uFFFDFF' },
    ]);
  });
});
