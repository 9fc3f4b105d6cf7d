// Audit events: what the tailer writes to {db}.events, one row per
// (cluster, revision, key). 64-bit columns travel as decimal strings.

export const EVENT_TYPES = [
  'grant',
  'release',
  'expiry',
  'force-release',
  'session-close',
  'epoch-release', // a restored hold deleted by an epoch advance
  'deleted', // a hold deleted with no marker while its lease was alive (asked of etcd, or its TTL seen by the lease witness): by hand, not an expiry
  'queue-enter',
  'queue-leave',
  'class-change',
  'epoch-advance',
  'clock',
  'marker',
  'force-record',
  'snapshot-hold', // a hold seen in a snapshot after a gap: its start is unknown
  'unprotected-grant', // granted without quorum, shipped from a fail-open spool
  'other', // a change nobody decodes (kept raw, never dropped)
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** How a grant ended, as reports show it (null while still held): the one list; schemas and the console derive from it. */
export const END_KINDS = ['release', 'expiry', 'force', 'session-close', 'epoch-advance', 'deleted', 'unknown'] as const;
export type EndKind = (typeof END_KINDS)[number];

/** Who wrote a hold: the lock API (valid proof of origin) or someone bypassing it. */
export type Origin = 'api' | 'foreign';

export const END_KIND_BY_EVENT: Partial<Record<EventType, EndKind>> = {
  release: 'release',
  expiry: 'expiry',
  'force-release': 'force',
  'session-close': 'session-close',
  'epoch-release': 'epoch-advance',
  deleted: 'deleted',
};

export type EventOp = 'put' | 'delete' | 'snapshot' | 'spool';

/** A row of {db}.events. */
export interface AuditEventRow {
  cluster: string;
  revision: string;
  key: string;
  event_type: EventType;
  op: EventOp;
  namespace: string;
  lock_path: string;
  class: string;
  holder: string;
  session: string;
  token: string;
  epoch: number;
  grant_revision: string;
  wait_ms: number;
  /** ms since the Unix epoch */
  wall_time: number;
  time_estimated: 0 | 1;
  time_error_ms: number;
  create_revision: string;
  mod_revision: string;
  version: string;
  lease: string;
  /** At most VALUE_KEPT_BYTES of the value (core/valueBound.ts); with the next two when it is only a prefix. */
  value: string;
  prev_value: string;
  /** The whole value's size and sha256, set when `value` keeps only its prefix (absent: kept whole, sql/290). */
  value_bytes?: number;
  value_sha256?: string;
  prev_value_bytes?: number;
  prev_value_sha256?: string;
  unprotected: 0 | 1;
  /** Hold events only; absent means 'api' (the column's default, sql/040). */
  origin?: Origin;
}
