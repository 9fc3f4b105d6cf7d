// Parquet history and compliance exports against real MinIO and Redis, with
// an embedded ClickHouse of this file's own: the lifecycle rule, manifests,
// idempotent re-runs, a ≥ 1 M-row export equal to ClickHouse (rows and token
// checksum, read back with an independent reader), the API's job, progress,
// audit trail and presigned download that expires.
import assert from 'node:assert/strict';
import { createHash, createPublicKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tableFromIPC } from 'apache-arrow';
import { UnrecoverableError, Worker } from 'bullmq';
import { buildApp, type App } from '../../api/app.js';
import { exportRoutes } from '../../api/routes/exports.js';
import { HealthState } from '../../platform/health.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { generateDigestSigner, keyringOf } from '../../core/digestKey.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { createS3Client } from '../../core/s3.js';
import { ensureHistoryBucket, HISTORY_EXPIRY_DAYS } from '../../platform/buckets.js';
import { ExportGate, exportPlanToObject, runExportPlan, type ExportProgress } from '../../exporters/compliance/chunkedExport.js';
import { ExportRecords, runComplianceExport, writeGrantsExport } from '../../exporters/compliance/complianceExport.js';
import { planGrantsExport } from '../../exporters/compliance/exportPlans.js';
import { COMPLIANCE_QUEUE, complianceProcessor, historyProcessor, HISTORY_QUEUE } from '../../exporters/exportJobs.js';
import { manifestSignatureProblem, signManifest } from '../../exporters/digests/format.js';
import { manifestName, parseManifest } from '../../exporters/storage/manifest.js';
import { objectExists, readObjectText } from '../../exporters/storage/objectStore.js';
import { captureBegan, exportHistoryFile, historyObjectName, HISTORY_SETTLE_MS } from '../../exporters/history/parquetHistory.js';
import { createRedis } from '../../platform/redis.js';
import { csvLine } from '../../grants/csv.js';
import { grantTokenChecksum, insertEvents, insertGrantEvents, insertGrants, parquetTokenChecksum } from '../support/exportData.js';
import { tempDir, tempStore, testConfig, uniqueId } from '../support/env.js';

const DAY = 86_400_000;
const DAY1 = Date.parse('2026-03-01T00:00:00Z');
const logger = createLogger('silent');
const signer = generateDigestSigner();

