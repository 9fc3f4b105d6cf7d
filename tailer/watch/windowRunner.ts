// One revision window of the pipeline: watch [start, end) → decode each
// revision → give timeless events (expiries) their clock bracket → hand the
// rows to the sink, whose acknowledgement marks the revision's slot done in
// the watermark. A window ends when its watch reaches `end` (catch-up) or
// when it is stopped (live); it never writes a checkpoint.
import type { Etcd3 } from 'etcd3';
import { PREFIX } from '../../core/keyspace.js';
import type { Logger } from '../../core/logger.js';
import { alarm } from '../../platform/alarms.js';
import type { HealthState } from '../../platform/health.js';
import type { BatchSink } from '../sink/clickhouseSink.js';
import { ClockBracket, type BracketLimits, type ClockPoint } from '../clock/clockBracket.js';
import { decodeRevision, finishRevision, knownTime, type DecodeContext, type DecodedRevision, type TimeEstimate } from '../decode/decoder.js';
import { clockAfterNow, clockAtOrBefore, clockLookup } from './etcdReads.js';
import { StreamClock } from '../clock/streamClock.js';
import { inGap, type CapturedStartQuery, type Gap } from '../recovery/gaps.js';
import { liveLeases } from '../decode/leaseLiveness.js';
import type { ForeignGrantClock } from '../decode/foreignGrantTimes.js';
import type { LeaseWitness } from '../decode/leaseWitness.js';
import type { TailerMetrics } from '../tailerMetrics.js';
import type { RevisionChanges } from '../types.js';
import type { Slot, Watermark, WindowSpec } from './watermark.js';
import { WatchWindow } from './watchWindow.js';

/** The writes around the API that are alarmed, by event type (a foreign hold's end is alarmed at its grant). */
const FOREIGN_WHAT: Partial<Record<string, { what: string; where: string }>> = {
  grant: { what: 'hold', where: 'grant history, origin=foreign' },
  marker: { what: 'reason marker', where: 'the event log' },
  'force-record': { what: 'force record', where: 'the event log' },
  clock: { what: "/sys/clock write without the tailer's proof (no time anchor)", where: 'the event log' },
  'epoch-advance': { what: '/sys/epoch write (the lock API stays sealed until a two-person advance)', where: 'the event log and GET /v1/epoch' },
  'class-change': { what: 'lock class change (never granted under; the risk register lists it unproven)', where: 'the event log and GET /v1/classes/<name>' },
};
/** Prefixes under which the lock API writes only values of its own shapes: anything unreadable there was written around it. */
const API_ONLY_PREFIXES = [PREFIX.hold, PREFIX.mark, PREFIX.force, PREFIX.class, PREFIX.epoch];

/** The last clock writes seen (at most 64), for lag in seconds. */
export class RecentClocks {
  readonly #points: ClockPoint[] = [];

