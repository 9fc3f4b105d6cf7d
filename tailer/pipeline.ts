// The leader's pipeline for one cluster: watch → decode → sink → checkpoint.
// start(checkpoint, signal) watches from checkpoint + 1 — far behind, as K
// revision windows watched concurrently, each stopping where the next
// begins — and returns a handle; stopping (the signal, or close()) stops
// the watch, drains the sink under a deadline, writes a final checkpoint.
// The checkpoint is the contiguous watermark (watermark.ts), written only
// after the sink acknowledged the rows and only while etcd still shows us as
// leader. The parts: windowRunner.ts (one window: watch → decode → bracket →
// sink), checkpointWriter.ts (fence, write, status, lag alarm, metrics on a
// timer); this file plans the windows and wires them.
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../core/clickhouse.js';
import { ForeignGrantClock } from './decode/foreignGrantTimes.js';
import { configDefaults } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { HealthState } from '../platform/health.js';
import { sleep } from '../platform/retry.js';
import { BatchSink, type SinkOptions } from './sink/clickhouseSink.js';
import { compactRevision, headRevision } from './watch/etcdReads.js';
import { CheckpointWriter, type CheckpointWriterDeps } from './sink/checkpointWriter.js';
import type { ClockWriter } from './clock/clockWriter.js';
import { capturedStarts, type Gap } from './recovery/gaps.js';
import { readDurable, type Durable } from './watch/catchUpSegments.js';
import type { TailerMetrics } from './tailerMetrics.js';
import { Watermark, type WindowSpec } from './watch/watermark.js';
import { ReplayCheck, type Replay } from './decode/replays.js';
import type { RowBatch } from './types.js';
import { PREFIX } from '../core/keyspace.js';
import { alarm } from '../platform/alarms.js';
import { currentHolds, type LeaseWitness } from './decode/leaseWitness.js';
import { RecentClocks, WindowRunner, type WindowShared } from './watch/windowRunner.js';

const MIB = 1024 * 1024;

export interface PipelineOptions {
  /** Most windows watched concurrently when far behind; how many are used follows the lag (windowsForLag). Default: the config schema's tailer.catchUpWindows. */
  catchUpWindows?: number;
  /** Revisions per window: one window per this many revisions behind (so split only when at least twice this far behind). Default 5 000. */
  splitMinRevisions?: number;
  sink?: SinkOptions;
  /** How often the checkpoint (and status) is written when it moved. Default 250 ms. */
  checkpointIntervalMs?: number;
  /** Longest the drain at stop may take before queued rows are abandoned (the checkpoint stays behind them). Default 15 000 ms. */
  drainDeadlineMs?: number;
  /** Events waiting per window before its watch pauses. Default 40 000 / windows, at least 2 000. */
  highWaterEvents?: number;
  /** Bytes of keys and values waiting per window before its watch pauses. Default 64 MiB / windows, at least 4 MiB: with the sink's 64 MiB row buffer, what a catch-up holds of the values it reads stays about 128 MiB whatever their size. */
  highWaterBytes?: number;
  /**
   * Rows a time bracket may hold behind its oldest waiting revision (its own and every row delivered after it)
   * before it closes with what is known (clockBracket.ts): what a kill may cost the checkpoint beyond the
   * batch in flight. Default 1 000.
   */
  bracketMaxHeldRows?: number;
  /** Longest a time bracket waits for a later known time, from the read of its oldest revision (live, a clock tick comes every second). Default 1 000 ms. */
  bracketMaxWaitMs?: number;
  /** Lag (revisions) at which the lag alarm is raised: half of etcd's compaction window. */
  lagAlarmRevisions?: number;
  /** Key of the lock API's proof of origin; holds without it are recorded as foreign (and alarmed). */
  originSecret?: Buffer;
  /**
   * Key of the tailer's own proofs (core/tailerSecret.ts): its clock writes, checkpoints, catch-up segments,
   * restore gaps and quarantined rows. Default: `originSecret` (a deployment from before the split; tests).
   */
  tailerSecret?: Buffer;
  /**
   * Follow the TTL of leases of holds put live (leaseWitness.ts), so a hand delete whose lease is revoked
   * right after does not read as an expiry. Default true; off only in tests that stand a revoke in for an
   * expiry (a revoke before the TTL ran out is, rightly, no expiry to the witness).
   */
  leaseWitness?: boolean;
}

