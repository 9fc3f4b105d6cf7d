// etcd restores seen from the tailer (docs/architecture.md, the data path). A restore rewinds
// etcd: its head may fall below the checkpoint (same cluster token), its
// cluster id may change (new token), or its revisions may jump ahead
// (--bump-revision) with keys quietly back at older versions. Any of these is
// a discontinuity, not "nothing lost". Detection (detectRestore) is the start
// decision of startDecision.ts: no sampling — the checkpoint's own witnesses
// are checked against etcd's history at their revisions, at every start and
// before every watch reopens (replica.ts). Each detected restore starts a new
// timeline (etcd_timelines, generation + 1) whose rows carry its own
// `timeline` (sql/065). Nothing recorded is deleted or moved: the captured
// rows above the last revision both timelines share stay, marked rolled back
// and superseded; grants held there are carried into the new timeline; and
// capture restarts there, following the restored cluster's own revisions.
// A cluster that shares nothing with the captured history (no key etcd holds
// now matches a captured put: an empty rebuild under the same name, another
// cluster behind the same endpoints) is not a rollback of everything: it is a
// new history. The captured one ended (its events superseded, never rolled
// back; its open grants closed as `unknown`, ended inside the restore gap),
// and an alarm says so.
//
// Checkpoints and timelines: the checkpoint in effect is the current
// timeline's highest term's highest checkpoint (sql/110; rows from before it:
// the highest written at or after the timeline's detection), and never below
// its resume revision (readPosition). Rows of the old timeline stay in
// `checkpoints` (data is never deleted) but no longer count, so checkpoint
// writes can stay monotonic within a timeline while a restore still restarts
// lower.
//
// Bounded whatever the keyspace (issue 21 item 7): the divergence search pages
// through etcd's keyspace and asks the store once per page, holding at most a
// page; the marks run as one INSERT … SELECT per page of revisions, each page
// found first (…PageEnd.sql), so no statement reads or writes the whole
// rolled-back range at once. `pageSize` (ReplicaOptions.restorePageSize).
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { PREFIX } from '../../core/keyspace.js';
import { loadSql } from '../../platform/sql.js';
import { hasValidCheckpointProof, hasValidRestoreGapProof } from '../../core/proof.js';
import { lostAfter } from './gaps.js';
import { readFor, startFrom, type StartFacts, type Witness, type WitnessReading } from './startDecision.js';
import { etcdText } from '../../core/etcdText.js';
import { isKeptValueOf, storedKept } from '../../core/valueBound.js';
import { raftLogRestarted, raftMark, type RaftCheckDeps } from './raftMarks.js';

const SQL = {
  timeline: loadSql('tailer/sql/timeline.sql'),
  checkpointInEffect: loadSql('grants/checkpointOfCluster.sql'),
  witnesses: loadSql('tailer/sql/witnesses.sql'),
  capturedAbove: loadSql('tailer/sql/capturedAbove.sql'),
  capturedPuts: loadSql('tailer/sql/capturedPuts.sql'),
  eventsPageEnd: loadSql('tailer/sql/eventsPageEnd.sql'),
  rolledBackGrantsPageEnd: loadSql('tailer/sql/rolledBackGrantsPageEnd.sql'),
  carriedGrantsPageEnd: loadSql('tailer/sql/carriedGrantsPageEnd.sql'),
  markEvents: loadSql('tailer/sql/markEvents.sql'),
  markRolledBackGrants: loadSql('tailer/sql/markRolledBackGrants.sql'),
  carryGrants: loadSql('tailer/sql/carryGrants.sql'),
  markCarriedGrants: loadSql('tailer/sql/markCarriedGrants.sql'),
  unfinishedRestore: loadSql('tailer/sql/unfinishedRestore.sql'),
  provenCheckpoints: loadSql('tailer/sql/provenCheckpoints.sql'),
};

/** Latest captured puts checked at each start-position check (with the latest clock write). */
const WITNESS_PUTS = 4;
/** ...among the puts captured in this many revisions below the checkpoint. */
const WITNESS_WINDOW = 100_000n;
/** Keys per etcd range and rows per mark statement of a restore, by default (ReplicaOptions.restorePageSize). */
export const RESTORE_PAGE_SIZE = 5_000;

