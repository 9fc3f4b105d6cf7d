// Grant history (DESIGN §4): which grants a key, prefix, holder, class,
// namespace or token had in a window — each with start, end, end kind,
// duration, wait and token — paged by cursor, as JSON or CSV.
import type { ClickHouseSettings } from '@clickhouse/client';
import Type, { type Static } from 'typebox';
import { END_KINDS, type EndKind } from '../../core/events.js';
import { LockauditError } from '../../core/errors.js';
import { parseInstant } from '../../core/instant.js';
import { Decimal64, Instant, NullableNumber, NullableString } from '../../grants/schemas.js';
import { grantFilterParams, grantFilterProperties, pickGrantFilters } from '../../grants/filter.js';
import { keyScopeParams, NarrowedSchema, scopeRead, type Narrowed, type ReadScope } from '../../grants/scope.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { toCsv } from '../../grants/csv.js';
import { isoOrNull, num } from '../render.js';
import { loadSql } from '../../platform/sql.js';
import { resolveWindow } from '../window.js';
import { decodeCursor, encodeCursor, filterDigest, type Cursor } from './cursor.js';

const HISTORY = loadSql('reports/grantHistory/history.sql');
const HISTORY_DESC = loadSql('reports/grantHistory/historyDesc.sql');
const TOKEN_KEYS = loadSql('reports/grantHistory/tokenKeys.sql');

export const GrantHistoryQuery = Type.Object(
  {
    ...grantFilterProperties(),
    from: Type.Optional(Instant({ description: 'Window start: grants still held at or after this instant' })),
    to: Type.Optional(Instant({ description: 'Window end: grants granted at or before this instant. Default now, fixed by the first page' })),
    cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,2048}$', description: 'nextCursor of the previous page' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, default: 100, description: 'Page size (at most LOCKAUDIT_MAX_PAGE_SIZE)' })),
    order: Type.Optional(
      Type.Union([Type.Literal('desc'), Type.Literal('asc')], {
        default: 'desc',
        description:
          'desc (the default): newest grant first, as audit logs open; asc: oldest first. By grant time, then cluster, key, grant revision. A cursor keeps the order it was issued for',
      }),
    ),
    format: Type.Optional(
      Type.Union([Type.Literal('json'), Type.Literal('csv'), Type.Literal('arrow')], {
        default: 'json',
        description: 'json, csv, or arrow: an Arrow IPC stream (application/vnd.apache.arrow.stream) with 64-bit tokens and revisions as UInt64',
      }),
    ),
  },
  { additionalProperties: false },
);
export type GrantHistoryParams = Static<typeof GrantHistoryQuery>;

export const GrantItemSchema = Type.Object({
  cluster: Type.String(),
  key: Type.String(),
  grantRevision: Decimal64(),
  token: Decimal64(),
  holder: Type.String(),
  class: Type.String(),
  namespace: Type.String(),
  grantedAt: Type.String({ format: 'date-time' }),
  endedAt: NullableString('null while still held'),
  endKind: Type.Union([Type.Enum(END_KINDS), Type.Null()], {
    description:
      'How the hold ended; deleted: removed with no marker while its lease was alive (by hand, not an expiry); unknown: ended inside a recorded gap; null while still held',
  }),
  endRevision: NullableString('The revision of the end event (decimal string); null while still held'),
  waitMs: Type.Number(),
  durationMs: NullableNumber('null while still held'),
  unprotected: Type.Boolean({ description: 'Granted without quorum (fail-open), token 0' }),
  origin: Type.Union([Type.Literal('api'), Type.Literal('foreign')], {
    description: "foreign: a hold put straight into etcd without the lock API's proof of origin (not made by the API)",
  }),
  timeline: Type.Integer({
    minimum: 0,
    description:
      "The etcd timeline the grant was captured in (0 until the cluster's first restore recorded by this version; each restore starts the next). A grant held across a restore shows once, as the later timeline's",
  }),
  rolledBack: Type.Boolean({
    description: 'etcd later rolled this grant back (a restore to before it): it was a real hold, but the restored cluster never had it',
  }),
  startKnown: Type.Boolean({
    description: 'false: granted while history was lost (a recorded gap); grantedAt is then when capture first saw it held, not its grant',
  }),
  endedAtErrorMs: NullableNumber(
    'How far endedAt may be off, ms (0: the end carries its own time; an expiry or hand delete is bracketed between clock writes); null while still held',
  ),
});
export type GrantItem = Static<typeof GrantItemSchema>;

