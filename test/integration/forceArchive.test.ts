// The force-release archive against real etcd and MinIO: records become
// object-locked objects (COMPLIANCE, seven years) that MinIO refuses to delete
// or replace; the chain verifies; a removed and an altered record are found
// (altered in an unlocked bucket built the same way); the alarm is raised while
// a record is late and cleared once it is archived.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { Etcd3, Lease } from 'etcd3';
import { Client } from 'minio';
import { HealthState } from '../../platform/health.js';
import { createEtcdClient } from '../../core/etcd.js';
import { forceMac } from '../../core/proof.js';
import type { ForceRecord } from '../../core/keyspace.js';
import { isLockauditError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { createS3Client } from '../../core/s3.js';
import { verifyArchive } from '../../exporters/archive/archiveVerify.js';
import { ensureArchiveBucket } from '../../platform/buckets.js';
import { exportMetrics } from '../../exporters/exportMetrics.js';
import { alarmName, ForceArchiver } from '../../exporters/archive/forceArchive.js';
import { archiveObjectName, chainRecord, recordHash, type ArchivedForceRecord } from '../../exporters/hashChain.js';
import { readObjectText } from '../../exporters/storage/objectStore.js';
import { projectRoot } from '../../core/paths.js';
import { testConfig, uniqueId } from '../support/env.js';

const config = testConfig();
const cluster = config.etcd.clusters[0] as (typeof config.etcd.clusters)[number];
const logger = createLogger('silent');

// The deployment's origin secret: the lock API signs each force record with it (lock/forceRelease.ts).
const originSecret = Buffer.from('force-archive-test-secret');

function forceFields(id: string, approvedAt: number): Omit<ForceRecord, 'mac'> {
  return {
    id,
    key: `payments/acct-${id}`,
    holder: 'spiffe://corp/payments-worker',
    session: '7587862000123',
    token: '11258999069426240123',
    class: 'payments',
    enforcement: 'fenced',
    requester: 'alice@corp',
    approver: 'bob@corp',
    reason: 'worker wedged',
    requestedAt: approvedAt - 60_000,
    approvedAt,
    revokedSession: false,
  };
}

/** A record as the lock API writes it: signed. */
function forceValue(id: string, approvedAt: number): string {
  const fields = forceFields(id, approvedAt);
  return JSON.stringify({ ...fields, mac: forceMac(originSecret, fields) });
}

describe('force-release archive', () => {
  let etcd: Etcd3;
  let lease: Lease;
  const s3 = createS3Client(config.s3);

  before(async () => {
    etcd = createEtcdClient(cluster);
    // The records' own 24 h lease, as the lock API writes them.
    lease = etcd.lease(86_400, { autoKeepAlive: false });
    await lease.grant();
  });
  after(async () => {
    await lease.revoke().catch(() => undefined);
    etcd.close();
  });

  async function writeRecords(prefix: string, n: number, approvedAt = Date.now()): Promise<string[]> {
    const keys: string[] = [];
    for (let i = 1; i <= n; i++) {
      const id = `${prefix.split('/').pop()}${i}`;
      const key = `${prefix}${i}`;
      await lease.put(key).value(forceValue(id, approvedAt));
      keys.push(key);
    }
    return keys;
  }

  async function newLockedBucket(): Promise<string> {
    const bucket = uniqueId('arch-');
    await ensureArchiveBucket(s3, bucket, config.s3.region);
    return bucket;
  }

  /** A new locked bucket with `n` records written and archived; the archive's object names in chain order. */
  async function archivedChain(tag: string, n: number, approvedAt?: number): Promise<{ bucket: string; keyPrefix: string; names: string[] }> {
    const bucket = await newLockedBucket();
    const keyPrefix = `/sys/force/${uniqueId(tag)}-`;
    await writeRecords(keyPrefix, n, approvedAt);
    const archiver = new ForceArchiver({ cluster, s3, bucket, logger, keyPrefix, originSecret });
    try {
      assert.equal((await archiver.tick()).archived, n);
    } finally {
      await archiver.close();
    }
    const names: string[] = [];
    for await (const o of s3.listObjectsV2(bucket, 'force/', true)) if (o.name) names.push(o.name);
    return { bucket, keyPrefix, names: names.sort() };
  }

  it('archives each record as one object with COMPLIANCE retention seven years out, which MinIO will not delete or replace', async () => {
    const bucket = await newLockedBucket();
    const keyPrefix = `/sys/force/${uniqueId('a')}-`;
    await writeRecords(keyPrefix, 3);
    const archiver = new ForceArchiver({ cluster, s3, bucket, logger, keyPrefix, originSecret });
    try {
      const result = await archiver.tick();
      assert.equal(result.archived, 3);
      assert.equal((await archiver.tick()).archived, 0, 'a second pass archives nothing again');
    } finally {
      await archiver.close();
    }
    const objects: Array<{ name: string; versionId: string }> = [];
    for await (const o of s3.listObjectsV2(bucket, 'force/', true)) if (o.name) objects.push({ name: o.name, versionId: '' });
    assert.equal(objects.length, 3);
    const first = objects[0] as { name: string };
    const stat = await s3.statObject(bucket, first.name);
    const versionId = stat.versionId as string;
    assert.ok(versionId, 'the archive is versioned');
    const retention = (await s3.getObjectRetention(bucket, first.name, { versionId })) as { mode: string; retainUntilDate: string };
    assert.equal(retention.mode, 'COMPLIANCE');
    const years = (Date.parse(retention.retainUntilDate) - Date.now()) / (365.25 * 86_400_000);
    assert.ok(years > 6.99 && years < 7.01, `retention ends ${retention.retainUntilDate} (${years.toFixed(3)} years out)`);
    const original = await readObjectText(s3, bucket, first.name);

    // Delete the version: refused (WORM).
    await assert.rejects(s3.removeObject(bucket, first.name, { versionId }), (err: Error & { code?: string }) =>
      /WORM|AccessDenied|InvalidRequest/.test(`${err.code} ${err.message}`),
    );
    // Even with a governance bypass: COMPLIANCE cannot be bypassed.
    await assert.rejects(s3.removeObject(bucket, first.name, { versionId, governanceBypass: true }));
    // Replace it the way the archiver writes (If-None-Match): refused.
    const body = Buffer.from('{"forged":true}');
    await assert.rejects(
      s3.makeRequestAsync(
        {
          method: 'PUT',
          bucketName: bucket,
          objectName: first.name,
          headers: { 'if-none-match': '*', 'content-md5': createHash('md5').update(body).digest('base64') },
        },
        body,
        [200],
      ),
      (err: Error & { code?: string }) => err.code === 'PreconditionFailed',
    );
    // A plain put or a delete marker only stacks a new version on top: the original survives, and verify notices.
    await s3.putObject(bucket, first.name, body, body.length);
    await s3.removeObject(bucket, objects[1]?.name as string);
    const survived = await s3.getObject(bucket, first.name, { versionId });
    const chunks: Buffer[] = [];
    for await (const c of survived) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString('utf8'), original, 'the original version is intact');
    assert.equal(((await s3.getObjectRetention(bucket, first.name, { versionId })) as { mode: string }).mode, 'COMPLIANCE');
    const verify = await verifyArchive(s3, bucket);
    const kinds = verify.clusters[0]?.problems.map((p) => p.kind).sort();
    // The delete marker is also named as such (object versions are checked), beside the gap it leaves in the chain.
    assert.deepEqual(kinds, ['hidden', 'missing', 'unreadable'], JSON.stringify(verify));
  });

  it('verify reports the newest record hidden behind a delete marker, which the chain alone cannot see', async () => {
    const { bucket, names } = await archivedChain('h', 3);
    assert.equal((await verifyArchive(s3, bucket)).ok, true);
    // A plain DELETE on a versioned bucket: a real delete marker on top of the locked newest record.
    await s3.removeObject(bucket, names[2] as string);
    const result = await verifyArchive(s3, bucket);
    assert.equal(result.ok, false, JSON.stringify(result));
    assert.deepEqual(
      result.clusters[0]?.problems.map((p) => [p.kind, p.object]),
      [['hidden', names[2]]],
    );
  });

  it('verify names a well-linked record appended after the head by a bucket writer: unproven, and not in the audit log', async () => {
    const { bucket, keyPrefix, names } = await archivedChain('ap', 2, Date.now() - 3_600_000);
    const head = JSON.parse(await readObjectText(s3, bucket, names[1] as string)) as ArchivedForceRecord;
    // The insider has the bucket's write credentials, not the API's key: a record of their own, linked after the head.
    const id = `${keyPrefix.split('/').pop()}forged`;
    const fields = { ...forceFields(id, Date.now() - 3_600_000), reason: 'routine maintenance' };
    const forged = chainRecord({ seq: head.seq, hash: head.hash }, head.cluster, {
      key: `${keyPrefix}forged`,
      value: JSON.stringify({ ...fields, mac: forceMac(Buffer.from('not-the-key'), fields) }),
      createRevision: String(BigInt(head.createRevision) + 5n),
    });
    const name = archiveObjectName('force/', forged.cluster, forged.createRevision, forged.key);
    const body = Buffer.from(JSON.stringify(forged));
    await s3.putObject(bucket, name, body, body.length);

    assert.equal((await verifyArchive(s3, bucket)).ok, true, 'the chain alone accepts it: that is the attack');
    const proofs = await verifyArchive(s3, bucket, { originSecret });
    assert.deepEqual(
      proofs.clusters[0]?.problems.map((p) => [p.kind, p.object]),
      [['unproven', name]],
      JSON.stringify(proofs),
    );
    // The audit log holds the two genuine records only: the appended one is not among them.
    const values = await Promise.all(names.map(async (n) => JSON.parse(await readObjectText(s3, bucket, n)) as ArchivedForceRecord));
    const expected = values.map((r) => ({ cluster: r.cluster, key: r.key, createRevision: r.createRevision, value: r.value }));
    assert.equal(expected.length, 2);
    const both = await verifyArchive(s3, bucket, { expected });
    assert.deepEqual(
      both.clusters[0]?.problems.map((p) => [p.kind, p.object]),
      [['not-in-audit-log', name]],
      JSON.stringify(both),
    );
  });

  it('verify does not expect in the audit log a genuine record put inside a recorded gap (a compaction while no tailer ran); outside every gap it is named', async () => {
    const { bucket, names } = await archivedChain('gp', 2, Date.now() - 3_600_000);
    const values = await Promise.all(names.map(async (n) => JSON.parse(await readObjectText(s3, bucket, n)) as ArchivedForceRecord));
    const [captured, lost] = values as [ArchivedForceRecord, ArchivedForceRecord];
    const expected = [{ cluster: captured.cluster, key: captured.key, createRevision: captured.createRevision, value: captured.value }];
    const revision = BigInt(lost.createRevision);
    const named = await verifyArchive(s3, bucket, { expected, originSecret });
    assert.deepEqual(
      named.clusters[0]?.problems.map((p) => [p.kind, p.object]),
      [['not-in-audit-log', names[1]]],
      JSON.stringify(named),
    );
    const gaps = [{ cluster: lost.cluster, from: revision - 3n, to: revision + 3n }];
    const excused = await verifyArchive(s3, bucket, { expected, originSecret, gaps });
    assert.equal(excused.ok, true, JSON.stringify(excused));
    assert.equal(excused.clusters[0]?.inGaps, 1);
    // Another cluster's gap, or one that ends before it, excuses nothing.
    for (const other of [[{ ...gaps[0]!, cluster: 'elsewhere' }], [{ ...gaps[0]!, to: revision - 1n }]]) {
      assert.equal((await verifyArchive(s3, bucket, { expected, originSecret, gaps: other })).ok, false);
    }
  });

  it('verify names a genuine record copied into the chain again (proof intact), without the audit log', async () => {
    const { bucket, names } = await archivedChain('cp', 2, Date.now() - 3_600_000);
    const [first, head] = await Promise.all(names.map(async (n) => JSON.parse(await readObjectText(s3, bucket, n)) as ArchivedForceRecord));
    const copy = chainRecord({ seq: head!.seq, hash: head!.hash }, head!.cluster, {
      key: first!.key,
      value: first!.value,
      createRevision: String(BigInt(head!.createRevision) + 7n),
    });
    const name = archiveObjectName('force/', copy.cluster, copy.createRevision, copy.key);
    const body = Buffer.from(JSON.stringify(copy));
    await s3.putObject(bucket, name, body, body.length);
    const result = await verifyArchive(s3, bucket, { originSecret });
    assert.deepEqual(
      result.clusters[0]?.problems.map((p) => [p.kind, p.object]),
      [['duplicate', name]],
      JSON.stringify(result),
    );
  });

  it('chains records in commit order, and verify reports a removed and an altered record (unlocked bucket built the same way)', async () => {
    const bucket = uniqueId('unl-');
    await s3.makeBucket(bucket, config.s3.region);
    const keyPrefix = `/sys/force/${uniqueId('b')}-`;
    await writeRecords(keyPrefix, 6);
    await assert.rejects(new ForceArchiver({ cluster, s3, bucket, logger, keyPrefix, originSecret }).tick(), (err) =>
      isLockauditError(err, 'LOCKAUDIT_ERR_ARCHIVE_UNLOCKED'),
    );
    const archiver = new ForceArchiver({ cluster, s3, bucket, logger, keyPrefix, originSecret, allowUnlocked: true });
    try {
      assert.equal((await archiver.tick()).archived, 6);
    } finally {
      await archiver.close();
    }
    const names: string[] = [];
    for await (const o of s3.listObjectsV2(bucket, 'force/', true)) if (o.name) names.push(o.name);
    names.sort();
    const records = await Promise.all(names.map(async (n) => JSON.parse(await readObjectText(s3, bucket, n)) as ArchivedForceRecord));
    assert.deepEqual(
      records.map((r) => r.seq),
      [1, 2, 3, 4, 5, 6],
      'seq follows the create revision',
    );
    for (let i = 1; i < records.length; i++) assert.equal(records[i]?.prevHash, records[i - 1]?.hash);
    assert.equal((await verifyArchive(s3, bucket)).ok, true);

    // Remove seq 3; alter seq 5 and recompute its hash (a careful forger).
    await s3.removeObject(bucket, names[2] as string);
    const forged = { ...(records[4] as ArchivedForceRecord), value: (records[4] as ArchivedForceRecord).value.replace('worker wedged', 'routine maintenance') };
    forged.record = JSON.parse(forged.value) as ArchivedForceRecord['record'];
    forged.hash = recordHash(forged);
    const forgedBody = Buffer.from(JSON.stringify(forged));
    await s3.putObject(bucket, names[4] as string, forgedBody, forgedBody.length);
    const result = await verifyArchive(s3, bucket, { cluster: cluster.name });
    assert.equal(result.ok, false);
    const problems = result.clusters[0]?.problems ?? [];
    assert.ok(
      problems.some((p) => p.kind === 'missing' && p.seq === 3),
      JSON.stringify(problems),
    );
    assert.ok(
      problems.some((p) => (p.kind === 'broken-link' || p.kind === 'altered') && p.seq === 5),
      JSON.stringify(problems),
    );

    // The audit log's view catches what a chain cannot: the last record removed.
    await s3.removeObject(bucket, names[5] as string);
    const expected = records.map((r) => ({ cluster: r.cluster, key: r.key, createRevision: r.createRevision, value: r.value }));
    const withLog = await verifyArchive(s3, bucket, { expected });
    assert.ok(
      withLog.clusters[0]?.problems.some((p) => p.kind === 'not-archived' && p.object === names[5]),
      JSON.stringify(withLog.clusters[0]?.problems),
    );

    // The CLI reports the same and exits 1.
    const cli = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "const { main } = await import('./cli/main.ts'); await main(['node', 'lockaudit', ...process.argv.slice(1)]); process.exit(process.exitCode ?? 0);",
        '--',
        'archive',
        'verify',
        '--no-audit-log',
      ],
      {
        cwd: projectRoot,
        env: { ...process.env, LOCKAUDIT_S3_ARCHIVE_BUCKET: bucket },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.equal(cli.status, 1, cli.stderr);
    assert.match(cli.stdout, /FAIL\s+local: \d+ record/);
    assert.match(cli.stdout, /missing\s+record seq 3 is missing/);
  });

  it('raises the alarm (gauge and /readyz) while an old record is not archived, and clears it once it is', async () => {
    const bucket = await newLockedBucket();
    const keyPrefix = `/sys/force/${uniqueId('c')}-`;
    await writeRecords(keyPrefix, 1, Date.now() - 2 * 3_600_000);
    const health = new HealthState();
    const registry = createMetricsRegistry();
    const metrics = exportMetrics(registry);
    // S3 that does not answer: the record cannot be archived.
    const deadS3 = new Client({
      endPoint: '127.0.0.1',
      port: 1,
      useSSL: false,
      accessKey: 'x',
      secretKey: 'xxxxxxxx',
      region: config.s3.region,
      pathStyle: true,
    });
    const stuck = new ForceArchiver({ cluster, s3: deadS3, bucket, logger, keyPrefix, originSecret, health, metrics });
    await assert.rejects(stuck.tick());
    await stuck.close();
    assert.deepEqual(
      health.alarms().map((a) => a.name),
      [alarmName(cluster.name)],
    );
    assert.match(await registry.metrics(), new RegExp(`lockaudit_force_unarchived_late_records\\{cluster="${cluster.name}"\\} 1`));
    const working = new ForceArchiver({ cluster, s3, bucket, logger, keyPrefix, originSecret, health, metrics });
    try {
      assert.equal((await working.tick()).archived, 1);
    } finally {
      await working.close();
    }
    assert.deepEqual(health.alarms(), []);
    assert.match(await registry.metrics(), new RegExp(`lockaudit_force_unarchived_late_records\\{cluster="${cluster.name}"\\} 0`));
  });

  it('archives a new record within moments of its commit (watch), in the running loop', async () => {
    const bucket = await newLockedBucket();
    const keyPrefix = `/sys/force/${uniqueId('d')}-`;
    const archiver = new ForceArchiver({ cluster, s3, bucket, logger, keyPrefix, originSecret, pollIntervalMs: 30_000 });
    archiver.start();
    try {
      await new Promise((r) => setTimeout(r, 500)); // the watch is up
      const committed = Date.now();
      await writeRecords(keyPrefix, 1);
      let found = false;
      while (!found && Date.now() - committed < 10_000) {
        for await (const o of s3.listObjectsV2(bucket, 'force/', true)) if (o.name) found = true;
        if (!found) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(found, 'archived within 10 s although the poll interval is 30 s');
    } finally {
      await archiver.close();
    }
  });

  it("never archives a force record without the API's proof: an insider's hand-written record is alarmed, not chained into COMPLIANCE", async () => {
    const bucket = await newLockedBucket();
    const keyPrefix = `/sys/force/${uniqueId('f')}-`;
    const [genuine] = await writeRecords(keyPrefix, 1);
    const id = `${keyPrefix.split('/').pop()}forged`;
    // What an insider with etcdctl writes: the record's shape, two operators who approved nothing — without the
    // secret: no MAC, a MAC made with a guessed key, and a genuine record's MAC copied onto another id.
    const fields = { ...forceFields(id, Date.now()), approver: 'mallory@corp' };
    const copied = JSON.parse((await etcd.get(genuine as string).string()) ?? '{}') as ForceRecord;
    await lease.put(`${keyPrefix}forged`).value(JSON.stringify(fields));
    await lease
      .put(`${keyPrefix}guessed`)
      .value(JSON.stringify({ ...fields, id: `${id.replace('forged', 'guessed')}`, mac: forceMac(Buffer.from('guess'), fields) }));
    await lease.put(`${keyPrefix}copied`).value(JSON.stringify({ ...copied, id: `${id.replace('forged', 'copied')}` }));
    const health = new HealthState();
    const archiver = new ForceArchiver({ cluster, s3, bucket, logger, keyPrefix, originSecret, health });
    try {
      const result = await archiver.tick();
      assert.equal(result.archived, 1, 'only the genuine record is archived');
      assert.equal(result.pending, 0, 'a forged record is not waiting to be archived either');
    } finally {
      await archiver.close();
    }
    const names: string[] = [];
    for await (const o of s3.listObjectsV2(bucket, 'force/', true)) if (o.name) names.push(o.name);
    assert.equal(names.length, 1, JSON.stringify(names));
    const archived = JSON.parse(await readObjectText(s3, bucket, names[0] as string)) as ArchivedForceRecord;
    assert.equal(archived.key, genuine);
    const alarms = health.alarms();
    assert.equal(alarms.length, 1, JSON.stringify(alarms));
    assert.equal(alarms[0]?.code, 'LOCKAUDIT_ALARM_FOREIGN_WRITE');
    assert.match(alarms[0]?.message ?? '', /force record/);
  });
});
