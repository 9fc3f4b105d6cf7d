// What a restore records (tailer/recovery/restorePlan.ts planRestore), decided
// without etcd: a rollback or a new history, where capture resumes, how far the
// gap reaches, the history a bump lost, what a restore recorded half-way keeps
// of its first try, and whether the new timeline snapshots etcd's holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRestore, sharedOf, type RestoreInput } from '../../tailer/recovery/restorePlan.js';
import type { UnfinishedRestore } from '../../tailer/recovery/restores.js';

const seen = { head: 130n, clusterId: 'new', previousClusterId: 'old', why: 'a witness differs', captured: 100n };
const input = (over: Partial<RestoreInput>): RestoreInput => ({ checkpoint: 100n, seen, shared: 50n, lost: undefined, lastHead: 120n, ...over });
const unfinished = (over: Partial<UnfinishedRestore>): UnfinishedRestore => ({
  generation: 1,
  after: 50n,
  to: 120n,
  newHistory: false,
  why: 'a witness differs',
  previousClusterId: 'old',
  compactedAt: undefined,
  historyLost: false,
  ...over,
});
const pick = (p: ReturnType<typeof planRestore>) => ({
  kind: p.kind,
  after: p.after,
  resume: p.resume,
  to: p.to,
  oldEnd: p.oldEnd,
  compacted: p.compacted,
  compactedSince: p.compactedSince,
  snapshot: p.snapshot,
});

describe('the restore plan', () => {
  it('rolls back to the divergence, resumes there and reaches as far as the last run saw etcd go', () => {
    const p = planRestore(input({}));
    assert.deepEqual(pick(p), {
      kind: 'rollback',
      after: 50n,
      resume: 50n,
      to: 120n,
      oldEnd: 120n,
      compacted: undefined,
      compactedSince: false,
      snapshot: true,
    });
    assert.match(p.reason, /^restore: a witness differs; revisions 51\.\.120 at least \(captured up to 100; cluster id old\) were rolled back/);
    assert.match(p.reason, /from revision 51$/);
  });

  it('rows durable above the checkpoint roll back too: the gap reaches the highest captured', () => {
    const p = planRestore(input({ seen: { ...seen, captured: 140n }, lastHead: 0n }));
    assert.equal(p.captured, 140n);
    assert.equal(p.to, 140n);
  });

  it('a new history when etcd shares nothing: from revision 0, nothing rolled back, nothing to snapshot', () => {
    const p = planRestore(input({ shared: undefined }));
    assert.deepEqual(pick(p), {
      kind: 'new-history',
      after: 0n,
      resume: 0n,
      to: 120n,
      oldEnd: 120n,
      compacted: undefined,
      compactedSince: false,
      snapshot: false,
    });
    assert.match(p.reason, /etcd shares nothing with the captured history .* revisions 1\.\.120 .* belong to the ended timeline, not rolled back/);
  });

  it('a new history whose etcd compacted: resumes at the compaction and snapshots there', () => {
    const p = planRestore(input({ shared: undefined, lost: 40n }));
    assert.deepEqual([p.kind, p.resume, p.compacted, p.snapshot], ['new-history', 40n, 40n, true]);
  });

  it("a bumped restore loses history to etcd's compaction: resumes there, the gap reaches it", () => {
    const p = planRestore(input({ lost: 1_000_050n }));
    assert.deepEqual(pick(p), {
      kind: 'rollback',
      after: 50n,
      resume: 1_000_050n,
      to: 1_000_050n,
      oldEnd: 120n,
      compacted: 1_000_050n,
      compactedSince: false,
      snapshot: true,
    });
  });

  it("a head the last run saw above a bump's resume is the new timeline's, not the old one's end", () => {
    const p = planRestore(input({ lost: 1_000_050n, lastHead: 1_000_090n }));
    assert.equal(p.oldEnd, 1_000_050n);
    assert.equal(p.to, 1_000_050n);
  });

  describe('finishing a restore recorded half-way', () => {
    it('keeps the divergence its gap recorded and never asks for it again', async () => {
      let asked = 0;
      const divergence = async () => (asked++, 77n);
      assert.equal(await sharedOf(unfinished({ after: 50n }), divergence), 50n);
      assert.equal(await sharedOf(unfinished({ newHistory: true }), divergence), undefined);
      assert.equal(asked, 0);
      assert.equal(await sharedOf(undefined, divergence), 77n);
      assert.equal(asked, 1);
    });

    it('a first try that found nothing compacted: a compaction since is the new timeline own gap, not the restore one', () => {
      const p = planRestore(input({ lost: 90n, unfinished: unfinished({}) }));
      assert.deepEqual([p.compacted, p.compactedSince, p.resume, p.snapshot], [undefined, true, 50n, false]);
    });

    it("a bump's first try: history lost only up to where that try found etcd compacted", () => {
      const p = planRestore(input({ lost: 1_000_090n, unfinished: unfinished({ historyLost: true, compactedAt: 1_000_050n }) }));
      assert.deepEqual([p.compacted, p.compactedSince, p.resume, p.snapshot], [1_000_050n, true, 1_000_050n, false]);
    });

    it('the same compaction as the first try: nothing compacted since, the snapshot is taken', () => {
      const p = planRestore(input({ lost: 1_000_050n, unfinished: unfinished({ historyLost: true, compactedAt: 1_000_050n }) }));
      assert.deepEqual([p.compacted, p.compactedSince, p.snapshot], [1_000_050n, false, true]);
    });

    it('the gap is never narrower than the one the first try recorded', () => {
      assert.equal(planRestore(input({ lastHead: 0n, unfinished: unfinished({ to: 500n }) })).to, 500n);
    });
  });
});
