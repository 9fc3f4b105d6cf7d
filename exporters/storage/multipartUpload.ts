// An object written as it is produced: bytes handed to `write` are gathered
// into S3 multipart parts (each ≥ 5 MiB but the last, the S3 rule) and sent
// while the producer computes what comes next. Nothing is visible under the
// object's name until `complete`; `abort` (on any failure) discards the
// parts, so an interrupted export leaves no partial object behind.
// The bytes are not hashed here: the producer hashes them once on their way in
// (the S3 client signs each part's payload over plain http, as for any put).
import type { Client } from 'minio';
import { LockauditError } from '../../core/errors.js';
import type { ByteSink } from './byteSink.js';
import { withRetry, type RetryOptions } from './objectStore.js';

/** S3: every part but the last must be at least this big. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** S3: at most this many parts per upload. */
export const MAX_PARTS = 10_000;

export interface MultipartOptions {
  contentType: string;
  /** A part is sent once this many bytes are gathered (at least MIN_PART_BYTES). Default MIN_PART_BYTES. */
  partBytes?: number;
  /** Parts sent at once; `write` waits while this many are in flight (bounds memory). Default 2. */
  maxInFlight?: number;
  /** Each request (start, every part, complete) is retried on its own. */
  retry?: RetryOptions;
}

export class MultipartUpload implements ByteSink {
  readonly #s3: Client;
  readonly #bucket: string;
  readonly #name: string;
  readonly #uploadId: string;
  readonly #partBytes: number;
  readonly #maxInFlight: number;
  readonly #retry: RetryOptions;
  #gathered: Buffer[] = [];
  #gatheredBytes = 0;
  #nextPart = 1;
  #bytes = 0;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #etags: Array<{ part: number; etag: string }> = [];
  #failure: { error: unknown } | undefined;
  #finished = false;

  private constructor(s3: Client, bucket: string, name: string, uploadId: string, options: MultipartOptions) {
    this.#s3 = s3;
    this.#bucket = bucket;
    this.#name = name;
    this.#uploadId = uploadId;
    this.#partBytes = Math.max(MIN_PART_BYTES, options.partBytes ?? MIN_PART_BYTES);
    this.#maxInFlight = Math.max(1, options.maxInFlight ?? 2);
    this.#retry = options.retry ?? {};
  }

  /** Starts a multipart upload of `name` (nothing is visible under that name yet). */
  static async start(s3: Client, bucket: string, name: string, options: MultipartOptions): Promise<MultipartUpload> {
    const uploadId = await withRetry(() => s3.initiateNewMultipartUpload(bucket, name, { 'Content-Type': options.contentType }), options.retry);
    return new MultipartUpload(s3, bucket, name, uploadId, options);
  }

  get uploadId(): string {
    return this.#uploadId;
  }

  /** Bytes taken so far. */
  get bytes(): number {
    return this.#bytes;
  }

  async write(buf: Buffer): Promise<void> {
    this.#throwIfFailed();
    if (buf.length === 0) return;
    this.#gathered.push(buf);
    this.#gatheredBytes += buf.length;
    this.#bytes += buf.length;
    if (this.#gatheredBytes >= this.#partBytes) await this.#sendGathered();
  }

  /** Sends the last part and joins the parts into the object; then checks the stored size. */
  async complete(): Promise<{ bytes: number; etag: string }> {
    if (this.#finished) throw new LockauditError('LOCKAUDIT_ERR_EXPORT_INCOMPLETE', `${this.#name}: the upload is already finished`);
    // S3 needs at least one part; an empty object is one empty part.
    if (this.#gatheredBytes > 0 || this.#nextPart === 1) await this.#sendGathered();
    await Promise.all(this.#inFlight);
    this.#throwIfFailed();
    const etags = [...this.#etags].sort((a, b) => a.part - b.part);
    const done = await withRetry(() => this.#s3.completeMultipartUpload(this.#bucket, this.#name, this.#uploadId, etags), this.#retry);
    this.#finished = true;
    const stored = await withRetry(() => this.#s3.statObject(this.#bucket, this.#name), this.#retry);
    if (stored.size !== this.#bytes)
      throw new LockauditError('LOCKAUDIT_ERR_EXPORT_INCOMPLETE', `${this.#name}: stored ${stored.size} bytes, wrote ${this.#bytes}`);
    return { bytes: this.#bytes, etag: done.etag };
  }

  /** Discards the upload and its parts (best effort: a store that is down keeps an invisible incomplete upload). */
  async abort(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    this.#gathered = [];
    await Promise.allSettled(this.#inFlight);
    // Not under the export's signal: an export aborted by it (a cancelled job, a failed grants check) must still
    // discard its parts (before, an aborted signal refused this request and left them).
    const { signal: _signal, ...retry } = this.#retry;
    await withRetry(() => this.#s3.abortMultipartUpload(this.#bucket, this.#name, this.#uploadId), {
      ...retry,
      deadlineMs: Math.min(retry.deadlineMs ?? 10_000, 10_000),
    }).catch(() => undefined);
  }

  async #sendGathered(): Promise<void> {
    while (this.#inFlight.size >= this.#maxInFlight) await Promise.race(this.#inFlight);
    this.#throwIfFailed();
    const part = this.#nextPart++;
    if (part > MAX_PARTS) throw new LockauditError('LOCKAUDIT_ERR_EXPORT_INCOMPLETE', `${this.#name}: more than ${MAX_PARTS} parts`);
    const body = this.#gathered.length === 1 ? (this.#gathered[0] as Buffer) : Buffer.concat(this.#gathered, this.#gatheredBytes);
    this.#gathered = [];
    this.#gatheredBytes = 0;
    const sending: Promise<void> = withRetry(
      () => this.#s3.uploadPart({ bucketName: this.#bucket, objectName: this.#name, uploadID: this.#uploadId, partNumber: part, headers: {} }, body),
      this.#retry,
    )
      .then(
        (r) => void this.#etags.push({ part, etag: r.etag }),
        (error: unknown) => void (this.#failure ??= { error }),
      )
      .finally(() => this.#inFlight.delete(sending));
    this.#inFlight.add(sending);
  }

  #throwIfFailed(): void {
    if (this.#failure) throw this.#failure.error;
    if (this.#finished) throw new LockauditError('LOCKAUDIT_ERR_EXPORT_INCOMPLETE', `${this.#name}: the upload is already finished`);
  }
}
