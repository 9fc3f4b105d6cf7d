// Report windows: from/to as ISO 8601 timestamps, bounded by
// LOCKAUDIT_MAX_WINDOW_DAYS. A missing bound defaults to the widest window
// allowed ending now (or starting at `from`).
import { LockauditError } from '../core/errors.js';
import { INSTANT_RULE, parseInstant as readInstant } from '../core/instant.js';

export interface Window {
  fromMs: number;
  toMs: number;
}

const DAY_MS = 86_400_000;

function parseInstant(text: string, field: string): number {
  const ms = readInstant(text);
  if (ms === undefined) throw new LockauditError('LOCKAUDIT_ERR_REPORT_WINDOW', `${field}: is not ${INSTANT_RULE}`);
  return ms;
}

export function resolveWindow(input: { from?: string; to?: string }, maxWindowDays: number, nowMs: number): Window {
  const maxMs = maxWindowDays * DAY_MS;
  const to = input.to !== undefined ? parseInstant(input.to, 'querystring.to') : undefined;
  const from = input.from !== undefined ? parseInstant(input.from, 'querystring.from') : undefined;
  const toMs = to ?? (from !== undefined ? Math.min(from + maxMs, nowMs) : nowMs);
  const fromMs = from ?? toMs - maxMs;
  if (fromMs > toMs) throw new LockauditError('LOCKAUDIT_ERR_REPORT_WINDOW', 'querystring.from: is after querystring.to');
  if (toMs - fromMs > maxMs) {
    throw new LockauditError('LOCKAUDIT_ERR_LIMIT_WINDOW', `querystring.from/to: the window is longer than LOCKAUDIT_MAX_WINDOW_DAYS (${maxWindowDays} days)`);
  }
  return { fromMs, toMs };
}

/** Bucket sizes (seconds) for time series: round ones, so buckets align with clock hours and days. */
export const BUCKETS_SECONDS = [60, 300, 900, 3600, 10_800, 21_600, 86_400] as const;
export const MAX_BUCKETS = 240;

/** The smallest bucket size giving at most `maxBuckets` buckets over `spanMs` (the largest size when none does). */
export function bucketFor(spanMs: number, sizes: readonly number[] = BUCKETS_SECONDS, maxBuckets = MAX_BUCKETS): number {
  return sizes.find((b) => spanMs / (b * 1000) <= maxBuckets) ?? (sizes[sizes.length - 1] as number);
}

/** The start of every bucket of `bucketSeconds` (aligned to the epoch) that [fromMs, toMs] touches, so a series has no holes. */
export function bucketStarts(fromMs: number, toMs: number, bucketSeconds: number): number[] {
  const step = bucketSeconds * 1000;
  const starts: number[] = [];
  for (let at = Math.floor(fromMs / step) * step; at <= toMs; at += step) starts.push(at);
  return starts;
}
