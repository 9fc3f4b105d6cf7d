// Writes that bypass the lock API read as what they are (issue 11, defect 7):
// a hold put straight into etcd is a grant "not made by the API" (origin
// foreign, alarmed), a hold deleted by hand while its session lives ends as
// `deleted`, and a real lease expiry is still an `expiry`. The lock API and
// the tailer share the origin secret (<dataDir>/origin-secret).
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { tailerMetrics } from '../../tailer/tailerMetrics.js';
import { originSecret } from '../../core/originSecret.js';
import { HealthState } from '../../platform/health.js';
import { grantHistory } from '../../reports/grantHistory/index.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { checkpointAtHead, headRevision, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('tailer: proof of origin and deletes by hand', { timeout: 120_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  let la: LockApp;
  let replica: TailerReplica | undefined;
  const health = new HealthState();
  const label = uniqueId('c');
  const registry = createMetricsRegistry();
  const metrics = tailerMetrics(registry);
  /** lockaudit_tailer_bypass_events_total of this cluster and kind (what LockauditForeignGrant / LockauditHandDelete watch). */
  const bypass = async (kind: string): Promise<number> =>
    (await metrics.bypass.get()).values.find((v) => v.labels.cluster === label && v.labels.kind === kind)?.value ?? 0;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    la = await lockApp(config, store);
    await checkpointAtHead(store, client, label);
    replica = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health, metrics },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, originSecret: originSecret(config) },
    );
    replica.start();
  });
  after(async () => {
    await replica?.close();
    await la.close();
    client.close();
    await closeStore();
  });

  async function grantsOf(ns: string, atLeast: bigint): Promise<Record<string, { end_kind: string; origin: string }>> {
    await waitFor('checkpoint', async () => ((await readCheckpoint(store, label)) >= atLeast ? true : undefined), 45_000, 200);
    const rows = await store.rows<{ key: string; end_kind: string; origin: string }>(
      `SELECT key, end_kind, origin FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String}`,
      { c: label, ns },
    );
    return Object.fromEntries(rows.map((r) => [r.key.slice(ns.length + 1), { end_kind: r.end_kind, origin: r.origin }]));
  }

  it('an etcdctl-style put is a foreign grant (alarmed); a delete by hand while the session lives is `deleted`; an expiry stays `expiry`', async () => {
    const ns = uniqueId('ns');
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    const cls = `${ns}-fenced`;
    assert.equal((await la.call('PUT', `/v1/classes/${cls}`, admin, fencedClass(cls, ns, { ttlSeconds: 5 }))).status, 200);
    const caller = await la.token(`spiffe://test/${ns}/worker`, ['client']);
    const session = await la.call<{ id: string }>('POST', '/v1/sessions', caller, { ttlSeconds: 5 });
    assert.equal(session.status, 201);
    const acquire = async (key: string) => {
      const r = await la.call<{ token: string; revision: string }>('POST', '/v1/locks/acquire', caller, {
        key: `${ns}/${key}`,
        session: session.body.id,
        class: cls,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    await acquire('api');
    await acquire('byhand');
    await acquire('expires');

    // Straight into etcd: a well-formed hold without the API's proof.
    const rogue = JSON.stringify({ holder: 'spiffe://intruder', session: session.body.id, class: cls, epoch: 0, waitMs: 0, at: Date.now() });
    await client.put(`/l/${ns}/rogue`).value(rogue).exec();
    // A hand delete of an API hold while its session is kept alive.
    assert.equal((await la.call('POST', `/v1/sessions/${session.body.id}/keepalive`, caller)).status, 200);
    await client.delete().key(`/l/${ns}/byhand`).exec();

    // Let the session lapse: its remaining holds expire with it (api and expires).
    const gone = await waitFor(
      'the session to expire',
      async () => ((await client.get(`/l/${ns}/expires`).exec()).kvs.length === 0 ? true : undefined),
      20_000,
      200,
    );
    assert.equal(gone, true);
    const head = await headRevision(client);

    assert.deepEqual(await grantsOf(ns, head), {
      api: { end_kind: 'expiry', origin: 'api' },
      byhand: { end_kind: 'deleted', origin: 'api' },
      expires: { end_kind: 'expiry', origin: 'api' },
      rogue: { end_kind: '', origin: 'foreign' },
    });
    // Grant history shows both: the origin per grant, and endKind / origin as filters.
    const deps = { store, limits: config.reports, cursorKey: randomBytes(32) };
    const all = await grantHistory(deps, { namespace: ns, limit: 10 }, Date.now());
    assert.deepEqual(all.items.map((g) => [g.key.slice(ns.length + 1), g.origin, g.endKind]).sort(), [
      ['api', 'api', 'expiry'],
      ['byhand', 'api', 'deleted'],
      ['expires', 'api', 'expiry'],
      ['rogue', 'foreign', null],
    ]);
    assert.deepEqual(
      (await grantHistory(deps, { namespace: ns, endKind: 'deleted' }, Date.now())).items.map((g) => g.key),
      [`${ns}/byhand`],
    );
    assert.deepEqual(
      (await grantHistory(deps, { namespace: ns, origin: 'foreign' }, Date.now())).items.map((g) => g.key),
      [`${ns}/rogue`],
    );
    assert.deepEqual(
      (await grantHistory(deps, { namespace: ns, endKind: 'held' }, Date.now())).items.map((g) => g.key),
      [`${ns}/rogue`],
    );

    const alarm = health.alarms().find((a) => a.name === `foreign-write:${label}`);
    assert.ok(alarm, 'foreign-write alarm raised');
    assert.match(alarm.message, new RegExp(`/l/${ns}/rogue`));
    // Counted once durable: one foreign grant, one hand delete (the expiries are neither).
    assert.equal(await bypass('foreign-grant'), 1);
    assert.equal(await bypass('deleted'), 1);
    await client.delete().key(`/l/${ns}/rogue`).exec();
  });

  it('a hand delete whose lease is revoked right after is `deleted`, not an expiry (the lease witness saw its TTL)', async () => {
    const ns = uniqueId('ns');
    const lease = client.lease(60, { autoKeepAlive: false });
    const id = await lease.grant();
    const key = `/l/${ns}/revoked-after`;
    const put = await client
      .put(key)
      .value(JSON.stringify({ holder: 'spiffe://rogue.example/etcdctl', session: id, class: 'c', epoch: 0, waitMs: 0, at: Date.now() }))
      .lease(id)
      .exec();
    await waitFor('the tailer past the put', async () => ((await readCheckpoint(store, label)) >= BigInt(put.header.revision) ? true : undefined), 30_000, 100);
    await client.delete().key(key).exec();
    await lease.revoke(); // at once: by the time anyone asks etcd, the lease is gone
    const head = await headRevision(client);
    assert.deepEqual(await grantsOf(ns, head), { 'revoked-after': { end_kind: 'deleted', origin: 'foreign' } });
  });
});
