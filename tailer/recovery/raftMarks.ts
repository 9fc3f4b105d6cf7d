// A restore proof that does not depend on what was written (sql/150): a raft
// group's committed index never goes back while the group lives, and a
// snapshot restore or a rebuild starts a new raft log near 0 under the same
// cluster id. The leading tailer records the applied index etcd reports
// (a lower bound of what the group had committed then) for its timeline; a
// leader that reports a committed index below that mark belongs to a new log.
//
// Only the leader a majority of voting members agree on in the newest term
// counts, and only twice in one term: a follower may lag (a member restarting
// after hours down), a member cut off may still believe it leads in an older
// term, and a leader elected moments ago may not yet have committed the entries
// its predecessor did (raft's new leader commits its own first entry within a
// heartbeat of winning). Marks and answers are of the timeline's cluster id only.
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { loadSql } from '../../platform/sql.js';

const MARK = loadSql('tailer/sql/raftMark.sql');

/** The highest applied index recorded for the timeline; undefined when none was. */
export async function raftMark(store: AuditStore, cluster: string, generation: number): Promise<bigint | undefined> {
  const [row] = await store.rows<{ raft_index: string; n: string | number }>(MARK.text, { cluster, generation });
  return row && Number(row.n) > 0 ? BigInt(row.raft_index) : undefined;
}

/**
 * Records the applied index of whichever member answers (max-merged; a lower value changes nothing) — only when it
 * answers for `clusterId`, the timeline's cluster: a member of another cluster (an old one still reachable while
 * endpoints move to a restored one) would leave a mark the timeline's own log never reaches. Undefined: not recorded
 * (another cluster, or not above `above`, the last index written).
 */
export async function recordRaftMark(
  client: Etcd3,
  store: AuditStore,
  cluster: string,
  generation: number,
  clusterId: string,
  above = 0n,
): Promise<bigint | undefined> {
  const status = await client.maintenance.status();
  if (String(status.header.cluster_id) !== clusterId) return undefined;
  const applied = BigInt(status.raftAppliedIndex);
  if (applied <= above) return undefined; // nothing new since the last row written: no insert
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

/** One member's answer: its status and how many voting members its member list has. */
export interface MemberAnswer {
  member: string;
  clusterId: string;
  /** The member it takes for the leader ('0': none). */
  leader: string;
  term: bigint;
  committed: bigint;
  voters: number;
}

/**
 * The leader a majority of the cluster's voting members name in the newest term they report, with its own answer.
 * A member that still believes it leads after the others elected another (cut off, a long election timeout) is in
 * an older term and named by nobody else: its committed index would read as a restarted log. Undefined when no
 * majority answered for one leader (fewer endpoints than a majority reachable included): no proof either way.
 */
export function agreedLeader(answers: readonly MemberAnswer[], clusterId: string): LeaderIndex | undefined {
  const byMember = new Map<string, MemberAnswer>();
  for (const a of answers) if (a.clusterId === clusterId && a.leader !== '0') byMember.set(a.member, a);
  const mine = [...byMember.values()];
  if (mine.length === 0) return undefined;
  const top = mine.reduce((t, a) => (a.term > t ? a.term : t), 0n);
  const own = mine.find((a) => a.term === top && a.member === a.leader);
  if (!own) return undefined;
  const voters = Math.max(...mine.map((a) => a.voters));
  const agreeing = mine.filter((a) => a.term === top && a.leader === own.leader).length;
  return agreeing >= Math.floor(voters / 2) + 1 ? { leader: own.leader, term: top, committed: own.committed } : undefined;
}

/** Every endpoint asked at once (its status and member list); the leader a majority of voting members agree on. */
export async function leaderIndex(name: string, endpoints: readonly string[], clusterId: string): Promise<LeaderIndex | undefined> {
  const answers = await Promise.all(
    endpoints.map(async (endpoint): Promise<MemberAnswer | undefined> => {
      const client = createEtcdClient({ name, endpoints: [endpoint] }, { callTimeoutMs: 3_000 });
      try {
        const s = await client.maintenance.status();
        const members = await client.cluster.memberList({ linearizable: false });
        const voters = members.members.filter((m) => !m.isLearner).length;
        return {
          member: String(s.header.member_id),
          clusterId: String(s.header.cluster_id),
          leader: String(s.leader),
          term: BigInt(s.raftTerm),
          committed: BigInt(s.raftIndex),
          voters,
        };
      } catch {
        return undefined; // unreachable or no answer in time: the others may still make a majority
      } finally {
        client.close();
      }
    }),
  );
  return agreedLeader(
    answers.filter((a): a is MemberAnswer => a !== undefined),
    clusterId,
  );
}

export interface RaftCheckDeps {
  /** The agreed leader of the cluster with this id (leaderIndex). */
  ask: (clusterId: string) => Promise<LeaderIndex | undefined>;
  /** How long a leader's term must last between the two answers (ms). */
  settleMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Why etcd's raft log cannot be the one `mark` was recorded in, or undefined: the leader's committed index below
 * the mark, answered twice by the same leader in the same term at least `settleMs` apart.
 */
export async function raftLogRestarted(mark: bigint | undefined, deps: RaftCheckDeps, clusterId: string): Promise<string | undefined> {
  if (mark === undefined) return undefined;
  const first = await deps.ask(clusterId);
  if (!first || first.committed >= mark) return undefined;
  await (deps.sleep ?? ((ms) => new Promise<void>((r) => setTimeout(r, ms))))(deps.settleMs ?? 2_000);
  const again = await deps.ask(clusterId);
  if (!again || again.leader !== first.leader || again.term !== first.term || again.committed >= mark) return undefined;
  return `etcd's raft log restarted: its leader's committed index ${again.committed} is below ${mark}, applied earlier in this timeline (a raft index never goes back while the group lives: a snapshot restore or a rebuild)`;
}
