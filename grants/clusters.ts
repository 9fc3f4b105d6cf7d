// Which etcd cluster a read is about: the one rule every route, report, export
// and CLI command that takes a cluster shares.
import { LockauditError } from '../core/errors.js';
import { reportRows, type ReportDeps } from '../platform/reportQuery.js';
import { loadSql } from '../platform/sql.js';

const CAPTURED = loadSql('grants/capturedCluster.sql');

export interface ClusterDeps extends ReportDeps {
  /** Configured etcd cluster names; the first is the default. */
  clusters: readonly string[];
}

/**
 * The cluster asked for, or the first configured; a cluster no longer configured
 * is still answered while its history is in the store (like GET /v1/tailers).
 * 400 naming the field when neither is true.
 */
export async function pickCluster(deps: ClusterDeps, cluster: string | undefined, field = 'querystring.cluster'): Promise<string> {
  const name = cluster ?? deps.clusters[0];
  if (name !== undefined && deps.clusters.includes(name)) return name;
  const [cp] = name === undefined ? [] : await reportRows<{ revision: string | null }>(deps, CAPTURED, { cluster: name });
  if (name === undefined || BigInt(cp?.revision ?? 0) === 0n)
    throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `${field}: no etcd cluster named "${cluster ?? ''}" is configured or captured`);
  return name;
}
