// The timeline record of a finished restore written again from its proven gap (tailer/recovery/restores.ts,
// lostTimelineRecord): the signed fields as they are; nothing that moves the tailer's position read from the
// unsigned reason.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lostTimelineRecord } from '../../tailer/recovery/restores.js';

const gap = (over: Partial<Parameters<typeof lostTimelineRecord>[1]> = {}): Parameters<typeof lostTimelineRecord>[1] => ({
  from_revision: '41',
  to_revision: '120',
  reason: 'restore: x; revisions 41..120 at least were rolled back; capture follows the restored cluster from revision 41',
  generation: 2,
  previous_cluster_id: 'old',
  history_lost: 0,
  detected_at_ms: '1796600000000',
  cluster_id: 'new',
  ...over,
});

describe('a timeline record written again from its proven gap', () => {
  it('carries the gap’s signed fields, the older checkpoint given, head 0, and says it was written again', () => {
    const r = lostTimelineRecord('c1', gap(), 77n);
    assert.deepEqual(
      { ...r, reason: undefined },
      {
        cluster: 'c1',
        generation: 2,
        timeline: 2,
        cluster_id: 'new',
        previous_cluster_id: 'old',
        previous_checkpoint: '77',
        restored_head: '0',
        diverged_after: '40',
        resume_revision: '40',
        detected_at: 1796600000000,
        shares_history: 1,
        reason: undefined,
      },
    );
    assert.match(String(r.reason), /^written again from the tailer's proven restore gap/);
  });

  it('never reads where capture resumed from the unsigned reason: the divergence stands in', () => {
    const lost = { history_lost: 1 };
    // An edited reason (not in the proof) cannot move the resume revision, and with it the checkpoint's floor.
    for (const from of ['101', '999999999', '3'])
      assert.equal(lostTimelineRecord('c1', gap({ ...lost, reason: `restore: x; … from revision ${from}` }), 0n).resume_revision, '40');
    assert.equal(lostTimelineRecord('c1', gap({ reason: 'restore: x; … from revision 101' }), 0n).resume_revision, '40');
  });

  it('a new history (the gap says etcd shares nothing) is recorded as one', () => {
    const r = lostTimelineRecord('c1', gap({ from_revision: '1', reason: 'restore: x; etcd shares nothing with the captured history (no key…)' }), 0n);
    assert.equal(r.shares_history, 0);
    assert.equal(r.diverged_after, '0');
  });
});
