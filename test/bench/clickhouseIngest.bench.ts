// ClickHouse ingest of audit-event rows (embedded chdb), by format, over the
// same rows in the same run, beside ClickHouse generating the same rows
// itself (INSERT … SELECT FROM numbers()):
//  - JSONEachRow through @clickhouse/client (the tailer's path until now);
//  - RowBinaryWithDefaults (core/rowBinary.ts, store.insert(…, {binary}));
//  - ArrowStream built with apache-arrow (uncompressed IPC stream).
// The binary bodies reach chdb through a file read with FROM INFILE (its
// connection passes insert bodies as UTF-8 text). Each figure is end to end
// (encode + write + insert); the encode share is printed beside it.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Int64, TimestampMillisecond, Uint32, Uint64, Uint8, Utf8, makeVector, tableToIPC, Table, vectorFromArray, type Vector } from 'apache-arrow';
import type { AuditStore } from '../../core/clickhouse.js';
import type { AuditEventRow } from '../../core/events.js';
import { rowBinaryEncoder } from '../../core/rowBinary.js';
import { tempStore } from '../support/env.js';
import { eventRow as row } from './benchRows.js';
import { heading, report } from './report.js';

const TOTAL = Number(process.env.BENCH_INGEST_ROWS ?? 300_000);
const BATCHES = (process.env.BENCH_INGEST_BATCHES ?? '1000,10000,20000').split(',').map(Number);

const GENERATED = `INSERT INTO {db:Identifier}.events
  (cluster, revision, key, event_type, op, namespace, lock_path, class, holder, session, token, epoch, grant_revision, wait_ms,
   wall_time, time_estimated, time_error_ms, create_revision, mod_revision, version, lease, value, prev_value, unprotected)
SELECT 'bench-gen', 1000000 + number, concat('/l/ns', toString(number % 20), '/key-', toString(number % 5000)),
  if(number % 2 = 1, 'release', 'grant'), if(number % 2 = 1, 'delete', 'put'), concat('ns', toString(number % 20)),
  concat('key-', toString(number % 5000)), concat('class-', toString(number % 7)), concat('spiffe://corp/worker-', toString(number % 300)),
  toString(7587862000 + number % 1000), 40 * 281474976710656 + 1000000 + number, 40, 1000000 + number, number % 250,
  fromUnixTimestamp64Milli(toInt64(1764400000000 + number)), 0, 0, 1000000 + number, 1000000 + number, 1, '0', '{"holder":"x"}', '', 0
FROM numbers({n:UInt64})`;

const STRINGS = ['cluster', 'key', 'event_type', 'op', 'namespace', 'lock_path', 'class', 'holder', 'session', 'lease', 'value', 'prev_value'] as const;
const UINT64 = ['revision', 'token', 'grant_revision', 'wait_ms', 'create_revision', 'mod_revision'] as const;

/** The rows as one Arrow record batch (IPC stream): 64-bit integers exact via BigInt, times as timestamp[ms]. */
function arrowStream(rows: readonly AuditEventRow[]): Uint8Array {
  const n = rows.length;
  const cols: Record<string, Vector> = {};
  for (const c of STRINGS)
    cols[c] = vectorFromArray(
      rows.map((r) => r[c]),
      new Utf8(),
    );
  for (const c of UINT64) {
    const a = new BigUint64Array(n);
    for (let i = 0; i < n; i += 1) a[i] = BigInt((rows[i] as AuditEventRow)[c]);
    cols[c] = makeVector({ type: new Uint64(), data: a });
  }
  const version = new BigInt64Array(n);
  const wall = new BigInt64Array(n);
  const epoch = new Uint32Array(n);
  const errorMs = new Uint32Array(n);
  const estimated = new Uint8Array(n);
  const unprotected = new Uint8Array(n);
  for (let i = 0; i < n; i += 1) {
    const r = rows[i] as AuditEventRow;
    version[i] = BigInt(r.version);
    wall[i] = BigInt(r.wall_time);
    epoch[i] = r.epoch;
    errorMs[i] = r.time_error_ms;
    estimated[i] = r.time_estimated;
    unprotected[i] = r.unprotected;
  }
  cols.version = makeVector({ type: new Int64(), data: version });
  cols.wall_time = makeVector({ type: new TimestampMillisecond(), data: wall });
  cols.epoch = makeVector({ type: new Uint32(), data: epoch });
  cols.time_error_ms = makeVector({ type: new Uint32(), data: errorMs });
  cols.time_estimated = makeVector({ type: new Uint8(), data: estimated });
  cols.unprotected = makeVector({ type: new Uint8(), data: unprotected });
  return tableToIPC(new Table(cols), 'stream');
}

