// The values that drive the lock service's own decisions, forged as an insider with `etcdctl` would (raw etcd3
// puts, no lock API) against a running lock API and tailer (real etcd, embedded ClickHouse):
// - an advisory class whose waiver expired, renewed to 2099 by hand: never granted under, read `unproven` by
//   GET /v1/classes and the risk register (not `ok`), alarmed; an admin's PUT makes it the API's again;
// - a class put wholly by hand (open on quorum loss): never granted under; one edited to `fenced` still listed;
// - an older proven version of a class put back after a delete: unproven (bound to its key's life);
// - /sys/epoch put by hand: recorded foreign and alarmed; the diff shows it foreign.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { originSecret } from '../../core/originSecret.js';
import { HealthState } from '../../platform/health.js';
import { buildRegister } from '../../reports/riskRegister/index.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { checkpointAtHead, headRevision, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { advisoryClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;
const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('control-plane values written around the lock API', { timeout: 180_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  let la: LockApp;
  let replica: TailerReplica | undefined;
  const health = new HealthState();
  const label = uniqueId('c');
  const ns = uniqueId('cp');
  let admin: string;
  let worker: string;
  let session: string;

  const captured = async (): Promise<void> => {
    const head = await headRevision(client);
    await waitFor('checkpoint', async () => ((await readCheckpoint(store, label)) >= head ? true : undefined), 60_000, 200);
  };
  const register = async () => (await buildRegister({ store, limits: config.reports }, Date.now() + 1_000, 'UTC')).classes;
  const foreignAlarm = (): string | undefined => health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_FOREIGN_WRITE')?.message;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    la = await lockApp(config, store);
    admin = await la.token(uniqueId('admin-'), ['admin']);
    worker = await la.token(`spiffe://test/${ns}/w`, ['client']);
    session = (await la.call<{ id: string }>('POST', '/v1/sessions', worker, { ttlSeconds: 30 })).body.id;
    await checkpointAtHead(store, client, label);
    replica = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health },
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

  it('a waiver renewed by hand is not obeyed: unproven in the class, the register and acquire; an admin PUT proves it again', async () => {
    const name = `${ns}-expired`;
    const expired = advisoryClass(name, ns, { waiverExpires: '2020-01-01' });
    const put = await la.call<Json>('PUT', `/v1/classes/${name}`, admin, expired);
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.proof, 'proven');
    assert.equal((await la.call<Json>('POST', '/v1/locks/acquire', worker, { key: `${ns}/a`, session, class: name })).status, 200);
    await captured();
    assert.equal((await register()).find((c) => c.class === name)?.status, 'expired');

    // The insider renews the waiver in place, keeping the API's proof.
    const raw = JSON.parse((await client.get(`/sys/class/${name}`).string()) as string) as Json;
    await client.put(`/sys/class/${name}`).value(JSON.stringify({ ...raw, waiverExpires: '2099-12-31' }));
    const shown = await la.call<Json>('GET', `/v1/classes/${name}`, worker);
    assert.equal(shown.status, 200);
    assert.equal(shown.body.proof, 'unproven');
    assert.equal((shown.body.class as Json).waiverExpires, '2099-12-31', 'shown as etcd holds it');
    const refused = await la.call<Json>('POST', '/v1/locks/acquire', worker, { key: `${ns}/b`, session, class: name });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error, 'LOCKAUDIT_ERR_CLASS_UNPROVEN');
    await captured();
    const row = (await register()).find((c) => c.class === name);
    assert.equal(row?.status, 'unproven', 'the register does not list a hand-renewed waiver as ok');
    assert.match(foreignAlarm() ?? '', /lock class change/);

    // Adoption: an admin writes it through the API (every class rule checked), and it is the API's again.
    const adopted = await la.call<Json>('PUT', `/v1/classes/${name}`, admin, { ...expired, waiverExpires: '2099-12-31' });
    assert.equal(adopted.body.proof, 'proven');
    assert.equal((await la.call<Json>('POST', '/v1/locks/acquire', worker, { key: `${ns}/c`, session, class: name })).status, 200);
    await captured();
    assert.equal((await register()).find((c) => c.class === name)?.status, 'ok');
  });

  it('a class written wholly by hand, or edited to claim fenced, is never granted under and stays in the register', async () => {
    const name = `${ns}-handmade`;
    await client.put(`/sys/class/${name}`).value(JSON.stringify(advisoryClass(name, ns)));
    const refused = await la.call<Json>('POST', '/v1/locks/acquire', worker, { key: `${ns}/d`, session, class: name });
    assert.equal(refused.body.error, 'LOCKAUDIT_ERR_CLASS_UNPROVEN', JSON.stringify(refused.body));
    const listed = await la.call<{ classes: Json[] }>('GET', '/v1/classes', worker);
    assert.equal(listed.body.classes.find((c) => c.name === name)?.proof, 'unproven', 'the list an upgrade adopts from names it');
    assert.equal(listed.body.classes.find((c) => c.name === `${ns}-expired`)?.proof, 'proven');
    await client
      .put(`/sys/class/${name}`)
      .value(
        JSON.stringify(
          advisoryClass(name, ns, { enforcement: 'fenced', pauseTest: 'PT-1', onQuorumLoss: 'closed', riskOwner: undefined, waiverExpires: undefined }),
        ),
      );
    await captured();
    assert.equal((await register()).find((c) => c.class === name)?.status, 'unproven', 'a hand edit to fenced does not drop it from the register');
  });

  it('an older proven version put back after a delete proves nothing', async () => {
    const name = `${ns}-rollback`;
    await la.call<Json>('PUT', `/v1/classes/${name}`, admin, advisoryClass(name, ns, { onQuorumLoss: 'open' }));
    const old = (await client.get(`/sys/class/${name}`).string()) as string;
    await la.call<Json>('PUT', `/v1/classes/${name}`, admin, advisoryClass(name, ns, { onQuorumLoss: 'closed' }));
    await client.delete().key(`/sys/class/${name}`);
    await client.put(`/sys/class/${name}`).value(old); // version 1 of a new life: not the put its proof was made for
    await client.put(`/sys/class/${name}`).value(old); // nor version 2 of it
    const shown = await la.call<Json>('GET', `/v1/classes/${name}`, worker);
    assert.equal(shown.body.proof, 'unproven');
    assert.equal(
      (await la.call<Json>('POST', '/v1/locks/acquire', worker, { key: `${ns}/e`, session, class: name })).body.error,
      'LOCKAUDIT_ERR_CLASS_UNPROVEN',
    );
  });

  it("a /sys/epoch put by hand is recorded foreign and alarmed; the API's own is not", async () => {
    const epochBefore = (await la.call<Json>('GET', '/v1/epoch', worker)).body.epoch as number;
    const from = await headRevision(client);
    for (const a of health.alarms()) health.clear(a.name); // an alarm instance keeps its first message: see this one's
    await client
      .put('/sys/epoch')
      .value(JSON.stringify({ epoch: epochBefore + 1, clusterId: (await la.call<Json>('GET', '/v1/epoch', worker)).body.clusterId }));
    await captured();
    const rows = await store.rows<{ origin: string; epoch: number }>(
      `SELECT origin, epoch FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key = '/sys/epoch' AND revision > {r:UInt64} ORDER BY revision`,
      { c: label, r: from.toString() },
    );
    assert.deepEqual(
      rows.map((r) => [r.origin, Number(r.epoch)]),
      [['foreign', epochBefore + 1]],
    );
    assert.ok(
      health.alarms().some((a) => a.message.includes('/sys/epoch write')),
      JSON.stringify(health.alarms()),
    );
    const sealed = await la.call<Json>('GET', '/v1/epoch', worker);
    assert.equal(sealed.body.sealed, true);
    // Put the API's epoch back the way operators would: a two-person advance (proven, recorded api).
    const op1 = await la.token(uniqueId('op-a-'), ['lock-operator']);
    const op2 = await la.token(uniqueId('op-b-'), ['lock-operator']);
    const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'a hand-put epoch' });
    const ok = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id as string}/approve`, op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    await captured();
    const after = await store.rows<{ origin: string }>(
      `SELECT origin FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key = '/sys/epoch' AND revision = {r:UInt64}`,
      { c: label, r: String(ok.body.revision) },
    );
    assert.deepEqual(
      after.map((r) => r.origin),
      ['api'],
    );
  });
});
