import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClockBracket } from '../../tailer/clock/clockBracket.js';
import { bracketFor } from '../../tailer/decode/decoder.js';

const LATE = 1e12; // a read time far after every known time: it bounds nothing the known times do not

describe('clock bracket', () => {
  it('holds revisions until the next clock write, then brackets them between the two', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    assert.equal(b.place(11n, 'a', 3, LATE), undefined);
    assert.equal(b.place(12n, 'b', 2, LATE), undefined);
    assert.equal(b.pendingRows, 5);
    const resolved = b.clock(13n, 2_000);
    assert.deepEqual(resolved, [
      { item: 'a', time: { lowerMs: 1_000, upperMs: 2_000 } },
      { item: 'b', time: { lowerMs: 1_000, upperMs: 2_000 } },
    ]);
    assert.equal(b.pendingRows, 0);
    assert.equal(b.place(14n, 'c', 1, LATE), undefined);
    assert.deepEqual(b.clock(15n, 3_000), [{ item: 'c', time: { lowerMs: 2_000, upperMs: 3_000 } }]);
  });

  it('uses a looked-up next clock for everything before it', () => {
    const b = new ClockBracket<string>();
    b.place(5n, 'a', 1, LATE);
    assert.equal(b.newestPending, 5n);
    assert.deepEqual(b.resolveWith({ revision: 100n, at: 9_000 }), [{ item: 'a', time: { lowerMs: undefined, upperMs: 9_000 } }]);
    assert.deepEqual(b.place(50n, 'b', 1, LATE), { lowerMs: undefined, upperMs: 9_000 });
    b.clock(100n, 9_000);
    assert.equal(b.place(101n, 'c', 1, LATE), undefined);
  });

  it('a revision whose time is known from its values closes the bracket like a clock write; one running backwards is ignored', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    assert.equal(b.place(11n, 'a', 250, LATE), undefined);
    assert.deepEqual(b.known(12n, 1_500), [{ item: 'a', time: { lowerMs: 1_000, upperMs: 1_500 } }]);
    assert.equal(b.place(13n, 'b', 1, LATE), undefined);
    assert.deepEqual(b.known(14n, 1_200), [], 'earlier than the last known time: brackets nothing');
    assert.equal(b.pendingCount, 1);
    assert.deepEqual(b.known(15n, 1_700), [{ item: 'b', time: { lowerMs: 1_500, upperMs: 1_700 } }]);
    assert.deepEqual(b.clock(16n, 1_650), [], 'a clock write is always taken');
    assert.equal(b.place(17n, 'c', 1, LATE), undefined);
    assert.deepEqual(b.known(18n, 1_660), [{ item: 'c', time: { lowerMs: 1_650, upperMs: 1_660 } }]);
  });

  it('the read time of the response that delivered a revision bounds its commit: a later known time never widens the bracket past it', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    b.place(11n, 'live', 1, 1_020); // read 20 ms after the last clock: delivered live
    assert.deepEqual(b.clock(12n, 2_000), [{ item: 'live', time: { lowerMs: 1_000, upperMs: 1_020 } }]);
    b.resolveWith({ revision: 40n, at: 5_000 });
    assert.deepEqual(b.place(30n, 'x', 1, 4_000), { lowerMs: 2_000, upperMs: 4_000 });
  });

  it('is overdue once the rows held behind the oldest waiting revision (its own and all delivered after it) reach the limit', () => {
    const limits = { maxHeldRows: 100, maxWaitMs: 60_000 };
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    b.passed(500); // nothing waits: nothing is held
    assert.equal(b.heldRows, 0);
    assert.equal(b.overdue(limits, 2_000), false);
    b.place(11n, 'a', 1, 2_000);
    b.passed(60); // a foreign grant, written at once, but behind 'a' for the watermark
    assert.equal(b.overdue(limits, 2_000), false);
    b.place(13n, 'b', 20, 2_000);
    b.passed(18);
    assert.equal(b.heldRows, 99);
    assert.equal(b.overdue(limits, 2_000), false);
    b.passed(1);
    assert.equal(b.overdue(limits, 2_000), true, 'a hundred rows held: close now');
    assert.equal(b.pendingRows, 21, 'only the waiting rows are pending');
  });

  it('is overdue once the oldest waiting revision was read maxWaitMs ago', () => {
    const limits = { maxHeldRows: 1_000_000, maxWaitMs: 3_000 };
    const b = new ClockBracket<string>();
    b.place(5n, 'a', 1, 10_000);
    b.place(6n, 'b', 1, 12_000);
    assert.equal(b.overdue(limits, 12_999), false);
    assert.equal(b.overdue(limits, 13_000), true);
  });

  it('settle closes every waiting revision with what is known now: a clock etcd holds after them, else each one read time', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    b.place(11n, 'a', 1, 5_000);
    b.place(12n, 'b', 1, 6_000);
    b.passed(50);
    assert.deepEqual(b.settle(), [
      { item: 'a', time: { lowerMs: 1_000, upperMs: 5_000 } },
      { item: 'b', time: { lowerMs: 1_000, upperMs: 6_000 } },
    ]);
    assert.equal(b.pendingCount, 0);
    assert.equal(b.heldRows, 0, 'nothing held once settled');
    assert.deepEqual(b.settle(), [], 'nothing to settle');

    b.place(13n, 'c', 1, 9_000);
    assert.deepEqual(
      b.settle({ revision: 12n, at: 1_500 }),
      [{ item: 'c', time: { lowerMs: 1_000, upperMs: 9_000 } }],
      'a clock before the waiting revision bounds nothing',
    );
    b.place(14n, 'd', 1, 9_000);
    b.place(15n, 'e', 1, 7_000);
    assert.deepEqual(b.settle({ revision: 20n, at: 8_000 }), [
      { item: 'd', time: { lowerMs: 1_000, upperMs: 8_000 } },
      { item: 'e', time: { lowerMs: 1_000, upperMs: 7_000 } },
    ]);
  });

  it('after settle, later revisions still wait for the stream: a far clock found by a lookup does not close them early', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    b.place(11n, 'a', 1, 9_000);
    assert.deepEqual(b.settle({ revision: 1_000n, at: 60_000 }), [{ item: 'a', time: { lowerMs: 1_000, upperMs: 9_000 } }]);
    assert.equal(b.place(12n, 'b', 1, 9_000), undefined, 'waits for a nearer known time');
    assert.deepEqual(b.known(13n, 1_200), [{ item: 'b', time: { lowerMs: 1_000, upperMs: 1_200 } }]);
  });

  it('a bracket closed by the read time keeps an honest error bound: it contains the commit, and it is as wide as the wait', () => {
    // Committed at 1 500, between a clock at 1 000 and a read at 61 000 (a catch-up a minute later).
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    b.place(11n, 'expiry', 1, 61_000);
    const [r] = b.settle();
    assert.ok(r);
    const { estimate, errorMs } = bracketFor(r.time);
    assert.ok(estimate - errorMs <= 1_500 && 1_500 <= estimate + errorMs);
    assert.equal(errorMs, 30_000);
  });
});
