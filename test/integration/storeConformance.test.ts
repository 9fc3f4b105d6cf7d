// The store process (platform/storeServer.ts, issue 41 item 5): every query shape the project uses answers the same
// through the store's HTTP interface — @clickhouse/client's own HTTP path, as against a ClickHouse server — as
// through chdb in this process: bound parameters (64-bit, arrays, strings with quotes and newlines), settings, the
// migrations, JSONEachRow and RowBinary inserts, a long result stream, a cancelled query, errors with their
// ClickHouse codes, a refused password. Two data dirs (chdb binds one per process): the store's in a child process.
import assert from 'node:assert/strict';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createClient } from '@clickhouse/client';
import { AuditStore } from '../../core/clickhouse.js';
import { migrate } from '../../core/migrations.js';
import { loadSql } from '../../platform/sql.js';
import { startStoreProcess, type StoreProcess } from '../support/storeProcess.js';
import { tempDir } from '../support/env.js';

describe('the store process answers as chdb does (conformance)', { timeout: 300_000 }, () => {
  const tmp = tempDir('lockaudit-store-');
  let storeProc: StoreProcess;
  let direct: AuditStore;
  let served: AuditStore;
  const both = (): Array<[string, AuditStore]> => [
    ['chdb', direct],
    ['store', served],
  ];

  before(async () => {
    storeProc = await startStoreProcess(path.join(tmp.dir, 'served'));
    direct = new AuditStore({ mode: 'embedded', path: path.join(tmp.dir, 'direct'), database: 'lockaudit' });
    served = storeProc.connect();
    // The migrations themselves: every DDL statement of the project, through both.
    await migrate(direct);
    await migrate(served);
  });

  after(async () => {
    await served?.close();
    await direct?.close();
    await storeProc?.stop();
    tmp.remove();
  });

  it('the same tables after the migrations', async () => {
    const tables = (s: AuditStore) => s.rows<{ name: string }>('SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name');
    const [a, b] = await Promise.all([tables(direct), tables(served)]);
    assert.ok(a.length > 30);
    assert.deepEqual(b, a);
  });

  it('bound parameters: 64-bit integers, arrays, identifiers, strings with quotes, backslashes, newlines and unicode', async () => {
    const params = {
      s: 'it\'s a \\ "test"\nline\ttab ✓ {x:String}',
      n: '18446744073709551615',
      a: ['x', "y'z", ''],
      t: '2026-12-05 03:04:05.678',
      tbl: 'events',
    };
    const q =
      'SELECT {s:String} AS s, {n:UInt64} AS n, {a:Array(String)} AS a, toString({t:DateTime64(3)}) AS t, (SELECT count() FROM {db:Identifier}.{tbl:Identifier}) AS c';
    const [a, b] = await Promise.all(both().map(([, s]) => s.rows(q, params)));
    assert.deepEqual(a, [{ s: params.s, n: params.n, a: params.a, t: params.t, c: '0' }]);
    assert.deepEqual(b, a);
  });

  it('bound arrays of numbers (JS numbers, as the replay check sends) and of nested strings', async () => {
    const params = { ats: [1796451754496, 2], nested: [['a', "b'c"], []] };
    const q = 'SELECT 1796451754496 IN {ats:Array(Int64)} AS hit, {ats:Array(Int64)} AS ats, {nested:Array(Array(String))} AS nested';
    const [a, b] = await Promise.all(both().map(([, s]) => s.rows(q, params)));
    assert.deepEqual(a, [{ hit: 1, ats: ['1796451754496', '2'], nested: params.nested }]);
    assert.deepEqual(b, a);
  });

  it('settings: 64-bit integers as JSON numbers when asked', async () => {
    const q = 'SELECT toUInt64(9007199254740993) AS big';
    for (const [name, s] of both()) {
      assert.deepEqual(await s.rows(q), [{ big: '9007199254740993' }], name);
      const raw = await s.client.query({ query: q, format: 'JSONEachRow', clickhouse_settings: { output_format_json_quote_64bit_integers: 0 } });
      assert.match(await raw.text(), /"big":9007199254740993\b/, name);
    }
  });

  it('inserts: JSONEachRow rows and a RowBinary body read back the same', async () => {
    for (const [, s] of both())
      await s.command('CREATE TABLE IF NOT EXISTS {db:Identifier}.conformance (id UInt64, s String, n Nullable(Int32)) ENGINE = MergeTree ORDER BY id');
    const rows = [
      { id: '18446744073709551615', s: 'max', n: null },
      { id: '1', s: "o'ne\n", n: -5 },
    ];
    // RowBinaryWithDefaults: a 0 byte before each value (not the default); UInt64 little-endian, String as varint length + bytes, Nullable as a null flag.
    const binary = Buffer.concat([
      Buffer.from([0]),
      Buffer.from('2a00000000000000', 'hex'),
      Buffer.from([0, 3]),
      Buffer.from('bin'),
      Buffer.from([0, 0]),
      Buffer.from('07000000', 'hex'),
    ]);
    for (const [, s] of both()) {
      await s.insert('conformance', rows);
      await s.client.exec({ query: `INSERT INTO lockaudit.conformance FORMAT RowBinaryWithDefaults`, values: Readable.from([binary]) });
    }
    const read = (s: AuditStore) => s.rows('SELECT toString(id) AS i, s, n FROM {db:Identifier}.conformance ORDER BY id');
    const [a, b] = await Promise.all(both().map(([, s]) => read(s)));
    assert.deepEqual(a, [
      { i: '1', s: "o'ne\n", n: -5 },
      { i: '42', s: 'bin', n: 7 },
      { i: '18446744073709551615', s: 'max', n: null },
    ]);
    assert.deepEqual(b, a);
  });

  it("the project's own statements: events written by the AuditStore, read back by a tailer query with array and 64-bit parameters", async () => {
    const rows = [1, 2, 3].map((i) => ({
      cluster: 'conf',
      revision: String(2n ** 60n + BigInt(i)),
      key: `/l/ns/k'${i}`,
      event_type: 'grant',
      op: 'put',
      namespace: 'ns',
      lock_path: `k'${i}`,
      class: 'c',
      holder: 'h',
      session: '1',
      token: String(2n ** 62n + BigInt(i)),
      epoch: 1,
      grant_revision: String(i),
      wait_ms: 0,
      wall_time: Date.UTC(2026, 11, 5),
      time_estimated: 0,
      time_error_ms: 0,
      create_revision: '1',
      mod_revision: '1',
      version: '1',
      lease: '0',
      value: `{"v":"${i}\\n"}`,
      prev_value: '',
      unprotected: 0,
    }));
    const sql = loadSql('tailer/sql/capturedPuts.sql').text;
    const params = { cluster: 'conf', keys: ["/l/ns/k'1", "/l/ns/k'3", 'none'], lowest: String(2n ** 60n), highest: String(2n ** 61n) };
    const [a, b] = await Promise.all(
      both().map(async ([, s]) => {
        await s.insert('events', rows);
        return (await s.rows<{ key: string; put_revision: string; value: string }>(sql, params)).sort((x, y) => x.key.localeCompare(y.key));
      }),
    );
    assert.deepEqual(
      a?.map((r) => [r.key, r.put_revision]),
      [
        ["/l/ns/k'1", String(2n ** 60n + 1n)],
        ["/l/ns/k'3", String(2n ** 60n + 3n)],
      ],
    );
    assert.deepEqual(b, a);
  });

  it("the tailer sink's RowBinary inserts (AuditStore binary) land the same through the store as into chdb", async () => {
    const rows = [7, 8].map((i) => ({
      cluster: 'conf-bin',
      revision: String(2n ** 63n + BigInt(i)),
      key: `/l/ns/b${i}`,
      event_type: 'grant',
      op: 'put',
      namespace: 'ns',
      lock_path: `b${i}`,
      class: 'c',
      holder: 'h ✓',
      session: '1',
      token: String(2n ** 64n - BigInt(i)),
      epoch: 65535,
      grant_revision: String(i),
      wait_ms: 0,
      wall_time: Date.UTC(2026, 11, 5, 1, 2, 3, 456),
      time_estimated: 1,
      time_error_ms: 12,
      create_revision: '1',
      mod_revision: '1',
      version: '1',
      lease: '0',
      value: 'bin\n\u0000',
      prev_value: '',
      unprotected: 0,
    }));
    const read = (s: AuditStore) =>
      s.rows(
        "SELECT toString(revision) AS r, key, holder, toString(token) AS t, epoch, toString(wall_time) AS w, time_error_ms, value FROM {db:Identifier}.events WHERE cluster = 'conf-bin' ORDER BY revision",
      );
    const [a, b] = await Promise.all(
      both().map(async ([, s]) => {
        await s.insert('events', rows, { binary: true });
        return read(s);
      }),
    );
    assert.equal(a?.length, 2);
    assert.deepEqual(a?.[0], {
      r: String(2n ** 63n + 7n),
      key: '/l/ns/b7',
      holder: 'h ✓',
      t: String(2n ** 64n - 7n),
      epoch: 65535,
      w: '2026-12-05 01:02:03.456',
      time_error_ms: 12,
      value: 'bin\n\u0000',
    });
    assert.deepEqual(b, a);
  });

  it('a long result stream arrives whole', async () => {
    const counts = await Promise.all(
      both().map(async ([, s]) => {
        const rs = await s.client.query({ query: 'SELECT number, toString(number) AS t FROM numbers(300000)', format: 'JSONEachRow' });
        let n = 0;
        let sum = 0n;
        for await (const rows of rs.stream<{ number: string }>())
          for (const r of rows) {
            n += 1;
            sum += BigInt(r.json().number);
          }
        return { n, sum: sum.toString() };
      }),
    );
    assert.deepEqual(counts[0], { n: 300000, sum: '44999850000' });
    assert.deepEqual(counts[1], counts[0]);
  });

  it('errors carry their ClickHouse code and type; a wrong password is refused (516)', async () => {
    const code = async (p: Promise<unknown>): Promise<string> =>
      p.then(
        () => 'ok',
        (err: { code?: string; type?: string }) => `${err.code} ${err.type}`,
      );
    for (const [name, s] of both()) {
      assert.equal(await code(s.rows('SELECT * FROM {db:Identifier}.no_such_table')), '60 UNKNOWN_TABLE', name);
      assert.equal(await code(s.rows('SELEKT 1')), '62 SYNTAX_ERROR', name);
      assert.equal(await code(s.rows('SELECT {n:UInt64}', { n: 'not a number' })).then((c) => c.split(' ')[0] !== 'ok'), true, name);
    }
    const wrong = createClient({ url: storeProc.url, username: 'lockaudit', password: 'not-the-password' });
    try {
      assert.equal(await code(wrong.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then((r) => r.json())), '516 AUTHENTICATION_FAILED');
    } finally {
      await wrong.close();
    }
  });

  it('a cancelled query ends, and the store answers the next one', async () => {
    for (const [name, s] of both()) {
      const abort = new AbortController();
      const long = s.client.query({ query: 'SELECT sum(cityHash64(number)) AS h FROM numbers(3000000000)', format: 'JSONEachRow', abort_signal: abort.signal });
      setTimeout(() => abort.abort(), 300);
      await assert.rejects(long, (err: unknown) => err !== undefined, name);
      assert.deepEqual(await s.rows('SELECT 1 AS one'), [{ one: 1 }], name);
    }
  });
});
