// Restores found without sampling (issue 21, item 3), on private etcds (ports
// 19500-19506). The losing order for a detector that samples recent keys, made
// deterministic: the last /sys/clock write, then a burst of fresh-key grants
// (every key put at version 1, so none of them is "back at an older version"),
// captured; then a restore to a snapshot from before that clock write, whose
// head has passed the old checkpoint before the tailer can look (a running
// tailer cannot reach the restored member until its own writes are in; a
// bumped restore starts far above). Each must record a `restore` gap and raise
// the restore alarm — not resume as if nothing happened, not a compaction gap.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { raftMark } from '../../tailer/recovery/raftMarks.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';
import { Workload } from '../support/workload.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const db = fileStore();
const BURST = 400;

interface GapRow {
  from_revision: string;
  to_revision: string;
  kind: string;
  reason: string;
}

function replica(label: string, etcd: PrivateEtcd, health: HealthState, raftMarkIntervalMs?: number): TailerReplica {
  // The tailer's own clock writes once, at election: the test places the last clock write itself.
  // A restored etcd brings back the election key of whoever led at the snapshot, its lease fresh: the next campaign
  // waits that TTL out. 10 s (not 30) keeps a loaded machine's detection inside the waits below.
  return new TailerReplica(
    { cluster: { name: label, endpoints: [etcd.endpoint] }, store: db.store, log: log.child({ cluster: label }), health },
    {
      electionTtlSeconds: 10,
      checkpointIntervalMs: 100,
      clockIntervalMs: 3_600_000,
      restoreCheckIntervalMs: 300,
      ...(raftMarkIntervalMs === undefined ? {} : { raftMarkIntervalMs }),
    },
  );
}

async function head(client: Etcd3): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

async function captured(label: string, revision: bigint): Promise<void> {
  await waitFor(`the tailer of ${label} past ${revision}`, async () => ((await readCheckpoint(db.store, label)) >= revision ? true : undefined), 60_000, 100);
}

/** BURST grants of fresh keys, 50 at a time; returns the last revision and the rate reached. */
async function burst(w: Workload, prefix: string): Promise<{ last: bigint; perSecond: number }> {
  const s = await w.session();
  const started = performance.now();
  let last = 0n;
  for (let i = 0; i < BURST; i += 50) {
    const revs = await Promise.all(Array.from({ length: 50 }, (_, j) => w.grant(s, `${prefix}-${i + j}`)));
    for (const r of revs) if (BigInt(r) > last) last = BigInt(r);
  }
  return { last, perSecond: Math.round((BURST * 1_000) / (performance.now() - started)) };
}

async function restoreGap(label: string): Promise<GapRow> {
  return waitFor(
    `a restore gap for ${label}`,
    async () => {
      const rows = await db.store.rows<GapRow>(
        "SELECT from_revision, to_revision, kind, reason FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind = 'restore'",
        { c: label },
      );
      return rows[0];
    },
    120_000,
    200,
  );
}

/** A bumped restore recorded as a restore (its gap from at most the snapshot + 1, the alarm raised), never as a compaction. */
async function assertRestoreNotCompaction(label: string, health: HealthState, snapRev: bigint, reason: RegExp): Promise<void> {
  const gap = await restoreGap(label);
  assert.equal(gap.kind, 'restore');
  assert.match(gap.reason, reason);
  assert.ok(BigInt(gap.from_revision) <= snapRev + 1n, `rolled back from ${gap.from_revision}: the snapshot was at ${snapRev}`);
  assert.ok(
    health.alarms().some((a) => a.name === `tailer-restore:${label}`),
    'LOCKAUDIT_ALARM_TAILER_RESTORE raised',
  );
  const compaction = await db.store.rows<{ n: string }>(
    "SELECT count() AS n FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind != 'restore'",
    { c: label },
  );
  assert.equal(compaction[0]?.n, '0', 'not read as a compaction');
}

/** Up to the last clock write and the burst after it, captured; returns the snapshot's revision and the checkpoint. */
async function losingOrder(etcd: PrivateEtcd, client: Etcd3, label: string, w: Workload): Promise<{ snapshot: string; snapRev: bigint; checkpoint: bigint }> {
  const s = await w.session();
  for (let i = 0; i < 5; i++) await w.grant(s, `before-${i}`);
  await captured(label, await head(client));
  const snapshot = await etcd.snapshot('before.db');
  const snapRev = await head(client);
  const lastTick = BigInt(await w.clock()); // the last clock write before the restore: after the snapshot
  const { last, perSecond } = await burst(w, 'burst');
  log.info({ perSecond, lastTick: lastTick.toString(), last: last.toString() }, 'burst of fresh-key grants after the last clock write');
  await captured(label, last);
  return { snapshot, snapRev, checkpoint: await readCheckpoint(db.store, label) };
}

