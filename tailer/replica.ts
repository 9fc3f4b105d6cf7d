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
import { PREFIX, tailerElectionName } from '../core/keyspace.js';
import type { Logger } from '../core/logger.js';
import { restoreGapMac } from '../core/proof.js';
import { alarm } from '../platform/alarms.js';
import type { HealthState } from '../platform/health.js';
import { LeaderElection } from '../platform/leaderElection.js';
import { settlesWithin } from '../platform/deadline.js';
import { sleep } from '../platform/retry.js';
import { ClockWriter } from './clock/clockWriter.js';
import { capturedStarts, closeGrantsEndedInGap, completeGrantRows, loadGaps, recordGap, snapshotHolds, type Gap } from './recovery/gaps.js';
import { storeEvidenceLog } from './decode/leaseEvidence.js';
import { etcdTtl, LeaseWitness } from './decode/leaseWitness.js';
import { leaderIndex, recordRaftMark, type RaftCheckDeps } from './recovery/raftMarks.js';
import { watchRewind } from './recovery/rewindWatch.js';
import { restoreFrom } from './recovery/restorePlan.js';
import {
  RESTORE_PAGE_SIZE,
  detectRestore,
  startFacts,
  endHistory,
  currentTimeline,
  ensureTimeline,
  etcdPosition,
  recordTimeline,
  rollBack,
  unfinishedRestore,
  type Position,
  type RestoreSeen,
  type Timeline,
  type UnfinishedRestore,
} from './recovery/restores.js';
import { SpoolShipper } from './sink/spoolShipper.js';
import { readFencedCheckpoint, writeCheckpoint } from './sink/offsets.js';
import { provenPosition } from './recovery/provenPosition.js';
import { writeRows, type RowWriteOptions } from './sink/rowWriter.js';
import { ReplayCheck } from './decode/replays.js';
import { tailerKeyOf, TailerPipeline, type PipelineHandle, type PipelineOptions } from './pipeline.js';
import type { TailerMetrics } from './tailerMetrics.js';
import type { RowBatch } from './types.js';
import { runReplica, type Leadership, type ReplicaPorts, type StartState, type TailEnd } from './replicaLoop.js';

export interface ReplicaOptions extends PipelineOptions {
  electionTtlSeconds?: number;
  /** etcd's compaction window (revisions); the lag alarm is raised at half. */
  compactionWindowRevisions?: number;
  clockIntervalMs?: number;
  /** Where fail-open spools live (<dataDir>/spool/<cluster>.jsonl); absent: no shipping. */
  dataDir?: string;
  spoolIntervalMs?: number;
  /** How often a running leader compares etcd's head and cluster id with what it captured (restore watch). Default 1000 ms. */
  restoreCheckIntervalMs?: number;
  /** How often a running leader records etcd's raft applied index for its timeline (raftMarks.ts). Default 5000 ms. */
  raftMarkIntervalMs?: number;
  /**
   * Keys read per etcd range and rows marked per statement by a gap or restore
   * (the snapshot, the divergence search, the rollback marks): bounds their
   * memory and each statement's size, whatever the keyspace. Default 5000.
   */
  restorePageSize?: number;
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
  /** The etcd client the replica campaigns, checks and reads with (default: connect()); handed over: close() closes it. */
  etcd?: Etcd3;
  /** A new connection to the cluster, one per catch-up window, closed when the window ends (default: createEtcdClient(cluster)). */
  connect?: () => Etcd3;
  /** The raft-log check of restore detection (default: each endpoint asked for its leader's committed index). */
  raft?: RaftCheckDeps;
}

export interface ReplicaStatus {
  cluster: string;
  replicaId: string;
  leader: boolean;
  watermark: string;
  head: string;
}

/** One leadership as this replica holds it: the election, and the clock and spool shipper it runs. */
interface Led extends Leadership {
  election: LeaderElection;
  clock: ClockWriter;
  shipper?: SpoolShipper;
}

/** How long close() waits for the run loop before it closes the etcd client under it (and once more after). */
const CLOSE_DEADLINE_MS = 20_000;

