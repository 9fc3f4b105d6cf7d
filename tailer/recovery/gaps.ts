// Lost history made explicit (docs/architecture.md, where a tailer starts): at start and after a
// watch error the tailer checks its position against etcd's compaction.
// When history after the checkpoint is gone it records a gap (from, to),
// snapshots the keyspace at the compaction revision (the holds then alive,
// their start unknown when granted inside the gap) and resumes after it.
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import type { AuditEventRow } from '../../core/events.js';
import { isKeptValueOf, storedKept } from '../../core/valueBound.js';
import { HoldValueSchema, PREFIX, classifyKey, decodeValue, prefixEnd } from '../../core/keyspace.js';
import { holdOrigin } from '../../core/proof.js';
import { grantRow, grantSide } from '../decode/decoder.js';
import { loadSql } from '../../platform/sql.js';
import { isReadable, headRevision } from '../watch/etcdReads.js';
import type { RowBatch } from '../types.js';
import { etcdText } from '../../core/etcdText.js';
import { sharedRevision, type TimelineBranch } from '../../core/timelineLineage.js';

export interface GapRecord {
  cluster: string;
  from_revision: string;
  to_revision: string;
  detected_at: number;
  reason: string;
  /** 'compaction' (the default) or 'restore' (restores.ts). */
  kind?: 'compaction' | 'restore';
  /** 0: nothing of the current timeline is missing in the range (a restore with readable history). */
  history_lost?: 0 | 1;
  generation?: number;
  previous_cluster_id?: string;
  cluster_id?: string;
  /** The recording leader's term (sql/110). */
  term: string;
  /** A restore gap's proof (core/proof.ts restoreGapMac, sql/220): what lets the digest worker re-sign the rows it marks. */
  proof?: string;
}

export interface Gap {
  from: bigint;
  to: bigint;
}

/**
 * The compaction revision when history after `checkpoint` is no longer
 * complete, else undefined. Conservative: if the checkpoint revision itself
 * is compacted, so may be deletes at the compaction revision.
 */
export async function lostAfter(client: Etcd3, checkpoint: bigint): Promise<bigint | undefined> {
  const probe = checkpoint >= 1n ? checkpoint : 1n;
  const head = await headRevision(client);
  if (probe > head) return undefined;
  if (await isReadable(client, probe)) return undefined;
  let lo = probe + 1n;
  let hi = head;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if (await isReadable(client, mid)) hi = mid;
    else lo = mid + 1n;
  }
  return lo;
}

/**
 * The gaps that lost history of one etcd timeline (`generation`, etcd_timelines): a grant inside one is captured
 * with its start unknown. Another timeline's gaps say nothing about it — after a restore without a revision bump
 * the new timeline reuses the old one's revisions, and an old compaction gap would mark its grants start unknown —
 * except within the history the timelines share: an earlier timeline's gap at or below every divergence since is
 * this timeline's too (clipped to it). A grant started there and carried by a restore ended in the new timeline
 * with its start read as known (30-minute chaos run, seed 7: 68 grants; found by the export's grants check).
 */
export async function loadGaps(store: AuditStore, cluster: string, generation: number): Promise<Gap[]> {
  const [rows, timelines] = await Promise.all([
    store.rows<{ from_revision: string; to_revision: string; generation: number }>(
      'SELECT from_revision, to_revision, generation FROM {db:Identifier}.gaps FINAL WHERE cluster = {cluster:String} AND history_lost = 1 AND generation <= {generation:UInt32} ORDER BY from_revision',
      { cluster, generation },
    ),
    store.rows<TimelineBranch>(
      'SELECT generation, diverged_after, shares_history FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {cluster:String} AND generation > 0 AND generation <= {generation:UInt32}',
      { cluster, generation },
    ),
  ]);
  const out: Gap[] = [];
  for (const r of rows) {
    const from = BigInt(r.from_revision);
    const to = BigInt(r.to_revision);
    if (Number(r.generation) === generation) {
      out.push({ from, to });
      continue;
    }
    const bound = sharedRevision(timelines, Number(r.generation), generation);
    if (bound > 0n && from <= bound) out.push({ from, to: to < bound ? to : bound });
  }
  return out;
}

export function inGap(gaps: readonly Gap[], revision: bigint): boolean {
  return gaps.some((g) => revision >= g.from && revision <= g.to);
}

const SQL = {
  grantRowsFromEvents: loadSql('tailer/sql/grantRowsFromEvents.sql'),
  closeGapEnded: loadSql('tailer/sql/closeGapEnded.sql'),
  lastCapturedTime: loadSql('tailer/sql/lastCapturedTime.sql'),
  capturedStarts: loadSql('tailer/sql/capturedStarts.sql'),
};

