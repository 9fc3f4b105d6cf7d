// ArrowStreamJoiner (exporters/compliance/arrowStream.ts) on its own: Arrow IPC streams
// written by apache-arrow (an independent writer) joined into one stream that
// apache-arrow reads back with every row, uint64 exact; streams that cannot
// be joined are refused.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { tableFromArrays, tableFromIPC, tableToIPC, vectorFromArray, Dictionary, Utf8, Int32, Table } from 'apache-arrow';
// (No zero-row chunk here: apache-arrow lays out an empty table's schema flatbuffer differently; ClickHouse writes one schema's bytes the same whatever the rows.)
import { ArrowStreamJoiner } from '../../exporters/compliance/arrowStream.js';
import { isLockauditError } from '../../core/errors.js';

const stream = (from: number, n: number): Buffer =>
  Buffer.from(
    tableToIPC(
      new Table({
        token: vectorFromArray(BigUint64Array.from({ length: n }, (_, i) => 11258999068426240n + BigInt(from + i) * 4097n)),
        // Plain utf8, as ClickHouse writes strings (tableFromArrays would make them dictionaries).
        key: vectorFromArray(
          Array.from({ length: n }, (_, i) => `payments/acct-${from + i}`),
          new Utf8(),
        ),
      }),
      'stream',
    ),
  );

function collect(): { sink: { write(b: Buffer): Promise<void> }; bytes(): Buffer } {
  const parts: Buffer[] = [];
  return { sink: { write: async (b) => void parts.push(Buffer.from(b)) }, bytes: () => Buffer.concat(parts) };
}

describe('ArrowStreamJoiner', () => {
  it('joins streams into one with every row in order, uint64 exact, rows counted from the batch headers, hashed as written', async () => {
    const out = collect();
    const joiner = new ArrowStreamJoiner(out.sink);
    assert.equal(await joiner.add(stream(0, 100)), 100n);
    assert.equal(await joiner.add(stream(100, 7)), 7n);
    const result = await joiner.finish();
    const bytes = out.bytes();
    assert.equal(result.rows, 107n);
    assert.equal(result.bytes, bytes.length);
    assert.equal(result.sha256, createHash('sha256').update(bytes).digest('hex'));
    const table = tableFromIPC(bytes);
    assert.equal(table.numRows, 107);
    const tokens = [...(table.getChild('token') ?? [])] as bigint[];
    assert.deepEqual(
      tokens,
      Array.from({ length: 107 }, (_, i) => 11258999068426240n + BigInt(i) * 4097n),
    );
    assert.equal(table.getChild('key')?.get(106), 'payments/acct-106');
  });

  it('refuses a chunk with another schema, a dictionary batch, and bytes that are not Arrow', async () => {
    const joiner = new ArrowStreamJoiner(collect().sink);
    await joiner.add(stream(0, 3));
    const other = Buffer.from(tableToIPC(tableFromArrays({ token: BigUint64Array.from([1n]) }), 'stream'));
    await assert.rejects(joiner.add(other), (err) => isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_ARROW'));
    const dict = new Table({ cls: vectorFromArray(['a', 'b', 'a'], new Dictionary(new Utf8(), new Int32())) });
    await assert.rejects(new ArrowStreamJoiner(collect().sink).add(Buffer.from(tableToIPC(dict, 'stream'))), (err) =>
      isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_ARROW'),
    );
    await assert.rejects(new ArrowStreamJoiner(collect().sink).add(Buffer.from('not arrow at all, but long enough')), (err) =>
      isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_ARROW'),
    );
  });
});
