// Rows shaped as the tailer writes them, for the benchmarks that encode or insert them.
import type { AuditEventRow } from '../../core/events.js';
import { makeToken } from '../../core/token.js';

/** The i-th audit event of a synthetic history: grants and releases over 5 000 keys of 20 namespaces. */
export function eventRow(i: number): AuditEventRow {
  const revision = BigInt(1_000_000 + i);
  return {
    cluster: 'bench',
    revision: revision.toString(),
    key: `/l/ns${i % 20}/key-${i % 5000}`,
    event_type: i % 2 ? 'release' : 'grant',
    op: i % 2 ? 'delete' : 'put',
    namespace: `ns${i % 20}`,
    lock_path: `key-${i % 5000}`,
    class: `class-${i % 7}`,
    holder: `spiffe://corp/worker-${i % 300}`,
    session: String(7_587_862_000 + (i % 1000)),
    token: makeToken(40, revision).toString(),
    epoch: 40,
    grant_revision: revision.toString(),
    wait_ms: i % 250,
    wall_time: 1_764_400_000_000 + i,
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: revision.toString(),
    mod_revision: revision.toString(),
    version: '1',
    lease: '0',
    value: '{"holder":"x"}',
    prev_value: '',
    unprotected: 0,
  };
}

/** The i-th event as a grant as the tailer writes it: on a lease, with the lock API's value and proof. */
export function grantEventRow(i: number): AuditEventRow {
  const base = eventRow(i);
  return {
    ...base,
    event_type: 'grant',
    op: 'put',
    lease: '7587862001',
    value: `{"holder":"${base.holder}","session":"7587862001","class":"payments","epoch":40,"waitMs":3,"at":${String(base.wall_time)},"mac":"${'ab'.repeat(22)}"}`,
  };
}
