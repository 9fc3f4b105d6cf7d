// A restore to a snapshot above a checkpoint held back (private etcd, ports 19510-19512). A run makes rows durable
// while its checkpoint cannot move (the leadership check gets no answer from etcd: what a loaded cluster does); then
// etcd is restored to a snapshot taken between the checkpoint and those rows, and its head passes them again with
// other writes before a tailer looks. Every witness at or below the checkpoint is intact; only the rows above it
// show the rewind. The 30-minute chaos run (seed 7) found this: undetected, the rolled-back rows stayed in the
// current timeline as if etcd had committed them, and every later start read them as yet another restore.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { ClockWriter } from '../../tailer/clock/clockWriter.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { currentTimeline } from '../../tailer/recovery/restores.js';
import { TailerPipeline } from '../../tailer/pipeline.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';
import { Workload } from '../support/workload.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const db = fileStore();

async function head(client: Etcd3): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

function replica(label: string, endpoint: string, health: HealthState): TailerReplica {
  // A restored etcd brings back the election key of whoever led at the snapshot, its lease fresh: the next campaign
  // waits that TTL out. 10 s (not 30) keeps a loaded machine's detection inside the waits below.
  return new TailerReplica(
    { cluster: { name: label, endpoints: [endpoint] }, store: db.store, log: log.child({ cluster: label }), health },
    { electionTtlSeconds: 10, checkpointIntervalMs: 100, clockIntervalMs: 3_600_000, restoreCheckIntervalMs: 300 },
  );
}

