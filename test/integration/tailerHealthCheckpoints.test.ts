// The checkpoint in effect has one definition (grants/checkpointInEffect.sql):
// the tailer-health report, the contention seal and the tailer itself (its
// start and its writes: tailer/sink/offsets.ts readFencedCheckpoint; the API:
// readCheckpoints) give the same position, with the writer's term, before and
// after an etcd restore started a new timeline.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { sealContentionHours } from '../../reports/contention/seal.js';
import { tailerHealth } from '../../reports/tailerHealth/index.js';
import { readCheckpoints, readFencedCheckpoint } from '../../tailer/sink/offsets.js';
import { tempStore, testConfig } from '../support/env.js';

const at = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

describe('tailer health: checkpoints read by the report itself', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => {
    ({ store, close } = await tempStore());
  });
  after(async () => close?.());

  it("equals the tailer's own reading, with and without a restore", async () => {
    const t = Date.now() - 60_000;
    const timeline = (cluster: string, generation: number, resume: number, detectedMs: number, tl = 0) => ({
      cluster,
      generation,
      cluster_id: `id${generation}`,
      previous_cluster_id: '',
      previous_checkpoint: '0',
      restored_head: '0',
      diverged_after: '0',
      resume_revision: String(resume),
      reason: 'test',
      detected_at: at(detectedMs),
      timeline: tl,
    });
    await store.insert('checkpoints', [
      { cluster: 'plain', revision: '5', leader: 'r1', updated_at: at(t) },
      { cluster: 'plain', revision: '9', leader: 'r2', updated_at: at(t + 1000) },
      { cluster: 'first', revision: '40', leader: 'r1', updated_at: at(t) },
      { cluster: 'restored', revision: '100', leader: 'r1', updated_at: at(t) },
      { cluster: 'resumed', revision: '100', leader: 'r1', updated_at: at(t) },
      { cluster: 'resumed', revision: '7', leader: 'r2', updated_at: at(t + 20_000) },
      // Fenced (sql/110): a deposed leader's (term 3) late checkpoint above its successor's (term 9) does not count ...
      { cluster: 'fenced', revision: '100', leader: 'r9', updated_at: at(t), term: '9', timeline: 0 },
      { cluster: 'fenced', revision: '600', leader: 'r3', updated_at: at(t + 1000), term: '3', timeline: 0 },
      // ... nor an old timeline's late checkpoint for the new one.
      { cluster: 'nexttl', revision: '100', leader: 'r9', updated_at: at(t), term: '9', timeline: 0 },
      { cluster: 'nexttl', revision: '900', leader: 'r9', updated_at: at(t + 20_000), term: '9', timeline: 0 },
      { cluster: 'nexttl', revision: '8', leader: 'r10', updated_at: at(t + 20_000), term: '10', timeline: 1 },
    ]);
    await store.insert('etcd_timelines', [
      timeline('first', 0, 0, t - 5000),
      timeline('restored', 0, 0, t - 5000),
      timeline('restored', 1, 3, t + 10_000), // nothing written since the restore: its resume revision
      timeline('resumed', 0, 0, t - 5000),
      timeline('resumed', 1, 3, t + 10_000), // written since: 7, though 100 was written before
      timeline('nexttl', 0, 0, t - 5000),
      timeline('nexttl', 1, 3, t + 10_000, 1),
    ]);
    const tailer = await readCheckpoints(store);
    const report = await tailerHealth({ store, limits: testConfig().reports }, []);
    const fromReport = Object.fromEntries(report.map((r) => [r.cluster, r.checkpoint]));
    const fromTailer = Object.fromEntries([...tailer].map(([c, v]) => [c, v.revision.toString()]));
    assert.deepEqual(fromReport, { first: '40', plain: '9', restored: '3', resumed: '7', fenced: '100', nexttl: '8' });
    assert.deepEqual(fromReport, fromTailer);
    // What a tailer resumes from and fences its writes with: the same revision, and the term of the row in effect
    // (0 where it is counted by time: a row from before sql/110, or the floor of a restored timeline).
    const positions = Object.fromEntries(
      await Promise.all(
        [...Object.keys(fromReport), 'never'].map(async (c) => {
          const p = await readFencedCheckpoint(store, c);
          return [c, `${p.revision}/${p.term}`];
        }),
      ),
    );
    assert.deepEqual(positions, { first: '40/0', plain: '9/0', restored: '3/0', resumed: '7/0', fenced: '100/9', nexttl: '8/10', never: '0/0' });
    // The contention seal seals as of the same checkpoint (before: the highest ever written, 900 for nexttl and 100 for restored).
    const seals = await sealContentionHours({ store, limits: testConfig().reports });
    assert.deepEqual(Object.fromEntries(seals.map((r) => [r.cluster, r.checkpoint])), fromTailer);
  });
});
