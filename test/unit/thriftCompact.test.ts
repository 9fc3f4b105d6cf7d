// The Thrift compact codec that reads and rewrites Parquet footers
// (exporters/parquet/thriftCompact.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeStruct, encodeStruct, TType, type ThriftStruct } from '../../exporters/parquet/thriftCompact.js';

describe('thrift compact codec (Parquet footers)', () => {
  it('round-trips every field type byte for byte, including 64-bit values above 2^53 and long lists', () => {
    const s: ThriftStruct = {
      kind: 'struct',
      fields: [
        { id: 1, type: TType.I32, value: -7 },
        {
          id: 2,
          type: TType.List,
          value: { kind: 'list', elementType: TType.I64, items: Array.from({ length: 20 }, (_, i) => 11258999069426240n + BigInt(i)) },
        },
        { id: 3, type: TType.I64, value: -(2n ** 62n) },
        { id: 4, type: TType.Binary, value: new TextEncoder().encode('grant_revision') },
        { id: 5, type: TType.True, value: true },
        { id: 6, type: TType.False, value: false },
        {
          id: 40,
          type: TType.Struct,
          value: {
            kind: 'struct',
            fields: [
              { id: 1, type: TType.Double, value: 1.5 },
              { id: 2, type: TType.Byte, value: -3 },
            ],
          },
        },
        { id: 41, type: TType.Map, value: { kind: 'map', keyType: TType.Binary, valueType: TType.I16, entries: [[new Uint8Array([65]), 300]] } },
      ],
    };
    const bytes = encodeStruct(s);
    const back = decodeStruct(bytes);
    assert.deepEqual(Buffer.from(encodeStruct(back)), Buffer.from(bytes));
    assert.equal(back.fields[2]?.value as bigint, -(2n ** 62n));
    assert.deepEqual(back, s);
  });
});
