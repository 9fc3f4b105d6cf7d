// A read of /sys/epoch sent before this process's own epoch advance and answered after it must not seal grants.
// The 30-minute chaos run (seed 7): right after a restore's approved advance to epoch 4, a /v1/epoch probe's read
// sent before the advance came back with epoch 3 and latched "/sys/epoch says epoch 3 but epoch 4 was already
// seen" — every grant refused, with /sys/epoch at 4, until the process restarted. Real etcd; the probe's txn
// answer is held (not altered) until the advance finished, which is the order the race produced.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { testConfig, tempStore, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;

describe('lock API: a read older than our own epoch advance', { timeout: 60_000 }, () => {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  const root = `/${uniqueId('root')}`;
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  let la: LockApp;
  let closeStore: () => Promise<void>;
  let etcd: Etcd3;
  let op1: string;
  let op2: string;
  let client: string;
  let session: string;

  before(async () => {
    etcd = new Etcd3({ hosts: cluster.endpoints });
    const temp = await tempStore();
    closeStore = temp.close;
    la = await lockApp(config, temp.store, { root });
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    op1 = await la.token(uniqueId('op-alice-'), ['lock-operator']);
    op2 = await la.token(uniqueId('op-bob-'), ['lock-operator']);
    client = await la.token(`spiffe://test/${ns}/w`, ['client']);
    assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
    session = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    assert.equal((await la.call('POST', '/v1/locks/acquire', client, { key: `${ns}/before`, session, class: className })).status, 200);
  });
  after(async () => {
    await la.close();
    await etcd.delete().prefix(`${root}/`);
    etcd.close();
    await closeStore();
  });

  it('a probe answered after the advance judges nothing: grants go on in the new epoch', async () => {
    const lockEtcd = la.service.parts.etcd;
    const txn = lockEtcd.txn.bind(lockEtcd);
    // Hold the answer of the next read-only txn (the probe's: no compares) until released.
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => (release = r));
    let armed = false; // after the advance request, whose own probe must go through
    let held = false;
    let heldSent: () => void = () => undefined;
    const sent = new Promise<void>((r) => (heldSent = r));
    lockEtcd.txn = async (compare, success, failure) => {
      const res = await txn(compare, success, failure);
      if (armed && !held && compare.length === 0 && success.length === 2) {
        held = true;
        heldSent();
        await released;
      }
      return res;
    };
    try {
      const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'drill' });
      assert.equal(req.status, 202, JSON.stringify(req.body));
      const from = Number(req.body.epoch);
      armed = true;
      // A /v1/epoch probe reads /sys/epoch (the old epoch) and its answer is held…
      const probe = la.call<Json>('GET', '/v1/epoch', client);
      await sent;
      // …while the other operator's approval advances the epoch.
      const ok = await la.call<Json>('POST', `/v1/epoch/advance/${String(req.body.id)}/approve`, op2, { requestHash: req.body.requestHash });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.epoch, from + 1);
      release();
      await probe;
    } finally {
      lockEtcd.txn = txn;
      release();
    }
    const state = await la.call<Json>('GET', '/v1/epoch', client);
    assert.equal(state.body.sealed, false, JSON.stringify(state.body));
    const sessionAfter = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/after`, session: sessionAfter, class: className });
    assert.equal(got.status, 200, `a grant after our own advance: ${JSON.stringify(got.body)}`);
  });
});
