// A row of the two-person log (sql/200) as the audit store reads it back: the lock API's record of each act of a
// force-release or epoch-advance request. Read by the report (reports/twoPersonLog) and the alert sinks.
export interface TwoPersonLogRow {
  at_ms: number | string;
  cluster: string;
  /** force-release | epoch-advance */
  kind: string;
  /** requested | approved | rejected | cancelled | refused-<why> */
  action: string;
  request_id: string;
  request_hash: string;
  actor: string;
  requester: string;
  key: string;
  reason: string;
  revision: string;
}
