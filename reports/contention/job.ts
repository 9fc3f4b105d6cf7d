// Sealing contention hours as a BullMQ job scheduler (like the risk
// register's, reports/riskRegister/job.ts): every 5 minutes the worker seals
// each cluster's hours that the tailer's checkpoint has passed and that have
// no seal matching their grants (seal.ts). A run that dies is harmless: its
// seal rows are never written, and the next run seals those hours again.
import type { Processor } from 'bullmq';
import type { Runtime } from '../../platform/runtime.js';
import type { JobQueue } from '../../platform/jobs.js';
import { sealContentionHours } from './seal.js';

export const CONTENTION_SEAL_QUEUE = 'contention-seal';
export const CONTENTION_SEAL_SCHEDULER_ID = 'contention-seal-hours';
export const CONTENTION_SEAL_JOB = 'seal-hours';
/** Every 5 minutes: an hour is read from its seal within minutes of the checkpoint passing it. */
export const CONTENTION_SEAL_CRON = '*/5 * * * *';

type Deps = Pick<Runtime, 'store' | 'config' | 'logger'>;

export function contentionSealProcessor(runtime: Deps): Processor {
  return async () => {
    const results = await sealContentionHours({ store: runtime.store, limits: runtime.config.reports });
    for (const r of results) if (r.hours > 0) runtime.logger.info(r, 'contention hours sealed');
    return results;
  };
}

export const contentionSealJob: JobQueue = {
  name: CONTENTION_SEAL_QUEUE,
  processor: (runtime) => contentionSealProcessor(runtime),
  schedulers: () => [
    {
      id: CONTENTION_SEAL_SCHEDULER_ID,
      pattern: CONTENTION_SEAL_CRON,
      jobName: CONTENTION_SEAL_JOB,
      data: {},
      opts: { attempts: 2, backoff: { type: 'fixed', delay: 30_000 }, removeOnComplete: 20, removeOnFail: 100 },
    },
  ],
};
