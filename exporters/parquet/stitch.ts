// Joins complete Parquet files with one schema into one Parquet file, without
// re-encoding a value: each part's row groups are copied byte for byte and the
// footers are merged with their offsets shifted. This is how an export runs
// as several ClickHouse queries (progress after each, bounded memory) and is
// still one file written by ClickHouse's own encoder.
//
// The parts must carry no page index (output_format_parquet_write_page_index=0):
// its page locations are absolute offsets inside index blocks we do not
// rewrite. Bloom filters are self-contained and only move.
import { createHash, type Hash } from 'node:crypto';
import { LockauditError } from '../../core/errors.js';
import type { ByteSink } from '../storage/byteSink.js';
import { decodeStruct, encodeStruct, field, TType, type ThriftList, type ThriftStruct } from './thriftCompact.js';

const MAGIC = Buffer.from('PAR1');

/** ClickHouse settings every part must be written with. */
export const STITCHABLE_PARQUET_SETTINGS = {
  output_format_parquet_write_page_index: 0,
  output_format_parquet_write_bloom_filter: 0,
  // snappy: every reader has it (@dsnp/parquetjs has no zstd).
  output_format_parquet_compression_method: 'snappy',
} as const;

// FileMetaData, RowGroup, ColumnChunk, ColumnMetaData field ids (parquet.thrift).
const FMD = { schema: 2, numRows: 3, rowGroups: 4 } as const;
const RG = { columns: 1, fileOffset: 5, ordinal: 7 } as const;
const CC = { fileOffset: 2, meta: 3, offsetIndexOffset: 4, offsetIndexLength: 5, columnIndexOffset: 6, columnIndexLength: 7 } as const;
const CMD_OFFSETS = [9, 10, 11, 14] as const; // data_page, index_page, dictionary_page, bloom_filter

export interface ParsedParquet {
  meta: ThriftStruct;
  /** Bytes between the leading magic and the footer: the row groups. */
  body: Buffer;
  rows: bigint;
}

function invalid(message: string): LockauditError {
  return new LockauditError('LOCKAUDIT_ERR_EXPORT_PARQUET', message);
}

/** Splits a complete Parquet file into its body and decoded footer. */
export function parseParquet(file: Buffer): ParsedParquet {
  if (file.length < 12 || !file.subarray(0, 4).equals(MAGIC) || !file.subarray(file.length - 4).equals(MAGIC)) {
    throw invalid('a part is not a Parquet file (magic bytes missing)');
  }
  const footerLength = file.readUInt32LE(file.length - 8);
  const footerStart = file.length - 8 - footerLength;
  if (footerStart < 4) throw invalid('a part has a footer longer than the file');
  const meta = decodeStruct(file.subarray(footerStart, file.length - 8));
  const rows = field(meta, FMD.numRows)?.value;
  return { meta, body: file.subarray(4, footerStart), rows: typeof rows === 'bigint' ? rows : 0n };
}

/** The footer of a complete Parquet file: row count and encoded schema. */
export function parquetRowCount(file: Buffer): bigint {
  return parseParquet(file).rows;
}

function shiftI64(s: ThriftStruct, id: number, by: bigint): void {
  const f = field(s, id);
  if (f && typeof f.value === 'bigint') f.value += by;
}

function rowGroupsOf(meta: ThriftStruct): ThriftStruct[] {
  const f = field(meta, FMD.rowGroups);
  return f ? ((f.value as ThriftList).items as ThriftStruct[]) : [];
}

/** Rewrites one part's row groups as they sit at `shift` bytes further into the output. */
function relocate(groups: ThriftStruct[], shift: bigint, firstOrdinal: number): void {
  groups.forEach((group, i) => {
    shiftI64(group, RG.fileOffset, shift);
    const ordinal = field(group, RG.ordinal);
    if (ordinal) ordinal.value = firstOrdinal + i;
    for (const chunk of (field(group, RG.columns)?.value as ThriftList | undefined)?.items ?? []) {
      const cc = chunk as ThriftStruct;
      shiftI64(cc, CC.fileOffset, shift);
      // A page index cannot be moved (absolute offsets inside): drop the reference.
      const pageIndex: number[] = [CC.offsetIndexOffset, CC.offsetIndexLength, CC.columnIndexOffset, CC.columnIndexLength];
      cc.fields = cc.fields.filter((f) => !pageIndex.includes(f.id));
      const meta = field(cc, CC.meta)?.value as ThriftStruct | undefined;
      if (meta) for (const id of CMD_OFFSETS) shiftI64(meta, id, shift);
    }
  });
}

export interface StitchResult {
  rows: bigint;
  bytes: number;
  sha256: string;
  rowGroups: number;
}

