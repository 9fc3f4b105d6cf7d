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
import { readCheckpoint } from '../../tailer/offsets.js';
import { currentTimeline } from '../../tailer/restores.js';
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

/** The store, failing once the first statement that marks rolled-back grants (after the events were marked). */
function failingGrantMarks(store: AuditStore): { store: AuditStore; failed: () => boolean } {
  let failed = false;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'command') {
        return async (query: string, ...rest: unknown[]) => {
          if (!failed && query.includes('AS rolled_back_by') && query.includes('.grants')) {
            failed = true;
            throw new Error('killed while marking the rolled-back grants (test)');
          }
          return (target.command as (...a: unknown[]) => Promise<unknown>)(query, ...rest);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, failed: () => failed };
}

describe('a bumped restore whose recording dies between the marks', { timeout: 240_000 }, () => {
  const replicas: TailerReplica[] = [];
  after(async () => {
    for (const r of replicas) await r.close();
  });

  it('is finished by the next leader: one restore gap, the new timeline, no compaction gap', async () => {
    const etcd = await startPrivateEtcd(19_530, 19_531);
    const client = createEtcdClient({ name: 'own', endpoints: [etcd.endpoint] });
    const label = uniqueId('rk');
    const replica = (store: AuditStore): TailerReplica => {
      const r = new TailerReplica({ cluster: { name: label, endpoints: [etcd.endpoint] }, store, log: log.child({ cluster: label }), health: new HealthState() }, { electionTtlSeconds: 10, checkpointIntervalMs: 100, clockIntervalMs: 3_600_000, restoreCheckIntervalMs: 300 });
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
      for (let i = 0; i < 10; i++) await w.grant(s, `doomed-${i}`);
      const top = await head(client);
      await waitFor('captured', async () => ((await readCheckpoint(db.store, label)) >= top ? true : undefined), 60_000, 100);
      await first.close();

      await etcd.restore(snapshot, { bumpRevision: 1_000_000 });
      const other = new Workload(client, uniqueId('ns'));
      const t = await waitFor('a session on the restored cluster', async () => other.session().catch(() => undefined), 30_000, 200);
      for (let i = 0; i < 5; i++) await other.grant(t, `after-${i}`);

      // The recording dies once, after the events are marked; the same replica's next run (a new leadership) goes on.
      const failing = failingGrantMarks(db.store);
      replica(failing.store).start();
      await waitFor('the restore recorded in full', async () => ((await currentTimeline(db.store, label))?.generation === 1 ? true : undefined), 180_000, 200);
      assert.ok(failing.failed(), 'the first recording died between the marks');
      const gaps = await db.store.rows<{ kind: string }>('SELECT kind FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} ORDER BY from_revision', { c: label });
      assert.deepEqual(gaps.map((g) => g.kind), ['restore'], 'one restore gap, and the bump not read as a compaction');
    } finally {
      for (const r of replicas.splice(0)) await r.close();
      client.close();
      await etcd.stop();
    }
  });
});