export interface Timeline {
  generation: number;
  /** What its rows carry in their `timeline` column: its generation, or 0 for a timeline recorded before sql/065. */
  timeline: number;
  clusterId: string;
  resumeRevision: bigint;
  detectedMs: number;
}

export interface EtcdPosition {
  head: bigint;
  clusterId: string;
}

export interface RestoreSeen {
  head: bigint;
  clusterId: string;
  previousClusterId: string;
  why: string;
  /** The highest revision captured in the ended timeline: the checkpoint, or rows durable above it. */
  captured: bigint;
}

export async function currentTimeline(store: AuditStore, cluster: string): Promise<Timeline | undefined> {
  const rows = await store.rows<{ generation: number; timeline: number; cluster_id: string; resume_revision: string; detected_ms: string }>(SQL.timeline.text, {
    cluster,
  });
  const r = rows[0];
  return r
    ? {
        generation: Number(r.generation),
        timeline: Number(r.timeline),
        clusterId: r.cluster_id,
        resumeRevision: BigInt(r.resume_revision),
        detectedMs: Number(r.detected_ms),
      }
    : undefined;
}

/** The checkpoint in effect, its writer's leadership term (0: written before sql/110) and writer. */
export interface Position {
  revision: bigint;
  term: bigint;
  leader: string;
}

/**
 * The checkpoint in effect, read with the one definition every reader shares (grants/checkpointInEffect.sql): in
 * the current timeline, the highest term's highest checkpoint — a deposed leader's late row neither counts over
 * its successor's nor for a later timeline — and after a restore never below the timeline's resume revision.
 * Rows written before sql/110 carry no timeline: the highest checkpoint ever written stands for them until a
 * restore was recorded, and after one only those written since its detection count. A timeline recorded before
 * sql/065 (generation > 0, timeline 0) cannot tell its rows from the old timeline's by column, so there every row
 * written since the detection counts. No checkpoint written yet: revision 0.
 */
export async function readPosition(store: AuditStore, cluster: string): Promise<Position> {
  const [row] = await store.rows<{ revision: string; term: string; leader: string }>(SQL.checkpointInEffect.text, { cluster });
  return row ? { revision: BigInt(row.revision), term: BigInt(row.term), leader: row.leader } : { revision: 0n, term: 0n, leader: '' };
}

export async function etcdPosition(client: Etcd3): Promise<EtcdPosition> {
  const res = await client.kv.range({ key: Buffer.from(PREFIX.clock), count_only: true });
  return { head: BigInt(res.header.revision), clusterId: String(res.header.cluster_id) };
}

/** A restore whose gap was recorded but not its timeline: what its gap says, to finish it with. */
export interface UnfinishedRestore {
  generation: number;
  /** The last revision both timelines share (the gap's from − 1). */
  after: bigint;
  to: bigint;
  /** The restore shared nothing with the captured history (a new history, gap from 1). */
  newHistory: boolean;
  why: string;
  previousClusterId: string;
  /** Where its first try resumed the restored timeline (its reason says: "from revision resume + 1"), when it did so because etcd's restored history was compacted there (a bumped restore). */
  compactedAt: bigint | undefined;
  /** Its first try found the restored history compacted (history_lost): false, and a compaction found now is the new timeline's own loss. */
  historyLost: boolean;
}

/** A restore gap as unfinishedRestore.sql reads it. */
interface RestoreGapRow {
  from_revision: string;
  to_revision: string;
  reason: string;
  generation: number;
  previous_cluster_id: string;
  history_lost: number;
  detected_at_ms: string;
  cluster_id: string;
  proof: string;
}

/**
 * A restore recorded half-way: its gap is written before its holds are snapshotted and its timeline last
 * (replica.ts), and a leader that lost etcd or its leadership in between left the rows marked and the gap
 * written but no timeline. The next start must finish it — not look for a restore again: with the rolled-back
 * rows marked, every witness left is intact, and a bumped restore then read as a compaction (30-minute chaos
 * run at 249 cycles/s: a compaction gap over the whole bump, the new timeline captured as the old one's).
 */
