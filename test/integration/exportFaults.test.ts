// Faults during a compliance export, on a MinIO and a Redis of this test's own
// (port block 25200, its own data dir): either one stopped while the job runs
// → the job retries with backoff and completes once it is back, and the
// export is never marked done before its object and manifest are stored.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue, Worker } from 'bullmq';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { createS3Client } from '../../core/s3.js';
import { ensureHistoryBucket } from '../../platform/buckets.js';
import { ExportRecords, type ExportState } from '../../exporters/compliance/complianceExport.js';
import { COMPLIANCE_QUEUE, complianceProcessor, enqueueComplianceExport, type ComplianceJobData } from '../../exporters/exportJobs.js';
import { manifestName } from '../../exporters/storage/manifest.js';
import { objectExists } from '../../exporters/storage/objectStore.js';
import { createRedis } from '../../platform/redis.js';
import { servicesDown, servicesUp, startInstance, stopInstance } from '../../services/localServices.js';
import { insertGrants } from '../support/exportData.js';
import { tempDir, tempStore, testConfig, uniqueId } from '../support/env.js';

const DAY1 = Date.parse('2026-03-01T00:00:00Z');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('export faults (own MinIO and Redis)', () => {
  const data = tempDir('lockaudit-faults-');
  const config = testConfig({
    LOCKAUDIT_DATA_DIR: data.dir,
    LOCKAUDIT_LOCAL_PORT_BASE: '25200',
    LOCKAUDIT_S3_HISTORY_BUCKET: uniqueId('hist-'),
    LOCKAUDIT_QUEUE_PREFIX: uniqueId('q'),
  });
  const s3 = createS3Client(config.s3);
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let worker: Worker;
  let queue: Queue<ComplianceJobData>;
  const logger = createLogger('silent');
  const workerConnection = createRedis(config.redis.url, 'worker', logger);
  const queueConnection = createRedis(config.redis.url, 'worker', logger);

  before(async () => {
    await servicesUp(config, { only: ['minio', 'redis'] });
    await ensureHistoryBucket(s3, config.s3);
    ({ store, close: closeStore } = await tempStore());
    await insertGrants(store, 'c1', 800_000, DAY1, 100);
    const runtime = { store, config, logger: createLogger('silent'), metrics: createMetricsRegistry() };
    // Short lock and stall checks so a job orphaned by a Redis outage is picked up again quickly.
    worker = new Worker(COMPLIANCE_QUEUE, complianceProcessor(runtime), {
      connection: workerConnection,
      prefix: config.queuePrefix,
      lockDuration: 5_000,
      stalledInterval: 2_000,
    });
    worker.on('error', () => undefined);
    queue = new Queue<ComplianceJobData>(COMPLIANCE_QUEUE, { connection: queueConnection, prefix: config.queuePrefix });
    queue.on('error', () => undefined);
  });
  after(async () => {
    await worker?.close();
    await queue?.close();
    workerConnection.disconnect();
    queueConnection.disconnect();
    await closeStore?.();
    await servicesDown(config, { only: ['minio', 'redis'] });
    data.remove();
  });

  async function request(): Promise<ExportState> {
    const records = new ExportRecords(store);
    const state = await records.create({ format: 'parquet', fromMs: DAY1, toMs: DAY1 + 86_400_000, filters: { cluster: 'c1' }, requestedBy: 'audrey@corp' });
    await enqueueComplianceExport(queue, state.id);
    return state;
  }

  async function waitFor(id: string, want: (s: ExportState) => boolean, timeoutMs: number): Promise<ExportState> {
    const records = new ExportRecords(store);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = (await records.get(id)) as ExportState;
      if (want(s) || Date.now() > deadline) return s;
      await sleep(100);
    }
  }

  it('MinIO down while an export runs: the job completes after MinIO returns, and is not done before its object is stored', async () => {
    // MinIO goes down before the export starts: an export that streams its parts as it goes can finish
    // 800 000 rows in the moment between "running" and a MinIO stop, which made this test race.
    assert.ok(await stopInstance(config, 'minio'), 'our MinIO stopped');
    const downAt = Date.now();
    let state: ExportState;
    try {
      state = await request();
      const running = await waitFor(state.id, (s) => s.status !== 'queued', 30_000);
      assert.equal(running.status, 'running');
      await sleep(4_000);
      const during = await new ExportRecords(store).get(state.id);
      assert.notEqual(during?.status, 'done', 'not done while its object cannot be stored');
    } finally {
      await startInstance(config, 'minio'); // the next test needs it whatever happened here
    }
    const done = await waitFor(state.id, (s) => s.status === 'done' || s.status === 'failed', 120_000);
    assert.equal(done.status, 'done', done.error);
    assert.equal(done.rowsDone, 800_000n);
    assert.ok(Date.now() - downAt > 4_000);
    assert.ok(await objectExists(s3, config.s3.historyBucket, done.objectKey));
    assert.ok(await objectExists(s3, config.s3.historyBucket, manifestName(done.objectKey)));
    assert.equal((await s3.statObject(config.s3.historyBucket, done.objectKey)).size, done.bytes);
  });

  it('Redis stopped mid-export: the job completes after Redis returns', async () => {
    const state = await request();
    const running = await waitFor(state.id, (s) => s.status !== 'queued', 30_000);
    assert.equal(running.status, 'running');
    assert.ok(await stopInstance(config, 'redis'), 'our Redis stopped');
    await sleep(3_000);
    await startInstance(config, 'redis');
    const done = await waitFor(state.id, (s) => s.status === 'done' || s.status === 'failed', 120_000);
    assert.equal(done.status, 'done', done.error);
    assert.equal(done.rowsDone, 800_000n);
    // And BullMQ agrees once Redis is back (a stalled attempt is retried and finds the export done).
    const deadline = Date.now() + 60_000;
    let jobState = '';
    while (Date.now() < deadline) {
      jobState = await queue.getJobState(state.id).catch(() => 'unknown');
      if (jobState === 'completed') break;
      await sleep(250);
    }
    assert.equal(jobState, 'completed');
  });
});
