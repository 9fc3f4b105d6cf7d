// Checks each dependency the way the real path uses it: a txn on etcd, an
// insert into ClickHouse, the archive bucket's object lock (and, deep, a put
// into it), a job through Redis (deep) or a PING. Used by `lockaudit doctor`
// (deep) and /readyz (shallow, cached).
import { createHash, randomUUID } from 'node:crypto';
import { type Job, Queue, QueueEvents, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../core/config.js';
import type { AuditStore } from '../core/clickhouse.js';
import { createEtcdClient } from '../core/etcd.js';
import { LockauditError } from '../core/errors.js';
import { createS3Client } from '../core/s3.js';
import type { Logger } from '../core/logger.js';
import { archiveLockProblem } from './buckets.js';
import { createRedis } from './redis.js';

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
  ms: number;
  /** Nobody answered (refused, unreachable, timed out), as opposed to an answer that refused. */
  unreachable?: boolean;
}

/** The fix to print: fixed text, or chosen by what went wrong. */
type Fix = string | ((err: unknown) => string);

async function timed(name: string, fix: Fix, fn: () => Promise<string>): Promise<CheckResult> {
  const started = Date.now();
  try {
    const detail = await fn();
    return { name, ok: true, detail, ms: Date.now() - started };
  } catch (err) {
    return { name, ok: false, detail: describe(err), fix: typeof fix === 'string' ? fix : fix(err), ms: Date.now() - started, unreachable: notAnswering(err) };
  }
}

function describe(err: unknown): string {
  const e = err as Error & { code?: string; errors?: Error[] };
  const inner = e.errors?.[0]?.message;
  return (inner ?? e.message ?? String(err)).split('\n')[0] as string;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A local service that does not answer is started with `services up`; one that answers and refuses
 * (credentials, a missing bucket) is not fixed by starting it again: then the remote hint applies.
 */
function localFix(config: Config, local: boolean, remote: string): Fix {
  return (err) => (local && notAnswering(err) ? `start the local services: lockaudit services up (data dir ${config.dataDir})` : remote);
}

const NOT_ANSWERING = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE']);

/** Nobody answered (refused, unreachable, timed out), as opposed to an answer that refused. */
function notAnswering(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_ANSWERING.has(code)) return true;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some(notAnswering)) return true;
  }
  // Clients that say it in words only: ioredis ("Connection is closed."), grpc ("14 UNAVAILABLE: No connection established").
  return /timed out|timeout|ECONNREFUSED|connect |connection is closed|UNAVAILABLE|no connection established|socket hang up/i.test(describe(err));
}

export async function checkEtcd(config: Config): Promise<CheckResult[]> {
  return Promise.all(
    config.etcd.clusters.map((cluster) =>
      timed(
        `etcd:${cluster.name}`,
        localFix(config, config.etcd.local, `check that ${cluster.endpoints.join(', ')} is reachable and has a quorum`),
        async () => {
          const client = createEtcdClient(cluster, { callTimeoutMs: 3_000 });
          try {
            // Outside the tailed prefixes (/l/, /q/, /sys/): the probe leaves no audit events.
            const key = `/lockaudit-probe/${randomUUID()}`;
            const res = await client.if(key, 'Create', '==', 0).then(client.put(key).value('probe')).commit();
            await client.delete().key(key);
            if (!res.succeeded) throw new Error('probe txn did not succeed');
            const status = await client.maintenance.status();
            return `txn ok at revision ${res.header.revision}, etcd ${status.version}, ${cluster.endpoints.length} endpoint(s)`;
          } finally {
            client.close();
          }
        },
      ),
    ),
  );
}

export function checkClickHouse(config: Config, store: AuditStore): Promise<CheckResult> {
  const remote = config.clickhouse.mode === 'server' ? `check ${config.clickhouse.url} and its credentials` : '';
  return timed(
    'clickhouse',
    config.clickhouse.mode === 'embedded' ? 'run lockaudit migrate; only one process may open the embedded data directory' : remote,
    async () => {
      const probeId = randomUUID();
      await withTimeout(store.insert('health_probe', [{ probe_id: probeId, source: 'check' }]), 10_000, 'insert');
      const rows = await store.rows<{ n: string; v: string }>(
        'SELECT count() AS n, version() AS v FROM {db:Identifier}.health_probe WHERE probe_id = {id:String}',
        { id: probeId },
      );
      if (rows[0]?.n !== '1') throw new Error('the inserted probe row was not read back');
      return `insert ok, ClickHouse ${rows[0].v} (${config.clickhouse.mode})`;
    },
  );
}

export function checkS3(config: Config, options: { deep: boolean }): Promise<CheckResult> {
  return timed(
    's3',
    localFix(
      config,
      config.s3.local,
      `check ${config.s3.endpoint}, its credentials (LOCKAUDIT_S3_ACCESS_KEY, LOCKAUDIT_S3_SECRET_KEY), and that ${config.s3.archiveBucket} has object lock (lockaudit migrate creates the buckets)`,
    ),
    async () => {
      const s3 = createS3Client(config.s3);
      const problem = await withTimeout(archiveLockProblem(s3, config.s3.archiveBucket), 10_000, 'object lock');
      if (problem) throw new Error(problem);
      if (!options.deep) return `${config.s3.archiveBucket}: object lock COMPLIANCE`;
      // The probe object overrides the bucket's 7-year default with a short
      // GOVERNANCE retention so doctor can delete it again (with bypass).
      // minio-js's putObject turns unknown headers into user metadata, so the
      // object-lock headers go through its signed raw request.
      const name = `doctor/probe-${randomUUID()}`;
      const body = Buffer.from('probe');
      const res = await s3.makeRequestAsync(
        {
          method: 'PUT',
          bucketName: config.s3.archiveBucket,
          objectName: name,
          headers: {
            'content-md5': createHash('md5').update(body).digest('base64'),
            'x-amz-object-lock-mode': 'GOVERNANCE',
            'x-amz-object-lock-retain-until-date': new Date(Date.now() + 24 * 3600_000).toISOString(),
          },
        },
        body,
        [200],
      );
      res.resume();
      const versionId = res.headers['x-amz-version-id'];
      if (typeof versionId !== 'string') throw new Error('the put returned no version id: versioning (object lock) is off');
      await s3.removeObject(config.s3.archiveBucket, name, { versionId, governanceBypass: true });
      return `put into ${config.s3.archiveBucket} ok (object lock COMPLIANCE)`;
    },
  );
}

