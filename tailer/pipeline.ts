// The leader's pipeline for one cluster: watch → decode → sink → checkpoint.
// start(checkpoint, signal) watches from checkpoint + 1 — far behind, as K
// revision windows watched concurrently, each stopping where the next
// begins — and returns a handle; stopping (the signal, or close()) stops
// the watch, drains the sink under a deadline, writes a final checkpoint.
// The checkpoint is the contiguous watermark (watermark.ts), written only
// after the sink acknowledged the rows and only while etcd still shows us as
// leader.
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../core/clickhouse.js';
import { createEtcdClient } from '../core/etcd.js';
import type { Logger } from '../core/logger.js';
import { ClockBracket, type ClockPoint } from './clockBracket.js';
import { Watermark, type Slot, type WindowSpec } from './watermark.js';
import type { ClockWriter } from './clockWriter.js';
import { decodeRevision, finishRevision, type DecodeContext, type DecodedRevision, type TimeEstimate } from './decoder.js';
import { clockAtOrBefore, firstClockAfter } from './etcdReads.js';
import { inGap, type Gap } from './gaps.js';
import { liveLeases } from './leaseLiveness.js';
import { BatchSink, sleep, type SinkOptions } from './clickhouseSink.js';
import type { TailerMetrics } from './tailerMetrics.js';
import { WatchWindow } from './watchWindow.js';

export interface PipelineOptions {
  /** Concurrent windows when far behind. Default 8. */
  catchUpWindows?: number;
  /** Split only when at least this many revisions behind; each window gets at least this many. Default 5 000. */
  splitMinRevisions?: number;
  sink?: SinkOptions;
  /** How often the checkpoint (and status) is written when it moved. Default 250 ms. */
  checkpointIntervalMs?: number;
  /** Longest the drain at stop may take before queued rows are abandoned (the checkpoint stays behind them). Default 15 000 ms. */
  drainDeadlineMs?: number;
  /** Events waiting per window before its watch pauses. Default 40 000 / windows, at least 2 000. */
  highWaterEvents?: number;
  /** Rows waiting for a clock bracket before the next clock is looked up instead. Default 20 000. */
  bracketMaxPendingRows?: number;
  /** Lag (revisions) at which the lag alarm is raised: half of etcd's compaction window. */
  lagAlarmRevisions?: number;
  /** Key of the lock API's proof of origin; holds without it are recorded as foreign (and alarmed). */
  originSecret?: Buffer;
}

export interface PipelineDeps {
  cluster: string;
  endpoints: readonly string[];
  client: Etcd3;
  store: AuditStore;
  log: Logger;
  replicaId: string;
  clock: ClockWriter;
  gaps: readonly Gap[];
  /** Re-checks leadership in etcd; false → stop before writing; a rejection (etcd did not answer) → no checkpoint this time, asked again on the next. */
  fence: () => Promise<boolean>;
  metrics?: TailerMetrics;
  /** Lag alarm hooks (runtime.health). */
  alarm?: { raise: (name: string, message: string) => void; clear: (name: string) => void };
  /** Called whenever the completeness watermark moves (durable, before the checkpoint row is written). */
  onWatermark?: (revision: bigint) => void;
  /** Called after each checkpoint row is written. */
  onCheckpoint?: (revision: bigint) => void;
}

export type StopReason = 'stopped' | 'watch-error' | 'leadership-lost' | 'sink-error';

export interface RunOutcome {
  reason: StopReason;
  checkpoint: bigint;
  error?: Error;
}

export interface PipelineHandle {
  readonly done: Promise<RunOutcome>;
  /** Idempotent: stop reading, drain, final checkpoint. */
  close(): Promise<RunOutcome>;
  watermark(): bigint;
  head(): bigint;
}

