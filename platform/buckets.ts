// The two buckets (docs/architecture.md, the data path), created idempotently:
// - history: Parquet grant history, objects expire after 365 days;
// - archive: force-release records, object lock with a default COMPLIANCE
//   retention of 7 years (object lock can only be chosen at bucket creation).
import type { Client } from 'minio';
import type { Config } from '../core/config.js';

export const HISTORY_EXPIRY_DAYS = 365;
/** The id of the history bucket's one lifecycle rule (`verify` names it when it excuses an expired file). */
export const HISTORY_EXPIRY_RULE_ID = `expire-after-${HISTORY_EXPIRY_DAYS}-days`;
export const ARCHIVE_RETENTION_YEARS = 7;

export async function ensureHistoryBucket(s3: Client, config: Config['s3']): Promise<void> {
  if (!(await s3.bucketExists(config.historyBucket))) await s3.makeBucket(config.historyBucket, config.region);
  await s3.setBucketLifecycle(config.historyBucket, {
    Rule: [{ ID: HISTORY_EXPIRY_RULE_ID, Status: 'Enabled', Filter: { Prefix: '' }, Expiration: { Days: HISTORY_EXPIRY_DAYS } }],
  });
}

export async function ensureArchiveBucket(s3: Client, bucket: string, region: string): Promise<void> {
  if (!(await s3.bucketExists(bucket))) await s3.makeBucket(bucket, region, { ObjectLocking: true });
  await s3.setObjectLockConfig(bucket, { mode: 'COMPLIANCE', unit: 'Years', validity: ARCHIVE_RETENTION_YEARS });
}

export async function ensureBuckets(s3: Client, config: Config['s3']): Promise<void> {
  await ensureHistoryBucket(s3, config);
  await ensureArchiveBucket(s3, config.archiveBucket, config.region);
}

/** Describes what is wrong with the archive bucket's object lock, or undefined when it is right. */
export async function archiveLockProblem(s3: Client, bucket: string): Promise<string | undefined> {
  if (!(await s3.bucketExists(bucket))) return `bucket ${bucket} does not exist (run lockaudit migrate or start)`;
  let lock: { mode?: string; unit?: string; validity?: number };
  try {
    // The promise overload is typed as void by an earlier overload; its value is ObjectLockInfo.
    lock = (await (s3.getObjectLockConfig(bucket) as unknown as Promise<typeof lock>)) ?? {};
  } catch (err) {
    return `bucket ${bucket} has no object lock (${(err as Error).message}); it must be recreated with object lock`;
  }
  if (lock.mode !== 'COMPLIANCE' || lock.unit !== 'Years' || (lock.validity ?? 0) < ARCHIVE_RETENTION_YEARS) {
    return `bucket ${bucket} default retention is ${JSON.stringify(lock)}, expected COMPLIANCE ${ARCHIVE_RETENTION_YEARS} years`;
  }
  return undefined;
}
