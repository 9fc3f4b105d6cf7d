// A finished restore whose timeline record an insider removed (private etcd, ports 19540-19541; insider review
// of the half-way restore's proof). etcd_timelines carries no proof: with generation g's row gone, the tailer's own
// proven restore gap of generation g reads as a restore recorded half-way, and finishing it again marks everything
// captured under g rolled back. The tailer's proven checkpoints of generation g say it was finished: it is alarmed
// (LOCKAUDIT_ALARM_TIMELINE_MISSING), its record written again from the proven gap, and nothing captured is marked
// or captured again under the older timeline.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { originSecret } from '../../core/originSecret.js';
import { HealthState } from '../../platform/health.js';
import { currentTimeline } from '../../tailer/recovery/restores.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { testConfig, uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';
import { Workload } from '../support/workload.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'error');
const db = fileStore();
const secret = originSecret(testConfig());

async function head(client: Etcd3): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

describe('a finished restore whose timeline record is removed', { timeout: 240_000 }, () => {
  it('is not finished again: alarmed, and nothing captured under it is marked rolled back', async () => {
    const etcd = await startPrivateEtcd(19_540, 19_541);
    const client = createEtcdClient({ name: 'own', endpoints: [etcd.endpoint] });
    const label = uniqueId('tr');
    const ns = uniqueId('ns');
    const w = new Workload(client, ns);
    const replicas: TailerReplica[] = [];
    const replica = (health: HealthState): TailerReplica => {
      // A restored etcd brings back the election key of whoever led at the snapshot: 10 s TTL, as restoreAboveCheckpoint.
      const r = new TailerReplica(
        { cluster: { name: label, endpoints: [etcd.endpoint] }, store: db.store, log: log.child({ cluster: label }), health },
        { electionTtlSeconds: 10, checkpointIntervalMs: 100, clockIntervalMs: 3_600_000, restoreCheckIntervalMs: 300, originSecret: secret },
      );
      replicas.push(r);
      r.start();
      return r;
    };
    const marked = async (pattern: string): Promise<{ current: number; marked: number }> => {
      const [row] = await db.store.rows<{ current: string; marked: string }>(
        `SELECT toString(countIf(superseded_by = 0 AND rolled_back_by = 0)) AS current, toString(countIf(superseded_by != 0 OR rolled_back_by != 0)) AS marked
         FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key LIKE {k:String} AND event_type = 'grant'`,
        { c: label, k: `%/${ns}/${pattern}-%` },
      );
      return { current: Number(row?.current), marked: Number(row?.marked) };
    };
    try {
      // 1. Captured and checkpointed; a snapshot; more history; etcd restored to the snapshot (its head falls back).
      let r = replica(new HealthState());
      const s = await w.session();
      for (let i = 0; i < 3; i++) await w.grant(s, `kept-${i}`);
      const snapshot = await etcd.snapshot('kept.db');
      for (let i = 0; i < 10; i++) await w.grant(s, `doomed-${i}`);
      const doomed = await head(client);
      await waitFor('checkpoint past the doomed grants', async () => ((await readCheckpoint(db.store, label)) >= doomed ? true : undefined), 60_000, 100);
      await r.close();
      await etcd.restore(snapshot);

      // 2. The next tailer records the restore (generation 1) and captures the restored etcd's new grants under it.
      r = replica(new HealthState());
      await waitFor('the restore recorded', async () => ((await currentTimeline(db.store, label))?.generation === 1 ? true : undefined), 120_000, 200);
      const t = await w.session();
      for (let i = 0; i < 5; i++) await w.grant(t, `after-${i}`);
      const after = await head(client);
      await waitFor('the new grants captured and checkpointed', async () => ((await readCheckpoint(db.store, label)) >= after ? true : undefined), 60_000, 100);
      assert.deepEqual(await marked('after'), { current: 5, marked: 0 });
      assert.deepEqual(await marked('doomed'), { current: 0, marked: 10 }, 'the restore marked the rolled-back grants');
      await r.close();

      // 3. The insider removes the timeline record of generation 1; the tailer starts again.
      await db.store.command('ALTER TABLE {db:Identifier}.etcd_timelines DELETE WHERE cluster = {c:String} AND generation = 1 SETTINGS mutations_sync = 2', {
        c: label,
      });
      const health = new HealthState();
      r = replica(health);
      const alarmed = await waitFor(
        'the missing timeline alarmed',
        async () => health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_TIMELINE_MISSING'),
        120_000,
        200,
      );
      assert.match(alarmed.message, /generation 1 was finished/);
      // Given time to do what it would do, it marks nothing it captured under generation 1, and records no restore again.
      const more = await w.session();
      await w.grant(more, 'later-0');
      const later = await head(client);
      await waitFor('capture goes on', async () => ((await readCheckpoint(db.store, label)) >= later ? true : undefined), 60_000, 100);
      assert.deepEqual(await marked('after'), { current: 5, marked: 0 }, 'the grants captured under generation 1 are not marked rolled back');
      const [gaps] = await db.store.rows<{ n: string }>(
        "SELECT toString(count()) AS n FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind = 'restore'",
        { c: label },
      );
      assert.equal(gaps?.n, '1', 'one restore gap still');
      // The record is written again from the proven gap, and capture goes on under generation 1: nothing captured
      // again under another timeline (before: the grants above the older timeline's checkpoint were captured a
      // second time under timeline 0, and later ones carried it).
      const again = await currentTimeline(db.store, label);
      assert.equal(again?.generation, 1, 'the timeline record is back');
      assert.equal(again?.timeline, 1);
      const [record] = await db.store.rows<{ reason: string; resume: string; diverged: string; from: string }>(
        `SELECT t.reason AS reason, toString(t.resume_revision) AS resume, toString(t.diverged_after) AS diverged, toString(g.from_revision) AS from
         FROM {db:Identifier}.etcd_timelines AS t FINAL INNER JOIN {db:Identifier}.gaps AS g FINAL ON g.cluster = t.cluster AND g.generation = t.generation AND g.kind = 'restore'
         WHERE t.cluster = {c:String} AND t.generation = 1`,
        { c: label },
      );
      assert.match(record?.reason ?? '', /^written again from the tailer's proven restore gap/);
      assert.equal(BigInt(record?.diverged ?? '0'), BigInt(record?.from ?? '0') - 1n, 'diverged after the revision before the gap');
      const [byTimeline] = await db.store.rows<{ other: string; later: string }>(
        `SELECT toString(countIf(timeline != 1 AND key LIKE {a:String})) AS other, toString(countIf(timeline = 1 AND key LIKE {l:String})) AS later
         FROM {db:Identifier}.events FINAL WHERE cluster = {c:String}`,
        { c: label, a: `%/${ns}/after-%`, l: `%/${ns}/later-%` },
      );
      assert.deepEqual(byTimeline, { other: '0', later: '1' }, 'captured under generation 1 only, once');
      await r.close();

      // 4. The insider removes the proof that the restore was finished too (generation 1's proven checkpoints), so
      // the guard cannot tell: the restore is finished again, and marks only what was captured before it.
      await db.store.command('ALTER TABLE {db:Identifier}.etcd_timelines DELETE WHERE cluster = {c:String} AND generation = 1 SETTINGS mutations_sync = 2', {
        c: label,
      });
      await db.store.command('ALTER TABLE {db:Identifier}.checkpoint_proofs DELETE WHERE cluster = {c:String} AND timeline = 1 SETTINGS mutations_sync = 2', {
        c: label,
      });
      // etcd compacted since: what the restore finished again marks cannot be captured again over it.
      await client.kv.compact({ revision: (await head(client)).toString(), physical: true });
      const again4 = new HealthState();
      r = replica(again4);
      await waitFor('the restore finished again', async () => again4.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_TAILER_RESTORE'), 120_000, 200);
      await waitFor('the restore recorded again', async () => ((await currentTimeline(db.store, label))?.generation === 1 ? true : undefined), 120_000, 200);
      await w.grant(more, 'later-1');
      const last = await head(client);
      await waitFor('capture goes on after it', async () => ((await readCheckpoint(db.store, label)) >= last ? true : undefined), 60_000, 100);
      // Before: every grant captured under generation 1 marked rolled back by the restore finished again.
      assert.deepEqual(await marked('after'), { current: 5, marked: 0 }, 'the grants captured under generation 1 are not marked by the restore finished again');
      assert.deepEqual(await marked('later'), { current: 2, marked: 0 });
      assert.deepEqual(await marked('doomed'), { current: 0, marked: 10 });
    } finally {
      for (const r of replicas) await r.close();
      client.close();
      await etcd.stop();
    }
  });
});
