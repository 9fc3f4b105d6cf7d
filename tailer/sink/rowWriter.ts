// The one three-table insert (events, then grants, then quarantine), used by
// the sink, the gap snapshot and the spool shipper. Each insert is retried
// (platform/retry.ts) while the error is worth retrying: connection, timeout,
// an overloaded server. An error that says ClickHouse rejected the rows
// themselves is permanent: the rows are bisected until exactly the rejected
// ones are found, and those go to `quarantine` with the reason and the raw
// value while the rest are written — one bad value never freezes capture.
// Rows go as RowBinaryWithDefaults (store.insert's `binary`): no JSON text to
// build here or to parse in ClickHouse, every value exact. The encoder finds
// the rows a column cannot take, and those ClickHouse would silently mangle
// instead of rejecting (a DateTime64 past its range saturates, a UInt32
// wraps), in the one pass that encodes the batch: they are left out and
// quarantined with no bisection (core/rowBinary.ts).
import { keptColumns, quarantineValueDigest } from '../../core/valueBound.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { PREFIX } from '../../core/keyspace.js';
import { quarantinedGrantMac, quarantineRowMac } from '../../core/proof.js';
import { retry, type RetryOptions, type Verdict } from '../../platform/retry.js';
import type { QuarantineRow, RowBatch } from '../types.js';

export interface RowWriteOptions {
  /** Rows per insert statement. Default 20 000. */
  maxRows?: number;
  /** Backoff for retriable errors (classify is this module's). Default: 100 ms doubling to 5 s, no attempt limit. */
  retry?: Omit<RetryOptions, 'classify'>;
  /**
   * The etcd timeline the rows belong to (etcd_timelines.timeline, sql/065):
   * part of the rows' identity, so a restored cluster's rows at reused
   * revisions never replace an earlier timeline's. Default 0 (the column's own).
   */
  timeline?: number;
  /**
   * The leadership term of the writer (LeaderElection.term()), stamped on the
   * events and grants rows: their replacing version leads with it (sql/110),
   * so a deposed leader's late rows never replace its successor's under
   * FINAL. Absent: 0, below every tailer leader's (the rows of writers that
   * do not lead: tests, tools).
   */
  term?: bigint;
  /** The tailer's key: a grant row put in quarantine carries its proof (sql/240), so its absence from `grants` is excused by the grants check. */
  proofSecret?: Buffer;
}

export interface RowWriteResult {
  /** Rows ClickHouse rejected (or would have mangled), now in quarantine. */
  quarantined: QuarantineRow[];
}

// ClickHouse error types that mean "these rows are bad", not "try again".
const REJECTED_ROWS = new Set([
  'CANNOT_PARSE_TEXT',
  'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
  'CANNOT_PARSE_QUOTED_STRING',
  'CANNOT_PARSE_DATE',
  'CANNOT_PARSE_DATETIME',
  'CANNOT_PARSE_NUMBER',
  'CANNOT_PARSE_BOOL',
  'CANNOT_PARSE_UUID',
  'CANNOT_READ_ALL_DATA',
  'INCORRECT_DATA',
  'TYPE_MISMATCH',
  'CANNOT_CONVERT_TYPE',
  'ARGUMENT_OUT_OF_BOUND',
  'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  'DECIMAL_OVERFLOW',
  'TOO_LARGE_STRING_SIZE',
  'CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN',
  'UNKNOWN_ELEMENT_OF_ENUM',
  'INCORRECT_NUMBER_OF_COLUMNS',
]);

/** permanent: ClickHouse rejected these rows; retry: anything else (connection, timeout, overload, unknown). */
export function classifyInsertError(err: unknown): Verdict {
  const type = (err as { type?: unknown } | undefined)?.type;
  return typeof type === 'string' && REJECTED_ROWS.has(type) ? 'permanent' : 'retry';
}

/** A rejected row as a quarantine row: the change it came from, the reason and the raw etcd value (`rawValue` for grant rows, which carry none). */
function quarantineRow(
  table: string,
  row: object,
  reason: string,
  rawValue: (revision: string, key: string) => string | undefined,
  secret?: Buffer,
  timeline = 0,
): QuarantineRow {
  const r = row as Record<string, unknown>;
  const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));
  const because = `ClickHouse rejected the ${table} row: ${reason}`.slice(0, 4_096);
  if (table === 'events') {
    return {
      cluster: str(r.cluster),
      revision: safeRevision(r.revision),
      key: str(r.key),
      op: str(r.op),
      // The row's value is already what the store keeps of it (with the whole one's size and sha256 when a prefix).
      ...(typeof r.value_sha256 === 'string' && r.value_sha256 !== ''
        ? { value: str(r.value), value_bytes: Number(r.value_bytes), value_sha256: r.value_sha256 }
        : keptColumns('value', str(r.value))),
      reason: because,
    };
  }
  const ended = str(r.end_revision) !== '' && str(r.end_revision) !== '0';
  const revision = safeRevision(ended ? r.end_revision : r.grant_revision);
  const key = `${PREFIX.hold}${str(r.key)}`;
  const cluster = str(r.cluster);
  const proof = secret && table === 'grants' ? { proof: quarantinedGrantMac(secret, { cluster, timeline, revision, key }) } : {};
  return { cluster, revision, key, op: `${table}-row`, ...keptColumns('value', rawValue(revision, key) ?? JSON.stringify(row)), reason: because, ...proof };
}

const safeRevision = (v: unknown): string =>
  typeof v === 'string' && /^[0-9]{1,19}$/.test(v) ? v : typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? String(v) : '0';

