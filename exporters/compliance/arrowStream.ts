// Joins Arrow IPC streams written by ClickHouse (FORMAT ArrowStream, one per
// export chunk) into one stream, without re-encoding a value: the first
// chunk's schema, then every chunk's record batches byte for byte, then one
// end-of-stream marker. Each chunk repeats the schema (checked equal, then
// dropped) and ends with its own end marker (dropped). Row counts come from
// the record batches' own headers, read with a minimal flatbuffer walk
// (only Message.header_type, Message.bodyLength and RecordBatch.length).
import { createHash, type Hash } from 'node:crypto';
import type { ClickHouseSettings } from '@clickhouse/client';
import { LockauditError } from '../../core/errors.js';
import type { ByteSink } from '../storage/byteSink.js';

export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

/**
 * What every chunk must be written with: uncompressed (apache-arrow for JS
 * reads no compressed batches), strings as utf8, no dictionaries (a
 * dictionary batch cannot be moved between streams on its own).
 */
export const JOINABLE_ARROW_SETTINGS: ClickHouseSettings = {
  output_format_arrow_compression_method: 'none',
  output_format_arrow_string_as_string: 1,
  output_format_arrow_low_cardinality_as_dictionary: 0,
};

const CONTINUATION = 0xffffffff;
const END_OF_STREAM = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
const HEADER = { schema: 1, dictionaryBatch: 2, recordBatch: 3 } as const;

function invalid(message: string): LockauditError {
  return new LockauditError('LOCKAUDIT_ERR_EXPORT_ARROW', message);
}

/** Field `index` of the flatbuffer table at `table`: its absolute position, or undefined when absent. */
function fieldAt(buf: Buffer, table: number, index: number): number | undefined {
  const vtable = table - buf.readInt32LE(table);
  const vtableSize = buf.readUInt16LE(vtable);
  const slot = 4 + 2 * index;
  if (slot >= vtableSize) return undefined;
  const offset = buf.readUInt16LE(vtable + slot);
  return offset === 0 ? undefined : table + offset;
}

interface MessageInfo {
  headerType: number;
  bodyLength: number;
  /** Rows of a record batch (0 for other messages). */
  rows: bigint;
}

/** Reads the Message flatbuffer (Message.fbs): header type, body length, and a record batch's row count. */
function readMessage(meta: Buffer): MessageInfo {
  const root = meta.readUInt32LE(0);
  const typeAt = fieldAt(meta, root, 1);
  const headerType = typeAt === undefined ? 0 : meta.readUInt8(typeAt);
  const bodyAt = fieldAt(meta, root, 3);
  const bodyLength = bodyAt === undefined ? 0 : Number(meta.readBigInt64LE(bodyAt));
  let rows = 0n;
  const headerAt = fieldAt(meta, root, 2);
  if (headerType === HEADER.recordBatch && headerAt !== undefined) {
    const batch = headerAt + meta.readUInt32LE(headerAt);
    const lengthAt = fieldAt(meta, batch, 0);
    rows = lengthAt === undefined ? 0n : meta.readBigInt64LE(lengthAt);
  }
  return { headerType, bodyLength, rows };
}

interface Framed {
  info: MessageInfo;
  /** The whole message: prefix, metadata, body. */
  bytes: Buffer;
  /** The metadata alone (to compare schemas). */
  meta: Buffer;
}

/** Splits one IPC stream into its messages, up to its end marker. */
export function* arrowMessages(stream: Buffer): Generator<Framed> {
  let pos = 0;
  while (pos + 4 <= stream.length) {
    let prefix = 4;
    let metaLength = stream.readUInt32LE(pos);
    if (metaLength === CONTINUATION) {
      if (pos + 8 > stream.length) throw invalid('an Arrow chunk ends inside a message prefix');
      prefix = 8;
      metaLength = stream.readInt32LE(pos + 4);
    }
    if (metaLength === 0) return; // end of stream
    const metaStart = pos + prefix;
    if (metaLength < 0 || metaStart + metaLength > stream.length) throw invalid('an Arrow chunk has a message longer than itself');
    const meta = stream.subarray(metaStart, metaStart + metaLength);
    const info = readMessage(meta);
    const end = metaStart + metaLength + info.bodyLength;
    if (end > stream.length) throw invalid('an Arrow chunk has a message body longer than itself');
    yield { info, bytes: stream.subarray(pos, end), meta };
    pos = end;
  }
}

/** Writes chunks into one Arrow IPC stream as they arrive; sha256 and size cover exactly the bytes written. */
export class ArrowStreamJoiner {
  readonly #out: ByteSink;
  readonly #hash: Hash = createHash('sha256');
  #bytes = 0;
  #rows = 0n;
  #schema: Buffer | undefined;

  constructor(out: ByteSink) {
    this.#out = out;
  }

  async #write(buf: Buffer): Promise<void> {
    this.#hash.update(buf);
    this.#bytes += buf.length;
    await this.#out.write(buf);
  }

  /** Appends one chunk's record batches (and, for the first, its schema); returns its rows. */
  async add(chunk: Buffer): Promise<bigint> {
    let rows = 0n;
    let sawSchema = false;
    const batches: Buffer[] = [];
    for (const m of arrowMessages(chunk)) {
      if (m.info.headerType === HEADER.schema) {
        if (sawSchema) throw invalid('an Arrow chunk has two schemas');
        sawSchema = true;
        if (this.#schema === undefined) {
          this.#schema = Buffer.from(m.meta);
          await this.#write(m.bytes);
        } else if (!this.#schema.equals(m.meta)) {
          throw invalid('the chunks of one export have different Arrow schemas');
        }
      } else if (m.info.headerType === HEADER.recordBatch) {
        if (!sawSchema) throw invalid('an Arrow chunk has a record batch before its schema');
        rows += m.info.rows;
        batches.push(m.bytes);
      } else {
        throw invalid(`an Arrow chunk has a message of type ${m.info.headerType} (only a schema and record batches can be joined)`);
      }
    }
    if (!sawSchema) throw invalid('an Arrow chunk has no schema');
    for (const b of batches) await this.#write(b);
    this.#rows += rows;
    return rows;
  }

  async finish(): Promise<{ rows: bigint; bytes: number; sha256: string }> {
    if (this.#schema === undefined) throw invalid('an export needs at least one chunk (ClickHouse writes a schema even for no rows)');
    await this.#write(END_OF_STREAM);
    return { rows: this.#rows, bytes: this.#bytes, sha256: this.#hash.digest('hex') };
  }
}
