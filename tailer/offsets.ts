// The checkpoint's one home: the highest revision up to which every change of
// a cluster is durable in the audit store. Read here (the tailer at each
// start, the API for /v1/tailers) and written here, behind the leadership
// fence. The stored checkpoint never moves backwards whatever the timing:
// readers take the highest row ever written (sql/034 keeps it through merges),
// and the writer never writes below what is stored. The one exception is an
// etcd restore (restores.ts): the restored cluster starts a new timeline,
// whose checkpoint starts again at its resume revision and then never moves
// backwards within it.
import type { AuditStore } from '../core/clickhouse.js';
import { loadSql } from '../platform/sql.js';
import { readPosition } from './restores.js';

const READ_ONE = loadSql('tailer/sql/checkpoint.sql');
const READ_ALL = loadSql('tailer/sql/checkpoints.sql');

export interface StoredCheckpoint {
  cluster: string;
  revision: bigint;
  leader: string;
}

/** The cluster's checkpoint in its current etcd timeline (0n: none yet). */
export async function readCheckpoint(store: AuditStore, cluster: string): Promise<bigint> {
  return readPosition(store, cluster, async () => {
    const rows = await store.rows<{ revision: string | null }>(READ_ONE.text, { cluster });
    return BigInt(rows[0]?.revision ?? '0');
  });
}

/** Every cluster's checkpoint, by name. */
export async function readCheckpoints(store: AuditStore): Promise<Map<string, StoredCheckpoint>> {
  const rows = await store.rows<{ cluster: string; highest: string; leader: string }>(READ_ALL.text);
  const out = new Map<string, StoredCheckpoint>();
  for (const r of rows) out.set(r.cluster, { cluster: r.cluster, revision: await readPosition(store, r.cluster, async () => BigInt(r.highest)), leader: r.leader });
  return out;
}

export type CheckpointWrite =
  /** The row is in the store. */
  | { kind: 'written'; revision: bigint }
  /** The store already holds this revision or a higher one (a successor, or a replay): nothing written. */
  | { kind: 'behind'; stored: bigint }
  /** The fence said we no longer lead: nothing written. */
  | { kind: 'not-leader' };

export interface CheckpointWriteRequest {
  cluster: string;
  revision: bigint;
  /** Who writes (the replica id), kept with the row. */
  leader: string;
  /**
   * Re-checks leadership in etcd right before the insert. A rejection (etcd
   * did not answer) propagates: the caller decides whether to try again.
   */
  fence: () => Promise<boolean>;
}

/**
 * Writes `revision` as the cluster's checkpoint if we still lead and it is
 * above what is stored. A writer that stalls after these checks can still
 * insert a lower row late, but readers take the highest, so it never shows.
 */
export async function writeCheckpoint(store: AuditStore, req: CheckpointWriteRequest): Promise<CheckpointWrite> {
  const stored = await readCheckpoint(store, req.cluster);
  if (stored >= req.revision) return { kind: 'behind', stored };
  if (!(await req.fence())) return { kind: 'not-leader' };
  await store.insert('checkpoints', [{ cluster: req.cluster, revision: req.revision.toString(), leader: req.leader }]);
  return { kind: 'written', revision: req.revision };
}