  add(point: ClockPoint): void {
    this.#points.push(point);
    if (this.#points.length > 64) this.#points.shift();
  }

  /** How long ago the newest clock at or below `watermark` was written; 0 when caught up or unknown. */
  lagSeconds(watermark: bigint, head: bigint, now = Date.now()): number {
    if (watermark >= head) return 0;
    let at: number | undefined;
    for (const c of this.#points) if (c.revision <= watermark) at = c.at;
    return at === undefined ? 0 : Math.max(0, (now - at) / 1000);
  }
}

/** What every window of one run shares. */
export interface WindowShared {
  cluster: string;
  /** A new connection for a catch-up window (its own gRPC stream); closed when the window ends. */
  connect: () => Etcd3;
  /** The replica's client: the live window's connection. */
  client: Etcd3;
  log: Logger;
  gaps: readonly Gap[];
  /** Key of the lock API's proof of origin; holds without it are recorded as foreign. */
  originSecret?: Buffer;
  /** Key of the tailer's own proofs: a clock write without it is no anchor (core/tailerSecret.ts). */
  tailerSecret?: Buffer;
  /** The grant times of foreign holds (foreignGrantTimes.ts); absent without a secret. */
  foreignGrants?: ForeignGrantClock;
  /** Which holds ending now, granted inside a recorded gap, had their put captured anyway (gaps.ts capturedStarts). */
  capturedStarts?: (holds: CapturedStartQuery[]) => Promise<Set<string>>;
  /** Where a foreign write is alarmed (runtime.health). */
  alarm?: Pick<HealthState, 'raise'>;
  sink: BatchSink;
  watermark: Watermark;
  clocks: RecentClocks;
  metrics?: TailerMetrics;
  highWaterEvents: number;
  /** Bytes of keys and values waiting per window before its watch pauses (watchWindow.ts). */
  highWaterBytes: number;
  /** How long a time bracket may hold the watermark before it closes with what is known (clockBracket.ts). */
  bracketLimits: BracketLimits;
  /** Evidence of live leases from the live window, for hand deletes followed by a revoke. */
  leases?: LeaseWitness;
  /** Each watch response's header revision. */
  onHead: (revision: bigint) => void;
  /** Asked before a window's watch reopens after a disconnect (WatchWindowOptions.beforeReopen). */
  beforeReopen?: () => Promise<boolean>;
  /** The watermark may have moved. */
  onProgress: () => void;
  /** The sink made this revision's rows durable. */
  onDurable: (slot: Slot, events: number) => void;
}

interface PendingRevision {
  decoded: DecodedRevision;
  slot: Slot;
}

// A commit is never in the future: a value's time further ahead than this (a writer's skewed clock) brackets nothing.
const FUTURE_SLACK_MS = 60_000;
// Brackets wider than this are logged when closed by what is known (history written while no tailer wrote clocks).
const WIDE_BRACKET_MS = 60_000;

export class WindowRunner {
  readonly #s: WindowShared;
  readonly #index: number;
  readonly #spec: WindowSpec;
  readonly #stop: AbortSignal;
  readonly #ctx: DecodeContext;
  // The last clock write a lookup found: still the first one after any later revision below it (no clock lies between).
  #lookedUp: ClockPoint | undefined;

  constructor(shared: WindowShared, index: number, spec: WindowSpec, stop: AbortSignal) {
    this.#s = shared;
    this.#index = index;
    this.#spec = spec;
    this.#stop = stop;
    this.#ctx = {
      cluster: shared.cluster,
      startKnown: (rev) => !inGap(shared.gaps, rev),
      originSecret: shared.originSecret,
      tailerSecret: shared.tailerSecret,
    };
  }

  async run(): Promise<void> {
    // Catch-up windows get their own connection (their own gRPC stream): etcd serves one stream's watches one at a time.
    const own = this.#spec.end !== undefined;
    const client = own ? this.#s.connect() : this.#s.client;
    try {
      await this.#watch(client);
    } finally {
      if (own) client.close();
    }
  }

  /** A hold, marker or force record written around the lock API is an incident: alarm it (the rows say which). */
  #alarmForeign(decoded: DecodedRevision): void {
    const foreign = decoded.events.find((e) => e.row.origin === 'foreign' && FOREIGN_WHAT[e.row.event_type] !== undefined);
    if (foreign) {
      const { what, where } = FOREIGN_WHAT[foreign.row.event_type] as { what: string; where: string };
      this.#s.alarm?.raise(
        alarm('LOCKAUDIT_ALARM_FOREIGN_WRITE', { cluster: this.#s.cluster }, { what, key: foreign.row.key, revision: decoded.revision, where }),
      );
      return;
    }
    // A put there that is not even of the API's shapes (a hold key holding "hello" blocks the lock for good): quarantined, and alarmed too.
    const unreadable = decoded.quarantine.find((q) => q.op === 'put' && API_ONLY_PREFIXES.some((p) => q.key.startsWith(p)));
    if (unreadable) {
      const what = unreadable.key.startsWith(PREFIX.hold) ? 'value that is not a hold' : 'value of no shape the lock API writes';
      this.#s.alarm?.raise(
        alarm(
          'LOCKAUDIT_ALARM_FOREIGN_WRITE',
          { cluster: this.#s.cluster },
          { what, key: unreadable.key, revision: decoded.revision, where: 'GET /v1/quarantine' },
        ),
      );
    }
  }

  async #watch(client: Etcd3): Promise<void> {
    const bracket = new ClockBracket<PendingRevision>(await clockAtOrBefore(client, this.#spec.start - 1n, this.#ctx.tailerSecret));
    const streamClock = new StreamClock((revision) => clockLookup(client, revision, this.#ctx.tailerSecret));
    const window = new WatchWindow(client, {
      start: this.#spec.start,
      end: this.#spec.end,
      highWaterEvents: this.#s.highWaterEvents,
      highWaterBytes: this.#s.highWaterBytes,
      log: this.#s.log,
      onHead: this.#s.onHead,
      beforeReopen: this.#s.beforeReopen,
    });
    let ended = false;
    for await (const item of window.items(this.#stop)) {
      if (item.kind === 'end') {
        ended = true;
        break;
      }
      if (item.kind === 'progress') {
        // A quiet stream: a bracket waiting too long closes now instead of waiting for the next revision.
        if (bracket.overdue(this.#s.bracketLimits, Date.now())) await this.#settle(client, bracket);
        this.#s.watermark.heard(this.#index, item.revision);
        this.#s.onProgress();
        continue;
      }
      streamClock.seen(item.changes);
      await this.#onRevision(client, bracket, streamClock, item.changes, item.readAt);
    }
    if (!ended || this.#stop.aborted) return;
    await this.#settle(client, bracket); // timeless events near the window's end: their next known time lies beyond it
    if (this.#stop.aborted) return;
    this.#s.watermark.complete(this.#index);
    this.#s.onProgress();
  }

  async #onRevision(client: Etcd3, bracket: ClockBracket<PendingRevision>, streamClock: StreamClock, rev: RevisionChanges, readAt: number): Promise<void> {
    const slot = this.#s.watermark.track(this.#index, rev.revision);
    // Whether a marker-less hold delete is an expiry depends on its lease being gone: asked before the pure decode.
    const witness = this.#s.leases;
    const live = await liveLeases(client, rev, witness && ((lease) => witness.outlived(lease, Date.now(), rev.revision)));
    if (witness) {
      witness.seenDeletes(rev);
      if (this.#spec.end === undefined) witness.seenLive(rev);
    }
    let ctx: DecodeContext = { ...this.#ctx, liveLeases: live };
    let decoded = decodeRevision(ctx, rev);
    // A hold ending now whose grant revision lies in a recorded gap: its put may be in the store all the same (a run
    // killed above its checkpoint captured it before the gap was found; 30-minute chaos run, seed 46). Asked, then
    // decoded again (rare: only ends of grants inside gaps; the decoder is pure).
    const unknown = decoded.events
      .filter((e) => e.endKind !== undefined && e.grant?.start_known === 0)
      .map((e): CapturedStartQuery => ({
        key: e.row.key,
        grantRevision: e.grant?.grant_revision ?? '0',
        value: e.row.prev_value,
        // A previous value above the bound is a prefix here: asked with its whole size and sha256.
        ...(e.row.prev_value_sha256 ? { bytes: e.row.prev_value_bytes, sha256: e.row.prev_value_sha256 } : {}),
      }));
    if (unknown.length > 0 && this.#s.capturedStarts) {
      const captured = await this.#s.capturedStarts(unknown);
      if (unknown.some((h) => captured.has(`${h.key}|${h.grantRevision}`))) {
        ctx = { ...ctx, capturedStarts: captured };
        decoded = decodeRevision(ctx, rev);
      }
    }
    // A hold written around the API gets the grant time etcd's history gives it, not the one it claims: asked,
    // then decoded again (rare; the decoder is pure).
    const foreign = decoded.events
      .filter((e) => e.grant?.origin === 'foreign' && e.grant.start_known === 1)
      .map((e) => ({ key: e.row.key, grantRevision: e.grant?.grant_revision ?? '0', end: e.endKind !== undefined }));
    if (foreign.length > 0 && this.#s.foreignGrants) {
      decoded = decodeRevision({ ...ctx, foreignGrantTimes: await this.#s.foreignGrants.of(foreign, (r) => streamClock.at(r)) }, rev);
    }
    this.#alarmForeign(decoded);
    const p: PendingRevision = { decoded, slot };
    // A time running backwards against the last anchor is none (clockBracket.ts accepts): a proven clock value
    // replayed where a restore repeated its version, a writer's skewed clock. The revision is then bracketed.
    const clockAt = decoded.clockAt !== undefined && bracket.accepts(decoded.clockAt) ? decoded.clockAt : undefined;
    if (clockAt === undefined) decoded.clockAt = undefined; // nor does it time the revision's own timeless events (finishRevision)
    const knownAt = clockAt === undefined ? knownTime(decoded, Date.now() + FUTURE_SLACK_MS) : undefined;
    const known = knownAt !== undefined && bracket.accepts(knownAt) ? knownAt : undefined;
    const rows = decoded.events.length;
    if (clockAt !== undefined) {
      this.#s.clocks.add({ revision: rev.revision, at: clockAt });
      for (const r of bracket.clock(rev.revision, clockAt)) await this.#emit(r.item, r.time);
      await this.#emit(p, undefined);
    } else if (known !== undefined) {
      // A revision with a wall time of its own closes the brackets before it; its own timeless events share its commit instant.
      for (const r of bracket.known(rev.revision, known)) await this.#emit(r.item, r.time);
      await this.#emit(p, decoded.events.some((e) => e.timeless) ? { lowerMs: known, upperMs: known } : undefined);
    } else if (decoded.events.some((e) => e.timeless)) {
      const time = bracket.place(rev.revision, p, rows, readAt);
      if (time) await this.#emit(p, time);
    } else {
      bracket.passed(rows);
      await this.#emit(p, undefined);
    }
    // Bounded waiting (clockBracket.ts): about one batch held behind the oldest waiting revision, or waiting too long → close now.
    if (bracket.overdue(this.#s.bracketLimits, Date.now())) await this.#settle(client, bracket);
  }

  /**
   * Closes every waiting revision with what is known now, never waiting for a clock write that may never
   * come: the first clock write after them if etcd holds one yet (a lookup), else their read times.
   */
  async #settle(client: Etcd3, bracket: ClockBracket<PendingRevision>): Promise<void> {
    const newest = bracket.newestPending;
    if (newest === undefined) return;
    if (!this.#lookedUp || this.#lookedUp.revision <= newest) this.#lookedUp = (await clockAfterNow(client, newest, this.#ctx.tailerSecret)) ?? this.#lookedUp;
    const next = this.#lookedUp && this.#lookedUp.revision > newest ? this.#lookedUp : undefined;
    const resolved = bracket.settle(next);
    const first = resolved[0];
    const widthMs = first?.time.lowerMs === undefined ? undefined : first.time.upperMs - first.time.lowerMs;
    if (first && (widthMs === undefined || widthMs > WIDE_BRACKET_MS)) {
      this.#s.log.info(
        {
          window: this.#index,
          revisions: resolved.length,
          upTo: newest.toString(),
          by: next ? 'clock write' : 'read time',
          widthMs: widthMs ?? 'unbounded below',
        },
        'timeless events bracketed by a distant known time: their times are this wide',
      );
    }
    for (const r of resolved) await this.#emit(r.item, r.time);
  }

  async #emit(p: PendingRevision, time: TimeEstimate | undefined): Promise<void> {
    const batch = finishRevision(p.decoded, time);
    const events = batch.events.length;
    const { metrics, cluster } = this.#s;
    if (batch.quarantine.length > 0) metrics?.quarantined.inc({ cluster }, batch.quarantine.length);
    // Writes around the lock API, counted once durable (an alert rule watches them).
    const foreign = batch.events.filter((e) => e.event_type === 'grant' && e.origin === 'foreign').length;
    const deleted = batch.events.filter((e) => e.event_type === 'deleted').length;
    await this.#s.sink.add(
      batch,
      () => {
        this.#s.onDurable(p.slot, events);
        if (foreign > 0) metrics?.bypass.inc({ cluster, kind: 'foreign-grant' }, foreign);
        if (deleted > 0) metrics?.bypass.inc({ cluster, kind: 'deleted' }, deleted);
      },
      this.#stop,
    );
  }
}
