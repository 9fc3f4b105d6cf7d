// The digest key's life against real MinIO and chdb, driven through the CLI
// as an operator would (docs/keys.md): `lockaudit keys rotate` on a running
// worker hands signing over in the next digest, signed by both keys, after
// which the old key is refused; a lost key is never replaced silently — the
// worker stops with an alarm — and `lockaudit keys recover` lets the chain go
// on under a new key that `verify` trusts only from the verifier's keyring,
// saying so in every verification.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import {
  createDigestKeyFile,
  DIGEST_KEY_FILE,
  DIGEST_KEYRING_FILE,
  DIGEST_NEXT_KEY_FILE,
  DIGEST_RECOVERY_FILE,
  digestSigner,
  keyringOf,
  parseKeyring,
  type DigestSigner,
} from '../../core/digestKey.js';
import { createLogger } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';
import { createS3Client } from '../../core/s3.js';
import { digestObjectName, signDigest, signManifest, type Digest, type DigestBody } from '../../exporters/digests/format.js';
import { workerKeyOptions } from '../../exporters/digests/service.js';
import { formatVerifyResult, verifyDigests } from '../../exporters/digests/verify.js';
import { DigestWorker, readChain } from '../../exporters/digests/worker.js';
import { ExportRecords, runComplianceExport } from '../../exporters/compliance/complianceExport.js';
import { manifestName } from '../../exporters/storage/manifest.js';
import { putArchiveJson, readObjectText } from '../../exporters/storage/objectStore.js';
import { ensureHistoryBucket } from '../../platform/buckets.js';
import { HealthState } from '../../platform/health.js';
import { seedDigestRecord } from '../support/digestRecord.js';
import { tempDir, tempStore, testConfig, uniqueId } from '../support/env.js';

const run = promisify(execFile);
const BIN = path.join(projectRoot, 'bin', 'lockaudit.js');
const config = testConfig();
const s3 = createS3Client(config.s3);
const logger = createLogger('silent');
const pub = (s: DigestSigner) => createPublicKey(s.publicKeyPem);

