// The completeness watermark: the highest revision R such that every change
// up to R is durable. Catch-up splits [checkpoint+1, …) into windows watched
// concurrently; the watermark crosses a window only once it is complete
// (its watch reached the next window's start) and all its revisions are
// durable — it advances over the contiguous prefix only, never the highest
// revision seen. Pure state machine, no I/O; the tailer writes `value` to the
// checkpoints table after the sink acknowledged the rows, and each window's
// own durable stretch (`durable`) beside it. A window a restart already knows
// durable (catchUpSegments.ts) is `complete` from the start.

import type { Durable } from './catchUpSegments.js';

export interface WindowSpec {
  start: bigint;
  /** Exclusive end; undefined for the last, live window. */
  end?: bigint;
}

export interface Slot {
  readonly window: number;
  readonly revision: bigint;
  done: boolean;
}

interface WindowState {
  spec: WindowSpec;
  slots: Slot[];
  head: number; // index of the first slot not yet popped
  floor: bigint; // everything ≤ floor in this window is durable
  heard: bigint; // everything ≤ heard in this window was received
  complete: boolean;
}

export class Watermark {
  readonly #windows: WindowState[];
  #value: bigint;

  /** `base`: the checkpoint the run started from; windows must tile (base, …) in order. */
  constructor(base: bigint, windows: readonly WindowSpec[]) {
    let expected = base + 1n;
    for (const w of windows) {
      if (w.start !== expected) throw new RangeError(`windows must be contiguous: expected a start at ${expected}, got ${w.start}`);
      if (w.end !== undefined) expected = w.end;
    }
    this.#value = base;
    this.#windows = windows.map((spec) => ({ spec, slots: [], head: 0, floor: spec.start - 1n, heard: spec.start - 1n, complete: false }));
  }

  get value(): bigint {
    return this.#value;
  }

  /** A whole revision of window `w` was received, in order; its rows are on their way to the sink. */
  track(w: number, revision: bigint): Slot {
    const win = this.#window(w);
    if (revision <= win.heard) throw new RangeError(`window ${w}: revision ${revision} is not after ${win.heard}`);
    win.heard = revision;
    const slot: Slot = { window: w, revision, done: false };
    win.slots.push(slot);
    this.#recompute();
    return slot;
  }

  /** The slot's rows are durable. */
  done(slot: Slot): void {
    slot.done = true;
    this.#recompute();
  }

  /** Window `w` received everything up to `revision` (a progress notification). */
  heard(w: number, revision: bigint): void {
    const win = this.#window(w);
    if (revision > win.heard) win.heard = win.spec.end !== undefined && revision >= win.spec.end ? win.spec.end - 1n : revision;
    this.#recompute();
  }

  /** Window `w` reached its end: no change before `end` is still to come. */
  complete(w: number): void {
    const win = this.#window(w);
    if (win.spec.end === undefined) throw new RangeError('the live window never completes');
    win.complete = true;
    win.heard = win.spec.end - 1n;
    this.#recompute();
  }

  /**
   * Each window's durable stretch above the watermark: [its start, its floor] (catchUpSegments.ts records them, so
   * a restart after a kill watches only what lies between). Windows the watermark has crossed are left out.
   */
  durable(): Durable[] {
    const out: Durable[] = [];
    for (const win of this.#windows) {
      if (win.floor >= win.spec.start && win.floor > this.#value) out.push({ from: win.spec.start, through: win.floor });
    }
    return out;
  }

  /**
   * Revisions below `head` no window has heard yet: the rest of each incomplete closed window and what the live one
   * has not received. The backlog still in etcd — not the rows read and waiting for the sink, which a live run at a
   * high rate always has.
   */
  unread(head: bigint): bigint {
    let n = 0n;
    for (const win of this.#windows) {
      if (win.complete) continue;
      const last = win.spec.end !== undefined ? win.spec.end - 1n : head;
      if (last > win.heard) n += last - win.heard;
    }
    return n;
  }

  isComplete(w: number): boolean {
    return this.#window(w).complete;
  }

  #window(w: number): WindowState {
    const win = this.#windows[w];
    if (!win) throw new RangeError(`no window ${w}`);
    return win;
  }

  #recompute(): void {
    let value = this.#value;
    // Every window's floor is kept current (durable() reports them); the value crosses the contiguous prefix only.
    let contiguous = true;
    for (const win of this.#windows) {
      while (win.head < win.slots.length && (win.slots[win.head] as Slot).done) {
        win.floor = (win.slots[win.head] as Slot).revision;
        win.head += 1;
      }
      if (win.head > 1024 && win.head * 2 > win.slots.length) {
        win.slots = win.slots.slice(win.head); // keep memory bounded by what is in flight
        win.head = 0;
      }
      const pending = win.slots[win.head];
      // Everything before the first pending slot was received and had nothing else to write.
      const floor = pending ? pending.revision - 1n : win.heard;
      if (floor > win.floor) win.floor = floor;
      if (contiguous && win.floor > value) value = win.floor;
      if (!(win.complete && !pending && win.spec.end !== undefined && win.floor >= win.spec.end - 1n)) contiguous = false;
    }
    this.#value = value;
  }
}
