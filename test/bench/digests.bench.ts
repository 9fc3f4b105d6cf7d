// The digest worker's cost, beside the plain way in the same run: hashing a
// period's events (paged FINAL reads in (revision, key, timeline) order, one
// canonical JSON line each, sha256) beside ClickHouse writing the same rows
// to a local Parquet file in one statement (what the nightly history file of
// that period costs).
import path from 'node:path';
import { hashPeriodEvents } from '../../exporters/digests/periodContent.js';
import { insertEvents } from '../support/exportData.js';
import { tempDir, tempStore } from '../support/env.js';
import { heading, report } from './report.js';

const ROWS = Number(process.env.BENCH_DIGEST_ROWS ?? 300_000);
const DAY1 = Date.parse('2026-03-01T00:00:00Z');

const { store, close } = await tempStore();
const work = tempDir('lockaudit-bench-digests-');
try {
  await insertEvents(store, 'c1', ROWS, DAY1, 10);
  // The tailer's checkpoint past them: a digest hashes nothing above the cluster's checkpoint (digest_span.sql).
  await store.command("INSERT INTO {db:Identifier}.checkpoints (cluster, revision, leader) VALUES ('c1', {r:UInt64}, 'bench')", { r: 5_000_000 + ROWS });
  heading(`digest of a period of ${ROWS.toLocaleString('en-US')} events (embedded chdb)`);
  const through = { timeline: '0', revision: String(5_000_000 + ROWS) };
  const baselineRate = async (): Promise<number> => {
    const t0 = performance.now();
    await store.command(`INSERT INTO FUNCTION file({file:String}, 'Parquet') SELECT * FROM {db:Identifier}.events FINAL WHERE cluster = 'c1'`, {
      file: path.join(work.dir, `base-${Math.random().toString(36).slice(2)}.parquet`),
    });
    return ROWS / ((performance.now() - t0) / 1000);
  };
  const digestRate = async (): Promise<number> => {
    const t0 = performance.now();
    const d = await hashPeriodEvents(store, 'c1', { after: null, through, fromMs: DAY1, toMs: DAY1 + 86_400_000 });
    if (d.count !== String(ROWS)) throw new Error(`hashed ${d.count} events, expected ${ROWS}`);
    return ROWS / ((performance.now() - t0) / 1000);
  };
  await baselineRate(); // warm-up
  const base: number[] = [];
  const digest: number[] = [];
  for (let i = 0; i < 3; i++) {
    base.push(await baselineRate());
    digest.push(await digestRate());
  }
  report({
    name: 'digest: events hashed/s (one period)',
    value: Math.max(...digest),
    unit: 'events/s',
    baselineName: 'ClickHouse → local Parquet file',
    baseline: Math.max(...base),
    higherIsBetter: true,
  });
} finally {
  await close();
  work.remove();
}
