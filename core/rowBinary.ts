// Rows → ClickHouse's RowBinaryWithDefaults, the binary row format: no JSON
// text to build here or to parse in ClickHouse. The encoder is compiled once
// per table from the table's own column types (DESCRIBE), takes the same row
// objects as the JSONEachRow path and stores the same values:
//  - a field that is undefined (or null in a column that is not Nullable) is
//    sent as "use the column's default", as JSONEachRow does with
//    input_format_null_as_default;
//  - 64-bit integers come as bigint, decimal strings or safe integers and are
//    written exactly (never through a JS number above 2^53);
//  - DateTime64 values are integer milliseconds, as the JSON path takes them;
//  - strings are written as their UTF-8 bytes, whatever they contain.
// A value the column cannot hold throws a RowEncodeError whose `type` is the
// ClickHouse error type the server would have raised for it, so callers
// classify it as "these rows are bad" exactly like a rejected insert; given a
// `rejected` callback, encode leaves that row out and names it instead (one
// pass finds every such row of a batch: no bisection by insert). A value
// ClickHouse would take and change is one the column cannot hold too: a
// DateTime64 outside 1900-01-01 .. 2299-12-31 (ClickHouse saturates it), as
// an integer past its type's range (ClickHouse wraps it).

export interface ColumnSpec {
  name: string;
  /** The ClickHouse type as DESCRIBE prints it, e.g. `Nullable(DateTime64(3, 'UTC'))`. */
  type: string;
}

/** A value the column cannot take; `type` names the ClickHouse error type it stands for. */
export class RowEncodeError extends Error {
  readonly type: string;
  readonly code = 'ROW_ENCODE';
  constructor(type: string, message: string) {
    super(message);
    this.name = 'RowEncodeError';
    this.type = type;
  }
}

/** A growable output buffer. */
class Out {
  buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  /** Little-endian 64-bit from two 32-bit halves (byte stores: cheaper than writeUInt32LE's checks here). */
  u64(lo: number, hi: number): void {
    this.ensure(8);
    const b = this.buf;
    let p = this.pos;
    b[p++] = lo & 0xff;
    b[p++] = (lo >>> 8) & 0xff;
    b[p++] = (lo >>> 16) & 0xff;
    b[p++] = lo >>> 24;
    b[p++] = hi & 0xff;
    b[p++] = (hi >>> 8) & 0xff;
    b[p++] = (hi >>> 16) & 0xff;
    b[p++] = hi >>> 24;
    this.pos = p;
  }

