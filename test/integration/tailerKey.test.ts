// The tailer's key apart from the lock API's (issue 42 item 3, core/tailerSecret.ts): whoever holds only the
// API's origin secret — a taken-over API process — mints holds and markers, never the tailer's own proofs.
// Each forgery below is made with the API's key, the way such an insider would (raw etcd txns, rows inserted
// into the store): a /sys/clock write, a checkpoint ahead of capture, a restore gap. With one shared key
// (before the split) each was taken; now the clock write reads foreign, the checkpoint makes the start
// replay (alarmed), and the restore gap explains nothing to the digest worker or `verify`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { PREFIX } from '../../core/keyspace.js';
import { checkpointMac, clockMac, hasValidCheckpointProof, hasValidClockProof, restoreGapMac, type SignedRestoreGap } from '../../core/proof.js';
import { HealthState } from '../../platform/health.js';
import { provenRestores } from '../../exporters/digests/explain.js';
import { recordGap } from '../../tailer/recovery/gaps.js';
import { currentTimeline } from '../../tailer/recovery/restores.js';
import { TailerReplica } from '../../tailer/replica.js';
import { capturedRows, checkpointAtHead, headRevision, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'error');
/** The lock API's key: what a taken-over API process holds. */
const apiKey = randomBytes(32);
/** The tailer's own. */
const tailerKey = randomBytes(32);

