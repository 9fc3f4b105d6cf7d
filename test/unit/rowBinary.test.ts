// core/rowBinary.ts: the bytes of RowBinaryWithDefaults for the types the
// audit tables use, and the errors that stand for ClickHouse's rejections.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyInsertError } from '../../tailer/sink/rowWriter.js';
import { RowEncodeError, rowBinaryEncoder } from '../../core/rowBinary.js';

const enc = (type: string, v: unknown): Buffer => {
  const e = rowBinaryEncoder([{ name: 'c', type }]);
  assert.ok(e, type);
  return e.encode([{ c: v }]);
};
const hex = (b: Buffer): string => b.toString('hex');

describe('RowBinaryWithDefaults encoder', () => {
  it('writes 64-bit integers exactly from decimal strings, bigint and safe numbers', () => {
    assert.equal(hex(enc('UInt64', '18446744073709551615')), '00ffffffffffffffff');
    assert.equal(hex(enc('UInt64', '9007199254740993')), '000100000000002000'); // 2^53 + 1: not a JS number
    assert.equal(hex(enc('UInt64', 2n ** 63n)), '000000000000000080');
    assert.equal(hex(enc('UInt64', 258)), '000201000000000000');
    assert.equal(hex(enc('Int64', '-1')), '00ffffffffffffffff');
    assert.equal(hex(enc('UInt32', 4_294_967_295)), '00ffffffff');
  });

  it('writes strings as their UTF-8 bytes with a varint length, whatever they hold', () => {
    assert.equal(hex(enc('String', 'a\u0000\n"\\')), '000561000a225c');
    assert.equal(hex(enc('LowCardinality(String)', 'é')), '0002c3a9');
    const long = 'x'.repeat(200);
    assert.equal(hex(enc('String', long)), `00c801${'78'.repeat(200)}`);
    const longUnicode = 'é'.repeat(100); // 200 bytes, not ASCII
    assert.equal(hex(enc('String', longUnicode)), `00c801${'c3a9'.repeat(100)}`);
    assert.equal(hex(enc('String', 12)), '00023132');
  });

  it('writes NULL, defaults for absent fields, DateTime64 milliseconds and Enum8 by name', () => {
    assert.equal(hex(enc("Nullable(DateTime64(3, 'UTC'))", null)), '0001');
    assert.equal(hex(enc("Nullable(DateTime64(3, 'UTC'))", 1000)), '0000e803000000000000');
    assert.equal(hex(enc('String', undefined)), '01');
    assert.equal(hex(enc('String', null)), '01'); // null where NULL cannot be stored: the default, as JSONEachRow does
    assert.equal(hex(enc("DateTime64(3, 'UTC')", -5)), '00fbffffffffffffff');
    assert.equal(hex(enc("Enum8('put' = 1, 'delete' = 2)", 'delete')), '0002');
  });

  it('refuses what a column cannot hold, with an error classified like a rejected row', () => {
    const cases: Array<[string, unknown, string]> = [
      ['UInt64', '18446744073709551616', 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      ['UInt64', '-1', 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      ['UInt64', 'abc', 'CANNOT_PARSE_TEXT'],
      ['UInt64', 1e21, 'CANNOT_PARSE_TEXT'],
      ['UInt32', 2 ** 32, 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      ["Enum8('put' = 1, 'delete' = 2)", 'bogus', 'UNKNOWN_ELEMENT_OF_ENUM'],
      ["DateTime64(3, 'UTC')", 1.5, 'CANNOT_PARSE_DATETIME'],
      // Values ClickHouse would take and change (a DateTime64 outside its range is stored as its nearest end).
      ["DateTime64(3, 'UTC')", 9e18, 'CANNOT_PARSE_DATETIME'], // not a safe integer of milliseconds
      ["DateTime64(3, 'UTC')", Date.UTC(9999, 11, 31), 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      ["DateTime64(3, 'UTC')", Date.UTC(2300, 0, 1), 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      ["Nullable(DateTime64(3, 'UTC'))", Date.UTC(1899, 11, 31, 23, 59, 59, 999), 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      ['UInt32', 5e9, 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      ['UInt32', 1.5, 'CANNOT_PARSE_TEXT'],
      ['String', { a: 1 }, 'CANNOT_PARSE_TEXT'],
    ];
    for (const [type, v, errType] of cases) {
      assert.throws(
        () => enc(type, v),
        (err: unknown) => err instanceof RowEncodeError && err.type === errType && classifyInsertError(err) === 'permanent',
        `${type} ${String(v)}`,
      );
    }
  });

  it('takes the ends of the DateTime64 range', () => {
    assert.equal(enc("DateTime64(3, 'UTC')", Date.UTC(1900, 0, 1)).length, 9);
    assert.equal(enc("DateTime64(3, 'UTC')", Date.UTC(2299, 11, 31, 23, 59, 59, 999)).length, 9);
  });

  it('given `rejected`, leaves out exactly the rows a column cannot take, names each, and writes the rest as if alone', () => {
    const e = rowBinaryEncoder([
      { name: 'a', type: 'UInt32' },
      { name: 'b', type: 'String' },
      { name: 't', type: "DateTime64(3, 'UTC')" },
    ]);
    assert.ok(e);
    const good: object[] = [
      { a: 1, b: 'x', t: 1000 },
      { a: 2, b: 'y'.repeat(300), t: 2000 },
      { a: 3, b: 'z', t: 3000 },
    ];
    // The bad rows fail after columns were written (b, then t): those bytes must not stay.
    const rows: object[] = [
      ...good.slice(0, 1),
      { a: 9, b: 'bad', t: Date.UTC(9999, 0, 1) },
      ...good.slice(1, 2),
      { a: 2 ** 40, b: 'w' },
      ...good.slice(2),
      { a: 7, b: 'v'.repeat(500), t: -1e13 },
    ];
    const left: Array<[number, string]> = [];
    const bytes = e.encode(rows, (i, err) => left.push([i, err.type]));
    assert.deepEqual(left, [
      [1, 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      [3, 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
      [5, 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
    ]);
    assert.equal(hex(bytes), hex(e.encode(good)));
    // Without it, the first such value throws.
    assert.throws(() => e.encode(rows), RowEncodeError);
  });

  it('has no encoder for a type it does not write (the store then stays on JSONEachRow)', () => {
    assert.equal(
      rowBinaryEncoder([
        { name: 'a', type: 'String' },
        { name: 'b', type: 'Array(String)' },
      ]),
      undefined,
    );
  });
});
