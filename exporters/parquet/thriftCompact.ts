// A generic codec for Thrift's compact protocol, just enough to read and
// rewrite a Parquet footer (FileMetaData) without a generated schema: a
// struct decodes to its fields by id and type, and encodes back to the same
// bytes. stitch.ts patches offsets in this tree.

export const TType = {
  Stop: 0,
  True: 1,
  False: 2,
  Byte: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  Double: 7,
  Binary: 8,
  List: 9,
  Set: 10,
  Map: 11,
  Struct: 12,
} as const;
export type TType = (typeof TType)[keyof typeof TType];

export type ThriftValue = boolean | number | bigint | Uint8Array | ThriftList | ThriftMap | ThriftStruct;
export interface ThriftList {
  kind: 'list';
  elementType: TType;
  items: ThriftValue[];
}
export interface ThriftMap {
  kind: 'map';
  keyType: TType;
  valueType: TType;
  entries: Array<[ThriftValue, ThriftValue]>;
}
export interface ThriftField {
  id: number;
  type: TType;
  value: ThriftValue;
}
export interface ThriftStruct {
  kind: 'struct';
  fields: ThriftField[];
}

export class ThriftDecodeError extends Error {}

export class CompactReader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  #byte(): number {
    if (this.pos >= this.buf.length) throw new ThriftDecodeError('unexpected end of thrift data');
    return this.buf[this.pos++] as number;
  }

  #varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.#byte();
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 70n) throw new ThriftDecodeError('varint too long');
    }
  }

  #zigzag(): bigint {
    const n = this.#varint();
    return (n >> 1n) ^ -(n & 1n);
  }

  #value(type: TType): ThriftValue {
    switch (type) {
      case TType.True:
        return true;
      case TType.False:
        return false;
      case TType.Byte: {
        const b = this.#byte();
        return b > 127 ? b - 256 : b;
      }
      case TType.I16:
      case TType.I32:
        return Number(this.#zigzag());
      case TType.I64:
        return this.#zigzag();
      case TType.Double: {
        const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8);
        this.pos += 8;
        return view.getFloat64(0, true);
      }
      case TType.Binary: {
        const len = Number(this.#varint());
        if (this.pos + len > this.buf.length) throw new ThriftDecodeError('binary runs past the end');
        const out = this.buf.subarray(this.pos, this.pos + len);
        this.pos += len;
        return out;
      }
      case TType.List:
      case TType.Set: {
        const header = this.#byte();
        let size = header >> 4;
        const elementType = (header & 0x0f) as TType;
        if (size === 15) size = Number(this.#varint());
        const items: ThriftValue[] = [];
        for (let i = 0; i < size; i++) items.push(this.#element(elementType));
        return { kind: 'list', elementType, items };
      }
      case TType.Map: {
        const size = Number(this.#varint());
        if (size === 0) return { kind: 'map', keyType: TType.Stop, valueType: TType.Stop, entries: [] };
        const types = this.#byte();
        const keyType = (types >> 4) as TType;
        const valueType = (types & 0x0f) as TType;
        const entries: Array<[ThriftValue, ThriftValue]> = [];
        for (let i = 0; i < size; i++) entries.push([this.#element(keyType), this.#element(valueType)]);
        return { kind: 'map', keyType, valueType, entries };
      }
      case TType.Struct:
        return this.struct();
      default:
        throw new ThriftDecodeError(`unknown thrift type ${type as number}`);
    }
  }

  // Inside lists and maps a bool is a whole byte (1 true, anything else false).
  #element(type: TType): ThriftValue {
    if (type === TType.True || type === TType.False) return this.#byte() === 1;
    return this.#value(type);
  }

  struct(): ThriftStruct {
    const fields: ThriftField[] = [];
    let lastId = 0;
    for (;;) {
      const header = this.#byte();
      if (header === 0) return { kind: 'struct', fields };
      const type = (header & 0x0f) as TType;
      const delta = header >> 4;
      const id = delta === 0 ? Number(this.#zigzag()) : lastId + delta;
      lastId = id;
      fields.push({ id, type, value: this.#value(type) });
    }
  }
}

export class CompactWriter {
  readonly #chunks: number[] = [];

  #varint(n: bigint): void {
    let v = n;
    while (v >= 0x80n) {
      this.#chunks.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.#chunks.push(Number(v));
  }

  #zigzag(n: bigint, bits: bigint): void {
    this.#varint(BigInt.asUintN(Number(bits), (n << 1n) ^ (n >> (bits - 1n))));
  }

  #value(type: TType, value: ThriftValue): void {
    switch (type) {
      case TType.True:
      case TType.False:
        return; // carried in the field header
      case TType.Byte:
        this.#chunks.push((value as number) & 0xff);
        return;
      case TType.I16:
      case TType.I32:
        this.#zigzag(BigInt(value as number), 32n);
        return;
      case TType.I64:
        this.#zigzag(value as bigint, 64n);
        return;
      case TType.Double: {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setFloat64(0, value as number, true);
        this.#chunks.push(...b);
        return;
      }
      case TType.Binary: {
        const bytes = value as Uint8Array;
        this.#varint(BigInt(bytes.length));
        for (const b of bytes) this.#chunks.push(b);
        return;
      }
      case TType.List:
      case TType.Set: {
        const list = value as ThriftList;
        if (list.items.length < 15) this.#chunks.push((list.items.length << 4) | list.elementType);
        else {
          this.#chunks.push(0xf0 | list.elementType);
          this.#varint(BigInt(list.items.length));
        }
        for (const item of list.items) this.#element(list.elementType, item);
        return;
      }
      case TType.Map: {
        const map = value as ThriftMap;
        this.#varint(BigInt(map.entries.length));
        if (map.entries.length === 0) return;
        this.#chunks.push((map.keyType << 4) | map.valueType);
        for (const [k, v] of map.entries) {
          this.#element(map.keyType, k);
          this.#element(map.valueType, v);
        }
        return;
      }
      case TType.Struct:
        this.struct(value as ThriftStruct);
        return;
      default:
        throw new ThriftDecodeError(`unknown thrift type ${type as number}`);
    }
  }

  #element(type: TType, value: ThriftValue): void {
    if (type === TType.True || type === TType.False) this.#chunks.push(value === true ? 1 : 2);
    else this.#value(type, value);
  }

  struct(s: ThriftStruct): void {
    let lastId = 0;
    for (const f of s.fields) {
      const type = f.type === TType.True || f.type === TType.False ? (f.value === true ? TType.True : TType.False) : f.type;
      const delta = f.id - lastId;
      if (delta > 0 && delta <= 15) this.#chunks.push((delta << 4) | type);
      else {
        this.#chunks.push(type);
        this.#zigzag(BigInt(f.id), 16n);
      }
      lastId = f.id;
      this.#value(type, f.value);
    }
    this.#chunks.push(0);
  }

  bytes(): Uint8Array {
    return Uint8Array.from(this.#chunks);
  }
}

export function decodeStruct(buf: Uint8Array): ThriftStruct {
  return new CompactReader(buf).struct();
}

export function encodeStruct(s: ThriftStruct): Uint8Array {
  const w = new CompactWriter();
  w.struct(s);
  return w.bytes();
}

export function field(s: ThriftStruct, id: number): ThriftField | undefined {
  return s.fields.find((f) => f.id === id);
}
