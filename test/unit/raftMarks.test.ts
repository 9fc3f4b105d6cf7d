// The raft-log restore proof (tailer/raftMarks.ts): only a leader's committed index below the mark, answered twice
// by the same leader in one term, is a proof; a lagging or just-elected answer, or no mark, proves nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { raftLogRestarted, type LeaderIndex } from '../../tailer/raftMarks.js';

function asks(...answers: Array<LeaderIndex | undefined>): { ask: () => Promise<LeaderIndex | undefined>; sleep: () => Promise<void>; calls: () => number } {
  let i = 0;
  return { ask: async () => answers[i++], sleep: async () => undefined, calls: () => i };
}
const leader = (committed: number, term = 2, id = 'a'): LeaderIndex => ({ leader: id, term: BigInt(term), committed: BigInt(committed) });

describe('raft log restarted', () => {
  it('is proven by a leader below the mark twice in one term', async () => {
    const why = await raftLogRestarted(1_000n, asks(leader(3), leader(9)));
    assert.match(why ?? '', /committed index 9 is below 1000/);
  });

  it('proves nothing without a mark, at or above it, or without a leader', async () => {
    const none = asks(leader(3), leader(3));
    assert.equal(await raftLogRestarted(undefined, none), undefined);
    assert.equal(none.calls(), 0, 'nothing asked without a mark');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(1_000))), undefined);
    assert.equal(await raftLogRestarted(1_000n, asks(undefined)), undefined);
  });

  it('proves nothing when the leader was just elected and caught up, or leadership moved, between the answers', async () => {
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990), leader(1_004))), undefined, 'a new leader committing its first entry');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990, 2, 'a'), leader(995, 3, 'b'))), undefined, 'another leader, another term');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990, 2), leader(995, 3))), undefined, 'the same member in a new term');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990), undefined)), undefined, 'no leader the second time');
  });
});