describe("the tailer's key: the lock API's key mints none of the tailer's proofs", { timeout: 180_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  const label = uniqueId('tkey');
  const health = new HealthState();
  const start = (): TailerReplica => {
    const r = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 200, originSecret: apiKey, tailerSecret: tailerKey },
    );
    r.start();
    return r;
  };
  const provenCheckpoint = async (): Promise<{ revision: string; term: string; leader: string; timeline: number; proof: string } | undefined> =>
    (
      await store.rows<{ revision: string; term: string; leader: string; timeline: number; proof: string }>(
        "SELECT toString(revision) AS revision, toString(term) AS term, leader, timeline, proof FROM {db:Identifier}.checkpoints WHERE cluster = {c:String} AND proof != '' AND leader != 'mallory' ORDER BY revision DESC LIMIT 1",
        { c: label },
      )
    )[0];

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    await checkpointAtHead(store, client, label);
  });
  after(async () => {
    client.close();
    await closeStore();
  });

  it('the tailer proves its checkpoints and clock writes with its own key, not the API key', async () => {
    const replica = start();
    try {
      const head = await headRevision(client);
      const row = await waitFor('a proven checkpoint', async () => {
        const r = await provenCheckpoint();
        return r && BigInt(r.revision) >= head ? r : undefined;
      });
      const signed = { cluster: label, timeline: Number(row.timeline), term: row.term, revision: row.revision, leader: row.leader };
      assert.ok(hasValidCheckpointProof(tailerKey, signed, row.proof), 'proven with the tailer key');
      assert.equal(hasValidCheckpointProof(apiKey, signed, row.proof), false, 'the API key proves no checkpoint');
      const clock = await waitFor('a clock write of this tailer', async () => {
        const [kv] = (await client.kv.range({ key: Buffer.from(PREFIX.clock) })).kvs;
        if (!kv) return undefined;
        const value = JSON.parse(kv.value.toString()) as { at: number; mac?: string };
        return hasValidClockProof(
          tailerKey,
          { at: value.at, ...(value.mac ? { mac: value.mac } : {}) },
          { createRevision: kv.create_revision, version: kv.version },
        )
          ? { kv, value }
          : undefined;
      });
      assert.equal(
        hasValidClockProof(
          apiKey,
          { at: clock.value.at, ...(clock.value.mac ? { mac: clock.value.mac } : {}) },
          { createRevision: clock.kv.create_revision, version: clock.kv.version },
        ),
        false,
      );
    } finally {
      await replica.close();
    }
  });

  it('a /sys/clock write proven with the API key is captured foreign, and alarmed', async () => {
    const replica = start();
    try {
      await waitFor('the replica leads', async () => ((await provenCheckpoint()) ? true : undefined));
      // The API key's proof of exactly this put: the key's create revision and the version the put makes.
      let forgedRev = 0n;
      for (let attempt = 0; attempt < 20 && forgedRev === 0n; attempt += 1) {
        const [kv] = (await client.kv.range({ key: Buffer.from(PREFIX.clock) })).kvs;
        assert.ok(kv, 'the clock key exists');
        const version = (BigInt(kv.version) + 1n).toString();
        const at = Date.parse('2299-01-01T00:00:00Z');
        const res = await client
          .if(PREFIX.clock, 'Mod', '==', kv.mod_revision)
          .then(client.put(PREFIX.clock).value(JSON.stringify({ at, mac: clockMac(apiKey, at, kv.create_revision, version) })))
          .commit();
        if (res.succeeded) forgedRev = BigInt(res.header.revision);
      }
      assert.notEqual(forgedRev, 0n, 'the forged put landed');
      const rows = await waitFor('the forged write captured', async () => {
        const r = await store.rows<{ event_type: string; origin: string }>(
          'SELECT event_type, origin FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision = {r:UInt64} AND key = {k:String}',
          { c: label, r: forgedRev.toString(), k: PREFIX.clock },
        );
        return r.length > 0 ? r : undefined;
      });
      assert.deepEqual(
        rows.map((r) => [r.event_type, r.origin]),
        [['clock', 'foreign']],
      );
      const alarm = health.alarms().find((a) => a.name === `foreign-write:${label}`);
      assert.match(alarm?.message ?? '', /\/sys\/clock/);
    } finally {
      await replica.close();
    }
  });

  it('a checkpoint ahead of capture proven with the API key is alarmed, and the stretch below it captured', async () => {
    const ns = uniqueId('gap');
    let first = 0n;
    let last = 0n;
    for (let i = 0; i < 4; i += 1) {
      const res = await client.put(`/l/${ns}/k${i}`).value('{"holder":"h"}').exec();
      last = BigInt(res.header.revision);
      if (first === 0n) first = last;
    }
    const timeline = (await currentTimeline(store, label))?.timeline ?? 0;
    const head = await headRevision(client);
    const forged = { cluster: label, timeline, term: (2n ** 62n).toString(), revision: head.toString(), leader: 'mallory' };
    await store.insert('checkpoints', [
      { cluster: label, revision: forged.revision, leader: forged.leader, term: forged.term, timeline, proof: checkpointMac(apiKey, forged) },
    ]);
    const replica = start();
    try {
      await waitFor('the stretch below the forged checkpoint captured', async () =>
        (await capturedRows(store, label, first, last)).filter((r) => r.key.startsWith(`/l/${ns}/`)).length === 4 ? true : undefined,
      );
      const alarmed = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_RESUME_UNPROVEN');
      assert.match(alarmed?.message ?? '', new RegExp(`revision ${head}`));
    } finally {
      await replica.close();
    }
  });

  it('a restore gap proven with the API key explains nothing to the digest worker or verify', async () => {
    const gap = (generation: number): SignedRestoreGap => ({
      cluster: label,
      generation,
      fromRevision: '10',
      toRevision: '20',
      detectedAtMs: 1_700_000_000_000 + generation,
      historyLost: 0,
      previousClusterId: 'c0',
      clusterId: 'c0',
    });
    for (const [generation, key] of [
      [7, apiKey],
      [8, tailerKey],
    ] as const) {
      const signed = gap(generation);
      await recordGap(store, {
        cluster: label,
        from_revision: signed.fromRevision,
        to_revision: signed.toRevision,
        detected_at: signed.detectedAtMs,
        reason: 'restore (test)',
        kind: 'restore',
        history_lost: 0,
        generation,
        previous_cluster_id: 'c0',
        cluster_id: 'c0',
        term: '1',
        proof: restoreGapMac(key, signed),
      });
    }
    assert.deepEqual(
      (await provenRestores(store, label, tailerKey)).map((r) => r.generation),
      [8],
    );
  });
});
