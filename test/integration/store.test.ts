// Embedded ClickHouse through @clickhouse/client: migrations and 64-bit exactness.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { isLockauditError } from '../../core/errors.js';
import { loadMigrations, migrate } from '../../core/migrations.js';
import { makeToken } from '../../core/token.js';
import { tempDir, tempStore } from '../support/env.js';
import { writeFileSync, copyFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { sqlDir } from '../../core/paths.js';

describe('audit store (embedded chdb)', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => {
    ({ store, close } = await tempStore());
  });
  after(() => close());

  it('migrations are idempotent: a second run applies nothing and changes no table', async () => {
    const tables = async () =>
      store.rows<{ name: string; create_table_query: string }>(
        "SELECT name, create_table_query FROM system.tables WHERE database = {db:String} ORDER BY name",
        { db: store.database },
      );
    const before = await tables();
    const ledgerBefore = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.schema_migrations');
    const second = await migrate(store);
    assert.equal(second.applied.length, 0);
    assert.equal(second.alreadyApplied, loadMigrations().length);
    assert.deepEqual(await tables(), before);
    const ledgerAfter = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.schema_migrations');
    assert.deepEqual(ledgerAfter, ledgerBefore);
    assert.ok(before.some((t) => t.name === 'events' && /ReplacingMergeTree/.test(t.create_table_query) && /ORDER BY \(cluster, revision, key\)/.test(t.create_table_query)));
    assert.ok(['checkpoints', 'gaps', 'quarantine', 'api_tokens'].every((n) => before.some((t) => t.name === n)));
  });

  it('refuses an applied migration that was edited, and applies a new one', async () => {
    const tmp = tempDir('lockaudit-sql-');
    try {
      for (const f of readdirSync(sqlDir)) copyFileSync(path.join(sqlDir, f), path.join(tmp.dir, f));
      const next = String(loadMigrations().length + 1).padStart(3, '0');
      writeFileSync(path.join(tmp.dir, `${next}_extra.sql`), 'CREATE TABLE IF NOT EXISTS {db:Identifier}.extra (a UInt8) ENGINE = MergeTree ORDER BY a;\n');
      const r = await migrate(store, { dir: tmp.dir });
      assert.deepEqual(r.applied.map((m) => m.name), ['extra']);
      writeFileSync(path.join(tmp.dir, '001_events_checkpoints_gaps.sql'), '-- edited\nSELECT 1;\n');
      await assert.rejects(migrate(store, { dir: tmp.dir }), (err) => isLockauditError(err, 'LOCKAUDIT_ERR_MIGRATION_CHANGED'));
    } finally {
      tmp.remove();
    }
  });

  it('round-trips 64-bit values above 2^53 exactly, as parameters and as JSON', async () => {
    const tokens = [makeToken(40, 123_456_789n), makeToken(65534, 2n ** 48n - 1n), 2n ** 53n + 1n, 2n ** 64n - 1n];
    await store.insert(
      'events',
      tokens.map((t, i) => ({
        cluster: 'bigint-test', revision: (2n ** 60n + BigInt(i)).toString(), key: `/l/ns/k${i}`, event_type: 'grant', op: 'put',
        namespace: 'ns', lock_path: `k${i}`, class: 'c', holder: 'h', session: '7587862', token: t.toString(), epoch: 40,
        grant_revision: '1', wait_ms: 0, wall_time: Date.now(), time_estimated: 0, time_error_ms: 0, create_revision: '1',
        mod_revision: '1', version: '1', lease: '0', value: '', prev_value: '', unprotected: 0,
      })),
    );
    const rows = await store.rows<{ token: string; revision: string }>(
      "SELECT token, revision FROM {db:Identifier}.events FINAL WHERE cluster = 'bigint-test' ORDER BY revision",
    );
    assert.deepEqual(rows.map((r) => r.token), tokens.map(String));
    assert.equal(typeof rows[0]?.token, 'string');
    for (const t of tokens) {
      const found = await store.rows<{ token: string }>(
        "SELECT token FROM {db:Identifier}.events FINAL WHERE cluster = 'bigint-test' AND token = {t:UInt64}",
        { t: t.toString() },
      );
      assert.deepEqual(found, [{ token: t.toString() }], `lookup by ${t}`);
    }
    const sum = await store.rows<{ s: string }>("SELECT toString(sum(toUInt128(token))) AS s FROM {db:Identifier}.events WHERE cluster = 'bigint-test'");
    assert.equal(sum[0]?.s, tokens.reduce((a, b) => a + b, 0n).toString());
  });

  it('binds user input as parameters, never as SQL', async () => {
    const hostile = "x' OR 1=1; DROP TABLE events; --";
    const rows = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.events WHERE key = {k:String}', { k: hostile });
    assert.deepEqual(rows, [{ n: '0' }]);
    const still = await store.rows<{ n: string }>("SELECT count() AS n FROM system.tables WHERE database = {db:String} AND name = 'events'", { db: store.database });
    assert.deepEqual(still, [{ n: '1' }]);
  });
});
