// A batch of one captured change of no lock meaning ('other', under /sys/test/),
// as the tailer hands its sink: for tests of the sink itself.
import type { AuditEventRow } from '../../core/events.js';
import type { RowBatch } from '../../tailer/types.js';

export function otherEventBatch(cluster: string, revision: number, value = '{}'): RowBatch {
  const r = String(revision);
  const row: AuditEventRow = {
    cluster,
    revision: r,
    key: `/sys/test/${r}`,
    event_type: 'other',
    op: 'put',
    namespace: '',
    lock_path: '',
    class: '',
    holder: '',
    session: '0',
    token: '0',
    epoch: 0,
    grant_revision: '0',
    wait_ms: 0,
    wall_time: Date.now(),
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: r,
    mod_revision: r,
    version: '1',
    lease: '0',
    value,
    prev_value: '',
    unprotected: 0,
  };
  return { events: [row], grants: [], quarantine: [] };
}
