// The worker role: one BullMQ worker per registered queue, the queues'
// schedulers (declared idempotently at start), and background services such
// as the force archiver. Job processors register themselves in `jobQueues`.
import { Queue, Worker, type JobsOptions, type Processor } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../core/config.js';
import { createRedis } from './redis.js';
import type { RoleHandle, Runtime } from './runtime.js';

export interface JobScheduler {
  /** Deterministic scheduler id: upserting it twice changes nothing. */
  id: string;
  /** Cron pattern. */
  pattern: string;
  /** Time zone of the pattern. Default UTC. */
  tz?: string;
  jobName: string;
  data?: Record<string, unknown>;
  opts?: Omit<JobsOptions, 'repeat' | 'jobId'>;
}

export interface JobQueue {
  name: string;
  processor: (runtime: Runtime) => Processor;
  concurrency?: number;
  /** Repeatable jobs of this queue, built from the config and upserted when a worker starts. */
  schedulers?: (config: Config) => readonly JobScheduler[];
}

/** A loop that runs beside the job workers (the force archiver). */
export interface BackgroundService {
  name: string;
  start(runtime: Runtime): Promise<RoleHandle>;
}

/** Upserts the schedulers of these queues (idempotent: deterministic ids). Returns how many were declared. */
export async function upsertSchedulers(runtime: Pick<Runtime, 'config' | 'logger'>, queues: readonly JobQueue[], connection: Redis): Promise<number> {
  let declared = 0;
  for (const q of queues) {
    const schedulers = q.schedulers?.(runtime.config) ?? [];
    if (schedulers.length === 0) continue;
    const queue = new Queue(q.name, { connection, prefix: runtime.config.queuePrefix });
    try {
      for (const s of schedulers) {
        await queue.upsertJobScheduler(s.id, { pattern: s.pattern, tz: s.tz ?? 'UTC' }, { name: s.jobName, data: s.data ?? {}, opts: s.opts ?? {} });
        runtime.logger.info({ queue: q.name, scheduler: s.id, pattern: s.pattern, tz: s.tz ?? 'UTC' }, 'job scheduled');
        declared++;
      }
    } finally {
      await queue.close();
    }
  }
  return declared;
}

export async function startWorkerRole(runtime: Runtime, queues: readonly JobQueue[], services: readonly BackgroundService[] = []): Promise<RoleHandle> {
  const log = runtime.logger.child({ role: 'worker' });
  const connection = createRedis(runtime.config.redis.url, 'worker', log);
  await connection.connect();
  const prefix = runtime.config.queuePrefix;
  try {
    await upsertSchedulers(runtime, queues, connection);
  } catch (err) {
    connection.disconnect();
    throw err;
  }
  // BullMQ closes only connections it creates: the ones passed in are closed here, at the end.
  const owned: Redis[] = [];
  const workers = queues.map((q) => {
    const own = createRedis(runtime.config.redis.url, 'worker', log);
    owned.push(own);
    return new Worker(q.name, q.processor(runtime), { connection: own, prefix, concurrency: q.concurrency ?? 1 });
  });
  for (const w of workers) {
    w.on('failed', (job, err) => runtime.logger.warn({ queue: w.name, jobId: job?.id, attempt: job?.attemptsMade, err: err.message }, 'job failed'));
    // A lost Redis connection is reported here; the worker reconnects by itself.
    w.on('error', (err) => runtime.logger.warn({ queue: w.name, err: err.message }, 'worker error'));
  }
  const started: RoleHandle[] = [];
  for (const s of services) started.push(await s.start(runtime));
  runtime.logger.info({ queues: queues.map((q) => q.name), services: services.map((s) => s.name) }, 'worker started');
  let closing: Promise<void> | undefined;
  return {
    name: 'worker',
    close: () => {
      closing ??= Promise.allSettled([...started.map((s) => s.close()), ...workers.map((w) => w.close())]).then(() => {
        for (const c of owned) c.disconnect();
        connection.disconnect();
      });
      return closing;
    },
  };
}
