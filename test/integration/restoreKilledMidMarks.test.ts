// A bumped restore (--bump-revision --mark-compacted) whose recording dies half-way through marking the rolled-back
// rows (private etcd, ports 19530-19531). The 30-minute chaos run at realistic load killed the tailer there: the
// events were marked, the gap not yet written, so the next start found every remaining witness intact, saw no
// restore, and read the bump as a compaction (gap-unexplained; the restored timeline captured as the old one's).
// The gap is written before any mark now, and the next leader finishes the restore from it.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { currentTimeline } from '../../tailer/recovery/restores.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';
import { Workload, type Session } from '../support/workload.js';
import { interceptStore } from '../support/interceptStore.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const db = fileStore();

async function head(client: Etcd3): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

/** The store, failing once the first statement that marks rolled-back grants (after the events were marked); `beforeFail` runs first. */
function failingGrantMarks(store: AuditStore, beforeFail: () => Promise<void> = async () => undefined): { store: AuditStore; failed: () => boolean } {
  let failed = false;
  const wrapped = interceptStore(store, 'command', async (query, proceed) => {
    if (!failed && query.includes('AS rolled_back_by') && query.includes('.grants')) {
      failed = true;
      await beforeFail();
      throw new Error('killed while marking the rolled-back grants (test)');
    }
    return proceed();
  });
  return { store: wrapped, failed: () => failed };
}

/** Between the two tries: ten grants on the restored cluster, then etcd compacted at its head (handed to `done`). */
function compactBetweenTries(done: (at: bigint) => void) {
  return async (client: Etcd3, other: Workload, session: Session): Promise<void> => {
    for (let i = 0; i < 10; i++) await other.grant(session, `compacted-${i}`);
    const at = await head(client);
    done(at);
    await client.kv.compact({ revision: at.toString(), physical: true });
  };
}

describe('a bumped restore whose recording dies between the marks', { timeout: 240_000 }, () => {
  const replicas: TailerReplica[] = [];
  after(async () => {
    for (const r of replicas) await r.close();
  });

  /** Captured, restored with a bump, recorded once up to the grant marks (`between` runs there), then finished. */
  async function scenario(
    ports: [number, number],
    gapsExpected: number,
    between: (client: Etcd3, other: Workload, session: Session) => Promise<void>,
    bumpRevision = 1_000_000,
  ): Promise<{ label: string; snapRev: bigint; gaps: Array<{ kind: string; from_revision: string; to_revision: string }> }> {
    const etcd = await startPrivateEtcd(ports[0], ports[1]);
    const client = createEtcdClient({ name: 'own', endpoints: [etcd.endpoint] });
    const label = uniqueId('rk');
    const replica = (store: AuditStore): TailerReplica => {
      const r = new TailerReplica(
        { cluster: { name: label, endpoints: [etcd.endpoint] }, store, log: log.child({ cluster: label }), health: new HealthState() },
        { electionTtlSeconds: 10, checkpointIntervalMs: 100, clockIntervalMs: 3_600_000, restoreCheckIntervalMs: 300 },
      );
      replicas.push(r);
      return r;
    };
    try {
      const w = new Workload(client, uniqueId('ns'));
      const s = await w.session();
      const first = replica(db.store);
      first.start();
      for (let i = 0; i < 5; i++) await w.grant(s, `kept-${i}`);
      const snapshot = await etcd.snapshot('before.db');
      const snapRev = await head(client);
      for (let i = 0; i < 10; i++) await w.grant(s, `doomed-${i}`);
      const top = await head(client);
      await waitFor('captured', async () => ((await readCheckpoint(db.store, label)) >= top ? true : undefined), 60_000, 100);
      await first.close();

      await etcd.restore(snapshot, bumpRevision ? { bumpRevision } : {});
      const other = new Workload(client, uniqueId('ns'));
      const t = await waitFor('a session on the restored cluster', async () => other.session().catch(() => undefined), 30_000, 200);
      for (let i = 0; i < 5; i++) await other.grant(t, `after-${i}`);

      // The recording dies once, after the events are marked; the same replica's next run (a new leadership) goes on.
      const failing = failingGrantMarks(db.store, () => between(client, other, t));
      replica(failing.store).start();
      await waitFor('the restore recorded in full', async () => ((await currentTimeline(db.store, label))?.generation === 1 ? true : undefined), 180_000, 200);
      assert.ok(failing.failed(), 'the first recording died between the marks');
      const gaps = await waitFor(
        'every gap',
        async () => {
          const rows = await db.store.rows<{ kind: string; from_revision: string; to_revision: string }>(
            'SELECT kind, from_revision, to_revision FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} ORDER BY from_revision',
            { c: label },
          );
          return rows.length >= gapsExpected ? rows : undefined;
        },
        60_000,
        200,
      );
      return { label, snapRev, gaps };
    } finally {
      for (const r of replicas.splice(0)) await r.close();
      client.close();
      await etcd.stop();
    }
  }

  it('is finished by the next leader: one restore gap, the new timeline, no compaction gap', async () => {
    const { gaps } = await scenario([19_530, 19_531], 1, async () => undefined);
    assert.deepEqual(
      gaps.map((g) => g.kind),
      ['restore'],
      'one restore gap, and the bump not read as a compaction',
    );
  });

  it('etcd compacted the restored history further between the two tries: the restore keeps its own range, the rest is a compaction gap', async () => {
    let compactedAt = 0n;
    const { snapRev, gaps } = await scenario(
      [19_532, 19_533],
      2,
      compactBetweenTries((at) => (compactedAt = at)),
    );
    assert.deepEqual(
      gaps.map((g) => g.kind),
      ['restore', 'compaction'],
      'the later compaction is a gap of its own',
    );
    const [restore, compaction] = gaps as unknown as [{ to_revision: string }, { from_revision: string; to_revision: string }];
    // The restore's own loss ends at its bump (the snapshot + 1 000 000, what etcd was compacted to at the first try).
    assert.ok(
      BigInt(restore.to_revision) >= snapRev + 1_000_000n && BigInt(restore.to_revision) < compactedAt,
      `restore gap to ${restore.to_revision}: its bump, not the later compaction at ${compactedAt}`,
    );
    assert.equal(compaction.from_revision, (BigInt(restore.to_revision) + 1n).toString());
    assert.equal(compaction.to_revision, compactedAt.toString());
  });

  it("a restore without a bump, compacted between the two tries: the new timeline's compacted revisions are a compaction gap of their own", async () => {
    let compactedAt = 0n;
    const { snapRev, gaps } = await scenario(
      [19_534, 19_535],
      2,
      compactBetweenTries((at) => (compactedAt = at)),
      0,
    );
    const byKind = new Map(gaps.map((g) => [g.kind, g]));
    assert.deepEqual([...byKind.keys()].sort(), ['compaction', 'restore'], "before: the restore gap alone, the new timeline's loss hidden in it");
    const compaction = byKind.get('compaction') as { from_revision: string; to_revision: string };
    const restore = byKind.get('restore') as { from_revision: string };
    assert.equal(compaction.from_revision, restore.from_revision, 'the new timeline is lost from the divergence on');
    assert.ok(BigInt(compaction.from_revision) <= snapRev + 1n);
    assert.equal(compaction.to_revision, compactedAt.toString());
  });
});
