// Shapes that pass between the tailer's modules: raw etcd changes grouped by
// revision (from the watch), and the rows of the tables the tailer writes.
import type { AuditEventRow, EndKind, Origin } from '../core/events.js';

/** One key-value as etcd reported it; 64-bit numbers stay decimal strings. */
export interface KvSnapshot {
  key: string;
  value: string;
  createRevision: string;
  modRevision: string;
  version: string;
  lease: string;
}

/** One change of one key at one revision, with the value it replaced (watch with prev_kv). */
export interface Change {
  type: 'put' | 'delete';
  kv: KvSnapshot;
  prev?: KvSnapshot;
}

/** Every change of the watched keyspace at one revision (etcd never splits a revision across watch responses). */
export interface RevisionChanges {
  revision: bigint;
  changes: Change[];
}

/** The grant side of a grant row: known from the hold value alone. */
export interface GrantSide {
  key: string;
  namespace: string;
  lock_path: string;
  class: string;
  holder: string;
  session: string;
  token: string;
  epoch: number;
  grant_revision: string;
  granted_at: number;
  wait_ms: number;
  start_known: 0 | 1;
  /** absent means 'api' (the column's default, sql/040). */
  origin?: Origin;
}

/** A row of {db}.grants (sql/004): the grant side and how it ended. */
export interface GrantRow extends GrantSide {
  cluster: string;
  spool_id: string;
  end_kind: EndKind | '';
  end_revision: string;
  ended_at: number | null;
  ended_at_error_ms: number;
  duration_ms: number | null;
  unprotected: 0 | 1;
  row_version: string;
}

/** A row of {db}.quarantine (sql/001). */
export interface QuarantineRow {
  cluster: string;
  revision: string;
  key: string;
  op: string;
  /** At most VALUE_KEPT_BYTES of the raw value; `value_bytes` and `value_sha256` say what it was when it is a prefix (sql/290). */
  value: string;
  value_bytes?: number;
  value_sha256?: string;
  reason: string;
  /**
   * Its writer's proof (sql/240): a grant row's (op grants-row) binds the change, which alone lets the grants check
   * excuse its absence; every other row's binds the row (core/proof.ts quarantineRowMac), checked by verify.
   */
  proof?: string;
}

/** Rows the sink writes together; `events` first, the checkpoint only after all of them. */
export interface RowBatch {
  events: AuditEventRow[];
  grants: GrantRow[];
  quarantine: QuarantineRow[];
}

export const rowCount = (b: RowBatch): number => b.events.length + b.grants.length + b.quarantine.length;
