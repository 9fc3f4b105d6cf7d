// The worker role as a process of its own over the shared store (issue 41 item 6), killed -9 while it writes a
// compliance export: `lockaudit store` holds the embedded store, `lockaudit worker` reaches it through that
// process. Nothing half-written: while the killed worker's export is unfinished no object or manifest is there,
// and the next worker process takes the job up again (BullMQ's stalled-job check) and writes it whole.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { AuditStore } from '../../core/clickhouse.js';
import { loadConfig } from '../../core/config.js';
import { servedStore } from '../../core/embeddedOwner.js';
import { createLogger } from '../../core/logger.js';
import { createS3Client } from '../../core/s3.js';
import { ExportRecords, type ExportState } from '../../exporters/compliance/complianceExport.js';
import { COMPLIANCE_QUEUE, enqueueComplianceExport, type ComplianceJobData } from '../../exporters/exportJobs.js';
import { manifestName } from '../../exporters/storage/manifest.js';
import { objectExists } from '../../exporters/storage/objectStore.js';
import { createRedis } from '../../platform/redis.js';
import { waitFor } from '../support/capture.js';
import { insertGrants } from '../support/exportData.js';
import { tempDir, uniqueId } from '../support/env.js';
import { RoleProcesses } from '../support/roleProcesses.js';

const DAY1 = Date.parse('2026-03-02T00:00:00Z');
const ROWS = 600_000;

describe('the worker process killed -9 mid-export, over the shared store', { timeout: 420_000 }, () => {
  const data = tempDir('lockaudit-wkill-');
  const env: NodeJS.ProcessEnv = { ...process.env, LOCKAUDIT_DATA_DIR: data.dir, LOCKAUDIT_QUEUE_PREFIX: uniqueId('q'), LOCKAUDIT_LOG_LEVEL: 'warn' };
  const config = loadConfig({ env });
  const s3 = createS3Client(config.s3);
  const roles = new RoleProcesses(env);
  const connection = createRedis(config.redis.url, 'worker', createLogger('silent'));
  let queue: Queue<ComplianceJobData>;
  let store: AuditStore;

  before(async () => {
    const chPath = config.clickhouse.mode === 'embedded' ? config.clickhouse.path : '';
    const holder = roles.start(['store']);
    await waitFor('the store process serving', async () => (servedStore(chPath)?.pid === holder.pid ? true : undefined), 60_000, 100);
    store = new AuditStore(config.clickhouse);
    assert.equal(store.target.mode, 'server', 'this test process goes through the store process too');
    await insertGrants(store, 'c1', ROWS, DAY1, 100);
    queue = new Queue<ComplianceJobData>(COMPLIANCE_QUEUE, { connection, prefix: config.queuePrefix });
    queue.on('error', () => undefined);
  });

  after(async () => {
    await roles.stopAll();
    await queue?.close();
    connection.disconnect();
    await store?.close();
    data.remove();
  });

  it('leaves no object or manifest while unfinished; the next worker process writes the export whole', async () => {
    const records = new ExportRecords(store);
    const state = await records.create({ format: 'csv', fromMs: DAY1, toMs: DAY1 + 86_400_000, filters: { cluster: 'c1' }, requestedBy: 'audrey@corp' });
    await enqueueComplianceExport(queue, state.id);
    const first = roles.start(['worker']);
    const exited = new Promise((resolve) => first.once('exit', resolve));
    const mid = await waitFor(
      'the export under way',
      async () => {
        const s = (await records.get(state.id)) as ExportState;
        assert.notEqual(s.status, 'done', 'the export finished before the kill: make it larger');
        return s.status === 'running' && s.rowsDone > 0n ? s : undefined;
      },
      180_000,
      50,
    );
    process.kill(first.pid as number, 'SIGKILL');
    await exited;
    assert.ok(mid.rowsDone < BigInt(ROWS), `killed mid-export (${mid.rowsDone} of ${ROWS} rows)`);
    const orphaned = (await records.get(state.id)) as ExportState;
    assert.notEqual(orphaned.status, 'done');
    const key = orphaned.objectKey;
    if (key) {
      assert.equal(await objectExists(s3, config.s3.historyBucket, key), false, 'no half-written object');
      assert.equal(await objectExists(s3, config.s3.historyBucket, manifestName(key)), false, 'no manifest of it');
    }

    roles.start(['worker']);
    const done = await waitFor(
      'the export done by the next worker process',
      async () => {
        const s = (await records.get(state.id)) as ExportState;
        return s.status === 'done' || s.status === 'failed' ? s : undefined;
      },
      240_000,
      200,
    );
    assert.equal(done.status, 'done', done.error);
    assert.equal(done.rowsDone, BigInt(ROWS));
    assert.ok(await objectExists(s3, config.s3.historyBucket, done.objectKey));
    assert.ok(await objectExists(s3, config.s3.historyBucket, manifestName(done.objectKey)));
    assert.equal((await s3.statObject(config.s3.historyBucket, done.objectKey)).size, done.bytes);
    // The whole file: its lines are the header and every row.
    let lines = 0;
    for await (const chunk of await s3.getObject(config.s3.historyBucket, done.objectKey)) for (const b of chunk as Buffer) if (b === 10) lines++;
    assert.equal(lines, ROWS + 1);
  });
});
