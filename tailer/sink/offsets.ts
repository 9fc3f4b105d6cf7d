// The checkpoint's one home: the highest revision up to which every change of
// a cluster is durable in the audit store. Read here (the tailer at each
// start, the API for /v1/tailers) and written here, behind the leadership
// fence. Each row carries the writer's leadership term and etcd timeline
// (sql/110): the checkpoint in effect is the current timeline's highest
// term's highest row (grants/checkpointInEffect.sql, the one definition), so a deposed leader's late
// checkpoint never counts over its successor's, nor for the next timeline.
// Within one term it never moves backwards whatever the timing: readers take
// the highest row, and the writer never writes below what is stored. An etcd
// restore (restores.ts) starts a new timeline, whose checkpoint starts again
// at its resume revision.
import type { AuditStore } from '../../core/clickhouse.js';
import { checkpointMac } from '../../core/proof.js';
import { loadSql } from '../../platform/sql.js';
import { provenPosition } from '../recovery/provenPosition.js';
import { readPosition, type Position } from '../recovery/restores.js';

const READ_ALL = loadSql('grants/checkpointInEffect.sql');

export interface StoredCheckpoint {
  cluster: string;
  revision: bigint;
  leader: string;
}

/** The cluster's checkpoint in its current etcd timeline (0n: none yet). */
export async function readCheckpoint(store: AuditStore, cluster: string): Promise<bigint> {
  return (await readFencedCheckpoint(store, cluster)).revision;
}

/** The cluster's checkpoint in effect with the term of the leader that wrote it (0n: written before sql/110, or none). */
export async function readFencedCheckpoint(store: AuditStore, cluster: string): Promise<Position> {
  return readPosition(store, cluster);
}

/** Every cluster's checkpoint, by name. */
export async function readCheckpoints(store: AuditStore): Promise<Map<string, StoredCheckpoint>> {
  const rows = await store.rows<{ cluster: string; revision: string; leader: string }>(READ_ALL.text);
  return new Map(rows.map((r) => [r.cluster, { cluster: r.cluster, revision: BigInt(r.revision), leader: r.leader }]));
}

export type CheckpointWrite =
  /** The row is in the store. */
  | { kind: 'written'; revision: bigint }
  /** The store already holds this revision or a higher one of our term (a replay): nothing written. */
  | { kind: 'behind'; stored: bigint }
  /** The fence said we no longer lead, or the store holds a higher term's checkpoint (a successor's): nothing written. */
  | { kind: 'not-leader' };

export interface CheckpointWriteRequest {
  cluster: string;
  revision: bigint;
  /** Who writes (the replica id), kept with the row. */
  leader: string;
  /** The writer's leadership term (LeaderElection.term()). */
  term: bigint;
  /** The etcd timeline the writer captures (etcd_timelines.timeline). */
  timeline: number;
  /**
   * Re-checks leadership in etcd right before the insert. A rejection (etcd
   * did not answer) propagates: the caller decides whether to try again.
   */
  fence: () => Promise<boolean>;
  /** The tailer's key: the row carries its proof (sql/230), and a stored row that would hold this write back counts only when proven. */
  secret?: Buffer;
}

/**
 * Writes `revision` as the cluster's checkpoint if we still lead, no higher
 * term wrote one, and it is above what our term stored. A lower term's
 * checkpoint above it does not hold it back: that is a deposed leader's, and
 * ours replaces it (its rows at those revisions are replaced by ours). A
 * writer that stalls after these checks can still insert late, but readers
 * take the highest term's highest row, so it never shows.
 */
export async function writeCheckpoint(store: AuditStore, req: CheckpointWriteRequest): Promise<CheckpointWrite> {
  let stored = await readFencedCheckpoint(store, req.cluster);
  // A row that would hold this write back is obeyed only when proven: a forged higher term would otherwise depose
  // every leader, a forged higher revision stop the checkpoint for good (provenPosition.ts).
  const holdsBack = stored.term > req.term || (stored.revision >= req.revision && stored.term === req.term);
  if (holdsBack && req.secret) stored = (await provenPosition(store, req.cluster, req.secret, stored)).position;
  if (stored.term > req.term) return { kind: 'not-leader' };
  if (stored.revision >= req.revision && stored.term === req.term) return { kind: 'behind', stored: stored.revision };
  if (!(await req.fence())) return { kind: 'not-leader' };
  const row = { cluster: req.cluster, revision: req.revision.toString(), leader: req.leader, term: req.term.toString(), timeline: req.timeline };
  await store.insert('checkpoints', [{ ...row, ...(req.secret ? { proof: checkpointMac(req.secret, row) } : {}) }]);
  return { kind: 'written', revision: req.revision };
}