export const GRANT_EXAMPLE: GrantItem = {
  cluster: 'local',
  key: 'payments/acct-42',
  grantRevision: '1734',
  token: '11258999068428022',
  holder: 'spiffe://corp/payments-worker',
  class: 'ledger-entry',
  namespace: 'payments',
  grantedAt: '2025-11-29T03:11:58.120Z',
  endedAt: '2025-11-29T03:12:31.004Z',
  endKind: 'expiry',
  endRevision: '1790',
  waitMs: 12,
  durationMs: 32884,
  unprotected: false,
  origin: 'api',
  timeline: 0,
  rolledBack: false,
  startKnown: true,
  endedAtErrorMs: 480,
};

export const GrantPageSchema = Type.Object(
  {
    items: Type.Array(GrantItemSchema),
    nextCursor: NullableString('Pass as cursor for the next page; null on the last page'),
    narrowedTo: Type.Optional(NarrowedSchema),
  },
  { examples: [{ items: [GRANT_EXAMPLE], nextCursor: 'WzEsMTczNDQ0…' }] },
);
export interface GrantPage {
  items: GrantItem[];
  nextCursor: string | null;
  narrowedTo?: Narrowed;
}

interface HistoryRow {
  cluster: string;
  key: string;
  grant_revision: string;
  token: string;
  holder: string;
  class: string;
  namespace: string;
  granted_at_ms: string | number;
  ended_at_ms: string | number | null;
  end_kind: string;
  end_revision: string;
  wait_ms: string | number;
  duration_ms: string | number | null;
  unprotected: number;
  spool_id: string;
  origin: string;
  /** sql/065; absent from queries that read no timeline (read as 0). */
  timeline?: number | string;
  rolled_back_by?: number | string;
  start_known?: number | string;
  ended_at_error_ms?: number | string;
}

/** The order of a page: newest first unless asked otherwise. */
export const orderOf = (p: Pick<GrantHistoryParams, 'order'>): 'desc' | 'asc' => p.order ?? 'desc';

/** The filters a cursor is bound to (everything but cursor, limit and format; the order too, so a cursor never turns back). */
function filtersOf(p: GrantHistoryParams): Record<string, unknown> {
  return { ...pickGrantFilters(p), from: p.from, to: p.to, order: orderOf(p) };
}

export function toItem(r: HistoryRow): GrantItem {
  const endKind = (END_KINDS as readonly string[]).includes(r.end_kind) ? (r.end_kind as EndKind) : null;
  return {
    cluster: r.cluster,
    key: r.key,
    grantRevision: String(r.grant_revision),
    token: String(r.token),
    holder: r.holder,
    class: r.class,
    namespace: r.namespace,
    grantedAt: new Date(Number(r.granted_at_ms)).toISOString(),
    endedAt: isoOrNull(num(r.ended_at_ms)),
    endKind,
    endRevision: endKind === null ? null : String(r.end_revision),
    waitMs: num(r.wait_ms) ?? 0,
    durationMs: endKind === null ? null : num(r.duration_ms),
    unprotected: Number(r.unprotected) === 1,
    origin: r.origin === 'foreign' ? 'foreign' : 'api',
    timeline: Number(r.timeline ?? 0),
    rolledBack: Number(r.rolled_back_by ?? 0) > 0,
    startKnown: Number(r.start_known ?? 1) === 1,
    endedAtErrorMs: endKind === null ? null : (num(r.ended_at_error_ms ?? 0) ?? 0),
  };
}

/** What grant history needs beyond the report deps: the key cursors are signed with. */
export interface GrantHistoryDeps extends ReportDeps {
  cursorKey: Uint8Array;
}

/** What one page's queries bind, resolved from the request: limits checked, cursor verified, window pinned. */
export interface ResolvedPage {
  limit: number;
  digest: string;
  window: { fromMs: number; toMs: number };
  /** The query parameters every grant-history query binds (filters, scope, window, order as `desc` 0/1, cursor position), `limit` excepted. */
  params: Record<string, string | number | string[]>;
  /** What a scoped reader's request was narrowed to (grants/scope.ts), or null. */
  narrowed: Narrowed | null;
}

/**
 * Which table a history query reads: the same rows either way. A key reads
 * grants_by_key (sorted by key, then grant time: one key is one range, already
 * in the page's order); a holder with no key or token reads grants_by_holder
 * (sorted by holder: one holder is one range); everything else reads `grants`
 * (sorted by cluster, key, revision; a token whose key tokenKey() could not
 * name finds its grant by bloom filter).
 */