  str(s: string): void {
    const n = s.length;
    this.ensure(n * 3 + 10);
    const b = this.buf;
    // Short ASCII strings (most of ours) byte by byte: cheaper than a call into Buffer#write.
    if (n < 128) {
      let p = this.pos + 1;
      let i = 0;
      for (; i < n; i += 1) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[p++] = c;
      }
      if (i === n) {
        b[this.pos] = n;
        this.pos = p;
        return;
      }
    }
    // Otherwise the UTF-8 bytes after a one-byte length, moved when the length needs more bytes.
    const written = b.write(s, this.pos + 1, 'utf8');
    if (written < 128) {
      b[this.pos] = written;
      this.pos += 1 + written;
      return;
    }
    let lenBytes = 1;
    for (let m = written >>> 7; m > 0; m >>>= 7) lenBytes += 1;
    b.copy(b, this.pos + lenBytes, this.pos + 1, this.pos + 1 + written);
    let m = written;
    while (m >= 0x80) {
      b[this.pos++] = (m & 0x7f) | 0x80;
      m >>>= 7;
    }
    b[this.pos++] = m;
    this.pos += written;
  }

  take(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

type Write = (out: Out, v: unknown, column: string) => void;

const TWO32 = 2 ** 32;
const UINT64_MAX = 2n ** 64n - 1n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const bad = (type: string, column: string, v: unknown, what: string): RowEncodeError =>
  new RowEncodeError(type, `cannot store ${typeof v === 'string' ? JSON.stringify(v.slice(0, 100)) : String(v)} in column ${column} (${what})`);

/** A 64-bit integer value as bigint, or undefined when it is not an integer at all. */
function integer(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : undefined;
  if (typeof v === 'string' && /^-?[0-9]{1,20}$/.test(v)) return BigInt(v);
  if (typeof v === 'boolean') return v ? 1n : 0n;
  return undefined;
}

function writeInt64(out: Out, n: bigint): void {
  const u = BigInt.asUintN(64, n);
  out.u64(Number(u & 0xffffffffn), Number(u >> 32n));
}

/** A decimal string of at most 15 digits as a number (exact: below 2^53), or -1. */
function shortDecimal(v: string): number {
  const n = v.length;
  if (n === 0 || n > 15) return -1;
  let x = 0;
  for (let i = 0; i < n; i += 1) {
    const d = v.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    x = x * 10 + d;
  }
  return x;
}

/** Unsigned 64-bit: the fast path for safe integers and short decimal strings, bigint otherwise. */
const uint64: Write = (out, v, column) => {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return out.u64(v % TWO32, Math.floor(v / TWO32));
  if (typeof v === 'string') {
    const x = shortDecimal(v);
    if (x >= 0) return out.u64(x % TWO32, Math.floor(x / TWO32));
  }
  const n = integer(v);
  if (n === undefined) throw bad('CANNOT_PARSE_TEXT', column, v, 'UInt64');
  if (n < 0n || n > UINT64_MAX) throw bad('VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE', column, v, 'UInt64');
  writeInt64(out, n);
};

const int64: Write = (out, v, column) => {
  if (typeof v === 'string') {
    const x = shortDecimal(v);
    if (x >= 0) return out.u64(x % TWO32, Math.floor(x / TWO32));
  }
  const n = integer(v);
  if (n === undefined) throw bad('CANNOT_PARSE_TEXT', column, v, 'Int64');
  if (n < INT64_MIN || n > INT64_MAX) throw bad('VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE', column, v, 'Int64');
  writeInt64(out, n);
};

function smallUint(bytes: 1 | 2 | 4): Write {
  const max = 2 ** (8 * bytes) - 1;
  const type = `UInt${8 * bytes}`;
  return (out, v, column) => {
    const n = typeof v === 'boolean' ? Number(v) : typeof v === 'string' && /^[0-9]{1,10}$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n)) throw bad('CANNOT_PARSE_TEXT', column, v, type);
    if (n < 0 || n > max) throw bad('VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE', column, v, type);
    out.ensure(bytes);
    if (bytes === 1) out.buf[out.pos] = n;
    else if (bytes === 2) out.buf.writeUInt16LE(n, out.pos);
    else out.buf.writeUInt32LE(n, out.pos);
    out.pos += bytes;
  };
}

const float64: Write = (out, v, column) => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || (Number.isNaN(n) && typeof v !== 'number')) throw bad('CANNOT_PARSE_TEXT', column, v, 'Float64');
  out.ensure(8);
  out.buf.writeDoubleLE(n, out.pos);
  out.pos += 8;
};

const string: Write = (out, v, column) => {
  if (typeof v === 'string') return out.str(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return out.str(String(v));
  throw bad('CANNOT_PARSE_TEXT', column, v, 'String');
};

/** DateTime64's range (ClickHouse stores a value outside it as the nearest end, silently). */
const DATETIME64_MIN_MS = Date.UTC(1900, 0, 1);
const DATETIME64_MAX_MS = Date.UTC(2299, 11, 31, 23, 59, 59, 999);

/** DateTime64(scale): integer milliseconds since the epoch, as the JSON path reads a bare integer. */
function dateTime64(scale: number): Write {
  const factor = 10n ** BigInt(Math.abs(scale - 3));
  return (out, v, column) => {
    const ms = v instanceof Date ? v.getTime() : v;
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms)) throw bad('CANNOT_PARSE_DATETIME', column, v, `DateTime64(${scale})`);
    if (ms < DATETIME64_MIN_MS || ms > DATETIME64_MAX_MS)
      throw bad('VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE', column, v, `DateTime64(${scale}), 1900-01-01 .. 2299-12-31`);
    if (scale === 3) return ms >= 0 ? out.u64(ms % TWO32, Math.floor(ms / TWO32)) : writeInt64(out, BigInt(ms));
    writeInt64(out, scale > 3 ? BigInt(ms) * factor : BigInt(ms) / factor);
  };
}

