// A tailer replica's control flow, with every read and write behind ReplicaPorts: campaign; once elected,
// start the leader's duties; read the start's facts once; decide (startOf); carry out one action — record a
// restore (then campaign again: the restored timeline is captured under a term of the restored etcd), record
// a compaction gap, tail — and when a run ends, read and decide again. Nothing here talks to etcd or the
// store, so the whole loop runs in unit tests on recorded facts (test/unit/replicaLoop.test.ts);
// TailerReplica (replica.ts) supplies the ports over etcd and the store.
import type { Logger } from '../core/logger.js';
import { Backoff } from '../platform/retry.js';
import type { Gap } from './recovery/gaps.js';
import { restoreSeen, type EtcdPosition, type RestoreSeen, type Timeline, type UnfinishedRestore } from './recovery/restores.js';
import { startFrom, type StartFacts } from './recovery/startDecision.js';
import type { StopReason } from './pipeline.js';

/** One won election: its term is stamped on every row and checkpoint written under it. */
export interface Leadership {
  readonly term: bigint;
}

/** What a start reads, once, before it decides. */
export interface StartState {
  /** The checkpoint in effect, taken as far as a proven row stands behind it. */
  checkpoint: bigint;
  position: EtcdPosition;
  timeline: Timeline;
  /** The timeline's recorded gaps (a gap recorded by this start is added to it). */
  gaps: Gap[];
  /** A restore whose gap was recorded but not its timeline: finished before anything else. */
  unfinished?: UnfinishedRestore;
  /** The further facts the decision may ask (etcd's history, the raft log, captured rows), each only if needed. */
  facts: StartFacts;
}

/** The one action a start carries out. */
export type StartAction =
  { kind: 'resume'; from: bigint } | { kind: 'gap'; from: bigint; to: bigint } | { kind: 'restore'; seen: RestoreSeen; unfinished?: UnfinishedRestore };

/** How a run of the pipeline ended; `rewound`: a restore was seen under it (the start is decided again at once). */
export interface TailEnd {
  reason: StopReason;
  checkpoint: bigint;
  error?: Error;
  rewound?: string;
}

export type ReplicaPhase = 'campaign' | 'lead' | 'resign' | 'backoff';

export interface ReplicaPorts<L extends Leadership> {
  /** Campaigns until elected; `onLost`: the election's lease was lost while leading. Rejects on a failed campaign. */
  campaign(signal: AbortSignal, onLost: (err: Error) => void): Promise<L>;
  /** Elected: start what a leader runs beside capture (the clock writer, the spool shipper). */
  beginLeading(leader: L): void;
  /** Stops those. */
  endLeading(leader: L): Promise<void>;
  /** Gives leadership up — last: a standby takes over only once this replica has stopped writing. */
  resign(leader: L): Promise<void>;
  setLeader(leader: boolean): void;
  readStart(): Promise<StartState>;
  /** Records the restore (gap, marks, snapshot, new timeline); the loop then campaigns again. */
  restore(leader: L, state: StartState, action: Extract<StartAction, { kind: 'restore' }>): Promise<void>;
  /** Records the compaction gap and a snapshot; returns the checkpoint to tail from. */
  gap(leader: L, state: StartState, to: bigint, signal: AbortSignal): Promise<bigint>;
  /** Tails from `checkpoint` until the run ends. */
  tail(leader: L, state: StartState, checkpoint: bigint, signal: AbortSignal): Promise<TailEnd>;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  phase?(phase: ReplicaPhase): void;
}

/**
 * The start decided from what was read: a restore recorded half-way is finished first (looking for it again
 * would find nothing: its rows are marked), else startFrom decides a restore, a gap or a resume.
 */
export async function startOf(state: StartState): Promise<StartAction> {
  const { checkpoint, position, timeline, unfinished } = state;
  if (unfinished) {
    const seen = {
      head: position.head,
      clusterId: position.clusterId,
      previousClusterId: unfinished.previousClusterId || timeline.clusterId,
      captured: checkpoint,
      why: unfinished.why,
    };
    return { kind: 'restore', seen, unfinished };
  }
  const start = await startFrom(state.facts, checkpoint, timeline.clusterId, position);
  return start.kind === 'restore' ? { kind: 'restore', seen: restoreSeen(start, timeline, position) } : start;
}

/** Campaign, lead, resign — until `closing` is aborted. A failed campaign is retried with backoff. */
export async function runReplica<L extends Leadership>(ports: ReplicaPorts<L>, closing: AbortSignal, log: Logger): Promise<void> {
  const backoff = new Backoff({ initialMs: 500, maxMs: 10_000 });
  while (!closing.aborted) {
    const leaderAbort = new AbortController();
    const stopLeading = (): void => leaderAbort.abort();
    closing.addEventListener('abort', stopLeading, { once: true });
    ports.phase?.('campaign');
    let leader: L;
    try {
      leader = await ports.campaign(closing, (err) => {
        log.error({ err: err.message }, 'election lease lost: stopping before the next checkpoint write');
        leaderAbort.abort();
      });
    } catch (err) {
      closing.removeEventListener('abort', stopLeading);
      if (closing.aborted) break;
      log.warn({ err: (err as Error).message }, 'campaign failed; retrying');
      ports.phase?.('backoff');
      await ports.sleep(backoff.next(), closing);
      continue;
    }
    backoff.reset();
    ports.setLeader(true);
    try {
      ports.beginLeading(leader);
      ports.phase?.('lead');
      await lead(ports, leader, leaderAbort.signal, log);
    } catch (err) {
      log.error({ err: (err as Error).message }, 'tailer leader run failed');
      await ports.sleep(1_000, closing);
    } finally {
      closing.removeEventListener('abort', stopLeading);
      await ports.endLeading(leader);
      ports.setLeader(false);
      ports.phase?.('resign');
      await ports.resign(leader);
    }
  }
}

/** One leadership: read, decide, act; again after each run that ends on an error or a restore seen under it. */
async function lead<L extends Leadership>(ports: ReplicaPorts<L>, leader: L, signal: AbortSignal, log: Logger): Promise<void> {
  while (!signal.aborted) {
    const state = await ports.readStart();
    const action = await startOf(state);
    if (action.kind === 'restore') {
      if (action.unfinished)
        log.warn(
          { generation: action.unfinished.generation, why: action.unfinished.why },
          'a restore was recorded half-way (its gap, not its timeline): finishing it',
        );
      await ports.restore(leader, state, action);
      log.warn({ term: leader.term.toString() }, 'restore recorded: campaigning again in the restored etcd before capturing its timeline');
      return;
    }
    let checkpoint = state.checkpoint;
    if (action.kind === 'gap') checkpoint = await ports.gap(leader, state, action.to, signal);
    // Closed or deposed during the checks above: an abort that already happened fires no listener, and a run
    // started now would tail on with nobody to stop it.
    if (signal.aborted) return;
    const end = await ports.tail(leader, state, checkpoint, signal);
    if (end.rewound !== undefined && !signal.aborted) continue;
    if (end.reason === 'stopped' || end.reason === 'leadership-lost') return;
    log.warn(
      { reason: end.reason, err: end.error?.message, checkpoint: end.checkpoint.toString() },
      'tailer run ended; checking compaction and restarting from the checkpoint',
    );
    await ports.sleep(500, signal);
  }
}
