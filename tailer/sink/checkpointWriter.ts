// The pipeline's checkpoint writer: on a timer, writes the watermark as the
// checkpoint (offsets.ts: fenced, never below what is stored) when it moved,
// records each catch-up window's durable stretch beyond it (catchUpSegments.ts),
// then publishes lag (metrics, the lag alarm) and, about once a second, the
// tailer's status row. The watermark only ever covers rows the sink
// acknowledged, so a checkpoint is never ahead of the data.
import type { AuditStore } from '../../core/clickhouse.js';
import type { Logger } from '../../core/logger.js';
import { alarm as alarmOf, alarmName } from '../../platform/alarms.js';
import type { HealthState } from '../../platform/health.js';
import { writeDurable, type Durable } from '../watch/catchUpSegments.js';
import { writeCheckpoint } from './offsets.js';
import type { TailerMetrics } from '../tailerMetrics.js';

/** Where the run stands, read at each tick. */
export interface RunPosition {
  /** Every change up to here is durable. */
  watermark: bigint;
  /** etcd's head as last seen. */
  head: bigint;
  /** How far behind in seconds (0 when caught up or unknown). */
  lagSeconds: number;
}

export interface CheckpointWriterDeps {
  store: AuditStore;
  cluster: string;
  replicaId: string;
  /** The leadership term and etcd timeline written with each checkpoint (offsets.ts). */
  term: bigint;
  timeline: number;
  /** The tailer's key: checkpoints and durable intervals carry its proof (sql/230). */
  secret?: Buffer;
  log: Logger;
  /** Re-checks leadership in etcd; a rejection (etcd did not answer) → no checkpoint this time, asked again on the next. */
  fence: () => Promise<boolean>;
  position: () => RunPosition;
  /** Each catch-up window's durable stretch above the watermark (Watermark.durable), recorded beside the checkpoint (catchUpSegments.ts). */
  durable?: () => Durable[];
  /** For the status row ('' when unknown). */
  clusterId: string;
  metrics?: TailerMetrics;
  alarm?: Pick<HealthState, 'raise' | 'clear'>;
  /** Lag (revisions) at which the lag alarm is raised; undefined: no alarm. */
  lagAlarmRevisions?: number;
  onCheckpoint?: (revision: bigint) => void;
  /** Asks etcd for its head and compact revision (given the last compact revision known), for the status row. */
  probe?: (knownCompact: bigint) => Promise<EtcdPosition>;
  /** The head the probe found (the watch reports the head only when it delivers something). */
  onHead?: (revision: bigint) => void;
}

export interface EtcdPosition {
  head: bigint;
  compact: bigint;
}

export type TickResult = 'ok' | 'leadership-lost';

const STATUS_INTERVAL_MS = 1_000;

export class CheckpointWriter {
  readonly #d: CheckpointWriterDeps;
  readonly #labels: { cluster: string };
  #written: bigint;
  #fenceFailures = 0;
  #lastStatus = 0;
  #compact = 0n;
  #timer: NodeJS.Timeout | undefined;
  #chain: Promise<void> = Promise.resolve();
  /** Window start → the durable floor last recorded for it. */
  readonly #durable = new Map<string, bigint>();

  constructor(deps: CheckpointWriterDeps, checkpoint: bigint) {
    this.#d = deps;
    this.#labels = { cluster: deps.cluster };
    this.#written = checkpoint;
  }

  /** The last checkpoint this writer wrote (or started from). */
  get written(): bigint {
    return this.#written;
  }