/** The key the tailer proves its own rows and clock with: its own, or the origin secret of a deployment from before the split. */
export const tailerKeyOf = (o: Pick<PipelineOptions, 'originSecret' | 'tailerSecret'>): Buffer | undefined => o.tailerSecret ?? o.originSecret;

export interface PipelineDeps {
  cluster: string;
  /** A new connection to the cluster, one per catch-up window (its own gRPC stream); the window closes it. */
  connect: () => Etcd3;
  client: Etcd3;
  store: AuditStore;
  log: Logger;
  replicaId: string;
  clock: ClockWriter;
  gaps: readonly Gap[];
  /** The replica's lease witness, kept across its runs (evidence is about time, not about a run); absent: none (option leaseWitness: false). */
  leases?: LeaseWitness;
  /** Re-checks leadership in etcd; false → stop before writing; a rejection (etcd did not answer) → no checkpoint this time, asked again on the next. */
  fence: () => Promise<boolean>;
  metrics?: TailerMetrics;
  /** Lag alarm hooks (runtime.health). */
  alarm?: Pick<HealthState, 'raise' | 'clear'>;
  /** Called whenever the completeness watermark moves (durable, before the checkpoint row is written). */
  onWatermark?: (revision: bigint) => void;
  /** Called after each checkpoint row is written. */
  onCheckpoint?: (revision: bigint) => void;
  /** The etcd timeline the captured rows belong to (etcd_timelines.timeline, sql/065). Default 0. */
  timeline?: number;
  /**
   * The leadership term (LeaderElection.term()) stamped on every row and
   * checkpoint this run writes: the store keeps the highest term's row
   * (sql/110), so a deposed leader's late writes never replace its successor's.
   */
  term: bigint;
  /** Asked before a watch of this run reopens after a disconnect (WatchWindowOptions.beforeReopen); absent: windows reopen on their own. */
  beforeReopen?: () => Promise<boolean>;
}

export type StopReason = 'stopped' | 'watch-error' | 'leadership-lost' | 'sink-error';

export interface RunOutcome {
  reason: StopReason;
  checkpoint: bigint;
  error?: Error;
}

interface RunState {
  watermark: bigint;
  head: bigint;
}

export interface PipelineHandle {
  readonly done: Promise<RunOutcome>;
  /** Idempotent: stop reading, drain, final checkpoint. */
  close(): Promise<RunOutcome>;
  watermark(): bigint;
  head(): bigint;
}

/** Revisions each catch-up window gets at least; the number of windows follows the lag in these steps. */
export const REVISIONS_PER_WINDOW = 5_000n;

/**
 * How many windows for a lag: one per `revisionsPerWindow` revisions behind,
 * at least 1 and at most `maxWindows` — K follows the lag (a short backlog is
 * not cut into slivers, a long one gets every window allowed) instead of
 * being one constant.
 */
export function windowsForLag(lag: bigint, maxWindows: number, revisionsPerWindow: bigint = REVISIONS_PER_WINDOW): number {
  if (lag <= 0n || revisionsPerWindow <= 0n) return 1;
  const byLag = lag / revisionsPerWindow;
  const max = BigInt(Math.max(1, Math.floor(maxWindows)));
  return Number(byLag < 1n ? 1n : byLag > max ? max : byLag);
}

/** Splits (checkpoint, head] into windowsForLag windows; the last one is open-ended (live). */
export function planWindows(
  checkpoint: bigint,
  head: bigint,
  maxWindows: number = configDefaults.tailer.catchUpWindows,
  revisionsPerWindow: bigint = REVISIONS_PER_WINDOW,
): WindowSpec[] {
  const behind = head - checkpoint;
  const count = BigInt(windowsForLag(behind, maxWindows, revisionsPerWindow));
  if (count === 1n) return [{ start: checkpoint + 1n }];
  const size = behind / count;
  const specs: WindowSpec[] = [];
  let start = checkpoint + 1n;
  for (let i = 0n; i < count - 1n; i += 1n) {
    specs.push({ start, end: start + size });
    start += size;
  }
  specs.push({ start });
  return specs;
}

