// The last proven /sys/clock write at or before a revision (etcdReads.ts
// clockAtOrBefore), for lookups a window makes while it streams its revisions
// in order. etcd's answer at revision A is etcd's answer at every later
// revision up to the newest one the stream has shown, as long as the stream has
// shown no change of /sys/clock since A: the key is the same there, so is the
// chain of writes looked back over. One read per clock write then serves every
// hand-written hold between two writes; a catch-up of hand puts and deletes
// with no clock write at all asked etcd once per put (catchUpKills).
import { PREFIX } from '../core/keyspace.js';
import type { ClockPoint } from './clockBracket.js';
import type { ClockLookup } from './etcdReads.js';
import type { RevisionChanges } from './types.js';

interface Span {
  /** The revision etcd was asked at. */
  from: bigint;
  /** The newest streamed revision with no clock change since `from`. */
  to: bigint;
  point: ClockPoint | undefined;
}

export class StreamClock {
  readonly #ask: (revision: bigint) => Promise<ClockLookup>;
  #span: Span | undefined;
  /** The newest revision streamed, once any was. */
  #streamed: bigint | undefined;
  #asked = 0;

  constructor(ask: (revision: bigint) => Promise<ClockLookup>) {
    this.#ask = ask;
  }

  /** Each streamed revision, in order, before the lookups made for it. */
  seen(rev: RevisionChanges): void {
    this.#streamed = rev.revision;
    if (rev.changes.some((c) => c.kv.key === PREFIX.clock)) this.#span = undefined;
    else if (this.#span) this.#span.to = rev.revision;
  }

  /** etcd reads made so far (tests, benches). */
  get asked(): number {
    return this.#asked;
  }

  async at(revision: bigint): Promise<ClockPoint | undefined> {
    const span = this.#span;
    if (span && span.from <= revision && revision <= span.to) return span.point;
    this.#asked += 1;
    const found = await this.#ask(revision);
    // Only an answer at the stream's own revision can be carried forward, and only one etcd could give
    // again: a compacted read said nothing about the key.
    if (!found.compacted && revision === this.#streamed) this.#span = { from: revision, to: revision, point: found.point };
    return found.point;
  }
}