export interface CheckOptions {
  /** Also run the slow probes (a job through the queue, a put into the archive bucket). */
  deep: boolean;
  /** Where the checks' Redis clients report connection errors. */
  logger: Logger;
}

export function checkRedis(config: Config, options: CheckOptions): Promise<CheckResult> {
  return timed('redis', localFix(config, config.redis.local, 'check the Redis URL and that the server runs'), async () => {
    const connection = createRedis(config.redis.url, 'check', options.logger);
    await withTimeout(connection.connect(), 5_000, 'connect');
    try {
      const pong = await withTimeout(connection.ping(), 3_000, 'PING');
      if (!options.deep) return `PING ${pong}`;
      await queueProbe(config, options.logger, connection);
      return 'a job went through the queue (BullMQ)';
    } finally {
      connection.disconnect();
    }
  });
}

/**
 * One job through a queue of its own, answered by a worker. The job is kept
 * once finished (the whole queue is obliterated after): waitUntilFinished
 * polls the job after subscribing, and a job removed on completion before
 * that poll reads as "Missing key for job" — a loaded machine made doctor
 * fail that way. `beforeWait` (given the job) lets a test hold that window
 * open until the worker has finished it.
 */
export async function queueProbe(config: Config, logger: Logger, connection: Redis, beforeWait?: (job: Job) => Promise<void>): Promise<void> {
  const queueName = `doctor-${randomUUID()}`;
  const queue = new Queue(queueName, { connection, prefix: config.queuePrefix });
  const events = new QueueEvents(queueName, { connection: createRedis(config.redis.url, 'check', logger), prefix: config.queuePrefix });
  const worker = new Worker(queueName, async (job) => ({ echoed: (job.data as { n: number }).n }), {
    connection: createRedis(config.redis.url, 'check', logger),
    prefix: config.queuePrefix,
  });
  try {
    await events.waitUntilReady();
    const job = await queue.add('probe', { n: 42 });
    await beforeWait?.(job);
    const result = (await withTimeout(job.waitUntilFinished(events, 10_000), 12_000, 'job')) as { echoed: number };
    if (result.echoed !== 42) throw new Error('the probe job returned the wrong result');
  } finally {
    await worker.close();
    await events.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  }
}

export async function checkAll(config: Config, store: AuditStore | undefined, options: CheckOptions): Promise<CheckResult[]> {
  const clickhouse: Promise<CheckResult> = store
    ? checkClickHouse(config, store)
    : Promise.resolve({ name: 'clickhouse', ok: false, detail: 'not opened', ms: 0 });
  const [etcd, ch, s3, redis] = await Promise.all([checkEtcd(config), clickhouse, checkS3(config, options), checkRedis(config, options)]);
  return [...etcd, ch, s3, redis];
}

/**
 * Before a role opens anything (the store, migrations, the buckets): the services it needs answer at all. A service
 * that does not answer is named with what to do, in one error (before: the migrations ran, then an uncaught
 * ECONNREFUSED ended the process with a stack trace and no word of which service). An answer that refuses (a bucket
 * without object lock, not created yet) is left to the role's own start, which says what it needs.
 */
export async function assertDependenciesAnswer(config: Config, needs: { etcd: boolean; s3: boolean; redis: boolean }, logger: Logger): Promise<void> {
  // etcd: a member answering is enough (a cluster without quorum is a state the lock API serves through, fail-open).
  const etcdAnswers = (): Promise<CheckResult[]> =>
    Promise.all(
      config.etcd.clusters.map((cluster) =>
        timed(`etcd:${cluster.name}`, localFix(config, config.etcd.local, `check that ${cluster.endpoints.join(', ')} is reachable`), async () => {
          const client = createEtcdClient(cluster, { callTimeoutMs: 3_000 });
          try {
            return `etcd ${(await withTimeout(client.maintenance.status(), 5_000, 'status')).version}`;
          } finally {
            client.close();
          }
        }),
      ),
    );
  const checks = await Promise.all([
    needs.etcd ? etcdAnswers() : Promise.resolve([]),
    needs.s3 ? checkS3(config, { deep: false }).then((r) => [r]) : Promise.resolve([]),
    needs.redis ? checkRedis(config, { deep: false, logger }).then((r) => [r]) : Promise.resolve([]),
  ]);
  const down = checks.flat().filter((c) => !c.ok && c.unreachable);
  if (down.length === 0) return;
  const fixes = [...new Set(down.map((c) => c.fix).filter((f): f is string => Boolean(f)))];
  throw new LockauditError(
    'LOCKAUDIT_ERR_DEPENDENCY_DOWN',
    `cannot start: ${down.map((c) => `${c.name} does not answer (${c.detail})`).join('; ')}. ${fixes.join('; ')}`,
  );
}