/** A run's windows: `done[i]` when window i is already durable (an earlier run's, catchUpSegments.ts): not watched. */
export interface WindowPlan {
  specs: WindowSpec[];
  done: boolean[];
}

/**
 * Splits (checkpoint, head] around what earlier runs already made durable (`durable`: sorted, disjoint, above the
 * checkpoint): each durable interval is a window that is done from the start, and the holes between are watched —
 * in windowsForLag windows over their total size, shared in proportion to each hole's, at least one each; the last
 * window is open-ended (live). Without durable intervals: planWindows.
 */
export function planResumeWindows(
  checkpoint: bigint,
  head: bigint,
  durable: readonly Durable[],
  maxWindows: number = configDefaults.tailer.catchUpWindows,
  revisionsPerWindow: bigint = REVISIONS_PER_WINDOW,
): WindowPlan {
  const below = durable.filter((d) => d.from > checkpoint && d.from <= head);
  if (below.length === 0) {
    const specs = planWindows(checkpoint, head, maxWindows, revisionsPerWindow);
    return { specs, done: specs.map(() => false) };
  }
  // Holes: [start, end) closed ones between the intervals, then the live one from after the last interval.
  const holes: Array<{ start: bigint; end?: bigint }> = [];
  let cursor = checkpoint + 1n;
  for (const d of below) {
    if (d.from > cursor) holes.push({ start: cursor, end: d.from });
    cursor = d.through + 1n;
  }
  const liveStart = cursor;
  const size = (h: { start: bigint; end?: bigint }): bigint => (h.end ?? (head >= h.start ? head + 1n : h.start)) - h.start;
  const total = holes.reduce((n, h) => n + size(h), 0n) + size({ start: liveStart });
  const k = BigInt(windowsForLag(total, maxWindows, revisionsPerWindow));
  const pieces = (h: { start: bigint; end?: bigint }): bigint => {
    const n = total > 0n ? (k * size(h)) / total : 1n;
    const most = size(h) > 0n ? size(h) : 1n;
    return n < 1n ? 1n : n > most ? most : n;
  };
  const specs: WindowSpec[] = [];
  const done: boolean[] = [];
  const split = (h: { start: bigint; end?: bigint }): void => {
    const n = pieces(h);
    const step = size(h) / n;
    let start = h.start;
    for (let i = 1n; i < n; i += 1n) {
      specs.push({ start, end: start + step });
      done.push(false);
      start += step;
    }
    specs.push(h.end === undefined ? { start } : { start, end: h.end });
    done.push(false);
  };
  let h = 0;
  for (const d of below) {
    const hole = holes[h];
    if (hole && hole.end === d.from) {
      split(hole);
      h += 1;
    }
    specs.push({ start: d.from, end: d.through + 1n });
    done.push(true);
  }
  split({ start: liveStart });
  return { specs, done };
}

export class TailerPipeline {
  readonly #deps: PipelineDeps;
  readonly #opts: PipelineOptions;
  readonly #labels: { cluster: string };

  constructor(deps: PipelineDeps, options: PipelineOptions = {}) {
    this.#deps = deps;
    this.#opts = options;
    this.#labels = { cluster: deps.cluster };
  }

  start(checkpoint: bigint, signal: AbortSignal): PipelineHandle {
    const inner = new AbortController();
    const onOuter = (): void => inner.abort();
    if (signal.aborted) inner.abort();
    else signal.addEventListener('abort', onOuter, { once: true });
    const state = { watermark: checkpoint, head: checkpoint };
    const done = this.#run(checkpoint, inner, state).finally(() => signal.removeEventListener('abort', onOuter));
    let closing: Promise<RunOutcome> | undefined;
    return {
      done,
      close: () => {
        closing ??= (inner.abort(), done);
        return closing;
      },
      watermark: () => state.watermark,
      head: () => state.head,
    };
  }

