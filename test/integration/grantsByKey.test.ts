// grants_by_key (sql/140): the key- and time-ordered copy of `grants` that key
// history reads. It must answer exactly like `grants`: rows written before the
// migration (its backfill) and after it (its materialized view), open rows
// closed later, replays, unprotected grants, two clusters sharing a lock name,
// grants of one key in the same millisecond; key history pages through it to
// the same grants the base table gives, in the same order; and ClickHouse
// reads the key's range in the page's order (no full sort), which is what
// makes a hot key's page cheap.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AuditStore } from '../../core/clickhouse.js';
import { migrate } from '../../core/migrations.js';
import { sqlDir } from '../../core/paths.js';
import { loadSql } from '../../platform/sql.js';
import { reportRows } from '../../platform/reportQuery.js';
import { grantHistory, historySource, resolvePage, type GrantHistoryDeps, type GrantItem } from '../../reports/grantHistory/index.js';
import { grantHistoryArrow } from '../../reports/grantHistory/arrow.js';
import type { GrantRow } from '../../tailer/types.js';
import { tempDir, testConfig } from '../support/env.js';
import { grantRows, type GrantSpec } from '../support/grants.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;
const KEYS = ['ns0/hot', 'ns1/warm', 'ns0/cold'];

/** 90 grants, most on one hot key, granted out of revision order (a grant's time is not its revision's order); some in one millisecond, some on a second cluster, every third held, one in ten unprotected. */
function specs(from: number, count: number): GrantSpec[] {
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    const spool = n % 10 === 9 ? `spool-${n}` : undefined;
    const at = T0 + ((n * 37) % 90) * MIN + (n % 11 === 0 ? 0 : n); // revision order ≠ time order; n % 11 = 0 share ms with others
    return {
      cluster: n % 13 === 5 ? 'c2' : 'c1',
      key: KEYS[n % 5 === 0 ? 1 : n % 7 === 0 ? 2 : 0] as string,
      class: 'c1',
      holder: `spiffe://corp/h${n % 4}`,
      rev: spool ? 0 : 1000 + n * 10,
      at,
      spool,
      waitMs: n,
      ...(n % 3 === 2 ? {} : { end: { kind: n % 4 === 0 ? 'expiry' : 'release', at: at + 30_000, rev: 1000 + n * 10 + 5 } }),
    } as GrantSpec;
  });
}