export class TailerReplica {
  readonly #deps: ReplicaDeps;
  readonly #opts: ReplicaOptions;
  #toldBeforeProofs = false;
  readonly #replicaId: string;
  readonly #client: Etcd3;
  readonly #connect: () => Etcd3;
  readonly #closing = new AbortController();
  readonly #labels: { cluster: string };
  #loop: Promise<void> | undefined;
  #closed: Promise<void> | undefined;
  #leader = false;
  /** Where the run loop is, for a close that has to give up on it. */
  #phase: 'campaign' | 'lead' | 'resign' | 'backoff' = 'campaign';
  #pipeline: PipelineHandle | undefined;
  /** Kept across this replica's runs: a leadership lost and won again (a pause, an etcd hiccup) keeps the evidence. */
  readonly #leases: LeaseWitness | undefined;
  /** The raft-log check of every restore detection: the leader's committed index, asked of each endpoint. */
  readonly #raft: RaftCheckDeps;
  #follow: { stop(): Promise<void> } | undefined;

  constructor(deps: ReplicaDeps, options: ReplicaOptions = {}) {
    this.#deps = deps;
    this.#opts = options;
    this.#replicaId = deps.replicaId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.#connect = deps.connect ?? (() => createEtcdClient(deps.cluster));
    this.#client = deps.etcd ?? this.#connect();
    this.#labels = { cluster: deps.cluster.name };
    this.#raft = deps.raft ?? { ask: (clusterId) => leaderIndex(deps.cluster.name, deps.cluster.endpoints, clusterId) };
    this.#leases =
      options.leaseWitness === false ? undefined : new LeaseWitness(etcdTtl(this.#client), deps.log, { log: storeEvidenceLog(deps.store, deps.cluster.name) });
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
    // The witness follows etcd from now, whatever capture is doing (a slow start, a catch-up, a restore being recorded).
    this.#follow ??= this.#leases?.follow(this.#client);
    this.#loop ??= runReplica(this.#ports(), this.#closing.signal, this.#deps.log).catch((err: Error) =>
      this.#deps.log.error({ err: err.message }, 'tailer replica stopped on an unexpected error'),
    );
  }

  /**
   * Stops reading, drains (the pipeline's own deadline), gives up leadership. Bounded: a loop still running
   * CLOSE_DEADLINE_MS after the abort is stuck on an etcd call that will not settle — it is logged with where it
   * was, and the etcd client is closed under it (its calls fail, the loop ends) rather than hang the caller.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort();
      if (this.#loop && !(await settlesWithin(this.#loop, CLOSE_DEADLINE_MS))) {
        this.#deps.log.error({ phase: this.#phase, deadlineMs: CLOSE_DEADLINE_MS }, 'tailer replica did not stop in time: closing its etcd client under it');
        this.#client.close();
        await settlesWithin(this.#loop, CLOSE_DEADLINE_MS);
      }
      if (this.#follow) await settlesWithin(this.#follow.stop(), 5_000); // a read under way on a dead etcd is closed with the client below
      await this.#leases?.close();
      this.#client.close();
    })();
    return this.#closed;
  }

  /** The loop's reads and writes over etcd and the store (replicaLoop.ts). */
  #ports(): ReplicaPorts<Led> {
    const { log, metrics } = this.#deps;
    const cluster = this.#deps.cluster.name;
    return {
      campaign: async (signal, onLost) => {
        const ttl = this.#opts.electionTtlSeconds ?? configDefaults.tailer.electionTtlSeconds;
        const election = new LeaderElection(this.#client, tailerElectionName(cluster), this.#replicaId, ttl);
        await election.campaign(signal, onLost);
        try {
          const clock = new ClockWriter(this.#client, log, this.#opts.clockIntervalMs ?? 1_000, tailerKeyOf(this.#opts));
          const shipper = this.#opts.dataDir
            ? new SpoolShipper(this.#deps.store, cluster, this.#opts.dataDir, log, (n) => metrics?.spoolShipped.inc(this.#labels, n), tailerKeyOf(this.#opts))
            : undefined;
          // Stamped on every row and checkpoint of this leadership: the store keeps the highest term's (sql/110).
          return { term: election.term(), election, clock, shipper };
        } catch (err) {
          // Won but not led: the loop reads this as a failed campaign, so the election is given back here (a
          // campaign key left behind would hold off every standby until its lease ran out).
          await election.resign();
          throw err;
        }
      },
      beginLeading: (led) => {
        log.info({ replica: this.#replicaId, term: led.term.toString() }, 'elected tailer leader');
        led.clock.start();
        led.shipper?.start(this.#opts.spoolIntervalMs ?? 5_000);
      },
      endLeading: async (led) => {
        led.clock.stop();
        await led.shipper?.stop();
      },
      resign: (led) => led.election.resign(),
      setLeader: (leader) => this.#setLeader(leader),
      readStart: () => this.#readStart(),
      restore: async (led, state, action) => {
        this.#leases?.forgetTimes(); // revisions of the restored etcd are not the ones its watch saw
        await this.#handleRestore(led.election, led.term, state.checkpoint, action.seen, state.timeline, state.gaps, action.unfinished);
      },
      gap: (led, state, to, signal) => this.#handleGap(led.election, led.term, state.checkpoint, to, state.gaps, signal, state.timeline),
      tail: (led, state, checkpoint, signal) => this.#tail(led, state, checkpoint, signal),
      sleep,
      phase: (phase) => {
        this.#phase = phase;
      },
    };
  }

  #setLeader(leader: boolean): void {
    this.#leader = leader;
    this.#deps.metrics?.leader.set(this.#labels, leader ? 1 : 0);
    this.#deps.onLeader?.(leader);
  }

  /** A start's facts, read once (docs/architecture.md, where a tailer starts): the checkpoint, etcd's position, the timeline, its gaps. */
  async #readStart(): Promise<StartState> {
    const { store } = this.#deps;
    const cluster = this.#deps.cluster.name;
    let checkpoint = (await this.#checkpointNow()).revision;
    const position = await etcdPosition(this.#client);
    let timeline = await ensureTimeline(store, cluster, position);
    let unfinished: UnfinishedRestore | undefined;
    // A finished restore whose record was removed is written again (restores.ts): read on from it, one
    // generation at a time, until the current one is read.
    for (;;) {
      let rewritten: number | undefined;
      unfinished = await unfinishedRestore(store, cluster, timeline.generation, tailerKeyOf(this.#opts), (generation, why) => {
        if (why === 'unproven') {
          this.#deps.log.error({ generation }, 'a restore gap with no timeline carries no tailer proof: not finished');
          this.#deps.health?.raise(alarm('LOCKAUDIT_ALARM_RESTORE_UNPROVEN', { cluster }, { generation }));
        } else {
          rewritten = generation;
          this.#deps.log.error({ generation }, 'a finished restore lost its timeline record: written again from its proven gap, not finished again');
          this.#deps.health?.raise(alarm('LOCKAUDIT_ALARM_TIMELINE_MISSING', { cluster }, { generation }));
        }
      });
      if (rewritten === undefined) break;
      const next = await currentTimeline(store, cluster);
      if (next?.generation !== rewritten) throw new Error(`the timeline record of generation ${rewritten} was written again but does not read back`);
      timeline = next;
      checkpoint = (await this.#checkpointNow()).revision; // the checkpoint in effect is the current timeline's
    }
    const gaps = await loadGaps(store, cluster, timeline.generation);
    return { checkpoint, position, timeline, gaps, unfinished, facts: startFacts(this.#client, store, cluster, timeline, this.#raft) };
  }

  /** One run of the pipeline from `checkpoint`, watched for a restore under it, until it ends. */
  async #tail(led: Led, state: StartState, checkpoint: bigint, signal: AbortSignal): Promise<TailEnd> {
    const { store, log } = this.#deps;
    const cluster = this.#deps.cluster.name;
    const { timeline, gaps } = state;
    const { election, clock, term } = led;
    // A restore under a running watch may leave it waiting at a future revision: watch for one and restart.
    // (A restore whose head is already past the checkpoint is found before the watch reopens: reconnectCheck.)
    const run = new AbortController();
    const stopRun = (): void => run.abort();
    signal.addEventListener('abort', stopRun, { once: true });
    let rewound: string | undefined;
    const stopRewindWatch = watchRewind({
      client: this.#client,
      clusterId: timeline.clusterId,
      captured: () => this.#pipeline?.watermark() ?? checkpoint,
      intervalMs: this.#opts.restoreCheckIntervalMs ?? 1_000,
      onRewound: (why) => {
        rewound ??= why;
        this.#leases?.forgetTimes();
        if (run.signal.aborted) return;
        log.error({ why }, 'etcd was rewound under the running watch: restarting to check the start position');
        run.abort();
      },
    });
    // Every reconnect goes through the start decision before a watch reopens: a restored etcd (it always
    // restarts) whose head passed the checkpoint would otherwise hand its own writes to the reopened watch
    // as if they followed ours. Windows that lost etcd together share one check.
    let checking: Promise<boolean> | undefined;
    const reconnectCheck = (): Promise<boolean> => {
      checking ??= (async () => {
        const now = await etcdPosition(this.#client);
        const seen = await detectRestore(this.#client, store, cluster, (await this.#checkpointNow()).revision, timeline, now, this.#raft);
        if (!seen) return !run.signal.aborted;
        rewound ??= seen.why;
        this.#leases?.forgetTimes();
        log.error({ why: seen.why }, 'etcd was restored while the watch was away: restarting to record it');
        run.abort();
        return false;
      })().finally(() => {
        checking = undefined;
      });
      return checking;
    };
    const pipeline = new TailerPipeline(
      {
        cluster,
        connect: this.#connect,
        client: this.#client,
        store,
        log,
        replicaId: this.#replicaId,
        clock,
        gaps,
        fence: () => election.stillLeader(),
        leases: this.#leases,
        metrics: this.#deps.metrics,
        alarm: this.#deps.health,
        onWatermark: this.#deps.onWatermark,
        onCheckpoint: this.#deps.onCheckpoint,
        timeline: timeline.timeline,
        term,
        beforeReopen: reconnectCheck,
      },
      {
        ...this.#opts,
        lagAlarmRevisions:
          this.#opts.lagAlarmRevisions ?? Math.floor((this.#opts.compactionWindowRevisions ?? configDefaults.tailer.compactionWindowRevisions) / 2),
      },
    );
    // How far etcd's raft log has got in this timeline, recorded as it goes: a later restart of that log is a restore.
    // A row only when the index moved past the last one written (an idle etcd adds no parts to the store).
    let marked = 0n;
    const markRaft = (): void => {
      recordRaftMark(this.#client, store, cluster, timeline.generation, timeline.clusterId, marked)
        .then((m) => {
          if (m !== undefined) marked = m;
        })
        .catch((err: Error) => log.debug({ err: err.message }, 'raft mark not recorded; next time'));
    };
    markRaft();
    const raftTimer = setInterval(markRaft, this.#opts.raftMarkIntervalMs ?? 5_000).unref();
    log.info({ checkpoint: checkpoint.toString() }, 'tailing from checkpoint');
    const handle = pipeline.start(checkpoint, run.signal);
    this.#pipeline = handle;
    const outcome = await handle.done.finally(() => {
      clearInterval(raftTimer);
      stopRewindWatch();
      signal.removeEventListener('abort', stopRun);
    });
    return { ...outcome, rewound };
  }

  /**
   * A restore (restores.ts): the captured history above the last revision
   * both timelines share stays, marked rolled back (or, when the cluster
   * shares nothing with it, superseded as an ended history), a `restore` gap
   * records both revisions and cluster ids, the alarm is raised, the holds
   * are snapshotted, and a new timeline resumes at the divergence (or, when
   * the restored history is compacted — a bumped restore — at its compaction
   * revision). The caller then campaigns again: the new timeline is captured
   * under a term of the restored etcd's own history.
   */
  async #handleRestore(
    election: LeaderElection,
    term: bigint,
    checkpoint: bigint,
    seen: RestoreSeen,
    timeline: Timeline,
    gaps: Gap[],
    unfinished?: UnfinishedRestore,
  ): Promise<void> {
    const { store, log, metrics, health } = this.#deps;
    const cluster = this.#deps.cluster.name;
    const generation = timeline.generation + 1;
    const pageSize = this.#opts.restorePageSize ?? RESTORE_PAGE_SIZE;
    // Finishing a restore recorded half-way: the divergence its gap recorded (the marked rows no longer show it).
    // One plan (restorePlan.ts): a rollback or a new history, the resume revision and the gap.
    const facts = startFacts(this.#client, store, cluster, timeline, this.#raft, pageSize);
    const plan = await restoreFrom(facts, { checkpoint, seen, lastHead: this.#pipeline?.head() ?? 0n, unfinished });
    const { after, resume, to, oldEnd, compacted, reason } = plan;
    log.error(
      {
        why: seen.why,
        divergedAfter: after.toString(),
        checkpoint: checkpoint.toString(),
        head: seen.head.toString(),
        clusterId: seen.clusterId,
        previousClusterId: seen.previousClusterId,
      },
      'etcd was restored: recording the discontinuity and following the restored cluster',
    );
    metrics?.gaps.inc(this.#labels);
    metrics?.restores.inc(this.#labels);
    if (plan.kind === 'new-history') {
      log.error(
        { why: seen.why, checkpoint: checkpoint.toString(), generation },
        'etcd shares nothing with the captured history: a new history, the captured one ended (nothing rolled back)',
      );
      health?.raise(alarm('LOCKAUDIT_ALARM_TAILER_NEW_HISTORY', { cluster }, { why: seen.why, to: oldEnd, generation }));
    } else {
      health?.raise(alarm('LOCKAUDIT_ALARM_TAILER_RESTORE', { cluster }, { why: seen.why, from: after + 1n, to: checkpoint }));
    }
    // Terms compare within one etcd history only: a rewound etcd may elect us below the old timeline's terms.
    await this.#assertCurrent(election, undefined, checkpoint, 'restore');
    // The gap first, before any row is marked: it is what a next leader finishes a half-recorded restore from
    // (unfinishedRestore). Marks written first and a kill before the gap (30-minute chaos run, realistic load:
    // tailer-kill during a bumped restore's marks) left the rolled-back rows hidden from the witnesses, so the next
    // start saw no restore at all and read the bump as a compaction (gap-unexplained, 289 overlaps, lost rows).
    const detectedAt = Date.now();
    const historyLost = compacted === undefined ? 0 : 1;
    // Signed, so the digest worker can tell the rows this restore marks (in periods already sealed) from a rewrite.
    const signed = {
      cluster,
      generation,
      fromRevision: (after + 1n).toString(),
      toRevision: to.toString(),
      detectedAtMs: detectedAt,
      historyLost,
      previousClusterId: seen.previousClusterId,
      clusterId: seen.clusterId,
    };
    const tailerKey = tailerKeyOf(this.#opts);
    await recordGap(store, {
      cluster,
      from_revision: signed.fromRevision,
      to_revision: signed.toRevision,
      detected_at: detectedAt,
      reason,
      kind: 'restore',
      history_lost: historyLost,
      generation,
      previous_cluster_id: seen.previousClusterId,
      cluster_id: seen.clusterId,
      term: term.toString(),
      ...(tailerKey ? { proof: restoreGapMac(tailerKey, signed) } : {}),
    });
    // Events a killed run made durable above the checkpoint without their grant rows: no replay writes those now.
    await completeGrantRows(store, cluster, timeline.timeline, checkpoint, plan.captured, term, gaps);
    if (plan.kind === 'new-history') {
      // The ended history's open grants: etcd no longer has them, when they ended is unknown (inside the restore gap).
      await closeGrantsEndedInGap(store, cluster, checkpoint, oldEnd, oldEnd, term);
      await endHistory(store, cluster, generation, term, pageSize);
    } else {
      await rollBack(store, cluster, after, generation, generation, term, pageSize);
    }
    if (compacted !== undefined) gaps.push({ from: after + 1n, to: compacted });
    const holds = !plan.snapshot
      ? 0
      : await this.#snapshot(
          resume,
          after,
          { retry: { initialMs: 100, maxMs: 5_000 }, timeline: generation, term, proofSecret: tailerKeyOf(this.#opts) },
          { skipPutAtRevision: compacted === undefined },
        );
    if (!(await election.stillLeader())) throw new Error('leadership lost during the restore snapshot');
    // History lost (a bumped restore): grants open at the divergence and not held now ended inside the gap.
    if (compacted !== undefined && !plan.compactedSince) await closeGrantsEndedInGap(store, cluster, after, compacted, compacted, term);
    await recordTimeline(store, {
      cluster,
      generation,
      seen,
      previousCheckpoint: checkpoint,
      divergedAfter: after,
      resumeRevision: resume,
      sharesHistory: plan.kind === 'rollback',
    });
    log.warn({ holds, generation, resume: resume.toString() }, 'restore recorded; following the restored cluster');
  }

  /**
   * The holds alive at `revision` as snapshot rows (gaps.ts), their origin judged as a watched put's: the
   * proof and its lease (core/proof.ts holdOrigin), then the replay check (replays.ts). A foreign hold seen only
   * here — written while no tailer ran — is alarmed and counted like a watched foreign grant; the alert
   * sinks deliver it as a `foreign-grant` (exporters/alerts/events.sql). Returns how many holds it wrote.
   */
  async #snapshot(revision: bigint, checkpoint: bigint, writeOptions: RowWriteOptions, options: { skipPutAtRevision?: boolean } = {}): Promise<number> {
    const { store, log, metrics, health } = this.#deps;
    const cluster = this.#deps.cluster.name;
    const secret = this.#opts.originSecret;
    const replays = secret
      ? new ReplayCheck(store, cluster, (r) => {
          const key = `${PREFIX.hold}${r.key}`;
          log.error(
            { key, grantRevision: r.grantRevision, firstRevision: r.firstRevision },
            "a copy of a real grant's hold value, seen in a snapshot: recorded foreign",
          );
          health?.raise(
            alarm(
              'LOCKAUDIT_ALARM_FOREIGN_WRITE',
              { cluster },
              { what: 'copy of a real hold (replay)', key, revision: r.grantRevision, where: 'grant history, origin=foreign' },
            ),
          );
        })
      : undefined;
    const write = async (batch: RowBatch): Promise<void> => {
      await replays?.mark(batch);
      await writeRows(store, batch, writeOptions);
    };
    const seen = await snapshotHolds(this.#client, cluster, revision, checkpoint, write, this.#opts.restorePageSize ?? RESTORE_PAGE_SIZE, {
      ...options,
      originSecret: secret,
      capturedStarts: capturedStarts(store, cluster, writeOptions.timeline ?? 0),
    });
    if (seen.foreign.length > 0) {
      const first = seen.foreign[0] as { key: string; grantRevision: string };
      log.error(
        { foreign: seen.foreign.length, key: `${PREFIX.hold}${first.key}`, grantRevision: first.grantRevision },
        'holds not made by the lock API, written while no tailer watched: recorded foreign',
      );
      metrics?.bypass.inc({ cluster, kind: 'foreign-grant' }, seen.foreign.length);
      health?.raise(
        alarm(
          'LOCKAUDIT_ALARM_FOREIGN_WRITE',
          { cluster },
          { what: 'hold (seen only in a snapshot)', key: `${PREFIX.hold}${first.key}`, revision: first.grantRevision, where: 'grant history, origin=foreign' },
        ),
      );
    }
    return seen.holds;
  }

  /** Gap record, alarm, snapshot at the compaction revision, checkpoint there. Returns the new checkpoint. */
  async #handleGap(
    election: LeaderElection,
    term: bigint,
    checkpoint: bigint,
    compacted: bigint,
    gaps: Gap[],
    signal: AbortSignal,
    current: Timeline,
  ): Promise<bigint> {
    const timeline = current.timeline;
    const { store, log, metrics, health } = this.#deps;
    const cluster = this.#deps.cluster.name;
    const from = checkpoint + 1n;
    const reason = `etcd compacted history up to revision ${compacted} before the tailer captured it (checkpoint ${checkpoint})`;
    // Only a leader recording from the checkpoint in effect records a gap: a deposed one's checkpoint is stale.
    await this.#assertCurrent(election, term, checkpoint, 'gap');
    log.error({ from: from.toString(), to: compacted.toString() }, 'history lost: recording a gap and resuming from a snapshot');
    metrics?.gaps.inc(this.#labels);
    health?.raise(alarm('LOCKAUDIT_ALARM_TAILER_GAP', { cluster }, { from, to: compacted }));
    // Recorded with its timeline's generation: it belongs to that timeline (an alert sink delivers it there, sql/120).
    await recordGap(store, {
      cluster,
      from_revision: from.toString(),
      to_revision: compacted.toString(),
      detected_at: Date.now(),
      reason,
      generation: current.generation,
      term: term.toString(),
    });
    gaps.push({ from, to: compacted });
    // Events a killed run made durable above the checkpoint without their grant rows: no replay writes those now.
    await completeGrantRows(store, cluster, timeline, checkpoint, compacted, term, gaps);
    const holds = await this.#snapshot(compacted, checkpoint, {
      retry: { initialMs: 100, maxMs: 5_000, signal },
      timeline,
      term,
      proofSecret: tailerKeyOf(this.#opts),
    });
    if (!(await election.stillLeader())) throw new Error('leadership lost during the snapshot');
    await closeGrantsEndedInGap(store, cluster, checkpoint, compacted, compacted, term);
    const wrote = await writeCheckpoint(store, {
      cluster,
      revision: compacted,
      leader: this.#replicaId,
      term,
      timeline,
      fence: () => election.stillLeader(),
      secret: tailerKeyOf(this.#opts),
    });
    if (wrote.kind === 'not-leader') throw new Error('leadership lost during the snapshot');
    log.warn({ holds, revision: compacted.toString() }, 'snapshot written; resuming after it');
    return wrote.kind === 'behind' ? wrote.stored : compacted;
  }

  /**
   * The checkpoint in effect, taken only as far as a proven row stands behind it (provenPosition.ts): with the
   * tailer's key, an unproven one is alarmed and the highest proven position is used — a replay, never a skip.
   */
  async #checkpointNow(): Promise<Position> {
    const { store, log, health } = this.#deps;
    const cluster = this.#deps.cluster.name;
    const inEffect = await readFencedCheckpoint(store, cluster);
    const secret = tailerKeyOf(this.#opts);
    if (!secret) return inEffect;
    const checked = await provenPosition(store, cluster, secret, inEffect);
    if (checked.unproven) {
      const claimed = checked.unproven;
      log.error(
        { claimed: claimed.revision.toString(), term: claimed.term.toString(), resume: checked.position.revision.toString() },
        'the checkpoint in effect carries no proof: resuming from the highest proven position',
      );
      health?.raise(
        alarm('LOCKAUDIT_ALARM_RESUME_UNPROVEN', { cluster }, { claimed: claimed.revision, term: claimed.term, resume: checked.position.revision }),
      );
    } else if (checked.beforeProofs && !this.#toldBeforeProofs) {
      this.#toldBeforeProofs = true;
      log.warn(
        { checkpoint: inEffect.revision.toString() },
        'the checkpoint was written before checkpoints carried proofs: resuming from it (the next one written carries a proof)',
      );
    }
    return checked.position;
  }

  /**
   * Before a gap or a restore is recorded from `checkpoint`: we still lead
   * (etcd), no later term's checkpoint is stored (`term`; undefined: not
   * compared), and `checkpoint` is still the one in effect. Otherwise it is
   * stale — a successor moved on — and nothing is recorded (the run starts
   * over from what is stored).
   */
  async #assertCurrent(election: LeaderElection, term: bigint | undefined, checkpoint: bigint, what: string): Promise<void> {
    if (!(await election.stillLeader())) throw new Error(`leadership lost before recording a ${what}`);
    const now = await this.#checkpointNow();
    if (term !== undefined && now.term > term)
      throw new Error(`a later leader's checkpoint (term ${now.term}, ours ${term}) is stored: no ${what} recorded from ours`);
    if (now.revision !== checkpoint) throw new Error(`the checkpoint moved from ${checkpoint} to ${now.revision}: no ${what} recorded from a stale checkpoint`);
  }
}