  /** Wires one run: plan the windows, run them into the sink, checkpoint on a timer; at the end drain and write a final checkpoint. */
  async #run(checkpoint: bigint, inner: AbortController, state: RunState): Promise<RunOutcome> {
    const { log, metrics } = this.#deps;
    let outcome: RunOutcome = { reason: 'stopped', checkpoint };
    const stopWith = (reason: StopReason, error?: Error): void => {
      if (outcome.reason === 'stopped' && !inner.signal.aborted) outcome = { reason, checkpoint, error };
      inner.abort();
    };
    // A clock write now guarantees every catch-up window ends on a captured change and every expiry has a clock after it.
    const head = await this.#deps.clock.tick();
    if (head > state.head) state.head = head;
    // What earlier runs made durable above the checkpoint is not watched again (catchUpSegments.ts).
    const durable = await readDurable(this.#deps.store, this.#deps.cluster, this.#deps.timeline ?? 0, checkpoint, tailerKeyOf(this.#opts)).catch(
      (err: Error) => {
        log.warn({ err: err.message }, 'durable catch-up intervals not read; this run watches everything above the checkpoint');
        return [];
      },
    );
    const { specs, done } = planResumeWindows(
      checkpoint,
      head,
      durable,
      this.#opts.catchUpWindows ?? configDefaults.tailer.catchUpWindows,
      BigInt(this.#opts.splitMinRevisions ?? REVISIONS_PER_WINDOW),
    );
    if (specs.length > 1) {
      const skipped = durable.reduce((n, d) => n + (d.through - d.from + 1n), 0n);
      log.info(
        { windows: done.filter((d) => !d).length, from: (checkpoint + 1n).toString(), head: head.toString(), durableRevisions: skipped.toString() },
        'catching up in revision windows',
      );
    }
    const watermark = new Watermark(checkpoint, specs);
    done.forEach((d, i) => (d ? watermark.complete(i) : undefined));
    const clocks = new RecentClocks();
    // With the origin secret, a copy of a real grant's value put back by hand reads foreign (replays.ts).
    const replays = this.#opts.originSecret ? new ReplayCheck(this.#deps.store, this.#deps.cluster, (r) => this.#replayed(r)) : undefined;
    const sink = new BatchSink(this.#deps.store, log, {
      // Longer batches while more than a window of etcd's history is still unread (clickhouseSink.ts). Not the durable
      // lag: a live run at a high rate always has rows waiting for the sink, and longer batches would only make more.
      catchingUp: () => watermark.unread(state.head) > REVISIONS_PER_WINDOW,
      ...this.#opts.sink,
      ...(replays ? { beforeWrite: (batch: RowBatch) => replays.mark(batch) } : {}),
      timeline: this.#deps.timeline,
      term: this.#deps.term,
      ...(tailerKeyOf(this.#opts) ? { proofSecret: tailerKeyOf(this.#opts) } : {}),
      onFlush: (_rows, seconds) => metrics?.batchSeconds.observe(this.#labels, seconds),
      onRetry: () => metrics?.sinkRetries.inc(this.#labels),
      onQuarantine: (rows) => metrics?.quarantined.inc(this.#labels, rows),
    });
    const writer = new CheckpointWriter(await this.#writerDeps(state, clocks, watermark), checkpoint);
    writer.start(this.#opts.checkpointIntervalMs ?? 250, () => stopWith('leadership-lost'));

    const leases = this.#deps.leases;
    if (leases) {
      // What an earlier process (killed, or another replica) heard about leases, then the holds put before this
      // run (another leader's, or while none ran): their leases' TTL is asked too.
      await leases.restore().catch((err: Error) => log.warn({ err: err.message }, 'saved lease evidence not loaded; this run starts from what it hears'));
      leases.seed(await currentHolds(this.#deps.client).catch(() => []));
    }
    const shared = this.#windowShared(state, done.filter((d) => !d).length, { sink, watermark, clocks, leases });
    this.#observe(watermark, state); // a durable interval right above the checkpoint moves it at once
    await this.#runWindows(shared, specs, done, inner.signal, stopWith);
    inner.abort(); // all windows are done: nothing else reads

    // A deposed leader writes nothing more: its rows would lose to its successor's anyway (sql/110).
    if (outcome.reason === 'leadership-lost' || (await this.#deposed())) {
      log.warn({ rows: sink.bufferedRows }, 'no longer the leader: queued rows are abandoned, not drained');
      sink.abort();
    } else await this.#drain(sink);
    await writer.stop();
    if (outcome.reason !== 'leadership-lost') {
      try {
        await writer.tick();
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'final checkpoint write failed');
      }
    }
    // This run no longer tails: its lag alarm is not this replica's to hold (the next run, here or on the new leader, raises its own).
    this.#deps.alarm?.clear(writer.alarmName);
    outcome.checkpoint = writer.written;
    return outcome;
  }

  /** What every window of this run shares: the sink, the watermark, and the hooks that move the run's state. */
  #windowShared(state: RunState, windows: number, parts: Pick<WindowShared, 'sink' | 'watermark' | 'clocks' | 'leases'>): WindowShared {
    const { metrics } = this.#deps;
    const { watermark } = parts;
    return {
      ...parts,
      cluster: this.#deps.cluster,
      connect: this.#deps.connect,
      client: this.#deps.client,
      log: this.#deps.log,
      gaps: this.#deps.gaps,
      originSecret: this.#opts.originSecret,
      tailerSecret: tailerKeyOf(this.#opts),
      foreignGrants:
        this.#opts.originSecret &&
        new ForeignGrantClock(this.#deps.client, this.#deps.store, this.#deps.cluster, tailerKeyOf(this.#opts) ?? this.#opts.originSecret),
      capturedStarts: capturedStarts(this.#deps.store, this.#deps.cluster, this.#deps.timeline ?? 0),
      alarm: this.#deps.alarm,
      metrics,
      highWaterEvents: this.#opts.highWaterEvents ?? Math.max(2_000, Math.floor(40_000 / windows)),
      highWaterBytes: this.#opts.highWaterBytes ?? Math.max(4 * MIB, Math.floor((64 * MIB) / windows)),
      bracketLimits: {
        maxHeldRows: this.#opts.bracketMaxHeldRows ?? 1_000,
        maxWaitMs: this.#opts.bracketMaxWaitMs ?? 1_000,
      },
      onHead: (rev) => {
        if (rev > state.head) state.head = rev;
      },
      beforeReopen: this.#deps.beforeReopen,
      onProgress: () => this.#observe(watermark, state),
      onDurable: (slot, events) => {
        watermark.done(slot);
        metrics?.events.inc(this.#labels, events);
        this.#observe(watermark, state);
      },
    };
  }

  async #writerDeps(state: RunState, clocks: RecentClocks, watermark: Watermark): Promise<CheckpointWriterDeps> {
    const d = this.#deps;
    return {
      store: d.store,
      cluster: d.cluster,
      replicaId: d.replicaId,
      term: d.term,
      timeline: d.timeline ?? 0,
      secret: tailerKeyOf(this.#opts),
      log: d.log,
      fence: d.fence,
      position: () => ({ watermark: state.watermark, head: state.head, lagSeconds: clocks.lagSeconds(state.watermark, state.head) }),
      durable: () => watermark.durable(),
      clusterId: await this.#clusterId().catch(() => ''), // status only
      metrics: d.metrics,
      alarm: d.alarm,
      lagAlarmRevisions: this.#opts.lagAlarmRevisions,
      onCheckpoint: d.onCheckpoint,
      probe: async (knownCompact) => ({ head: await headRevision(d.client), compact: await compactRevision(d.client, knownCompact) }),
      onHead: (rev) => {
        if (rev > state.head) state.head = rev;
      },
    };
  }

  /** Runs every window to its end; the first that fails stops them all (the run restarts from the checkpoint). */
  async #runWindows(
    shared: WindowShared,
    specs: readonly WindowSpec[],
    done: readonly boolean[],
    signal: AbortSignal,
    stopWith: (reason: StopReason, error?: Error) => void,
  ): Promise<void> {
    // Each window waits on a signal of its own (its watch, a full sink, a clock lookup: at most three
    // listeners at once), and the run's signal carries one listener for all windows. Sharing the run's
    // signal instead put 2-3 listeners per window on it (MaxListenersExceededWarning at 8 windows).
    const windowStops = specs.map(() => new AbortController());
    const stopWindows = (): void => {
      for (const c of windowStops) c.abort();
    };
    if (signal.aborted) stopWindows();
    else signal.addEventListener('abort', stopWindows, { once: true });
    try {
      await Promise.allSettled(
        specs.map((spec, i) =>
          done[i]
            ? Promise.resolve()
            : new WindowRunner(shared, i, spec, (windowStops[i] as AbortController).signal).run().catch((err: Error) => {
                if (!signal.aborted) this.#deps.log.warn({ err: err.message, window: i }, 'watch window failed; the run restarts from the checkpoint');
                stopWith(err.name === 'WatchError' ? 'watch-error' : 'sink-error', err);
              }),
        ),
      );
    } finally {
      signal.removeEventListener('abort', stopWindows);
    }
  }

  /** The fence says we no longer lead. An etcd that does not answer (in 2 s) is no answer: not deposed, the drain goes on. */
  async #deposed(): Promise<boolean> {
    const timer = new AbortController();
    const leads = await Promise.race([
      this.#deps.fence().catch(() => true),
      sleep(2_000, timer.signal).then(
        () => true,
        () => true,
      ),
    ]);
    timer.abort();
    return !leads;
  }

  /** Drains the sink under the deadline; past it, queued rows are abandoned (the checkpoint stays behind them). */
  async #drain(sink: BatchSink): Promise<void> {
    const deadline = this.#opts.drainDeadlineMs ?? 15_000;
    const deadlineTimer = new AbortController(); // the deadline's timer must not outlive a drain that finished first
    const drained = await Promise.race([
      sink.drain().then(
        () => true,
        () => false,
      ),
      sleep(deadline, deadlineTimer.signal).then(() => false),
    ]);
    deadlineTimer.abort();
    if (!drained) {
      this.#deps.log.warn({ deadlineMs: deadline }, 'drain did not finish in time; queued rows are abandoned, the checkpoint stays behind them');
      sink.abort();
    }
  }

  /** A copy of a real grant's hold value put back by hand: an incident, like any write around the API. */
  #replayed(r: Replay): void {
    const key = `${PREFIX.hold}${r.key}`;
    this.#deps.log.error(
      { key, grantRevision: r.grantRevision, firstRevision: r.firstRevision, recordedAsApi: r.recordedAsApi },
      "a copy of a real grant's hold value was put back by hand (replay): recorded foreign",
    );
    this.#deps.alarm?.raise(
      alarm(
        'LOCKAUDIT_ALARM_FOREIGN_WRITE',
        { cluster: this.#deps.cluster },
        { what: 'copy of a real hold (replay)', key, revision: r.grantRevision, where: 'grant history, origin=foreign' },
      ),
    );
  }

  #observe(watermark: Watermark, state: RunState): void {
    const v = watermark.value;
    if (v > state.watermark) {
      state.watermark = v;
      this.#deps.metrics?.watermark.set(this.#labels, Number(v));
      this.#deps.onWatermark?.(v);
    }
  }

  async #clusterId(): Promise<string> {
    const res = await this.#deps.client.kv.range({ key: Buffer.from(PREFIX.epoch) });
    const kv = res.kvs[0];
    if (kv) {
      try {
        const v = JSON.parse(kv.value.toString('utf8')) as { clusterId?: unknown };
        if (typeof v.clusterId === 'string') return v.clusterId;
      } catch {
        // fall through to the header's id
      }
    }
    return String(res.header.cluster_id);
  }
}
