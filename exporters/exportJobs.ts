// The exporters' queues (BullMQ 6) and their processors, and the force
// archiver as a background service of the worker role.
// - export-history: one job per day (the scheduler enqueues yesterday at
//   01:30 UTC); every dataset of every configured cluster; complete files are
//   skipped, so a retry redoes only what is missing.
// - export-compliance: one job per export request, job id = export id.
// Both retry with exponential backoff; bad input is not retried.
import { Queue, UnrecoverableError, type ConnectionOptions, type Job, type JobsOptions, type Processor } from 'bullmq';
import type { Runtime } from '../platform/runtime.js';
import { isLockauditError, LockauditError } from '../core/errors.js';
import { createS3Client } from '../core/s3.js';
import { originSecret } from '../core/originSecret.js';
import { tailerKey } from '../core/tailerSecret.js';
import { deploymentKeyring, digestSigner } from '../core/digestKey.js';
import { failComplianceExport, runComplianceExport } from './compliance/complianceExport.js';
import { exportMetrics } from './exportMetrics.js';
import { ForceArchiver, type ForceArchiverOptions } from './archive/forceArchive.js';
import { dayStartMs, exportHistoryDay, HISTORY_DATASETS, yesterday, type HistoryDataset } from './history/parquetHistory.js';
import type { BackgroundService, JobQueue } from '../platform/jobs.js';

export const HISTORY_QUEUE = 'export-history';
export const HISTORY_SCHEDULER_ID = 'export-history-yesterday';
export const HISTORY_JOB = 'history-day';
export const COMPLIANCE_QUEUE = 'export-compliance';
export const COMPLIANCE_JOB = 'compliance-export';

/** Retries: MinIO or Redis away for minutes is survived (in-job S3 retries cover short outages). */
export const EXPORT_JOB_OPTIONS: JobsOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: { age: 7 * 86_400, count: 1_000 },
  removeOnFail: { age: 30 * 86_400 },
};

export interface HistoryJobData {
  /** YYYY-MM-DD (UTC); absent: yesterday. */
  date?: string;
  clusters?: string[];
  datasets?: HistoryDataset[];
}

export interface ComplianceJobData {
  id: string;
}

type Deps = Pick<Runtime, 'store' | 'config' | 'logger' | 'metrics'> & Partial<Pick<Runtime, 'health'>>;

export function historyProcessor(runtime: Deps): Processor<HistoryJobData> {
  const s3 = createS3Client(runtime.config.s3);
  const metrics = exportMetrics(runtime.metrics);
  return async (job: Job<HistoryJobData>) => {
    const data = job.data ?? {};
    if (data.date !== undefined && dayStartMs(data.date) === undefined) throw new UnrecoverableError('date: must be YYYY-MM-DD');
    const datasets = data.datasets ?? [...HISTORY_DATASETS];
    if (datasets.some((d) => !(HISTORY_DATASETS as readonly string[]).includes(d)))
      throw new UnrecoverableError(`datasets: must be among ${HISTORY_DATASETS.join(', ')}`);
    // The scheduled time, not the run time, names the day: a retry after midnight exports the same day.
    const date = data.date ?? yesterday(job.timestamp + (job.delay ?? 0));
    const clusters = data.clusters ?? runtime.config.etcd.clusters.map((c) => c.name);
    const results = await exportHistoryDay(
      {
        store: runtime.store,
        s3,
        bucket: runtime.config.s3.historyBucket,
        logger: runtime.logger,
        metrics,
        signer: digestSigner(runtime.config),
        keyring: deploymentKeyring(runtime.config),
        health: runtime.health,
        tailerSecret: tailerKey(runtime.config).key,
        grantSealPeriodMs: runtime.config.digests.periodSeconds * 1000,
      },
      date,
      clusters,
      datasets,
    ).catch((err: unknown) => {
      // Grants that disagree with their events disagree again on a retry (each a full check and upload): not retried.
      throw isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_UNPROVEN') ? new UnrecoverableError((err as Error).message) : err;
    });
    return { date, files: results.map((r) => ({ object: r.object, status: r.status, rows: r.manifest?.rows })) };
  };
}