describe('restores found without sampling: a burst of fresh-key grants after the last clock write', { timeout: 240_000 }, () => {
  it('same cluster id, no bump, tailer running: the restored head passed the checkpoint before the tailer could look', async () => {
    const etcd = await startPrivateEtcd(19_500, 19_501);
    const client = createEtcdClient({ name: 'own', endpoints: [etcd.endpoint] });
    const label = uniqueId('rw');
    const health = new HealthState();
    const tailer = replica(label, etcd, health);
    try {
      tailer.start();
      const w = new Workload(client, uniqueId('ns'));
      const { snapshot, snapRev, checkpoint } = await losingOrder(etcd, client, label, w);

      let restoredHead = 0n;
      await etcd.restore(snapshot, {
        offline: {
          port: 19_502,
          run: async (endpoint) => {
            const side = createEtcdClient({ name: 'side', endpoints: [endpoint] });
            try {
              const other = new Workload(side, uniqueId('ns'));
              const s = await other.session();
              let n = 0;
              while ((await head(side)) <= checkpoint + 50n) await Promise.all(Array.from({ length: 50 }, () => other.grant(s, `after-${n++}`)));
              restoredHead = await head(side);
            } finally {
              side.close();
            }
          },
        },
      });
      assert.ok(restoredHead > checkpoint, `the restored head ${restoredHead} passed the old checkpoint ${checkpoint}`);

      const gap = await restoreGap(label);
      assert.match(gap.reason, /^restore: /);
      assert.ok(BigInt(gap.from_revision) <= snapRev + 1n, `rolled back from ${gap.from_revision}: the snapshot was at ${snapRev}`);
      assert.ok(
        health.alarms().some((a) => a.name === `tailer-restore:${label}`),
        'LOCKAUDIT_ALARM_TAILER_RESTORE raised',
      );
    } finally {
      await tailer.close();
      client.close();
      await etcd.stop();
    }
  });

  it('--bump-revision --mark-compacted to a snapshot taken after the last clock write, fresh keys only since: the raft log restarted, a restore gap, not a compaction', async () => {
    // The case no witness can see (each is read at the compaction revision, where a fresh key is absent and the
    // clock write is intact): only etcd's raft log tells, its committed index back near 0.
    const etcd = await startPrivateEtcd(19_505, 19_506);
    const client = createEtcdClient({ name: 'own', endpoints: [etcd.endpoint] });
    const label = uniqueId('rw');
    const first = replica(label, etcd, new HealthState(), 200);
    const health = new HealthState();
    const second = replica(label, etcd, health, 200);
    try {
      first.start();
      const w = new Workload(client, uniqueId('ns'));
      await w.clock(); // the last clock write: before the snapshot
      const s = await w.session();
      for (let i = 0; i < 5; i++) await w.grant(s, `before-${i}`);
      await captured(label, await head(client));
      const snapshot = await etcd.snapshot('after-clock.db');
      const snapRev = await head(client);
      const { last } = await burst(w, 'fresh'); // fresh keys only after the snapshot
      await captured(label, last);
      const applied = BigInt((await client.maintenance.status()).raftAppliedIndex);
      await waitFor('the raft mark of the burst', async () => ((await raftMark(db.store, label, 0)) ?? 0n) >= applied || undefined, 30_000, 100);
      await first.close();

      await etcd.restore(snapshot, { bumpRevision: 1_000_000 });
      const other = new Workload(client, uniqueId('ns'));
      const s2 = await waitFor('a session on the restored cluster', async () => other.session().catch(() => undefined), 30_000, 200);
      for (let i = 0; i < 20; i++) await other.grant(s2, `after-${i}`);

      second.start();
      await assertRestoreNotCompaction(label, health, snapRev, /^restore: etcd's raft log restarted/);
    } finally {
      await second.close();
      await first.close();
      client.close();
      await etcd.stop();
    }
  });

  it('--bump-revision --mark-compacted, tailer stopped during the restore: a restore gap, not a compaction', async () => {
    const etcd = await startPrivateEtcd(19_503, 19_504);
    const client = createEtcdClient({ name: 'own', endpoints: [etcd.endpoint] });
    const label = uniqueId('rw');
    const first = replica(label, etcd, new HealthState());
    const health = new HealthState();
    const second = replica(label, etcd, health);
    try {
      first.start();
      const w = new Workload(client, uniqueId('ns'));
      const { snapshot, snapRev, checkpoint } = await losingOrder(etcd, client, label, w);
      await first.close();

      await etcd.restore(snapshot, { bumpRevision: 1_000_000 });
      const other = new Workload(client, uniqueId('ns'));
      const s = await waitFor('a session on the restored cluster', async () => other.session().catch(() => undefined), 30_000, 200);
      for (let i = 0; i < 20; i++) await other.grant(s, `after-${i}`);
      assert.ok((await head(client)) > checkpoint, 'the restored head is past the old checkpoint');

      second.start();
      await assertRestoreNotCompaction(label, health, snapRev, /^restore: /);
    } finally {
      await second.close();
      await first.close();
      client.close();
      await etcd.stop();
    }
  });
});
