// Commit time for events that carry none (expiries, class changes…): etcd
// revisions have no timestamp, so the time of revision R is bracketed between
// the nearest revisions before and after R whose time is known: /sys/clock
// writes, and any revision carrying a wall time our API wrote (a grant's `at`,
// a mark's `at`, a force record's approval). Revisions wait here until a later
// known time arrives — from the stream, or from a clock lookup when too many
// wait too long. Without the stream's known times, history written while no
// tailer led (no clock writes for a long stretch) held every expiry, and with
// it the checkpoint, until the next leader's first clock write.
// Pure state machine, no I/O.
import type { TimeEstimate } from './decoder.js';

export interface ClockPoint {
  revision: bigint;
  at: number;
}

export interface Resolved<T> {
  item: T;
  time: TimeEstimate;
}

interface Pending<T> {
  revision: bigint;
  item: T;
  rows: number;
}

export class ClockBracket<T> {
  #prev: ClockPoint | undefined;
  #next: ClockPoint | undefined;
  #pending: Pending<T>[] = [];
  #pendingRows = 0;

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

  /** The newest waiting revision: a lookup must find the first clock after it. */
  get newestPending(): bigint | undefined {
    return this.#pending.at(-1)?.revision;
  }

  /** Revisions must come in increasing order. Returns the time now, or undefined when it must wait. */
  place(revision: bigint, item: T, rows: number): TimeEstimate | undefined {
    if (this.#next && revision < this.#next.revision) return { lowerMs: this.#prev?.at, upperMs: this.#next.at };
    this.#pending.push({ revision, item, rows });
    this.#pendingRows += rows;
    return undefined;
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
    if (this.#prev && at < this.#prev.at) return [];
    return this.clock(revision, at);
  }

  /** The first clock write after the newest waiting revision, found out of band. */
  resolveWith(next: ClockPoint): Resolved<T>[] {
    this.#next = next;
    return this.#resolveBefore(next);
  }

  #resolveBefore(next: ClockPoint): Resolved<T>[] {
    const out: Resolved<T>[] = [];
    const lowerMs = this.#prev?.at;
    while (this.#pending.length > 0 && (this.#pending[0] as Pending<T>).revision < next.revision) {
      const p = this.#pending.shift() as Pending<T>;
      this.#pendingRows -= p.rows;
      out.push({ item: p.item, time: { lowerMs, upperMs: next.at } });
    }
    return out;
  }
}
