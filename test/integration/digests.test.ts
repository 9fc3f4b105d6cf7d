// Tamper-evident digests (issue 25) against real MinIO and chdb, attacked:
// a digest removed (a delete marker in the locked bucket), two adjacent ones
// removed, one replaced by a digest signed by another key, a Parquet history
// object deleted, a row altered in ClickHouse, a compliance export truncated
// — each named by the verifier at the period it sits in. A late change gets
// a superseding digest; a worker killed with SIGKILL mid-run and run again
// skips no period.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AuditStore } from '../../core/clickhouse.js';
import { keyringOf, generateDigestSigner, signerFromPrivateKey } from '../../core/digestKey.js';
import { createLogger } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';
import { createS3Client } from '../../core/s3.js';
import { ExportRecords, runComplianceExport } from '../../exporters/compliance/complianceExport.js';
import { digestObjectName, signDigest, walkChain, type Digest, type DigestBody } from '../../exporters/digests/format.js';
import { formatVerifyResult, verifyDigests } from '../../exporters/digests/verify.js';
import { assertGrantsMatchEvents } from '../../exporters/checks/grantsCheck.js';
import { DigestWorker, readChain } from '../../exporters/digests/worker.js';
import { hashPeriodEvents } from '../../exporters/digests/periodContent.js';
import { restoreGapMac } from '../../core/proof.js';
import { recordGap } from '../../tailer/recovery/gaps.js';
import { writeRows } from '../../tailer/sink/rowWriter.js';
import { spoolRows } from '../../tailer/sink/spoolShipper.js';
import { recordTimeline, rollBack } from '../../tailer/recovery/restores.js';
import { manifestName } from '../../exporters/storage/manifest.js';
import { readObjectText } from '../../exporters/storage/objectStore.js';
import { exportHistoryFile, formatDay } from '../../exporters/history/parquetHistory.js';
import { ensureArchiveBucket, ensureHistoryBucket } from '../../platform/buckets.js';
import { HealthState } from '../../platform/health.js';
import { insertGrants } from '../support/exportData.js';
import { CLOCK_REVISION, seedDigestRecord } from '../support/digestRecord.js';
import { tempDir, tempStore, testConfig, uniqueId } from '../support/env.js';
import { startStoreProcess } from '../support/storeProcess.js';

const config = testConfig();
const s3 = createS3Client(config.s3);
const logger = createLogger('silent');
const signer = generateDigestSigner();
const publicKey = createPublicKey(signer.publicKeyPem);
const keyring = keyringOf([publicKey]);
// Whole seconds, an hour back, never across a UTC midnight (one history file per scenario).
const dayMs = 86_400_000;
const baseMs = (): number => {
  const b = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;
  return b % dayMs > dayMs - 900_000 ? b - 900_000 : b;
};

const sqlTime = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

