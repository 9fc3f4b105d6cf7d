// A child process for the digest crash test: opens its own embedded
// ClickHouse (chdb binds one data dir per process), or the store process
// every role shares (spec.store), seeds the record when
// asked, then runs the digest worker until nothing is left to seal, and
// prints the verifier's result as one JSON line. Killed with SIGKILL midway
// by the test; stopped only by its own pid.
import { createPublicKey, createPrivateKey } from 'node:crypto';
import { AuditStore } from '../../core/clickhouse.js';
import { keyringOf, signerFromPrivateKey } from '../../core/digestKey.js';
import { createLogger } from '../../core/logger.js';
import { migrate } from '../../core/migrations.js';
import { createS3Client } from '../../core/s3.js';
import { DigestWorker } from '../../exporters/digests/worker.js';
import { verifyDigests } from '../../exporters/digests/verify.js';
import { seedDigestRecord } from './digestRecord.js';
import { testConfig } from './env.js';

interface Spec {
  chPath: string;
  /** The store process to talk to instead (platform/storeServer.ts): the worker is then one process of several over one store. */
  store?: { url: string; password: string };
  cluster: string;
  bucket: string;
  historyBucket: string;
  privateKeyPem: string;
  startMs: number;
  seconds: number;
  seed: boolean;
}

const spec = JSON.parse(process.env.DIGEST_CHILD_SPEC as string) as Spec;
const config = testConfig();
const store = spec.store
  ? new AuditStore({ mode: 'server', url: spec.store.url, password: spec.store.password, user: 'lockaudit', database: 'lockaudit' })
  : new AuditStore({ mode: 'embedded', path: spec.chPath, database: 'lockaudit' });
await migrate(store);
if (spec.seed) await seedDigestRecord(store, spec.cluster, spec.startMs, spec.seconds);
process.stdout.write('seeded\n');
const s3 = createS3Client(config.s3);
const signer = signerFromPrivateKey(createPrivateKey(spec.privateKeyPem));
const worker = new DigestWorker({
  cluster: spec.cluster,
  store,
  s3,
  bucket: spec.bucket,
  historyBucket: spec.historyBucket,
  signer,
  logger: createLogger('silent'),
  periodMs: 1000,
  settleMs: 0,
  lookbackPeriods: 5,
  alarmAfterPeriods: 1_000_000,
  allowUnlocked: true,
});
for (;;) {
  const r = await worker.tick();
  if (r.written === 0 && r.behind === 0) break;
}
const result = await verifyDigests({
  s3,
  bucket: spec.bucket,
  keyring: keyringOf([createPublicKey(signer.publicKeyPem)]),
  clusters: [spec.cluster],
  fromMs: spec.startMs,
  store,
});
process.stdout.write(`${JSON.stringify({ ok: result.ok, periods: result.periods.length, firstFailure: result.firstFailure ?? null })}\n`);
await store.close();
