// One tailer replica for one etcd cluster: campaigns; once elected, writes
// the clock, checks the checkpoint against compaction (gap + snapshot),
// runs the pipeline, ships spools; when the run ends on a watch error it
// starts again from the checkpoint. close(): stop the watch, drain, final
// checkpoint, stop the clock and the shipper, resign leadership last, close
// the client. Idempotent.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../core/clickhouse.js';
import { configDefaults, type EtcdCluster } from '../core/config.js';
import { createEtcdClient } from '../core/etcd.js';
import type { Logger } from '../core/logger.js';
import { alarm } from '../platform/alarms.js';
import type { HealthState } from '../platform/health.js';
import { Backoff, sleep } from '../platform/retry.js';
import { ClockWriter } from './clockWriter.js';
import { TailerElection } from './election.js';
import { loadGaps, lostAfter, recordGap, snapshotHolds, type Gap } from './gaps.js';
import { SpoolShipper } from './spoolShipper.js';
import { readCheckpoint, writeCheckpoint } from './offsets.js';
import { writeRows } from './rowWriter.js';
import { TailerPipeline, type PipelineHandle, type PipelineOptions } from './pipeline.js';
import type { TailerMetrics } from './tailerMetrics.js';
import type { RowBatch } from './types.js';

export interface ReplicaOptions extends PipelineOptions {
  electionTtlSeconds?: number;
  /** etcd's compaction window (revisions); the lag alarm is raised at half. */
  compactionWindowRevisions?: number;
  clockIntervalMs?: number;
  /** Where fail-open spools live (<dataDir>/spool/<cluster>.jsonl); absent: no shipping. */
  dataDir?: string;
  spoolIntervalMs?: number;
}

export interface ReplicaDeps {
  cluster: EtcdCluster;
  store: AuditStore;
  log: Logger;
  metrics?: TailerMetrics;
  health?: Pick<HealthState, 'raise' | 'clear'>;
  replicaId?: string;
  onWatermark?: (revision: bigint) => void;
  onCheckpoint?: (revision: bigint) => void;
  onLeader?: (leader: boolean) => void;
}

export interface ReplicaStatus {
  cluster: string;
  replicaId: string;
  leader: boolean;
  watermark: string;
  head: string;
}

export class TailerReplica {
  readonly #deps: ReplicaDeps;
  readonly #opts: ReplicaOptions;
  readonly #replicaId: string;
  readonly #client: Etcd3;
  readonly #closing = new AbortController();
  readonly #labels: { cluster: string };
  #loop: Promise<void> | undefined;
  #closed: Promise<void> | undefined;
  #leader = false;
  #pipeline: PipelineHandle | undefined;
  #leaderAbort: AbortController | undefined;

  constructor(deps: ReplicaDeps, options: ReplicaOptions = {}) {
    this.#deps = deps;
    this.#opts = options;
    this.#replicaId = deps.replicaId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.#client = createEtcdClient(deps.cluster);
    this.#labels = { cluster: deps.cluster.name };
  }

  get replicaId(): string {
    return this.#replicaId;
  }

  status(): ReplicaStatus {
    return {
      cluster: this.#deps.cluster.name,
      replicaId: this.#replicaId,
      leader: this.#leader,
      watermark: (this.#pipeline?.watermark() ?? 0n).toString(),
      head: (this.#pipeline?.head() ?? 0n).toString(),
    };
  }

  start(): void {
    this.#loop ??= this.#run().catch((err: Error) => this.#deps.log.error({ err: err.message }, 'tailer replica stopped on an unexpected error'));
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort();
      this.#leaderAbort?.abort();
      await this.#loop;
      this.#client.close();
    })();
    return this.#closed;
  }

