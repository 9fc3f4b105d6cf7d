// grants_by_holder (sql/056): the holder-ordered copy of `grants` that
// holder history reads. It must answer exactly like `grants`: rows written
// before the migration (its backfill) and after it (its materialized view),
// open rows closed later, replays, unprotected grants; and holder history
// pages through it to the same grants the base table gives.
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
import type { GrantRow } from '../../tailer/types.js';
import { tempDir, testConfig } from '../support/env.js';
import { grantRows, type GrantSpec } from '../support/grants.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;
const HOLDERS = ['spiffe://corp/a', 'spiffe://corp/b', 'spiffe://corp/c'];

/** 60 grants over 3 holders and 7 keys; every third still held, one in ten unprotected. */
function specs(from: number, count: number): GrantSpec[] {
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    const spool = n % 10 === 9 ? `spool-${n}` : undefined;
    return {
      key: `ns${n % 2}/k${n % 7}`,
      class: 'c1',
      holder: HOLDERS[n % 3] as string,
      rev: spool ? 0 : 1000 + n * 10,
      at: T0 + n * MIN,
      spool,
      waitMs: n,
      ...(n % 3 === 2 ? {} : { end: { kind: n % 4 === 0 ? 'expiry' : 'release', at: T0 + n * MIN + 30_000, rev: 1000 + n * 10 + 5 } }),
    } as GrantSpec;
  });
}

describe('grants_by_holder answers like grants', () => {
  const tmp = tempDir('lockaudit-ch-');
  const store = new AuditStore({ mode: 'embedded', path: tmp.dir, database: 'lockaudit' });
  const config = testConfig();
  const deps: GrantHistoryDeps = { store, limits: config.reports, cursorKey: randomBytes(32) };
  const before056 = tempDir('lockaudit-sql-');

  before(async () => {
    // A store as it was before 056, holding grants: the migration must fill the new table from them.
    for (const f of readdirSync(sqlDir).filter((f) => Number(f.slice(0, 3)) < 56)) copyFileSync(path.join(sqlDir, f), path.join(before056.dir, f));
    await migrate(store, { dir: before056.dir });
    const early = specs(0, 30).map(grantRows);
    await store.insert(
      'grants',
      early.map((r) => r.open),
    );
    await store.insert(
      'grants',
      early.flatMap((r) => (r.closed && r.open.granted_at < T0 + 20 * MIN ? [r.closed] : [])),
    );
    const applied = await migrate(store);
    assert.equal(applied.applied[0]?.version, 56, 'the first migration after the old store is 056');
    // After it: the rest of the early grants close, new ones open and close, and a replay writes rows again.
    await store.insert(
      'grants',
      early.flatMap((r) => (r.closed && r.open.granted_at >= T0 + 20 * MIN ? [r.closed] : [])),
    );
    const late = specs(30, 30).map(grantRows);
    await store.insert(
      'grants',
      late.map((r) => r.open),
    );
    await store.insert(
      'grants',
      late.flatMap((r) => (r.closed ? [r.closed] : [])),
    );
    await store.insert('grants', [...early.slice(0, 5), ...late.slice(0, 5)].flatMap((r) => [r.open, ...(r.closed ? [r.closed] : [])]) as GrantRow[]);
  });
  after(async () => {
    await store.close();
    tmp.remove();
    before056.remove();
  });

  it('holds, under FINAL, exactly the rows grants FINAL holds', async () => {
    const all = (table: string) =>
      store.rows<Record<string, unknown>>(`SELECT * FROM {db:Identifier}.{t:Identifier} FINAL ORDER BY cluster, key, grant_revision, spool_id`, { t: table });
    const base = await all('grants');
    assert.equal(base.length, 60);
    assert.deepEqual(await all('grants_by_holder'), base);
  });

  it('holder history reads grants_by_holder and pages to the same grants as the base table', async () => {
    assert.equal(historySource({ holder: HOLDERS[0] }), 'grants_by_holder');
    assert.equal(historySource({ holder: HOLDERS[0], key: 'ns0/k1' }), 'grants_by_key');
    const history = { desc: loadSql('reports/grantHistory/historyDesc.sql'), asc: loadSql('reports/grantHistory/history.sql') };
    const now = T0 + 90 * MIN;
    let compared = 0;
    for (const holder of HOLDERS) {
      for (const [endKind, order] of [
        [undefined, 'desc'],
        ['held', 'desc'],
        ['expiry', 'desc'],
        [undefined, 'asc'],
      ] as const) {
        const q = { holder, order, from: new Date(T0 + 10 * MIN).toISOString(), to: new Date(T0 + 50 * MIN).toISOString(), ...(endKind ? { endKind } : {}) };
        const page = resolvePage(deps, { ...q, limit: 1000 }, now);
        assert.equal(page.params.source, 'grants_by_holder');
        const fromBase = await reportRows<{ key: string; grant_revision: string; spool_id: string; end_kind: string }>(deps, history[order], {
          ...page.params,
          source: 'grants',
          limit: 1000,
        });
        compared += fromBase.length;
        const served: GrantItem[] = [];
        let cursor: string | undefined;
        do {
          const p = await grantHistory(deps, { ...q, limit: 3, ...(cursor ? { cursor } : {}) }, now);
          served.push(...p.items);
          cursor = p.nextCursor ?? undefined;
        } while (cursor);
        assert.deepEqual(
          served.map((g) => `${g.key}@${g.grantRevision}:${g.endKind ?? 'held'}`),
          fromBase.map((r) => `${r.key}@${r.grant_revision}:${r.end_kind || 'held'}`),
          `${holder} ${endKind ?? ''} ${order}`,
        );
      }
    }
    assert.ok(compared > 30, `compared ${compared} grants`);
  });
});
