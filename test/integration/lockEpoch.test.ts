// Epochs and the restore seal, on a private keyspace root of the suite's etcd
// (so no other test sees this file's /sys/epoch): a token above 2^53 returned
// exactly, a cluster-id mismatch sealing grants, and the two-person advance.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { decodeValue, EpochValueSchema, MarkValueSchema } from '../../core/keyspace.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { eventsAt, fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;

describe('lock API: epoch and seal', { timeout: 60_000 }, () => {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  const root = `/${uniqueId('root')}`;
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  let la: LockApp;
  let closeStore: () => Promise<void>;
  let etcd: Etcd3;
  let clusterId: string;
  let admin: string;
  let op1: string;
  let op2: string;
  let client: string;
  let session: string;
  let epoch40Token: bigint;

  before(async () => {
    etcd = new Etcd3({ hosts: cluster.endpoints });
    clusterId = String((await etcd.maintenance.status()).header.cluster_id);
    // This keyspace has already lived through 40 epochs.
    await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: 40, clusterId }));
    const temp = await tempStore();
    closeStore = temp.close;
    la = await lockApp(config, temp.store, { root });
    admin = await la.token(uniqueId('admin-'), ['admin']);
    op1 = await la.token(uniqueId('op-alice-'), ['lock-operator']);
    op2 = await la.token(uniqueId('op-bob-'), ['lock-operator']);
    client = await la.token(`spiffe://test/${ns}/w`, ['client']);
    assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
    session = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
  });
  after(async () => {
    await la.close();
    await etcd.delete().prefix(`${root}/`);
    etcd.close();
    await closeStore();
  });

  it('a token of epoch 40 (> 2^53) travels exactly, as a decimal string', async () => {
    const res = await la.app.inject({ method: 'POST', url: '/v1/locks/acquire', headers: { authorization: `Bearer ${client}`, 'content-type': 'application/json' }, payload: { key: `${ns}/a`, session, class: className } });
    assert.equal(res.statusCode, 200, res.body);
    const body = JSON.parse(res.body) as Json;
    const expected = 40n * 2n ** 48n + BigInt(body.revision as string);
    assert.ok(expected > 2n ** 53n);
    assert.equal(body.epoch, 40);
    assert.equal(body.token, expected.toString());
    assert.ok(res.body.includes(`"token":"${expected.toString()}"`), 'a string in the JSON text, never a number');
    epoch40Token = expected;
    const view = await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(`${ns}/a`)}`, client);
    assert.equal(view.body.token, expected.toString());
  });

  it('a cluster-id mismatch seals grants with a clear 503, and a two-person advance recovers', async () => {
    // As if this data had been restored from another cluster's backup.
    await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: 40, clusterId: '1234567890' }));
    const sealed = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/b`, session, class: className });
    assert.equal(sealed.status, 503, JSON.stringify(sealed.body));
    assert.equal(sealed.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
    assert.match(sealed.body.message as string, /restored/);
    assert.match(sealed.body.message as string, /epoch\/advance/);
    const again = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/c`, session, class: className });
    assert.equal(again.status, 503, 'stays sealed');
    const state = await la.call<Json>('GET', '/v1/epoch', client);
    assert.equal(state.body.sealed, true);

    const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'restored from backup after disk loss' });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    assert.equal(req.body.sealed, true);
    assert.equal(req.body.nextEpoch, 41);
    assert.equal(req.body.holds, 1, 'the restored hold the approval will delete');
    const self = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, op1);
    assert.equal(self.status, 403);
    assert.equal(self.body.error, 'LOCKAUDIT_ERR_EPOCH_SELF_APPROVAL');
    assert.equal((await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, client)).status, 403, 'clients cannot approve');

    const ok = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, op2);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.epoch, 41);
    assert.equal(ok.body.clusterId, clusterId);
    assert.equal(ok.body.deletedHolds, 1);
    // One txn: the epoch bound to this cluster, the restored hold deleted, an epoch-advance marker.
    const events = await eventsAt(cluster, ok.body.revision as string, root);
    const epochPut = events.find((e) => e.key === `${root}/sys/epoch`);
    assert.deepEqual(decodeValue(EpochValueSchema, epochPut?.value ?? ''), { epoch: 41, clusterId });
    assert.ok(events.some((e) => e.type === 'delete' && e.key === `${root}/l/${ns}/a`));
    const mark = events.find((e) => e.key.startsWith(`${root}/sys/mark/`));
    assert.equal(decodeValue(MarkValueSchema, mark?.value ?? '')?.kind, 'epoch-advance');

    const granted = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/b`, session, class: className });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    assert.equal(granted.body.epoch, 41);
    assert.ok(BigInt(granted.body.token as string) > epoch40Token, 'every token after the advance exceeds every token before it');
    // A token of the old epoch is fenced out.
    const old = await la.call<Json>('POST', '/v1/locks/release', client, { key: `${ns}/a`, session, token: epoch40Token.toString() });
    assert.equal(old.body.error, 'LOCKAUDIT_ERR_LOCK_NOT_HOLDER');
    assert.equal((await la.call<Json>('GET', '/v1/epoch', client)).body.sealed, false);
  });

  it('a stale advance request (the epoch moved since) is refused', async () => {
    const a = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'first request' });
    const b = await la.call<Json>('POST', '/v1/epoch/advance', op2, { reason: 'second request' });
    assert.equal((await la.call<Json>('POST', `/v1/epoch/advance/${a.body.id}/approve`, op2)).status, 200);
    const stale = await la.call<Json>('POST', `/v1/epoch/advance/${b.body.id}/approve`, op1);
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error, 'LOCKAUDIT_ERR_EPOCH_STALE');
  });
});
