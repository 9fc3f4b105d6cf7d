import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Watermark } from '../../tailer/watermark.js';
import { configDefaults } from '../../core/config.js';
import { planWindows, windowsForLag } from '../../tailer/pipeline.js';

describe('completeness watermark', () => {
  it('advances over the contiguous durable prefix only', () => {
    const w = new Watermark(10n, [{ start: 11n }]);
    const a = w.track(0, 12n);
    const b = w.track(0, 15n);
    const c = w.track(0, 16n);
    assert.equal(w.value, 11n); // 11 had nothing; 12 is not durable
    w.done(b);
    w.done(c);
    assert.equal(w.value, 11n);
    w.done(a);
    assert.equal(w.value, 16n);
    w.heard(0, 20n); // progress notification: nothing up to 20 pending
    assert.equal(w.value, 20n);
  });

  it('crosses a window only once it is complete', () => {
    const w = new Watermark(0n, [{ start: 1n, end: 100n }, { start: 100n, end: 200n }, { start: 200n }]);
    const late = w.track(2, 250n);
    w.done(late);
    const mid = w.track(1, 150n);
    w.done(mid);
    w.complete(1);
    assert.equal(w.value, 0n); // window 0 has not even started
    const first = w.track(0, 5n);
    assert.equal(w.value, 4n);
    w.done(first);
    assert.equal(w.value, 5n);
    w.complete(0);
    assert.equal(w.value, 250n); // windows 0 and 1 complete, window 2 durable up to 250
  });

  it('rejects windows that do not tile the range', () => {
    assert.throws(() => new Watermark(0n, [{ start: 1n, end: 10n }, { start: 11n }]));
  });

  it('plans windows that tile (checkpoint, head] with an open last one', () => {
    const specs = planWindows(100n, 100_100n, 4, 5_000n);
    assert.equal(specs.length, 4);
    assert.equal(specs[0]?.start, 101n);
    for (let i = 1; i < specs.length; i += 1) assert.equal(specs[i]?.start, specs[i - 1]?.end);
    assert.equal(specs.at(-1)?.end, undefined);
    assert.equal(planWindows(0n, 3_000n, 8, 5_000n).length, 1);
  });
  it('picks the number of catch-up windows by lag: one per 5 000 revisions behind, between 1 and the configured most', () => {
    assert.equal(windowsForLag(0n, 32), 1);
    assert.equal(windowsForLag(9_999n, 32), 1);
    assert.equal(windowsForLag(10_000n, 32), 2);
    assert.equal(windowsForLag(60_000n, 32), 12);
    assert.equal(windowsForLag(60_000n, 8), 8);
    assert.equal(windowsForLag(10_000_000n, 32), 32);
    assert.equal(windowsForLag(60_000n, 32, 1_000n), 32);
    assert.equal(windowsForLag(60_000n, 0), 1);
    // With the defaults, the plan follows the lag up to the configured most (no longer 8 for any backlog past 40 000).
    const most = configDefaults.tailer.catchUpWindows;
    assert.ok(most > 8, `default most windows ${most}`);
    assert.equal(planWindows(0n, 20_000n).length, 4);
    assert.equal(planWindows(0n, BigInt(most) * 5_000n - 5_000n).length, most - 1);
    assert.equal(planWindows(0n, 5_000_000n).length, most);
  });
});