  async #run(): Promise<void> {
    const { log, metrics } = this.#deps;
    const cluster = this.#deps.cluster.name;
    const backoff = new Backoff({ initialMs: 500, maxMs: 10_000 });
    while (!this.#closing.signal.aborted) {
      const election = new TailerElection(this.#client, cluster, this.#replicaId, this.#opts.electionTtlSeconds ?? configDefaults.tailer.electionTtlSeconds);
      const leaderAbort = new AbortController();
      this.#leaderAbort = leaderAbort;
      const stopLeading = (): void => leaderAbort.abort();
      this.#closing.signal.addEventListener('abort', stopLeading, { once: true });
      try {
        await election.campaign(this.#closing.signal, (err) => {
          log.error({ err: err.message }, 'election lease lost: stopping before the next checkpoint write');
          leaderAbort.abort();
        });
      } catch (err) {
        this.#closing.signal.removeEventListener('abort', stopLeading);
        if (this.#closing.signal.aborted) break;
        log.warn({ err: (err as Error).message }, 'campaign failed; retrying');
        await sleep(backoff.next(), this.#closing.signal);
        continue;
      }
      backoff.reset();
      this.#setLeader(true);
      log.info({ replica: this.#replicaId }, 'elected tailer leader');
      const clock = new ClockWriter(this.#client, log, this.#opts.clockIntervalMs ?? 1_000);
      const shipper = this.#opts.dataDir
        ? new SpoolShipper(this.#deps.store, cluster, this.#opts.dataDir, log, (n) => metrics?.spoolShipped.inc(this.#labels, n))
        : undefined;
      try {
        clock.start();
        shipper?.start(this.#opts.spoolIntervalMs ?? 5_000);
        await this.#lead(election, clock, leaderAbort.signal);
      } catch (err) {
        log.error({ err: (err as Error).message }, 'tailer leader run failed');
        await sleep(1_000, this.#closing.signal);
      } finally {
        this.#closing.signal.removeEventListener('abort', stopLeading);
        clock.stop();
        await shipper?.stop();
        this.#setLeader(false);
        await election.resign(); // last: a standby replica takes over only once we have stopped writing
      }
    }
  }

  #setLeader(leader: boolean): void {
    this.#leader = leader;
    this.#deps.metrics?.leader.set(this.#labels, leader ? 1 : 0);
    this.#deps.onLeader?.(leader);
  }

  async #lead(election: TailerElection, clock: ClockWriter, signal: AbortSignal): Promise<void> {
    const { store, log } = this.#deps;
    const cluster = this.#deps.cluster.name;
    while (!signal.aborted) {
      let checkpoint = await readCheckpoint(store, cluster);
      const gaps = await loadGaps(store, cluster);
      const lost = await lostAfter(this.#client, checkpoint);
      if (lost !== undefined) {
        checkpoint = await this.#handleGap(election, checkpoint, lost, gaps, signal);
        if (signal.aborted) return;
      }
      const pipeline = new TailerPipeline(
        {
          cluster,
          endpoints: this.#deps.cluster.endpoints,
          client: this.#client,
          store,
          log,
          replicaId: this.#replicaId,
          clock,
          gaps,
          fence: () => election.stillLeader(),
          metrics: this.#deps.metrics,
          alarm: this.#deps.health,
          onWatermark: this.#deps.onWatermark,
          onCheckpoint: this.#deps.onCheckpoint,
        },
        {
          ...this.#opts,
          lagAlarmRevisions: this.#opts.lagAlarmRevisions ?? Math.floor((this.#opts.compactionWindowRevisions ?? configDefaults.tailer.compactionWindowRevisions) / 2),
        },
      );
      log.info({ checkpoint: checkpoint.toString() }, 'tailing from checkpoint');
      const handle = pipeline.start(checkpoint, signal);
      this.#pipeline = handle;
      const outcome = await handle.done;
      if (outcome.reason === 'stopped' || outcome.reason === 'leadership-lost') return;
      log.warn({ reason: outcome.reason, err: outcome.error?.message, checkpoint: outcome.checkpoint.toString() }, 'tailer run ended; checking compaction and restarting from the checkpoint');
      await sleep(500, signal);
    }
  }

  /** Gap record, alarm, snapshot at the compaction revision, checkpoint there. Returns the new checkpoint. */
  async #handleGap(election: TailerElection, checkpoint: bigint, compacted: bigint, gaps: Gap[], signal: AbortSignal): Promise<bigint> {
    const { store, log, metrics, health } = this.#deps;
    const cluster = this.#deps.cluster.name;
    const from = checkpoint + 1n;
    const reason = `etcd compacted history up to revision ${compacted} before the tailer captured it (checkpoint ${checkpoint})`;
    log.error({ from: from.toString(), to: compacted.toString() }, 'history lost: recording a gap and resuming from a snapshot');
    metrics?.gaps.inc(this.#labels);
    health?.raise(alarm('LOCKAUDIT_ALARM_TAILER_GAP', { cluster }, { from, to: compacted }));
    await recordGap(store, { cluster, from_revision: from.toString(), to_revision: compacted.toString(), detected_at: Date.now(), reason });
    gaps.push({ from, to: compacted });
    const write = async (batch: RowBatch): Promise<void> => {
      await writeRows(store, batch, { retry: { initialMs: 100, maxMs: 5_000, signal } });
    };
    const holds = await snapshotHolds(this.#client, cluster, compacted, checkpoint, write);
    const wrote = await writeCheckpoint(store, { cluster, revision: compacted, leader: this.#replicaId, fence: () => election.stillLeader() });
    if (wrote.kind === 'not-leader') throw new Error('leadership lost during the snapshot');
    log.warn({ holds, revision: compacted.toString() }, 'snapshot written; resuming after it');
    return wrote.kind === 'behind' ? wrote.stored : compacted;
  }
}
