// Runs an export plan: each chunk is one ClickHouse query whose output
// (Parquet or Arrow IPC written by ClickHouse's own encoders, or CSV) is appended to one
// byte sink — a local file or an object uploaded in parts as it grows — with
// progress after each chunk. ClickHouse computes chunk i+1 while chunk i is
// stitched, hashed (once, as the bytes pass) and written or sent. A file
// appears under its final name only when complete (written as <name>.partial,
// fsynced, renamed); an object only when its multipart upload completes (an
// interrupted one is aborted). A check the output depends on (ExportGate) runs
// beside the chunk queries; neither happens before it has passed.
import { createHash } from 'node:crypto';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import type { ClickHouseSettings } from '@clickhouse/client';
import type { Client } from 'minio';
import type { AuditStore } from '../../core/clickhouse.js';
import { LockauditError } from '../../core/errors.js';
import { csvLine, type Cell } from '../../grants/csv.js';
import { ArrowStreamJoiner, JOINABLE_ARROW_SETTINGS } from './arrowStream.js';
import { fileSink, type ByteSink } from '../storage/byteSink.js';
import { MultipartUpload, type MultipartOptions } from '../storage/multipartUpload.js';
import type { RetryOptions } from '../storage/objectStore.js';
import { ParquetStitcher, STITCHABLE_PARQUET_SETTINGS } from '../parquet/stitch.js';

export type ExportFormat = 'parquet' | 'csv' | 'arrow';

export interface ChunkQuery {
  /** SQL without a FORMAT clause. */
  query: string;
  params: Record<string, unknown>;
}

export interface ExportPlan {
  /** Rows the plan expects (exact when the data did not change since planning). */
  total: bigint;
  chunks: ChunkQuery[];
}

export interface ExportProgress {
  rows: bigint;
  total: bigint;
  /** 0–100; 100 only once the file is complete. */
  percent: number;
  chunksDone: number;
  chunks: number;
}

/** What an export wrote: the same whether it went to a file or an object. */
export interface WrittenBytes {
  format: ExportFormat;
  rows: bigint;
  bytes: number;
  sha256: string;
  /** min/max of `revisionColumn` (Parquet only, from the footer statistics). */
  revisionRange?: { min: bigint; max: bigint };
}

export interface WrittenFile extends WrittenBytes {
  path: string;
}

export interface WrittenObject extends WrittenBytes {
  bucket: string;
  object: string;
}

export interface RunOptions {
  onProgress?: (p: ExportProgress) => void | Promise<void>;
  signal?: AbortSignal;
  /** An integer column whose range the result reports (Parquet). */
  revisionColumn?: string;
  /** fsync before the rename: for files people keep (CLI --out); a staging file for upload needs none. */
  durable?: boolean;
  /** A check the output depends on, run beside the chunk queries (ExportGate). */
  gate?: ExportGate;
}

/**
 * A check an export's output depends on (the grants against their events),
 * run beside the chunk queries instead of before them: the file is renamed
 * into place, or the upload completed, only once it has passed; when it fails
 * the chunks stop, the partial file or upload is removed, and its error is
 * the export's. Its outcome is taken at once (a failed check is never an
 * unhandled rejection, whatever else fails first).
 */
export class ExportGate {
  readonly #settled: Promise<void>;
  readonly #stop = new AbortController();
  #failure: { err: unknown } | undefined;

  constructor(check: Promise<unknown>) {
    this.#settled = check.then(
      () => undefined,
      (err: unknown) => {
        this.#failure = { err };
        this.#stop.abort(err);
      },
    );
  }

  /** Aborted when the check fails. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** Resolves once the check has passed; throws its error when it failed. */
  async passed(): Promise<void> {
    await this.#settled;
    if (this.#failure) throw this.#failure.err;
  }

  /** For an export that failed otherwise: waits for the check (no query of it runs on), then throws its error or `err`. */
  async fail(err: unknown): Promise<never> {
    await this.#settled;
    throw this.#failure ? this.#failure.err : err;
  }

  /** `work`'s result; when it fails, as fail() (the work beside the check: a plan, a state write). */
  async guard<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (err) {
      return await this.fail(err);
    }
  }
}

/** Throws `err`, or the gate's error once its check is over (see ExportGate.fail). */
const failWith = (options: Omit<RunOptions, 'durable'>, err: unknown): Promise<never> => (options.gate ? options.gate.fail(err) : Promise.reject(err));

