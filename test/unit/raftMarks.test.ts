// The raft-log restore proof (tailer/recovery/raftMarks.ts): only the leader a majority of voting members agree on, its
// committed index below the mark, answered twice by the same leader in one term, is a proof; a lagging, cut-off or
// just-elected answer, another cluster's, or no mark proves nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agreedLeader, raftLogRestarted, type LeaderIndex, type MemberAnswer } from '../../tailer/recovery/raftMarks.js';

function asks(...answers: Array<LeaderIndex | undefined>): { ask: () => Promise<LeaderIndex | undefined>; sleep: () => Promise<void>; calls: () => number } {
  let i = 0;
  return { ask: async () => answers[i++], sleep: async () => undefined, calls: () => i };
}
const leader = (committed: number, term = 2, id = 'a'): LeaderIndex => ({ leader: id, term: BigInt(term), committed: BigInt(committed) });

describe('raft log restarted', () => {
  it('is proven by a leader below the mark twice in one term', async () => {
    const why = await raftLogRestarted(1_000n, asks(leader(3), leader(9)), '7');
    assert.match(why ?? '', /committed index 9 is below 1000/);
  });

  it('proves nothing without a mark, at or above it, or without a leader', async () => {
    const none = asks(leader(3), leader(3));
    assert.equal(await raftLogRestarted(undefined, none, '7'), undefined);
    assert.equal(none.calls(), 0, 'nothing asked without a mark');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(1_000)), '7'), undefined);
    assert.equal(await raftLogRestarted(1_000n, asks(undefined), '7'), undefined);
  });

  it('proves nothing when the leader was just elected and caught up, or leadership moved, between the answers', async () => {
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990), leader(1_004)), '7'), undefined, 'a new leader committing its first entry');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990, 2, 'a'), leader(995, 3, 'b')), '7'), undefined, 'another leader, another term');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990, 2), leader(995, 3)), '7'), undefined, 'the same member in a new term');
    assert.equal(await raftLogRestarted(1_000n, asks(leader(990), undefined), '7'), undefined, 'no leader the second time');
  });
});

describe('the agreed leader', () => {
  const member = (member: string, leader: string, term: number, committed: number, clusterId = '7', voters = 3): MemberAnswer => ({
    member,
    clusterId,
    leader,
    term: BigInt(term),
    committed: BigInt(committed),
    voters,
  });

  it('is the leader a majority of voting members name in the newest term, with its own committed index', () => {
    assert.deepEqual(agreedLeader([member('a', 'a', 4, 500), member('b', 'a', 4, 498), member('c', 'a', 4, 499)], '7'), {
      leader: 'a',
      term: 4n,
      committed: 500n,
    });
    assert.deepEqual(
      agreedLeader([member('a', 'a', 4, 500), member('b', 'a', 4, 498)], '7'),
      { leader: 'a', term: 4n, committed: 500n },
      'two of three answered',
    );
    assert.deepEqual(agreedLeader([member('a', 'a', 2, 3, '7', 1)], '7'), { leader: 'a', term: 2n, committed: 3n }, 'a single-member cluster');
  });

  it('is nobody when a cut-off member still believes it leads in an older term, or when no majority answered', () => {
    // a was cut off at 400 in term 4; b and c elected b in term 5 and went on committing.
    assert.deepEqual(agreedLeader([member('a', 'a', 4, 400), member('b', 'b', 5, 900), member('c', 'b', 5, 899)], '7'), {
      leader: 'b',
      term: 5n,
      committed: 900n,
    });
    assert.equal(agreedLeader([member('a', 'a', 4, 400)], '7'), undefined, 'only the stale leader reachable: one of three is no majority');
    assert.equal(agreedLeader([member('a', 'a', 4, 400), member('b', '0', 5, 900)], '7'), undefined, 'the others in an election');
    assert.equal(agreedLeader([member('b', 'a', 4, 900), member('c', 'a', 4, 899)], '7'), undefined, 'the leader itself did not answer');
  });

  it("takes only answers of the timeline's cluster", () => {
    assert.equal(agreedLeader([member('x', 'x', 9, 5, '8', 1)], '7'), undefined);
    assert.deepEqual(agreedLeader([member('x', 'x', 9, 5, '8', 1), member('a', 'a', 2, 3, '7', 1)], '7'), { leader: 'a', term: 2n, committed: 3n });
  });
});