export function historySource(p: Pick<GrantHistoryParams, 'key' | 'holder' | 'token'>): 'grants' | 'grants_by_key' | 'grants_by_holder' {
  if (p.key !== undefined) return 'grants_by_key';
  return p.holder !== undefined && p.token === undefined ? 'grants_by_holder' : 'grants';
}

/**
 * ClickHouse settings of a page query on `source`, each always given (chdb
 * keeps a setting on its connection for the queries after). On grants_by_key
 * FINAL reads the key's range in order: splitting it into layers and
 * buffering chunks (ClickHouse's defaults, for wide parallel FINAL scans) made
 * it read the whole key instead of stopping after the page — 250 000 rows of
 * one key: p50 244 → 109 ms (docs/performance.md). Other sources keep the defaults.
 */
export function historySettings(source: string): ClickHouseSettings {
  const inOrder = source === 'grants_by_key' ? 0 : 1;
  return {
    read_in_order_use_buffering: inOrder,
    split_intersecting_parts_ranges_into_layers_final: inOrder,
    split_parts_ranges_into_intersecting_and_non_intersecting_final: inOrder,
  };
}

/**
 * The one key a token lookup (a token and no key) was granted on, from
 * grant_tokens (sql/170: sorted by token, one granule), so that the page reads
 * that key's range of grants_by_key instead of every granule's bloom filter in
 * `grants` (100 M events: API p95 113 → 79 ms, docs/performance.md). The key only
 * routes: the page keeps every filter of the request, the token's included,
 * and its cursor is bound to the request's filters, not the routed key.
 * undefined when the table names no key (a token no grant has, or one just
 * written) or more than one (a token granted on two keys: two clusters, or an
 * insider's copy): the page reads `grants`, which is always right. Two
 * queries, not one read: a second key that gets the token between them (its
 * grant written in those milliseconds) is missed by this page and found by the
 * next request, as a grant written just after a page is.
 */
export async function tokenKey(deps: ReportDeps, p: GrantHistoryParams, scope: ReadScope = null): Promise<string | undefined> {
  if (p.token === undefined || p.key !== undefined) return undefined;
  // grantFilterParams checks the token as the page does (a 400 at or above 2^64).
  const { token, cluster } = grantFilterParams(pickGrantFilters(p), { fromMs: 0, toMs: 0, rule: 'overlapping' }, null);
  const keys = await reportRows<{ key: string }>(deps, TOKEN_KEYS, { token, cluster, ...keyScopeParams(scope) });
  return keys.length === 1 ? keys[0]?.key : undefined;
}

/**
 * resolvePage, a token lookup routed to its key's range by tokenKey(). The
 * request is checked first (limit, cursor, token): a bad one is a 400 before
 * any query.
 */
export async function planPage(deps: GrantHistoryDeps, p: GrantHistoryParams, nowMs: number, scope: ReadScope = null): Promise<ResolvedPage> {
  const page = resolvePage(deps, p, nowMs, scope);
  const routedKey = await tokenKey(deps, p, scope);
  // The key the token implies, as a filter the request did not give; the cursor's digest stays the request's own.
  return routedKey === undefined ? page : { ...page, params: { ...page.params, key: routedKey, source: historySource({ ...p, key: routedKey }) } };
}

/**
 * Checks a request's limits, scope and cursor and pins its window (the first page fixes `to`; `nowMs` is "now").
 * A scoped reader's cursor is bound to its scope too: another scope's cursor is refused.
 */
export function resolvePage(deps: GrantHistoryDeps, p: GrantHistoryParams, nowMs: number, scope: ReadScope = null): ResolvedPage {
  const limit = p.limit ?? 100;
  if (limit > deps.limits.maxPageSize) {
    throw new LockauditError('LOCKAUDIT_ERR_LIMIT_PAGE_SIZE', `querystring.limit: ${limit} is more than LOCKAUDIT_MAX_PAGE_SIZE (${deps.limits.maxPageSize})`);
  }
  const filters = pickGrantFilters(p);
  const narrowed = scopeRead(scope, filters, (n) => `querystring.${n}`);
  const digest = filterDigest(scope ? { ...filtersOf(p), scope } : filtersOf(p));
  const cursor: Cursor | undefined = p.cursor === undefined ? undefined : decodeCursor(p.cursor, digest, deps.cursorKey);
  // A key or token bounds the query by itself: without `from` it searches all
  // time up to `to` (before: `to` alone narrowed it to the 31 days before it,
  // unsaid). Anything broader gets the widest window allowed, ending now.
  const narrow = p.key !== undefined || p.token !== undefined;
  const pinnedTo = cursor?.toMs ?? (p.to !== undefined ? (parseInstant(p.to) ?? nowMs) : nowMs);
  const window =
    narrow && p.from === undefined && (p.to === undefined || parseInstant(p.to) !== undefined)
      ? { fromMs: 0, toMs: pinnedTo }
      : resolveWindow({ from: p.from, to: p.to ?? new Date(pinnedTo).toISOString() }, deps.limits.maxWindowDays, nowMs);
  const params = {
    source: historySource(p),
    ...grantFilterParams(filters, { ...window, rule: 'overlapping' }, scope),
    desc: orderOf(p) === 'desc' ? 1 : 0,
    hasCursor: cursor ? 1 : 0,
    afterMs: cursor?.after.grantedAtMs ?? 0,
    afterCluster: cursor?.after.cluster ?? '',
    afterKey: cursor?.after.key ?? '',
    afterRevision: cursor?.after.grantRevision ?? '0',
    afterSpool: cursor?.after.spoolId ?? '',
    afterTimeline: cursor?.after.timeline ?? 0,
  };
  return { limit, digest, window, params, narrowed };
}