/** `lockaudit <args>` on a data dir of its own (no key in the environment). */
async function cli(dataDir: string, args: string[], more: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LOCKAUDIT_DIGEST_')));
  try {
    const r = await run(process.execPath, [BIN, ...args], { cwd: projectRoot, env: { ...env, LOCKAUDIT_DATA_DIR: dataDir, ...more } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('digest key rotation and loss', { timeout: 180_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  const dirs: Array<() => void> = [];
  before(async () => {
    ({ store, close: closeStore } = await tempStore());
  });
  after(async () => {
    await closeStore();
    for (const remove of dirs) remove();
  });

  /** A cluster with `seconds` of sealed record, an archive bucket, and a deployment data dir whose worker is wired as the worker role wires it. */
  async function deployment(seconds: number) {
    const cluster = uniqueId('dk');
    const bucket = uniqueId('dkarch-');
    await s3.makeBucket(bucket, config.s3.region);
    const startMs = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;
    await seedDigestRecord(store, cluster, startMs, seconds);
    const dir = tempDir('lockaudit-keys-');
    dirs.push(dir.remove);
    const cfg = testConfig({ LOCKAUDIT_DATA_DIR: dir.dir });
    assert.equal(cfg.digestSigningKey ?? cfg.digestNextSigningKey ?? cfg.digestPublicKey, undefined, 'keys of the data dir, none from the environment');
    const health = new HealthState();
    const worker = (perRun = 3) =>
      new DigestWorker({
        cluster,
        store,
        s3,
        bucket,
        historyBucket: uniqueId('dknohist-'),
        signer: digestSigner(cfg),
        ...workerKeyOptions(cfg, logger),
        logger,
        health,
        periodMs: 1000,
        settleMs: 0,
        lookbackPeriods: 5,
        alarmAfterPeriods: 1_000,
        allowUnlocked: true,
        maxPeriodsPerRun: perRun,
      });
    const chain = async (): Promise<Digest[]> =>
      (await readChain(s3, bucket, cluster)).flatMap((e) => (e.digest ? [e.digest] : [])).sort((a, b) => a.seq - b.seq);
    const verify = (...trusted: DigestSigner[]) => verifyDigests({ s3, bucket, keyring: keyringOf(trusted.map(pub)), clusters: [cluster], fromMs: startMs });
    return {
      cluster,
      bucket,
      startMs,
      dir: dir.dir,
      cfg,
      health,
      worker,
      chain,
      verify,
      cli: (args: string[]) =>
        // This deployment's cluster and archive bucket: `keys recover` reads its chain.
        cli(dir.dir, args, {
          LOCKAUDIT_ETCD: `${cluster}=${(config.etcd.clusters[0] as { endpoints: string[] }).endpoints.join(',')}`,
          LOCKAUDIT_S3_ARCHIVE_BUCKET: bucket,
        }),
    };
  }

  it('keys rotate: the next digest hands over, signed by both; the old key alone verifies the chain; the retired key is refused after it', async () => {
    const d = await deployment(15);
    const A = digestSigner(d.cfg);
    const w = d.worker();
    assert.equal((await w.tick()).written, 3);

    // A next key planted in the data dir by whoever can create files there, without the current key's authorization:
    // not handed over to.
    createDigestKeyFile(path.join(d.dir, DIGEST_NEXT_KEY_FILE));
    assert.equal((await w.tick()).written, 3);
    assert.deepEqual(
      (await d.chain()).map((x) => [x.keyId, x.handover]),
      Array.from({ length: 6 }, () => [A.keyId, undefined]),
    );
    rmSync(path.join(d.dir, DIGEST_NEXT_KEY_FILE));

    const rotated = await d.cli(['keys', 'rotate']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, new RegExp(`key ${A.keyId} hands over to key [0-9a-f]{16}`));
    const again = await d.cli(['keys', 'rotate']);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /a rotation is already pending/);

    // The running worker sees the rotation on its next run.
    assert.equal((await w.tick()).written, 3);
    const ds = await d.chain();
    const handover = ds[6] as Digest;
    assert.equal(handover.keyId, A.keyId, 'the hand-over is signed by the current key');
    const B = handover.handover?.nextKeyId ?? assert.fail('seq 7 carries no hand-over');
    assert.ok(handover.nextSignature, 'and by the next one');
    assert.deepEqual(
      ds.slice(7).map((x) => x.keyId),
      [B, B],
    );
    // The data dir's next key became its key; the old private key is gone, its public half kept.
    assert.equal(existsSync(path.join(d.dir, DIGEST_NEXT_KEY_FILE)), false);
    assert.equal(digestSigner(d.cfg).keyId, B);
    assert.deepEqual([...parseKeyring(readFileSync(path.join(d.dir, DIGEST_KEYRING_FILE), 'utf8')).keys()], [A.keyId, B]);
    const listed = await d.cli(['keys', 'list']);
    assert.match(listed.stdout, new RegExp(`${B}  signing`));

    // A restarted worker (the promoted key file) goes on under B.
    assert.ok((await d.worker(100).tick()).written >= 4);
    const v = await d.verify(A);
    assert.equal(v.verdict, 'ok', formatVerifyResult(v).join('\n'));
    assert.deepEqual(
      v.keyChanges.map((c) => [c.seq, c.kind, c.fromKeyId, c.toKeyId]),
      [[7, 'handover', A.keyId, B]],
    );
    assert.match(formatVerifyResult(v).join('\n'), new RegExp(`seq 7 handed signing over from key ${A.keyId} to key ${B}`));

    // An auditor's export across the hand-over, checked with docs/verify-export.mjs and the keyring `keys list --pem` prints.
    const historyBucket = uniqueId('dkhist-');
    await ensureHistoryBucket(s3, { ...config.s3, historyBucket });
    const state = await new ExportRecords(store).create({
      format: 'csv',
      fromMs: d.startMs,
      toMs: d.startMs + 10_000,
      filters: { cluster: d.cluster },
      requestedBy: 'auditor@corp',
    });
    const done = await runComplianceExport(
      { store, s3, bucket: historyBucket, logger, digests: { signer: digestSigner(d.cfg), archiveBucket: d.bucket, clusters: [d.cluster] } },
      state.id,
    );
    const files = path.join(d.dir, 'auditor');
    mkdirSync(files);
    writeFileSync(path.join(files, 'manifest.json'), await readObjectText(s3, historyBucket, manifestName(done.objectKey)));
    writeFileSync(path.join(files, 'export.csv'), await readObjectText(s3, historyBucket, done.objectKey));
    writeFileSync(path.join(files, 'keyring.pem'), (await d.cli(['keys', 'list', '--pem'])).stdout);
    writeFileSync(path.join(files, 'old.pem'), A.publicKeyPem);
    const verifyExport = (keys: string) =>
      spawnSync(
        process.execPath,
        [path.join(projectRoot, 'docs/verify-export.mjs'), ...['--manifest', 'manifest.json', '--file', 'export.csv', '--public-key', keys]],
        { encoding: 'utf8', cwd: files },
      );
    const withRing = verifyExport('keyring.pem');
    assert.equal(withRing.status, 0, withRing.stdout + withRing.stderr);
    assert.match(withRing.stdout, new RegExp(`seq 7: signing handed over from key ${A.keyId} to key ${B} \\(signed by both\\)`));
    // The old key alone follows the chain's hand-over, but not the manifest the new key signed: it fails there, by name.
    const oldOnly = verifyExport('old.pem');
    assert.equal(oldOnly.status, 1, oldOnly.stdout);
    assert.match(oldOnly.stdout, new RegExp(`FAIL {2}manifest: signed by another key \\(key id ${B}`));
    // Whoever kept the retired key A signs a manifest of their own over the genuine digests (and any file): refused.
    const genuine = JSON.parse(readFileSync(path.join(files, 'manifest.json'), 'utf8')) as object;
    writeFileSync(path.join(files, 'manifest.json'), JSON.stringify(signManifest(genuine, A)));
    const retired = verifyExport('keyring.pem');
    assert.equal(retired.status, 1, retired.stdout);
    assert.match(retired.stdout, new RegExp(`the manifest is signed by key ${A.keyId}, but its digests end signed by key ${B}`));

    // Whoever kept the retired key signs the next seq: named, though the verifier trusts A.
    const head = (await d.chain()).at(-1) as Digest;
    const { hash: _h, signature: _s, nextSignature: _n, handover: _ho, ...rest } = head;
    const forged = signDigest({ ...(rest as DigestBody), seq: head.seq + 1, prevHash: head.hash, keyId: A.keyId, supersedes: null }, A);
    await putArchiveJson(s3, d.bucket, digestObjectName(d.cluster, forged.seq), forged, undefined);
    const after = await d.verify(A);
    assert.equal(after.verdict, 'tampered');
    assert.match(formatVerifyResult(after).join('\n'), /after the chain handed signing over from it \(seq 7\)/);
    await assert.rejects(d.worker().tick(), /invalid/);
    assert.ok(d.health.alarms().some((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_CHAIN_INVALID'));
  });

  it('a lost key is never replaced silently; keys recover goes on under a new key that verify trusts only from its own keyring', async () => {
    const d = await deployment(10);
    const A = digestSigner(d.cfg);
    assert.equal((await d.worker().tick()).written, 3);

    // The key file alone lost: refused by name while the keyring names A.
    rmSync(path.join(d.dir, DIGEST_KEY_FILE));
    assert.throws(() => digestSigner(d.cfg), new RegExp(`is missing, but this deployment has signed with key\\(s\\) ${A.keyId}`));
    // The whole data dir lost: a new key is made, but the worker signs nothing under it and says why.
    rmSync(path.join(d.dir, DIGEST_KEYRING_FILE));
    const lost = d.worker();
    await assert.rejects(lost.tick(), new RegExp(`signed by key ${A.keyId}`));
    const alarm = d.health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_KEY_UNKNOWN');
    assert.match(alarm?.message ?? '', new RegExp(`signed by key ${A.keyId}, which this worker does not hold`));
    assert.equal((await d.chain()).length, 3, 'nothing signed under the unknown key');
    const C = digestSigner(d.cfg);

    const badId = await d.cli(['keys', 'recover', '--lost-key-id', 'nope', '--reason', 'host destroyed, no backup']);
    assert.equal(badId.code, 2);
    assert.match(badId.stderr, /--lost-key-id: "nope" is not a key id/);
    // Only the key the chain is signed by now can be recovered from.
    const notLost = await d.cli(['keys', 'recover', '--lost-key-id', C.keyId, '--reason', 'host destroyed, no backup']);
    assert.equal(notLost.code, 2);
    assert.match(notLost.stderr, new RegExp(`no chain is signed by key ${C.keyId} now \\(${d.cluster}: `));
    // The keyring went with the data dir: the lost key's public half is needed to check the chain the recovery goes on from.
    const noPublic = await d.cli(['keys', 'recover', '--lost-key-id', A.keyId, '--reason', 'host destroyed, no backup']);
    assert.equal(noPublic.code, 2);
    assert.match(noPublic.stderr, /--public-key: the keyring does not hold the lost key/);
    const aPem = path.join(d.dir, 'auditor-copy.pem');
    writeFileSync(aPem, A.publicKeyPem);
    const ok = await d.cli(['keys', 'recover', '--lost-key-id', A.keyId, '--reason', 'host destroyed, no backup', '--public-key', aPem]);
    assert.equal(ok.code, 0, ok.stderr);
    // The key the worker made in the lost data dir is set aside, never taken as the new key (whoever could create
    // that file may hold it): a fresh one.
    const D = digestSigner(d.cfg);
    assert.notEqual(D.keyId, C.keyId);
    assert.ok(existsSync(path.join(d.dir, `digest-signing-key.replaced-${C.keyId}.pem`)));
    assert.match(ok.stdout, new RegExp(`goes on under key ${D.keyId}`));

    // The stopped worker picks the recovery up on its next run.
    assert.equal((await lost.tick()).written, 3);
    assert.equal(existsSync(path.join(d.dir, DIGEST_RECOVERY_FILE)), false, 'the authorization is spent once used');
    assert.equal(
      d.health.alarms().some((a) => a.code === 'LOCKAUDIT_ALARM_DIGEST_KEY_UNKNOWN'),
      false,
      'cleared once it signs',
    );
    const recovery = (await d.chain())[3] as Digest;
    assert.equal(recovery.keyId, D.keyId, 'the running worker read the new key');
    assert.deepEqual([recovery.recovery?.lostKeyId, recovery.recovery?.reason], [A.keyId, 'host destroyed, no backup']);
    assert.equal(recovery.prevHash, ((await d.chain())[2] as Digest).hash, 'linked to the last digest of the lost key');

    const untrusted = await d.verify(A);
    assert.equal(untrusted.verdict, 'tampered');
    assert.match(formatVerifyResult(untrusted).join('\n'), /a recovery signed by key [0-9a-f]{16}, which your keyring does not hold/);
    const trusted = await d.verify(A, D);
    assert.equal(trusted.verdict, 'ok', formatVerifyResult(trusted).join('\n'));
    assert.match(
      formatVerifyResult(trusted).join('\n'),
      new RegExp(
        `RECOVERED  ${d.cluster} chain: seq 4 recovered the chain after key ${A.keyId} was lost: signed from then on by key ${D.keyId}.*host destroyed, no backup`,
      ),
    );
  });
});