export async function unfinishedRestore(
  store: AuditStore,
  cluster: string,
  generation: number,
  secret: Buffer | undefined,
  onRefused?: (generation: number, why: 'unproven' | 'finished') => void,
): Promise<UnfinishedRestore | undefined> {
  const rows = await store.rows<RestoreGapRow>(SQL.unfinishedRestore.text, { cluster, generation: generation + 1 });
  // Only the tailer's own gap is finished: finishing marks every row above its start rolled back, so a row
  // another writer put in the store (an insider) would otherwise hide captured history. A tailer given no key
  // (tests only: production always has one) proves nothing and can check nothing.
  const gap = rows.find(
    (g) =>
      !secret ||
      hasValidRestoreGapProof(
        secret,
        {
          cluster,
          generation: Number(g.generation),
          fromRevision: String(g.from_revision),
          toRevision: String(g.to_revision),
          detectedAtMs: Number(g.detected_at_ms),
          historyLost: Number(g.history_lost),
          previousClusterId: g.previous_cluster_id,
          clusterId: g.cluster_id,
        },
        g.proof,
      ),
  );
  if (!gap) {
    if (rows.length > 0) onRefused?.(generation + 1, 'unproven');
    return undefined;
  }
  // Finished already, its timeline record removed since (an insider: etcd_timelines carries no proof): the tailer
  // captured under it, which only a finished restore allows. Finished again it would mark that capture rolled
  // back; left missing, the tailer would capture the restored etcd under the older timeline (its rows again
  // under another identity, from the older timeline's checkpoint) and could take the restored head, below that
  // checkpoint, for a restore to record again. So the record is written again from what is proven.
  if (secret) {
    const t = generation + 1;
    const provenOf = async (timeline: number): Promise<bigint[]> => {
      // The proven checkpoint rows, that timeline's first (provenPosition.ts reads them the same way).
      const rows = await store.rows<{ rev: string; term_of: string; leader: string; timeline: number; proof: string }>(SQL.provenCheckpoints.text, {
        cluster,
        timeline,
        limit: 50,
      });
      return rows
        .filter((c) => Number(c.timeline) === timeline)
        .filter((c) => hasValidCheckpointProof(secret, { cluster, timeline, term: c.term_of, revision: c.rev, leader: c.leader }, c.proof))
        .map((c) => BigInt(c.rev));
    };
    if ((await provenOf(t)).length > 0) {
      const before = await provenOf(generation);
      await store.insert('etcd_timelines', [
        lostTimelineRecord(
          cluster,
          gap,
          before.reduce((a, b) => (b > a ? b : a), 0n),
        ),
      ]);
      onRefused?.(t, 'finished');
      return undefined;
    }
  }
  const reason = gap.reason.startsWith('restore: ') ? gap.reason.slice('restore: '.length) : gap.reason;
  const end = reason.indexOf('; ');
  const from = /from revision (\d+)$/.exec(reason)?.[1];
  return {
    generation: Number(gap.generation),
    after: BigInt(gap.from_revision) - 1n,
    to: BigInt(gap.to_revision),
    newHistory: reason.includes('etcd shares nothing with the captured history'),
    why: end > 0 ? reason.slice(0, end) : reason,
    previousClusterId: gap.previous_cluster_id,
    compactedAt: Number(gap.history_lost) === 1 && from !== undefined ? BigInt(from) - 1n : undefined,
    historyLost: Number(gap.history_lost) === 1,
  };
}

/**
 * The timeline record of a finished restore, written again from its proven gap (signed: generation, cluster ids,
 * revisions, detection time) when the record was removed. What the gap does not carry is said so: etcd's head
 * when the restore was seen is unknown (0); the old timeline's checkpoint then is its highest proven one; capture
 * resumed at the divergence as far as the record says (the gap's reason, which says where a compacted restore resumed, is not in its proof).
 */
export function lostTimelineRecord(cluster: string, gap: Omit<RestoreGapRow, 'proof'>, previousCheckpoint: bigint): Record<string, string | number> {
  // Capture resumed at the divergence or, for a compacted restore, above it; where exactly only the unsigned reason
  // says, so the divergence stands in: the lower floor is safe, the timeline's proven checkpoints lie above it.
  const after = (BigInt(gap.from_revision) - 1n).toString();
  const generation = Number(gap.generation);
  return {
    cluster,
    generation,
    cluster_id: gap.cluster_id,
    previous_cluster_id: gap.previous_cluster_id,
    previous_checkpoint: previousCheckpoint.toString(),
    restored_head: '0',
    diverged_after: after,
    resume_revision: after,
    reason: `written again from the tailer's proven restore gap (the record was removed; etcd's head when it was seen is unknown): ${gap.reason}`,
    detected_at: Number(gap.detected_at_ms),
    timeline: generation,
    shares_history: gap.reason.includes('etcd shares nothing with the captured history') ? 0 : 1,
  };
}