describe('exports', () => {
  const historyBucket = uniqueId('hist-');
  const queuePrefix = uniqueId('q');
  const config = testConfig({ LOCKAUDIT_S3_HISTORY_BUCKET: historyBucket, LOCKAUDIT_QUEUE_PREFIX: queuePrefix });
  const s3 = createS3Client(config.s3);
  const work = tempDir('lockaudit-exports-');
  let store: AuditStore;
  let closeStore: () => Promise<void>;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    await ensureHistoryBucket(s3, config.s3);
    // Day 1: 1.2 M grants of c1 (every 50 ms → the whole day is 1 728 000 slots), 30 000 of c2; raw events of c1.
    await insertGrants(store, 'c1', 1_200_000, DAY1, 50);
    await insertGrants(store, 'c2', 30_000, DAY1 + 1_000, 2_000);
    await insertEvents(store, 'c1', 50_000, DAY1, 1_000);
    // Captured clusters (a tailer's checkpoints): an export naming any other cluster is refused.
    await store.insert('checkpoints', [
      { cluster: 'c1', revision: '9000000', leader: 'test' },
      { cluster: 'c2', revision: '9000000', leader: 'test' },
    ]);
  });
  after(async () => {
    await closeStore();
    work.remove();
  });

  it('keeps the history bucket under a 365-day lifecycle rule', async () => {
    const lifecycle = (await s3.getBucketLifecycle(historyBucket)) as { Rule?: Array<{ Status: string; Expiration?: { Days?: number | string } }> } | null;
    const rules = [lifecycle?.Rule ?? []].flat();
    assert.ok(
      rules.some((r) => r.Status === 'Enabled' && Number(r.Expiration?.Days) === HISTORY_EXPIRY_DAYS),
      JSON.stringify(lifecycle),
    );
  });

  it("never skips a day on a manifest the digest key did not sign: placed, edited or another key's, the day is written over it and alarmed", async () => {
    const health = new HealthState();
    const deps = { store, s3, bucket: historyBucket, logger, chunkRows: 7_000, signer, health };
    const date = '2026-02-24';
    const object = historyObjectName('grants', 'c2', date);
    const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
    // Whoever holds the bucket's credentials places a file and its manifest for a day not yet written.
    const placed = Buffer.from('PAR1 placed by hand PAR1');
    await s3.putObject(historyBucket, object, placed, placed.length);
    const forged = {
      version: 1,
      dataset: 'grants',
      object,
      format: 'parquet',
      rows: '0',
      bytes: placed.length,
      sha256: sha(placed),
      revisionRange: null,
      cluster: 'c2',
      date,
      from: `${date}T00:00:00.000Z`,
      to: '2026-02-25T00:00:00.000Z',
      exportedAt: new Date().toISOString(),
    };
    const putManifest = async (m: object): Promise<void> => {
      const body = Buffer.from(JSON.stringify(m));
      await s3.putObject(historyBucket, manifestName(object), body, body.length);
    };
    await putManifest(forged);
    const written = await exportHistoryFile(deps, { dataset: 'grants', cluster: 'c2', date });
    assert.equal(written.status, 'written', 'not skipped on an unsigned manifest');
    const raised = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_HISTORY_UNSIGNED');
    assert.ok(raised);
    assert.match(raised.message, /not signed/);
    const stored = parseManifest(await readObjectText(s3, historyBucket, manifestName(object)));
    assert.ok(stored);
    assert.equal(manifestSignatureProblem(stored, keyringOf([createPublicKey(signer.publicKeyPem)])), undefined, 'the manifest written over it is signed');
    const file = await s3.getObject(historyBucket, object);
    const parts: Buffer[] = [];
    for await (const c of file) parts.push(c as Buffer);
    assert.equal(sha(Buffer.concat(parts)), stored.sha256, "the file is the export's, not the placed one");
    assert.equal((await exportHistoryFile(deps, { dataset: 'grants', cluster: 'c2', date })).status, 'complete', 'a signed manifest completes the day');

    // A signed manifest edited afterwards, and one signed by another key, are no more the worker's.
    for (const [what, m, problem] of [
      ['edited', { ...stored, rows: '1' }, /does not hold/],
      ['another key', signManifest({ ...stored }, generateDigestSigner()), /signed by key/],
    ] as const) {
      const fresh = new HealthState();
      await putManifest(m);
      assert.equal((await exportHistoryFile({ ...deps, health: fresh }, { dataset: 'grants', cluster: 'c2', date })).status, 'written', what);
      assert.match(fresh.alarms()[0]?.message ?? '', problem, what);
    }

    // The file swapped under the genuine signed manifest: not complete; written again (review: it stayed swapped).
    await s3.putObject(historyBucket, object, placed, placed.length);
    const swapped = new HealthState();
    assert.equal((await exportHistoryFile({ ...deps, health: swapped }, { dataset: 'grants', cluster: 'c2', date })).status, 'written');
    assert.match(swapped.alarms()[0]?.message ?? '', /the file under it is not the one it describes/);
    assert.equal((await exportHistoryFile(deps, { dataset: 'grants', cluster: 'c2', date })).status, 'complete');

    // A manifest placed while the day is being written (after the job looked, before it wrote its own): not taken.
    await s3.removeObject(historyBucket, manifestName(object));
    const racing = new HealthState();
    let placedDuring = false;
    const racer = new Proxy(s3, {
      get(target, prop, receiver) {
        if (prop !== 'putObject') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<typeof s3.putObject>) => {
          if (args[1] === manifestName(object) && !placedDuring) {
            placedDuring = true;
            await putManifest(forged);
          }
          return target.putObject(...args);
        };
      },
    });
    assert.equal((await exportHistoryFile({ ...deps, s3: racer, health: racing }, { dataset: 'grants', cluster: 'c2', date })).status, 'written');
    assert.ok(placedDuring);
    assert.match(racing.alarms()[0]?.message ?? '', /not signed/);
    const after = parseManifest(await readObjectText(s3, historyBucket, manifestName(object)));
    assert.ok(after);
    assert.equal(
      manifestSignatureProblem(after, keyringOf([createPublicKey(signer.publicKeyPem)])),
      undefined,
      "the job's own signed manifest went over the placed one",
    );
  });

  it('writes a day of history per cluster as Parquet with a manifest, skips it when complete, and redoes a file whose manifest never appeared', async () => {
    const deps = { store, s3, bucket: historyBucket, logger, chunkRows: 7_000, signer };
    const date = '2026-03-01';
    const first = await exportHistoryFile(deps, { dataset: 'grants', cluster: 'c2', date });
    assert.equal(first.status, 'written');
    const object = historyObjectName('grants', 'c2', date);
    assert.equal(object, 'grants/cluster=c2/date=2026-03-01/grants.parquet');
    const manifest = parseManifest(await readObjectText(s3, historyBucket, manifestName(object)));
    assert.ok(manifest);
    assert.equal(manifest.rows, '30000');
    assert.deepEqual(manifest.revisionRange, { min: '1000000', max: '1029999' });
    const local = path.join(work.dir, 'c2.parquet');
    await s3.fGetObject(historyBucket, object, local);
    const bytes = await readFile(local);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), manifest.sha256, 'the manifest names the stored bytes');
    assert.equal(bytes.length, manifest.bytes);
    const expected = await grantTokenChecksum(store, { cluster: 'c2', fromMs: DAY1, toMs: DAY1 + DAY });
    const read = await parquetTokenChecksum(local);
    assert.deepEqual({ rows: read.rows, sum: read.sum, xor: read.xor }, expected);
    assert.ok((read.sample as bigint) > 2n ** 53n, 'tokens above 2^53 come back exact');

    // Re-running changes nothing that is complete.
    const etag = (await s3.statObject(historyBucket, object)).etag;
    const again = await exportHistoryFile(deps, { dataset: 'grants', cluster: 'c2', date });
    assert.equal(again.status, 'complete');
    assert.equal((await s3.statObject(historyBucket, object)).etag, etag);

    // A file without its manifest (a run that died before completing) is not complete: the next run redoes it.
    const events = historyObjectName('events', 'c1', date);
    await s3.putObject(historyBucket, events, Buffer.from('half a file'), 11);
    const redo = await exportHistoryFile(deps, { dataset: 'events', cluster: 'c1', date });
    assert.equal(redo.status, 'written');
    // The day's events: the 50 000 raw events and the grants' own (their puts and deletes, exportData.ts).
    const [day] = await store.rows<{ n: string }>(
      "SELECT toString(count()) AS n FROM {db:Identifier}.events FINAL WHERE cluster = 'c1' AND wall_time >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND wall_time < fromUnixTimestamp64Milli({to:Int64}, 'UTC')",
      { from: DAY1, to: DAY1 + DAY },
    );
    assert.ok(Number(day?.n) > 50_000);
    assert.equal(redo.manifest?.rows, day?.n);
    assert.equal((await s3.statObject(historyBucket, events)).size, redo.manifest?.bytes);

    // An empty day is written too (explicitly empty, not missing).
    const empty = await exportHistoryFile(deps, { dataset: 'grants', cluster: 'c2', date: '2026-02-27' });
    assert.equal(empty.manifest?.rows, '0');
    assert.equal(empty.manifest?.revisionRange, null);
  });

  /** Uploads in progress (not yet objects) under a name, with the bytes their parts hold so far. */
  async function incompleteUploads(name: string): Promise<Array<{ uploadId: string; size: number }>> {
    const out: Array<{ uploadId: string; size: number }> = [];
    for await (const u of s3.listIncompleteUploads(historyBucket, name, true)) if (u.key === name) out.push({ uploadId: u.uploadId, size: u.size });
    return out;
  }

  /** Waits (the export paused in its progress callback) until parts of `name` are stored: bytes sent while chunks remain. */
  async function partsStored(name: string): Promise<number> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const stored = (await incompleteUploads(name)).reduce((n, u) => n + u.size, 0);
      if (stored > 0) return stored;
      await new Promise((r) => setTimeout(r, 50));
    }
    return 0;
  }

  it('streams a history file into the bucket while ClickHouse computes the next chunks; an interrupted one leaves no object and no parts', async () => {
    const deps = { store, s3, bucket: historyBucket, logger, chunkRows: 300_000, signer };
    const target = { dataset: 'grants' as const, cluster: 'c1', date: '2026-03-01' };
    const object = historyObjectName('grants', 'c1', '2026-03-01');

    // Interrupted after its first chunk has been sent: the export fails, nothing is visible, the parts are discarded.
    let sentBeforeFailing = 0;
    await assert.rejects(
      exportHistoryFile(deps, target, async (p) => {
        if (p.chunksDone !== 1) return;
        sentBeforeFailing = await partsStored(object);
        throw new Error('interrupted mid-way');
      }),
      /interrupted mid-way/,
    );
    assert.ok(sentBeforeFailing > 0, 'the first chunk was on its way to the bucket before the export ended');
    await assert.rejects(s3.statObject(historyBucket, object), (err: { code?: string }) => err.code === 'NotFound', 'no partial object');
    assert.deepEqual(await incompleteUploads(object), [], 'the multipart upload was aborted');

    // Uninterrupted: parts are stored while chunks remain; the object's bytes are the manifest's.
    const sentWhileComputing: number[] = [];
    const done = await exportHistoryFile(deps, target, async (p) => {
      if (p.chunksDone >= 1 && p.chunksDone < p.chunks) sentWhileComputing.push(await partsStored(object));
    });
    assert.equal(done.status, 'written');
    assert.ok(sentWhileComputing.length >= 2 && sentWhileComputing.every((n) => n > 0), `parts stored before the last chunk: ${sentWhileComputing.join(',')}`);
    assert.deepEqual(await incompleteUploads(object), []);
    const manifest = done.manifest as NonNullable<typeof done.manifest>;
    assert.equal(manifest.rows, '1200000');
    const local = path.join(work.dir, 'c1-streamed.parquet');
    await s3.fGetObject(historyBucket, object, local);
    const bytes = await readFile(local);
    assert.equal(bytes.length, manifest.bytes);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), manifest.sha256, 'hashed once on the way, the manifest names the stored bytes');
    const read = await parquetTokenChecksum(local);
    assert.deepEqual({ rows: read.rows, sum: read.sum, xor: read.xor }, await grantTokenChecksum(store, { cluster: 'c1', fromMs: DAY1, toMs: DAY1 + DAY }));
  });

  it('runs the grants check beside the chunk queries: nothing is in place before it passes; failing, early or after the last chunk, it leaves no object, no parts and no file', async () => {
    const range = { fromMs: DAY1, toMs: DAY1 + DAY };
    const plan = await planGrantsExport(store, { cluster: 'c1' }, range, 300_000);
    assert.ok(plan.chunks.length >= 3, `chunks: ${plan.chunks.length}`);
    const target = (object: string) => ({ s3, bucket: historyBucket, object, contentType: 'application/vnd.apache.parquet' });
    /** A check settled by the test: `settle` runs 300 ms after the last chunk went out, once `seen` has looked. */
    const lateCheck = (outcome: 'pass' | 'fail', seen: () => Promise<void>) => {
      let settle!: (err?: Error) => void;
      const gate = new ExportGate(new Promise<void>((resolve, reject) => (settle = (err) => (err ? reject(err) : resolve()))));
      const onProgress = (p: ExportProgress): void => {
        if (p.chunksDone !== p.chunks) return;
        setTimeout(() => void seen().finally(() => settle(outcome === 'fail' ? new Error('grants disagree (test)') : undefined)), 300);
      };
      return { gate, onProgress };
    };

    // Passing late: every chunk is sent, the upload waits for the check, then completes.
    const passing = `gate/${uniqueId('pass')}.parquet`;
    let visibleBefore: boolean | undefined;
    const late = lateCheck('pass', async () => void (visibleBefore = await objectExists(s3, historyBucket, passing)));
    const written = await exportPlanToObject(store, plan, 'parquet', target(passing), late);
    assert.equal(visibleBefore, false, 'no object while the check still ran, every chunk sent');
    assert.equal(written.rows, 1_200_000n);
    assert.equal(await objectExists(s3, historyBucket, passing), true);

    // Failing after the last chunk: the upload is aborted, the check's error is the export's.
    const failing = `gate/${uniqueId('fail')}.parquet`;
    let partsBefore = 0;
    const refused = lateCheck('fail', async () => void (partsBefore = await partsStored(failing)));
    await assert.rejects(exportPlanToObject(store, plan, 'parquet', target(failing), refused), /grants disagree \(test\)/);
    assert.ok(partsBefore > 0, 'the chunks were sent while the check ran');
    await assert.rejects(s3.statObject(historyBucket, failing), (err: { code?: string }) => err.code === 'NotFound', 'no object');
    assert.deepEqual(await incompleteUploads(failing), [], 'the multipart upload was aborted');

    // Failing at once: the chunk queries stop (not every chunk is fetched), nothing stays.
    const early = `gate/${uniqueId('early')}.parquet`;
    const chunksSeen: number[] = [];
    const failedCheck = Promise.reject(new Error('grants disagree at once (test)'));
    await assert.rejects(
      exportPlanToObject(store, plan, 'parquet', target(early), { gate: new ExportGate(failedCheck), onProgress: (p) => void chunksSeen.push(p.chunksDone) }),
      /grants disagree at once \(test\)/,
    );
    assert.ok(Math.max(0, ...chunksSeen) < plan.chunks.length, `stopped early: ${chunksSeen.join(',')}`);
    await assert.rejects(s3.statObject(historyBucket, early), (err: { code?: string }) => err.code === 'NotFound');
    assert.deepEqual(await incompleteUploads(early), []);

    // Cancelled by the caller's signal after its first chunk was sent (a stopped job): the parts are discarded too
    // (before, the aborted signal refused the abort request itself and left them).
    const cancelled = `gate/${uniqueId('cancel')}.parquet`;
    const stop = new AbortController();
    let partsWhenCancelled = 0;
    const onFirst = async (p: ExportProgress): Promise<void> => {
      if (p.chunksDone !== 1) return;
      partsWhenCancelled = await partsStored(cancelled);
      stop.abort(new Error('cancelled (test)'));
    };
    await assert.rejects(exportPlanToObject(store, plan, 'parquet', target(cancelled), { signal: stop.signal, onProgress: onFirst }), /cancelled \(test\)/);
    assert.ok(partsWhenCancelled > 0, 'parts were stored when it was cancelled');
    assert.deepEqual(await incompleteUploads(cancelled), [], 'the multipart upload was aborted');

    // Failing while the chunk queries still run (a local file: no upload whose own failure would stop them): they stop.
    let failMid!: (err: Error) => void;
    const midGate = new ExportGate(new Promise<void>((_, reject) => (failMid = reject)));
    const midSeen: number[] = [];
    const onMid = async (p: ExportProgress): Promise<void> => {
      midSeen.push(p.chunksDone);
      if (p.chunksDone === 1) failMid(new Error('grants disagree mid-way (test)'));
    };
    await assert.rejects(
      runExportPlan(store, plan, 'parquet', path.join(work.dir, 'mid.parquet'), { gate: midGate, onProgress: onMid }),
      /grants disagree mid-way \(test\)/,
    );
    assert.ok(Math.max(...midSeen) < plan.chunks.length, `the chunks stopped: ${midSeen.join(',')} of ${plan.chunks.length}`);
    assert.equal(existsSync(path.join(work.dir, 'mid.parquet.partial')), false);

    // Cancelled while waiting for a check that then passes: the cancel wins, nothing is renamed into place.
    const waiting = path.join(work.dir, 'cancelled-waiting.parquet');
    const stopWaiting = new AbortController();
    const passLate = lateCheck('pass', async () => stopWaiting.abort(new Error('cancelled while the check ran (test)')));
    await assert.rejects(runExportPlan(store, plan, 'parquet', waiting, { ...passLate, signal: stopWaiting.signal }), /cancelled while the check ran \(test\)/);
    assert.equal(existsSync(waiting), false);
    assert.equal(existsSync(`${waiting}.partial`), false);

    // A local file (the CLI's path): no file and no partial file.
    const out = path.join(work.dir, 'gated.parquet');
    const local = lateCheck('fail', async () => void (visibleBefore = existsSync(out)));
    await assert.rejects(runExportPlan(store, plan, 'parquet', out, local), /grants disagree \(test\)/);
    assert.equal(visibleBefore, false);
    assert.equal(existsSync(out), false);
    assert.equal(existsSync(`${out}.partial`), false);
  });

  it('runs the history job for a day through the queue (what the scheduler enqueues for yesterday)', async () => {
    const connection = createRedis(config.redis.url, 'worker', logger);
    const runtime = { store, config, logger, metrics: createMetricsRegistry() };
    const processor = historyProcessor(runtime);
    const worker = new Worker(HISTORY_QUEUE, processor, { connection, prefix: queuePrefix, autorun: false });
    try {
      const { Queue } = await import('bullmq');
      // A connection we pass in stays ours to close (BullMQ closes only what it creates).
      const queue = new Queue(HISTORY_QUEUE, { connection, prefix: queuePrefix });
      const job = await queue.add('history-day', { date: '2026-03-02', clusters: ['c2'], datasets: ['grants'] });
      // No tailer has captured c2 past that day yet (none ever ran): the day is not written, so it is not complete, short, for good.
      await assert.rejects(processor(job, 'token'), { name: 'HistoryDayNotOverError', message: /cluster "c2" has no tailer checkpoint/ });
      const wall = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
      /** The tailer's leader captured c2 up to `revision`, the newest event there at `ms` (and published it, as checkpointWriter does). */
      const capturedUpTo = async (revision: number, ms: number): Promise<void> => {
        await store.insert('events', [
          { cluster: 'c2', revision: String(revision), key: '/sys/clock', event_type: 'clock', op: 'put', wall_time: wall(ms), value: '{}' },
        ]);
        await store.insert('tailer_status', [
          {
            cluster: 'c2',
            cluster_id: 'x',
            leader: 'test',
            checkpoint: String(revision),
            head_revision: String(revision),
            compact_revision: '0',
            lag_revisions: '0',
            lag_seconds: 0,
            updated_at: Date.now(),
          },
        ]);
      };
      const dayEnd = DAY1 + 2 * DAY;
      await capturedUpTo(9_000_000, dayEnd + HISTORY_SETTLE_MS - 1);
      await assert.rejects(processor(job, 'token'), {
        name: 'HistoryDayNotOverError',
        message: /2026-03-02 of cluster "c2" is not over for its tailer yet \(captured up to 2026-03-03T00:14:59.999Z;/,
      });
      // An insider's hold with a far-future `at`, and a spool grant stamped likewise, say nothing of what was captured
      // (reviewer: either made any day read as over): still refused.
      await store.insert('events', [
        {
          cluster: 'c2',
          revision: '9000000',
          key: '/l/ns/forged',
          event_type: 'grant',
          op: 'put',
          wall_time: wall(Date.UTC(2299, 0, 1)),
          value: '{}',
          origin: 'foreign',
        },
        { cluster: 'c2', revision: '0', key: '/spool/far', event_type: 'unprotected-grant', op: 'spool', wall_time: wall(Date.UTC(2299, 0, 1)), value: '{}' },
      ]);
      await assert.rejects(processor(job, 'token'), { name: 'HistoryDayNotOverError', message: /captured up to 2026-03-03T00:14:59.999Z/ });
      assert.equal(await objectExists(s3, historyBucket, manifestName(historyObjectName('grants', 'c2', '2026-03-02'))), false, 'nothing written');
      await capturedUpTo(9_000_001, dayEnd + HISTORY_SETTLE_MS);
      const result = (await processor(job, 'token')) as { date: string; files: Array<{ status: string; rows?: string }> };
      assert.equal(result.date, '2026-03-02');
      assert.deepEqual(
        result.files.map((f) => f.status),
        ['written'],
      );
      // A day that ended before anything of c2 was captured (its first grant is 2026-03-01) is not written: an
      // empty file would say no lock was granted that day (before: written, 0 rows, complete).
      const early = await queue.add('history-day', { date: '2026-02-20', clusters: ['c2'], datasets: ['grants', 'events'] });
      const before = (await processor(early, 'token')) as { files: Array<{ status: string }> };
      assert.deepEqual(
        before.files.map((f) => f.status),
        ['before-capture', 'before-capture'],
      );
      for (const dataset of ['grants', 'events'] as const) {
        assert.equal(await objectExists(s3, historyBucket, historyObjectName(dataset, 'c2', '2026-02-20')), false, `no ${dataset} file`);
        assert.equal(await objectExists(s3, historyBucket, manifestName(historyObjectName(dataset, 'c2', '2026-02-20'))), false, `no ${dataset} manifest`);
      }
      await queue.obliterate({ force: true });
      await queue.close();
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });

  it("refuses a day's grants history file whose grants disagree with their events, writes its other files, and does not retry", async () => {
    // c9 (a cluster no other test reads): its own grants and events; one grant's holder then altered in ClickHouse (the events untouched).
    await insertGrants(store, 'c9', 2_000, DAY1, 30_000);
    await store.command(
      `ALTER TABLE {db:Identifier}.grants UPDATE holder = 'spiffe://corp/mallory' WHERE cluster = 'c9' AND grant_revision = 1000005`,
      {},
      { mutations_sync: '2' },
    );
    const wall = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    await store.insert('events', [
      { cluster: 'c9', revision: '9000000', key: '/sys/clock', event_type: 'clock', op: 'put', wall_time: wall(DAY1 + DAY + HISTORY_SETTLE_MS), value: '{}' },
    ]);
    await store.insert('tailer_status', [
      {
        cluster: 'c9',
        cluster_id: 'x',
        leader: 'test',
        checkpoint: '9000000',
        head_revision: '9000000',
        compact_revision: '0',
        lag_revisions: '0',
        lag_seconds: 0,
        updated_at: Date.now(),
      },
    ]);
    const processor = historyProcessor({ store, config, logger, metrics: createMetricsRegistry() });
    const job = {
      data: { date: '2026-03-01', clusters: ['c9'], datasets: ['grants', 'events'] },
      timestamp: Date.now(),
      attemptsMade: 0,
      opts: { attempts: 10 },
    } as unknown as Parameters<typeof processor>[0];
    await assert.rejects(
      processor(job, 'token'),
      (err: unknown) =>
        err instanceof UnrecoverableError &&
        /c9 grants: .*grant revision 1000005 timeline 0: differs from its start event \(grant at revision 1000005\) in holder/.test((err as Error).message),
    );
    const grantsObject = historyObjectName('grants', 'c9', '2026-03-01');
    assert.equal(await objectExists(s3, historyBucket, grantsObject), false, 'no grants file');
    assert.equal(await objectExists(s3, historyBucket, manifestName(grantsObject)), false, 'no grants manifest');
    assert.deepEqual(await incompleteUploads(grantsObject), [], 'no parts left');
    assert.equal(
      await objectExists(s3, historyBucket, manifestName(historyObjectName('events', 'c9', '2026-03-01'))),
      true,
      'the events file of the day is written',
    );
  });

  it("finds when a cluster's capture began from events and grants alike; a time of 0 (1970) is a time, not none", async () => {
    const wall = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    assert.equal(await captureBegan(store, 'cz-none'), undefined, 'nothing captured');
    // Events only (no grant row of the cluster): the events' earliest time.
    await store.insert('events', [
      { cluster: 'cz-events', revision: '5', key: '/sys/clock', event_type: 'clock', op: 'put', wall_time: wall(DAY1 + 7_000), value: '{}' },
    ]);
    assert.equal(await captureBegan(store, 'cz-events'), DAY1 + 7_000);
    // Review: an insider's queue value at `at: 0` stored a 1970 wall time, which read as "no events" and moved the
    // start to the first grant, leaving every events file before it unwritten.
    await store.insert('events', [
      { cluster: 'cz-zero', revision: '5', key: '/q/ns/k/1', event_type: 'queue-enter', op: 'put', wall_time: wall(0), value: '{}' },
    ]);
    await insertGrants(store, 'cz-zero', 3, DAY1 + 1_000, 2_000);
    assert.equal(await captureBegan(store, 'cz-zero'), 0);
  });

  it('exports ≥ 1 M grants with the same row count and token checksum as ClickHouse (Parquet and CSV)', async () => {
    const request = { format: 'parquet' as const, fromMs: DAY1, toMs: DAY1 + DAY, filters: { cluster: 'c1' } };
    const out = path.join(work.dir, 'big.parquet');
    const seen: number[] = [];
    const file = await writeGrantsExport(store, request, out, { chunkRows: 300_000, onProgress: (p) => void seen.push(p.percent) });
    const expected = await grantTokenChecksum(store, { cluster: 'c1', fromMs: DAY1, toMs: DAY1 + DAY });
    assert.equal(expected.rows, '1200000');
    assert.equal(file.rows.toString(), expected.rows);
    assert.ok(seen.length >= 5 && seen.some((p) => p > 0 && p < 100), `progress was reported along the way: ${seen.join(',')}`);
    const read = await parquetTokenChecksum(out);
    assert.deepEqual({ rows: read.rows, sum: read.sum, xor: read.xor }, expected);
    assert.equal(
      createHash('sha256')
        .update(await readFile(out))
        .digest('hex'),
      file.sha256,
    );

    const csv = path.join(work.dir, 'small.csv');
    const small = await writeGrantsExport(store, { format: 'csv', fromMs: DAY1, toMs: DAY1 + DAY, filters: { cluster: 'c2', namespace: 'ns3' } }, csv, {
      chunkRows: 400,
    });
    const lines = (await readFile(csv, 'utf8')).trimEnd().split('\r\n');
    assert.equal(lines.length - 1, Number(small.rows));
    assert.equal(Number((await grantTokenChecksum(store, { cluster: 'c2', fromMs: DAY1, toMs: DAY1 + DAY })).rows) / 20, Number(small.rows));
    assert.match(lines[0] as string, /^cluster,key,namespace,.*,origin,timeline,rolled_back$/);
    const tokenAt = (lines[0] as string).split(',').indexOf('token');
    assert.ok(BigInt((lines[1] as string).split(',')[tokenAt] as string) > 2n ** 53n);
    // Times carry their zone, as the API's CSV writes them (before: "2026-03-01 00:00:01.000").
    const grantedAt = (lines[0] as string).split(',').indexOf('granted_at');
    for (const line of lines.slice(1, 50)) assert.match(line.split(',')[grantedAt] as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("exports carry each grant's origin, take the grant filter (origin, endKind) with the granted-in-[from, to) rule, and neutralise formulas in CSV as the API does", async () => {
    const hostile = '=HYPERLINK("http://evil.example/?q=1","open me")';
    const at = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    const grant = (n: number, o: { holder: string; origin: string; grantedMs: number; endedMs: number | null }) => ({
      cluster: 'c3',
      key: `ns1/k${n}`,
      namespace: 'ns1',
      lock_path: `k${n}`,
      class: 'class-1',
      holder: o.holder,
      session: '7',
      token: (40n * 2n ** 48n + BigInt(n)).toString(),
      epoch: 40,
      grant_revision: String(n),
      granted_at: at(o.grantedMs),
      wait_ms: 0,
      end_kind: o.endedMs === null ? '' : 'release',
      end_revision: o.endedMs === null ? '0' : String(n + 1),
      ended_at: o.endedMs === null ? null : at(o.endedMs),
      duration_ms: o.endedMs === null ? null : o.endedMs - o.grantedMs,
      unprotected: 0,
      start_known: 1,
      row_version: o.endedMs === null ? '0' : String(n + 1),
      origin: o.origin,
    });
    await store.insert('grants', [
      grant(1, { holder: hostile, origin: 'foreign', grantedMs: DAY1 + 1_000, endedMs: null }),
      grant(2, { holder: 'spiffe://corp/w', origin: 'api', grantedMs: DAY1 + 2_000, endedMs: DAY1 + 3_000 }),
      // Granted before the range, held into it: the API's window (overlapping) shows it; an export's (granted in [from, to)) does not.
      grant(3, { holder: 'spiffe://corp/w', origin: 'api', grantedMs: DAY1 - 1_000, endedMs: DAY1 + 5_000 }),
    ]);
    await insertGrantEvents(store, 'c3');
    const exportCsv = async (name: string, filters: Record<string, string>): Promise<string[]> => {
      const out = path.join(work.dir, name);
      const file = await writeGrantsExport(store, { format: 'csv', fromMs: DAY1, toMs: DAY1 + DAY, filters: { cluster: 'c3', ...filters } }, out);
      const lines = (await readFile(out, 'utf8')).split('\r\n').slice(0, -1);
      assert.equal(String(file.rows), String(lines.length - 1));
      return lines;
    };
    const all = await exportCsv('c3.csv', {});
    const header = (all[0] as string).split(',');
    const originAt = header.indexOf('origin');
    assert.ok(originAt > 0, header.join(','));
    assert.equal(all.length, 3, all.join('\n'));
    const foreign = all.find((l) => l.includes('HYPERLINK')) as string;
    assert.ok(foreign.includes(`"'=HYPERLINK(""http://evil.example/?q=1"",""open me"")"`), `the formula is neutralised: ${foreign}`);
    assert.ok(foreign.includes(csvLine([hostile]).trimEnd()), "the same cell as the API's CSV writes");
    assert.ok(foreign.endsWith(',foreign,0,false'), foreign);
    assert.deepEqual((await exportCsv('c3-foreign.csv', { origin: 'foreign' })).length, 2);
    assert.deepEqual(
      (await exportCsv('c3-held.csv', { endKind: 'held' })).slice(1).map((l) => l.split(',').at(originAt - header.length)),
      ['foreign'],
    );
    assert.deepEqual(
      (await exportCsv('c3-released.csv', { endKind: 'release', origin: 'api' })).slice(1).map((l) => l.split(',')[1]),
      ['ns1/k2'],
    );
  });

  it("exports keep every timeline, each row marked: two grants at one (key, grant revision), the first rolled back by a restore, and the day's events file with origin and timeline (read back by an independent Parquet reader)", async () => {
    const at = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    const day = Date.parse('2026-03-05T00:00:00Z');
    // Timeline 0 granted k at revision 9 and a restore (timeline 1, no bump) rolled it back; timeline 1 granted k at 9 again.
    const grant = (timeline: number, rolledBackBy: number, holder: string, origin: string) => ({
      cluster: 'c4',
      key: 'ns1/k',
      namespace: 'ns1',
      lock_path: 'k',
      class: 'class-1',
      holder,
      session: '7',
      token: (2n ** 48n * BigInt(timeline + 1) + 9n).toString(),
      epoch: timeline + 1,
      grant_revision: '9',
      granted_at: at(day + 1_000 + timeline),
      wait_ms: 0,
      end_kind: '',
      end_revision: '0',
      ended_at: null,
      duration_ms: null,
      unprotected: 0,
      start_known: 1,
      row_version: '0',
      origin,
      timeline,
      rolled_back_by: rolledBackBy,
      superseded_by: rolledBackBy,
    });
    await store.insert('grants', [grant(0, 1, 'spiffe://corp/old', 'api'), grant(1, 0, 'spiffe://corp/new', 'foreign')]);
    await insertGrantEvents(store, 'c4');
    const out = path.join(work.dir, 'c4.csv');
    await writeGrantsExport(store, { format: 'csv', fromMs: day, toMs: day + DAY, filters: { cluster: 'c4' } }, out);
    const [head, ...rows] = (await readFile(out, 'utf8'))
      .split('\r\n')
      .slice(0, -1)
      .map((l) => l.split(','));
    const col = (name: string) => (head as string[]).indexOf(name);
    assert.ok(col('timeline') > 0 && col('rolled_back') > 0 && col('origin') > 0, `columns: ${head?.join(',')}`);
    assert.deepEqual(
      rows.map((r) => [r[col('holder')], r[col('origin')], r[col('timeline')], r[col('rolled_back')]]),
      [
        ['spiffe://corp/old', 'api', '0', 'true'],
        ['spiffe://corp/new', 'foreign', '1', 'false'],
      ],
      "both timelines' grants, each with its timeline and whether etcd rolled it back",
    );

    // Events: the same (revision, key) in two timelines, the first rolled back; the day's Parquet history keeps both, told apart.
    const event = (timeline: number, rolledBackBy: number, origin: string) => ({
      cluster: 'c4',
      revision: '9',
      key: '/l/ns1/k',
      event_type: 'grant',
      op: 'put',
      namespace: 'ns1',
      lock_path: 'k',
      class: 'class-1',
      holder: 'h',
      session: '7',
      token: (2n ** 48n * BigInt(timeline + 1) + 9n).toString(),
      epoch: timeline + 1,
      grant_revision: '9',
      wait_ms: 0,
      wall_time: at(day + 1_000 + timeline),
      time_estimated: 0,
      time_error_ms: 0,
      create_revision: '9',
      mod_revision: '9',
      version: '1',
      lease: '7',
      value: '{}',
      prev_value: '',
      unprotected: 0,
      origin,
      timeline,
      rolled_back_by: rolledBackBy,
      superseded_by: rolledBackBy,
    });
    await store.insert('events', [event(0, 1, 'api'), event(1, 0, 'foreign')]);
    const written = await exportHistoryFile({ store, s3, bucket: historyBucket, logger, signer }, { dataset: 'events', cluster: 'c4', date: '2026-03-05' });
    assert.equal(written.manifest?.rows, '2');
    const local = path.join(work.dir, 'c4-events.parquet');
    await s3.fGetObject(historyBucket, historyObjectName('events', 'c4', '2026-03-05'), local);
    const parquet = (await import('@dsnp/parquetjs')).default;
    const reader = await parquet.ParquetReader.openFile(local);
    const got: Array<[string, number, number, number]> = [];
    try {
      const cursor = reader.getCursor([['origin'], ['timeline'], ['rolled_back_by'], ['superseded_by']]);
      type Row = { origin: string | Buffer; timeline: number; rolled_back_by: number; superseded_by: number };
      for (let r = (await cursor.next()) as Row | null; r; r = (await cursor.next()) as Row | null)
        got.push([String(r.origin), Number(r.timeline), Number(r.rolled_back_by), Number(r.superseded_by)]);
    } finally {
      await reader.close();
    }
    assert.deepEqual(got, [
      ['api', 0, 1, 1],
      ['foreign', 1, 0, 0],
    ]);
  });

  describe('API', () => {
    let app: App;
    let worker: Worker;
    const tokens: Record<string, string> = {};
    const connection = createRedis(config.redis.url, 'worker', logger);

    before(async () => {
      const runtime = { store, config, logger, metrics: createMetricsRegistry() };
      worker = new Worker(COMPLIANCE_QUEUE, complianceProcessor(runtime), { connection, prefix: queuePrefix });
      app = await buildApp({ config, logger, store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: runtime.metrics }, [
        exportRoutes({ presignSeconds: 2 }),
      ]);
      tokens.auditor = (await createApiToken(store, 'audrey@corp', ['auditor'])).token;
      tokens.investigator = (await createApiToken(store, 'ivy@corp', ['investigator'])).token;
    });
    after(async () => {
      await app.close();
      await worker.close();
      connection.disconnect();
    });

    const call = (method: 'GET' | 'POST', url: string, body?: unknown, token = tokens.auditor) =>
      app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(body === undefined ? {} : { payload: body as object }) });

    it('answers bad input with 400 naming the field, and the wrong role with 403', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{ from: 'yesterday', to: '2026-03-02' }, /body\.from/],
        [{ from: '2026-03-02', to: '2026-03-01' }, /body\.to: must be after/],
        [{ from: '2025-01-01', to: '2026-03-01' }, /body\.to: the range is longer/],
        [{ from: '2026-03-01', to: '2026-03-02', format: 'xlsx' }, /body\.format/],
        [{ from: '2026-03-01', to: '2026-03-02', filters: { owner: 'x' } }, /body\.filters\.owner: is not a known field/],
        [{ from: '2026-03-01', to: '2026-03-02', filters: { token: '12x' } }, /body\.filters\.token/],
        [{ from: '2026-03-01', to: '2026-03-02', filters: { origin: 'mars' } }, /body\.filters\.origin/],
        [{ from: '2026-03-01', to: '2026-03-02', filters: { endKind: 'vanished' } }, /body\.filters\.endKind/],
        [{ from: '2026-03-01', to: '2026-03-02', extra: 1 }, /body\.extra: is not a known field/],
        [{ to: '2026-03-02' }, /body\.from: is required/],
        // A typo'd cluster (before: 202, then an export of 0 rows, signed).
        [
          { from: '2026-03-01', to: '2026-03-02', filters: { cluster: 'nope' } },
          /body\.filters\.cluster: no etcd cluster named "nope" is configured or captured/,
        ],
      ];
      for (const [body, message] of cases) {
        const r = await call('POST', '/v1/exports', body);
        assert.equal(r.statusCode, 400, `${JSON.stringify(body)} → ${r.body}`);
        assert.match(r.json().message, message);
      }
      assert.equal((await call('GET', '/v1/exports/not-an-id')).statusCode, 400);
      assert.equal((await call('GET', `/v1/exports/exp_${'0'.repeat(32)}`)).statusCode, 404);
      assert.equal((await call('POST', '/v1/exports', { from: '2026-03-01', to: '2026-03-02' }, tokens.investigator)).statusCode, 403);
      assert.equal((await app.inject({ method: 'GET', url: `/v1/exports/exp_${'0'.repeat(32)}` })).statusCode, 401);
    });

    it('limits each caller: a range past LOCKAUDIT_EXPORT_MAX_RANGE_DAYS is 400, past LOCKAUDIT_EXPORT_MAX_ACTIVE queued or running 429, past LOCKAUDIT_EXPORT_REQUESTS_PER_HOUR 429 with Retry-After; another caller is not held up', async () => {
      // No worker on this queue: what is requested stays queued until the test marks it done.
      const limited = testConfig({
        LOCKAUDIT_S3_HISTORY_BUCKET: historyBucket,
        LOCKAUDIT_QUEUE_PREFIX: uniqueId('exlim'),
        LOCKAUDIT_EXPORT_MAX_RANGE_DAYS: '2',
        LOCKAUDIT_EXPORT_MAX_ACTIVE: '1',
        LOCKAUDIT_EXPORT_REQUESTS_PER_HOUR: '3',
      });
      const limitedApp = await buildApp(
        { config: limited, logger, store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: createMetricsRegistry() },
        [exportRoutes()],
      );
      try {
        const loop = (await createApiToken(store, uniqueId('loop@corp'), ['auditor'])).token;
        const other = (await createApiToken(store, uniqueId('other@corp'), ['auditor'])).token;
        const post = (body: unknown, token = loop) =>
          limitedApp.inject({ method: 'POST', url: '/v1/exports', headers: { authorization: `Bearer ${token}` }, payload: body as object });
        const day = { from: '2026-03-01', to: '2026-03-02' };
        const long = await post({ from: '2026-03-01', to: '2026-03-04' });
        assert.equal(long.statusCode, 400);
        assert.match(long.json().message, /body\.to: the range is longer than 2 days \(LOCKAUDIT_EXPORT_MAX_RANGE_DAYS\)/);
        const records = new ExportRecords(store);
        const finish = async (id: string): Promise<void> => {
          const state = await records.get(id);
          assert.ok(state);
          await records.update(state, { status: 'done' });
        };
        const first = await post(day);
        assert.equal(first.statusCode, 202, first.body);
        const busy = await post(day);
        assert.equal(busy.statusCode, 429, busy.body);
        assert.equal(busy.json().error, 'LOCKAUDIT_ERR_LIMIT_EXPORTS');
        assert.match(busy.json().message, /has 1 export\(s\) queued or running, the most LOCKAUDIT_EXPORT_MAX_ACTIVE \(1\) allows/);
        assert.equal((await post(day, other)).statusCode, 202, 'another caller is not held up');
        await finish(first.json().id);
        // Three requests an hour: the refused one above did not count.
        for (let i = 0; i < 2; i++) {
          const r = await post(day);
          assert.equal(r.statusCode, 202, r.body);
          await finish(r.json().id);
        }
        const flood = await post(day);
        assert.equal(flood.statusCode, 429, flood.body);
        assert.equal(flood.json().error, 'LOCKAUDIT_ERR_LIMIT_EXPORT_RATE');
        assert.ok(Number(flood.headers['retry-after']) > 0, 'Retry-After says when');
        assert.match(flood.json().message, /more than LOCKAUDIT_EXPORT_REQUESTS_PER_HOUR \(3\) export requests in an hour/);
      } finally {
        await limitedApp.close();
      }
    });

    it('runs a requested export as a job with progress; download redirects to a presigned URL that works, then expires; all recorded', async () => {
      const posted = await call('POST', '/v1/exports', {
        from: '2026-03-01T00:00:00Z',
        to: '2026-03-02T00:00:00Z',
        format: 'parquet',
        filters: { cluster: 'c2' },
      });
      assert.equal(posted.statusCode, 202, posted.body);
      const id = posted.json().id as string;
      const early = await call('GET', `/v1/exports/${id}/download`);
      assert.ok([409, 302].includes(early.statusCode));
      let status: { status: string; progress: { rows: string; total: string; percent: number }; sha256?: string; bytes?: number } | undefined;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        status = (await call('GET', `/v1/exports/${id}`)).json();
        if (status?.status === 'done' || status?.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status?.status, 'done', JSON.stringify(status));
      assert.deepEqual(status?.progress, { rows: '30000', total: '30000', percent: 100 });

      const download = await call('GET', `/v1/exports/${id}/download`);
      assert.equal(download.statusCode, 302);
      const url = download.headers.location as string;
      const res = await fetch(url);
      assert.equal(res.status, 200);
      const body = Buffer.from(await res.arrayBuffer());
      assert.equal(createHash('sha256').update(body).digest('hex'), status?.sha256);
      const file = path.join(work.dir, `${id}.parquet`);
      await writeFile(file, body);
      const read = await parquetTokenChecksum(file);
      const expected = await grantTokenChecksum(store, { cluster: 'c2', fromMs: DAY1, toMs: DAY1 + DAY });
      assert.deepEqual({ rows: read.rows, sum: read.sum, xor: read.xor }, expected);
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal((await fetch(url)).status, 403, 'the presigned URL has expired');

      const trail = await new ExportRecords(store).auditTrail(id);
      assert.deepEqual(
        trail.map((t) => [t.action, t.actor]),
        [
          ['request', 'audrey@corp'],
          ['complete', 'system'],
          ['download', 'audrey@corp'],
        ],
      );

      // Running the finished job again changes nothing.
      const state = await runComplianceExport({ store, s3, bucket: historyBucket, logger }, id);
      assert.equal(state.status, 'done');
    });

    it('offers a compliance export as an Arrow IPC stream (format=arrow): chunks joined into one stream, downloaded, read by apache-arrow with tokens exact', async () => {
      // Requested through the API, run by the job.
      const posted = await call('POST', '/v1/exports', {
        from: '2026-03-01T00:00:00Z',
        to: '2026-03-02T00:00:00Z',
        format: 'arrow',
        filters: { cluster: 'c2' },
      });
      assert.equal(posted.statusCode, 202, posted.body);
      let status: { status: string; format: string; progress: { rows: string } } | undefined;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        status = (await call('GET', `/v1/exports/${posted.json().id as string}`)).json();
        if (status?.status === 'done' || status?.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status?.status, 'done', JSON.stringify(status));
      assert.equal(status?.format, 'arrow');
      assert.equal(status?.progress.rows, '30000');

      // And one run here with small chunks: five ClickHouse ArrowStream outputs joined into one stream.
      const { id } = await new ExportRecords(store).create({
        format: 'arrow',
        fromMs: DAY1,
        toMs: DAY1 + DAY,
        filters: { cluster: 'c2' },
        requestedBy: 'audrey@corp',
      });
      const done = await runComplianceExport({ store, s3, bucket: historyBucket, logger, chunkRows: 7_000 }, id);
      assert.equal(done.status, 'done');
      assert.match(done.objectKey, /\.arrow$/);
      const manifest = parseManifest(await readObjectText(s3, historyBucket, manifestName(done.objectKey)));
      assert.equal(manifest?.format, 'arrow');
      assert.equal(manifest?.rows, '30000');

      const download = await call('GET', `/v1/exports/${id}/download`);
      assert.equal(download.statusCode, 302);
      const res = await fetch(download.headers.location as string);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/vnd.apache.arrow.stream');
      const body = Buffer.from(await res.arrayBuffer());
      assert.equal(createHash('sha256').update(body).digest('hex'), done.sha256);
      assert.equal(body.length, done.bytes);

      const table = tableFromIPC(body);
      assert.equal(table.numRows, 30_000);
      assert.equal(String(table.schema.fields.find((f) => f.name === 'token')?.type), 'Uint64');
      const tokens = table.getChild('token');
      assert.ok(tokens);
      let sum = 0n;
      let xor = 0n;
      for (const t of tokens) {
        sum += t as bigint;
        xor ^= t as bigint;
      }
      assert.ok((tokens.get(0) as bigint) > 2n ** 53n, 'tokens above 2^53 come back exact');
      assert.deepEqual(
        { rows: String(table.numRows), sum: sum.toString(), xor: xor.toString() },
        await grantTokenChecksum(store, { cluster: 'c2', fromMs: DAY1, toMs: DAY1 + DAY }),
      );
      assert.deepEqual(table.schema.fields.map((f) => f.name).slice(0, 3), ['cluster', 'key', 'namespace']);
    });

    it('binds an export to the scope that made it: a scoped token exports its scope only, and another scope reads its id as none', async () => {
      const scoped = async (identity: string, scope: { namespaces: string[]; clusters: string[] }): Promise<string> =>
        (await createApiToken(store, uniqueId(identity), ['auditor'], { scope })).token;
      const team = await scoped('pat@payments', { namespaces: ['ns3', 'ns7'], clusters: ['c2'] });
      const narrower = await scoped('nat@payments', { namespaces: ['ns3'], clusters: [] });
      const day = { from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00Z', format: 'csv' };
      // Naming something outside the scope is a 403 naming the field and the scope, before anything is queued.
      for (const [filters, field] of [
        [{ namespace: 'ns4' }, /body\.filters\.namespace: namespace ns4 is outside this token's scope \(it reads only namespaces ns3, ns7 and clusters c2\)/],
        [{ cluster: 'c1' }, /body\.filters\.cluster: cluster c1 is outside/],
        [{ key: 'ns5/key-5' }, /body\.filters\.key: namespace ns5 is outside/],
      ] as const) {
        const refused = await call('POST', '/v1/exports', { ...day, filters }, team);
        assert.equal(refused.statusCode, 403, refused.body);
        assert.equal(refused.json().error, 'LOCKAUDIT_ERR_AUTH_SCOPE');
        assert.match(refused.json().message, field);
      }
      const posted = await call('POST', '/v1/exports', day, team);
      assert.equal(posted.statusCode, 202, posted.body);
      assert.deepEqual(posted.json().narrowedTo, { namespaces: ['ns3', 'ns7'], clusters: ['c2'] }, 'the 202 says the export was narrowed');
      const id = posted.json().id as string;
      let status: { status: string; scope?: unknown; progress: { rows: string } } | undefined;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        status = (await call('GET', `/v1/exports/${id}`, undefined, team)).json();
        if (status?.status === 'done' || status?.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status?.status, 'done', JSON.stringify(status));
      assert.deepEqual(status?.scope, { namespaces: ['ns3', 'ns7'], clusters: ['c2'] });
      const [expected] = await store.rows<{ n: string }>(
        `SELECT toString(count()) AS n FROM {db:Identifier}.grants FINAL
         WHERE cluster = 'c2' AND namespace IN ('ns3', 'ns7') AND granted_at >= fromUnixTimestamp64Milli({from:Int64}) AND granted_at < fromUnixTimestamp64Milli({to:Int64})`,
        { from: DAY1, to: DAY1 + DAY },
      );
      assert.ok(Number(expected?.n) > 0);
      assert.equal(status?.progress.rows, expected?.n);

      const download = await call('GET', `/v1/exports/${id}/download`, undefined, team);
      assert.equal(download.statusCode, 302, download.body);
      const lines = (await (await fetch(download.headers.location as string)).text()).trimEnd().split('\r\n');
      const header = (lines[0] as string).split(',');
      const rows = lines.slice(1).map((l) => l.split(','));
      assert.equal(String(rows.length), expected?.n);
      assert.deepEqual([...new Set(rows.map((r) => `${r[header.indexOf('cluster')]}:${r[header.indexOf('namespace')]}`))].sort(), ['c2:ns3', 'c2:ns7']);
      const manifest = await call('GET', `/v1/exports/${id}/manifest`, undefined, team);
      assert.equal(manifest.statusCode, 200);
      assert.deepEqual(manifest.json().scope, { namespaces: ['ns3', 'ns7'], clusters: ['c2'] }, "the manifest carries the export's scope");

      // A scope that does not cover the export (ns7 is outside it) reads its id as one that does not exist; an unscoped auditor reads it.
      for (const url of [`/v1/exports/${id}`, `/v1/exports/${id}/download`, `/v1/exports/${id}/manifest`]) {
        const hidden = await call('GET', url, undefined, narrower);
        assert.equal(hidden.statusCode, 404, `${url}: ${hidden.body}`);
        assert.equal(hidden.json().message, `no export ${id}`);
      }
      assert.equal((await call('GET', `/v1/exports/${id}`)).statusCode, 200);
      // And an unscoped export (every namespace) is none to any scoped token.
      const whole = await new ExportRecords(store).create({ format: 'csv', fromMs: DAY1, toMs: DAY1 + DAY, filters: {}, requestedBy: 'audrey@corp' });
      assert.equal((await call('GET', `/v1/exports/${whole.id}`, undefined, team)).statusCode, 404);
      assert.equal((await call('GET', `/v1/exports/${whole.id}`)).statusCode, 200);
      await new ExportRecords(store).update(whole, { status: 'failed', error: 'test: never run' });
    });
  });
});
