// A synthetic captured record for digest tests: per second, one /sys/clock
// write (the tailer's heartbeat, which seals periods) and three grants, at
// revisions 100 + 10·s (clock) and +1..+3 (grants), each grant's row, and a
// checkpoint past them all. Written straight into ClickHouse, like exportData.ts.
import type { AuditStore } from '../../core/clickhouse.js';

export const CLOCK_REVISION = (s: number): number => 100 + 10 * s;

export async function seedDigestRecord(store: AuditStore, cluster: string, startMs: number, seconds: number): Promise<void> {
  await store.command(
    `INSERT INTO {db:Identifier}.events (cluster, revision, key, event_type, op, namespace, lock_path, class, holder, session, token, epoch, grant_revision,
       wait_ms, wall_time, time_estimated, time_error_ms, create_revision, mod_revision, version, lease, value, prev_value, unprotected)
     SELECT {cluster:String}, 100 + 10 * intDiv(number, 4) + number % 4,
       if(number % 4 = 0, '/sys/clock', concat('/l/ns/key-', toString(intDiv(number, 4)), '-', toString(number % 4))),
       if(number % 4 = 0, 'clock', 'grant'), 'put', if(number % 4 = 0, '', 'ns'), if(number % 4 = 0, '', concat('key-', toString(intDiv(number, 4)), '-', toString(number % 4))), if(number % 4 = 0, '', 'class-1'),
       if(number % 4 = 0, '', 'spiffe://corp/worker'), '7587862000', if(number % 4 = 0, 0, 40 * 281474976710656 + 100 + 10 * intDiv(number, 4) + number % 4), 40,
       if(number % 4 = 0, 0, 100 + 10 * intDiv(number, 4) + number % 4), 0,
       fromUnixTimestamp64Milli(toInt64({start:Int64} + intDiv(number, 4) * 1000 + if(number % 4 = 0, 500, 600)), 'UTC'), 0, 0,
       100 + 10 * intDiv(number, 4) + number % 4, 100 + 10 * intDiv(number, 4) + number % 4, 1, '0', '{}', '', 0
     FROM numbers({n:UInt64})`,
    { cluster, n: seconds * 4, start: startMs },
  );
  // Each grant's row, as the tailer derives it (exports check the rows against these events: exporters/checks/grantsCheck.ts).
  await store.command(
    `INSERT INTO {db:Identifier}.grants (cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, granted_at, wait_ms,
       end_kind, end_revision, ended_at, duration_ms, unprotected, start_known, row_version)
     SELECT cluster, substring(key, 4), namespace, lock_path, class, holder, session, token, epoch, grant_revision, wall_time, wait_ms, '', 0, NULL, NULL, 0, 1, 0
     FROM {db:Identifier}.events WHERE cluster = {cluster:String} AND event_type = 'grant'`,
    { cluster },
  );
  await store.insert('checkpoints', [{ cluster, revision: String(CLOCK_REVISION(seconds) + 5), leader: 'test' }]);
}