/** Splits (checkpoint, head] into windows; the last one is open-ended (live). */
export function planWindows(checkpoint: bigint, head: bigint, windows: number, minPerWindow: bigint): WindowSpec[] {
  const behind = head - checkpoint;
  const k = BigInt(Math.max(1, windows));
  if (k === 1n || behind < minPerWindow * 2n) return [{ start: checkpoint + 1n }];
  const count = behind / minPerWindow < k ? behind / minPerWindow : k;
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

interface PendingRevision {
  decoded: DecodedRevision;
  slot: Slot;
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

  async #run(checkpoint: bigint, inner: AbortController, state: { watermark: bigint; head: bigint }): Promise<RunOutcome> {
    const { cluster, log, store, metrics } = this.#deps;
    const signal = inner.signal;
    let outcome: RunOutcome = { reason: 'stopped', checkpoint };
    const stopWith = (reason: StopReason, error?: Error): void => {
      if (outcome.reason === 'stopped' && !signal.aborted) outcome = { reason, checkpoint, error };
      inner.abort();
    };

    // A clock write now guarantees every catch-up window ends on a captured change and every expiry has a clock after it.
    const head = await this.#deps.clock.tick();
    state.head = head > state.head ? head : state.head;
    const specs = planWindows(checkpoint, head, this.#opts.catchUpWindows ?? 8, BigInt(this.#opts.splitMinRevisions ?? 5_000));
    const watermark = new Watermark(checkpoint, specs);
    const sink = new BatchSink(store, log, {
      ...this.#opts.sink,
      onFlush: (rows, seconds) => metrics?.batchSeconds.observe(this.#labels, seconds),
      onRetry: () => metrics?.sinkRetries.inc(this.#labels),
    });
    const clocks: ClockPoint[] = []; // recent clock writes, for lag in seconds
    let written = checkpoint;
    let lastStatus = 0;
    let clusterId = '';
    try {
      clusterId = await this.#clusterId();
    } catch {
      // status only
    }
    if (specs.length > 1) log.info({ windows: specs.length, from: (checkpoint + 1n).toString(), head: head.toString() }, 'catching up in revision windows');

    const lagSeconds = (): number => {
      if (state.watermark >= state.head) return 0;
      let at: number | undefined;
      for (const c of clocks) if (c.revision <= state.watermark) at = c.at;
      return at === undefined ? 0 : Math.max(0, (Date.now() - at) / 1000);
    };

    let fenceFailures = 0;
    const writeCheckpoint = async (): Promise<void> => {
      const value = watermark.value;
      if (value > written) {
        // true: still leader; false: our campaign key is gone (lost). A fence that could not ask etcd
        // (restart, network) is neither: no checkpoint this time, the next tick asks again. A lease that
        // really lapses is reported by the election itself (onLost), which stops the run.
        const leader = await this.#deps.fence().catch((err: Error) => {
          fenceFailures += 1;
          if (fenceFailures === 1 || fenceFailures % 40 === 0) log.warn({ err: err.message, failures: fenceFailures, checkpoint: written.toString() }, 'leadership check failed; checkpoint held back until etcd answers');
          return undefined;
        });
        if (leader === false) {
          log.warn({ checkpoint: written.toString() }, 'leadership lost: stopping before the next checkpoint write');
          stopWith('leadership-lost');
          return;
        }
        if (leader === true) {
          fenceFailures = 0;
          await store.insert('checkpoints', [{ cluster, revision: value.toString(), leader: this.#deps.replicaId }]);
          written = value;
          outcome.checkpoint = value;
          this.#deps.onCheckpoint?.(value);
        }
      }
      const lagRevisions = state.head > written ? state.head - written : 0n;
      metrics?.lagRevisions.set(this.#labels, Number(lagRevisions));
      metrics?.lagSeconds.set(this.#labels, lagSeconds());
      metrics?.headRevision.set(this.#labels, Number(state.head));
      const lagAlarm = this.#opts.lagAlarmRevisions;
      if (lagAlarm !== undefined) {
        const name = `tailer-lag:${cluster}`;
        if (lagRevisions >= BigInt(lagAlarm)) {
          this.#deps.alarm?.raise(name, `tailer for ${cluster} is ${lagRevisions} revisions behind (alarm at ${lagAlarm} revisions)`);
        } else this.#deps.alarm?.clear(name);
      }
      if (Date.now() - lastStatus >= 1_000) {
        lastStatus = Date.now();
        await store.insert('tailer_status', [
          {
            cluster,
            cluster_id: clusterId,
            leader: this.#deps.replicaId,
            checkpoint: written.toString(),
            head_revision: state.head.toString(),
            compact_revision: '0',
            lag_revisions: lagRevisions.toString(),
            lag_seconds: lagSeconds(),
            updated_at: Date.now(),
          },
        ]);
      }
    };

    let checkpointing: Promise<void> = Promise.resolve();
    const checkpointTimer = setInterval(() => {
      checkpointing = checkpointing.then(writeCheckpoint).catch((err: Error) => log.warn({ err: err.message }, 'checkpoint write failed; will retry'));
    }, this.#opts.checkpointIntervalMs ?? 250);

    const onDurable = (slot: Slot, events: number): void => {
      watermark.done(slot);
      metrics?.events.inc(this.#labels, events);
      this.#observe(watermark, state);
    };

    const runWindow = async (index: number, spec: WindowSpec, stop: AbortSignal): Promise<void> => {
      // Catch-up windows get their own connection (their own gRPC stream): etcd serves one stream's watches one at a time.
      const own = spec.end !== undefined;
      const client = own ? createEtcdClient({ name: cluster, endpoints: [...this.#deps.endpoints] }) : this.#deps.client;
      try {
        const ctx: DecodeContext = { cluster, startKnown: (rev) => !inGap(this.#deps.gaps, rev), originSecret: this.#opts.originSecret };
        const bracket = new ClockBracket<PendingRevision>(await clockAtOrBefore(client, spec.start - 1n));
        const maxPending = this.#opts.bracketMaxPendingRows ?? 20_000;
        let pendingSince: number | undefined;
        const emit = async (p: PendingRevision, time: TimeEstimate | undefined): Promise<void> => {
          const batch = finishRevision(p.decoded, time);
          const events = batch.events.length;
          if (batch.quarantine.length > 0) metrics?.quarantined.inc(this.#labels, batch.quarantine.length);
          await sink.add(batch, () => onDurable(p.slot, events), stop);
        };
        const lookup = async (): Promise<void> => {
          const newest = bracket.newestPending;
          if (newest === undefined) return;
          const next = await firstClockAfter(client, newest, stop);
          if (!next) return;
          for (const r of bracket.resolveWith(next)) await emit(r.item, r.time);
        };
        const highWater = this.#opts.highWaterEvents ?? Math.max(2_000, Math.floor(40_000 / specs.length));
        const window = new WatchWindow(client, {
          start: spec.start,
          end: spec.end,
          highWaterEvents: highWater,
          log,
          onHead: (rev) => {
            if (rev > state.head) state.head = rev;
          },
        });
        let ended = false;
        for await (const item of window.items(stop)) {
          if (item.kind === 'end') {
            ended = true;
            break;
          }
          if (item.kind === 'progress') {
            watermark.heard(index, item.revision);
            this.#observe(watermark, state);
            continue;
          }
          const rev = item.changes;
          const slot = watermark.track(index, rev.revision);
          const decoded = decodeRevision({ ...ctx, liveLeases: await liveLeases(client, rev) }, rev);
          this.#alarmForeign(decoded);
          const p: PendingRevision = { decoded, slot };
          if (decoded.clockAt !== undefined) {
            clocks.push({ revision: rev.revision, at: decoded.clockAt });
            if (clocks.length > 64) clocks.shift();
            for (const r of bracket.clock(rev.revision, decoded.clockAt)) await emit(r.item, r.time);
            await emit(p, undefined);
          } else if (decoded.events.some((e) => e.timeless)) {
            const time = bracket.place(rev.revision, p, decoded.events.length);
            if (time) await emit(p, time);
          } else {
            await emit(p, undefined);
          }
          if (bracket.pendingCount === 0) pendingSince = undefined;
          else pendingSince ??= Date.now();
          if (bracket.pendingRows > maxPending || (pendingSince !== undefined && Date.now() - pendingSince > 3_000)) {
            await lookup();
            if (bracket.pendingCount === 0) pendingSince = undefined;
          }
        }
        if (ended && !stop.aborted) {
          await lookup(); // expiries near the window's end: their next clock lies beyond it
          if (!stop.aborted) {
            watermark.complete(index);
            this.#observe(watermark, state);
          }
        }
      } finally {
        if (own) client.close();
      }
    };

    // Each window waits on a signal of its own (its watch, a full sink, a clock lookup: at most three
    // listeners at once), and the run's signal carries one listener for all windows. Sharing the run's
    // signal instead put 2-3 listeners per window on it (MaxListenersExceededWarning at 8 windows).
    const windowStops = specs.map(() => new AbortController());
    const stopWindows = (): void => {
      for (const c of windowStops) c.abort();
    };
    if (signal.aborted) stopWindows();
    else signal.addEventListener('abort', stopWindows, { once: true });
    const results = await Promise.allSettled(
      specs.map((spec, i) =>
        runWindow(i, spec, (windowStops[i] as AbortController).signal).catch((err: Error) => {
          if (!signal.aborted) log.warn({ err: err.message, window: i }, 'watch window failed; the run restarts from the checkpoint');
          stopWith(err.name === 'WatchError' ? 'watch-error' : 'sink-error', err);
          throw err;
        }),
      ),
    );
    void results;
    inner.abort(); // all windows are done: nothing else reads (this also runs and removes stopWindows)

    // Drain under a deadline, then the final checkpoint (if still leader).
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
      log.warn({ deadlineMs: deadline }, 'drain did not finish in time; queued rows are abandoned, the checkpoint stays behind them');
      sink.abort();
    }
    clearInterval(checkpointTimer);
    await checkpointing;
    if (outcome.reason !== 'leadership-lost') {
      try {
        await writeCheckpoint();
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'final checkpoint write failed');
      }
    }
    // This run no longer tails: its lag alarm is not this replica's to hold (the next run, here or on the new leader, raises its own).
    this.#deps.alarm?.clear(`tailer-lag:${cluster}`);
    outcome.checkpoint = written;
    return outcome;
  }

  /** A hold written around the lock API is an incident: alarm it (the rows say which). */
  #alarmForeign(decoded: DecodedRevision): void {
    const foreign = decoded.events.find((e) => e.row.event_type === 'grant' && e.row.origin === 'foreign');
    if (foreign) this.#deps.alarm?.raise(`foreign-write:${this.#deps.cluster}`, `a hold not made by the lock API was written into ${this.#deps.cluster} (${foreign.row.key} at revision ${decoded.revision}); see grant history, origin=foreign`);
  }

  #observe(watermark: Watermark, state: { watermark: bigint }): void {
    const v = watermark.value;
    if (v > state.watermark) {
      state.watermark = v;
      this.#deps.metrics?.watermark.set(this.#labels, Number(v));
      this.#deps.onWatermark?.(v);
    }
  }

  async #clusterId(): Promise<string> {
    const res = await this.#deps.client.kv.range({ key: Buffer.from('/sys/epoch') });
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
