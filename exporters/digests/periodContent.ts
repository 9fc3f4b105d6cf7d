// What a digest period holds in the audit store now, read one way by the
// digest worker, `verify` and the explanation of a change (explain.ts): its
// events hashed in the digest's order, and the gaps and restores recorded in it.
import type { AuditStore } from '../../core/clickhouse.js';
import { loadSql } from '../../platform/sql.js';
import { canonicalJson } from '../hashChain.js';
import {
  EVENTS_ENCODING,
  EVENTS_ENCODING_V1,
  EventsHasher,
  type Digest,
  type DigestEvent,
  type DigestGap,
  type DigestRestore,
  type EventsEncoding,
  type Position,
} from './format.js';

/** Revisions per read of a period's events at most: one revision can carry thousands of events (a lease expiry), so it bounds reads, not rows. */
const WINDOW = 20_000n;
/**
 * Bytes of row text per read at most (digest_window_end.sql), so the worker's and verify's memory is bounded
 * whatever the values: 20 000 revisions of 1.5 MiB values would be 30 GB in one read. One revision's rows are
 * read together even when they alone are more.
 */
export const WINDOW_BYTES = 32 * 1024 * 1024;
const REVISION_MAX = '9223372036854775807';

/** The (lo, hi) revision bounds for the primary key, and the range parameters, of a period. */
export function rangeParams(after: Position | null, through: Position, fromMs: number, toMs: number): Record<string, string | number> {
  const sameTimeline = after !== null && after.timeline === through.timeline;
  return {
    lo: sameTimeline ? (BigInt(after.revision) + 1n).toString() : '1',
    // Rows of an earlier timeline may sit at any revision below `through`'s position.
    hi: sameTimeline || (after === null && through.timeline === '0') ? through.revision : REVISION_MAX,
    hasAfter: after ? 1 : 0,
    afterTimeline: after?.timeline ?? '0',
    afterRevision: after?.revision ?? '0',
    throughTimeline: through.timeline,
    throughRevision: through.revision,
    fromMs,
    toMs,
  };
}

/**
 * Hashes a period's events as they are in ClickHouse now (the worker's and the verifier's one way), a window of
 * revisions at a time, under `encoding` (a sealed period's own when it is checked). `view`, when given, is what each row is taken as (undefined: left out) — explain.ts hashes a
 * period as it was before the changes the record explains.
 */
export async function hashPeriodEvents(
  store: AuditStore,
  cluster: string,
  range: { after: Position | null; through: Position; fromMs: number; toMs: number },
  view?: (row: DigestEvent, ingestedAtMs: string) => DigestEvent | undefined,
  windows: {
    bytes?: number;
    onWindow?: (w: { lo: bigint; hi: bigint; rows: number; chars: number }) => void;
    /**
     * Under v1, each row that says a value was kept other than whole: v1 does not hash those columns, and a period
     * sealed under it held whole values only, so such a row was edited since (verify names it).
     */
    onNotWholeUnderV1?: (row: DigestEvent) => void;
  } = {},
  encoding: EventsEncoding = EVENTS_ENCODING,
): Promise<ReturnType<EventsHasher['digest']>> {
  const sql = loadSql('exporters/sql/digest_events.sql').text;
  // A sealed period is compared under the encoding it was sealed with (format.ts): v1 periods stay v1.
  const hasher = new EventsHasher(encoding);
  const rp = rangeParams(range.after, range.through, range.fromMs, range.toMs);
  const params = { cluster, ...rp };
  const window = async (winLo: bigint, winHi: bigint): Promise<void> => {
    let rows = 0;
    let chars = 0;
    for (const { ingestedAtMs, notWhole, ...row } of await store.rows<DigestEvent & { ingestedAtMs: string; notWhole: number | string }>(sql, {
      ...params,
      winLo: winLo.toString(),
      winHi: winHi.toString(),
    })) {
      rows += 1;
      if (encoding === EVENTS_ENCODING_V1 && Number(notWhole) === 1) windows.onNotWholeUnderV1?.(row);
      chars += row.value.length + row.prevValue.length + row.holder.length + row.key.length;
      const seen = view ? view(row, ingestedAtMs) : row;
      if (seen) hasher.add(seen, ingestedAtMs);
    }
    windows.onWindow?.({ lo: winLo, hi: winHi, rows, chars });
  };
  const budget = windows.bytes ?? WINDOW_BYTES;
  await window(0n, 0n); // spooled grants (revision 0) sort first
  const [span] = await store.rows<{ n: string; low: string; high: string }>(loadSql('exporters/sql/digest_span.sql').text, { cluster, lo: rp.lo, hi: rp.hi });
  if (span && span.n !== '0') {
    const high = BigInt(span.high);
    for (let lo = BigInt(span.low); lo <= high;) {
      const hi = lo + WINDOW - 1n < high ? lo + WINDOW - 1n : high;
      const [end] = await store.rows<{ end: string }>(loadSql('exporters/sql/digest_window_end.sql').text, {
        cluster,
        lo: lo.toString(),
        hi: hi.toString(),
        budget,
      });
      const last = end && BigInt(end.end) >= lo ? BigInt(end.end) : hi;
      await window(lo, last);
      // The next window starts at the next revision that has a row: a stretch with none (a restore's bump) costs one read.
      const [next] = await store.rows<{ n: string; low: string }>(loadSql('exporters/sql/digest_span.sql').text, {
        cluster,
        lo: (last + 1n).toString(),
        hi: high.toString(),
      });
      if (!next || next.n === '0') break;
      lo = BigInt(next.low);
    }
  }
  return hasher.digest({ after: range.after, through: range.through });
}

/** The gaps and restores the tailer recorded within a period, as a digest states them (the worker's and the verifier's one way). */
export async function periodRecord(
  store: AuditStore,
  cluster: string,
  fromMs: number,
  toMs: number,
): Promise<{ gaps: DigestGap[]; restores: DigestRestore[] }> {
  const params = { cluster, fromMs, toMs };
  const gaps = await store.rows<Omit<DigestGap, 'detectedAt'> & { detectedAtMs: string }>(loadSql('exporters/sql/digest_gaps.sql').text, params);
  const restores = await store.rows<Omit<DigestRestore, 'detectedAt'> & { detectedAtMs: string }>(loadSql('exporters/sql/digest_restores.sql').text, params);
  const iso = (ms: string): string => new Date(Number(ms)).toISOString();
  return {
    gaps: gaps.map(({ detectedAtMs, ...g }) => ({ ...g, detectedAt: iso(detectedAtMs) })),
    restores: restores.map(({ detectedAtMs, ...r }) => ({ ...r, detectedAt: iso(detectedAtMs) })),
  };
}

/** Whether a digest's gaps and restores are still what ClickHouse holds for its period. */
export const sameRecord = (d: Pick<Digest, 'gaps' | 'restores'>, now: { gaps: DigestGap[]; restores: DigestRestore[] }): boolean =>
  canonicalJson(d.gaps) === canonicalJson(now.gaps) && canonicalJson(d.restores) === canonicalJson(now.restores);
