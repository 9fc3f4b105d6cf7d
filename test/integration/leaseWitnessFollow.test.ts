// A hold an insider puts while the tailer's capture is behind (its leader
// still deciding where to start: a slow start, a restore being recorded, a
// catch-up), deleted by hand at once and its lease revoked: by the time
// capture reads the delete the lease is gone and its TTL would have run out
// too. The witness follows etcd on its own watch from the replica's start,
// so it saw the put (asked the TTL) and saw by when the delete was committed
// — the delete reads `deleted`, not `expiry`. Before, the witness saw only
// what capture had read live (30-minute chaos run: foreign holds deleted
// during a 42 s restore recording read as expiries).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { checkpointAtHead, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { holdingGapsRead } from '../support/interceptStore.js';

const endpoints = testConfig().etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('the lease witness follows etcd while capture is behind', { timeout: 120_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
  });
  after(async () => {
    client.close();
    await closeStore();
  });

  it('a hand delete made during the start checks, its lease revoked, reads deleted though capture reads it after the TTL ran out', async () => {
    const label = uniqueId('wf');
    await checkpointAtHead(store, client, label);
    const held = holdingGapsRead(store);
    const replica = new TailerReplica({ cluster: { name: label, endpoints }, store: held.store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    replica.start();
    try {
      await held.reached; // elected, capture not started
      const lease = client.lease(5, { autoKeepAlive: false });
      const leaseId = await lease.grant();
      const key = `/l/${uniqueId('ns')}/foreign`;
      const value = JSON.stringify({ holder: 'spiffe://rogue.example/etcdctl', session: leaseId, class: 'c', epoch: 1, waitMs: 0, at: Date.now() });
      await client.put(key).value(value).lease(leaseId).exec();
      await sleep(300); // the witness's watch sees the put and asks the TTL
      const del = await client.delete().key(key).exec();
      await lease.revoke();
      const revision = BigInt(del.header.revision);
      await sleep(6_000); // past the 5 s TTL: asked now, the lease is gone, and "alive until" has run out too
      held.release();
      await waitFor('checkpoint past the delete', async () => ((await readCheckpoint(store, label)) >= revision ? true : undefined), 60_000, 200);
      const [row] = await store.rows<{ event_type: string }>(
        'SELECT event_type FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision = {r:UInt64} AND key = {k:String}',
        { c: label, r: revision.toString(), k: key },
      );
      assert.equal(row?.event_type, 'deleted', 'a hand delete while its lease lived, not an expiry');
    } finally {
      held.release();
      await replica.close();
    }
  });
});
