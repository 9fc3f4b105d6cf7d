// Quarantine (issue 11, defect 8): the changes the tailer set aside — a
// value the decoder could not take, rows ClickHouse rejected — with the
// revision, key, reason and raw value, so an operator can see exactly what
// was not decoded. One page at a time by keyset cursor; every read is
// recorded like a grant-history read (the raw values may be sensitive).
import Type, { type Static } from 'typebox';
import { CLUSTER_NAME_PATTERN } from '../../core/config.js';
import { LockauditError } from '../../core/errors.js';
import { loadSql } from '../../platform/sql.js';
import { recordRead } from '../grantHistory/index.js';
import { reportRows, type ReportDeps } from '../query.js';
import { Instant, NullableString } from '../schemas.js';
import { resolveWindow } from '../window.js';

const LIST = loadSql('reports/quarantine/list.sql');

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
  value: Type.String({ description: 'The raw value, as etcd (or the spool) held it' }),
  quarantinedAt: Type.String({ format: 'date-time' }),
});
export type QuarantineItem = Static<typeof QuarantineItemSchema>;

export const QuarantinePageSchema = Type.Object({
  items: Type.Array(QuarantineItemSchema),
  nextCursor: NullableString('Pass as cursor for the next page; null on the last page'),
});
export type QuarantinePage = Static<typeof QuarantinePageSchema>;

interface Row {
  cluster: string;
  revision_text: string;
  key: string;
  op_text: string;
  value: string;
  reason: string;
  at_ms: string | number;
}

const CursorSchema = Type.Object({ fromMs: Type.Integer(), toMs: Type.Integer(), atMs: Type.Integer(), cluster: Type.String(), revision: Type.String({ pattern: '^[0-9]{1,20}$' }), key: Type.String() });
type Cursor = Static<typeof CursorSchema>;

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeCursor(text: string): Cursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const c = parsed as Cursor | undefined;
  const ok = c && typeof c === 'object' && [c.fromMs, c.toMs, c.atMs].every(Number.isInteger) && typeof c.cluster === 'string' && /^[0-9]{1,20}$/.test(String(c.revision)) && typeof c.key === 'string';
  if (!ok) throw new LockauditError('LOCKAUDIT_ERR_REPORT_CURSOR', 'querystring.cursor: not a cursor this report issued');
  return c;
}

export async function quarantinePage(deps: ReportDeps, p: QuarantineParams, nowMs: number): Promise<QuarantinePage> {
  const cursor = p.cursor === undefined ? undefined : decodeCursor(p.cursor);
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
  });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page.map((r) => ({ cluster: r.cluster, revision: r.revision_text, key: r.key, op: r.op_text, reason: r.reason, value: r.value, quarantinedAt: new Date(Number(r.at_ms)).toISOString() })),
    nextCursor: rows.length > limit && last ? encodeCursor({ fromMs, toMs, atMs: Number(last.at_ms), cluster: last.cluster, revision: last.revision_text, key: last.key }) : null,
  };
}

/** Records the read (who, filters, when) with the grant-history reads: raw values can carry what grants carry. */
export async function recordQuarantineRead(deps: Pick<ReportDeps, 'store'>, read: { identity: string; tokenId: string; params: QuarantineParams; requestId: string; atMs: number }): Promise<void> {
  const { params, ...who } = read;
  await recordRead(deps, { ...who, filters: { view: 'quarantine', cluster: params.cluster, from: params.from, to: params.to, limit: params.limit }, format: 'quarantine', paged: params.cursor !== undefined });
}
