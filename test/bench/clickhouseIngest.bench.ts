// ClickHouse ingest of audit-event rows through our client path (JSONEachRow
// batches from Node, embedded chdb), beside ClickHouse generating the same
// rows itself (INSERT … SELECT FROM numbers()) in the same run.
import type { AuditEventRow } from '../../core/events.js';
import { makeToken } from '../../core/token.js';
import { tempStore } from '../support/env.js';
import { heading, report } from './report.js';

const TOTAL = Number(process.env.BENCH_INGEST_ROWS ?? 300_000);
const BATCHES = [1_000, 10_000, 50_000];

function row(i: number): AuditEventRow {
  const revision = BigInt(1_000_000 + i);
  return {
    cluster: 'bench', revision: revision.toString(), key: `/l/ns${i % 20}/key-${i % 5000}`, event_type: i % 2 ? 'release' : 'grant',
    op: i % 2 ? 'delete' : 'put', namespace: `ns${i % 20}`, lock_path: `key-${i % 5000}`, class: `class-${i % 7}`,
    holder: `spiffe://corp/worker-${i % 300}`, session: String(7_587_862_000 + (i % 1000)), token: makeToken(40, revision).toString(),
    epoch: 40, grant_revision: revision.toString(), wait_ms: i % 250, wall_time: 1_764_400_000_000 + i, time_estimated: 0,
    time_error_ms: 0, create_revision: revision.toString(), mod_revision: revision.toString(), version: '1', lease: '0',
    value: '{"holder":"x"}', prev_value: '', unprotected: 0,
  };
}

const GENERATED = `INSERT INTO {db:Identifier}.events
  (cluster, revision, key, event_type, op, namespace, lock_path, class, holder, session, token, epoch, grant_revision, wait_ms,
   wall_time, time_estimated, time_error_ms, create_revision, mod_revision, version, lease, value, prev_value, unprotected)
SELECT 'bench-gen', 1000000 + number, concat('/l/ns', toString(number % 20), '/key-', toString(number % 5000)),
  if(number % 2 = 1, 'release', 'grant'), if(number % 2 = 1, 'delete', 'put'), concat('ns', toString(number % 20)),
  concat('key-', toString(number % 5000)), concat('class-', toString(number % 7)), concat('spiffe://corp/worker-', toString(number % 300)),
  toString(7587862000 + number % 1000), 40 * 281474976710656 + 1000000 + number, 40, 1000000 + number, number % 250,
  fromUnixTimestamp64Milli(toInt64(1764400000000 + number)), 0, 0, 1000000 + number, 1000000 + number, 1, '0', '{"holder":"x"}', '', 0
FROM numbers({n:UInt64})`;

async function main(): Promise<void> {
  const { store, close } = await tempStore();
  try {
    heading(`ClickHouse ingest of audit events (embedded chdb), ${TOTAL.toLocaleString('en-US')} rows per measurement`);
    const t0 = performance.now();
    await store.command(GENERATED, { n: TOTAL });
    const generatedRate = TOTAL / ((performance.now() - t0) / 1000);
    for (const batch of BATCHES) {
      await store.command('TRUNCATE TABLE {db:Identifier}.events');
      const rows = Array.from({ length: batch }, (_, i) => row(i));
      const started = performance.now();
      for (let done = 0; done < TOTAL; done += batch) {
        // Fresh revisions per batch so rows are distinct, as the tailer's are.
        const values = done === 0 ? rows : rows.map((r, i) => ({ ...r, revision: String(1_000_000 + done + i) }));
        await store.insert('events', values);
      }
      const rate = TOTAL / ((performance.now() - started) / 1000);
      report({ name: `insert rows/s, batch ${batch.toLocaleString('en-US')}`, value: rate, unit: 'rows/s', baselineName: 'INSERT … SELECT FROM numbers()', baseline: generatedRate, higherIsBetter: true });
    }
  } finally {
    await close();
  }
}

await main();
