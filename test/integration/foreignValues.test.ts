// Values in the lock keyspace of no shape the lock API writes (operator review):
// "hello" put by hand on a hold key blocks that lock for good and is no grant,
// so grant history never shows it. It is quarantined with its reason, and now
// alarmed as a write around the API, the alarm saying where to look
// (GET /v1/quarantine); a value under an ordinary key raises nothing. A
// real tailer on the test etcd and a real embedded ClickHouse.
import { createHash } from 'node:crypto';
import { VALUE_KEPT_BYTES } from '../../core/valueBound.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { checkpointAtHead, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const endpoints = testConfig().etcd.clusters[0]?.endpoints ?? [];

describe('values of no shape the lock API writes', () => {
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

  it('a hold key holding "hello" is quarantined and alarmed, pointing at GET /v1/quarantine; a plain key is neither', async () => {
    const label = uniqueId('fv');
    const ns = uniqueId('ns');
    const health = new HealthState();
    await checkpointAtHead(store, client, label);
    const replica = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, leaseWitness: false },
    );
    replica.start();
    const junk = `/l/${ns}/junk`;
    try {
      const plain = BigInt((await client.put(`/${ns}/not-the-lock-keyspace`).value('hello').exec()).header.revision);
      await waitFor('the plain put captured', async () => ((await readCheckpoint(store, label)) >= plain ? true : undefined), 60_000, 100);
      assert.deepEqual(health.alarms(), [], 'a value outside the hold, marker and force prefixes is no write around the API');

      const put = BigInt((await client.put(junk).value('hello').exec()).header.revision);
      await waitFor('the junk put captured', async () => ((await readCheckpoint(store, label)) >= put ? true : undefined), 60_000, 100);
      const quarantined = await store.rows<{ key: string; value: string; reason: string }>(
        'SELECT key, value, reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} ORDER BY revision',
        { c: label },
      );
      assert.deepEqual(
        quarantined.map((q) => [q.key, q.value]),
        [[junk, 'hello']],
      );
      assert.match(quarantined[0]?.reason ?? '', /hold value/);
      const [grants] = await store.rows<{ n: string }>('SELECT toString(count()) AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String}', {
        c: label,
      });
      assert.equal(grants?.n, '0', 'no grant: the value names no holder');
      const raised = health.alarms().find((a) => a.name === `foreign-write:${label}`);
      assert.ok(raised, 'LOCKAUDIT_ALARM_FOREIGN_WRITE raised');
      assert.equal(
        raised.message,
        `a value that is not a hold not made by the lock API was written into ${label} (${junk} at revision ${put}); see GET /v1/quarantine`,
      );
    } finally {
      await replica.close();
      await client.delete().key(junk).exec();
      await client.delete().key(`/${ns}/not-the-lock-keyspace`).exec();
    }
  });

  it('a hold whose holder is 1 MiB (the API writes at most 200 characters) is no grant: quarantined with the field named', async () => {
    const label = uniqueId('fv');
    const ns = uniqueId('ns');
    await checkpointAtHead(store, client, label);
    const replica = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health: new HealthState() },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, leaseWitness: false },
    );
    replica.start();
    const key = `/l/${ns}/huge-holder`;
    try {
      const value = JSON.stringify({ holder: 'h'.repeat(1_048_576), session: '0', class: 'payments', epoch: 1, waitMs: 0, at: Date.now() });
      const put = BigInt((await client.put(key).value(value).exec()).header.revision);
      await waitFor('the put captured', async () => ((await readCheckpoint(store, label)) >= put ? true : undefined), 60_000, 100);
      const quarantined = await store.rows<{ key: string; kept: string; bytes: string; sha: string; reason: string }>(
        'SELECT key, toString(length(value)) AS kept, toString(value_bytes) AS bytes, value_sha256 AS sha, reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String}',
        { c: label },
      );
      // Kept as evidence: its first 64 KiB, its size and its sha256 (sql/290), not the whole MiB.
      assert.deepEqual(
        quarantined.map((q) => [q.key, q.kept, q.bytes, q.sha]),
        [[key, String(VALUE_KEPT_BYTES), String(Buffer.byteLength(value)), createHash('sha256').update(value).digest('hex')]],
      );
      assert.match(quarantined[0]?.reason ?? '', /holder/);
      const [grants] = await store.rows<{ n: string; longest: string }>(
        'SELECT toString(count()) AS n, toString(max(length(holder))) AS longest FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String}',
        { c: label },
      );
      assert.equal(grants?.n, '0', 'no grant row carries a 1 MiB holder into grant history pages');
    } finally {
      await replica.close();
      await client.delete().key(key).exec();
    }
  });
});
