// Grant-history paging across a restore (sql/065): a grant a restore rolled
// back and the grant etcd gave again at the same revision, on the same key, at
// the same grant time (an insider's put of a copied hold value after the
// restore) differ only in their timeline. The keyset cursor once stopped at
// (granted_at, cluster, key, grant_revision, spool_id), so a page that ended
// on the first of the two made the next page start after both: one grant was
// never served, and the last page said there was nothing more. Every source
// (grants, grants_by_key, grants_by_holder, a token routed by grant_tokens)
// and both page kinds (JSON/CSV, Arrow) page to both.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { grantHistory, planPage, type GrantHistoryDeps, type GrantHistoryParams, type GrantItem } from '../../reports/grantHistory/index.js';
import { allPages, arrowPageCount } from '../support/grantPages.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { tempStore, testConfig } from '../support/env.js';
import { grantRows } from '../support/grants.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');

describe('grant history pages to every timeline of a grant position', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  let deps: GrantHistoryDeps;
  const rolledBack = grantRows({
    key: 'ns0/a',
    class: 'c1',
    holder: 'spiffe://corp/h1',
    rev: 1000,
    at: T0,
    end: { kind: 'release', at: T0 + 5000, rev: 1005 },
  });
  // After the restore: the same revision on the same key, put by hand with the rolled-back hold's value (its token, its grant time).
  const again = { ...grantRows({ key: 'ns0/a', class: 'c1', holder: 'spiffe://corp/h1', rev: 1000, at: T0, origin: 'foreign' }).open, timeline: 1 };

  before(async () => {
    ({ store, close } = await tempStore());
    deps = { store, limits: testConfig().reports, cursorKey: randomBytes(32) };
    await store.insert('grants', [rolledBack.open]);
    await store.insert('grants', [rolledBack.closed!]);
    await store.insert('grants', [{ ...rolledBack.closed!, rolled_back_by: 1, superseded_by: 1 }]);
    await store.insert('grants', [again]);
  });
  after(async () => close?.());

  const queries: GrantHistoryParams[] = [
    { key: 'ns0/a' },
    { token: again.token },
    { token: again.token, cluster: 'c1' },
    { holder: 'spiffe://corp/h1' },
    { keyPrefix: 'ns0/', from: new Date(T0 - 60_000).toISOString(), to: new Date(T0 + 60_000).toISOString() },
  ];

  it('serves both grants one page at a time, as it does in one page', async () => {
    const now = T0 + 3_600_000;
    const sources = new Set<string>();
    for (const q of queries) {
      const label = JSON.stringify(q);
      sources.add(String((await planPage(deps, { ...q, limit: 1 }, now)).params.source));
      const whole = await grantHistory(deps, { ...q, limit: 100 }, now);
      const shown = (items: GrantItem[]) => items.map((g) => `${g.key}@${g.grantRevision}/t${g.timeline}${g.rolledBack ? '/rolled-back' : ''}`);
      assert.deepEqual(shown(whole.items), ['ns0/a@1000/t1', 'ns0/a@1000/t0/rolled-back'], label); // newest first: the later timeline
      assert.deepEqual(shown(await allPages(deps, q, 1, now)), shown(whole.items), label);
      assert.equal(await arrowPageCount(deps, q, 1, now), 2, label);
    }
    assert.deepEqual([...sources].sort(), ['grants', 'grants_by_holder', 'grants_by_key']);
  });
});

// A hand-put copy of a hold value that reached the store before its original
// (tailer/decode/replays.ts: concurrent catch-up windows) keeps `api` on its open row
// and is `foreign` from its closed row on. The origin filter stood in PREWHERE,
// before FINAL: origin=api kept the open row alone and served the ended copy
// as still held. It is read after FINAL now: the grant's last row decides.
describe("the origin filter reads a grant's last row", () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  let deps: GrantHistoryDeps;
  const copy = grantRows({ key: 'ns0/b', class: 'c1', holder: 'spiffe://corp/h2', rev: 2000, at: T0, end: { kind: 'release', at: T0 + 5000, rev: 2005 } });

  before(async () => {
    ({ store, close } = await tempStore());
    deps = { store, limits: testConfig().reports, cursorKey: randomBytes(32) };
    await store.insert('grants', [copy.open]);
    await store.insert('grants', [{ ...copy.closed!, origin: 'foreign' }]);
  });
  after(async () => close?.());

  it('serves the copy under origin=foreign, ended, and not under origin=api', async () => {
    const now = T0 + 3_600_000;
    for (const q of [
      { key: 'ns0/b' },
      { token: copy.open.token },
      { holder: 'spiffe://corp/h2' },
      { keyPrefix: 'ns0/', from: new Date(T0 - 60_000).toISOString(), to: new Date(T0 + 60_000).toISOString() },
    ]) {
      const label = JSON.stringify(q);
      const foreign = await grantHistory(deps, { ...q, origin: 'foreign' }, now);
      assert.deepEqual(
        foreign.items.map((g) => `${g.origin}:${g.endKind ?? 'held'}`),
        ['foreign:release'],
        label,
      );
      assert.deepEqual((await grantHistory(deps, { ...q, origin: 'api' }, now)).items, [], label);
      assert.deepEqual((await grantHistory(deps, { ...q, origin: 'api', endKind: 'held' }, now)).items, [], label);
    }
  });
});
