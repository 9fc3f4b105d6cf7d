// grant_tokens (sql/170): which keys a fencing token was granted on, so a
// token lookup reads its key's range of grants_by_key instead of every
// granule's bloom filter in `grants`. It only routes, so what matters is that
// a routed lookup answers exactly like the base table: rows written before the
// migration (its backfill) and after (its materialized view), a token on two
// keys (two clusters; an insider's copy of a hold value) and a token no grant
// has (both read `grants`), token 0 (left out), a cluster filter, the cursor
// across pages, and a token at or above 2^64 (a 400 naming the field).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AuditStore } from '../../core/clickhouse.js';
import { migrate } from '../../core/migrations.js';
import { sqlDir } from '../../core/paths.js';
import { makeToken } from '../../core/token.js';
import { loadSql } from '../../platform/sql.js';
import { reportRows } from '../../platform/reportQuery.js';
import { planPage, resolvePage, tokenKey, type GrantHistoryDeps, type GrantHistoryParams } from '../../reports/grantHistory/index.js';
import { allPages, arrowPageCount } from '../support/grantPages.js';
import { tempDir, testConfig } from '../support/env.js';
import { grantRows, tokenOf, type GrantSpec } from '../support/grants.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;
const KEYS = ['ns0/hot', 'ns1/warm', 'ns0/cold'];
const token = (rev: number) => makeToken(40, BigInt(rev)).toString();

/** Grants with revisions 1000 + 10 n; some on cluster c2 with a revision c1 also has (the same token), every third held, one in ten unprotected. */
function specs(from: number, count: number): GrantSpec[] {
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    const spool = n % 10 === 9 ? `spool-${n}` : undefined;
    const at = T0 + ((n * 37) % 90) * MIN + n;
    const c2 = n % 13 === 5;
    return {
      cluster: c2 ? 'c2' : 'c1',
      key: KEYS[n % 5 === 0 ? 1 : n % 7 === 0 ? 2 : 0] as string,
      class: 'c1',
      holder: `spiffe://corp/h${n % 4}`,
      rev: spool ? 0 : 1000 + (c2 ? n - 1 : n) * 10,
      at,
      spool,
      waitMs: n,
      ...(n % 3 === 2 ? {} : { end: { kind: n % 4 === 0 ? 'expiry' : 'release', at: at + 30_000, rev: 1000 + n * 10 + 5 } }),
    } as GrantSpec;
  });
}