/** The sort key of a grant-history row: where the next page starts. */
export interface PagePosition {
  granted_at_ms: string | number;
  cluster: string;
  key: string;
  grant_revision: string;
  spool_id: string;
  /** Absent from a row that reads no timeline: 0. */
  timeline?: number | string;
}

/** The cursor of the page whose last row is `last`. */
export function cursorAfter(deps: GrantHistoryDeps, page: ResolvedPage, last: PagePosition): string {
  return encodeCursor(
    {
      after: {
        grantedAtMs: Number(last.granted_at_ms),
        cluster: last.cluster,
        key: last.key,
        grantRevision: String(last.grant_revision),
        spoolId: last.spool_id,
        timeline: Number(last.timeline ?? 0),
      },
      toMs: page.window.toMs,
      filters: page.digest,
    },
    deps.cursorKey,
  );
}

/** One page of grant history. `nowMs` pins `to` on the first page. */
export async function grantHistory(deps: GrantHistoryDeps, p: GrantHistoryParams, nowMs: number, scope: ReadScope = null): Promise<GrantPage> {
  const page = await planPage(deps, p, nowMs, scope);
  const limit = page.limit;
  const rows = await reportRows<HistoryRow>(
    deps,
    page.params.desc === 1 ? HISTORY_DESC : HISTORY,
    {
      ...page.params,
      limit: limit + 1, // one more tells whether another page exists
    },
    historySettings(String(page.params.source)),
  );
  const served = rows.slice(0, limit);
  const last = served[served.length - 1];
  const nextCursor = rows.length > limit && last ? cursorAfter(deps, page, last) : null;
  return { items: served.map(toItem), nextCursor, ...(page.narrowed ? { narrowedTo: page.narrowed } : {}) };
}

export const CSV_HEADER = [
  'cluster',
  'key',
  'grantRevision',
  'token',
  'holder',
  'class',
  'namespace',
  'grantedAt',
  'endedAt',
  'endKind',
  'endRevision',
  'waitMs',
  'durationMs',
  'unprotected',
  'origin',
  'timeline',
  'rolledBack',
  'startKnown',
  'endedAtErrorMs',
] as const;

/** CSV of one page; 64-bit values stay decimal text. */
export function grantsCsv(items: readonly GrantItem[]): string {
  return toCsv(
    CSV_HEADER,
    items.map((g) => CSV_HEADER.map((h) => g[h])),
  );
}

/** Records a read of grant history: who asked which filters, when. */
export async function recordGrantRead(
  deps: Pick<ReportDeps, 'store'>,
  read: { identity: string; tokenId: string; params: GrantHistoryParams; requestId: string; atMs: number },
): Promise<void> {
  const { params, ...who } = read;
  await recordRead(deps, {
    ...who,
    filters: { ...filtersOf(params), limit: params.limit },
    format: params.format ?? 'json',
    paged: params.cursor !== undefined,
  });
}

/** Records a read of grants through any view (history page, timeline): who, which filters, which view or format, when. */
export async function recordRead(
  deps: Pick<ReportDeps, 'store'>,
  read: { identity: string; tokenId: string; filters: Record<string, unknown>; format: string; paged: boolean; requestId: string; atMs: number },
): Promise<void> {
  await deps.store.insert('grant_history_reads', [
    {
      at: read.atMs,
      identity: read.identity,
      token_id: read.tokenId,
      filters: JSON.stringify(read.filters),
      format: read.format,
      paged: read.paged ? 1 : 0,
      request_id: read.requestId,
    },
  ]);
}
