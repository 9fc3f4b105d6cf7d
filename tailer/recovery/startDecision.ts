// Where a tailer starts (docs/architecture.md, where a tailer starts): resume after the
// checkpoint, record a compaction gap, or record a restore. decideStart is pure:
// the caller hands the answers in. startFrom asks the facts it needs of a
// StartFacts (restores.ts startFacts reads etcd and the store; tests replay
// facts recorded from real runs) and decides once.
//
// Invariant: a restore is never inferred from a sample of keys. The proof is
// the checkpoint's own witnesses — puts the tailer captured at or below the
// checkpoint, or above it when a run made rows durable beyond a checkpoint held
// back (the latest put(s), the latest /sys/clock write) — each checked
// against etcd's history at the witness's own revision:
//   - revision readable: etcd must hold that very put there (same key, mod
//     revision and value). A restored etcd whose head has passed the old
//     checkpoint again holds other writes at those revisions.
//   - revision compacted (a `--bump-revision --mark-compacted` restore, or a
//     plain compaction): read at the compaction revision, the key may be
//     absent (deleted since) or newer, but never at a mod revision below the
//     put captured (keys do not go back in time) nor at the same one with
//     another value.
// The tailer writes /sys/clock about once a second, so a restore to a
// snapshot older than the last captured clock write is found whatever was
// written after it (fresh keys only, a burst of grants) and however far the
// restored head has moved on.
// Order: cluster id, head below the checkpoint, witnesses; then compaction.

import { isKeptValueOf } from '../../core/valueBound.js';

/** A put the tailer captured at or below the checkpoint (or the highest revision captured above it). */
export interface Witness {
  key: string;
  revision: bigint;
  /** The value as captured: whole, or (with `sha256` set) its kept prefix (core/valueBound.ts). */
  value: string;
  /** Set when `value` is only a prefix: the whole value's size in bytes and sha256 (hex). */
  bytes?: number;
  sha256?: string;
}

/** Whether etcd's value is the one captured (a kept prefix compares by size and sha256). */
function capturedValueIs(w: Witness, etcdValue: string): boolean {
  return isKeptValueOf({ value: w.value, bytes: w.bytes ?? 0, sha256: w.sha256 ?? '' }, etcdValue);
}

/** What etcd holds for a witness's key: at the witness's revision (`history`) or, when that is compacted, at the compaction revision. */
export interface WitnessReading {
  witness: Witness;
  read: 'history' | 'at-compaction';
  /** The kv etcd returned; undefined: the key is absent there. */
  kv?: { modRevision: bigint; value: string };
}

export interface StartInput {
  /** The checkpoint in effect (readPosition). */
  checkpoint: bigint;
  /**
   * The highest revision captured (durable rows of the current timeline), when above the checkpoint: a run's
   * rows can be durable beyond a checkpoint held back. Witnesses reach up to it, and a head below it is a
   * rewind. Default: the checkpoint.
   */
  captured?: bigint;
  /** The cluster id of the current timeline. */
  timelineClusterId: string;
  /** etcd now. */
  head: bigint;
  clusterId: string;
  /** etcd's compaction revision when history after the checkpoint is no longer complete (lostAfter), else undefined. */
  compactRevision?: bigint;
  witnesses: readonly WitnessReading[];
}

export type StartDecision = { kind: 'resume'; from: bigint } | { kind: 'gap'; from: bigint; to: bigint } | { kind: 'restore'; why: string };

/** Which read a witness needs: at its own revision, unless etcd compacted it. */
export function readFor(witness: Witness, compactRevision: bigint | undefined): 'history' | 'at-compaction' {
  return compactRevision !== undefined && witness.revision < compactRevision ? 'at-compaction' : 'history';
}

export function decideStart(input: StartInput): StartDecision {
  const { checkpoint, head, clusterId, timelineClusterId, compactRevision } = input;
  if (checkpoint < 0n || head < 0n) throw new RangeError('revisions are never negative');
  if (clusterId !== timelineClusterId) return { kind: 'restore', why: `etcd's cluster id changed from ${timelineClusterId} to ${clusterId}` };
  if (head < checkpoint) return { kind: 'restore', why: `etcd's head revision ${head} is below the checkpoint ${checkpoint}` };
  const captured = input.captured !== undefined && input.captured > checkpoint ? input.captured : checkpoint;
  if (head < captured)
    return { kind: 'restore', why: `etcd's head revision ${head} is below revision ${captured}, captured above the checkpoint ${checkpoint}` };
  for (const r of input.witnesses) {
    const contradiction = contradicts(r, captured);
    if (contradiction) return { kind: 'restore', why: contradiction };
  }
  if (compactRevision !== undefined && compactRevision > checkpoint) return { kind: 'gap', from: checkpoint + 1n, to: compactRevision };
  return { kind: 'resume', from: checkpoint + 1n };
}