/**
 * A hold whose captured start is asked for: its value whole (read from etcd), or as a decoded row keeps it (a
 * prefix, with the whole value's size and sha256 set, core/valueBound.ts).
 */
export interface CapturedStartQuery {
  key: string;
  grantRevision: string;
  value: string;
  bytes?: number;
  sha256?: string;
}

/**
 * Of holds seen in a snapshot (etcd key, grant revision), those whose start the store already holds in `timeline`
 * (`<key>|<revision>`): captured by a run killed above its checkpoint.
 */
export function capturedStarts(store: AuditStore, cluster: string, timeline: number): NonNullable<SnapshotOptions['capturedStarts']> {
  return async (holds) => {
    if (holds.length === 0) return new Set();
    const revisions = holds.map((h) => BigInt(h.grantRevision));
    const lowest = revisions.reduce((a, b) => (b < a ? b : a));
    const highest = revisions.reduce((a, b) => (b > a ? b : a));
    const rows = await store.rows<{ key: string; put_revision: string; value: string; value_bytes: number | string; value_sha256: string }>(
      SQL.capturedStarts.text,
      {
        cluster,
        timeline,
        keys: [...new Set(holds.map((h) => h.key))],
        lowest: lowest.toString(),
        highest: highest.toString(),
      },
    );
    // The put of this very hold: the same key, revision and value (not another value put there by hand).
    const asked = new Map(holds.map((h) => [`${h.key}|${h.grantRevision}`, h]));
    const started = new Set<string>();
    for (const r of rows) {
      const k = `${r.key}|${r.put_revision}`;
      const held = asked.get(k);
      if (held === undefined) continue;
      // Kept against kept (the same bound on both sides), else the stored row against the whole value.
      const same = held.sha256
        ? r.value_sha256 === held.sha256 && Number(r.value_bytes) === held.bytes && r.value === held.value
        : isKeptValueOf(storedKept(r), held.value);
      if (same) started.add(k);
    }
    return started;
  };
}

/**
 * After a gap's snapshot (written at `snapshotRevision`): every grant captured
 * open at or below that revision that the snapshot does not hold ended inside
 * the gap — also one a run captured above `checkpoint` before it stopped. It
 * is closed as `unknown`, its end between the last time captured before the
 * gap (or its own grant time, when later) and `nowMs`, and before a later
 * grant of the same key that the snapshot holds. Without this it would read as held forever.
 */
export async function closeGrantsEndedInGap(
  store: AuditStore,
  cluster: string,
  checkpoint: bigint,
  gapTo: bigint,
  snapshotRevision: bigint,
  term: bigint,
  nowMs = Date.now(),
): Promise<void> {
  const from = checkpoint > 10_000n ? checkpoint - 10_000n : 0n;
  const [last] = await store.rows<{ ms: string; n: string }>(SQL.lastCapturedTime.text, { cluster, from: from.toString(), upTo: checkpoint.toString() });
  const startMs = last && last.n !== '0' ? Math.min(Number(last.ms), nowMs) : nowMs;
  await store.command(SQL.closeGapEnded.text, {
    cluster,
    holdPrefix: PREFIX.hold,
    gapTo: gapTo.toString(),
    snapshotRevision: snapshotRevision.toString(),
    startMs,
    nowMs,
    term: term.toString(),
  });
}

/**
 * History after `checkpoint` is lost (a gap, a restore): the grant and end events of timeline `timeline` already
 * durable in (checkpoint, upTo] get their grant rows, derived from the events as the decoder would. A run killed
 * between its events and its grants insert left them without, and no replay can write them now
 * (tailer/sql/grantRowsFromEvents.sql). Idempotent.
 */
export async function completeGrantRows(
  store: AuditStore,
  cluster: string,
  timeline: number,
  checkpoint: bigint,
  upTo: bigint,
  term: bigint,
  gaps: readonly Gap[],
): Promise<void> {
  if (upTo <= checkpoint) return;
  await store.command(SQL.grantRowsFromEvents.text, {
    cluster,
    timeline,
    checkpoint: checkpoint.toString(),
    upTo: upTo.toString(),
    holdPrefix: PREFIX.hold,
    term: term.toString(),
    gapFrom: gaps.map((g) => g.from.toString()),
    gapTo: gaps.map((g) => g.to.toString()),
  });
}

/** Records a gap; its identity (kind and generation) keeps it apart from any other gap starting at the same revision (sql/090). */
export async function recordGap(store: AuditStore, gap: GapRecord): Promise<void> {
  await store.insert('gaps', [{ ...gap, identity: `${gap.kind ?? 'compaction'}:${gap.generation ?? 0}` }]);
}

