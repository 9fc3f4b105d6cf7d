// The digests over a long run of one-second periods (issue 40, Done when): a
// record that lived through what operation brings — an etcd restore reaching
// back past the worker's look-back, a fail-open spool shipped late, a history
// file the lifecycle rule expired — verifies clean; then each attack of an
// insider who can write the store or the bucket, one after the other, makes
// `verify` FAIL naming its period (and only the periods attacked so far).
// A period holds the changes after the clock write that ended the one before
// (exporters/digests/format.ts): revision CLOCK_REVISION(k) + 1 is period k + 1's.
// Real chdb and MinIO.
import assert from 'node:assert/strict';
import { createPublicKey, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { keyringOf, generateDigestSigner } from '../../core/digestKey.js';
import { createLogger } from '../../core/logger.js';
import { restoreGapMac } from '../../core/proof.js';
import { createS3Client } from '../../core/s3.js';
import { readChain, DigestWorker } from '../../exporters/digests/worker.js';
import { formatVerifyResult, verifyDigests, type DigestVerifyResult } from '../../exporters/digests/verify.js';
import { exportHistoryFile, formatDay } from '../../exporters/history/parquetHistory.js';
import { ensureHistoryBucket } from '../../platform/buckets.js';
import { HealthState } from '../../platform/health.js';
import { recordGap } from '../../tailer/recovery/gaps.js';
import { recordTimeline, rollBack } from '../../tailer/recovery/restores.js';
import { writeRows } from '../../tailer/sink/rowWriter.js';
import { spoolRows } from '../../tailer/sink/spoolShipper.js';
import { CLOCK_REVISION, seedDigestRecord } from '../support/digestRecord.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const config = testConfig();
const s3 = createS3Client(config.s3);
const logger = createLogger('silent');
const signer = generateDigestSigner();
const publicKey = createPublicKey(signer.publicKeyPem);
const keyring = keyringOf([publicKey]);
const secret = randomBytes(32);
const SECONDS = 40;
const LOOKBACK = 3;
const DAY = 86_400_000;

describe('digests over a long run of one-second periods', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  before(async () => ({ store, close: closeStore } = await tempStore()));
  after(async () => closeStore());

  it('legitimate history verifies clean (a restore past the look-back, a late spool, an expired history file); each attack FAILs naming its period', async () => {
    const cluster = uniqueId('dl');
    // Whole seconds, an hour back, never across a UTC midnight (one history file).
    let startMs = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;
    if (startMs % DAY > DAY - 900_000) startMs -= 900_000;
    const bucket = uniqueId('dlarch-');
    const historyBucket = uniqueId('dlhist-');
    await s3.makeBucket(bucket, config.s3.region);
    await ensureHistoryBucket(s3, { ...config.s3, historyBucket });
    await seedDigestRecord(store, cluster, startMs, SECONDS);
    const history = await exportHistoryFile({ store, s3, bucket: historyBucket, logger, signer }, { dataset: 'events', cluster, date: formatDay(startMs) });
    const health = new HealthState();
    const worker = new DigestWorker({
      cluster,
      store,
      s3,
      bucket,
      historyBucket,
      signer,
      logger,
      periodMs: 1000,
      settleMs: 0,
      lookbackPeriods: LOOKBACK,
      alarmAfterPeriods: 2,
      allowUnlocked: true,
      health,
      tailerSecret: secret,
    });
    const period = (i: number): string => new Date(startMs + i * 1000).toISOString();
    const verify = (nowMs = Date.now()): Promise<DigestVerifyResult> =>
      verifyDigests({
        s3,
        bucket,
        keyring,
        clusters: [cluster],
        fromMs: startMs,
        store,
        settleMs: 0,
        periodMs: 1000,
        tailerSecret: secret,
        now: () => nowMs,
        recheckMs: 100,
      });
    const failing = (r: DigestVerifyResult): string[] => r.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart);
    assert.equal((await worker.tick()).written, SECONDS - 1, 'every period but the last, which no later clock write seals');

    // Operation 1: etcd restored to second 5's clock, detected now — 35 periods back, far past the look-back of 3.
    const divergedAfter = BigInt(CLOCK_REVISION(5));
    const detectedAt = Date.now();
    const signed = {
      cluster,
      generation: 1,
      fromRevision: String(divergedAfter + 1n),
      toRevision: String(CLOCK_REVISION(SECONDS) + 5),
      detectedAtMs: detectedAt,
      historyLost: 0,
      previousClusterId: 'c0',
      clusterId: 'c0',
    };
    await recordGap(store, {
      cluster,
      from_revision: signed.fromRevision,
      to_revision: signed.toRevision,
      detected_at: detectedAt,
      reason: 'restore (long run)',
      kind: 'restore',
      history_lost: 0,
      generation: 1,
      previous_cluster_id: 'c0',
      cluster_id: 'c0',
      term: '1',
      proof: restoreGapMac(secret, signed),
    });
    await rollBack(store, cluster, divergedAfter, 1, 1, 1n);
    await recordTimeline(store, {
      cluster,
      generation: 1,
      seen: { head: divergedAfter, clusterId: 'c0', previousClusterId: 'c0', why: 'restore (long run)', captured: BigInt(CLOCK_REVISION(SECONDS) + 5) },
      previousCheckpoint: BigInt(CLOCK_REVISION(SECONDS) + 5),
      divergedAfter,
      resumeRevision: divergedAfter,
      sharesHistory: true,
    });
    const restored = await worker.tick();
    assert.ok(restored.superseded >= SECONDS - 6 - LOOKBACK, `the periods the restore marked are re-signed however old (${restored.superseded})`);
    // Operation 2: an unprotected grant of period 20 shipped from a fail-open spool after sealing.
    const line = {
      id: 'n1:000020',
      lock: 'ns/spooled',
      namespace: 'ns',
      path: 'spooled',
      holder: 'spiffe://corp/spool',
      session: '',
      class: 'class-1',
      at: startMs + 20_300,
      waitMs: 0,
      epoch: 0,
    };
    const { event, grant } = spoolRows(cluster, line);
    await writeRows(store, { events: [event], grants: [grant], quarantine: [] });
    assert.equal((await worker.tick()).superseded, 1);
    assert.equal(
      health.alarms().some((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_CHANGED'),
      false,
      JSON.stringify(health.alarms()),
    );
    // Operation 3: a year and a month on, the lifecycle rule took the day's history file.
    assert.ok(history, "the day's history file was written");
    const d1 = (await readChain(s3, bucket, cluster)).find((e) => e.digest?.seq === 1)?.digest;
    const named = d1?.history[0];
    assert.ok(named, "the first digest names the day's history file");
    await s3.removeObject(historyBucket, named.object);
    const later = Date.now() + 400 * DAY;

    const clean = await verify(later);
    assert.equal(clean.verdict, 'ok', formatVerifyResult(clean).join('\n'));
    assert.equal(clean.exitCode, 0);
    const lines = formatVerifyResult(clean).join('\n');
    assert.match(lines, /supersedes seq \d+: changed after sealing: restore 1 marked \d+ row\(s\) rolled back/);
    assert.match(lines, /late spool: 1 unprotected grant line\(s\)/);
    assert.equal(clean.periods.find((p) => p.periodStart === period(0))?.status, 'expired');
    assert.equal(
      clean.grants.every((g) => g.status === 'ok'),
      true,
    );

    // Attack 1: the same history file missing, by today's clock: taken before the rule could have — tampered, period 0.
    const early = await verify();
    assert.deepEqual(failing(early), [period(0)], formatVerifyResult(early).join('\n'));
    assert.equal(early.exitCode, 1);
    // Attack 2: a sealed event of period 30 (rolled back by the restore) edited in the store.
    await store.command(
      `ALTER TABLE {db:Identifier}.events UPDATE holder = 'spiffe://corp/mallory' WHERE cluster = {c:String} AND revision = {r:UInt64}`,
      { c: cluster, r: CLOCK_REVISION(29) + 1 },
      { mutations_sync: '2' },
    );
    assert.equal((await worker.tick()).superseded, 0, 'never re-signed');
    assert.deepEqual(failing(await verify(later)), [period(30)]);
    // Attack 3: a row added to period 12 with a fresh ingested_at (no restore or spool explains it).
    await store.insert('events', [
      {
        cluster,
        revision: String(CLOCK_REVISION(11) + 4),
        key: '/l/ns/added',
        event_type: 'queue-enter',
        op: 'put',
        wall_time: new Date(startMs + 12_700).toISOString().replace('T', ' ').replace('Z', ''),
        value: '{}',
      },
    ]);
    assert.equal((await worker.tick()).superseded, 0, 'never re-signed');
    assert.deepEqual(failing(await verify(later)), [period(12), period(30)]);
    // Attack 4: the restore's marks taken off period 8's rows (they read as current again).
    await store.command(
      `INSERT INTO {db:Identifier}.events SELECT * REPLACE (0 AS rolled_back_by, 0 AS superseded_by, term + 1 AS term, now64(3) AS ingested_at)
       FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision > {lo:UInt64} AND revision <= {hi:UInt64} AND timeline = 0`,
      { c: cluster, lo: CLOCK_REVISION(7), hi: CLOCK_REVISION(7) + 3 },
    );
    assert.equal((await worker.tick()).superseded, 0, 'never re-signed');
    const last = await verify(later);
    assert.deepEqual(failing(last), [period(8), period(12), period(30)], formatVerifyResult(last).join('\n'));
    assert.equal(last.verdict, 'tampered');
  });
});