/** Records generation 0 (the cluster id first seen) when no timeline exists yet. */
export async function ensureTimeline(store: AuditStore, cluster: string, position: EtcdPosition): Promise<Timeline> {
  const existing = await currentTimeline(store, cluster);
  if (existing) return existing;
  await store.insert('etcd_timelines', [
    {
      cluster,
      generation: 0,
      cluster_id: position.clusterId,
      previous_cluster_id: '',
      previous_checkpoint: '0',
      restored_head: '0',
      diverged_after: '0',
      resume_revision: '0',
      reason: 'first start',
    },
  ]);
  return (await currentTimeline(store, cluster)) as Timeline;
}

/**
 * The facts a start of `cluster` reads (startDecision.ts startFrom): the store's captured rows, the raft log, etcd's
 * history. Was etcd restored under the tailer? Another cluster id; a head below the checkpoint; the raft log
 * restarted; or etcd's history at a witness's revision (or, compacted, its keyspace at the compaction revision)
 * contradicting the put the tailer captured there. A few reads, whatever the history or the load.
 */
export function startFacts(
  client: Etcd3,
  store: AuditStore,
  cluster: string,
  timeline: Timeline,
  raft?: RaftCheckDeps,
  pageSize = RESTORE_PAGE_SIZE,
): StartFacts {
  return {
    // Rows durable above a checkpoint held back are captured history too: a restore to a snapshot above the
    // checkpoint rolls them back while every witness at or below it is intact (30-minute chaos run, seed 7: such
    // rows stayed in the current timeline, and each later start read them as another restore).
    captured: async (checkpoint) => {
      const [above] = await store.rows<{ top: string }>(SQL.capturedAbove.text, { cluster, checkpoint: checkpoint.toString() });
      return above && BigInt(above.top) > checkpoint ? BigInt(above.top) : checkpoint;
    },
    // The raft log: a proof whatever was written since (a bumped restore to a snapshot after the last clock write,
    // fresh keys only, passes every witness read at the compaction revision).
    raftRestarted: async () => (raft ? raftLogRestarted(await raftMark(store, cluster, timeline.generation), raft, timeline.clusterId) : undefined),
    compactRevision: (checkpoint) => lostAfter(client, checkpoint),
    witnesses: async (captured, compactRevision) => readWitnesses(client, await checkpointWitnesses(store, cluster, captured), compactRevision),
    divergence: (checkpoint) => divergence(client, store, cluster, checkpoint, pageSize),
    lostAfter: (after) => lostAfter(client, after),
  };
}

/** What a restore check needs of a start: the restore seen, or undefined (a gap or a resume). */
export async function detectRestore(
  client: Etcd3,
  store: AuditStore,
  cluster: string,
  checkpoint: bigint,
  timeline: Timeline,
  position: EtcdPosition,
  raft?: RaftCheckDeps,
): Promise<RestoreSeen | undefined> {
  const start = await startFrom(startFacts(client, store, cluster, timeline, raft), checkpoint, timeline.clusterId, position);
  return start.kind === 'restore' ? restoreSeen(start, timeline, position) : undefined;
}

/** A restore decided at a start, as the run records it. */
export function restoreSeen(start: { why: string; captured: bigint }, timeline: Timeline, position: EtcdPosition): RestoreSeen {
  return { head: position.head, clusterId: position.clusterId, previousClusterId: timeline.clusterId, captured: start.captured, why: start.why };
}