/** The caller's signal and the gate's, as one. */
function gatedSignal(options: Omit<RunOptions, 'durable'>): AbortSignal | undefined {
  if (!options.gate) return options.signal;
  return options.signal ? AbortSignal.any([options.signal, options.gate.signal]) : options.gate.signal;
}

// CSV is not ClickHouse's: chunks come as JSON arrays (64-bit integers as
// strings, exact) and are written by the project's one CSV writer
// (grants/csv.ts), which neutralises formulas — a foreign holder
// `=HYPERLINK(…)` reaches a spreadsheet as text, as in the API's CSV. Times are
// ISO 8601 in UTC with their zone, as the API's CSV writes them (before:
// "2026-03-01 00:00:01.000", a time without a zone).
const CSV_SOURCE_FORMAT = 'JSONCompactEachRowWithNames';
const CSV_SOURCE_SETTINGS: ClickHouseSettings = {
  output_format_json_quote_64bit_integers: 1,
  output_format_json_quote_denormals: 0,
  date_time_output_format: 'iso',
};

/** One chunk of JSONCompactEachRowWithNames as CSV records (the names line only when `header`), and its row count. */
export function jsonChunkToCsv(buf: Buffer, header: boolean): { csv: Buffer; rows: number } {
  const lines = buf
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '');
  const out: string[] = [];
  lines.forEach((line, i) => {
    if (i > 0 || header) out.push(csvLine(JSON.parse(line) as Cell[]));
  });
  return { csv: Buffer.from(out.join(''), 'utf8'), rows: Math.max(0, lines.length - 1) };
}