describe('a restore to a snapshot above a checkpoint held back', { timeout: 240_000 }, () => {
  it('is recorded as a restore, and the rows captured above the checkpoint stay in the record marked rolled back', async () => {
    const etcd = await startPrivateEtcd(19_510, 19_511);
    const client = createEtcdClient({ name: 'own', endpoints: [etcd.endpoint] });
    const label = uniqueId('ra');
    const health = new HealthState();
    const ns = uniqueId('ns');
    const w = new Workload(client, ns);
    let first: TailerReplica | undefined;
    let second: TailerReplica | undefined;
    let third: TailerReplica | undefined;
    try {
      // 1. Captured and checkpointed: the checkpoint C.
      first = replica(label, etcd.endpoint, new HealthState());
      first.start();
      const s = await w.session();
      for (let i = 0; i < 5; i++) await w.grant(s, `kept-${i}`);
      const c = await head(client);
      await waitFor('checkpoint at the head', async () => ((await readCheckpoint(db.store, label)) >= c ? true : undefined), 60_000, 100);
      await first.close();
      const checkpoint = await readCheckpoint(db.store, label);

      // 2. More history, the snapshot above the checkpoint, then the history the restore will roll back.
      for (let i = 0; i < 5; i++) await w.grant(s, `shared-${i}`);
      const snapshot = await etcd.snapshot('above.db');
      const snapRev = await head(client);
      for (let i = 0; i < 20; i++) await w.grant(s, `doomed-${i}`);
      const doomedHead = await head(client);
      assert.ok(snapRev > checkpoint && doomedHead > snapRev);

      // 3. A run that makes all of it durable but cannot write a checkpoint: its leadership check never answers.
      const pipeline = new TailerPipeline(
        {
          cluster: label,
          connect: () => createEtcdClient({ name: label, endpoints: [etcd.endpoint] }),
          client,
          store: db.store,
          log,
          replicaId: 'held-back',
          clock: new ClockWriter(client, log, 3_600_000),
          gaps: [],
          term: 1n,
          fence: () => Promise.reject(new Error('etcd did not answer')),
        },
        { checkpointIntervalMs: 100, leaseWitness: false },
      );
      const handle = pipeline.start(checkpoint, new AbortController().signal);
      await waitFor('rows durable up to the doomed head', async () => (handle.watermark() >= doomedHead ? true : undefined), 60_000, 100);
      await handle.close();
      assert.equal(await readCheckpoint(db.store, label), checkpoint, 'the checkpoint was held back');
      const doomedRows = async (current: boolean): Promise<number> =>
        Number(
          (
            await db.store.rows<{ n: string }>(
              `SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key LIKE {k:String} AND superseded_by ${current ? '=' : '>'} 0`,
              { c: label, k: `%/${ns}/doomed-%` },
            )
          )[0]?.n,
        );
      assert.equal(await doomedRows(true), 20, 'the rows above the checkpoint are durable');

      // 4. Restored to the snapshot (same cluster id, no bump); other writes take its head past the doomed rows.
      await etcd.restore(snapshot, {
        offline: {
          port: 19_512,
          run: async (endpoint) => {
            const side = createEtcdClient({ name: 'side', endpoints: [endpoint] });
            try {
              const other = new Workload(side, uniqueId('ns'));
              const t = await other.session();
              let n = 0;
              while ((await head(side)) <= doomedHead + 10n) await Promise.all(Array.from({ length: 10 }, () => other.grant(t, `after-${n++}`)));
            } finally {
              side.close();
            }
          },
        },
      });

      // 5. The next tailer must see the restore, and keep the doomed rows, marked rolled back.
      second = replica(label, etcd.endpoint, health);
      second.start();
      const gap = await waitFor(
        'a restore gap',
        async () =>
          (
            await db.store.rows<{ from_revision: string; to_revision: string; reason: string }>(
              "SELECT from_revision, to_revision, reason FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind = 'restore'",
              { c: label },
            )
          )[0],
        120_000,
        200,
      );
      assert.match(gap.reason, /^restore: /);
      assert.ok(BigInt(gap.from_revision) <= snapRev + 1n, `rolled back from ${gap.from_revision}: the snapshot was at ${snapRev}`);
      assert.ok(BigInt(gap.to_revision) >= doomedHead, `the gap reaches the rows captured above the checkpoint (${gap.to_revision} ≥ ${doomedHead})`);
      assert.ok(
        health.alarms().some((a) => a.name === `tailer-restore:${label}`),
        'LOCKAUDIT_ALARM_TAILER_RESTORE raised',
      );
      // The gap is written before the rows are marked (so a leader killed between them finishes the marks): judge the marks once recorded in full.
      await waitFor('the restore recorded in full', async () => ((await currentTimeline(db.store, label))?.generation === 1 ? true : undefined), 60_000, 200);
      assert.equal(await doomedRows(true), 0, 'no rolled-back row is left in the current timeline');
      assert.equal(await doomedRows(false), 20, 'every one is still in the record, marked');

      // 6. The same restore recorded half-way: its gap written, its timeline not (a leader that lost its leadership
      // during the restore's snapshot: the 30-minute chaos run's). The next leader must finish it — its rows are
      // marked, so looking for a restore again finds nothing, and the restored cluster would be read as the old one.
      await second.close();
      second = undefined;
      await db.store.command('ALTER TABLE {db:Identifier}.etcd_timelines DELETE WHERE cluster = {c:String} AND generation = 1 SETTINGS mutations_sync = 2', {
        c: label,
      });
      assert.equal((await currentTimeline(db.store, label))?.generation, 0);
      third = replica(label, etcd.endpoint, new HealthState());
      third.start();
      await waitFor(
        'the half-recorded restore finished',
        async () => ((await currentTimeline(db.store, label))?.generation === 1 ? true : undefined),
        120_000,
        200,
      );
      const gaps = await db.store.rows<{ kind: string; from_revision: string }>(
        'SELECT kind, from_revision FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} ORDER BY from_revision',
        { c: label },
      );
      assert.deepEqual(gaps, [{ kind: 'restore', from_revision: gap.from_revision }], 'one restore gap, the same, and nothing read as another gap');
      assert.equal(await doomedRows(true), 0, 'still none of the rolled-back rows in the current timeline');
    } finally {
      await first?.close();
      await second?.close();
      await third?.close();
      client.close();
      await etcd.stop();
    }
  });
});
