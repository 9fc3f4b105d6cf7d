// Export plans: which rows an export holds, cut into chunks along the table's
// sorting key (grants: cluster, key; events: revision) so every chunk reads
// only its own granules and the total is known before the first row is written.
import type { AuditStore } from '../../core/clickhouse.js';
import { loadSql } from '../../platform/sql.js';
import { grantFilterParams, type GrantFilters, type WindowRule } from '../../grants/filter.js';
import type { ReadScope } from '../../grants/scope.js';
import type { ChunkQuery, ExportPlan } from './chunkedExport.js';

/** Rows per chunk: progress granularity, and the most one chunk holds in memory. */
export const DEFAULT_CHUNK_ROWS = 500_000;

export type { GrantFilters };

export interface TimeRange {
  fromMs: number;
  toMs: number;
}

/**
 * The window rule of every grants export (compliance, CLI, daily history):
 * grants granted in [from, to). Exports of ranges that do not overlap never
 * hold the same grant, and consecutive ones hold every grant once — what an
 * archive needs. (The API's grant history shows what was held during a
 * window: `overlapping`.)
 */
export const EXPORT_WINDOW_RULE: WindowRule = 'granted';

/** `scope`: the requesting reader's (grants/scope.ts); the plan holds only its grants. */
export async function planGrantsExport(
  store: AuditStore,
  filters: GrantFilters,
  range: TimeRange,
  chunkRows = DEFAULT_CHUNK_ROWS,
  scope: ReadScope = null,
): Promise<ExportPlan> {
  const base = grantFilterParams(filters, { ...range, rule: EXPORT_WINDOW_RULE }, scope, 'filters.token', 'include');
  const bounds = await store.rows<{ cluster: string; key: string; cum: string }>(loadSql('exporters/sql/grants_chunks.sql').text, { ...base, chunkRows });
  const query = loadSql('exporters/sql/grants_export.sql').text;
  const open = { hasLo: 0, loCluster: '', loKey: '', hasHi: 0, hiCluster: '', hiKey: '' };
  if (bounds.length === 0) return { total: 0n, chunks: [{ query, params: { ...base, ...open } }] };
  const chunks: ChunkQuery[] = [];
  let lo: { cluster: string; key: string } | undefined;
  for (const b of bounds) {
    chunks.push({
      query,
      params: { ...base, ...open, ...(lo ? { hasLo: 1, loCluster: lo.cluster, loKey: lo.key } : {}), hasHi: 1, hiCluster: b.cluster, hiKey: b.key },
    });
    lo = b;
  }
  return { total: BigInt((bounds[bounds.length - 1] as { cum: string }).cum), chunks };
}

/** Bytes of row text per chunk of a raw-events export at most (one revision's rows stay together, however many). */
export const DEFAULT_CHUNK_BYTES = 64 * 1024 * 1024;

export async function planEventsExport(
  store: AuditStore,
  cluster: string,
  range: TimeRange,
  chunkRows = DEFAULT_CHUNK_ROWS,
  chunkBytes = DEFAULT_CHUNK_BYTES,
): Promise<ExportPlan> {
  const base = { cluster, fromMs: range.fromMs, toMs: range.toMs };
  const bounds = await store.rows<{ revision: string; cum: string }>(loadSql('exporters/sql/events_chunks.sql').text, { ...base, chunkRows, chunkBytes });
  const query = loadSql('exporters/sql/events_export.sql').text;
  const open = { hasLo: 0, lo: '0', hasHi: 0, hi: '0' };
  if (bounds.length === 0) return { total: 0n, chunks: [{ query, params: { ...base, ...open } }] };
  const chunks: ChunkQuery[] = [];
  let lo: string | undefined;
  for (const b of bounds) {
    chunks.push({ query, params: { ...base, ...open, ...(lo ? { hasLo: 1, lo } : {}), hasHi: 1, hi: b.revision } });
    lo = b.revision;
  }
  return { total: BigInt((bounds[bounds.length - 1] as { cum: string }).cum), chunks };
}
