// Running a report query under the report limits: every query carries
// max_execution_time, and ClickHouse's timeout becomes a 400 that names the
// limit (the request was too broad), not a 500.
import type { ClickHouseSettings } from '@clickhouse/client';
import type { AuditStore } from '../core/clickhouse.js';
import type { ReportSettings } from '../core/config.js';
import { LockauditError } from '../core/errors.js';
import type { SqlFile } from './sql.js';

export interface ReportDeps {
  store: AuditStore;
  limits: ReportSettings;
}

const TIMEOUT_CODES = new Set(['159', 'TIMEOUT_EXCEEDED']);

export function isTimeout(err: unknown): boolean {
  const e = err as { code?: unknown; type?: unknown; message?: unknown };
  return TIMEOUT_CODES.has(String(e?.code)) || TIMEOUT_CODES.has(String(e?.type)) || /Timeout exceeded: elapsed/.test(String(e?.message ?? ''));
}

/** Runs `sql` with `params` bound; `db` is added by the store. Rows as JSONEachRow (64-bit integers as strings). */
export async function reportRows<T>(deps: ReportDeps, sql: SqlFile, params: Record<string, unknown>, settings: ClickHouseSettings = {}): Promise<T[]> {
  const missing = sql.params.filter((p) => p !== 'db' && !(p in params));
  if (missing.length) throw new Error(`${sql.name}: parameters not given: ${missing.join(', ')}`);
  return limited(deps, () => deps.store.rows<T>(sql.text, params, { max_execution_time: deps.limits.queryTimeoutMs / 1000, ...settings }));
}

/**
 * Runs `sql` as an operator's status read (AuditStore.statusRows, which
 * refuses any parameter but `db`: it does not queue behind reports and the
 * tailer's reads). Rows as reportRows gives them.
 */
export async function statusRows<T>(deps: ReportDeps, sql: SqlFile): Promise<T[]> {
  return limited(deps, () => deps.store.statusRows<T>(sql.text, { max_execution_time: deps.limits.queryTimeoutMs / 1000 }));
}

/** The query's rows, its timeout as the 400 that names the limit. */
async function limited<T>(deps: ReportDeps, run: () => Promise<T[]>): Promise<T[]> {
  try {
    return await run();
  } catch (err) {
    throw asLimitError(deps, err);
  }
}

/** ClickHouse's timeout as the 400 that names the limit; any other error unchanged. */
export function asLimitError(deps: Pick<ReportDeps, 'limits'>, err: unknown): unknown {
  if (!isTimeout(err)) return err;
  return new LockauditError(
    'LOCKAUDIT_ERR_LIMIT_QUERY_TIMEOUT',
    `the query ran longer than LOCKAUDIT_QUERY_TIMEOUT_MS (${deps.limits.queryTimeoutMs} ms); narrow the window or add filters`,
    { cause: err },
  );
}
