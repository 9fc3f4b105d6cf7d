// The last proven /sys/clock write at or before a revision (etcdReads.ts
// clockAtOrBefore), for lookups a window makes while it streams its revisions
// in order. etcd's answer at revision A is etcd's answer at every later
// revision up to the newest one the stream has shown, as long as the stream has
// shown no change of /sys/clock since A: the key is the same there. Carried
// only when the write at A was itself the answer, or there was none (a
// "settled" answer, etcdReads.ts); one found by stepping back over unproven
// writes is asked again each time. One read per clock write then serves every
// hand-written hold between two writes; a catch-up of hand puts and deletes
// with no clock write at all asked etcd once per put (catchUpKills).
import { PREFIX } from '../../core/keyspace.js';
import type { ClockPoint } from './clockBracket.js';
import type { ClockLookup } from '../watch/etcdReads.js';
import type { RevisionChanges } from '../types.js';

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
    // Only an answer at the stream's own revision can be carried forward, and only a settled one (etcdReads.ts
    // ClockLookup): a compacted read said nothing about the key, and one found by stepping back over unproven
    // writes would read as none once etcd compacts past the write stepped back to (a put and its delete,
    // asked apart, would then disagree).
    if (found.settled && revision === this.#streamed) this.#span = { from: revision, to: revision, point: found.point };
    return found.point;
  }
}
