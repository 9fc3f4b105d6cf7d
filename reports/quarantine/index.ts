// Quarantine (issue 11, defect 8): the changes the tailer set aside — a
// value the decoder could not take, rows ClickHouse rejected — with the
// revision, key, reason and raw value, so an operator can see exactly what
// was not decoded. One page at a time by keyset cursor; every read is
// recorded like a grant-history read (the raw values may be sensitive).
import Type, { type Static } from 'typebox';
import { CLUSTER_NAME_PATTERN } from '../../core/config.js';
import { INSTANT_MAX_MS, INSTANT_MIN_MS } from '../../core/instant.js';
import { keyScopeParams, NarrowedSchema, scopeRead, type ReadScope } from '../../grants/scope.js';
import { cursorError, filterDigest, openCursor, sealCursor } from '../cursor.js';
import { loadSql } from '../../platform/sql.js';
import { recordRead } from '../grantHistory/index.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { Instant, NullableString } from '../../grants/schemas.js';
import { resolveWindow } from '../window.js';

const LIST = loadSql('reports/quarantine/list.sql');

/**
 * What a page answers of the values the store keeps whole (issue 42 item 1): each value's first bytes, with its
 * size and sha256; and a page stops before it passes PAGE_BYTES (a next cursor, never a bigger response). An
 * insider's 30 values of 1 MB under the keyspace made one 30 MB response; a page of 1 000 could reach 1.5 GB.
 */
export const QUARANTINE_VALUE_BYTES = 4_096;
export const QUARANTINE_PAGE_BYTES = 1_048_576;