describe("grant_tokens routes a token lookup to its key, with the base table's answer", () => {
  const tmp = tempDir('lockaudit-ch-');
  const store = new AuditStore({ mode: 'embedded', path: tmp.dir, database: 'lockaudit' });
  const config = testConfig();
  const deps: GrantHistoryDeps = { store, limits: config.reports, cursorKey: randomBytes(32) };
  const before170 = tempDir('lockaudit-sql-');
  const all = [...specs(0, 45), ...specs(45, 45)];
  // An insider's copy: a hold put by hand on another key with the value (and so the token) of c1's grant at revision 1020.
  const copied = {
    ...grantRows({ key: 'ns1/copy', class: 'c1', holder: 'spiffe://corp/h9', rev: 5000, at: T0 + 95 * MIN, origin: 'foreign' }).open,
    token: token(1020),
  };
  // A token granted twice on one key (two grants, e.g. an epoch reused by hand): one key, two rows, paged one by one.
  const twice = grantRows({ key: KEYS[2] as string, class: 'c1', holder: 'spiffe://corp/h8', rev: 6000, at: T0 + 96 * MIN }).open;
  const twiceAgain = {
    ...grantRows({ key: KEYS[2] as string, class: 'c1', holder: 'spiffe://corp/h8', rev: 6010, at: T0 + 97 * MIN }).open,
    token: twice.token,
  };

  before(async () => {
    // A store as it was before 170, holding grants: the migration must fill the new table from them.
    for (const f of readdirSync(sqlDir).filter((f) => Number(f.slice(0, 3)) < 170)) copyFileSync(path.join(sqlDir, f), path.join(before170.dir, f));
    await migrate(store, { dir: before170.dir });
    const early = specs(0, 45).map(grantRows);
    await store.insert(
      'grants',
      early.map((r) => r.open),
    );
    const applied = await migrate(store);
    assert.ok(
      applied.applied.some((m) => m.version === 170),
      'the migration ran on the old store',
    );
    // After it: the early grants close (the same token rows again), new ones open and close, one is replayed.
    await store.insert(
      'grants',
      early.flatMap((r) => (r.closed ? [r.closed] : [])),
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
    await store.insert(
      'grants',
      [late[0]?.open, copied, twice, twiceAgain].filter((r) => r !== undefined),
    );
  });
  after(async () => {
    await store.close();
    tmp.remove();
    before170.remove();
  });

  it('names every (token, cluster, key) of grants but token 0, each once', async () => {
    const q = (sql: string) => store.rows<{ token: string; cluster: string; key: string }>(sql);
    const base = await q('SELECT DISTINCT token, cluster, key FROM {db:Identifier}.grants WHERE token != 0 ORDER BY token, cluster, key');
    const index = await q('SELECT token, cluster, key FROM {db:Identifier}.grant_tokens FINAL ORDER BY token, cluster, key');
    assert.ok(base.length > 70, `${base.length} tokens`);
    assert.deepEqual(index, base);
    assert.ok(!index.some((r) => r.token === '0'), 'token 0 is left out');
    assert.ok(
      all.some((s) => tokenOf(s) === '0'),
      'the data has unprotected grants (token 0)',
    );
  });

  it('routes a token on one key to grants_by_key and answers like grants, page by page', async () => {
    const history = loadSql('reports/grantHistory/historyDesc.sql'); // the default order, newest first
    const now = T0 + 200 * MIN;
    const oneKey = all.filter((s) => !s.spool && s.cluster === 'c1' && s.rev !== 1020 && !all.some((o) => o !== s && tokenOf(o) === tokenOf(s))).slice(0, 12);
    // c2's grants reuse a c1 revision, so c1 and c2 share their tokens: on one key name, or on two.
    const twin = (s: GrantSpec) => all.find((o) => o.cluster === 'c1' && tokenOf(o) === tokenOf(s));
    const c2Shared = all.find((s) => s.cluster === 'c2' && !s.spool && twin(s)?.key === s.key) as GrantSpec;
    const c2Apart = all.find((s) => s.cluster === 'c2' && !s.spool && twin(s) && twin(s)?.key !== s.key) as GrantSpec;
    assert.ok(c2Shared && c2Apart, 'the data has tokens shared by two clusters, on one key and on two');
    const cases: { q: GrantHistoryParams; routed: string | undefined; grants: number }[] = [
      ...oneKey.map((s) => ({ q: { token: tokenOf(s) }, routed: s.key, grants: 1 })),
      // c1 and c2 share this token (one revision each): two clusters, one key name — routed to it, both served.
      { q: { token: tokenOf(c2Shared) }, routed: c2Shared.key, grants: 2 },
      { q: { token: tokenOf(c2Shared), cluster: 'c2' }, routed: c2Shared.key, grants: 1 },
      { q: { token: tokenOf(c2Apart) }, routed: undefined, grants: 2 },
      { q: { token: tokenOf(c2Apart), cluster: 'c2' }, routed: c2Apart.key, grants: 1 },
      // The insider's copy puts revision 1020's token on a second key: not routed, both grants served from grants.
      { q: { token: token(1020) }, routed: undefined, grants: 2 },
      { q: { token: twice.token }, routed: KEYS[2], grants: 2 },
      { q: { token: '0' }, routed: undefined, grants: all.filter((s) => s.spool).length },
      { q: { token: token(999_999) }, routed: undefined, grants: 0 },
      { q: { token: tokenOf(oneKey[0] as GrantSpec), cluster: 'c2' }, routed: undefined, grants: 0 },
      { q: { token: tokenOf(oneKey[1] as GrantSpec), holder: 'spiffe://corp/nobody' }, routed: oneKey[1]?.key, grants: 0 },
    ];
    for (const { q, routed, grants } of cases) {
      const label = JSON.stringify(q);
      assert.equal(await tokenKey(deps, q), routed, label);
      const page = await planPage(deps, { ...q, limit: 1000 }, now);
      assert.equal(page.params.source, routed === undefined ? 'grants' : 'grants_by_key', label);
      assert.equal(page.params.key, routed ?? '', label);
      // The cursor is bound to the request's filters, not to the key they were routed to.
      assert.equal(page.digest, resolvePage(deps, { ...q, limit: 1000 }, now).digest, label);
      const fromBase = await reportRows<{ cluster: string; key: string; grant_revision: string; spool_id: string; token: string }>(deps, history, {
        ...resolvePage(deps, { ...q, limit: 1000 }, now).params,
        source: 'grants',
        limit: 1000,
      });
      assert.equal(fromBase.length, grants, label);
      const served = await allPages(deps, q, 1, now);
      assert.deepEqual(
        served.map((g) => `${g.cluster}:${g.key}@${g.grantRevision}:${g.token}`),
        fromBase.map((r) => `${r.cluster}:${r.key}@${r.grant_revision}:${r.token}`),
        label,
      );
      assert.equal(await arrowPageCount(deps, q, 1, now), Math.max(1, grants), label);
    }
  });

  it("reads the routed key's range of grants_by_key, not grants", async () => {
    const history = loadSql('reports/grantHistory/historyDesc.sql'); // the default order, newest first
    const s = all.find((x) => !x.spool && x.cluster === 'c1') as GrantSpec;
    const page = await planPage(deps, { token: tokenOf(s), limit: 4 }, T0 + 200 * MIN);
    const plan = await store.rows<{ explain: string }>(`EXPLAIN indexes = 1 ${history.text}`, { ...page.params, limit: 5 });
    const text = plan.map((r) => r.explain).join('\n');
    assert.match(text, /ReadFromMergeTree \(lockaudit\.grants_by_key\)/);
    assert.match(text, /PrimaryKey\n[^\n]*Keys:\n[^\n]*[│ ]key\n/, text);
  });

  it('answers a token at or above 2^64 with a 400 naming the field, before any query', async () => {
    await assert.rejects(
      tokenKey(deps, { token: (2n ** 64n).toString() }),
      (e: Error & { code?: string }) => e.code === 'LOCKAUDIT_ERR_VALIDATION' && /querystring\.token/.test(e.message),
    );
  });
});
