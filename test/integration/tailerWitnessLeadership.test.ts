// The lease witness outlives a lost leadership (issue 11; the third 30-minute
// chaos run): a tailer replica that sees a hold put live, loses leadership
// (its election lease gone: a pause past the TTL, an etcd hiccup) and wins it
// again must still read a hand delete made in between — its lease revoked at
// once — as `deleted`. A new run starts from the holds etcd has then, and this
// hold is no longer among them: only what the replica kept tells the delete
// from an expiry. In-process, against the suite's etcd; another candidate
// holds the election while the delete and the revoke happen. And across a
// process restart: what the witness heard is saved in the store (sql/057), so
// a new process (a new replica here) that finds the hold already deleted and
// its lease revoked still reads the delete as `deleted`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { PREFIX, tailerElectionName } from '../../core/keyspace.js';
import { createLogger } from '../../core/logger.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { checkpointAtHead, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const endpoints = testConfig().etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('lease witness across a lost leadership and a restart', { timeout: 120_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  const label = uniqueId('w');

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    await checkpointAtHead(store, client, label);
  });
  after(async () => {
    client.close();
    await closeStore();
  });

  it('a hand delete + revoke made while another candidate leads is still `deleted` once the replica leads again', async () => {
    const replica = new TailerReplica({ cluster: { name: label, endpoints }, store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    let rival: ReturnType<ReturnType<Etcd3['election']>['campaign']> | undefined;
    try {
      replica.start();
      await waitFor('the replica leads', () => (replica.status().leader ? true : undefined), 30_000);

      // A hold put straight into etcd on a lease with a minute left, captured live.
      const ns = uniqueId('ns');
      const lease = client.lease(60, { autoKeepAlive: false });
      const leaseId = await lease.grant();
      const key = `/l/${ns}/held`;
      const put = await client
        .put(key)
        .value(JSON.stringify({ holder: 'spiffe://rogue.example/etcdctl', session: leaseId, class: 'c', epoch: 0, waitMs: 0, at: Date.now() }))
        .lease(leaseId)
        .exec();
      await waitFor('the put captured', async () => ((await readCheckpoint(store, label)) >= BigInt(put.header.revision) ? true : undefined), 45_000, 100);

      // The rival queues behind the replica; the replica's election lease is revoked: the rival leads.
      rival = client.namespace(PREFIX.sys).election(tailerElectionName(label), 3).campaign('test-rival');
      const elected = new Promise<void>((resolve) => rival?.on('elected', () => resolve()));
      await waitFor(
        'the rival queued',
        async () =>
          (
            await client
              .getAll()
              .prefix(`${PREFIX.sys}election/${tailerElectionName(label)}/`)
              .keys()
          ).length === 2
            ? true
            : undefined,
        10_000,
      );
      const campaigns = await client
        .getAll()
        .prefix(`${PREFIX.sys}election/${tailerElectionName(label)}/`)
        .exec();
      const ours = campaigns.kvs.filter((kv) => kv.value.toString() === replica.replicaId);
      assert.equal(ours.length, 1, 'the replica campaigns with one key');
      await client.leaseClient.leaseRevoke({ ID: String(ours[0]?.lease) });
      await elected;
      await waitFor('the replica no longer leads', () => (replica.status().leader ? undefined : true), 30_000);

      // Meanwhile: deleted by hand, the lease revoked at once — etcd no longer knows the lease had time left.
      const del = await client.delete().key(key).exec();
      assert.equal(del.deleted, '1');
      await lease.revoke();

      await rival.resign();
      rival = undefined;
      await waitFor('the replica leads again', () => (replica.status().leader ? true : undefined), 30_000);
      await waitFor('the delete captured', async () => ((await readCheckpoint(store, label)) >= BigInt(del.header.revision) ? true : undefined), 45_000, 100);
      const rows = await store.rows<{ end_kind: string }>('SELECT end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String}', {
        c: label,
        k: `${ns}/held`,
      });
      assert.deepEqual(rows, [{ end_kind: 'deleted' }], 'the witness kept the lease TTL it heard before the leadership was lost');
    } finally {
      await rival?.resign().catch(() => undefined);
      await replica.close();
    }
  });

  it('a hand delete + revoke made while no tailer runs is `deleted` for the next process: the evidence was saved', async () => {
    const first = new TailerReplica({ cluster: { name: label, endpoints }, store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    const ns = uniqueId('ns');
    const key = `/l/${ns}/held`;
    const lease = client.lease(60, { autoKeepAlive: false });
    const leaseId = await lease.grant();
    try {
      first.start();
      await waitFor('the replica leads', () => (first.status().leader ? true : undefined), 30_000);
      const put = await client
        .put(key)
        .value(JSON.stringify({ holder: 'spiffe://rogue.example/etcdctl', session: leaseId, class: 'c', epoch: 0, waitMs: 0, at: Date.now() }))
        .lease(leaseId)
        .exec();
      await waitFor('the put captured', async () => ((await readCheckpoint(store, label)) >= BigInt(put.header.revision) ? true : undefined), 45_000, 100);
      // Saved within a second of being heard — before any kill that comes later.
      await waitFor(
        'the evidence saved',
        async () => {
          const rows = await store.rows<{ n: string }>(
            'SELECT count() AS n FROM {db:Identifier}.lease_evidence WHERE cluster = {c:String} AND lease = {l:String}',
            { c: label, l: leaseId },
          );
          return rows[0]?.n === '1' ? true : undefined;
        },
        10_000,
        100,
      );
    } finally {
      await first.close();
    }
    // No tailer runs: deleted by hand, the lease revoked at once.
    const del = await client.delete().key(key).exec();
    assert.equal(del.deleted, '1');
    await lease.revoke();
    const next = new TailerReplica({ cluster: { name: label, endpoints }, store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    try {
      next.start();
      await waitFor('the delete captured', async () => ((await readCheckpoint(store, label)) >= BigInt(del.header.revision) ? true : undefined), 45_000, 100);
      const rows = await store.rows<{ end_kind: string }>('SELECT end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String}', {
        c: label,
        k: `${ns}/held`,
      });
      assert.deepEqual(rows, [{ end_kind: 'deleted' }], 'the new process loaded the TTL the first one heard');
    } finally {
      await next.close();
    }
  });
});