async function execToBuffer(store: AuditStore, chunk: ChunkQuery, format: string, settings: ClickHouseSettings, signal?: AbortSignal): Promise<Buffer> {
  const rs = await store.client.exec({
    query: `${chunk.query}\nFORMAT ${format}`,
    query_params: { db: store.database, ...chunk.params },
    clickhouse_settings: settings,
    abort_signal: signal,
  });
  const parts: Buffer[] = [];
  for await (const piece of rs.stream) parts.push(Buffer.isBuffer(piece) ? piece : Buffer.from(piece as Uint8Array));
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/** Fetches item i+1 while the caller works on item i; a pending fetch never becomes an unhandled rejection. */
function prefetching<T>(count: number, fetch: (i: number) => Promise<T>): { get(i: number): Promise<T> } {
  let ahead: { i: number; p: Promise<T> } | undefined;
  const start = (i: number): Promise<T> => {
    const p = fetch(i);
    p.catch(() => undefined);
    return p;
  };
  return {
    get(i: number): Promise<T> {
      const current = ahead?.i === i ? ahead.p : start(i);
      ahead = i + 1 < count ? { i: i + 1, p: start(i + 1) } : undefined;
      return current;
    },
  };
}

function percentOf(rows: bigint, total: bigint): number {
  if (total <= 0n) return 99;
  return Math.min(99, Number((rows * 10000n) / total) / 100);
}

/** Writes the plan's rows to a sink, in order; returns what was written (rows, bytes, sha256 of exactly those bytes). */
export async function streamExportPlan(
  store: AuditStore,
  plan: ExportPlan,
  format: ExportFormat,
  sink: ByteSink,
  options: Omit<RunOptions, 'durable'> = {},
): Promise<WrittenBytes> {
  let rows = 0n;
  const report = async (chunksDone: number): Promise<void> => {
    await options.onProgress?.({
      rows,
      total: plan.total > rows ? plan.total : rows,
      percent: percentOf(rows, plan.total),
      chunksDone,
      chunks: plan.chunks.length,
    });
  };
  await report(0);
  // ClickHouse computes chunk i+1 while chunk i is hashed and written (or sent).
  const fetcher = (i: number): Promise<Buffer> =>
    format === 'parquet'
      ? execToBuffer(store, plan.chunks[i] as ChunkQuery, 'Parquet', STITCHABLE_PARQUET_SETTINGS, options.signal)
      : format === 'arrow'
        ? execToBuffer(store, plan.chunks[i] as ChunkQuery, 'ArrowStream', JOINABLE_ARROW_SETTINGS, options.signal)
        : execToBuffer(store, plan.chunks[i] as ChunkQuery, CSV_SOURCE_FORMAT, CSV_SOURCE_SETTINGS, options.signal);
  const chunks = prefetching(plan.chunks.length, fetcher);
  // Arrow and Parquet chunks are joined into one file by a joiner that counts the rows it takes.
  const join = async (joiner: { add(chunk: Buffer): Promise<bigint> }): Promise<void> => {
    for (let i = 0; i < plan.chunks.length; i++) {
      options.signal?.throwIfAborted();
      rows += await joiner.add(await chunks.get(i));
      await report(i + 1);
    }
  };
  if (format === 'arrow') {
    const joiner = new ArrowStreamJoiner(sink);
    await join(joiner);
    return { format, ...(await joiner.finish()) };
  }
  if (format === 'parquet') {
    const stitcher = new ParquetStitcher(sink);
    await join(stitcher);
    const range = options.revisionColumn ? stitcher.columnRange(options.revisionColumn) : undefined;
    const written = await stitcher.finish();
    return { format, rows: written.rows, bytes: written.bytes, sha256: written.sha256, ...(range ? { revisionRange: range } : {}) };
  }
  const hash = createHash('sha256');
  let bytes = 0;
  for (let i = 0; i < plan.chunks.length; i++) {
    options.signal?.throwIfAborted();
    // The names line of the first chunk is the file's header; the others' are dropped.
    const { csv: buf, rows: chunkRows } = jsonChunkToCsv(await chunks.get(i), i === 0);
    rows += BigInt(chunkRows);
    hash.update(buf);
    bytes += buf.length;
    await sink.write(buf);
    await report(i + 1);
  }
  return { format, rows, bytes, sha256: hash.digest('hex') };
}

/** Writes the plan's rows to `outPath` (complete or not at all). */
export async function runExportPlan(
  store: AuditStore,
  plan: ExportPlan,
  format: ExportFormat,
  outPath: string,
  options: RunOptions = {},
): Promise<WrittenFile> {
  const partial = `${outPath}.partial`;
  let fh: FileHandle;
  try {
    fh = await open(partial, 'w');
  } catch (err) {
    return await failWith(options, err);
  }
  let done = false;
  try {
    const result = await streamExportPlan(store, plan, format, fileSink(fh), { ...options, signal: gatedSignal(options) });
    if (options.durable) await fh.sync();
    await fh.close();
    await options.gate?.passed();
    options.signal?.throwIfAborted(); // cancelled while the check still ran
    await rename(partial, outPath);
    done = true;
    return { path: outPath, ...result };
  } catch (err) {
    return await failWith(options, err);
  } finally {
    if (!done) {
      await fh.close().catch(() => undefined);
      await rm(partial, { force: true });
    }
  }
}

export interface ObjectTarget {
  s3: Client;
  bucket: string;
  object: string;
  contentType: string;
  retry?: RetryOptions;
  /** Tuning of the multipart upload (part size, parts in flight). */
  upload?: Omit<MultipartOptions, 'contentType' | 'retry'>;
}

/**
 * Writes the plan's rows straight into an object, each stitched chunk sent
 * as a multipart part while ClickHouse computes the next: complete, or
 * aborted and absent.
 */
export async function exportPlanToObject(
  store: AuditStore,
  plan: ExportPlan,
  format: ExportFormat,
  target: ObjectTarget,
  options: Omit<RunOptions, 'durable'> = {},
): Promise<WrittenObject> {
  const signal = gatedSignal(options);
  let upload: MultipartUpload;
  try {
    upload = await MultipartUpload.start(target.s3, target.bucket, target.object, {
      ...target.upload,
      contentType: target.contentType,
      retry: { ...target.retry, signal: target.retry?.signal ?? signal },
    });
  } catch (err) {
    return await failWith(options, err);
  }
  try {
    const result = await streamExportPlan(store, plan, format, upload, { ...options, signal });
    await options.gate?.passed();
    options.signal?.throwIfAborted(); // cancelled while the check still ran
    await upload.complete();
    return { bucket: target.bucket, object: target.object, ...result };
  } catch (err) {
    await upload.abort();
    return await failWith(options, err);
  }
}

export function assertRows(file: WrittenBytes, expected: bigint | undefined, what: string): void {
  if (expected !== undefined && file.rows !== expected) {
    throw new LockauditError('LOCKAUDIT_ERR_EXPORT_INCOMPLETE', `${what}: wrote ${file.rows} rows, expected ${expected}`);
  }
}
