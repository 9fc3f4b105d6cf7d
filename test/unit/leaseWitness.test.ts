// The lease witness with a scripted TTL source (pure unit): what counts as
// proof that a lease could not have expired yet, and when evidence is dropped.
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { LeaseWitness, type AskTtl, type EvidenceLog } from '../../tailer/decode/leaseWitness.js';
import type { Change, RevisionChanges } from '../../tailer/types.js';

const kv = (key: string, lease: string) => ({ key, value: '{}', createRevision: '1', modRevision: '1', version: '1', lease });
const put = (revision: bigint, key: string, lease: string): RevisionChanges => ({ revision, changes: [{ type: 'put', kv: kv(key, lease) }] });
const del = (revision: bigint, key: string, lease: string): RevisionChanges => ({
  revision,
  changes: [{ type: 'delete', kv: kv(key, '0'), prev: kv(key, lease) } satisfies Change],
});

function scripted(answers: Record<string, { ttl: number; grantedTtl: number } | undefined>): { ask: AskTtl; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    ask: async (lease) => {
      asked.push(lease);
      return answers[lease];
    },
  };
}

describe('LeaseWitness', () => {
  it('judges a delete read late by when etcd had committed it, not by when it was read; a rewind forgets those times', async () => {
    const { ask } = scripted({ '7': { ttl: 10, grantedTtl: 10 } });
    const w = new LeaseWitness(ask, undefined, { marginMs: 1_500 });
    const t0 = Date.now();
    w.seenLive(put(10n, '/l/ns/a', '7'));
    assert.equal(await w.outlived('7', t0), true); // the answer is in: alive until about t0 + 8.5 s
    w.committed(20n, t0 + 1_000); // the delete at 15 was committed by t0 + 1 s
    const late = t0 + 60_000;
    assert.equal(await w.outlived('7', late), false, 'read a minute later without its revision: an expiry was possible by then');
    assert.equal(await w.outlived('7', late, 15n), true, 'committed by t0 + 1 s, while the lease could not have expired');
    assert.equal(w.committedBefore(21n), undefined, 'never seen that far: no bound');
    assert.equal(await w.outlived('7', late, 21n), false);
    w.committed(12n, t0 + 2_000); // revisions went back: etcd was restored, revision 15 is another change now
    assert.equal(w.committedBefore(15n), undefined);
    assert.equal(await w.outlived('7', late, 15n), false);
    w.forgetTimes();
    assert.equal(w.committedBefore(12n), undefined);
    w.close();
  });

  it('a lease seen with TTL left is outlived until that TTL (less the margin) has run, then not', async () => {
    const { ask, asked } = scripted({ '7': { ttl: 60, grantedTtl: 60 } });
    const w = new LeaseWitness(ask, undefined, { marginMs: 1_500 });
    w.seenLive(put(10n, '/l/ns/a', '7'));
    w.seenLive(put(11n, '/l/ns/b', '7')); // same lease: asked once
    const now = Date.now();
    assert.equal(await w.outlived('7', now), true);
    assert.equal(await w.outlived('7', now + 57_000), true);
    assert.equal(await w.outlived('7', now + 60_000), false, 'past the reported TTL an expiry was possible');
    assert.deepEqual(asked, ['7']);
    w.close();
  });

  it('no evidence: a lease never seen put live, one etcd no longer had, a hold without a lease', async () => {
    const { ask } = scripted({ '8': undefined });
    const w = new LeaseWitness(ask);
    w.seenLive(put(10n, '/l/ns/a', '8'));
    w.seenLive(put(11n, '/l/ns/c', '0'));
    assert.equal(await w.outlived('8'), false);
    assert.equal(await w.outlived('9'), false);
    assert.equal(w.size, 1, 'a lease-less hold is not followed');
    w.close();
  });

  it('a lease is followed while a hold seen put live is on it; a delete older than the put does not count', async () => {
    const { ask } = scripted({ '7': { ttl: 60, grantedTtl: 60 } });
    const w = new LeaseWitness(ask);
    w.seenLive(put(20n, '/l/ns/a', '7'));
    w.seenLive(put(21n, '/l/ns/b', '7'));
    w.seenDeletes(del(15n, '/l/ns/a', '7')); // a catch-up window's older delete of an earlier hold of that key
    w.seenDeletes(del(22n, '/l/ns/a', '7'));
    assert.equal(w.size, 1);
    assert.equal(await w.outlived('7'), true);
    w.seenDeletes(del(23n, '/l/ns/b', '7'));
    assert.equal(w.size, 1, 'no hold left: the evidence stays while it still proves something');
    assert.equal(await w.outlived('7'), true);
    w.close();
  });

  it('a lease whose last hold was released keeps its proof: a hold put on it again and deleted by hand right away, the lease revoked, was no expiry', async () => {
    // The chaos run's insider: an API hold's value put back on its key and live lease after its release, deleted by
    // hand, the session closed at once — etcd answers "gone" by the time the witness asks about the new put.
    let alive = true;
    const asked: string[] = [];
    const w = new LeaseWitness(async (lease) => {
      asked.push(lease);
      return alive ? { ttl: 15, grantedTtl: 15 } : undefined;
    });
    w.seenLive(put(30n, '/l/ns/k', '9'));
    assert.equal(await w.outlived('9'), true);
    w.seenDeletes(del(31n, '/l/ns/k', '9')); // released through the API: the lease's last hold
    alive = false; // the copy is put, deleted by hand and the session revoked before anyone asks again
    w.seenLive(put(32n, '/l/ns/k', '9'));
    w.seenDeletes(del(33n, '/l/ns/k', '9'));
    assert.equal(await w.outlived('9'), true, 'proven alive for 15 s from the first answer: the hand delete was no expiry');
    w.close();
  });

  it('seeded with the holds etcd has as a run starts: their leases are asked too, a lease-less hold is not', async () => {
    const { ask, asked } = scripted({ '5': { ttl: 30, grantedTtl: 30 }, '6': undefined });
    const w = new LeaseWitness(ask);
    w.seed([
      { key: '/l/ns/a', lease: '5', revision: 3n },
      { key: '/l/ns/b', lease: '5', revision: 4n },
      { key: '/l/ns/c', lease: '6', revision: 4n },
      { key: '/l/ns/d', lease: '0', revision: 4n },
    ]);
    assert.equal(await w.outlived('5'), true);
    assert.equal(await w.outlived('6'), false, 'gone already when asked');
    assert.deepEqual(asked.sort(), ['5', '6']);
    w.seenDeletes(del(9n, '/l/ns/a', '5'));
    w.seenDeletes(del(9n, '/l/ns/b', '5'));
    // No seeded hold left on it: the proof stays until it runs out (it is true whatever happens next), not refreshed.
    assert.equal(await w.outlived('5'), true);
    assert.deepEqual(asked.sort(), ['5', '6'], 'not asked again');
    w.close();
  });

  it('an unreachable etcd leaves no evidence (falls back to asking later), and the oldest lease goes past the cap', async () => {
    const w = new LeaseWitness(async () => Promise.reject(new Error('unavailable')), undefined, { maxLeases: 2 });
    w.seenLive(put(1n, '/l/ns/a', '1'));
    w.seenLive(put(2n, '/l/ns/b', '2'));
    w.seenLive(put(3n, '/l/ns/c', '3'));
    assert.equal(await w.outlived('1'), false);
    assert.equal(w.size, 2);
    w.close();
  });

  // The 30-minute chaos run's last misclassifications: a hand delete made as etcd's quorum came back, its lease
  // revoked at once; the witness's refresh, due then, was answered after the revoke ("gone") and wiped the proof it
  // already had, so the delete, noticed seconds later, read as an expiry.
  it('a later "gone" does not take back evidence already held: the lease could not have expired before it', async () => {
    mock.timers.enable({ apis: ['setInterval', 'Date'], now: 1_000_000 });
    try {
      let answer: { ttl: number; grantedTtl: number } | undefined = { ttl: 60, grantedTtl: 60 };
      const asked: number[] = [];
      const w = new LeaseWitness(
        async () => {
          asked.push(Date.now());
          return answer;
        },
        undefined,
        { marginMs: 1_500 },
      );
      w.seenLive(put(10n, '/l/ns/a', '7'));
      assert.equal(await w.outlived('7'), true);
      answer = undefined; // the hold deleted by hand, the lease revoked right after
      mock.timers.tick(31_000); // the refresh falls due (less than half the TTL left) and hears "gone"
      assert.equal(asked.length, 2, 'refreshed once it fell due');
      assert.equal(await w.outlived('7', 1_000_000 + 35_000), true, 'alive until at least 58.5 s after the first answer');
      assert.equal(await w.outlived('7', 1_000_000 + 59_000), false, 'but no longer than that');
      w.close();
    } finally {
      mock.timers.reset();
    }
  });

  it('a first question etcd did not answer is asked again, so the evidence comes late rather than never', async () => {
    mock.timers.enable({ apis: ['setInterval', 'Date'], now: 2_000_000 });
    try {
      let reachable = false;
      const w = new LeaseWitness(async () => {
        if (!reachable) throw new Error('14 UNAVAILABLE');
        return { ttl: 40, grantedTtl: 60 };
      });
      w.seenLive(put(10n, '/l/ns/a', '7'));
      assert.equal(await w.outlived('7'), false, 'no answer yet: no evidence');
      reachable = true;
      mock.timers.tick(1_000);
      assert.equal(await w.outlived('7'), true, 'asked again on the next tick');
      w.close();
    } finally {
      mock.timers.reset();
    }
  });

  it('evidence is saved as heard and loaded by a new witness (a new process); a failed save is kept for the next', async () => {
    const saved: Array<{ lease: string; aliveUntil: number }> = [];
    let failing = true;
    const log: EvidenceLog = {
      load: async (now) => saved.filter((r) => r.aliveUntil > now),
      save: async (rows) => {
        if (failing) throw new Error('store down');
        saved.push(...rows);
      },
    };
    const { ask } = scripted({ '7': { ttl: 60, grantedTtl: 60 } });
    const first = new LeaseWitness(ask, undefined, { log, marginMs: 1_500 });
    first.seenLive(put(10n, '/l/ns/a', '7'));
    assert.equal(await first.outlived('7'), true);
    await first.flush();
    assert.equal(saved.length, 0, 'the store refused the save');
    failing = false;
    await first.flush();
    assert.equal(saved.length, 1, 'kept and saved on the next flush');
    const heard = saved[0]?.aliveUntil ?? 0;
    assert.ok(heard > Date.now() + 55_000);
    await first.close();

    // A new process: etcd now says the lease is gone; what was saved still proves the delete was no expiry.
    const second = new LeaseWitness(scripted({}).ask, undefined, { log });
    assert.equal(await second.restore(), 1);
    assert.equal(await second.outlived('7'), true);
    assert.equal(await second.outlived('7', heard + 1), false, 'no longer than what was heard');
    assert.equal(await new LeaseWitness(scripted({}).ask).outlived('7'), false, 'without the saved evidence: none');
    await second.close();
  });
});