/**
 * min/max of an integer column over row groups, from the footer's statistics
 * (what the file itself says); undefined when the column has no statistics.
 */
export function integerColumnRange(groups: readonly ThriftStruct[], column: string): { min: bigint; max: bigint } | undefined {
  let min: bigint | undefined;
  let max: bigint | undefined;
  for (const group of groups) {
    for (const chunk of (field(group, RG.columns)?.value as ThriftList | undefined)?.items ?? []) {
      const meta = field(chunk as ThriftStruct, CC.meta)?.value as ThriftStruct | undefined;
      const pathItems = (meta && (field(meta, 3)?.value as ThriftList | undefined)?.items) ?? [];
      if (pathItems.length !== 1 || Buffer.from(pathItems[0] as Uint8Array).toString('utf8') !== column) continue;
      const stats = meta && (field(meta, 12)?.value as ThriftStruct | undefined);
      const lo = stats && (field(stats, 6) ?? field(stats, 2))?.value;
      const hi = stats && (field(stats, 5) ?? field(stats, 1))?.value;
      if (!(lo instanceof Uint8Array) || !(hi instanceof Uint8Array) || lo.length !== 8 || hi.length !== 8) return undefined;
      const a = Buffer.from(lo).readBigUInt64LE(0);
      const b = Buffer.from(hi).readBigUInt64LE(0);
      min = min === undefined || a < min ? a : min;
      max = max === undefined || b > max ? b : max;
    }
  }
  return min === undefined || max === undefined ? undefined : { min, max };
}

/**
 * Writes parts into one Parquet file as they arrive. `add` each part in
 * order, then `finish` writes the merged footer. sha256 and size cover
 * exactly the bytes written, hashed once as they pass to the sink.
 */
export class ParquetStitcher {
  readonly #out: ByteSink;
  readonly #hash: Hash = createHash('sha256');
  #offset = 0;
  #rows = 0n;
  #schema: Buffer | undefined;
  #first: ThriftStruct | undefined;
  readonly #groups: ThriftStruct[] = [];

  constructor(out: ByteSink) {
    this.#out = out;
  }

  async #write(buf: Buffer): Promise<void> {
    this.#hash.update(buf);
    this.#offset += buf.length;
    await this.#out.write(buf);
  }

  /** Appends one complete Parquet file; returns its row count. */
  async add(file: Buffer): Promise<bigint> {
    const part = parseParquet(file);
    const schemaField = field(part.meta, FMD.schema);
    const schema = Buffer.from(encodeStruct({ kind: 'struct', fields: schemaField ? [schemaField] : [] }));
    if (this.#schema === undefined) {
      this.#schema = schema;
      this.#first = part.meta;
      await this.#write(MAGIC);
    } else if (!this.#schema.equals(schema)) {
      throw invalid('the parts of one export have different Parquet schemas');
    }
    const groups = rowGroupsOf(part.meta);
    if (groups.length > 0) {
      // The part's body started at offset 4 in its own file.
      relocate(groups, BigInt(this.#offset - 4), this.#groups.length);
      this.#groups.push(...groups);
      await this.#write(part.body);
    }
    this.#rows += part.rows;
    return part.rows;
  }

  get rows(): bigint {
    return this.#rows;
  }

  /** min/max of an integer column over everything added so far (footer statistics). */
  columnRange(column: string): { min: bigint; max: bigint } | undefined {
    return integerColumnRange(this.#groups, column);
  }

  async finish(): Promise<StitchResult> {
    if (!this.#first) throw invalid('an export needs at least one part (ClickHouse writes a schema even for no rows)');
    const meta: ThriftStruct = {
      kind: 'struct',
      fields: this.#first.fields.map((f) => {
        if (f.id === FMD.numRows) return { ...f, value: this.#rows };
        if (f.id === FMD.rowGroups) return { ...f, value: { kind: 'list', elementType: TType.Struct, items: this.#groups } };
        return f;
      }),
    };
    if (!field(meta, FMD.rowGroups)) {
      meta.fields.push({ id: FMD.rowGroups, type: TType.List, value: { kind: 'list', elementType: TType.Struct, items: this.#groups } });
      meta.fields.sort((a, b) => a.id - b.id);
    }
    const footer = Buffer.from(encodeStruct(meta));
    const tail = Buffer.alloc(8);
    tail.writeUInt32LE(footer.length, 0);
    MAGIC.copy(tail, 4);
    await this.#write(footer);
    await this.#write(tail);
    return { rows: this.#rows, bytes: this.#offset, sha256: this.#hash.digest('hex'), rowGroups: this.#groups.length };
  }
}
