// Epochs and the restore seal, on a private keyspace root of the suite's etcd
// (so no other test sees this file's /sys/epoch): a token above 2^53 returned
// exactly, a cluster-id mismatch sealing grants, and the two-person advance;
// a /sys/epoch put by hand (no proof) is never obeyed, and the last epoch of
// the token space is refused with a clear error.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { decodeValue, EPOCH_MAX, EpochValueSchema, MarkValueSchema, type EpochValue } from '../../core/keyspace.js';
import { originSecret } from '../../core/originSecret.js';
import { epochMac, hasValidEpochProof, hasValidMarkProof } from '../../core/proof.js';
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
  /** A /sys/epoch value as the lock API writes it (proven with this deployment's key): what a restore brings back. */
  const proven = (epoch: number, id: string, from = '0'): string => {
    const v = { epoch, clusterId: id, from };
    return JSON.stringify({ ...v, mac: epochMac(originSecret(config), v) });
  };

  before(async () => {
    etcd = new Etcd3({ hosts: cluster.endpoints });
    clusterId = String((await etcd.maintenance.status()).header.cluster_id);
    // This keyspace has already lived through 40 epochs.
    await etcd.put(`${root}/sys/epoch`).value(proven(40, clusterId));
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
    const res = await la.app.inject({
      method: 'POST',
      url: '/v1/locks/acquire',
      headers: { authorization: `Bearer ${client}`, 'content-type': 'application/json' },
      payload: { key: `${ns}/a`, session, class: className },
    });
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
    await etcd.put(`${root}/sys/epoch`).value(proven(40, '1234567890'));
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
    const self = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, op1, { requestHash: req.body.requestHash });
    assert.equal(self.status, 403);
    assert.equal(self.body.error, 'LOCKAUDIT_ERR_EPOCH_SELF_APPROVAL');
    assert.equal(
      (await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, client, { requestHash: req.body.requestHash })).status,
      403,
      'clients cannot approve',
    );

    const ok = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.epoch, 41);
    assert.equal(ok.body.clusterId, clusterId);
    assert.equal(ok.body.deletedHolds, 1);
    // One txn: the epoch bound to this cluster, the restored hold deleted, an epoch-advance marker.
    const events = await eventsAt(cluster, ok.body.revision as string, root);
    const epochPut = events.find((e) => e.key === `${root}/sys/epoch`);
    const written = decodeValue(EpochValueSchema, epochPut?.value ?? '') as EpochValue;
    assert.deepEqual({ epoch: written.epoch, clusterId: written.clusterId }, { epoch: 41, clusterId });
    assert.ok(hasValidEpochProof(originSecret(config), written), 'the advance writes a proven /sys/epoch');
    assert.ok(events.some((e) => e.type === 'delete' && e.key === `${root}/l/${ns}/a`));
    const mark = events.find((e) => e.key.startsWith(`${root}/sys/mark/`));
    const markValue = decodeValue(MarkValueSchema, mark?.value ?? '');
    assert.equal(markValue?.kind, 'epoch-advance');
    assert.equal(markValue?.request, req.body.requestHash, 'the marker carries the hash of the request it carries out');
    assert.ok(markValue && hasValidMarkProof(originSecret(config), markValue));

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
    assert.equal((await la.call<Json>('POST', `/v1/epoch/advance/${a.body.id}/approve`, op2, { requestHash: a.body.requestHash })).status, 200);
    const stale = await la.call<Json>('POST', `/v1/epoch/advance/${b.body.id}/approve`, op1, { requestHash: b.body.requestHash });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error, 'LOCKAUDIT_ERR_EPOCH_STALE');
  });

  it('a /sys/epoch put by hand (epoch + 1, or the last epoch) seals and moves no token; the advance goes past the proven epoch', async () => {
    const before = await la.call<Json>('GET', '/v1/epoch', client);
    assert.equal(before.body.sealed, false);
    const provenEpoch = before.body.epoch as number;
    for (const handPut of [provenEpoch + 1, EPOCH_MAX]) {
      await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: handPut, clusterId }));
      const refused = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/hand-${handPut}`, session, class: className });
      assert.equal(refused.status, 503, `hand-put epoch ${handPut}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
      assert.match(refused.body.message as string, /does not carry the lock API's proof/);
      const state = await la.call<Json>('GET', '/v1/epoch', client);
      assert.equal(state.body.sealed, true);
      assert.match(state.body.reason as string, /put by hand/);
    }
    const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'a hand-put /sys/epoch' });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    assert.equal(req.body.nextEpoch, provenEpoch + 1, 'above the highest proven epoch, not the hand-put one');
    const ok = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.epoch, provenEpoch + 1);
    const granted = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/after-hand`, session, class: className });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    assert.equal(granted.body.epoch, provenEpoch + 1);
  });

  it('an acquire that waited while /sys/epoch was put by hand writes no hold under it, not even for a moment', async () => {
    const key = `${ns}/waited`;
    const first = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const other = await la.token(`spiffe://test/${ns}/w2`, ['client']);
    const waiter = (await la.call<{ id: string }>('POST', '/v1/sessions', other, { ttlSeconds: 15 })).body.id;
    const puts: Array<Record<string, unknown>> = [];
    const watcher = await etcd.watch().key(`${root}/l/${key}`).create();
    watcher.on('put', (kv) => puts.push(JSON.parse(kv.value.toString()) as Record<string, unknown>));
    try {
      const provenEpoch = (await la.call<Json>('GET', '/v1/epoch', client)).body.epoch as number;
      const waiting = la.call<Json>('POST', '/v1/locks/acquire', other, { key, session: waiter, class: className, waitMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Put by hand while the acquire waits; the API reads it (GET /v1/epoch reads /sys/epoch afresh), then the key frees.
      await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: provenEpoch + 1, clusterId }));
      assert.equal((await la.call<Json>('GET', '/v1/epoch', client)).body.sealed, true);
      const released = await la.call<Json>('POST', '/v1/locks/release', client, { key, session, token: first.body.token });
      assert.equal(released.status, 200, JSON.stringify(released.body));
      const refused = await waiting;
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.equal(refused.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Before: the waiter's txn compared the hand-put revision it had just read, put a hold of epoch provenEpoch + 1, then undid it.
      assert.deepEqual(puts, [], 'no hold put while sealed');
      const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'a hand-put /sys/epoch while an acquire waited' });
      const ok = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, op2, { requestHash: req.body.requestHash });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    } finally {
      await watcher.cancel();
    }
  });

  it('an unproven /sys/epoch (an upgrade from before proofs) is adopted as it is by two people: no hold deleted; an adoption never goes back', async () => {
    const proven = (await la.call<Json>('GET', '/v1/epoch', client)).body.epoch as number;
    const adopt = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'adopting a proven epoch', adopt: true });
    assert.equal(adopt.status, 409, 'nothing to adopt while /sys/epoch is proven');
    assert.equal(adopt.body.error, 'LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED');
    const held = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/kept-over-adoption`, session, class: className });
    assert.equal(held.status, 200, JSON.stringify(held.body));
    // The value a version without proofs wrote: epoch and cluster id only.
    await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: proven + 5, clusterId }));
    const sealed = await la.call<Json>('GET', '/v1/epoch', client);
    assert.equal(sealed.body.sealed, true);
    assert.match(sealed.body.reason as string, /adopt/);
    // Near the last epoch, or below an epoch already used, it cannot be adopted.
    await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: EPOCH_MAX, clusterId }));
    const tooHigh = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'upgrade', adopt: true });
    assert.equal(tooHigh.body.error, 'LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED', JSON.stringify(tooHigh.body));
    await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: proven - 1, clusterId }));
    const below = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'upgrade', adopt: true });
    assert.equal(below.body.error, 'LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED', JSON.stringify(below.body));
    await etcd.put(`${root}/sys/epoch`).value(JSON.stringify({ epoch: proven + 5, clusterId }));
    const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'upgrade to proofs: /sys/epoch checked', adopt: true });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    assert.equal(req.body.adopt, true);
    assert.equal(req.body.nextEpoch, proven + 5);
    const shown = await la.call<Json>('GET', `/v1/epoch/advance/${req.body.id as string}`, op2);
    assert.equal(shown.body.adopt, true);
    const ok = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id as string}/approve`, op2, { requestHash: shown.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.epoch, proven + 5);
    assert.equal(ok.body.deletedHolds, 0);
    const state = await la.call<Json>('GET', '/v1/epoch', client);
    assert.equal(state.body.sealed, false, JSON.stringify(state.body));
    assert.equal(
      (await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(`${ns}/kept-over-adoption`)}`, client)).body.revision,
      held.body.revision,
      'the hold survived the adoption',
    );
    const granted = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/after-adoption`, session, class: className });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    assert.equal(granted.body.epoch, proven + 5);
  });

  it('a /sys/epoch that is no epoch record at all seals with its reason (never a 500), and an advance gets past it', async () => {
    await etcd.put(`${root}/sys/epoch`).value('{"epoch":1}');
    const refused = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/after-garbage`, session, class: className });
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.match(refused.body.message as string, /not an epoch record/);
    const state = await la.call<Json>('GET', '/v1/epoch', client);
    assert.equal(state.status, 200);
    assert.equal(state.body.sealed, true);
    const adopt = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'adopt garbage', adopt: true });
    assert.equal(adopt.body.error, 'LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED', JSON.stringify(adopt.body));
    const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'past a garbage /sys/epoch' });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    const ok = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id as string}/approve`, op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const granted = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/after-garbage`, session, class: className });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
  });

  it('an advance past the last epoch a token carries is refused with a clear error, never a crash', async () => {
    // As if 65 535 advances had been made: a proven /sys/epoch at the end of the token space.
    const { kv } = await la.service.parts.etcd.get(`${root}/sys/epoch`);
    await etcd.put(`${root}/sys/epoch`).value(proven(EPOCH_MAX, clusterId, kv?.modRevision ?? '0'));
    assert.equal((await la.call<Json>('GET', '/v1/epoch', client)).body.epoch, EPOCH_MAX);
    const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'one more' });
    assert.equal(req.status, 409, JSON.stringify(req.body));
    assert.equal(req.body.error, 'LOCKAUDIT_ERR_EPOCH_EXHAUSTED');
    assert.match(req.body.message as string, /65535/);
  });
});
