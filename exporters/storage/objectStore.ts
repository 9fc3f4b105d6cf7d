// S3 writes of the exporters, with bounded, jittered retries for what is
// worth retrying (network, 5xx, throttling) and none for what is not
// (access denied, no such bucket, a refused precondition).
import { createHash } from 'node:crypto';
import type { Client } from 'minio';
import { LockauditError } from '../../core/errors.js';
import { retry } from '../../platform/retry.js';

export interface RetryOptions {
  /** Give up after this long. Default 120 000 ms. */
  deadlineMs?: number;
  /** First delay; doubles each attempt up to maxDelayMs, each ±50 % (platform/retry.ts). Default 250 ms. */
  baseDelayMs?: number;
  /** Default 5 000 ms. */
  maxDelayMs?: number;
  signal?: AbortSignal;
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

const PERMANENT_CODES = new Set([
  'AccessDenied',
  'NoSuchBucket',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'PreconditionFailed',
  'InvalidRequest',
  'InvalidBucketName',
  'NoSuchKey',
  'NotFound',
  'MethodNotAllowed',
  'NoSuchUpload',
  'EntityTooSmall',
  'InvalidPart',
  'InvalidPartOrder',
]);

export function isRetriable(err: unknown): boolean {
  const e = err as { code?: string; $metadata?: unknown; name?: string };
  if (err instanceof LockauditError) return false;
  if (e?.code && PERMANENT_CODES.has(e.code)) return false;
  if (err instanceof TypeError || err instanceof RangeError) return false;
  return true;
}

export async function withRetry<T>(fn: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  return retry(() => fn(), {
    initialMs: options.baseDelayMs ?? 250,
    maxMs: options.maxDelayMs ?? 5_000,
    deadlineMs: options.deadlineMs ?? 120_000,
    classify: (err) => (isRetriable(err) ? 'retry' : 'permanent'),
    signal: options.signal,
    onRetry: options.onRetry,
  });
}

export async function objectExists(s3: Client, bucket: string, name: string): Promise<boolean> {
  try {
    await s3.statObject(bucket, name);
    return true;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'NotFound' || code === 'NoSuchKey') return false;
    throw err;
  }
}

export async function readObjectText(s3: Client, bucket: string, name: string): Promise<string> {
  const stream = await s3.getObject(bucket, name);
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** The sha256 (hex) and length of an object as stored, read through; 'missing' when there is none. */
export async function objectSha256(s3: Client, bucket: string, name: string): Promise<{ sha256: string; bytes: number } | 'missing'> {
  try {
    const stream = await s3.getObject(bucket, name);
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const c of stream) {
      hash.update(c as Buffer);
      bytes += (c as Buffer).length;
    }
    return { sha256: hash.digest('hex'), bytes };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'NoSuchKey' || code === 'NotFound') return 'missing';
    throw err;
  }
}

/** Writes a small JSON object, over one of that name if there is one. */
export async function putJson(s3: Client, bucket: string, name: string, value: unknown, retry: RetryOptions = {}): Promise<void> {
  const body = Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
  await withRetry(() => s3.putObject(bucket, name, body, body.length, { 'Content-Type': 'application/json' }), retry);
}

/** Writes a small JSON object unless one of that name exists: 'exists' when another writer was first. */
export async function putJsonIfAbsent(s3: Client, bucket: string, name: string, value: unknown, retry: RetryOptions = {}): Promise<'written' | 'exists'> {
  const body = Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
  return withRetry(async () => {
    try {
      await s3.putObject(bucket, name, body, body.length, { 'Content-Type': 'application/json', 'If-None-Match': '*' });
      return 'written' as const;
    } catch (err) {
      if ((err as { code?: string }).code === 'PreconditionFailed') return 'exists' as const;
      throw err;
    }
  }, retry);
}

/** The date `years` from `now` (UTC): a COMPLIANCE retention's end. */
export function retainUntil(years: number, now = new Date()): Date {
  const d = new Date(now);
  d.setUTCFullYear(d.getUTCFullYear() + years);
  return d;
}

/**
 * Writes one JSON object into the object-locked archive bucket, never over
 * another (If-None-Match): false when an object of that name exists (another
 * writer was first). With `retentionYears`, the object carries its own
 * COMPLIANCE retention. One attempt: callers decide about retries.
 */
export async function putArchiveJson(s3: Client, bucket: string, name: string, value: unknown, retentionYears: number | undefined): Promise<boolean> {
  const body = Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-md5': createHash('md5').update(body).digest('base64'),
    'if-none-match': '*',
  };
  if (retentionYears !== undefined) {
    // minio-js's putObject turns unknown headers into user metadata; the
    // object-lock headers go through its signed raw request.
    headers['x-amz-object-lock-mode'] = 'COMPLIANCE';
    headers['x-amz-object-lock-retain-until-date'] = retainUntil(retentionYears).toISOString();
  }
  try {
    const res = await s3.makeRequestAsync({ method: 'PUT', bucketName: bucket, objectName: name, headers }, body, [200]);
    res.resume();
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === 'PreconditionFailed') return false;
    throw err;
  }
}
