// Key history at a very hot key's size (issue 22 item 2): the page before
// sql/140 (`grants`, sorted by cluster, key, revision, with the key filter as
// `'' = k OR key = k`) beside the page on grants_by_key (sorted by key, grant
// time; read in order), same data, same run, alternating; each page checked
// to serve the same grants. The data: BENCH_KEY_HISTORY_KEYS keys (default 5)
// of BENCH_KEY_HISTORY_ROWS grants each (default 250 000, ≈ a very hot key of
// the reports bench at 100 M events), open rows then closed rows (1 in 7
// still held), as the tailer writes them. BENCH_KEY_HISTORY_ITER runs each.
import { randomBytes } from 'node:crypto';
import { loadSql } from '../../platform/sql.js';
import { historySettings, resolvePage } from '../../reports/grantHistory/index.js';
import { reportRows } from '../../platform/reportQuery.js';
import { tempStore, testConfig } from '../support/env.js';
import { heading, percentile, report } from './report.js';

const ROWS = Number(process.env.BENCH_KEY_HISTORY_ROWS ?? 250_000);
const KEYS = Number(process.env.BENCH_KEY_HISTORY_KEYS ?? 5);
const ITER = Number(process.env.BENCH_KEY_HISTORY_ITER ?? 15);
const T0 = Date.parse('2026-09-01T00:00:00Z');

const GRANTS = `INSERT INTO {db:Identifier}.grants
  (cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
   end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version)
SELECT 'bench', concat('ns0/acct-', toString(number % {keys:UInt64})), 'ns0', concat('acct-', toString(number % {keys:UInt64})), 'class-0',
  concat('spiffe://corp/worker-', toString(number % 2000)), '7587862', 40 * 281474976710656 + 1000 + 5 * number, 40, 1000 + 5 * number, '',
  fromUnixTimestamp64Milli(toInt64({t0:Int64} + number * 1000), 'UTC'), number % 2000,
  if({closed:UInt8} = 1, 'release', ''), if({closed:UInt8} = 1, 1004 + 5 * number, 0),
  if({closed:UInt8} = 1, fromUnixTimestamp64Milli(toInt64({t0:Int64} + number * 1000 + 700), 'UTC'), NULL), 0,
  if({closed:UInt8} = 1, 700, NULL), 0, 1, if({closed:UInt8} = 1, 1004 + 5 * number, 0)
FROM numbers({n:UInt64})
WHERE {closed:UInt8} = 0 OR number % 7 != 0`;