/** Writes the batch's three tables in order; rows ClickHouse rejects go to quarantine instead. */
export async function writeRows(store: AuditStore, batch: RowBatch, options: RowWriteOptions = {}): Promise<RowWriteResult> {
  const maxRows = options.maxRows ?? 20_000;
  if (options.timeline) stampTimeline(batch, options.timeline);
  if (options.term) stampTerm(batch, options.term.toString());
  const retryOptions: RetryOptions = { initialMs: 100, maxMs: 5_000, ...options.retry, classify: classifyInsertError };
  // RowBinary (core/rowBinary.ts): a row with a value its column cannot take is left out as the batch is encoded and
  // handed to `reject`; rows ClickHouse itself rejects are found by bisection (insertOrIsolate).
  const insert = (table: string, rows: readonly object[]): Promise<void> =>
    retry(() => store.insert(table, rows, { binary: true, rejected: (row, reason) => reject(table, row, reason) }), retryOptions);
  const quarantined: QuarantineRow[] = [];
  const changeId = (revision: string, key: string): string => `${revision} ${key}`;
  // Built only when a row is rejected (rare): building it for every batch was work and garbage on the hot path.
  let values: Map<string, string> | undefined;
  const rawValue = (revision: string, key: string): string | undefined => {
    values ??= new Map(batch.events.map((e) => [changeId(String(e.revision), e.key), e.value]));
    return values.get(changeId(revision, key));
  };
  const seen = new Set<string>();
  const reject = (table: string, row: object, reason: string): void => {
    const q = quarantineRow(table, row, reason, rawValue, options.proofSecret, options.timeline);
    // One change rejected in events and in grants is one quarantined change (the first reason).
    if (seen.has(changeId(q.revision, q.key))) return;
    seen.add(changeId(q.revision, q.key));
    quarantined.push(q);
  };
  for (const [table, rows] of [
    ['events', batch.events],
    ['grants', batch.grants],
  ] as const) {
    // A change whose event row was quarantined is quarantined whole: its grant row is not written either.
    const fit: readonly object[] =
      table === 'grants' && seen.size > 0
        ? rows.filter((row) => {
            const q = quarantineRow(table, row, '', rawValue, options.proofSecret, options.timeline);
            return !seen.has(changeId(q.revision, q.key));
          })
        : rows;
    for (let i = 0; i < fit.length; i += maxRows) {
      for (const rejected of await insertOrIsolate(insert, table, fit.slice(i, i + maxRows))) reject(table, rejected.row, rejected.reason);
    }
  }
  const quarantine = [...batch.quarantine, ...quarantined];
  if (options.timeline) stampTimeline({ events: [], grants: [], quarantine: quarantined }, options.timeline);
  // Every other quarantine row carries its writer's proof of what it says (verify's quarantine check): one written
  // by hand, or edited, is named. A grant row keeps the proof the grants check reads (above).
  if (options.proofSecret) for (const q of quarantine) if (q.proof === undefined) q.proof = proveQuarantineRow(options.proofSecret, q);
  // Not left out here: a quarantine row the store cannot take fails the batch (retried), it is not lost.
  for (let i = 0; i < quarantine.length; i += maxRows)
    await retry(() => store.insert('quarantine', quarantine.slice(i, i + maxRows), { binary: true }), retryOptions);
  return { quarantined };
}

/** The proof of a quarantine row as stored (its timeline stamped, or 0). */
export function proveQuarantineRow(secret: Buffer, q: QuarantineRow): string {
  const timeline = (q as { timeline?: number }).timeline ?? 0;
  // The text kept and, for a prefix, the whole value's size and sha256 (sql/290): an edit of any is named.
  const valueSha256 = quarantineValueDigest({ value: q.value, bytes: q.value_bytes ?? 0, sha256: q.value_sha256 ?? '' });
  return quarantineRowMac(secret, { cluster: q.cluster, timeline, revision: q.revision, key: q.key, op: q.op, valueSha256, reason: q.reason });
}

/** Sets `term` on every events and grants row (in place; quarantine rows carry none). */
function stampTerm(batch: RowBatch, term: string): void {
  for (const rows of [batch.events, batch.grants] as const) {
    for (const row of rows) (row as { term?: string }).term = term;
  }
}

/** Sets `timeline` on every row of the batch (in place: this runs on the hot path, only after a restore). */
function stampTimeline(batch: RowBatch, timeline: number): void {
  for (const rows of [batch.events, batch.grants, batch.quarantine] as const) {
    for (const row of rows) (row as { timeline?: number }).timeline = timeline;
  }
}

/**
 * Inserts the rows; when ClickHouse rejects them, halves and tries again until
 * the rejected rows stand alone. Rows of a half that was written are written
 * again only if that half is split (replays write identical rows, which the
 * ReplacingMergeTree tables keep once).
 */
async function insertOrIsolate(
  insert: (table: string, rows: readonly object[]) => Promise<void>,
  table: string,
  rows: readonly object[],
): Promise<Array<{ row: object; reason: string }>> {
  try {
    await insert(table, rows);
    return [];
  } catch (err) {
    if (classifyInsertError(err) !== 'permanent') throw err;
    if (rows.length === 1) return [{ row: rows[0] as object, reason: firstLine((err as Error).message) }];
    const mid = Math.ceil(rows.length / 2);
    return [...(await insertOrIsolate(insert, table, rows.slice(0, mid))), ...(await insertOrIsolate(insert, table, rows.slice(mid)))];
  }
}

const firstLine = (message: string): string => message.split('\n')[0]?.slice(0, 1_000) ?? '';
