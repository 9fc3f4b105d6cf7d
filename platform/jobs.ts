// The worker role: one BullMQ worker per registered queue, the queues'
// schedulers (declared idempotently at start), and background services such
// as the force archiver. Job processors register themselves in `jobQueues`.
import { Queue, Worker, type JobsOptions, type Processor } from 'bullmq';
import { Redis } from 'ioredis';
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
  /** Repeatable jobs of this queue, upserted when a worker starts. */
  schedulers?: readonly JobScheduler[];
}

/** A loop that runs beside the job workers (the force archiver). */
export interface BackgroundService {
  name: string;
  start(runtime: Runtime): Promise<RoleHandle>;
}

/**
 * A Redis connection for long-lived workers: it keeps reconnecting (capped
 * backoff) through a Redis outage, so jobs resume when Redis returns.
 * (The dependency checks' connection gives up quickly on purpose.)
 */
export function workerRedisConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, lazyConnect: true, connectTimeout: 3_000, retryStrategy: (times) => Math.min(200 * times, 5_000) });
}

/**
 * A Redis client with no 'error' listener has ioredis print "[ioredis] Unhandled error event" with a
 * stack at every reconnect attempt; this routes them through the logger instead, once per outage.
 */
export function logRedisErrors(redis: Redis, logger: Runtime['logger'], name: string): Redis {
  let reported = false;
  redis.on('error', (err: Error) => {
    if (!reported) logger.warn({ connection: name, err: err.message }, 'redis connection error (reconnecting)');
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  return redis;
}

export async function startWorkerRole(runtime: Runtime, queues: readonly JobQueue[], services: readonly BackgroundService[] = []): Promise<RoleHandle> {
  const connection = logRedisErrors(workerRedisConnection(runtime.config.redis.url), runtime.logger, 'worker');
  await connection.connect();
  const prefix = runtime.config.queuePrefix;
  for (const q of queues) {
    if (!q.schedulers?.length) continue;
    const queue = new Queue(q.name, { connection, prefix });
    try {
      for (const s of q.schedulers) await queue.upsertJobScheduler(s.id, { pattern: s.pattern, tz: s.tz ?? 'UTC' }, { name: s.jobName, data: s.data ?? {}, opts: s.opts ?? {} });
    } finally {
      await queue.close();
    }
  }
  // BullMQ closes only connections it creates: the ones passed in are closed here, at the end.
  const owned: Redis[] = [];
  const workers = queues.map((q) => {
    const own = logRedisErrors(connection.duplicate(), runtime.logger, `worker:${q.name}`);
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
