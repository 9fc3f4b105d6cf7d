import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClockBracket } from '../../tailer/clockBracket.js';

describe('clock bracket', () => {
  it('holds revisions until the next clock write, then brackets them between the two', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    assert.equal(b.place(11n, 'a', 3), undefined);
    assert.equal(b.place(12n, 'b', 2), undefined);
    assert.equal(b.pendingRows, 5);
    const resolved = b.clock(13n, 2_000);
    assert.deepEqual(resolved, [
      { item: 'a', time: { lowerMs: 1_000, upperMs: 2_000 } },
      { item: 'b', time: { lowerMs: 1_000, upperMs: 2_000 } },
    ]);
    assert.equal(b.pendingRows, 0);
    assert.equal(b.place(14n, 'c', 1), undefined);
    assert.deepEqual(b.clock(15n, 3_000), [{ item: 'c', time: { lowerMs: 2_000, upperMs: 3_000 } }]);
  });

  it('uses a looked-up next clock for everything before it', () => {
    const b = new ClockBracket<string>();
    b.place(5n, 'a', 1);
    assert.equal(b.newestPending, 5n);
    assert.deepEqual(b.resolveWith({ revision: 100n, at: 9_000 }), [{ item: 'a', time: { lowerMs: undefined, upperMs: 9_000 } }]);
    assert.deepEqual(b.place(50n, 'b', 1), { lowerMs: undefined, upperMs: 9_000 });
    b.clock(100n, 9_000);
    assert.equal(b.place(101n, 'c', 1), undefined);
  });

  it('a revision whose time is known from its values closes the bracket like a clock write; one running backwards is ignored', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 1_000 });
    assert.equal(b.place(11n, 'a', 250), undefined);
    assert.deepEqual(b.known(12n, 1_500), [{ item: 'a', time: { lowerMs: 1_000, upperMs: 1_500 } }]);
    assert.equal(b.place(13n, 'b', 1), undefined);
    assert.deepEqual(b.known(14n, 1_200), [], 'earlier than the last known time: brackets nothing');
    assert.equal(b.pendingCount, 1);
    assert.deepEqual(b.known(15n, 1_700), [{ item: 'b', time: { lowerMs: 1_500, upperMs: 1_700 } }]);
    assert.deepEqual(b.clock(16n, 1_650), [], 'a clock write is always taken');
    assert.equal(b.place(17n, 'c', 1), undefined);
    assert.deepEqual(b.known(18n, 1_660), [{ item: 'c', time: { lowerMs: 1_650, upperMs: 1_660 } }]);
  });
});
