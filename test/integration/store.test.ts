// Embedded ClickHouse through @clickhouse/client: migrations and 64-bit exactness.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { isLockauditError } from '../../core/errors.js';
import { loadMigrations, migrate } from '../../core/migrations.js';
import { RowEncodeError } from '../../core/rowBinary.js';
import { makeToken } from '../../core/token.js';
import { tempDir, tempStore } from '../support/env.js';
import { writeFileSync, copyFileSync, readdirSync, readFileSync } from 'node:fs';
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
        'SELECT name, create_table_query FROM system.tables WHERE database = {db:String} ORDER BY name',
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
    // sql/065: the timeline ends the sorting key (a restored cluster reuses revisions); (cluster, revision, key) stays its start.
    assert.ok(
      before.some(
        (t) =>
          t.name === 'events' && /ReplacingMergeTree/.test(t.create_table_query) && /ORDER BY \(cluster, revision, key, timeline\)/.test(t.create_table_query),
      ),
    );
    assert.ok(['checkpoints', 'gaps', 'quarantine', 'api_tokens'].every((n) => before.some((t) => t.name === n)));
  });

  it('refuses an applied migration that was edited, and applies a new one', async () => {
    const tmp = tempDir('lockaudit-sql-');
    try {
      for (const f of readdirSync(sqlDir)) copyFileSync(path.join(sqlDir, f), path.join(tmp.dir, f));
      const next = String(Math.max(...loadMigrations().map((m) => m.version)) + 1).padStart(3, '0'); // above the newest: numbers have gaps
      writeFileSync(path.join(tmp.dir, `${next}_extra.sql`), 'CREATE TABLE IF NOT EXISTS {db:Identifier}.extra (a UInt8) ENGINE = MergeTree ORDER BY a;\n');
      const r = await migrate(store, { dir: tmp.dir });
      assert.deepEqual(
        r.applied.map((m) => m.name),
        ['extra'],
      );
      writeFileSync(path.join(tmp.dir, '001_events_checkpoints_gaps.sql'), '-- edited\nSELECT 1;\n');
      await assert.rejects(migrate(store, { dir: tmp.dir }), (err) => isLockauditError(err, 'LOCKAUDIT_ERR_MIGRATION_CHANGED'));
    } finally {
      tmp.remove();
    }
  });

  it('a deployment that applied 051 and 065 before their comments were reworded upgrades; a changed statement is still refused', async () => {
    const s2 = store;
    const tmp = tempDir('lockaudit-sql-');
    try {
      await migrate(s2);
      // The ledger as a deployment migrated before the rewording holds it: the checksums of the files as they were.
      const before = {
        51: 'b57f873f51ffc768f8869476aba26b53f17094fec5f63f7d8839b6757f7f2d95',
        65: '390a912c4241f2b2902e34323a7f91c11422685f50092e40e06e9b1622ee980e',
      };
      for (const [v, checksum] of Object.entries(before)) {
        const m = loadMigrations().find((x) => x.version === Number(v));
        await s2.insert('schema_migrations', [{ version: Number(v), name: m?.name ?? '', checksum, applied_at: Date.now() + 1_000 }]);
      }
      assert.equal((await migrate(s2)).applied.length, 0);
      for (const f of readdirSync(sqlDir)) copyFileSync(path.join(sqlDir, f), path.join(tmp.dir, f));
      const file = readdirSync(tmp.dir).find((f) => f.startsWith('051_')) as string;
      writeFileSync(path.join(tmp.dir, file), readFileSync(path.join(tmp.dir, file), 'utf8').replace('UInt64', 'UInt32'));
      await assert.rejects(migrate(s2, { dir: tmp.dir }), (err) => isLockauditError(err, 'LOCKAUDIT_ERR_MIGRATION_CHANGED'));
    } finally {
      tmp.remove();
    }
  });

  it('round-trips 64-bit values above 2^53 exactly, as parameters and as JSON', async () => {
    const tokens = [makeToken(40, 123_456_789n), makeToken(65534, 2n ** 48n - 1n), 2n ** 53n + 1n, 2n ** 64n - 1n];
    await store.insert(
      'events',
      tokens.map((t, i) => ({
        cluster: 'bigint-test',
        revision: (2n ** 60n + BigInt(i)).toString(),
        key: `/l/ns/k${i}`,
        event_type: 'grant',
        op: 'put',
        namespace: 'ns',
        lock_path: `k${i}`,
        class: 'c',
        holder: 'h',
        session: '7587862',
        token: t.toString(),
        epoch: 40,
        grant_revision: '1',
        wait_ms: 0,
        wall_time: Date.now(),
        time_estimated: 0,
        time_error_ms: 0,
        create_revision: '1',
        mod_revision: '1',
        version: '1',
        lease: '0',
        value: '',
        prev_value: '',
        unprotected: 0,
      })),
    );
    const rows = await store.rows<{ token: string; revision: string }>(
      "SELECT token, revision FROM {db:Identifier}.events FINAL WHERE cluster = 'bigint-test' ORDER BY revision",
    );
    assert.deepEqual(
      rows.map((r) => r.token),
      tokens.map(String),
    );
    assert.equal(typeof rows[0]?.token, 'string');
    for (const t of tokens) {
      const found = await store.rows<{ token: string }>("SELECT token FROM {db:Identifier}.events FINAL WHERE cluster = 'bigint-test' AND token = {t:UInt64}", {
        t: t.toString(),
      });
      assert.deepEqual(found, [{ token: t.toString() }], `lookup by ${t}`);
    }
    const sum = await store.rows<{ s: string }>("SELECT toString(sum(toUInt128(token))) AS s FROM {db:Identifier}.events WHERE cluster = 'bigint-test'");
    assert.equal(sum[0]?.s, tokens.reduce((a, b) => a + b, 0n).toString());
  });

  it('binds user input as parameters, never as SQL', async () => {
    const hostile = "x' OR 1=1; DROP TABLE events; --";
    const rows = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.events WHERE key = {k:String}', { k: hostile });
    assert.deepEqual(rows, [{ n: '0' }]);
    const still = await store.rows<{ n: string }>("SELECT count() AS n FROM system.tables WHERE database = {db:String} AND name = 'events'", {
      db: store.database,
    });
    assert.deepEqual(still, [{ n: '1' }]);
  });
  it('stores the same values as RowBinary as as JSONEachRow: 64-bit tokens, NULLs, defaults, any string, DateTime64', async () => {
    const big = '18446744073709551615'; // UInt64 max
    const above53 = (2n ** 53n + 1n).toString();
    const odd = 'a\u0000b\n"\'\\\t é 💥 ' + 'long '.repeat(60); // NUL, newline, quotes, backslash, tab, non-ASCII, > 127 bytes
    const event = (cluster: string, revision: string, patch: Record<string, unknown>): Record<string, unknown> => ({
      cluster,
      revision,
      key: `/l/ns/${odd}`,
      event_type: 'grant',
      op: 'put',
      namespace: 'ns',
      lock_path: odd,
      class: 'c',
      holder: odd,
      session: '7587862000',
      token: big,
      epoch: 4_294_967_295,
      grant_revision: above53,
      wait_ms: 0,
      wall_time: Date.UTC(2299, 11, 31, 23, 59, 59, 999),
      time_estimated: 1,
      time_error_ms: 17,
      create_revision: above53,
      mod_revision: big,
      version: '-1',
      lease: '0',
      value: odd,
      prev_value: '',
      unprotected: 0,
      ...patch,
    });
    const grant = (cluster: string, grantRevision: string, patch: Record<string, unknown>): Record<string, unknown> => ({
      cluster,
      key: `ns/${odd}`,
      namespace: 'ns',
      lock_path: odd,
      class: 'c',
      holder: odd,
      session: '1',
      token: big,
      epoch: 40,
      grant_revision: grantRevision,
      granted_at: Date.UTC(1900, 0, 1),
      wait_ms: 5,
      start_known: 1,
      spool_id: '',
      end_kind: '',
      end_revision: '0',
      ended_at: null,
      ended_at_error_ms: 0,
      duration_ms: null,
      unprotected: 0,
      row_version: '0',
      ...patch,
    });
    const write = async (cluster: string, binary: boolean): Promise<void> => {
      await store.insert(
        'events',
        [
          event(cluster, '1', {}),
          event(cluster, '2', { op: 'delete', origin: 'foreign', wall_time: 0 }),
          event(cluster, above53, { token: '0', version: '9223372036854775807' }),
        ],
        { binary },
      );
      await store.insert(
        'grants',
        [
          grant(cluster, '1', {}),
          grant(cluster, '2', {
            end_kind: 'expiry',
            end_revision: big,
            ended_at: 1_764_400_000_123,
            ended_at_error_ms: 250,
            duration_ms: -3,
            row_version: big,
            origin: 'foreign',
          }),
        ],
        { binary },
      );
    };
    const read = async (cluster: string): Promise<unknown[]> => [
      ...(await store.rows(
        `SELECT * EXCEPT (cluster, ingested_at), toUnixTimestamp64Milli(wall_time) AS ms FROM {db:Identifier}.events WHERE cluster = {c:String} ORDER BY revision`,
        { c: cluster },
      )),
      ...(await store.rows(
        `SELECT * EXCEPT cluster, toUnixTimestamp64Milli(granted_at) AS g, toUnixTimestamp64Milli(ended_at) AS e FROM {db:Identifier}.grants WHERE cluster = {c:String} ORDER BY grant_revision`,
        { c: cluster },
      )),
    ];
    await write('rb-json', false);
    await write('rb-binary', true);
    const json = await read('rb-json');
    const binary = await read('rb-binary');
    assert.equal(binary.length, 5);
    assert.deepEqual(binary, json);
    const [e1, e2, e3, g1, g2] = binary as Array<Record<string, unknown>>;
    assert.deepEqual(
      [e1?.token, e1?.grant_revision, e1?.mod_revision, e1?.key, e1?.version, e1?.origin, e1?.ms],
      [big, above53, big, `/l/ns/${odd}`, '-1', 'api', String(Date.UTC(2299, 11, 31, 23, 59, 59, 999))],
    );
    assert.deepEqual([e2?.op, e2?.origin, e2?.ms], ['delete', 'foreign', '0']);
    assert.deepEqual([e3?.revision, e3?.version], [above53, '9223372036854775807']);
    assert.deepEqual([g1?.ended_at, g1?.duration_ms, g1?.origin, g1?.g], [null, null, 'api', String(Date.UTC(1900, 0, 1))]);
    assert.deepEqual([g2?.e, g2?.duration_ms, g2?.row_version, g2?.holder], ['1764400000123', '-3', big, odd]);
    // Both tables did go through the binary encoder (it, not ClickHouse, refuses these).
    await assert.rejects(store.insert('events', [event('rb-x', '3', { op: 'bogus' })], { binary: true }), RowEncodeError);
    await assert.rejects(store.insert('grants', [grant('rb-x', '3', { wait_ms: 'x' })], { binary: true }), RowEncodeError);
  });

  it("a binary insert (the tailer sink's) does not hold up a query that runs while it does (issue 22 item 3)", async () => {
    // An insert that takes ≥ 2 s inside ClickHouse: its table feeds a view that sleeps on every block.
    await store.command('CREATE TABLE {db:Identifier}.slow_in (x UInt64) ENGINE = MergeTree ORDER BY x');
    await store.command('CREATE TABLE {db:Identifier}.slow_out (x UInt64, s UInt8) ENGINE = MergeTree ORDER BY x');
    await store.command('CREATE MATERIALIZED VIEW {db:Identifier}.slow_mv TO {db:Identifier}.slow_out AS SELECT x, sleep(2) AS s FROM {db:Identifier}.slow_in');
    const order: string[] = [];
    const insert = store.insert('slow_in', [{ x: 1 }], { binary: true }).then(() => order.push('insert'));
    await new Promise((r) => setTimeout(r, 500)); // the insert is in ClickHouse, sleeping
    // A report's query: bound parameters, as every report binds them.
    const [row] = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.grants WHERE key = {key:String}', { key: 'ns/k' });
    order.push('query');
    await insert;
    assert.equal(row?.n, '0');
    assert.deepEqual(order, ['query', 'insert'], 'the query answered while the insert ran, not after it');
    assert.deepEqual(await store.rows('SELECT x FROM {db:Identifier}.slow_out'), [{ x: '1' }]);
  });

  it('a status read (/v1/tailers) answers while a query that binds parameters runs, which another such query waits for', async () => {
    // 2.5 s inside ClickHouse, with a bound parameter: it holds chdb's parameter queue while it runs.
    const slow = () => store.rows('SELECT sleepEachRow(0.5) AS s FROM numbers(5) WHERE {x:UInt8} = 0', { x: 0 });
    const order: string[] = [];
    let running = slow().then(() => order.push('slow'));
    await new Promise((r) => setTimeout(r, 500));
    await store.rows('SELECT count() AS n FROM {db:Identifier}.grants WHERE key = {key:String}', { key: 'ns/k' });
    order.push('bound query');
    await running;
    assert.deepEqual(order, ['slow', 'bound query'], 'the premise: a query binding parameters waits for the slow one');
    order.length = 0;
    running = slow().then(() => order.push('slow'));
    await new Promise((r) => setTimeout(r, 500));
    const [row] = await store.statusRows<{ n: string }>('SELECT toString(count()) AS n FROM {db:Identifier}.grants');
    order.push('status read');
    await running;
    assert.deepEqual(order, ['status read', 'slow'], 'the status read answered while the slow query ran');
    assert.deepEqual([row], await store.rows('SELECT toString(count()) AS n FROM {db:Identifier}.grants'), 'the same answer as on the main connection');
    await assert.rejects(store.statusRows('SELECT {x:String}'), /binds a parameter other than/);
  });
});
