// Commit time for events that carry none (expiries, hand deletes, class
// changes…): etcd revisions have no timestamp, so the time of revision R is
// bracketed between the nearest revisions before and after R whose time is
// known: /sys/clock writes, and any revision carrying a wall time our API
// wrote (a grant's `at`, a mark's `at`, a force record's approval).
//
// Invariant: a revision waits here only as long as waiting can narrow its
// bracket and costs the checkpoint at most about one batch. Every waiting
// revision holds the watermark, and so the checkpoint, at itself: everything
// delivered after it is durable yet would be replayed after a kill. So the
// wait is bounded by the rows held behind the oldest waiting revision (its
// own and all delivered after it) and by time (`overdue`); then the bracket
// closes with what is known now (`settle`): the upper bound is the first
// clock write after the revision when etcd already holds one, else the time
// the tailer read the watch response that delivered the revision — a commit
// is delivered only after it happened, so that read time (the tailer's own
// clock, like its clock writes) is an honest upper bound. During a catch-up of
// old history it is late, so the bracket is wide and its error bound says so;
// live it is a few milliseconds after the commit. Without this bound, history
// with no later known time (hand puts and deletes, no clock write) held the
// checkpoint at the first timeless revision for as long as the next clock
// took to come, if ever. Pure state machine, no I/O.
import type { TimeEstimate } from '../decode/decoder.js';

export interface ClockPoint {
  revision: bigint;
  at: number;
}

export interface Resolved<T> {
  item: T;
  time: TimeEstimate;
}

/** How long a bracket may wait for a later known time before it closes with what is known. */
export interface BracketLimits {
  /** Rows held behind the oldest waiting revision (its own and every row delivered after it), at most. */
  maxHeldRows: number;
  /** Longest the oldest waiting revision waits, from the read of the response that delivered it (ms). */
  maxWaitMs: number;
}

interface Pending<T> {
  revision: bigint;
  item: T;
  rows: number;
  readAt: number;
}

export class ClockBracket<T> {
  #prev: ClockPoint | undefined;
  #next: ClockPoint | undefined;
  #pending: Pending<T>[] = [];
  #pendingRows = 0;
  #heldRows = 0;

  /** `prev`: the last clock write before the first revision this bracket will see, if known. */
  constructor(prev?: ClockPoint) {
    this.#prev = prev;
  }

  get pendingRows(): number {
    return this.#pendingRows;
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  /** Rows the watermark is held behind while something waits: the waiting rows and every row delivered after the oldest. */
  get heldRows(): number {
    return this.#heldRows;
  }

  /** The newest waiting revision: a lookup must find the first clock after it. */
  get newestPending(): bigint | undefined {
    return this.#pending.at(-1)?.revision;
  }

  /**
   * Revisions must come in increasing order. `readAt`: when the tailer read the watch response that delivered
   * the revision (an upper bound of its commit). Returns the time now, or undefined when it must wait.
   */
  place(revision: bigint, item: T, rows: number, readAt: number): TimeEstimate | undefined {
    if (this.#next && revision < this.#next.revision) return { lowerMs: this.#prev?.at, upperMs: Math.min(this.#next.at, readAt) };
    this.#pending.push({ revision, item, rows, readAt });
    this.#pendingRows += rows;
    this.#heldRows += rows;
    return undefined;
  }

  /** A revision delivered (and written) while something waits: its rows are held behind the waiting ones. */
  passed(rows: number): void {
    if (this.#pending.length > 0) this.#heldRows += rows;
  }

  /** Waiting longer would hold more than the limits allow: close the bracket now (`settle`). */
  overdue(limits: BracketLimits, now: number): boolean {
    const oldest = this.#pending[0];
    if (!oldest) return false;
    return this.#heldRows >= limits.maxHeldRows || now - oldest.readAt >= limits.maxWaitMs;
  }

  /** A clock write seen in order at `revision`: resolves every waiting revision before it. */
  clock(revision: bigint, at: number): Resolved<T>[] {
    const resolved = this.#resolveBefore({ revision, at });
    this.#prev = { revision, at };
    if (this.#next && this.#next.revision <= revision) this.#next = undefined;
    return resolved;
  }

  /**
   * A revision whose commit time is known from its values (not a clock write):
   * a bracket end like a clock write, unless it runs backwards against the
   * last known time (writers' clocks differ; a later commit is never earlier),
   * then it is ignored.
   */
  known(revision: bigint, at: number): Resolved<T>[] {
    if (!this.accepts(at)) return [];
    return this.clock(revision, at);
  }

  /** Whether `at` may end a bracket: not before the last known time (a later commit is never earlier). */
  accepts(at: number): boolean {
    return !this.#prev || at >= this.#prev.at;
  }

  /** The first clock write after the newest waiting revision, found out of band. */
  resolveWith(next: ClockPoint): Resolved<T>[] {
    if (!this.accepts(next.at)) return [];
    this.#next = next;
    return this.#resolveBefore(next);
  }

  /**
   * Closes every waiting revision with what is known now: `next`, the first clock write after the newest
   * waiting revision if etcd holds one yet, else each revision's read time as its upper bound. Unlike
   * `resolveWith`, later revisions still wait for the stream's own known times (a nearer bound).
   */
  settle(next?: ClockPoint): Resolved<T>[] {
    const newest = this.newestPending;
    if (newest === undefined) return [];
    return this.#resolveBefore(undefined, next && next.revision > newest && this.accepts(next.at) ? next.at : undefined);
  }

  /** Resolves every waiting revision before `next` (all of them when undefined, bounded by `capMs` if given and by their read times). */
  #resolveBefore(next: ClockPoint | undefined, capMs?: number): Resolved<T>[] {
    const out: Resolved<T>[] = [];
    const lowerMs = this.#prev?.at;
    const bound = next?.at ?? capMs ?? Number.POSITIVE_INFINITY;
    while (this.#pending.length > 0 && (next === undefined || (this.#pending[0] as Pending<T>).revision < next.revision)) {
      const p = this.#pending.shift() as Pending<T>;
      this.#pendingRows -= p.rows;
      out.push({ item: p.item, time: { lowerMs, upperMs: Math.min(bound, p.readAt) } });
    }
    // What is still waiting holds only itself (rows delivered after it are counted as they come).
    this.#heldRows = this.#pendingRows;
    return out;
  }
}