/** Enum8('a' = 1, 'b' = 2): by name (or by a number that is one of its values). */
function enum8(body: string): Write {
  const byName = new Map<string, number>();
  for (const m of body.matchAll(/'((?:[^'\\]|\\.)*)'\s*=\s*(-?\d+)/g)) byName.set((m[1] as string).replace(/\\(.)/g, '$1'), Number(m[2]));
  const values = new Set(byName.values());
  return (out, v, column) => {
    const n = typeof v === 'string' ? byName.get(v) : typeof v === 'number' && values.has(v) ? v : undefined;
    if (n === undefined) throw bad('UNKNOWN_ELEMENT_OF_ENUM', column, v, 'Enum8');
    out.u8(n & 0xff);
  };
}

/** The writer of one ClickHouse type, or undefined when this encoder does not know the type. */
function writerOf(type: string): { write: Write; nullable: boolean } | undefined {
  const nullable = /^Nullable\((.*)\)$/.exec(type);
  if (nullable) {
    const inner = writerOf(nullable[1] as string);
    if (!inner || inner.nullable) return undefined;
    return {
      nullable: true,
      write: (out, v, column) => {
        if (v === null) return out.u8(1);
        out.u8(0);
        inner.write(out, v, column);
      },
    };
  }
  const lowCardinality = /^LowCardinality\((.*)\)$/.exec(type);
  if (lowCardinality) return writerOf(lowCardinality[1] as string); // sent as its inner type
  if (type === 'String') return { write: string, nullable: false };
  if (type === 'UInt64') return { write: uint64, nullable: false };
  if (type === 'Int64') return { write: int64, nullable: false };
  if (type === 'UInt32') return { write: smallUint(4), nullable: false };
  if (type === 'UInt16') return { write: smallUint(2), nullable: false };
  if (type === 'UInt8' || type === 'Bool') return { write: smallUint(1), nullable: false };
  if (type === 'Float64') return { write: float64, nullable: false };
  const dt64 = /^DateTime64\((\d+)(?:,\s*'[^']*')?\)$/.exec(type);
  if (dt64) return { write: dateTime64(Number(dt64[1])), nullable: false };
  const e8 = /^Enum8\((.*)\)$/.exec(type);
  if (e8) return { write: enum8(e8[1] as string), nullable: false };
  return undefined;
}

export interface RowBinaryEncoder {
  /** The columns, in the order each row is written (the INSERT's column list). */
  readonly columns: readonly string[];
  /**
   * Every row as RowBinaryWithDefaults. A value a column cannot take throws a RowEncodeError naming it; with
   * `rejected`, its row is left out of the bytes and handed there (its index, the error) instead.
   */
  encode(rows: readonly object[], rejected?: (index: number, err: RowEncodeError) => void): Buffer;
}

/** An encoder for these columns, or undefined when one of their types is not one this encoder writes. */
export function rowBinaryEncoder(columns: readonly ColumnSpec[]): RowBinaryEncoder | undefined {
  const writers: Array<{ name: string; write: Write; nullable: boolean }> = [];
  for (const c of columns) {
    const w = writerOf(c.type);
    if (!w) return undefined;
    writers.push({ name: c.name, ...w });
  }
  return {
    columns: writers.map((w) => w.name),
    encode(rows, rejected) {
      const out = new Out(Math.max(1 << 16, rows.length * 320)); // about one audit-event row each: rarely grown
      for (let i = 0; i < rows.length; i += 1) {
        const r = rows[i] as Record<string, unknown>;
        const start = out.pos;
        try {
          for (const w of writers) {
            const v = r[w.name];
            // 1 = "the column's default": an absent field, or null where NULL cannot be stored (input_format_null_as_default).
            if (v === undefined || (v === null && !w.nullable)) {
              out.u8(1);
              continue;
            }
            out.u8(0);
            w.write(out, v, w.name);
          }
        } catch (err) {
          if (!rejected || !(err instanceof RowEncodeError)) throw err;
          out.pos = start; // the row's bytes so far are dropped: the next row is written over them
          rejected(i, err);
        }
      }
      return out.take();
    },
  };
}