const { store, close } = await tempStore();
try {
  heading(`key history: ${KEYS} keys × ${ROWS.toLocaleString('en-US')} grants`);
  const t = performance.now();
  for (const closed of [0, 1]) await store.command(GRANTS, { keys: KEYS, t0: T0, n: ROWS * KEYS, closed }, { max_insert_threads: '2' });
  process.stdout.write(`generated in ${((performance.now() - t) / 1000).toFixed(1)} s (grants, grants_by_holder, grants_by_key)\n`);
  const history = loadSql('reports/grantHistory/history.sql');
  const keyLine = "key = if({key:String} = '', key, {key:String})";
  const before = history.text.replace(keyLine, "({key:String} = '' OR key = {key:String})");
  if (before === history.text) throw new Error('history.sql: the key line to compare against is not there');
  const config = testConfig();
  const deps = { store, limits: config.reports, cursorKey: randomBytes(32) };
  const nowMs = T0 + ROWS * KEYS * 1000 + 60_000;
  const key = (i: number) => `ns0/acct-${i % KEYS}`;
  const cases: Record<string, (i: number) => Record<string, string | number | string[]>> = {
    first: (i: number) => resolvePage(deps, { key: key(i), order: 'asc', limit: 100 }, nowMs).params,
    // A cursor half-way through the key's grants.
    mid: (i: number) => ({
      ...resolvePage(deps, { key: key(i), order: 'asc', limit: 100 }, nowMs).params,
      hasCursor: 1,
      afterMs: T0 + Math.floor((ROWS * KEYS) / 2) * 1000,
      afterCluster: 'bench',
    }),
  };
  for (const [name, params] of Object.entries(cases)) {
    const old: number[] = [];
    const now: number[] = [];
    for (let i = -2; i < ITER; i += 1) {
      const p = params(i + 2);
      let s = performance.now();
      const a = await store.rows<{ grant_revision: string; end_kind: string }>(
        before,
        { ...p, source: 'grants', limit: 101 },
        { ...historySettings('grants'), max_execution_time: 900 },
      );
      const da = performance.now() - s;
      s = performance.now();
      const b = await reportRows<{ grant_revision: string; end_kind: string }>(deps, history, { ...p, limit: 101 }, historySettings(String(p.source)));
      const db = performance.now() - s;
      if (p.source !== 'grants_by_key') throw new Error(`a key page reads ${String(p.source)}`);
      const same = (r: typeof a) => r.map((x) => `${x.grant_revision}:${x.end_kind}`).join(',');
      if (a.length !== 101 || same(a) !== same(b)) throw new Error(`${name}: the pages differ (${a.length} / ${b.length} rows)`);
      if (i >= 0) {
        old.push(da);
        now.push(db);
      }
    }
    old.sort((x, y) => x - y);
    now.sort((x, y) => x - y);
    for (const q of [50, 95]) {
      report({
        name: `key history, ${ROWS.toLocaleString('en-US')}-grant key, ${name} page p${q}: grants_by_key`,
        value: percentile(now, q),
        baselineName: `before 140 (grants) p${q}`,
        baseline: percentile(old, q),
        unit: 'ms',
        higherIsBetter: false,
      });
    }
  }
  // Newest first (the default since 2026-12-05) beside oldest first, both on grants_by_key: ClickHouse reads FINAL in
  // order only forwards, so a newest-first page sorts the key's range (checked: the same grants, reversed ends).
  const newest = loadSql('reports/grantHistory/historyDesc.sql');
  for (const name of ['first', 'mid']) {
    const asc: number[] = [];
    const desc: number[] = [];
    for (let i = -2; i < ITER; i += 1) {
      const at = (order: 'asc' | 'desc') => ({
        ...resolvePage(deps, { key: key(i + 2), order, limit: 100 }, nowMs).params,
        ...(name === 'mid' ? { hasCursor: 1, afterMs: T0 + Math.floor((ROWS * KEYS) / 2) * 1000, afterCluster: 'bench', afterKey: key(i + 2) } : {}),
      });
      let s = performance.now();
      const a = await reportRows<{ grant_revision: string }>(deps, history, { ...at('asc'), limit: 101 }, historySettings('grants_by_key'));
      const da = performance.now() - s;
      s = performance.now();
      const d = await reportRows<{ grant_revision: string }>(deps, newest, { ...at('desc'), limit: 101 }, historySettings('grants_by_key'));
      const dd = performance.now() - s;
      if (a.length !== 101 || d.length !== 101) throw new Error(`${name}: a page is short (${a.length} / ${d.length} rows)`);
      if (i >= 0) {
        asc.push(da);
        desc.push(dd);
      }
    }
    asc.sort((x, y) => x - y);
    desc.sort((x, y) => x - y);
    for (const q of [50, 95]) {
      report({
        name: `key history, ${ROWS.toLocaleString('en-US')}-grant key, ${name} page p${q}: newest first`,
        value: percentile(desc, q),
        baselineName: `oldest first p${q}`,
        baseline: percentile(asc, q),
        unit: 'ms',
        higherIsBetter: false,
      });
    }
  }
  // The reader's bound (grants/scopeBound.sql) on the default page (no key, newest first, over every grant): a token
  // scoped to the namespace and cluster every grant is in beside an unscoped one, and the canary's exclusion (on for
  // every report read) beside a read that keeps the canary's rows. The same grants each time (checked).
  const page = (scope: { namespaces: string[]; clusters: string[] } | null, withCanary: number): Record<string, string | number | string[]> => ({
    ...resolvePage(deps, { limit: 100 }, nowMs, scope).params,
    ...(withCanary ? { withCanary } : {}),
    limit: 101,
  });
  const bounds: Array<[string, ReturnType<typeof page>, string, ReturnType<typeof page>]> = [
    ['scoped to ns0 and bench', page({ namespaces: ['ns0'], clusters: ['bench'] }, 0), 'unscoped', page(null, 0)],
    ['canary rows left out', page(null, 0), 'canary rows kept', page(null, 1)],
  ];
  for (const [name, params, baselineName, baseParams] of bounds) {
    const sql = loadSql(params.desc === 1 ? 'reports/grantHistory/historyDesc.sql' : 'reports/grantHistory/history.sql');
    const with_: number[] = [];
    const without: number[] = [];
    for (let i = -2; i < ITER; i += 1) {
      let s = performance.now();
      const a = await reportRows<{ grant_revision: string }>(deps, sql, params, historySettings(String(params.source)));
      const da = performance.now() - s;
      s = performance.now();
      const b = await reportRows<{ grant_revision: string }>(deps, sql, baseParams, historySettings(String(baseParams.source)));
      const db = performance.now() - s;
      if (a.length !== 101 || a.map((r) => r.grant_revision).join() !== b.map((r) => r.grant_revision).join()) throw new Error(`${name}: the pages differ`);
      if (i >= 0) {
        with_.push(da);
        without.push(db);
      }
    }
    with_.sort((x, y) => x - y);
    without.sort((x, y) => x - y);
    for (const q of [50, 95]) {
      report({
        name: `grant history, default page p${q}: ${name}`,
        value: percentile(with_, q),
        baselineName: `${baselineName} p${q}`,
        baseline: percentile(without, q),
        unit: 'ms',
        higherIsBetter: false,
      });
    }
  }
} finally {
  await close();
}
