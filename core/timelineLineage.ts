// Where one etcd timeline's history is still another's. A restore starts a
// new timeline (generation) that shares its predecessor's revisions up to its
// divergence (etcd_timelines.diverged_after) — or nothing, for an etcd rebuilt
// empty. An earlier timeline's record (a gap, a grant) at or below every
// divergence since is the later timeline's too. The state view and the
// tailer's start-unknown gaps both read the lineage this one way.

/** A timeline of a cluster's etcd and where it branched off the one before it (an etcd_timelines row). */
export interface TimelineBranch {
  generation: number | string;
  /** The last revision it shares with the timeline before it. */
  diverged_after: string;
  /** 0: a history that shares nothing with the one before (a rebuilt etcd). */
  shares_history?: number | string;
}

/**
 * The last revision timeline `from` shares with the later timeline `to`: the lowest branch point on the way, 0n when a
 * timeline between them shares nothing or was never recorded (nothing shared is proven).
 */
export function sharedRevision(timelines: readonly TimelineBranch[], from: number, to: number): bigint {
  const branch = new Map(timelines.map((t) => [Number(t.generation), Number(t.shares_history ?? 1) === 0 ? 0n : BigInt(t.diverged_after)]));
  let upTo: bigint | undefined;
  for (let t = from + 1; t <= to; t++) {
    const b = branch.get(t) ?? 0n;
    upTo = upTo === undefined || b < upTo ? b : upTo;
  }
  return upTo ?? 0n;
}