/** The puts the start decision checks: the latest ones captured at or below `checkpoint` (or the highest revision captured), and the latest clock write. */
export async function checkpointWitnesses(store: AuditStore, cluster: string, checkpoint: bigint): Promise<Witness[]> {
  const rows = await store.rows<{ key: string; revision: string; value: string; value_bytes: number | string; value_sha256: string }>(SQL.witnesses.text, {
    cluster,
    from: (checkpoint > WITNESS_WINDOW ? checkpoint - WITNESS_WINDOW : 0n).toString(),
    upTo: checkpoint.toString(),
    limit: WITNESS_PUTS,
    clock: PREFIX.clock,
  });
  const out = new Map<string, Witness>();
  for (const r of rows)
    out.set(`${r.revision} ${r.key}`, {
      key: r.key,
      revision: BigInt(r.revision),
      value: r.value,
      ...(r.value_sha256 ? { bytes: Number(r.value_bytes), sha256: r.value_sha256 } : {}),
    });
  return [...out.values()];
}

/** etcd's answer for each witness: its key at the witness's revision, or at the compaction revision when that is compacted. */
async function readWitnesses(client: Etcd3, witnesses: readonly Witness[], compactRevision: bigint | undefined): Promise<WitnessReading[]> {
  return Promise.all(
    witnesses.map(async (witness) => {
      const read = readFor(witness, compactRevision);
      const at = read === 'history' ? witness.revision : (compactRevision as bigint);
      const res = await client.kv.range({ key: Buffer.from(witness.key), revision: at.toString() });
      const kv = res.kvs[0];
      return kv ? { witness, read, kv: { modRevision: BigInt(kv.mod_revision), value: etcdText(kv.value) } } : { witness, read };
    }),
  );
}

/**
 * The last revision both timelines share: the highest mod revision, at or
 * below the checkpoint, of a key etcd holds now whose put there the tailer
 * captured with the same value. Writes made after the restore reuse revision
 * numbers with other values, so they do not match. Undefined when no key
 * matches: the cluster shares nothing with the captured history (a new
 * history, not a rollback of everything). Reads etcd a page of `pageSize`
 * keys at a time and asks the store once per page: memory stays one page.
 */
export async function divergence(
  client: Etcd3,
  store: AuditStore,
  cluster: string,
  checkpoint: bigint,
  pageSize = RESTORE_PAGE_SIZE,
): Promise<bigint | undefined> {
  let shared: bigint | undefined;
  for (const prefix of [PREFIX.hold, PREFIX.queue, PREFIX.sys]) {
    let from = Buffer.from(prefix);
    const end = prefixEnd(prefix);
    for (;;) {
      const res = await client.kv.range({ key: from, range_end: end, limit: pageSize });
      // This page's keys etcd holds at or below the checkpoint: key → (mod revision, value).
      const page = new Map<string, { revision: bigint; value: string }>();
      for (const kv of res.kvs) {
        const rev = BigInt(kv.mod_revision);
        // Only a revision above what is already known to be shared can raise it.
        if (rev > checkpoint || (shared !== undefined && rev <= shared)) continue;
        page.set(etcdText(kv.key), { revision: rev, value: etcdText(kv.value) });
      }
      if (page.size > 0) {
        const revisions = [...page.values()].map((p) => p.revision);
        const lowest = revisions.reduce((a, b) => (b < a ? b : a));
        const highest = revisions.reduce((a, b) => (b > a ? b : a));
        const captured = await store.rows<{ key: string; put_revision: string; value: string; value_bytes: number | string; value_sha256: string }>(
          SQL.capturedPuts.text,
          {
            cluster,
            keys: [...page.keys()],
            lowest: lowest.toString(),
            highest: highest.toString(),
          },
        );
        for (const c of captured) {
          const now = page.get(c.key);
          const rev = BigInt(c.put_revision);
          const same = now !== undefined && isKeptValueOf(storedKept(c), now.value);
          if (now && now.revision === rev && same && (shared === undefined || rev > shared)) shared = rev;
        }
      }
      if (!res.more || res.kvs.length === 0) break;
      from = Buffer.concat([(res.kvs.at(-1) as { key: Buffer }).key, Buffer.from([0])]);
    }
  }
  return shared;
}

/** Runs `mark` over ({start}, end] in pages: each page's end from `pageEnd` (n = 0: done). */
async function inPages(
  store: AuditStore,
  pageEnd: { text: string },
  params: Record<string, unknown>,
  start: bigint,
  pageSize: number,
  mark: (from: bigint, upTo: bigint) => Promise<void>,
): Promise<void> {
  let from = start;
  for (;;) {
    const [page] = await store.rows<{ revision: string | null; n: string }>(pageEnd.text, { ...params, from: from.toString(), limit: pageSize });
    if (!page || page.n === '0' || page.revision === null) return;
    const upTo = BigInt(page.revision);
    await mark(from, upTo);
    from = upTo;
  }
}