export interface SnapshotOptions {
  skipPutAtRevision?: boolean;
  /**
   * Key of the lock API's proof of origin: each hold's origin is judged by the
   * decoder's own check (core/proof.ts holdOrigin: the MAC and its lease), so a hold
   * written by hand while no tailer ran reads `foreign`, as its watched put would.
   */
  originSecret?: Buffer;
  /**
   * Which of a page's holds granted after the checkpoint had their start captured already (`<key>|<grant revision>`,
   * capturedStarts): they keep the grant row made from that event; only holds seen nowhere else get one that says
   * their start is unknown.
   */
  capturedStarts?: (holds: CapturedStartQuery[]) => Promise<Set<string>>;
}

export interface SnapshotResult {
  /** Holds written as 'snapshot-hold' events. */
  holds: number;
  /** Foreign holds seen only in the snapshot (granted inside the gap): their put was never watched. */
  foreign: Array<{ key: string; grantRevision: string }>;
}

/**
 * Reads every hold alive at `revision` in pages and hands them to `write` as
 * 'snapshot-hold' events; holds granted after `checkpoint` (inside the gap)
 * also get an open grant row with start_known = 0. Each carries its origin,
 * from its proof exactly as a watched put's (core/proof.ts holdOrigin).
 */
export async function snapshotHolds(
  client: Etcd3,
  cluster: string,
  revision: bigint,
  checkpoint: bigint,
  write: (batch: RowBatch) => Promise<void>,
  pageSize = 5_000,
  options: SnapshotOptions = {},
): Promise<SnapshotResult> {
  const end = Buffer.from(prefixEnd(PREFIX.hold));
  let from = Buffer.from(PREFIX.hold);
  let total = 0;
  const foreign: SnapshotResult['foreign'] = [];
  for (;;) {
    const res = await client.kv.range({ key: from, range_end: end, revision: revision.toString(), limit: pageSize });
    const batch: RowBatch = { events: [], grants: [], quarantine: [] };
    const after = res.kvs
      .filter((kv) => BigInt(String(kv.mod_revision)) > checkpoint)
      .map((kv) => ({ key: etcdText(kv.key), grantRevision: String(kv.mod_revision), value: etcdText(kv.value) }));
    const startCaptured = options.capturedStarts ? await options.capturedStarts(after) : new Set<string>();
    for (const kv of res.kvs) {
      const key = etcdText(kv.key);
      const value = etcdText(kv.value);
      const kind = classifyKey(key);
      const hold = decodeValue(HoldValueSchema, value);
      if (kind.kind !== 'hold' || !hold) {
        batch.quarantine.push({ cluster, revision: revision.toString(), key, op: 'snapshot', value, reason: 'snapshot: not a decodable hold' });
        continue;
      }
      const grantRevision = String(kv.mod_revision);
      // At a revision whose history is readable, a hold put at it is captured by its own event (same row key).
      if (options.skipPutAtRevision && BigInt(grantRevision) === revision) continue;
      // Seen only in the snapshot: when it started is unknown.
      const g = grantSide(kind, hold, grantRevision, false);
      const origin = holdOrigin(options.originSecret, key, hold, String(kv.lease));
      if (origin) g.origin = origin;
      const row: AuditEventRow = {
        cluster,
        revision: revision.toString(),
        key,
        event_type: 'snapshot-hold',
        op: 'snapshot',
        namespace: g.namespace,
        lock_path: g.lock_path,
        class: g.class,
        holder: g.holder,
        session: g.session,
        token: g.token,
        epoch: g.epoch,
        grant_revision: grantRevision,
        wait_ms: g.wait_ms,
        wall_time: hold.at,
        time_estimated: 0,
        time_error_ms: 0,
        create_revision: String(kv.create_revision),
        mod_revision: grantRevision,
        version: String(kv.version),
        lease: String(kv.lease),
        value,
        prev_value: '',
        unprotected: 0,
        ...(origin ? { origin } : {}),
      };
      batch.events.push(row);
      // A grant at or before the checkpoint was captured with its start, and so was one a killed run made durable
      // above it (seed 45: its row, made from the watched put, was replaced by one that took a foreign hold's own
      // `at`): keep that row.
      if (BigInt(grantRevision) > checkpoint && !startCaptured.has(`${key}|${grantRevision}`)) batch.grants.push(grantRow(row, g, undefined));
    }
    total += batch.events.length;
    await write(batch);
    // After write: the replay check (replays.ts, run by `write`) may have found a signed copy foreign.
    for (const g of batch.grants) if (g.origin === 'foreign') foreign.push({ key: g.key, grantRevision: g.grant_revision });
    if (!res.more || res.kvs.length === 0) break;
    from = Buffer.concat([(res.kvs.at(-1) as { key: Buffer }).key, Buffer.from([0])]);
  }
  return { holds: total, foreign };
}
