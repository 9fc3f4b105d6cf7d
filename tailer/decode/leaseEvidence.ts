// The lease witness's evidence in the audit store (sql/057), so it outlives
// the process that heard it: a tailer killed between a hold's put and its
// hand delete + revoke leaves the next leader — here or in another process —
// the proof that the lease could not have expired yet. Any replica may save
// (a fact about etcd, not a capture); every run loads what is still future.
import type { AuditStore } from '../../core/clickhouse.js';
import { loadSql } from '../../platform/sql.js';
import type { EvidenceLog } from './leaseWitness.js';

const LOAD = loadSql('tailer/sql/leaseEvidence.sql');

export function storeEvidenceLog(store: AuditStore, cluster: string): EvidenceLog {
  return {
    async load(nowMs) {
      const rows = await store.rows<{ lease: string; until_ms: string }>(LOAD.text, { cluster, nowMs });
      return rows.map((r) => ({ lease: r.lease, aliveUntil: Number(r.until_ms) }));
    },
    async save(rows) {
      await store.insert(
        'lease_evidence',
        rows.map((r) => ({ cluster, lease: r.lease, alive_until_ms: r.aliveUntil })),
      );
    },
  };
}
