// The worker role: one BullMQ worker per registered queue. Job processors
// (reports, exports, archiving) register themselves in `jobQueues`.
import { Worker, type Processor } from 'bullmq';
import type { RoleHandle, Runtime } from '../cli/runtime.js';
import { redisConnection } from '../core/dependencyChecks.js';

export interface JobQueue {
  name: string;
  processor: (runtime: Runtime) => Processor;
  concurrency?: number;
}

export async function startWorkerRole(runtime: Runtime, queues: readonly JobQueue[]): Promise<RoleHandle> {
  const connection = redisConnection(runtime.config.redis.url);
  await connection.connect();
  const workers = queues.map(
    (q) =>
      new Worker(q.name, q.processor(runtime), {
        connection: connection.duplicate(),
        prefix: runtime.config.queuePrefix,
        concurrency: q.concurrency ?? 1,
      }),
  );
  for (const w of workers) w.on('failed', (job, err) => runtime.logger.warn({ queue: w.name, jobId: job?.id, err: err.message }, 'job failed'));
  runtime.logger.info({ queues: queues.map((q) => q.name) }, 'worker started');
  let closing: Promise<void> | undefined;
  return {
    name: 'worker',
    close: () => {
      closing ??= Promise.allSettled(workers.map((w) => w.close())).then(() => {
        connection.disconnect();
      });
      return closing;
    },
  };
}
