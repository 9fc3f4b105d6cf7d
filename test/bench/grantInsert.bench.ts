// What the token index costs the tailer's writes: a batch of grant rows (open
// and closed rows of 10 000 grants, RowBinary, as the tailer writes them)
// inserted into `grants` of a store migrated up to sql/160 (two materialized
// views: grants_by_holder, grants_by_key) and of one with sql/170 too (the
// third, grant_tokens), alternating which goes first, in one chdb data
// directory (two databases: chdb allows one directory per process).
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AuditStore } from '../../core/clickhouse.js';
import { migrate } from '../../core/migrations.js';
import { sqlDir } from '../../core/paths.js';
import { grantRows } from '../support/grants.js';
import { heading, percentile, report } from './report.js';

const BATCHES = Number(process.env.BENCH_GRANT_INSERT_BATCHES ?? 40);
const WARMUP = 5;
const T0 = Date.parse('2026-03-01T00:00:00Z');

const dir = mkdtempSync(path.join(tmpdir(), 'lockaudit-bench-grant-insert-'));
const sqlDirs: string[] = [];
async function storeUpTo(version: number): Promise<AuditStore> {
  const sql = mkdtempSync(path.join(tmpdir(), 'lockaudit-bench-sql-'));
  sqlDirs.push(sql);
  for (const f of readdirSync(sqlDir).filter((f) => Number(f.slice(0, 3)) <= version)) copyFileSync(path.join(sqlDir, f), path.join(sql, f));
  const store = new AuditStore({ mode: 'embedded', path: dir, database: `lockaudit_${version}` });
  await migrate(store, { dir: sql });
  return store;
}

function batch(k: number) {
  return Array.from({ length: 10_000 }, (_, i) => {
    const n = k * 10_000 + i;
    const at = T0 + n * 100;
    return grantRows({
      key: `ns${n % 20}/k${n % 5000}`,
      class: 'c1',
      holder: `spiffe://corp/h${n % 300}`,
      rev: 1000 + n * 5,
      at,
      end: { kind: 'release', at: at + 50, rev: 1000 + n * 5 + 2 },
    });
  }).flatMap((r) => (r.closed ? [r.open, r.closed] : [r.open]));
}

const before = await storeUpTo(160);
const after = await storeUpTo(170);
try {
  heading(`grant rows inserted, ${BATCHES} batches of 20 000 rows: with the token index (sql/170) and without`);
  const times = new Map<AuditStore, number[]>([
    [before, []],
    [after, []],
  ]);
  for (let k = 0; k < BATCHES + WARMUP; k++) {
    const rows = batch(k);
    for (const store of k % 2 ? [before, after] : [after, before]) {
      const t = performance.now();
      await store.insert('grants', rows, { binary: true });
      if (k >= WARMUP) times.get(store)?.push(performance.now() - t);
    }
  }
  for (const q of [50, 95]) {
    report({
      name: `grants insert, 20 000 rows, with grant_tokens p${q}`,
      value: percentile(
        [...(times.get(after) ?? [])].sort((a, b) => a - b),
        q,
      ),
      baselineName: `without (sql/160) p${q}`,
      baseline: percentile(
        [...(times.get(before) ?? [])].sort((a, b) => a - b),
        q,
      ),
      unit: 'ms',
      higherIsBetter: false,
    });
  }
} finally {
  await after.close();
  await before.close();
  rmSync(dir, { recursive: true, force: true });
  for (const d of sqlDirs) rmSync(d, { recursive: true, force: true });
}