describe('tamper-evident digests', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  const historyBucket = uniqueId('dghist-');

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    await ensureHistoryBucket(s3, { ...config.s3, historyBucket });
  });
  after(async () => closeStore());

  /** A fail-open spool line shipped late, as the spool shipper writes it: its event and its grant row. */
  async function shipLate(cluster: string, id: string, atMs: number): Promise<void> {
    const { event, grant } = spoolRows(cluster, {
      id,
      lock: 'ns/spooled',
      namespace: 'ns',
      path: 'spooled',
      holder: 'spiffe://corp/spool',
      session: '',
      class: 'class-1',
      at: atMs,
      waitMs: 0,
      epoch: 0,
    });
    await writeRows(store, { events: [event], grants: [grant], quarantine: [] });
  }

  /** A cluster of its own with `seconds` of record, an archive bucket (locked or not) and a worker. */
  async function scenario(seconds: number, options: { locked?: boolean; history?: boolean; health?: HealthState; maxPeriodsPerRun?: number } = {}) {
    const cluster = uniqueId('dg');
    const startMs = baseMs();
    const bucket = uniqueId('dgarch-');
    if (options.locked) await ensureArchiveBucket(s3, bucket, config.s3.region);
    else await s3.makeBucket(bucket, config.s3.region);
    await seedDigestRecord(store, cluster, startMs, seconds);
    if (options.history)
      await exportHistoryFile({ store, s3, bucket: historyBucket, logger, signer }, { dataset: 'events', cluster, date: formatDay(startMs) });
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
      lookbackPeriods: 1000,
      alarmAfterPeriods: 2,
      allowUnlocked: !options.locked,
      health: options.health,
      ...(options.maxPeriodsPerRun ? { maxPeriodsPerRun: options.maxPeriodsPerRun } : {}),
    });
    const verify = async (opts: { toMs?: number; db?: boolean } = {}) =>
      verifyDigests({
        s3,
        bucket,
        keyring,
        clusters: [cluster],
        fromMs: startMs,
        toMs: opts.toMs,
        store: opts.db === false ? undefined : store,
        settleMs: 0,
        periodMs: 1000,
        recheckMs: 100,
      });
    const period = (i: number): string => new Date(startMs + i * 1000).toISOString();
    return { cluster, startMs, bucket, worker, verify, period, object: (seq: number) => digestObjectName(cluster, seq) };
  }

  it('seals every period once into COMPLIANCE-locked objects; verify passes with one line per period; a removed digest (a delete marker) is named', async () => {
    const sc = await scenario(12, { locked: true });
    const first = await sc.worker.tick();
    assert.equal(first.written, 11, 'periods 0..10 are sealed (the last clock write seals up to its second)');
    assert.equal(first.behind, 0);
    assert.equal((await sc.worker.tick()).written, 0, 'a second run writes nothing');
    const stat = await s3.statObject(sc.bucket, sc.object(1));
    const retention = (await s3.getObjectRetention(sc.bucket, sc.object(1), { versionId: stat.versionId as string })) as { mode: string };
    assert.equal(retention.mode, 'COMPLIANCE');
    const ok = await sc.verify();
    assert.equal(ok.ok, true, formatVerifyResult(ok).join('\n'));
    assert.equal(ok.periods.length, 11);
    assert.deepEqual(
      ok.periods.map((p) => p.events),
      ['1', ...Array(10).fill('4')],
    );
    assert.equal(formatVerifyResult(ok).length, 13, 'one line per period, one for the grants and a summary');

    // Remove digest seq 5 (period 4): on a locked bucket that stacks a delete marker.
    await s3.removeObject(sc.bucket, sc.object(5));
    const r = await sc.verify();
    assert.equal(r.ok, false);
    assert.equal(r.firstFailure?.periodStart, sc.period(4));
    assert.match(r.firstFailure?.detail ?? '', /digest seq 5 is missing/);
    assert.ok(
      r.problems.some((p) => /delete marker/.test(p.detail)),
      'the delete marker is named',
    );
    assert.deepEqual(
      r.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart),
      [sc.period(4)],
    );
  });

  it('names two adjacent removed digests, and a removed last digest when verify is asked up to it', async () => {
    const sc = await scenario(10);
    await sc.worker.tick();
    await s3.removeObject(sc.bucket, sc.object(4));
    await s3.removeObject(sc.bucket, sc.object(5));
    const r = await sc.verify();
    assert.equal(r.firstFailure?.periodStart, sc.period(3));
    assert.match(r.firstFailure?.detail ?? '', /digests seq 4–5 are missing/);
    assert.deepEqual(
      r.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart),
      [sc.period(3), sc.period(4)],
    );
    // The chain's tail: nothing links after it, so the range (and the database's sealing) says it is due.
    await s3.removeObject(sc.bucket, sc.object(9));
    const tail = await sc.verify({ toMs: sc.startMs + 9000 });
    const last = tail.periods.find((p) => p.periodStart === sc.period(8));
    assert.equal(last?.status, 'fail');
    assert.match(last?.problems.join() ?? '', /no digest, though the period is sealed/);
  });

  it('lockaudit verify prints one line per period, exits 0 on an intact chain and 1 naming the first failing period', async () => {
    const sc = await scenario(7);
    await sc.worker.tick();
    const tmp = tempDir('lockaudit-verify-cli-');
    try {
      const keyFile = path.join(tmp.dir, 'key.pem');
      writeFileSync(keyFile, signer.publicKeyPem);
      const cli = () =>
        spawnSync(
          process.execPath,
          ['bin/lockaudit.js', 'verify', '--from', new Date(sc.startMs).toISOString(), '--cluster', sc.cluster, '--public-key', keyFile, '--no-database'],
          {
            cwd: projectRoot,
            encoding: 'utf8',
            env: { ...process.env, LOCKAUDIT_S3_ARCHIVE_BUCKET: sc.bucket, LOCKAUDIT_DATA_DIR: tmp.dir },
          },
        );
      const good = cli();
      assert.equal(good.status, 0, good.stdout + good.stderr);
      const lines = good.stdout.trimEnd().split('\n');
      assert.equal(lines.filter((l) => l.startsWith('ok  ')).length, 6, good.stdout);
      assert.match(lines.at(-1) ?? '', /verified 6 period\(s\)/);
      await s3.removeObject(sc.bucket, sc.object(3));
      const bad = cli();
      assert.equal(bad.status, 1, bad.stdout + bad.stderr);
      assert.match(bad.stdout, new RegExp(`^FAIL  ${sc.cluster} ${sc.period(2).replace(/[.]/g, '\\.')}\\.\\.\\S+: digest seq 3 is missing`, 'm'));
      assert.match(bad.stdout.trimEnd().split('\n').at(-1) ?? '', new RegExp(`^first failing period: ${sc.cluster} ${sc.period(2).replace(/[.]/g, '\\.')}`));
      // A cluster without a single digest in the range: nothing was checked, so it fails.
      const empty = uniqueId('dgempty-');
      await s3.makeBucket(empty, config.s3.region);
      const none = spawnSync(
        process.execPath,
        ['bin/lockaudit.js', 'verify', '--from', new Date(sc.startMs).toISOString(), '--cluster', sc.cluster, '--public-key', keyFile, '--no-database'],
        {
          cwd: projectRoot,
          encoding: 'utf8',
          env: { ...process.env, LOCKAUDIT_S3_ARCHIVE_BUCKET: empty, LOCKAUDIT_DATA_DIR: tmp.dir },
        },
      );
      assert.equal(none.status, 1, none.stdout + none.stderr);
      assert.match(none.stdout, new RegExp(`^FAIL  ${sc.cluster} chain: no period verified`, 'm'));
      assert.doesNotMatch(none.stdout, /chain intact/);
      const flags = spawnSync(process.execPath, ['bin/lockaudit.js', 'verify', '--from', 'yesterday'], { cwd: projectRoot, encoding: 'utf8' });
      assert.equal(flags.status, 2);
      assert.match(flags.stderr, /--from: "yesterday" is not a date/);
    } finally {
      tmp.remove();
    }
  });

  it('names a digest replaced by one signed by another key', async () => {
    const sc = await scenario(8);
    await sc.worker.tick();
    const original = JSON.parse(await readObjectText(s3, sc.bucket, sc.object(3))) as Digest;
    const other = generateDigestSigner();
    const { hash: _h, signature: _s, ...body } = original;
    const forged = signDigest({ ...(body as DigestBody), events: { ...original.events, count: '0' }, keyId: other.keyId }, other);
    await s3.putObject(sc.bucket, sc.object(3), Buffer.from(JSON.stringify(forged)));
    const r = await sc.verify({ db: false });
    assert.equal(r.firstFailure?.periodStart, sc.period(2));
    assert.match(r.firstFailure?.detail ?? '', /signed by another key/);
    // The next digest's link no longer matches either.
    assert.ok(r.periods.find((p) => p.periodStart === sc.period(3))?.problems.some((p) => /previous hash/.test(p)));
  });

  it('the worker does not build on a forged next digest put into the bucket: it raises LOCKAUDIT_ALARM_DIGEST_CHAIN_INVALID and stops sealing the cluster', async () => {
    const health = new HealthState();
    const sc = await scenario(8, { health, maxPeriodsPerRun: 3 });
    assert.equal((await sc.worker.tick()).written, 3);
    const head = JSON.parse(await readObjectText(s3, sc.bucket, sc.object(3))) as Digest;
    // An attacker with bucket write access takes the next name first: linked to the real head, covering until 2100, signed by a key of their own.
    const mallory = generateDigestSigner();
    const { hash: _h, signature: _s, ...body } = head;
    const far = { timeline: '0', revision: '9000000000' };
    const fake = signDigest(
      {
        ...(body as DigestBody),
        seq: 4,
        prevHash: head.hash,
        periodStart: head.periodEnd,
        periodEnd: '2100-01-01T00:00:00.000Z',
        events: { ...head.events, after: head.events.through, through: far },
        keyId: mallory.keyId,
      },
      mallory,
    );
    await s3.putObject(sc.bucket, sc.object(4), Buffer.from(JSON.stringify(fake)));
    // Its own write of seq 4 fails, it re-reads the chain and must refuse it rather than adopt it as head.
    await assert.rejects(sc.worker.tick(), /digest chain of .* is invalid/);
    const invalid = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_CHAIN_INVALID');
    assert.match(invalid?.message ?? '', /000000000004\.json: signed by another key/);
    // Still stopped on the next run, and nothing was written after the forgery.
    await assert.rejects(sc.worker.tick(), /is invalid/);
    assert.deepEqual(
      (await readChain(s3, sc.bucket, sc.cluster)).map((e) => e.digest?.seq),
      [1, 2, 3, 4],
    );
  });

  it("fails a period left unsealed long after it ended (recent /sys/clock rows deleted to halt sealing), by the verifier's clock", async () => {
    const sc = await scenario(10);
    // Halt sealing before the worker runs: every clock write from second 5 on is gone.
    await store.command(
      `ALTER TABLE {db:Identifier}.events DELETE WHERE cluster = {cluster:String} AND key = '/sys/clock' AND revision >= {revision:UInt64}`,
      { cluster: sc.cluster, revision: CLOCK_REVISION(5) },
      { mutations_sync: '2' },
    );
    await sc.worker.tick();
    const toMs = sc.startMs + 9000;
    const r = await sc.verify({ toMs });
    assert.equal(r.ok, false, formatVerifyResult(r).join('\n'));
    const halted = r.periods.filter((p) => p.problems.some((x) => /not sealed \d+ s after it ended/.test(x)));
    assert.ok(halted.length > 0, formatVerifyResult(r).join('\n'));
    // Sealing stopped, nothing tampered: its own verdict and exit code.
    assert.ok(halted.every((p) => p.status === 'stalled'));
    assert.equal(r.verdict, 'stalled');
    assert.equal(r.exitCode, 3);
    assert.equal(r.firstFailure?.periodStart, halted[0]?.periodStart);
    // Judged by the verifier's clock: just after the range ended, the same periods are only open.
    const fresh = await verifyDigests({
      s3,
      bucket: sc.bucket,
      keyring,
      clusters: [sc.cluster],
      fromMs: sc.startMs,
      toMs,
      store,
      settleMs: 0,
      periodMs: 1000,
      now: () => toMs + 1000,
    });
    assert.equal(fresh.ok, true, formatVerifyResult(fresh).join('\n'));
    assert.ok(fresh.periods.some((p) => p.status === 'unsealed'));
  });

  it('a /sys/clock row written around the tailer (origin foreign, claiming 2299) seals nothing', async () => {
    const sc = await scenario(10);
    // The tailer's own clock writes stop at second 5; an insider's unproven one follows (tailer/decode/decoder.ts records it foreign).
    await store.command(
      `ALTER TABLE {db:Identifier}.events DELETE WHERE cluster = {cluster:String} AND key = '/sys/clock' AND revision >= {revision:UInt64}`,
      { cluster: sc.cluster, revision: CLOCK_REVISION(5) },
      { mutations_sync: '2' },
    );
    await store.insert('events', [
      {
        cluster: sc.cluster,
        revision: String(CLOCK_REVISION(5)),
        key: '/sys/clock',
        event_type: 'clock',
        op: 'put',
        origin: 'foreign',
        wall_time: '2299-01-01 00:00:00.000',
        value: '{"at":10445875200000}',
      },
    ]);
    const r = await sc.worker.tick();
    // Sealed only up to the last proven write (second 4); counted, the forged row sealed all ten periods and more.
    assert.equal(r.written, 4, 'periods 0..3 are sealed, as with no clock row after second 4');
  });

  it("one clock row an hour ahead (a tailer host whose clock jumped, or a row written into the store) seals no period ahead of the worker's clock, and is alarmed", async () => {
    const health = new HealthState();
    const sc = await scenario(10, { health });
    // A proven-looking clock put (origin api), captured below the checkpoint, dated an hour ahead.
    await store.insert('events', [
      {
        cluster: sc.cluster,
        revision: String(CLOCK_REVISION(9) + 5),
        key: '/sys/clock',
        event_type: 'clock',
        op: 'put',
        origin: 'api',
        wall_time: sqlTime(Date.now() + 3_600_000),
        value: '{}',
      },
    ]);
    const r = await sc.worker.tick();
    // Before: the row sealed every period up to an hour ahead (1 000 a run). Now: only those the record's own clocks seal.
    assert.equal(r.written, 9);
    const raised = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_CLOCK_AHEAD');
    assert.ok(raised, JSON.stringify(health.alarms()));
    assert.match(raised.message, /1 captured \/sys\/clock write\(s\) of .* the newest 3[56]\d\d s ahead/);
    assert.equal((await sc.worker.tick()).written, 0, 'the next run seals nothing more either');
    const v = await sc.verify();
    assert.equal(v.ok, true, formatVerifyResult(v).join('\n'));
  });

  it("verify fails a chain sealed ahead of time (by a worker whose clock ran ahead): the period ends after the verifier's clock, signed before it ended", async () => {
    const cluster = uniqueId('dg');
    const bucket = uniqueId('dgarch-');
    await s3.makeBucket(bucket, config.s3.region);
    const P = 600_000;
    // The present's period Q, at least 5 s into it (so the clock written "now" is in it).
    if (Date.now() % P < 5_000) await new Promise((resolve) => setTimeout(resolve, 5_000 - (Date.now() % P)));
    const nowMs = Date.now();
    const Q = Math.floor(nowMs / P) * P;
    const startMs = Q - 2 * P;
    await seedDigestRecord(store, cluster, startMs, 3);
    // The tailer's heartbeat now (seals the two periods that ended), then one dated 11 minutes ahead.
    await store.insert('events', [
      {
        cluster,
        revision: String(CLOCK_REVISION(2) + 4),
        key: '/sys/clock',
        event_type: 'clock',
        op: 'put',
        origin: 'api',
        wall_time: sqlTime(nowMs),
        value: '{}',
      },
      {
        cluster,
        revision: String(CLOCK_REVISION(2) + 5),
        key: '/sys/clock',
        event_type: 'clock',
        op: 'put',
        origin: 'api',
        wall_time: sqlTime(nowMs + 11 * 60_000),
        value: '{}',
      },
    ]);
    const worker = (clock: () => number) =>
      new DigestWorker({
        cluster,
        store,
        s3,
        bucket,
        historyBucket,
        signer,
        logger,
        periodMs: P,
        settleMs: 0,
        lookbackPeriods: 10,
        alarmAfterPeriods: 2,
        allowUnlocked: true,
        now: clock,
      });
    assert.equal((await worker(Date.now).tick()).written, 2, 'by its own clock the worker seals only the periods that ended');
    const ahead = await worker(() => Date.now() + 11 * 60_000).tick();
    assert.ok(ahead.written >= 1, 'a worker whose clock runs 11 minutes ahead seals the period holding the present');
    const v = await verifyDigests({ s3, bucket, keyring, clusters: [cluster], fromMs: startMs, store, settleMs: 0, periodMs: P });
    assert.equal(v.ok, false);
    const bad = v.periods.find((p) => p.status === 'fail');
    assert.equal(bad?.periodStart, new Date(Q).toISOString(), formatVerifyResult(v).join('\n'));
    assert.ok(
      bad?.problems.some((p) => /before its period ended/.test(p)) && bad.problems.some((p) => /ends after this verifier's clock/.test(p)),
      bad?.problems.join('; '),
    );
  });

  it("verify fails a chain that stopped advancing while the store's clock writes seal periods after it", async () => {
    const sc = await scenario(10, { maxPeriodsPerRun: 3 });
    assert.equal((await sc.worker.tick()).written, 3); // then the worker stops
    const r = await sc.verify();
    assert.equal(r.ok, false, formatVerifyResult(r).join('\n'));
    assert.match(
      r.problems.map((p) => p.detail).join('\n'),
      /the chain ends at .*, yet the store's captured clock writes seal 6 period\(s\) after it .* sealing has stopped/,
    );
    assert.equal(r.verdict, 'stalled');
    assert.match(formatVerifyResult(r).join('\n'), /^STALLED  .* chain: the chain ends at/m);
    // Judged by the verifier's clock: just after those periods ended, they are not late yet.
    const fresh = await verifyDigests({
      s3,
      bucket: sc.bucket,
      keyring,
      clusters: [sc.cluster],
      fromMs: sc.startMs,
      store,
      settleMs: 0,
      periodMs: 1000,
      now: () => sc.startMs + 10_000,
    });
    assert.equal(fresh.ok, true, formatVerifyResult(fresh).join('\n'));
  });

  it('names a deleted Parquet history object', async () => {
    const sc = await scenario(6, { history: true });
    await sc.worker.tick();
    const d1 = JSON.parse(await readObjectText(s3, sc.bucket, sc.object(1))) as Digest;
    assert.equal(d1.history.length, 1, 'the first digest names the history file written before it');
    const named = d1.history[0] as Digest['history'][number];
    assert.equal(named.object, `events/cluster=${sc.cluster}/date=${formatDay(sc.startMs)}/events.parquet`);
    assert.equal((await sc.verify()).ok, true);
    await s3.removeObject(historyBucket, named.object);
    const r = await sc.verify();
    assert.equal(r.firstFailure?.periodStart, sc.period(0));
    assert.match(
      r.firstFailure?.detail ?? '',
      /history object .*events\.parquet is missing \(the history bucket's lifecycle rule "expire-after-365-days" takes a file only 365 days after its day; this one is -?\d+ days old\)/,
    );
    assert.equal(r.verdict, 'tampered');
    assert.equal(r.exitCode, 1);
    // A year and a month on, the bucket's own lifecycle rule took it: expired, not tampered (before: FAIL forever).
    const later = await verifyDigests({
      s3,
      bucket: sc.bucket,
      keyring,
      clusters: [sc.cluster],
      fromMs: sc.startMs,
      store,
      settleMs: 0,
      periodMs: 1000,
      now: () => Date.now() + 400 * 86_400_000,
    });
    assert.equal(later.ok, true, formatVerifyResult(later).join('\n'));
    assert.equal(later.verdict, 'ok');
    const p0 = later.periods.find((p) => p.periodStart === sc.period(0));
    assert.equal(p0?.status, 'expired');
    assert.match(
      p0?.expired?.join() ?? '',
      /expired under the history bucket's lifecycle rule "expire-after-365-days" \(365 days; written (399|400) days ago\)/,
    );
    assert.match(formatVerifyResult(later).join('\n'), /^expired  .*events\.parquet expired under/m);
  });

  it('re-signs a period only for what the record explains (a spool shipped late); a late row is never re-signed (alarmed, verify FAILs), nor is a supersede the record does not explain', async () => {
    const health = new HealthState();
    const sc = await scenario(8, { health });
    await sc.worker.tick();
    // An unprotected grant of period 3, shipped from a fail-open spool after the period was sealed: a new digest names why.
    await shipLate(sc.cluster, 'n1:000009', sc.startMs + 3300);
    assert.equal((await sc.worker.tick()).superseded, 1);
    const ok = await sc.verify();
    assert.equal(ok.ok, true, formatVerifyResult(ok).join('\n'));
    const p3 = ok.periods.find((p) => p.periodStart === sc.period(3));
    assert.deepEqual(p3?.superseded, [4]);
    assert.equal(p3?.events, '5');
    assert.match(formatVerifyResult(ok).join('\n'), /supersedes seq 4: changed after sealing: late spool: 1 unprotected grant line\(s\)/);

    // A row written into period 2 after sealing (with a fresh ingested_at): nothing explains it, so nothing re-signs it.
    await store.insert('events', [
      {
        cluster: sc.cluster,
        revision: '115',
        key: '/l/ns/late',
        event_type: 'grant',
        op: 'put',
        wall_time: sqlTime(sc.startMs + 1600),
        grant_revision: '115',
        value: '{}',
      },
    ]);
    assert.equal((await sc.worker.tick()).superseded, 0);
    const changed = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_CHANGED');
    assert.ok(changed, JSON.stringify(health.alarms()));
    assert.match(changed.message, new RegExp(`1 sealed period\\(s\\) of ${sc.cluster} changed .* the first ${sc.period(2).replace(/[.]/g, '\\.')}`));
    const r = await sc.verify();
    assert.equal(r.ok, false);
    assert.deepEqual(
      r.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart),
      [sc.period(2)],
    );
    assert.match(r.firstFailure?.detail ?? '', /ClickHouse events no longer match the digest/);

    // A superseding digest for it signed anyway (a worker from before this check, or whoever holds the key): verify re-derives
    // the explanation from the record, finds none, and fails the period although its events match the new digest.
    const chain = (await readChain(s3, sc.bucket, sc.cluster)).map((e) => e.digest as Digest);
    const head = chain[chain.length - 1] as Digest;
    const sealed = chain.find((d) => d.periodStart === sc.period(2)) as Digest;
    const events = await hashPeriodEvents(store, sc.cluster, {
      after: sealed.events.after,
      through: sealed.events.through,
      fromMs: sc.startMs + 2000,
      toMs: sc.startMs + 3000,
    });
    const { hash: _h, signature: _s, ...body } = sealed;
    const resigned = signDigest(
      {
        ...(body as DigestBody),
        seq: head.seq + 1,
        events,
        supersedes: { seq: sealed.seq, hash: sealed.hash },
        prevHash: head.hash,
        createdAt: new Date().toISOString(),
      },
      signer,
    );
    await s3.putObject(sc.bucket, sc.object(resigned.seq), JSON.stringify(resigned));
    const re = await sc.verify();
    assert.equal(re.ok, false);
    const p2 = re.periods.find((p) => p.periodStart === sc.period(2));
    assert.deepEqual(p2?.problems, [
      `changed after sealing (re-signed by seq ${resigned.seq}) in a way the record does not explain: its events changed in a way no proven restore or late spool explains (5 event(s) once those are undone, 4 signed)`,
    ]);
  });

  it("re-signs the periods an etcd restore marked, however old, only with the tailer's proof on its restore gap", async () => {
    const secret = randomBytes(32);
    const restoreOf = async (proven: boolean) => {
      const health = new HealthState();
      const sc = await scenario(8, { health });
      await sc.worker.tick();
      // A restore detected now, back to second 2's clock: the gap (proven as the tailer proves it), the marks, the record.
      const after = BigInt(CLOCK_REVISION(2));
      const detectedAt = Date.now();
      const signed = {
        cluster: sc.cluster,
        generation: 1,
        fromRevision: String(after + 1n),
        toRevision: String(CLOCK_REVISION(8) + 5),
        detectedAtMs: detectedAt,
        historyLost: 0,
        previousClusterId: 'c0',
        clusterId: 'c0',
      };
      await recordGap(store, {
        cluster: sc.cluster,
        from_revision: signed.fromRevision,
        to_revision: signed.toRevision,
        detected_at: detectedAt,
        reason: 'restore (test)',
        kind: 'restore',
        history_lost: 0,
        generation: 1,
        previous_cluster_id: 'c0',
        cluster_id: 'c0',
        term: '1',
        proof: proven ? restoreGapMac(secret, signed) : restoreGapMac(randomBytes(32), signed),
      });
      await rollBack(store, sc.cluster, after, 1, 1, 1n);
      await recordTimeline(store, {
        cluster: sc.cluster,
        generation: 1,
        seen: { head: after, clusterId: 'c0', previousClusterId: 'c0', why: 'restore (test)', captured: BigInt(CLOCK_REVISION(8) + 5) },
        previousCheckpoint: BigInt(CLOCK_REVISION(8) + 5),
        divergedAfter: after,
        resumeRevision: after,
        sharesHistory: true,
      });
      // Sealed periods 3..6 (revisions 121..160) hold marked rows; a look-back of two periods reaches 5 and 6 only.
      const worker = new DigestWorker({
        cluster: sc.cluster,
        store,
        s3,
        bucket: sc.bucket,
        historyBucket,
        signer,
        logger,
        periodMs: 1000,
        settleMs: 0,
        lookbackPeriods: 2,
        alarmAfterPeriods: 2,
        allowUnlocked: true,
        health,
        tailerSecret: secret,
      });
      return { sc, health, worker, run: await worker.tick() };
    };
    const good = await restoreOf(true);
    assert.equal(good.run.superseded, 4, 'periods 3..6, two of them past the look-back');
    const ok = await verifyDigests({
      s3,
      bucket: good.sc.bucket,
      keyring,
      clusters: [good.sc.cluster],
      fromMs: good.sc.startMs,
      store,
      settleMs: 0,
      periodMs: 1000,
      tailerSecret: secret,
    });
    assert.equal(ok.ok, true, formatVerifyResult(ok).join('\n'));
    assert.match(
      formatVerifyResult(ok).join('\n'),
      new RegExp(
        `ok    ${good.sc.cluster} ${good.sc.period(3).replace(/[.]/g, '\\.')}.*supersedes seq 4: changed after sealing: restore 1 marked 4 row\\(s\\) rolled back`,
      ),
    );
    assert.equal(
      good.health.alarms().some((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_CHANGED'),
      false,
    );
    // Without the key the proof cannot be checked: the marks are then a change nothing explains.
    const blind = await verifyDigests({
      s3,
      bucket: good.sc.bucket,
      keyring,
      clusters: [good.sc.cluster],
      fromMs: good.sc.startMs,
      store,
      settleMs: 0,
      periodMs: 1000,
    });
    assert.equal(blind.ok, false);
    assert.match(blind.firstFailure?.detail ?? '', /in a way the record does not explain/);

    // Behind the proven restore, an insider takes the marks off period 3's rows (a higher term, a fresh ingested_at), so
    // rolled-back rows read as current again; and adds a restore gap of the same generation to period 1. Neither is the
    // restore's doing: nothing is re-signed (before: both were, as "explained" by generation 1).
    await store.command(
      `INSERT INTO {db:Identifier}.events SELECT * REPLACE (0 AS rolled_back_by, 0 AS superseded_by, term + 1 AS term, now64(3) AS ingested_at)
       FROM {db:Identifier}.events FINAL WHERE cluster = {cluster:String} AND revision > {after:UInt64} AND revision <= {upto:UInt64} AND timeline = 0`,
      { cluster: good.sc.cluster, after: CLOCK_REVISION(2), upto: CLOCK_REVISION(3) },
    );
    await store.insert('gaps', [
      {
        cluster: good.sc.cluster,
        from_revision: '105',
        to_revision: '106',
        detected_at: good.sc.startMs + 1500,
        reason: 'restore (forged)',
        kind: 'restore',
        generation: 1,
        identity: 'restore:1',
      },
    ]);
    const health = new HealthState();
    const everything = new DigestWorker({
      cluster: good.sc.cluster,
      store,
      s3,
      bucket: good.sc.bucket,
      historyBucket,
      signer,
      logger,
      periodMs: 1000,
      settleMs: 0,
      lookbackPeriods: 1000,
      alarmAfterPeriods: 2,
      allowUnlocked: true,
      health,
      tailerSecret: secret,
    });
    assert.equal((await everything.tick()).superseded, 0);
    assert.match(
      health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_CHANGED')?.message ?? '',
      /^2 sealed period\(s\) .* the first [^:]*: a gap or restore it signed was removed|recorded after sealing without a proven restore/,
    );
    const undone = await verifyDigests({
      s3,
      bucket: good.sc.bucket,
      keyring,
      clusters: [good.sc.cluster],
      fromMs: good.sc.startMs,
      store,
      settleMs: 0,
      periodMs: 1000,
      tailerSecret: secret,
    });
    assert.deepEqual(
      undone.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart),
      [1, 3].map(good.sc.period),
      formatVerifyResult(undone).join('\n'),
    );

    // The same marks behind a restore gap whose proof is not the tailer's (a store row written by hand): nothing re-signed.
    const forged = await restoreOf(false);
    assert.equal(forged.run.superseded, 0);
    assert.ok(forged.health.alarms().some((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_CHANGED'));
    const r = await verifyDigests({
      s3,
      bucket: forged.sc.bucket,
      keyring,
      clusters: [forged.sc.cluster],
      fromMs: forged.sc.startMs,
      store,
      settleMs: 0,
      periodMs: 1000,
      tailerSecret: secret,
    });
    assert.equal(r.ok, false);
    assert.deepEqual(
      r.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart),
      [3, 4, 5, 6].map(forged.sc.period),
    );
  });

  it('does not name a history file that is not the one its manifest describes (replaced before sealing): LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH until it is re-exported', async () => {
    const health = new HealthState();
    const sc = await scenario(6, { history: true, health });
    const object = `events/cluster=${sc.cluster}/date=${formatDay(sc.startMs)}/events.parquet`;
    // The history bucket is not locked: the file swapped behind its manifest, before any digest names it.
    await s3.putObject(historyBucket, object, Buffer.from('PAR1 not the export PAR1'));
    await sc.worker.tick();
    const d1 = JSON.parse(await readObjectText(s3, sc.bucket, sc.object(1))) as Digest;
    assert.deepEqual(d1.history, [], "a manifest's sha256 is not signed on its word");
    const raised = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH');
    assert.ok(raised, 'the alarm is raised');
    assert.match(raised.message, new RegExp(`${object.replace(/[.]/g, '\\.')} of ${sc.cluster} does not match its manifest \\(sha256 `));
    // Re-exported (its manifest removed first, as the runbook says): the next digest names the file, and the alarm clears.
    await s3.removeObject(historyBucket, manifestName(object));
    await exportHistoryFile({ store, s3, bucket: historyBucket, logger, signer }, { dataset: 'events', cluster: sc.cluster, date: formatDay(sc.startMs) });
    await store.insert('events', [
      {
        cluster: sc.cluster,
        revision: String(CLOCK_REVISION(7)),
        key: '/sys/clock',
        event_type: 'clock',
        op: 'put',
        wall_time: new Date(sc.startMs + 7500).toISOString().replace('T', ' ').replace('Z', ''),
        value: '{}',
      },
    ]);
    await store.insert('checkpoints', [{ cluster: sc.cluster, revision: String(CLOCK_REVISION(8)), leader: 'test' }]);
    await sc.worker.tick();
    const chain = (await readChain(s3, sc.bucket, sc.cluster)).map((e) => e.digest as Digest);
    const naming = chain.filter((d) => d.history.some((h) => h.object === object));
    assert.equal(naming.length, 1, 'a later digest names the re-exported file');
    assert.equal(
      health.alarms().some((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH'),
      false,
    );
    assert.equal((await sc.verify()).ok, true);
  });

  it("names no history file on a manifest the digest key did not sign (placed with the bucket's credentials): LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH", async () => {
    const health = new HealthState();
    const sc = await scenario(6, { history: true, health });
    const object = `events/cluster=${sc.cluster}/date=${formatDay(sc.startMs)}/events.parquet`;
    // The file is the export's; its manifest is put back without the signature (what a hand-made one looks like).
    const { signature: _signature, ...unsigned } = JSON.parse(await readObjectText(s3, historyBucket, manifestName(object))) as Record<string, unknown>;
    const body = Buffer.from(JSON.stringify(unsigned));
    await s3.putObject(historyBucket, manifestName(object), body, body.length);
    await sc.worker.tick();
    const d1 = JSON.parse(await readObjectText(s3, sc.bucket, sc.object(1))) as Digest;
    assert.deepEqual(d1.history, [], 'an unsigned manifest names nothing');
    const raised = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH');
    assert.ok(raised, 'the alarm is raised');
    assert.match(raised.message, /the manifest is not signed/);
  });

  it("checks the day's history file a digest after the range named (the file is written after the day)", async () => {
    const sc = await scenario(6);
    await sc.worker.tick();
    const object = `events/cluster=${sc.cluster}/date=${formatDay(sc.startMs)}/events.parquet`;
    await exportHistoryFile({ store, s3, bucket: historyBucket, logger, signer }, { dataset: 'events', cluster: sc.cluster, date: formatDay(sc.startMs) });
    await store.insert('events', [
      {
        cluster: sc.cluster,
        revision: String(CLOCK_REVISION(7)),
        key: '/sys/clock',
        event_type: 'clock',
        op: 'put',
        wall_time: new Date(sc.startMs + 7500).toISOString().replace('T', ' ').replace('Z', ''),
        value: '{}',
      },
    ]);
    await store.insert('checkpoints', [{ cluster: sc.cluster, revision: String(CLOCK_REVISION(8)), leader: 'test' }]);
    await sc.worker.tick();
    const naming = (await readChain(s3, sc.bucket, sc.cluster)).map((e) => e.digest as Digest).find((d) => d.history.some((h) => h.object === object));
    assert.ok(naming && Date.parse(naming.periodStart) >= sc.startMs + 3000, 'a digest after the range names the file');
    const ok = await sc.verify({ toMs: sc.startMs + 3000 });
    assert.equal(ok.ok, true, formatVerifyResult(ok).join('\n'));
    assert.deepEqual(
      ok.laterHistory.map((h) => [h.object, h.status]),
      [[`${historyBucket}/${object}`, 'ok']],
    );
    assert.ok(formatVerifyResult(ok).some((l) => l.startsWith(`ok    ${sc.cluster} history ${formatDay(sc.startMs)} `)));
    await s3.removeObject(historyBucket, object);
    const r = await sc.verify({ toMs: sc.startMs + 3000 });
    assert.equal(r.ok, false, formatVerifyResult(r).join('\n'));
    assert.match(r.firstFailure?.periodStart ?? '', /history file/);
    assert.match(r.firstFailure?.detail ?? '', /events\.parquet is missing/);
  });

  it("keeps checking a period's history object after a late row supersedes its digest", async () => {
    const sc = await scenario(6, { history: true });
    await sc.worker.tick();
    const d1 = JSON.parse(await readObjectText(s3, sc.bucket, sc.object(1))) as Digest;
    const named = d1.history[0] as Digest['history'][number];
    // A spool line of period 0 shipped late: the superseding digest restates the events, not the files.
    await shipLate(sc.cluster, 'n1:000001', sc.startMs + 400);
    assert.equal((await sc.worker.tick()).superseded, 1);
    const ok = await sc.verify();
    assert.deepEqual(ok.periods.find((p) => p.periodStart === sc.period(0))?.superseded, [1], formatVerifyResult(ok).join('\n'));
    assert.equal(ok.ok, true);
    await s3.removeObject(historyBucket, named.object);
    const r = await sc.verify();
    assert.equal(r.ok, false, formatVerifyResult(r).join('\n'));
    assert.equal(r.firstFailure?.periodStart, sc.period(0));
    assert.match(r.firstFailure?.detail ?? '', /history object .*events\.parquet is missing/);
  });

  it('names a gap removed from ClickHouse after sealing, and a gap recorded late (nothing proves it: not re-signed)', async () => {
    const sc = await scenario(8);
    const gap = (s: number) => ({
      cluster: sc.cluster,
      from_revision: String(CLOCK_REVISION(s) + 1),
      to_revision: String(CLOCK_REVISION(s) + 2),
      detected_at: sc.startMs + s * 1000 + 700,
      reason: 'compacted before capture (test)',
    });
    await store.insert('gaps', [gap(2)]);
    await sc.worker.tick();
    const d3 = JSON.parse(await readObjectText(s3, sc.bucket, sc.object(3))) as Digest;
    assert.equal(d3.gaps.length, 1, "the digest states the period's gap");
    assert.equal((await sc.verify()).ok, true);
    // Recorded after sealing with no proof behind it (a compaction gap is never recorded into a sealed period): not re-signed.
    await store.insert('gaps', [gap(5)]);
    assert.equal((await sc.worker.tick()).superseded, 0);
    const late = await sc.verify();
    assert.deepEqual(
      late.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart),
      [sc.period(5)],
      formatVerifyResult(late).join('\n'),
    );
    assert.match(late.firstFailure?.detail ?? '', /gaps or restores no longer match the digest \(1 gap\(s\) and 0 restore\(s\) now, 0 and 0 signed\)/);
    // Removed behind the worker's back (beyond its lookback: a worker that re-checks nothing): the verifier names it.
    const blind = new DigestWorker({
      cluster: sc.cluster,
      store,
      s3,
      bucket: sc.bucket,
      historyBucket,
      signer,
      logger,
      periodMs: 1000,
      settleMs: 0,
      lookbackPeriods: 0,
      alarmAfterPeriods: 2,
      allowUnlocked: true,
    });
    await store.command(
      'ALTER TABLE {db:Identifier}.gaps DELETE WHERE cluster = {cluster:String} AND from_revision = {from:UInt64}',
      { cluster: sc.cluster, from: CLOCK_REVISION(2) + 1 },
      { mutations_sync: '2' },
    );
    assert.equal((await blind.tick()).superseded, 0);
    const r = await sc.verify();
    assert.equal(r.ok, false);
    assert.equal(r.firstFailure?.periodStart, sc.period(2));
    assert.match(r.firstFailure?.detail ?? '', /gaps or restores no longer match the digest \(0 gap\(s\) and 0 restore\(s\) now, 1 and 0 signed\)/);
    assert.deepEqual(
      r.periods.filter((p) => p.status === 'fail').map((p) => p.periodStart),
      [sc.period(2), sc.period(5)],
    );
  });

  it('names a grant row altered in ClickHouse (the events, and so the digests, untouched) and refuses a compliance export of it', async () => {
    const sc = await scenario(6);
    await sc.worker.tick();
    const ok = await sc.verify();
    assert.equal(ok.ok, true, formatVerifyResult(ok).join('\n'));
    assert.ok(
      formatVerifyResult(ok).some((l) => /^ok {4}\S+ grants: every grant of the range agrees/.test(l)),
      'the grants are checked, and say so',
    );
    // Someone with ClickHouse write access changes who held a lock: exports and the grants history file read `grants`.
    await store.command(
      `ALTER TABLE {db:Identifier}.grants UPDATE holder = 'spiffe://corp/mallory' WHERE cluster = {cluster:String} AND grant_revision = {revision:UInt64}`,
      { cluster: sc.cluster, revision: CLOCK_REVISION(2) + 2 },
      { mutations_sync: '2' },
    );
    const r = await sc.verify();
    assert.equal(r.ok, false);
    assert.deepEqual(
      r.periods.filter((p) => p.status === 'fail'),
      [],
      'every period still matches its digest: the events were not touched',
    );
    assert.equal(r.firstFailure?.periodStart, '(grants)');
    assert.match(
      r.firstFailure?.detail ?? '',
      new RegExp(
        `ns/key-2-2 grant revision ${CLOCK_REVISION(2) + 2} timeline 0: differs from its start event \\(grant at revision ${CLOCK_REVISION(2) + 2}\\) in holder`,
      ),
    );
    assert.equal((await sc.verify({ db: false })).ok, true, 'without the database nothing says otherwise (the digests hash the events)');
    const records = new ExportRecords(store);
    const state = await records.create({
      format: 'csv',
      fromMs: sc.startMs,
      toMs: sc.startMs + 5000,
      filters: { cluster: sc.cluster },
      requestedBy: 'auditor@corp',
    });
    await assert.rejects(
      runComplianceExport({ store, s3, bucket: historyBucket, logger, digests: { signer, archiveBucket: sc.bucket, clusters: [sc.cluster] } }, state.id),
      /LOCKAUDIT_ERR_EXPORT_UNPROVEN|disagrees with the events/,
    );
    const objects: string[] = [];
    for await (const o of s3.listObjectsV2(historyBucket, `exports/${state.id}/`, true)) if (o.name) objects.push(o.name);
    assert.deepEqual(objects, [], 'nothing of the export is written');
  });

  it("names a grant edited only in a copy that reports read (key history, a holder's history, the token route), `grants` and the events untouched", async () => {
    const sc = await scenario(6);
    await sc.worker.tick();
    const ok = await sc.verify();
    assert.equal(ok.ok, true, formatVerifyResult(ok).join('\n'));
    assert.ok(
      formatVerifyResult(ok).some((l) => /^ok {4}\S+ grants: .*key, holder and token copies/.test(l)),
      formatVerifyResult(ok).join('\n'),
    );
    const rev = (period: number): number => CLOCK_REVISION(period) + 2;
    const edit = (sql: string, revision: number): Promise<void> => store.command(sql, { cluster: sc.cluster, revision }, { mutations_sync: '2' });
    // Key history shows another holder; a holder's history another session; a grant gone from its holder's history.
    await edit(
      `ALTER TABLE {db:Identifier}.grants_by_key UPDATE holder = 'spiffe://corp/mallory' WHERE cluster = {cluster:String} AND grant_revision = {revision:UInt64}`,
      rev(1),
    );
    await edit(
      `ALTER TABLE {db:Identifier}.grants_by_holder UPDATE session = 'forged' WHERE cluster = {cluster:String} AND grant_revision = {revision:UInt64}`,
      rev(2),
    );
    await edit(`ALTER TABLE {db:Identifier}.grants_by_holder DELETE WHERE cluster = {cluster:String} AND grant_revision = {revision:UInt64}`, rev(3));
    // A token routed to another lock: its lookup reads that lock's history and finds nothing.
    const [tok] = await store.rows<{ token: string; key: string }>(
      'SELECT toString(token) AS token, key FROM {db:Identifier}.grants FINAL WHERE cluster = {cluster:String} AND grant_revision = {revision:UInt64}',
      { cluster: sc.cluster, revision: rev(4) },
    );
    assert.ok(tok && tok.token !== '0', 'the seeded grant carries a token');
    await store.command(
      'ALTER TABLE {db:Identifier}.grant_tokens DELETE WHERE cluster = {c:String} AND token = {t:UInt64}',
      { c: sc.cluster, t: tok.token },
      { mutations_sync: '2' },
    );
    await store.command('INSERT INTO {db:Identifier}.grant_tokens (token, cluster, key) VALUES ({t:UInt64}, {c:String}, {k:String})', {
      t: tok.token,
      c: sc.cluster,
      k: 'ns/elsewhere',
    });
    const r = await sc.verify();
    assert.equal(r.verdict, 'tampered', formatVerifyResult(r).join('\n'));
    assert.deepEqual(
      r.periods.filter((p) => p.status === 'fail'),
      [],
      'every period still matches its digest',
    );
    assert.equal(r.firstFailure?.periodStart, '(grants)');
    const problems = r.grants.flatMap((g) => g.problems);
    const named = (re: RegExp): void =>
      assert.ok(
        problems.some((p) => re.test(p)),
        `${re} in\n${problems.join('\n')}`,
      );
    named(new RegExp(`^grants_by_key: \\S+ \\S+ grant revision ${rev(1)} timeline 0: differs in grants_by_key`));
    named(new RegExp(`^grants_by_holder: \\S+ \\S+ grant revision ${rev(2)} timeline 0: differs in grants_by_holder`));
    named(new RegExp(`^grants_by_holder: \\S+ \\S+ grant revision ${rev(3)} timeline 0: missing from grants_by_holder`));
    named(
      new RegExp(
        `^grant_tokens: \\S+ ${tok.key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} grant revision ${rev(4)} timeline 0: its token is not routed to its lock`,
      ),
    );
    assert.equal(problems.length, 4, problems.join('\n'));
  });

  it('names a second version of a grant that differs in a column reports filter on before merging (a filtered history would show it)', async () => {
    const sc = await scenario(4);
    await sc.worker.tick();
    assert.equal((await sc.verify()).ok, true);
    const rev = CLOCK_REVISION(1) + 1;
    // The insider keeps merges from taking the forged row away (they can: they write the store), raises the genuine
    // row's version, and adds a copy of a lower one naming another holder: FINAL shows the genuine row, ?holder=… the copy.
    const tables = ['grants', 'grants_by_key', 'grants_by_holder'];
    for (const t of tables) await store.command(`SYSTEM STOP MERGES {db:Identifier}.${t}`);
    try {
      const copy = (replace: string) =>
        store.command(
          `INSERT INTO {db:Identifier}.grants SELECT * EXCEPT (replace_version) REPLACE (${replace}) FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND grant_revision = {r:UInt64}`,
          { c: sc.cluster, r: rev },
        );
      await copy('toUInt64(9) AS term');
      await copy("'spiffe://corp/mallory' AS holder, toUInt64(0) AS term");
      const [shown] = await store.rows<{ holder: string }>(
        'SELECT holder FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND grant_revision = {r:UInt64}',
        { c: sc.cluster, r: rev },
      );
      assert.equal(shown?.holder, 'spiffe://corp/worker', 'the merged history shows the genuine row');
      const [filtered] = await store.rows<{ n: string }>(
        "SELECT toString(count()) AS n FROM {db:Identifier}.grants FINAL PREWHERE holder = 'spiffe://corp/mallory' WHERE cluster = {c:String}",
        { c: sc.cluster },
      );
      assert.equal(filtered?.n, '1', 'a history filtered on the holder before merging shows the forged row');
      const r = await sc.verify();
      assert.equal(r.verdict, 'tampered', formatVerifyResult(r).join('\n'));
      const problems = r.grants.flatMap((g) => g.problems);
      for (const table of tables) {
        assert.ok(
          problems.some((p) =>
            new RegExp(`^${table}: \\S+ \\S+ grant revision ${rev} timeline 0: holds 2 versions of this grant that differ in holder`).test(p),
          ),
          `${table} in\n${problems.join('\n')}`,
        );
      }
    } finally {
      for (const t of tables) await store.command(`SYSTEM START MERGES {db:Identifier}.${t}`);
    }
  });

  it('seals the grants of digested periods once they have all ended, which an export then does not check again', async () => {
    const sc = await scenario(5);
    // The seeded grants are held for good: replaced by grants that all ended (events and rows), in periods 1 to 3.
    for (const t of ['events', 'grants']) {
      await store.command(
        `ALTER TABLE {db:Identifier}.${t} DELETE WHERE cluster = {c:String} AND ${t === 'events' ? "event_type = 'grant'" : '1'}`,
        { c: sc.cluster },
        { mutations_sync: '2' },
      );
    }
    await insertGrants(store, sc.cluster, 30, sc.startMs + 1_000, 100, 0);
    await sc.worker.tick();
    const seals = await store.rows<{ start: string }>(
      'SELECT toString(toUnixTimestamp64Milli(period_start)) AS start FROM {db:Identifier}.grant_seals WHERE cluster = {c:String} ORDER BY period_start',
      { c: sc.cluster },
    );
    assert.deepEqual(
      seals.map((r) => (Number(r.start) - sc.startMs) / 1000),
      [1, 2, 3],
      'the periods holding grants, each sealed once',
    );
    await sc.worker.tick();
    assert.equal(
      (await store.rows('SELECT 1 FROM {db:Identifier}.grant_seals WHERE cluster = {c:String}', { c: sc.cluster })).length,
      3,
      'a later run seals nothing again',
    );
    const covered: number[] = [];
    await assertGrantsMatchEvents(
      store,
      { cluster: sc.cluster },
      { fromMs: sc.startMs, toMs: sc.startMs + 5_000 },
      { seals: { publicKey, periodMs: 1000 }, settleMs: 0, onCoverage: (c) => covered.push(c.sealedPeriods) },
    );
    assert.deepEqual(covered, [3]);
  });

  /**
   * A compliance export (CSV) of 50 grants over a sealed scenario's first 4 s, requested under `scope`, with the
   * files an auditor checks it from (its download, its manifest, the public key) and docs/verify-export.mjs over them.
   */
  async function verifiableExport(requestedBy: string, scope?: { namespaces: string[]; clusters: string[] }) {
    const sc = await scenario(6);
    // insertGrants: namespace = number % 20 (ns3 holds numbers 3, 23 and 43).
    await insertGrants(store, sc.cluster, 50, sc.startMs + 1000, 40);
    await sc.worker.tick();
    const records = new ExportRecords(store);
    const state = await records.create({
      format: 'csv',
      fromMs: sc.startMs,
      toMs: sc.startMs + 4000,
      filters: { cluster: sc.cluster },
      requestedBy,
      ...(scope ? { scope } : {}),
    });
    const done = await runComplianceExport(
      { store, s3, bucket: historyBucket, logger, digests: { signer, archiveBucket: sc.bucket, clusters: [sc.cluster] } },
      state.id,
    );
    const tmp = tempDir('lockaudit-verify-export-');
    const manifestFile = path.join(tmp.dir, 'manifest.json');
    const file = path.join(tmp.dir, 'export.csv');
    const keyFile = path.join(tmp.dir, 'key.pem');
    writeFileSync(manifestFile, await readObjectText(s3, historyBucket, manifestName(done.objectKey)));
    writeFileSync(file, await readObjectText(s3, historyBucket, done.objectKey));
    writeFileSync(keyFile, signer.publicKeyPem);
    const check = (...more: string[]) =>
      spawnSync(
        process.execPath,
        [path.join(projectRoot, 'docs/verify-export.mjs'), '--manifest', manifestFile, '--file', file, '--public-key', keyFile, ...more],
        { encoding: 'utf8' },
      );
    return { sc, records, state, done, tmp, manifestFile, file, keyFile, check };
  }

  it('lets an auditor check a compliance export with docs/verify-export.mjs and the public key alone; a truncated export fails', async () => {
    const { sc, records, state, tmp, manifestFile, file, keyFile, check } = await verifiableExport('auditor@corp');
    try {
      const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { digests: Record<string, Digest[]> };
      assert.deepEqual(
        manifest.digests[sc.cluster]?.map((d) => d.seq),
        [1, 2, 3, 4, 5],
        'the digests of periods 0..3 (the range) and 4 (the one after it)',
      );
      const good = check();
      assert.equal(good.status, 0, good.stdout + good.stderr);
      assert.match(good.stdout, /every check passed/);
      // What the export is, from the signed manifest; and checked against what the auditor asked for.
      const from = new Date(sc.startMs).toISOString();
      const to = new Date(sc.startMs + 4000).toISOString();
      assert.match(
        good.stdout,
        new RegExp(
          `^ok {4}export: id ${state.id}, range ${from.replace(/[.]/g, '\\.')}\\.\\.${to.replace(/[.]/g, '\\.')}, filters cluster=${sc.cluster}$`,
          'm',
        ),
      );
      const expected = check('--expect-id', state.id, '--expect-from', from, '--expect-to', to, '--expect-filter', `cluster=${sc.cluster}`);
      assert.equal(expected.status, 0, expected.stdout);
      for (const [flags, said] of [
        [['--expect-id', 'another-export'], /^FAIL {2}export id: .*, expected another-export$/m],
        [['--expect-to', new Date(sc.startMs + 5000).toISOString()], /^FAIL {2}export to: .*, expected /m],
        [['--expect-filter', 'cluster=elsewhere'], /^FAIL {2}export filter cluster: .*, expected elsewhere$/m],
      ] as const) {
        const wrong = check(...flags);
        assert.equal(wrong.status, 1, wrong.stdout);
        assert.match(wrong.stdout, said);
      }
      assert.match(good.stdout, /ok {4}rows: every grant was checked against the events it was derived from/);
      assert.equal(good.stdout.split('\n').filter((l) => l.includes(`${sc.cluster} `)).length, 5, 'one line per period');

      // Bad arguments (a missing manifest, the export given as the manifest, a manifest given as the key): exit 2 and
      // one line naming the argument (before: a stack trace).
      for (const [args, said] of [
        [
          ['--manifest', path.join(tmp.dir, 'nope.json'), '--file', file, '--public-key', keyFile],
          /^verify-export: --manifest: cannot read .*nope\.json \(ENOENT\)$/,
        ],
        [['--manifest', file, '--file', file, '--public-key', keyFile], /^verify-export: --manifest: .* is not JSON/],
        [['--manifest', manifestFile, '--file', file, '--public-key', manifestFile], /^verify-export: --public-key: .* is not a public key \(PEM\)$/],
      ] as const) {
        const bad = spawnSync(process.execPath, [path.join(projectRoot, 'docs/verify-export.mjs'), ...args], { encoding: 'utf8' });
        assert.equal(bad.status, 2, bad.stderr);
        assert.match(bad.stderr.split('\n')[0] ?? '', said);
        assert.doesNotMatch(bad.stderr, /\n\s+at /, 'no stack trace');
      }

      // A manifest altered after signing (its row count raised): nothing read from it is reported ok (before:
      // "ok rows: every grant was checked…" after "FAIL manifest: signature").
      const original = readFileSync(manifestFile, 'utf8');
      writeFileSync(manifestFile, JSON.stringify({ ...JSON.parse(original), rows: 999_999 }));
      const altered = check();
      assert.equal(altered.status, 1, altered.stdout);
      assert.match(altered.stdout, /^FAIL {2}manifest: signature under key/m);
      assert.match(altered.stdout, /^FAIL {2}file: not checked: .* a manifest this key did not sign$/m);
      assert.match(altered.stdout, /^FAIL {2}rows: not vouched for/m);
      assert.doesNotMatch(altered.stdout, /^ok {4}(file|rows):/m, altered.stdout);
      writeFileSync(manifestFile, original);

      truncateSync(file, Buffer.byteLength(readFileSync(file, 'utf8')) - 10);
      const cut = check();
      assert.equal(cut.status, 1);
      assert.match(cut.stdout, /FAIL {2}file: \d+ bytes, the manifest says \d+ \(truncated or altered\)/);

      // A digest dropped from the manifest: its signature no longer holds, and the chain has a hole.
      const m = JSON.parse(readFileSync(manifestFile, 'utf8')) as { digests: Record<string, Digest[]> };
      m.digests[sc.cluster] = (m.digests[sc.cluster] ?? []).filter((d) => d.seq !== 3);
      writeFileSync(manifestFile, JSON.stringify(m));
      const holed = check();
      assert.equal(holed.status, 1);
      assert.match(holed.stdout, /FAIL {2}manifest: signature/);
      assert.match(holed.stdout, /digests seq 3–3 are missing/);

      // An export reaching past the last sealed period: the open stretch is vouched for by nothing, so it fails (before: printed "open", exit 0).
      const wide = await records.create({
        format: 'csv',
        fromMs: sc.startMs,
        toMs: sc.startMs + 60_000,
        filters: { cluster: sc.cluster },
        requestedBy: 'auditor@corp',
      });
      const wideDone = await runComplianceExport(
        { store, s3, bucket: historyBucket, logger, digests: { signer, archiveBucket: sc.bucket, clusters: [sc.cluster] } },
        wide.id,
      );
      writeFileSync(manifestFile, await readObjectText(s3, historyBucket, manifestName(wideDone.objectKey)));
      writeFileSync(file, await readObjectText(s3, historyBucket, wideDone.objectKey));
      const open = check();
      assert.equal(open.status, 1, open.stdout);
      assert.match(open.stdout, new RegExp(`^FAIL {2}${sc.cluster} .* not sealed when the export ran: no digest vouches for its rows`, 'm'));
    } finally {
      tmp.remove();
    }
  });

  it("a scoped token's export holds its scope's grants only, and its signed manifest says so; verify-export reads the scope as filters to expect", async () => {
    const { sc, records, state, done, tmp, manifestFile, check } = await verifiableExport('pat@payments', { namespaces: ['ns3'], clusters: [] });
    try {
      assert.deepEqual((await records.get(state.id))?.scope, { namespaces: ['ns3'], clusters: [] }, 'the scope is stored with the export');
      const csv = (await readObjectText(s3, historyBucket, done.objectKey)).trimEnd().split('\r\n');
      const namespaceAt = (csv[0] as string).split(',').indexOf('namespace');
      assert.deepEqual(
        csv.slice(1).map((l) => l.split(',')[namespaceAt]),
        ['ns3', 'ns3', 'ns3'],
      );
      assert.equal(done.rowsDone, 3n);
      const manifestText = readFileSync(manifestFile, 'utf8');
      assert.deepEqual((JSON.parse(manifestText) as { scope?: unknown }).scope, { namespaces: ['ns3'], clusters: [] });
      // Handed over as the record, with nothing expected: it fails, saying it is one scope's part.
      const unasked = check();
      assert.equal(unasked.status, 1, unasked.stdout + unasked.stderr);
      assert.match(unasked.stdout, new RegExp(`filters cluster=${sc.cluster}, scope\\.namespaces=ns3$`, 'm'));
      assert.match(unasked.stdout, /^FAIL {2}export scope: the file holds only namespaces ns3 \(a scoped token's export, not the whole record\)/m);
      // Whoever expects the whole of a cluster is told the same.
      const whole = check('--expect-filter', `cluster=${sc.cluster}`);
      assert.equal(whole.status, 1, whole.stdout);
      assert.match(whole.stdout, /^FAIL {2}export scope: the file holds only namespaces ns3/m);
      const expected = check('--expect-filter', `cluster=${sc.cluster}`, '--expect-filter', 'scope.namespaces=ns3');
      assert.equal(expected.status, 0, expected.stdout);
      assert.match(expected.stdout, /every check passed/);
      // The scope is under the signature: a manifest with it removed no longer verifies.
      const { scope: _scope, ...unscoped } = JSON.parse(manifestText) as Record<string, unknown>;
      writeFileSync(manifestFile, JSON.stringify(unscoped));
      const stripped = check();
      assert.equal(stripped.status, 1, stripped.stdout);
      assert.match(stripped.stdout, /^FAIL {2}manifest: signature under key/m);
    } finally {
      tmp.remove();
    }
  });

  it('a worker process killed with SIGKILL mid-run over the shared store, and run again, skips no period', async () => {
    const seconds = 300;
    const cluster = uniqueId('dgk');
    const bucket = uniqueId('dgarch-');
    await s3.makeBucket(bucket, config.s3.region);
    const ch = tempDir('lockaudit-digest-child-');
    const privateKeyPem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const childSigner = signerFromPrivateKey(createPrivateKey(privateKeyPem));
    // The worker as one process of several over one store (issue 41 item 6): the store process outlives the kill.
    const shared = await startStoreProcess(ch.dir);
    const spec = {
      chPath: ch.dir,
      store: { url: shared.url, password: shared.password },
      cluster,
      bucket,
      historyBucket,
      privateKeyPem,
      startMs: baseMs(),
      seconds,
    };
    const entry = fileURLToPath(new URL('../support/digestChild.ts', import.meta.url));
    const start = (seed: boolean) => {
      const proc = spawn(process.execPath, ['--import', 'tsx', entry], {
        env: { ...process.env, DIGEST_CHILD_SPEC: JSON.stringify({ ...spec, seed }) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const lines: string[] = [];
      createInterface({ input: proc.stdout }).on('line', (l) => lines.push(l));
      const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
      return { proc, lines, exited };
    };
    const count = async (): Promise<number> => {
      let n = 0;
      for await (const o of s3.listObjectsV2(bucket, `digests/${cluster}/`, true)) if (o.name) n++;
      return n;
    };
    try {
      const a = start(true);
      const deadline = Date.now() + 240_000;
      while ((await count()) < 20) {
        assert.ok(Date.now() < deadline, 'the first worker wrote 20 digests in time');
        assert.equal(a.proc.exitCode, null, 'the first worker is still running');
        await new Promise((r) => setTimeout(r, 100));
      }
      process.kill(a.proc.pid as number, 'SIGKILL');
      await a.exited;
      const before = await count();
      assert.ok(before < seconds - 1, `killed mid-run (${before} of ${seconds - 1} digests written)`);

      const b = start(false);
      assert.equal(await b.exited, 0);
      const result = JSON.parse(b.lines.at(-1) as string) as { ok: boolean; periods: number; firstFailure: unknown };
      assert.deepEqual(result, { ok: true, periods: seconds - 1, firstFailure: null });
      const chain = await readChain(s3, bucket, cluster);
      assert.deepEqual(
        chain.map((e) => e.digest?.seq),
        Array.from({ length: seconds - 1 }, (_, i) => i + 1),
        'seqs 1..n, none twice, none missing',
      );
      const walk = walkChain(cluster, chain, keyringOf([createPublicKey(childSigner.publicKeyPem)]));
      assert.deepEqual(
        walk.periods.map((p) => p.periodStart),
        Array.from({ length: seconds - 1 }, (_, i) => new Date(spec.startMs + i * 1000).toISOString()),
        'every period, in order',
      );
      assert.deepEqual(
        walk.periods.flatMap((p) => p.problems),
        [],
      );
    } finally {
      await shared.stop();
      ch.remove();
    }
  });
});
