// sql/190: grants_by_key gets back the restore marks its backfill (sql/140)
// may have lost.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { AuditStore } from '../../core/clickhouse.js';
import { migrate } from '../../core/migrations.js';
import { sqlDir } from '../../core/paths.js';
import { grantHistory, type GrantHistoryDeps } from '../../reports/grantHistory/index.js';
import type { GrantRow } from '../../tailer/types.js';
import { tempDir, testConfig } from '../support/env.js';
import { grantRows } from '../support/grants.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
// A restore marks a grant by inserting its row again with the mark and the same
// version: the later insert wins. 140 filled grants_by_key with one INSERT …
// SELECT, in no set order, so a grant marked before 140 could end up with its
// unmarked row winning there (the state built here by hand: the unmarked row
// inserted again after its mark). 190 inserts the marked rows again.
describe('grants_by_key gets back the restore marks its backfill lost (sql/190)', () => {
  const tmp = tempDir('lockaudit-ch-');
  const store = new AuditStore({ mode: 'embedded', path: tmp.dir, database: 'lockaudit' });
  const before190 = tempDir('lockaudit-sql-');
  const deps: GrantHistoryDeps = { store, limits: testConfig().reports, cursorKey: randomBytes(32) };
  after(async () => {
    await store.close();
    tmp.remove();
    before190.remove();
  });

  it('key history shows the rolled-back grant once, rolled back, as grants does', async () => {
    for (const f of readdirSync(sqlDir).filter((f) => Number(f.slice(0, 3)) < 190)) copyFileSync(path.join(sqlDir, f), path.join(before190.dir, f));
    await migrate(store, { dir: before190.dir });
    const g = grantRows({ key: 'ns0/r', class: 'c1', holder: 'spiffe://corp/h1', rev: 500, at: T0, end: { kind: 'release', at: T0 + 1000, rev: 505 } });
    const held = grantRows({ key: 'ns0/r', class: 'c1', holder: 'spiffe://corp/h2', rev: 510, at: T0 + 2000 }).open;
    await store.insert('grants', [g.open, held]);
    await store.insert('grants', [g.closed as GrantRow]);
    // The restore: the ended grant rolled back (marked), the held one carried into timeline 1 (its timeline-0 row marked superseded).
    await store.insert('grants', [
      { ...(g.closed as GrantRow), rolled_back_by: 1, superseded_by: 1 },
      { ...held, superseded_by: 1 },
    ]);
    await store.insert('grants', [{ ...held, timeline: 1 }]);
    // What the backfill could leave: the unmarked rows last.
    await store.insert('grants_by_key', [g.closed as GrantRow, held]);
    const all = (table: string) =>
      store.rows<Record<string, unknown>>(`SELECT * FROM {db:Identifier}.{t:Identifier} FINAL ORDER BY cluster, key, grant_revision, spool_id, timeline`, {
        t: table,
      });
    const shown = async () =>
      (await grantHistory(deps, { key: 'ns0/r', order: 'asc' }, T0 + 3_600_000)).items.map(
        (i) => `${i.grantRevision}/t${i.timeline}${i.rolledBack ? '/rolled-back' : ''}`,
      );
    assert.notDeepEqual(await all('grants_by_key'), await all('grants'), 'the lost marks');
    assert.deepEqual(await shown(), ['500/t0', '510/t0', '510/t1'], 'before 190: not rolled back, and the carried grant twice');
    const applied = await migrate(store);
    assert.equal(applied.applied[0]?.version, 190, 'the marks migration is the first one applied (later ones follow it)');
    assert.deepEqual(await all('grants_by_key'), await all('grants'));
    assert.deepEqual(await shown(), ['500/t0/rolled-back', '510/t1']);
  });
});