/** Inserts bytes of `format` into events through a file read with FROM INFILE (as the store does for RowBinary). */
async function insertFile(store: AuditStore, dir: string, bytes: Uint8Array, format: string, columns: readonly string[]): Promise<void> {
  const file = path.join(dir, `${randomUUID()}.bin`);
  await writeFile(file, bytes);
  try {
    await store.command(`INSERT INTO {db:Identifier}.events (${columns.join(', ')}) FROM INFILE '${file}' FORMAT ${format}`);
  } finally {
    await unlink(file);
  }
}

interface Method {
  name: string;
  /** Only the encoding of one batch (for the share of the time it takes). */
  encode: (rows: readonly AuditEventRow[]) => unknown;
  /** Encodes and inserts one batch. */
  insert: (rows: readonly AuditEventRow[]) => Promise<void>;
}

async function main(): Promise<void> {
  const { store, close } = await tempStore();
  const dir = mkdtempSync(path.join(tmpdir(), 'lockaudit-ingest-bench-'));
  try {
    heading(`ClickHouse ingest of audit events (embedded chdb), ${TOTAL.toLocaleString('en-US')} rows per measurement`);
    const describe = await store.rows<{ name: string; type: string; default_type: string }>('DESCRIBE TABLE {db:Identifier}.events');
    const encoder = rowBinaryEncoder(describe.filter((c) => c.default_type === '' || c.default_type === 'DEFAULT'));
    if (!encoder) throw new Error('no RowBinary encoder for events');
    const arrowColumns = [...STRINGS, ...UINT64, 'version', 'wall_time', 'epoch', 'time_error_ms', 'time_estimated', 'unprotected'];
    const methods: Method[] = [
      // The client's own encoding: one JSON.stringify per row, joined.
      { name: 'JSONEachRow', encode: (rows) => rows.map((r) => `${JSON.stringify(r)}\n`).join(''), insert: (rows) => store.insert('events', rows) },
      { name: 'RowBinary', encode: (rows) => encoder.encode(rows), insert: (rows) => store.insert('events', rows, { binary: true }) },
      { name: 'ArrowStream', encode: arrowStream, insert: (rows) => insertFile(store, dir, arrowStream(rows), 'ArrowStream', arrowColumns) },
    ];
    const t0 = performance.now();
    await store.command(GENERATED, { n: TOTAL });
    const generatedRate = TOTAL / ((performance.now() - t0) / 1000);
    for (const batch of BATCHES) {
      const batches = Array.from({ length: Math.ceil(TOTAL / batch) }, (_, b) =>
        Array.from({ length: Math.min(batch, TOTAL - b * batch) }, (_, i) => row(b * batch + i)),
      );
      let jsonRate = NaN;
      for (const m of methods) {
        await store.command('TRUNCATE TABLE {db:Identifier}.events');
        const started = performance.now();
        for (const rows of batches) await m.insert(rows);
        const seconds = (performance.now() - started) / 1000;
        const e0 = performance.now();
        for (const rows of batches) m.encode(rows);
        const encodeSeconds = (performance.now() - e0) / 1000;
        const rate = TOTAL / seconds;
        const stored = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.events');
        if (Number(stored[0]?.n) !== TOTAL) throw new Error(`${m.name}: ${stored[0]?.n} rows stored, ${TOTAL} inserted`);
        if (m.name === 'JSONEachRow') jsonRate = rate;
        report({
          name: `${m.name} rows/s, batch ${batch.toLocaleString('en-US')}`,
          value: rate,
          unit: 'rows/s',
          baselineName: 'INSERT … SELECT FROM numbers()',
          baseline: generatedRate,
          higherIsBetter: true,
        });
        if (m.name !== 'JSONEachRow')
          report({
            name: `${m.name} rows/s, batch ${batch.toLocaleString('en-US')}`,
            value: rate,
            unit: 'rows/s',
            baselineName: `JSONEachRow, batch ${batch}`,
            baseline: jsonRate,
            higherIsBetter: true,
          });
        process.stdout.write(
          `  ${m.name}: encoding alone ${(TOTAL / encodeSeconds).toFixed(0)} rows/s (${((100 * encodeSeconds) / seconds).toFixed(0)} % of the end-to-end time)\n`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await close();
  }
}

await main();
