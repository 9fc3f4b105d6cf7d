// StreamClock (tailer/clock/streamClock.ts): one etcd read per stretch of streamed
// revisions without a /sys/clock change; a change, a compacted read or a
// revision behind the stream asks again. The equivalence with etcd's own
// answers, revision by revision, is test/integration/streamClock.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StreamClock } from '../../tailer/clock/streamClock.js';
import type { ClockLookup } from '../../tailer/watch/etcdReads.js';
import type { RevisionChanges } from '../../tailer/types.js';

function rev(revision: bigint, keys: string[] = ['/l/ns/k']): RevisionChanges {
  return {
    revision,
    changes: keys.map((key) => ({
      type: 'put' as const,
      kv: { key, value: '', createRevision: '1', modRevision: revision.toString(), version: '1', lease: '0' },
    })),
  };
}

function asker(answers: (revision: bigint) => ClockLookup): { ask: (r: bigint) => Promise<ClockLookup>; asked: bigint[] } {
  const asked: bigint[] = [];
  return { asked, ask: async (r) => (asked.push(r), answers(r)) };
}

describe('StreamClock', () => {
  it('answers a stretch of revisions with no clock change from one read', async () => {
    const { ask, asked } = asker(() => ({ point: { revision: 5n, at: 1_000 }, settled: true }));
    const sc = new StreamClock(ask);
    for (let r = 10n; r < 20n; r += 1n) {
      sc.seen(rev(r));
      assert.deepEqual(await sc.at(r), { revision: 5n, at: 1_000 });
    }
    assert.deepEqual(asked, [10n]);
    // An earlier revision inside the stretch too; one before it asks.
    assert.equal((await sc.at(12n))?.at, 1_000);
    await sc.at(9n);
    assert.deepEqual(asked, [10n, 9n]);
  });

  it('asks again after the stream shows /sys/clock changed (a put or a delete), and for the revision of the change itself', async () => {
    let at = 1_000;
    const { ask, asked } = asker(() => ({ point: { revision: 1n, at }, settled: true }));
    const sc = new StreamClock(ask);
    sc.seen(rev(10n));
    assert.equal((await sc.at(10n))?.at, 1_000);
    at = 2_000;
    sc.seen(rev(11n, ['/l/ns/k', '/sys/clock']));
    assert.equal((await sc.at(11n))?.at, 2_000, 'the clock write in the same revision counts');
    sc.seen(rev(12n));
    assert.equal((await sc.at(12n))?.at, 2_000);
    // Broken: an answer from before the change, for a revision after it.
    assert.equal((await sc.at(10n))?.at, 2_000, 'behind the stretch: asked again (the fake answers the new time)');
    assert.deepEqual(asked, [10n, 11n, 10n]);
    // A key only sharing the prefix is no change of the clock.
    sc.seen(rev(13n, ['/sys/clockwork']));
    await sc.at(13n);
    assert.deepEqual(asked, [10n, 11n, 10n]);
  });

  it('an answer with nothing (no clock write yet) is carried forward too; an unsettled one (a compacted read, or found by stepping back) is not', async () => {
    const none = asker(() => ({ point: undefined, settled: true }));
    const a = new StreamClock(none.ask);
    for (let r = 1n; r <= 5n; r += 1n) {
      a.seen(rev(r));
      assert.equal(await a.at(r), undefined);
    }
    assert.equal(none.asked.length, 1);
    const compacted = asker(() => ({ point: undefined, settled: false }));
    const b = new StreamClock(compacted.ask);
    for (let r = 1n; r <= 5n; r += 1n) {
      b.seen(rev(r));
      await b.at(r);
    }
    assert.equal(compacted.asked.length, 5, 'etcd said nothing about the key: every revision asks');
    assert.equal(b.asked, 5);
  });

  it("an answer found by stepping back over an unproven write is asked again: a compaction past the proven write turns etcd's answer into none", async () => {
    // Review finding: proven write at 10, an insider's unproven put at 11. Asked at 12 the answer steps back to 10;
    // etcd then compacts at 12, and at 13 etcd answers none (reading 10 is compacted). Carried, 13 would get 10's time
    // while its delete, asked of etcd elsewhere, got none.
    let compactedAt = 0n;
    const { ask, asked } = asker(() => (compactedAt > 10n ? { point: undefined, settled: false } : { point: { revision: 10n, at: 1_000 }, settled: false }));
    const sc = new StreamClock(ask);
    sc.seen(rev(12n));
    assert.equal((await sc.at(12n))?.at, 1_000);
    compactedAt = 12n;
    sc.seen(rev(13n));
    assert.equal(await sc.at(13n), undefined, 'what etcd says at 13 now');
    assert.deepEqual(asked, [12n, 13n]);
  });
});
