// The audit store's side of the lock API's shared high-water (issue 21 item 5):
// the highest fencing token of an API grant the tailer ever captured for a
// cluster, on every etcd timeline — rolled back ones included, since those
// tokens were issued. Read from grant_high_water (sql/060), which a
// materialized view on `events` keeps: one row per cluster, no scan of the
// history. The lock engine reads it at start, periodically and after etcd
// was unreachable, never per acquire; roles/ wires it in.
import type { AuditStore } from '../core/clickhouse.js';
import { loadSql } from '../platform/sql.js';

const SQL = { grantHighWater: loadSql('tailer/sql/grantHighWater.sql') };

export interface CapturedGrantHighWater {
  /** The highest token (epoch × 2^48 + revision) of an API grant captured for `cluster`; 0n when none. */
  highestGrantToken(cluster: string): Promise<bigint>;
}

export function capturedGrantHighWater(store: AuditStore): CapturedGrantHighWater {
  return {
    async highestGrantToken(cluster) {
      const rows = await store.rows<{ token: string }>(SQL.grantHighWater.text, { cluster });
      const token = rows[0]?.token ?? '0';
      if (!/^(0|[1-9][0-9]{0,19})$/.test(token)) throw new Error(`grant_high_water returned ${JSON.stringify(token)} for ${cluster}, not a token`);
      return BigInt(token);
    },
  };
}
