// What a restore records, decided in one pure function (docs/architecture.md,
// where a tailer starts): a rollback to where etcd and the captured history
// part, or a new history when they share nothing; where capture resumes; how
// far the restore gap reaches; whether history was lost (a bumped restore's
// compacted revisions) and what the new timeline snapshots. The replica reads
// the two facts it needs (the divergence, etcd's compaction after it) and
// carries the plan out; tests decide plans from recorded or edited facts.
import type { RestoreSeen, UnfinishedRestore } from './restores.js';
import type { StartFacts } from './startDecision.js';

export interface RestoreInput {
  /** The checkpoint in effect of the ended timeline. */
  checkpoint: bigint;
  seen: RestoreSeen;
  /**
   * The last revision etcd shares with the captured history (restores.ts divergence), or undefined when it
   * shares nothing. A restore recorded half-way gives its own answer instead (`unfinished`).
   */
  shared: bigint | undefined;
  /** etcd's compaction revision when history after the divergence is lost (gaps.ts lostAfter), else undefined. */
  lost: bigint | undefined;
  /** The highest head the last run's watch saw etcd reach (0 when none ran). */
  lastHead: bigint;
  /** A restore recorded half-way (its gap, not its timeline), being finished. */
  unfinished?: UnfinishedRestore;
}

export interface RestorePlan {
  /** A rollback to `after`, or a new history: etcd shares nothing with the captured one, which ends (nothing rolled back). */
  kind: 'rollback' | 'new-history';
  /** The last revision of the ended timeline that stays (0 for a new history). */
  after: bigint;
  /** Capture follows the restored etcd from resume + 1. */
  resume: bigint;
  /** The restore gap: after + 1 .. to. */
  to: bigint;
  /** The highest revision captured in the ended timeline: the checkpoint, or rows durable above it. */
  captured: bigint;
  /** As far as the ended timeline is known to have gone (captured, or seen by the last run's watch). */
  oldEnd: bigint;
  /** The compaction revision the restore lost history to (a bumped restore), or undefined. */
  compacted: bigint | undefined;
  /** etcd compacted further since a first try of this restore: the rest is the new timeline's own gap. */
  compactedSince: boolean;
  /** The new timeline snapshots etcd's holds at `resume` (nothing to snapshot for a new history read from 0, or when compacted since). */
  snapshot: boolean;
  /** The gap's reason, as recorded. */
  reason: string;
}

/** Which divergence a restore uses: a half-recorded restore's own, else the one read (`divergence`, asked only then). */
export function sharedOf(unfinished: UnfinishedRestore | undefined, divergence: () => Promise<bigint | undefined>): Promise<bigint | undefined> {
  if (unfinished) return Promise.resolve(unfinished.newHistory ? undefined : unfinished.after);
  return divergence();
}

/**
 * A restore's plan from the facts it asks (restores.ts startFacts; tests replay recorded ones): the divergence
 * (unless a half-recorded restore gives its own), then etcd's compaction after it, then planRestore.
 */
export async function restoreFrom(facts: Pick<StartFacts, 'divergence' | 'lostAfter'>, input: Omit<RestoreInput, 'shared' | 'lost'>): Promise<RestorePlan> {
  const shared = await sharedOf(input.unfinished, () => facts.divergence(input.checkpoint));
  const lost = await facts.lostAfter(shared ?? 0n);
  return planRestore({ ...input, shared, lost });
}

const max = (...xs: bigint[]): bigint => xs.reduce((a, b) => (b > a ? b : a));

export function planRestore(input: RestoreInput): RestorePlan {
  const { checkpoint, seen, shared, lost, lastHead, unfinished } = input;
  // Sharing nothing: a new history from revision 0, not a rollback of everything.
  const after = shared ?? 0n;
  // Finishing a bumped restore after etcd compacted the restored history further (the chaos run's compact fault
  // between the two tries): the restore lost history only up to where its first try found etcd compacted; what
  // was compacted since is the new timeline's own loss, recorded as a compaction gap by the next start.
  // Likewise a restore whose first try found nothing compacted (a restore without a bump): a compaction since is
  // of the new timeline only, not the restore's — else its lost revisions hid in the restore gap.
  const compacted =
    unfinished && !unfinished.historyLost
      ? undefined
      : unfinished?.compactedAt !== undefined && lost !== undefined && lost > unfinished.compactedAt
        ? unfinished.compactedAt
        : lost;
  const compactedSince = compacted !== lost;
  const resume = compacted ?? after;
  // The gap reaches as far as the rolled-back timeline is known to have gone: changes the tailer saw etcd reach
  // (the last run's head) but had not captured before the restore are lost too. (A bumped restore's revisions
  // continue above `resume`: a head seen there is the new timeline's.)
  const seenHead = resume > checkpoint && lastHead > resume ? resume : lastHead;
  const captured = max(seen.captured, checkpoint); // rows durable above the checkpoint roll back too
  const oldEnd = max(seenHead, captured);
  const to = max(resume, oldEnd, unfinished?.to ?? 0n); // never narrower than the gap a first try recorded
  const reason =
    shared === undefined
      ? `restore: ${seen.why}; etcd shares nothing with the captured history (no key it holds matches a captured put): revisions 1..${oldEnd} (captured up to ${checkpoint}; cluster id ${seen.previousClusterId}) belong to the ended timeline, not rolled back; capture follows the new cluster (cluster id ${seen.clusterId}, head ${seen.head}) from revision ${resume + 1n}`
      : `restore: ${seen.why}; revisions ${after + 1n}..${oldEnd} at least (captured up to ${checkpoint}; cluster id ${seen.previousClusterId}) were rolled back — ${oldEnd} is as far as the tailer saw the old timeline go: what it committed after that, before it stopped, no reader saw and the restore erased; capture follows the restored cluster (cluster id ${seen.clusterId}, head ${seen.head}) from revision ${resume + 1n}`;
  // A new history read from its revision 0 has nothing before it to snapshot: the watch captures every hold's put.
  // (Compacted since: etcd can no longer be read at `resume`; the next start's compaction gap snapshots instead.)
  const snapshot = !(compactedSince || (shared === undefined && compacted === undefined));
  return { kind: shared === undefined ? 'new-history' : 'rollback', after, resume, to, captured, oldEnd, compacted, compactedSince, snapshot, reason };
}