describe('grants_by_key answers like grants', () => {
  const tmp = tempDir('lockaudit-ch-');
  const store = new AuditStore({ mode: 'embedded', path: tmp.dir, database: 'lockaudit' });
  const config = testConfig();
  const deps: GrantHistoryDeps = { store, limits: config.reports, cursorKey: randomBytes(32) };
  const before140 = tempDir('lockaudit-sql-');

  before(async () => {
    // A store as it was before 140, holding grants: the migration must fill the new table from them.
    for (const f of readdirSync(sqlDir).filter((f) => Number(f.slice(0, 3)) < 140)) copyFileSync(path.join(sqlDir, f), path.join(before140.dir, f));
    await migrate(store, { dir: before140.dir });
    const early = specs(0, 45).map(grantRows);
    await store.insert(
      'grants',
      early.map((r) => r.open),
    );
    await store.insert(
      'grants',
      early.flatMap((r) => (r.closed && r.open.granted_at < T0 + 40 * MIN ? [r.closed] : [])),
    );
    const applied = await migrate(store);
    assert.ok(
      applied.applied.some((m) => m.version === 140),
      'the migration ran on the old store',
    );
    // After it: the rest of the early grants close, new ones open and close, and a replay writes rows again.
    await store.insert(
      'grants',
      early.flatMap((r) => (r.closed && r.open.granted_at >= T0 + 40 * MIN ? [r.closed] : [])),
    );
    const late = specs(45, 45).map(grantRows);
    await store.insert(
      'grants',
      late.map((r) => r.open),
    );
    await store.insert(
      'grants',
      late.flatMap((r) => (r.closed ? [r.closed] : [])),
      { binary: true },
    );
    await store.insert('grants', [...early.slice(0, 5), ...late.slice(0, 5)].flatMap((r) => [r.open, ...(r.closed ? [r.closed] : [])]) as GrantRow[]);
  });
  after(async () => {
    await store.close();
    tmp.remove();
    before140.remove();
  });

  it('holds, under FINAL, exactly the rows grants FINAL holds', async () => {
    const all = (table: string) =>
      store.rows<Record<string, unknown>>(`SELECT * FROM {db:Identifier}.{t:Identifier} FINAL ORDER BY cluster, key, grant_revision, spool_id, timeline`, {
        t: table,
      });
    const base = await all('grants');
    assert.equal(base.length, 90);
    assert.deepEqual(await all('grants_by_key'), base);
  });

  it('key history reads grants_by_key and pages to the same grants, in the same order, as the base table', async () => {
    assert.equal(historySource({ key: KEYS[0] }), 'grants_by_key');
    assert.equal(historySource({ key: KEYS[0], holder: 'spiffe://corp/h1' }), 'grants_by_key');
    assert.equal(historySource({ token: '1' }), 'grants');
    assert.equal(historySource({ holder: 'spiffe://corp/h1' }), 'grants_by_holder');
    // Newest first (the default) and oldest first: each its own query, the same grants in opposite orders.
    const history = { desc: loadSql('reports/grantHistory/historyDesc.sql'), asc: loadSql('reports/grantHistory/history.sql') };
    const now = T0 + 200 * MIN;
    let compared = 0;
    for (const key of KEYS) {
      for (const q of (['desc', 'asc'] as const).flatMap((order) => [
        { key, order },
        { key, order, cluster: 'c2' },
        { key, order, endKind: 'held' as const },
        { key, order, holder: 'spiffe://corp/h1' },
        { key, order, from: new Date(T0 + 20 * MIN).toISOString(), to: new Date(T0 + 60 * MIN).toISOString() },
      ])) {
        const page = resolvePage(deps, { ...q, limit: 1000 }, now);
        assert.equal(page.params.source, 'grants_by_key');
        const fromBase = await reportRows<{ key: string; grant_revision: string; spool_id: string; end_kind: string; cluster: string }>(
          deps,
          history[q.order],
          { ...page.params, source: 'grants', limit: 1000 },
        );
        compared += fromBase.length;
        const expected = fromBase.map((r) => `${r.cluster}:${r.key}@${r.grant_revision}${r.spool_id}:${r.end_kind || 'held'}`);
        const served: GrantItem[] = [];
        let cursor: string | undefined;
        do {
          const p = await grantHistory(deps, { ...q, limit: 4, ...(cursor ? { cursor } : {}) }, now);
          served.push(...p.items);
          cursor = p.nextCursor ?? undefined;
        } while (cursor);
        const label = JSON.stringify(q);
        assert.deepEqual(
          served.map((g) => `${g.cluster}:${g.key}@${g.grantRevision}${g.grantRevision === '0' ? `spool-${g.waitMs}` : ''}:${g.endKind ?? 'held'}`),
          expected,
          label,
        );
        // The Arrow pages (pageEnd.sql + historyArrow.sql) read the same source: the same number of grants, page by page.
        let arrowPages = 0;
        cursor = undefined;
        do {
          const p = await grantHistoryArrow(deps, { ...q, limit: 4, format: 'arrow', ...(cursor ? { cursor } : {}) }, now);
          p.stream.resume();
          arrowPages += 1;
          cursor = p.nextCursor ?? undefined;
        } while (cursor);
        assert.equal(arrowPages, Math.max(1, Math.ceil(expected.length / 4)), label);
      }
    }
    assert.ok(compared > 100, `compared ${compared} grants`);
  });

  // Oldest first reads in the key's order and stops after the page; newest first reads the key's range and sorts it
  // (ClickHouse reads FINAL in order only forwards; docs/performance.md has the cost), never another key's.
  it("reads a key's range only, in the page's order when oldest first, first page and cursor page alike", async () => {
    const now = T0 + 200 * MIN;
    for (const [order, file, readType] of [
      ['asc', 'history.sql', /Read type: InOrder/],
      ['desc', 'historyDesc.sql', /Prewhere filter column: .*key = 'ns0\/hot'/],
    ] as const) {
      const history = loadSql(`reports/grantHistory/${file}`);
      const first = await grantHistory(deps, { key: KEYS[0], order, limit: 4 }, now);
      assert.ok(first.nextCursor);
      for (const p of [
        { key: KEYS[0], order },
        { key: KEYS[0], order, cursor: first.nextCursor },
      ]) {
        const page = resolvePage(deps, { ...p, limit: 4 }, now);
        const plan = await store.rows<{ explain: string }>(`EXPLAIN actions = 1 ${history.text}`, { ...page.params, limit: 5 });
        const text = plan.map((r) => r.explain).join('\n');
        assert.match(text, /ReadFromMergeTree \(lockaudit\.grants_by_key\)/);
        assert.match(text, readType, `${order}: ${text}`);
      }
    }
  });
});