function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  b[b.length - 1] = (b[b.length - 1] as number) + 1;
  return b;
}

/**
 * A restore to `after` (generation `generation`, whose rows carry `timeline`):
 * the captured events and grants above it stay, marked rolled back; grants
 * held at it are carried into the new timeline. Deletes and moves nothing.
 * Idempotent (a restore recorded half-way is redone from the start). Each
 * statement marks one page of about `pageSize` rows. `term`: the marking
 * leader's (its marks win under FINAL, sql/110).
 */
export async function rollBack(
  store: AuditStore,
  cluster: string,
  after: bigint,
  generation: number,
  timeline: number,
  term: bigint,
  pageSize = RESTORE_PAGE_SIZE,
): Promise<void> {
  const t = term.toString();
  await markEventsAbove(store, cluster, after, generation, generation, term, pageSize);
  await inPages(store, SQL.rolledBackGrantsPageEnd, { cluster, generation }, after, pageSize, (from, upTo) =>
    store.command(SQL.markRolledBackGrants.text, { cluster, after: from.toString(), upTo: upTo.toString(), generation, term: t }),
  );
  const carried = { cluster, after: after.toString(), timeline };
  await inPages(store, SQL.carriedGrantsPageEnd, carried, 0n, pageSize, async (from, upTo) => {
    // Carry a page, then mark its old rows: a crash between the two carries the same rows again (same identity).
    const page = { ...carried, from: from.toString(), upTo: upTo.toString(), term: t };
    await store.command(SQL.carryGrants.text, page);
    await store.command(SQL.markCarriedGrants.text, { ...page, generation });
  });
}

/**
 * The current timeline's events above `after`, marked (rolled back by, superseded by) one page at a time: only rows
 * captured before timeline `supersededBy` (a restore's generation, whose rows carry it), so a restore finished again
 * — its timeline record and the proof that it was finished removed by an insider — marks nothing captured under it.
 */
async function markEventsAbove(
  store: AuditStore,
  cluster: string,
  after: bigint,
  rolledBackBy: number,
  supersededBy: number,
  term: bigint,
  pageSize: number,
): Promise<void> {
  await inPages(store, SQL.eventsPageEnd, { cluster, generation: supersededBy }, after, pageSize, (from, upTo) =>
    store.command(SQL.markEvents.text, { cluster, after: from.toString(), upTo: upTo.toString(), rolledBackBy, supersededBy, term: term.toString() }),
  );
}

/**
 * A new history (the cluster shares nothing with the captured one): every
 * captured event is superseded from `generation` on — no longer the current
 * timeline's, never rolled back. Grants are not marked: they stay every
 * timeline's record as they are. Idempotent; one page per statement.
 */
export async function endHistory(store: AuditStore, cluster: string, generation: number, term: bigint, pageSize = RESTORE_PAGE_SIZE): Promise<void> {
  await markEventsAbove(store, cluster, 0n, 0, generation, term, pageSize);
}

export interface NewTimeline {
  cluster: string;
  generation: number;
  seen: RestoreSeen;
  previousCheckpoint: bigint;
  divergedAfter: bigint;
  resumeRevision: bigint;
  /** 0: the cluster shares nothing with the captured history (a new history). */
  sharesHistory: boolean;
}

/** The restore record readers use: written last, once the old rows are moved and the snapshot is in. */
export async function recordTimeline(store: AuditStore, t: NewTimeline): Promise<void> {
  await store.insert('etcd_timelines', [
    {
      cluster: t.cluster,
      generation: t.generation,
      cluster_id: t.seen.clusterId,
      previous_cluster_id: t.seen.previousClusterId,
      previous_checkpoint: t.previousCheckpoint.toString(),
      restored_head: t.seen.head.toString(),
      diverged_after: t.divergedAfter.toString(),
      resume_revision: t.resumeRevision.toString(),
      reason: t.seen.why,
      timeline: t.generation,
      shares_history: t.sharesHistory ? 1 : 0,
    },
  ]);
}
