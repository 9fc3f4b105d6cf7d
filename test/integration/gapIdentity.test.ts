// Gaps keep their own identity: a restore gap recorded from the same revision
// as an earlier compaction gap must not replace it (sql/090). Before, the
// compaction's lost range read as rolled back by the restore (chaos run,
// seed 3: compaction gap 120–151 gone under a restore gap 120–1000120). And a
// timeline's grants are judged by its own gaps only (issue 21 item 7).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { loadGaps, recordGap } from '../../tailer/recovery/gaps.js';
import { tempStore } from '../support/env.js';

describe('gap records', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => {
    ({ store, close } = await tempStore());
  });
  after(async () => close());

  it('a restore gap from the same revision as a compaction gap keeps both', async () => {
    await recordGap(store, {
      cluster: 'c1',
      from_revision: '120',
      to_revision: '151',
      detected_at: Date.now() - 1_000,
      reason: 'etcd compacted history up to revision 151',
      term: '0',
    });
    await recordGap(store, {
      cluster: 'c1',
      from_revision: '120',
      to_revision: '1000120',
      detected_at: Date.now(),
      reason: 'restore',
      kind: 'restore',
      history_lost: 1,
      generation: 1,
      term: '0',
    });
    const rows = await store.rows<{ from_revision: string; to_revision: string; kind: string }>(
      "SELECT from_revision, to_revision, kind FROM {db:Identifier}.gaps FINAL WHERE cluster = 'c1' ORDER BY to_revision",
      {},
    );
    assert.deepEqual(rows, [
      { from_revision: '120', to_revision: '151', kind: 'compaction' },
      { from_revision: '120', to_revision: '1000120', kind: 'restore' },
    ]);
  });

  it('the same gap recorded twice (a replayed detection) is still one row', async () => {
    for (let i = 0; i < 2; i++)
      await recordGap(store, { cluster: 'c2', from_revision: '7', to_revision: '9', detected_at: Date.now() + i, reason: 'compacted', term: '0' });
    const rows = await store.rows<{ n: string }>("SELECT count() AS n FROM {db:Identifier}.gaps FINAL WHERE cluster = 'c2'", {});
    assert.equal(rows[0]?.n, '1');
  });

  it("a timeline's grants are judged by its own gaps: an old timeline's compaction gap does not mark the new one's starts unknown", async () => {
    // Generation 0 lost 100..200 to compaction; a restore without a bump (generation 1) reuses those revisions.
    await recordGap(store, {
      cluster: 'c3',
      from_revision: '100',
      to_revision: '200',
      detected_at: Date.now() - 2_000,
      reason: 'compacted',
      generation: 0,
      term: '0',
    });
    await recordGap(store, {
      cluster: 'c3',
      from_revision: '51',
      to_revision: '300',
      detected_at: Date.now() - 1_000,
      reason: 'restore',
      kind: 'restore',
      history_lost: 0,
      generation: 1,
      term: '0',
    });
    await recordGap(store, { cluster: 'c3', from_revision: '400', to_revision: '450', detected_at: Date.now(), reason: 'compacted', generation: 1, term: '0' });
    assert.deepEqual(await loadGaps(store, 'c3', 0), [{ from: 100n, to: 200n }]);
    assert.deepEqual(await loadGaps(store, 'c3', 1), [{ from: 400n, to: 450n }], 'only generation 1 lost history, and only 400..450');
    // Within the history both share (generation 1 diverged after 50): generation 0's loss below it is generation 1's too.
    await recordGap(store, {
      cluster: 'c3',
      from_revision: '10',
      to_revision: '20',
      detected_at: Date.now() - 3_000,
      reason: 'compacted',
      generation: 0,
      term: '0',
    });
    await recordGap(store, {
      cluster: 'c3',
      from_revision: '40',
      to_revision: '60',
      detected_at: Date.now() - 3_000,
      reason: 'compacted',
      generation: 0,
      term: '0',
    });
    await store.insert('etcd_timelines', [{ cluster: 'c3', generation: 1, timeline: 1, diverged_after: '50', shares_history: 1, resume_revision: '50' }]);
    assert.deepEqual(
      await loadGaps(store, 'c3', 1),
      [
        { from: 10n, to: 20n },
        { from: 40n, to: 50n },
        { from: 400n, to: 450n },
      ],
      "generation 0's losses at or below the divergence, clipped to it",
    );
    await store.insert('etcd_timelines', [{ cluster: 'c3', generation: 2, timeline: 2, diverged_after: '15', shares_history: 1, resume_revision: '15' }]);
    assert.deepEqual(
      await loadGaps(store, 'c3', 2),
      [{ from: 10n, to: 15n }],
      "every divergence since bounds it; generation 1's 400..450 lies above generation 2's",
    );
    await store.insert('etcd_timelines', [{ cluster: 'c3', generation: 3, timeline: 3, diverged_after: '0', shares_history: 0, resume_revision: '0' }]);
    assert.deepEqual(await loadGaps(store, 'c3', 3), [], 'a new history shares nothing');
  });
});