  get alarmName(): string {
    return alarmName('LOCKAUDIT_ALARM_TAILER_LAG', { cluster: this.#d.cluster });
  }

  /** Ticks every `intervalMs`, one at a time; `onLost` when the fence says we no longer lead. */
  start(intervalMs: number, onLost: () => void): void {
    this.#timer = setInterval(() => {
      this.#chain = this.#chain
        .then(() => this.tick())
        .then((r) => (r === 'leadership-lost' ? onLost() : undefined))
        .catch((err: Error) => this.#d.log.warn({ err: err.message }, 'checkpoint write failed; will retry'));
    }, intervalMs);
  }

  /** Stops the timer and waits for a tick under way. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#chain;
  }

  /** Writes the checkpoint if the watermark moved, then publishes lag and status. */
  async tick(): Promise<TickResult> {
    const pos = this.#d.position();
    if (pos.watermark > this.#written && (await this.#advance(pos.watermark)) === 'leadership-lost') return 'leadership-lost';
    if ((await this.#recordDurable()) === 'leadership-lost') return 'leadership-lost';
    const lagRevisions = pos.head > this.#written ? pos.head - this.#written : 0n;
    this.#publishLag(pos, lagRevisions);
    if (Date.now() - this.#lastStatus >= STATUS_INTERVAL_MS) {
      this.#lastStatus = Date.now();
      await this.#writeStatus(pos);
    }
    return 'ok';
  }

  async #advance(value: bigint): Promise<TickResult> {
    const { store, cluster, replicaId, term, timeline, fence, log, secret } = this.#d;
    // A fence that could not ask etcd (restart, network) is neither yes nor no: no checkpoint this time, the
    // next tick asks again. A lease that really lapses is reported by the election itself (onLost), which stops the run.
    const result = await writeCheckpoint(store, { cluster, revision: value, leader: replicaId, term, timeline, fence, secret }).catch((err: Error) => {
      this.#fenceFailures += 1;
      if (this.#fenceFailures === 1 || this.#fenceFailures % 40 === 0) {
        log.warn(
          { err: err.message, failures: this.#fenceFailures, checkpoint: this.#written.toString() },
          'leadership check failed; checkpoint held back until etcd answers',
        );
      }
      return undefined;
    });
    if (result === undefined) return 'ok';
    this.#fenceFailures = 0;
    if (result.kind === 'not-leader') {
      log.warn({ checkpoint: this.#written.toString() }, 'leadership lost: stopping before the next checkpoint write');
      return 'leadership-lost';
    }
    if (result.kind === 'behind') {
      log.warn({ watermark: value.toString(), stored: result.stored.toString() }, 'the stored checkpoint is already higher; not writing below it');
      return 'ok';
    }
    this.#written = value;
    this.#d.onCheckpoint?.(value);
    return 'ok';
  }

  /**
   * Records the windows' durable stretches that grew since the last tick, after the same fence as a checkpoint: a
   * restart then watches only the holes between them (catchUpSegments.ts). A failed write is retried next tick.
   */
  async #recordDurable(): Promise<TickResult> {
    const grown = (this.#d.durable?.() ?? []).filter((d) => (this.#durable.get(d.from.toString()) ?? -1n) < d.through);
    if (grown.length === 0) return 'ok';
    const leads = await this.#d.fence().catch(() => undefined);
    if (leads === undefined) return 'ok'; // etcd did not answer: asked again next tick
    if (!leads) return 'leadership-lost';
    try {
      await writeDurable(this.#d.store, { cluster: this.#d.cluster, timeline: this.#d.timeline, term: this.#d.term, secret: this.#d.secret }, grown);
      for (const d of grown) this.#durable.set(d.from.toString(), d.through);
    } catch (err) {
      this.#d.log.warn({ err: (err as Error).message }, 'durable catch-up intervals not recorded; will retry');
    }
    return 'ok';
  }

  #publishLag(pos: RunPosition, lagRevisions: bigint): void {
    const { metrics, alarm, lagAlarmRevisions, cluster } = this.#d;
    metrics?.lagRevisions.set(this.#labels, Number(lagRevisions));
    metrics?.lagSeconds.set(this.#labels, pos.lagSeconds);
    metrics?.headRevision.set(this.#labels, Number(pos.head));
    if (lagAlarmRevisions === undefined) return;
    if (lagRevisions >= BigInt(lagAlarmRevisions)) {
      alarm?.raise(alarmOf('LOCKAUDIT_ALARM_TAILER_LAG', { cluster }, { lagRevisions, alarmAt: lagAlarmRevisions }));
    } else alarm?.clear(this.alarmName);
  }

  /** The status row: etcd's real head and compact revision when etcd answers; never a head below the checkpoint. */
  async #writeStatus(pos: RunPosition): Promise<void> {
    const etcd = await this.#d.probe?.(this.#compact).catch((err: Error) => {
      this.#d.log.debug({ err: err.message }, 'could not ask etcd for its head; publishing the last one seen');
      return undefined;
    });
    if (etcd) {
      this.#compact = etcd.compact;
      this.#d.onHead?.(etcd.head);
    }
    let head = etcd && etcd.head > pos.head ? etcd.head : pos.head;
    if (head < this.#written) head = this.#written;
    await this.#d.store.insert('tailer_status', [
      {
        cluster: this.#d.cluster,
        cluster_id: this.#d.clusterId,
        leader: this.#d.replicaId,
        checkpoint: this.#written.toString(),
        head_revision: head.toString(),
        compact_revision: this.#compact.toString(),
        lag_revisions: (head - this.#written).toString(),
        lag_seconds: pos.lagSeconds,
        updated_at: Date.now(),
      },
    ]);
  }
}
