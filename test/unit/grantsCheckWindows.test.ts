// The windows the grants check walks (exporters/checks/grantsCheck.ts checkWindows):
// consecutive steps joined while they hold at most the budget's start events,
// so a one-namespace check of 90 days is one window, not 90 full scans of
// `grants`; disjoint and without holes, from the step of the first grant or
// start event to the range's end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkWindows } from '../../exporters/checks/grantsCheck.js';

const H = 3_600_000;
const range = { fromMs: 1_000_000, toMs: 1_000_000 + 48 * H };
const at = (h: number): number => range.fromMs + h * H;

/** Each window starts where the one before ends; the first at or before `first`, the last ending at the range's end. */
function assertTiles(windows: Array<{ fromMs: number; toMs: number }>, first: number): void {
  assert.ok(windows.length > 0);
  assert.ok(windows[0]!.fromMs <= first && first - windows[0]!.fromMs < H, 'the first window holds the first grant');
  windows.forEach((w, i) => {
    assert.ok(w.fromMs < w.toMs, `window ${i} is not empty`);
    if (i > 0) assert.equal(w.fromMs, windows[i - 1]!.toMs, `window ${i} starts where window ${i - 1} ends`);
  });
  assert.equal(windows[windows.length - 1]!.toMs, range.toMs);
}

describe('grants check windows', () => {
  it('joins steps up to the budget: a sparse range is one window', () => {
    const steps = Array.from({ length: 48 }, (_, h) => ({ step: h, starts: 10 }));
    const windows = checkWindows(range, at(0), steps, H, 1_000);
    assert.deepEqual(windows, [range]);
  });

  it('starts a new window where the next step would pass the budget', () => {
    const steps = [0, 1, 2, 3, 4].map((h) => ({ step: h, starts: 3 }));
    const windows = checkWindows(range, at(0), steps, H, 6);
    assert.deepEqual(windows, [
      { fromMs: at(0), toMs: at(2) },
      { fromMs: at(2), toMs: at(4) },
      { fromMs: at(4), toMs: range.toMs },
    ]);
    assertTiles(windows, at(0));
  });

  it('a step over the budget is a window of its own; empty steps join their neighbours', () => {
    const windows = checkWindows(
      range,
      at(3) + 5,
      [
        { step: 3, starts: 1 },
        { step: 9, starts: 50 },
        { step: 20, starts: 2 },
      ],
      H,
      5,
    );
    assert.deepEqual(windows, [
      { fromMs: at(3), toMs: at(9) },
      { fromMs: at(9), toMs: at(20) },
      { fromMs: at(20), toMs: range.toMs },
    ]);
    assertTiles(windows, at(3) + 5);
  });

  it('grants with no start event at all (invented rows) still get a window from the first of them', () => {
    const windows = checkWindows(range, at(30) + 17, [], H, 5);
    assert.deepEqual(windows, [{ fromMs: at(30), toMs: range.toMs }]);
  });

  it('every step its own window at a budget of one', () => {
    const steps = [0, 1, 7, 8].map((h) => ({ step: h, starts: 1 }));
    const windows = checkWindows(range, at(0), steps, H, 1);
    assert.equal(windows.length, 4);
    assertTiles(windows, at(0));
  });
});
