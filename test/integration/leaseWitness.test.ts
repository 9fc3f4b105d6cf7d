// A hold deleted by hand and its lease revoked right after (a client ending
// its session, an operator's script): by the time the tailer asks, etcd no
// longer has the lease, so "lease gone" alone would read the delete as an
// expiry. Against the suite's real etcd, in the order that loses that race
// every time: the lease witness, having seen the hold put live, knows the
// lease had TTL left and reads it as no expiry; a lease that really lapsed
// still reads as one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { liveLeases } from '../../tailer/decode/leaseLiveness.js';
import { etcdTtl, LeaseWitness } from '../../tailer/decode/leaseWitness.js';
import type { RevisionChanges } from '../../tailer/types.js';
import { testConfig, uniqueId } from '../support/env.js';

const endpoints = testConfig().etcd.clusters[0]?.endpoints ?? [];

/** The watch's view of a put and of the delete that ends it (the decoder's input shape). */
async function putHold(client: Etcd3, key: string, lease: string): Promise<RevisionChanges> {
  const res = await client.put(key).value('{"holder":"spiffe://rogue.example/etcdctl"}').lease(lease).exec();
  const kv = { key, value: '', createRevision: res.header.revision, modRevision: res.header.revision, version: '1', lease };
  return { revision: BigInt(res.header.revision), changes: [{ type: 'put', kv }] };
}

async function deleteHold(client: Etcd3, key: string, lease: string): Promise<RevisionChanges> {
  const res = await client.delete().key(key).exec();
  const kv = { key, value: '', createRevision: '0', modRevision: res.header.revision, version: '0', lease: '0' };
  return { revision: BigInt(res.header.revision), changes: [{ type: 'delete', kv, prev: { ...kv, lease } }] };
}

describe('lease witness against etcd', { timeout: 60_000 }, () => {
  let client: Etcd3;
  before(() => {
    client = createEtcdClient({ name: 'test', endpoints });
  });
  after(() => client.close());

  it('a hand delete followed at once by a revoke is no expiry; a lapsed lease still is one', async () => {
    const witness = new LeaseWitness(etcdTtl(client));
    try {
      // Deleted by hand, then the lease revoked before anyone could ask.
      const lease = client.lease(60, { autoKeepAlive: false });
      const id = await lease.grant();
      const key = `/l/${uniqueId('ns')}/hand`;
      witness.seenLive(await putHold(client, key, id));
      const deleted = await deleteHold(client, key, id);
      await lease.revoke();
      const withoutWitness = await liveLeases(client, deleted);
      assert.equal(withoutWitness?.has(id), false, 'etcd alone: the lease is gone, the delete would read as an expiry');
      const withWitness = await liveLeases(client, deleted, (l) => witness.outlived(l));
      assert.equal(withWitness?.has(id), true, 'the lease had 60 s left when last seen: the delete was no expiry');

      // A lease left to lapse: its hold is deleted by etcd itself.
      const short = client.lease(2, { autoKeepAlive: false });
      const shortId = await short.grant();
      const shortKey = `/l/${uniqueId('ns')}/lapsed`;
      witness.seenLive(await putHold(client, shortKey, shortId));
      await witness.outlived(shortId); // the TTL answer is in
      let gone = false;
      for (let i = 0; i < 40 && !gone; i++) {
        await sleep(250);
        gone = (await client.get(shortKey).string()) === null;
      }
      assert.ok(gone, 'etcd expired the 2 s lease');
      const lapsed: RevisionChanges = {
        revision: 0n,
        changes: [
          {
            type: 'delete',
            kv: { key: shortKey, value: '', createRevision: '0', modRevision: '0', version: '0', lease: '0' },
            prev: { key: shortKey, value: '', createRevision: '0', modRevision: '0', version: '1', lease: shortId },
          },
        ],
      };
      const verdict = await liveLeases(client, lapsed, (l) => witness.outlived(l));
      assert.equal(verdict?.has(shortId), false, 'a lease that lapsed reads as an expiry');
    } finally {
      witness.close();
    }
  });
});
