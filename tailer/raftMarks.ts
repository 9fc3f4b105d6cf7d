// A restore proof that does not depend on what was written (sql/150): a raft
// group's committed index never goes back while the group lives, and a
// snapshot restore or a rebuild starts a new raft log near 0 under the same
// cluster id. The leading tailer records the applied index etcd reports
// (a lower bound of what the group had committed then) for its timeline; a
// leader that reports a committed index below that mark belongs to a new log.
//
// Only a leader's answer counts, and only twice in one term: a follower may
// lag (a member restarting after hours down), and a leader elected moments
// ago may not yet have committed the entries its predecessor did (raft's new
// leader commits its own first entry within a heartbeat; etcd runs with
// CheckQuorum, so a leader that kept its term for the wait had quorum).
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../core/clickhouse.js';
import { createEtcdClient } from '../core/etcd.js';
import { loadSql } from '../platform/sql.js';

const MARK = loadSql('tailer/sql/raftMark.sql');

/** The highest applied index recorded for the timeline; undefined when none was. */
export async function raftMark(store: AuditStore, cluster: string, generation: number): Promise<bigint | undefined> {
  const [row] = await store.rows<{ raft_index: string; n: string | number }>(MARK.text, { cluster, generation });
  return row && Number(row.n) > 0 ? BigInt(row.raft_index) : undefined;
}

/** Records the applied index of whichever member answers (max-merged; a lower value changes nothing). */
export async function recordRaftMark(client: Etcd3, store: AuditStore, cluster: string, generation: number): Promise<bigint> {
  const status = await client.maintenance.status();
  const applied = BigInt(status.raftAppliedIndex || status.raftIndex);
  await store.insert('etcd_raft_marks', [{ cluster, generation, raft_index: applied.toString() }]);
  return applied;
}

export interface LeaderIndex {
  /** The leader's member id. */
  leader: string;
  term: bigint;
  /** The leader's committed index. */
  committed: bigint;
}

/** The leader's own status, asked of every endpoint at once (a follower's answer is not the leader's); undefined when no leader answers. */
export async function leaderIndex(name: string, endpoints: readonly string[]): Promise<LeaderIndex | undefined> {
  const answers = await Promise.all(
    endpoints.map(async (endpoint) => {
      const client = createEtcdClient({ name, endpoints: [endpoint] }, { callTimeoutMs: 3_000 });
      try {
        const s = await client.maintenance.status();
        return String(s.leader) !== '0' && String(s.header.member_id) === String(s.leader) ? { leader: String(s.leader), term: BigInt(s.raftTerm), committed: BigInt(s.raftIndex) } : undefined;
      } catch {
        return undefined; // unreachable or no answer in time: another endpoint may be the leader
      } finally {
        client.close();
      }
    }),
  );
  return answers.find((a) => a !== undefined);
}

export interface RaftCheckDeps {
  ask: () => Promise<LeaderIndex | undefined>;
  /** How long a leader's term must last between the two answers (ms). */
  settleMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Why etcd's raft log cannot be the one `mark` was recorded in, or undefined: the leader's committed index below
 * the mark, answered twice by the same leader in the same term at least `settleMs` apart.
 */
export async function raftLogRestarted(mark: bigint | undefined, deps: RaftCheckDeps): Promise<string | undefined> {
  if (mark === undefined) return undefined;
  const first = await deps.ask();
  if (!first || first.committed >= mark) return undefined;
  await (deps.sleep ?? ((ms) => new Promise<void>((r) => setTimeout(r, ms))))(deps.settleMs ?? 2_000);
  const again = await deps.ask();
  if (!again || again.leader !== first.leader || again.term !== first.term || again.committed >= mark) return undefined;
  return `etcd's raft log restarted: its leader's committed index ${again.committed} is below ${mark}, applied earlier in this timeline (a raft index never goes back while the group lives: a snapshot restore or a rebuild)`;
}
