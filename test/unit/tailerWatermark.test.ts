import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Watermark } from '../../tailer/watch/watermark.js';
import { configDefaults } from '../../core/config.js';
import { planResumeWindows, planWindows, windowsForLag } from '../../tailer/pipeline.js';
import { mergeDurable } from '../../tailer/watch/catchUpSegments.js';

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

describe('catch-up progress beyond the checkpoint (issue 22 item 4)', () => {
  it("each window reports its durable stretch above the watermark; the first window's is the watermark itself", () => {
    const w = new Watermark(100n, [{ start: 101n, end: 201n }, { start: 201n, end: 301n }, { start: 301n }]);
    const a = w.track(0, 150n);
    const b = w.track(1, 205n);
    const c = w.track(1, 260n);
    const d = w.track(2, 310n);
    w.done(b);
    w.done(c);
    w.done(d);
    w.heard(1, 280n);
    assert.equal(w.value, 149n, 'the first window holds the watermark at its pending revision');
    assert.deepEqual(w.durable(), [
      { from: 201n, through: 280n },
      { from: 301n, through: 310n },
    ]);
    w.done(a);
    w.complete(0);
    assert.equal(w.value, 280n);
    assert.deepEqual(w.durable(), [{ from: 301n, through: 310n }], 'a window the watermark crossed is not reported');
  });

  it('merges recorded intervals above the checkpoint (clipped, overlapping and adjacent ones joined)', () => {
    assert.deepEqual(
      mergeDurable(
        [
          { from: 50n, through: 120n },
          { from: 300n, through: 350n },
          { from: 200n, through: 250n },
          { from: 251n, through: 260n },
          { from: 310n, through: 400n },
          { from: 20n, through: 90n },
        ],
        100n,
      ),
      [
        { from: 101n, through: 120n },
        { from: 200n, through: 260n },
        { from: 300n, through: 400n },
      ],
    );
  });

  it('plans windows over the holes only: durable intervals are done windows, the last window is live, they tile from the checkpoint', () => {
    const plan = planResumeWindows(
      1_000n,
      101_000n,
      [
        { from: 1_001n, through: 20_000n },
        { from: 50_001n, through: 60_000n },
      ],
      8,
      5_000n,
    );
    // Tiling from the checkpoint: the watermark accepts it.
    const w = new Watermark(1_000n, plan.specs);
    plan.done.forEach((d, i) => (d ? w.complete(i) : undefined));
    assert.equal(w.value, 20_000n, 'the interval right above the checkpoint moves the watermark at once');
    assert.deepEqual(
      plan.specs.filter((_, i) => plan.done[i]),
      [
        { start: 1_001n, end: 20_001n },
        { start: 50_001n, end: 60_001n },
      ],
    );
    const watched = plan.specs.filter((_, i) => !plan.done[i]);
    assert.equal(watched.at(-1)?.end, undefined, 'the last window is live');
    assert.ok(watched.length >= 2 && watched.length <= 9, `windows over the holes: ${watched.length}`);
    // Every revision above the checkpoint is in exactly one window.
    for (const [i, s] of plan.specs.entries()) if (i > 0) assert.equal(s.start, plan.specs[i - 1]?.end);
    // Without intervals: the plan of planWindows.
    assert.deepEqual(planResumeWindows(1_000n, 101_000n, [], 8, 5_000n).specs, planWindows(1_000n, 101_000n, 8, 5_000n));
    // Everything up to the head durable: one live window after it.
    const all = planResumeWindows(1_000n, 5_000n, [{ from: 1_001n, through: 5_000n }], 8, 5_000n);
    assert.deepEqual(all, { specs: [{ start: 1_001n, end: 5_001n }, { start: 5_001n }], done: [true, false] });
  });

  it("unread: what no window has heard below the head — a closed window's rest, the live window's distance to the head — not what waits for the sink", () => {
    const w = new Watermark(0n, [{ start: 1n, end: 10_001n }, { start: 10_001n }]);
    assert.equal(w.unread(20_000n), 20_000n, 'nothing heard: revisions 1 to 20 000, both windows whole, the live one up to the head');
    const slot = w.track(0, 6_000n);
    assert.equal(w.unread(20_000n), 4_000n + 10_000n, 'heard up to 6 000, though not durable: read rows are not unread');
    w.done(slot);
    w.complete(0);
    assert.equal(w.unread(20_000n), 10_000n, 'a complete window has nothing unread');
    w.heard(1, 19_990n);
    assert.equal(w.unread(20_000n), 10n, 'the live window up to the head');
    assert.equal(w.unread(19_000n), 0n, 'a head below what was heard: nothing unread');
  });
});