export function complianceProcessor(runtime: Deps): Processor<ComplianceJobData> {
  const s3 = createS3Client(runtime.config.s3);
  const metrics = exportMetrics(runtime.metrics);
  return async (job: Job<ComplianceJobData>) => {
    const id = job.data?.id;
    if (typeof id !== 'string' || !/^exp_[0-9a-f]{32}$/.test(id)) throw new UnrecoverableError('id: not an export id');
    try {
      const digests = {
        signer: digestSigner(runtime.config),
        archiveBucket: runtime.config.s3.archiveBucket,
        clusters: runtime.config.etcd.clusters.map((c) => c.name),
        periodMs: runtime.config.digests.periodSeconds * 1000,
      };
      const state = await runComplianceExport(
        {
          store: runtime.store,
          s3,
          bucket: runtime.config.s3.historyBucket,
          logger: runtime.logger,
          metrics,
          digests,
          tailerSecret: tailerKey(runtime.config).key,
        },
        id,
        async (p) => {
          // Progress in Redis is a convenience; the durable progress is in ClickHouse.
          await job.updateProgress({ rows: p.rows.toString(), total: p.total.toString(), percent: p.percent }).catch(() => undefined);
        },
      );
      metrics.exportJobs.inc({ kind: 'compliance', outcome: 'done' });
      return { id, rows: state.rowsDone.toString(), object: state.objectKey };
    } catch (err) {
      // No export, or grants that disagree with their events (grantsCheck.ts): another try changes nothing.
      const permanent = isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_NOT_FOUND') || isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_UNPROVEN');
      const final = permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      if (final) {
        metrics.exportJobs.inc({ kind: 'compliance', outcome: 'failed' });
        await failComplianceExport(runtime.store, id, (err as Error).message).catch(() => undefined);
        if (permanent) throw new UnrecoverableError((err as Error).message);
      } else {
        metrics.exportJobs.inc({ kind: 'compliance', outcome: 'retried' });
      }
      throw err;
    }
  };
}

export const historyJobQueue: JobQueue = {
  name: HISTORY_QUEUE,
  processor: (runtime) => historyProcessor(runtime),
  schedulers: () => [{ id: HISTORY_SCHEDULER_ID, pattern: '30 1 * * *', tz: 'UTC', jobName: HISTORY_JOB, data: {}, opts: EXPORT_JOB_OPTIONS }],
};

export const complianceJobQueue: JobQueue = { name: COMPLIANCE_QUEUE, processor: (runtime) => complianceProcessor(runtime), concurrency: 1 };

export const exportJobQueues: JobQueue[] = [historyJobQueue, complianceJobQueue];

/** Queues one compliance export; job id = export id, so queueing twice is one job. */
export async function enqueueComplianceExport(queue: Queue<ComplianceJobData>, id: string): Promise<void> {
  try {
    await queue.add(COMPLIANCE_JOB, { id }, { ...EXPORT_JOB_OPTIONS, jobId: id });
  } catch (err) {
    throw new LockauditError('LOCKAUDIT_ERR_EXPORT_QUEUE', `the export could not be queued: ${(err as Error).message}`, { cause: err });
  }
}

/** Queues a history backfill of one day (job id per day: one job per day at a time). */
export async function enqueueHistoryDay(connection: ConnectionOptions, prefix: string, data: HistoryJobData & { date: string }): Promise<void> {
  const queue = new Queue<HistoryJobData>(HISTORY_QUEUE, { connection, prefix });
  try {
    await queue.add(HISTORY_JOB, data, { ...EXPORT_JOB_OPTIONS, jobId: `history-${data.date}` });
  } finally {
    await queue.close();
  }
}

/** The force archiver of every configured cluster, as a background service of the worker role. */
export function forceArchiveService(options: Partial<Pick<ForceArchiverOptions, 'pollIntervalMs' | 'alarmAfterMs'>> = {}): BackgroundService {
  return {
    name: 'force-archiver',
    async start(runtime) {
      const s3 = createS3Client(runtime.config.s3);
      const metrics = exportMetrics(runtime.metrics);
      const archivers = runtime.config.etcd.clusters.map(
        (cluster) =>
          new ForceArchiver({
            cluster,
            s3,
            bucket: runtime.config.s3.archiveBucket,
            logger: runtime.logger,
            health: runtime.health,
            metrics,
            originSecret: originSecret(runtime.config),
            pollIntervalMs: runtime.config.archive.pollIntervalMs,
            alarmAfterMs: runtime.config.archive.alarmAfterSeconds * 1000,
            ...options,
          }),
      );
      for (const a of archivers) a.start();
      let closing: Promise<void> | undefined;
      return {
        name: 'force-archiver',
        close: () => (closing ??= Promise.allSettled(archivers.map((a) => a.close())).then(() => undefined)),
      };
    },
  };
}