export const QuarantineQuery = Type.Object(
  {
    cluster: Type.Optional(Type.String({ pattern: CLUSTER_NAME_PATTERN, description: 'Only this cluster; default all' })),
    from: Type.Optional(Instant({ description: 'Quarantined at or after. Default: to − LOCKAUDIT_MAX_WINDOW_DAYS' })),
    to: Type.Optional(Instant({ description: 'Quarantined at or before. Default now' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size' })),
    cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,2048}$', description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type QuarantineParams = Static<typeof QuarantineQuery>;

export const QuarantineItemSchema = Type.Object({
  cluster: Type.String(),
  revision: Type.String({ description: 'etcd revision (decimal string); 0 for a spool line' }),
  key: Type.String(),
  op: Type.String({ description: 'put, delete, snapshot or spool' }),
  reason: Type.String(),
  value: Type.String({
    description: `The raw value, as etcd (or the spool) held it — its first ${QUARANTINE_VALUE_BYTES} bytes when it is larger (valueTruncated)`,
  }),
  valueBytes: Type.Integer({ minimum: 0, description: "The whole value's size in bytes" }),
  valueSha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'sha256 of the whole value (hex)' }),
  valueTruncated: Type.Boolean({ description: 'true when `value` is only the first bytes of it' }),
  quarantinedAt: Type.String({ format: 'date-time' }),
});
export type QuarantineItem = Static<typeof QuarantineItemSchema>;

export const QuarantinePageSchema = Type.Object({
  items: Type.Array(QuarantineItemSchema),
  nextCursor: NullableString('Pass as cursor for the next page; null on the last page'),
  narrowedTo: Type.Optional(NarrowedSchema),
});
export type QuarantinePage = Static<typeof QuarantinePageSchema>;

interface Row {
  cluster: string;
  revision_text: string;
  key: string;
  op_text: string;
  value_prefix: string;
  whole_bytes: string | number;
  whole_sha256: string;
  reason: string;
  at_ms: string | number;
}

/**
 * Where the next page starts, and the window the first page fixed (so changes
 * quarantined meanwhile never shift pages). Signed (reports/cursor.ts): the
 * window it carries was checked against LOCKAUDIT_MAX_WINDOW_DAYS when the
 * first page was served, and a hand-made one is refused.
 */
interface Cursor {
  fromMs: number;
  toMs: number;
  atMs: number;
  cluster: string;
  revision: string;
  key: string;
  filters: string;
}

const KIND = 'quarantine/1';

export function encodeQuarantineCursor(c: Cursor, secret: Uint8Array): string {
  return sealCursor(KIND, [c.fromMs, c.toMs, c.atMs, c.cluster, c.revision, c.key, c.filters], secret);
}

const isMs = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= INSTANT_MIN_MS && v <= INSTANT_MAX_MS;

export function decodeQuarantineCursor(text: string, filters: string, secret: Uint8Array): Cursor {
  const fields = openCursor(text, KIND, secret);
  const [fromMs, toMs, atMs, cluster, revision, key, digest] = fields;
  const ok =
    fields.length === 7 &&
    isMs(fromMs) &&
    isMs(toMs) &&
    isMs(atMs) &&
    typeof cluster === 'string' &&
    typeof revision === 'string' &&
    /^[0-9]{1,20}$/.test(revision) &&
    typeof key === 'string' &&
    typeof digest === 'string';
  if (!ok) throw cursorError('is not a cursor this API issued');
  if (digest !== filters) throw cursorError('was issued for other filters');
  return { fromMs, toMs, atMs, cluster, revision, key, filters: digest };
}

/** What the quarantine view needs beyond the report deps: the key its cursors are signed with. */
export interface QuarantineDeps extends ReportDeps {
  cursorKey: Uint8Array;
}

/** One page of quarantined changes; a scoped reader's (grants/scope.ts) only of its scope, its cursors bound to it. */
export async function quarantinePage(deps: QuarantineDeps, p: QuarantineParams, nowMs: number, scope: ReadScope = null): Promise<QuarantinePage> {
  const narrowed = scopeRead(scope, { cluster: p.cluster }, (n) => `querystring.${n}`);
  const asked = { cluster: p.cluster, from: p.from, to: p.to };
  const digest = filterDigest(scope ? { ...asked, scope } : asked);
  const cursor = p.cursor === undefined ? undefined : decodeQuarantineCursor(p.cursor, digest, deps.cursorKey);
  // The first page fixes the window, so changes quarantined meanwhile never shift pages.
  const { fromMs, toMs } = cursor ?? resolveWindow({ from: p.from, to: p.to }, deps.limits.maxWindowDays, nowMs);
  const limit = p.limit ?? 100;
  const rows = await reportRows<Row>(deps, LIST, {
    cluster: p.cluster ?? '',
    fromMs,
    toMs,
    hasCursor: cursor ? 1 : 0,
    afterMs: cursor?.atMs ?? 0,
    afterCluster: cursor?.cluster ?? '',
    afterRevision: cursor?.revision ?? '0',
    afterKey: cursor?.key ?? '',
    limit: limit + 1,
    valueBytes: QUARANTINE_VALUE_BYTES,
    ...keyScopeParams(scope),
  });
  // At most `limit` rows, and no more than PAGE_BYTES of them (always one): a page cut short has a next cursor.
  const page: Row[] = [];
  let bytes = 0;
  for (const r of rows.slice(0, limit)) {
    const size = Buffer.byteLength(r.key) + Buffer.byteLength(r.value_prefix) + Buffer.byteLength(r.reason) + 256;
    if (page.length > 0 && bytes + size > QUARANTINE_PAGE_BYTES) break;
    page.push(r);
    bytes += size;
  }
  const last = page.at(-1);
  return {
    items: page.map((r) => ({
      cluster: r.cluster,
      revision: r.revision_text,
      key: r.key,
      op: r.op_text,
      reason: r.reason,
      value: r.value_prefix,
      valueBytes: Number(r.whole_bytes),
      valueSha256: r.whole_sha256,
      valueTruncated: Number(r.whole_bytes) > QUARANTINE_VALUE_BYTES,
      quarantinedAt: new Date(Number(r.at_ms)).toISOString(),
    })),
    nextCursor:
      rows.length > page.length && last
        ? encodeQuarantineCursor(
            { fromMs, toMs, atMs: Number(last.at_ms), cluster: last.cluster, revision: last.revision_text, key: last.key, filters: digest },
            deps.cursorKey,
          )
        : null,
    ...(narrowed ? { narrowedTo: narrowed } : {}),
  };
}

/** Records the read (who, filters, when) with the grant-history reads: raw values can carry what grants carry. */
export async function recordQuarantineRead(
  deps: Pick<ReportDeps, 'store'>,
  read: { identity: string; tokenId: string; params: QuarantineParams; requestId: string; atMs: number },
): Promise<void> {
  const { params, ...who } = read;
  await recordRead(deps, {
    ...who,
    filters: { view: 'quarantine', cluster: params.cluster, from: params.from, to: params.to, limit: params.limit },
    format: 'quarantine',
    paged: params.cursor !== undefined,
  });
}
