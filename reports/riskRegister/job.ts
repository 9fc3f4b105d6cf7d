// The nightly advisory risk register as a BullMQ 6 job scheduler: a JobQueue
// whose scheduler (one deterministic id, the pattern and time zone from config)
// the worker upserts at start like every queue's, and each scheduled job builds and
// stores one register. The run id is the job id, so a retried job rewrites
// the same run; the as-of instant is the job's scheduled time, so a retry
// computes the same window.
import { UnrecoverableError, type Job, type Processor } from 'bullmq';
import type { Runtime } from '../../platform/runtime.js';
import type { JobQueue } from '../../platform/jobs.js';
import { runRegister } from './index.js';

export const RISK_REGISTER_QUEUE = 'risk-register';
export const RISK_REGISTER_SCHEDULER_ID = 'risk-register-nightly';
export const RISK_REGISTER_JOB = 'build-register';

export interface RiskRegisterJobData {
  /** Only for tests and manual enqueues: the instant the register is "as of". */
  asOfMs?: number;
}

type Deps = Pick<Runtime, 'store' | 'config' | 'logger'>;

export function riskRegisterProcessor(runtime: Deps): Processor<RiskRegisterJobData> {
  return async (job: Job<RiskRegisterJobData>, _token?: string, signal?: AbortSignal) => {
    const data = job.data ?? {};
    if (data.asOfMs !== undefined && !(Number.isSafeInteger(data.asOfMs) && data.asOfMs > 0)) {
      throw new UnrecoverableError('asOfMs: must be a positive integer (ms since the epoch)');
    }
    if (signal?.aborted) throw new Error('cancelled before it started');
    const asOfMs = data.asOfMs ?? scheduledAt(job);
    const register = await runRegister(
      { store: runtime.store, limits: runtime.config.reports },
      { runId: String(job.id), asOfMs, timeZone: runtime.config.reports.riskRegisterTz, trigger: 'schedule', requestedBy: 'scheduler' },
    );
    runtime.logger.info({ runId: register.runId, date: register.date, classes: register.classes.length }, 'risk register stored');
    return { runId: register.runId, date: register.date, classes: register.classes.length };
  };
}

/** The tick a scheduler job was created for: bullmq 6 names it `repeat:<scheduler>:<ms>` and keeps it in opts.prevMillis. */
export function scheduledAt(job: Pick<Job, 'id' | 'opts' | 'timestamp' | 'delay'>): number {
  const prev = (job.opts as { prevMillis?: unknown }).prevMillis;
  if (typeof prev === 'number' && prev > 0) return prev;
  const fromId = /^repeat:.+:(\d+)$/.exec(String(job.id ?? ''));
  if (fromId) return Number(fromId[1]);
  return job.timestamp + (job.delay ?? 0);
}

export const riskRegisterJob: JobQueue = {
  name: RISK_REGISTER_QUEUE,
  processor: (runtime) => riskRegisterProcessor(runtime),
  // LOCKAUDIT_RISK_REGISTER_CRON / _TZ.
  schedulers: (config) => [
    {
      id: RISK_REGISTER_SCHEDULER_ID,
      pattern: config.reports.riskRegisterCron,
      tz: config.reports.riskRegisterTz,
      jobName: RISK_REGISTER_JOB,
      data: {},
      opts: { attempts: 3, backoff: { type: 'exponential', delay: 30_000 }, removeOnComplete: 100, removeOnFail: 500 },
    },
  ],
};