/** Why etcd's answer cannot follow from the captured put, or undefined when it can. */
export function contradicts(r: WitnessReading, checkpoint: bigint): string | undefined {
  const w = r.witness;
  if (w.revision > checkpoint) throw new RangeError(`witness ${w.key} at ${w.revision} is above the checkpoint ${checkpoint}`);
  const kv = r.kv;
  if (r.read === 'history') {
    if (!kv) return `${w.key} was captured put at revision ${w.revision} but etcd's revision ${w.revision} has no such key`;
    if (kv.modRevision !== w.revision)
      return `${w.key} was captured put at revision ${w.revision} but etcd's history there has it last put at revision ${kv.modRevision}`;
    if (!capturedValueIs(w, kv.value)) return `${w.key} was captured put at revision ${w.revision} with another value than etcd holds there`;
    return undefined;
  }
  if (!kv || kv.modRevision > w.revision) return undefined; // deleted or written again since: consistent
  if (kv.modRevision < w.revision) return `${w.key} was captured put at revision ${w.revision} but etcd has it back at revision ${kv.modRevision}`;
  if (!capturedValueIs(w, kv.value)) return `${w.key} was captured put at revision ${w.revision} with another value than etcd holds at that revision`;
  return undefined;
}

/**
 * The facts a start reads beyond etcd's position, each asked once and only when the decision still needs it: a
 * witness cannot be read above a rewound head, nor the raft log asked of a cluster that is another one.
 */
export interface StartFacts {
  /** The highest revision captured (durable rows of the current timeline) when above the checkpoint, else the checkpoint. */
  captured(checkpoint: bigint): Promise<bigint>;
  /** Why etcd's raft log shows it restarted since the timeline's mark (a restore whatever was written), or undefined. */
  raftRestarted(): Promise<string | undefined>;
  /** etcd's compaction revision when history after the checkpoint is no longer complete, else undefined. */
  compactRevision(checkpoint: bigint): Promise<bigint | undefined>;
  /** etcd's answer for each of the checkpoint's witnesses (captured puts up to `captured`). */
  witnesses(captured: bigint, compactRevision: bigint | undefined): Promise<WitnessReading[]>;
  /** Asked of a restore only (restorePlan.ts restoreFrom): the last revision etcd shares with the captured history, or undefined when it shares nothing. */
  divergence(checkpoint: bigint): Promise<bigint | undefined>;
  /** Asked of a restore only: etcd's compaction revision when history after `after` is no longer complete, else undefined. */
  lostAfter(after: bigint): Promise<bigint | undefined>;
}

/** A start decided: a restore carries the highest revision captured in the timeline it ends. */
export type Start = { kind: 'restore'; why: string; captured: bigint } | Exclude<StartDecision, { kind: 'restore' }>;

/**
 * Where a run starts, decided once: etcd's cluster id and head first (no other read when they already show a
 * restore), then the raft log, then the compaction revision and the witnesses read at their revisions. A gap's
 * end is the compaction revision read here: the run records the gap from this answer, with no second search.
 */
export async function startFrom(
  facts: StartFacts,
  checkpoint: bigint,
  timelineClusterId: string,
  position: { head: bigint; clusterId: string },
): Promise<Start> {
  const captured = await facts.captured(checkpoint);
  const base = { checkpoint, captured, timelineClusterId, head: position.head, clusterId: position.clusterId };
  const first = decideStart({ ...base, witnesses: [] });
  if (first.kind === 'restore') return { ...first, captured };
  const restarted = await facts.raftRestarted();
  if (restarted) return { kind: 'restore', why: restarted, captured };
  const compactRevision = await facts.compactRevision(checkpoint);
  const decision = decideStart({ ...base, compactRevision, witnesses: await facts.witnesses(captured, compactRevision) });
  return decision.kind === 'restore' ? { ...decision, captured } : decision;
}
