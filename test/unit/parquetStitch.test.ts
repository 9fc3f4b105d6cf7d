// ParquetStitcher (exporters/parquet/stitch.ts) on its own: Parquet files
// written here by an independent writer (@dsnp/parquetjs) are joined into one
// file whose rows and values, read back by that library, are exactly the
// parts' in order — 64-bit values above 2^53 included.
import assert from 'node:assert/strict';
import { open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import parquet from '@dsnp/parquetjs';
import { isLockauditError } from '../../core/errors.js';
import { fileSink } from '../../exporters/storage/byteSink.js';
import { parquetRowCount, ParquetStitcher } from '../../exporters/parquet/stitch.js';
import { tempDir } from '../support/env.js';

interface Row {
  token: bigint;
  key: string;
  waitMs: number;
}

const tmp = tempDir();
after(() => tmp.remove());

const schema = new parquet.ParquetSchema({
  token: { type: 'INT64' },
  key: { type: 'UTF8' },
  waitMs: { type: 'INT32', optional: true },
});

/** A Parquet file of `rows`, in row groups of `groupRows`. */
async function part(name: string, rows: Row[], groupRows: number, s = schema): Promise<Buffer> {
  const file = path.join(tmp.dir, name);
  const writer = await parquet.ParquetWriter.openFile(s, file, { rowGroupSize: groupRows, compression: 'SNAPPY' } as never);
  for (const r of rows) await writer.appendRow(r as unknown as Record<string, unknown>);
  await writer.close();
  return readFile(file);
}

async function readBack(file: string): Promise<Row[]> {
  const reader = await parquet.ParquetReader.openFile(file);
  try {
    const cursor = reader.getCursor();
    const out: Row[] = [];
    for (let r = (await cursor.next()) as Row | null; r; r = (await cursor.next()) as Row | null)
      out.push({ token: BigInt(r.token), key: r.key, waitMs: r.waitMs });
    return out;
  } finally {
    await reader.close();
  }
}

const rows = (from: number, n: number): Row[] =>
  Array.from({ length: n }, (_, i) => ({ token: 11258999068426240n + BigInt(from + i) * 4097n, key: `payments/acct-${from + i}`, waitMs: (from + i) % 7 }));

async function stitch(
  name: string,
  parts: Buffer[],
): Promise<{ file: string; result: Awaited<ReturnType<ParquetStitcher['finish']>>; range: { min: bigint; max: bigint } | undefined }> {
  const file = path.join(tmp.dir, name);
  const fh = await open(file, 'w');
  try {
    const stitcher = new ParquetStitcher(fileSink(fh));
    for (const p of parts) await stitcher.add(p);
    const range = stitcher.columnRange('token');
    return { file, result: await stitcher.finish(), range };
  } finally {
    await fh.close();
  }
}

describe('ParquetStitcher', () => {
  it('joins parts of several row groups into one file with every row and value exact, in order', async () => {
    const a = rows(0, 250);
    const b = rows(250, 90);
    const c = rows(340, 1);
    const { file, result, range } = await stitch('joined.parquet', [
      await part('a.parquet', a, 100),
      await part('b.parquet', b, 40),
      await part('c.parquet', c, 10),
    ]);
    assert.equal(result.rows, 341n);
    assert.equal(result.rowGroups, 3 + 3 + 1);
    const bytes = await readFile(file);
    assert.equal(result.bytes, bytes.length);
    assert.equal(parquetRowCount(bytes), 341n);
    assert.deepEqual(await readBack(file), [...a, ...b, ...c]);
    assert.deepEqual(range, { min: a[0]?.token, max: c[0]?.token }, 'the footer statistics span every part');
  });

  it('keeps the schema of a part without rows and joins it with the others', async () => {
    const a = rows(0, 5);
    const { file, result } = await stitch('with-empty.parquet', [await part('empty.parquet', [], 10), await part('a5.parquet', a, 10)]);
    assert.equal(result.rows, 5n);
    assert.deepEqual(await readBack(file), a);
  });

  it('refuses parts whose schemas differ, and a part that is not Parquet', async () => {
    const other = new parquet.ParquetSchema({ token: { type: 'INT64' }, key: { type: 'UTF8' } });
    const fh = await open(path.join(tmp.dir, 'refused.parquet'), 'w');
    try {
      const stitcher = new ParquetStitcher(fileSink(fh));
      await stitcher.add(await part('s1.parquet', rows(0, 3), 10));
      const second = await part(
        's2.parquet',
        rows(3, 3).map(({ token, key }) => ({ token, key, waitMs: 0 })),
        10,
        other,
      );
      await assert.rejects(stitcher.add(second), (err) => isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_PARQUET'));
      await assert.rejects(stitcher.add(Buffer.from('not parquet at all')), (err) => isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_PARQUET'));
    } finally {
      await fh.close();
    }
  });
});
