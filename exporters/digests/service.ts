// The digest worker of every configured cluster, as a background service of
// the worker role (beside the force archiver), signing with the deployment's
// digest key (core/digestKey.ts) and the keys a rotation or a recovery moves it to.
import { createPublicKey } from 'node:crypto';
import {
  authorizedRecovery,
  deploymentKeyring,
  digestKeyId,
  digestSigner,
  existingDigestPublicKeyPem,
  nextDigestSigner,
  promoteNextKeyFile,
  rotationProblem,
  spendRecovery,
  type DigestSigner,
} from '../../core/digestKey.js';
import type { Logger } from '../../core/logger.js';
import { isLockauditError } from '../../core/errors.js';
import { alarm, alarmName } from '../../platform/alarms.js';
import type { Config } from '../../core/config.js';
import { SHARED_TAILER_KEY_WARNING, tailerKey } from '../../core/tailerSecret.js';
import { createS3Client } from '../../core/s3.js';
import type { BackgroundService } from '../../platform/jobs.js';
import { digestMetrics } from './metrics.js';
import { DigestWorker, type DigestWorkerOptions } from './worker.js';

export function digestService(options: Partial<Pick<DigestWorkerOptions, 'allowUnlocked' | 'objectPrefix'>> = {}): BackgroundService {
  return {
    name: 'digest-worker',
    async start(runtime) {
      const { config } = runtime;
      const s3 = createS3Client(config.s3);
      const metrics = digestMetrics(runtime.metrics);
      const tailer = tailerKey(config);
      if (tailer.source === 'origin') runtime.logger.warn(SHARED_TAILER_KEY_WARNING);
      const secret = tailer.key;
      let workers: DigestWorker[] = [];
      let closed = false;
      let retry: NodeJS.Timeout | undefined;
      const missing = alarmName('LOCKAUDIT_ALARM_DIGEST_KEY_MISSING', {});
      // A key that cannot be loaded (a lost key file the keyring still names, an unreadable one) stops sealing, loudly,
      // and nothing else: tried again until it loads (`lockaudit keys recover` makes the new one).
      const begin = (): void => {
        let signer: DigestSigner;
        try {
          signer = digestSigner(config);
        } catch (err) {
          if (!isLockauditError(err, 'LOCKAUDIT_ERR_DIGEST_KEY')) throw err;
          runtime.health.raise(alarm('LOCKAUDIT_ALARM_DIGEST_KEY_MISSING', {}, { problem: err.message }));
          runtime.logger.error({ err: err.message }, 'digest: the signing key cannot be loaded; not sealing');
          if (!closed) retry = setTimeout(begin, KEY_RETRY_MS);
          return;
        }
        runtime.health.clear(missing);
        workers = config.etcd.clusters.map(
          (cluster) =>
            new DigestWorker({
              cluster: cluster.name,
              store: runtime.store,
              s3,
              bucket: config.s3.archiveBucket,
              historyBucket: config.s3.historyBucket,
              signer,
              ...workerKeyOptions(config, runtime.logger.child({ service: 'digests' })),
              logger: runtime.logger.child({ service: 'digests', cluster: cluster.name }),
              health: runtime.health,
              metrics,
              periodMs: config.digests.periodSeconds * 1000,
              settleMs: config.digests.settleSeconds * 1000,
              lookbackPeriods: config.digests.lookbackPeriods,
              alarmAfterPeriods: config.digests.alarmAfterPeriods,
              pollIntervalMs: config.digests.pollIntervalMs,
              clockToleranceMs: config.digests.clockToleranceSeconds * 1000,
              tailerSecret: secret,
              ...options,
            }),
        );
        for (const w of workers) w.start();
        runtime.logger.info(
          { clusters: workers.map((w) => w.cluster), keyId: signer.keyId, periodSeconds: config.digests.periodSeconds },
          'digest workers started',
        );
      };
      begin();
      let closing: Promise<void> | undefined;
      return {
        name: 'digest-worker',
        close: () => {
          closed = true;
          clearTimeout(retry);
          return (closing ??= Promise.allSettled(workers.map((w) => w.close())).then(() => undefined));
        },
      };
    },
  };
}

/**
 * The worker's keys besides its own, each read every run: `lockaudit keys rotate` and `keys recover` act on a
 * running worker. A next key set in the environment is the operator's to swap (docs/keys.md); the data dir's becomes
 * the key file once the chain has handed over to it.
 */
export function workerKeyOptions(
  config: Config,
  logger: Logger,
): Pick<DigestWorkerOptions, 'ownSigner' | 'nextSigner' | 'keyring' | 'recovery' | 'handedOver' | 'recovered'> {
  return {
    ownSigner: () => digestSigner(config),
    nextSigner: () => {
      const next = nextDigestSigner(config);
      if (!next || config.digestNextSigningKey) return next; // the environment is the operator's
      const current = existingDigestPublicKeyPem(config);
      const problem = current
        ? rotationProblem(config.dataDir, { keyId: digestKeyId(createPublicKey(current)), publicKeyPem: current }, next)
        : 'no current key';
      if (!problem) return next;
      logger.error({ nextKeyId: next.keyId, problem }, 'digest: a next key the current key did not authorize; not handing over to it');
      return undefined;
    },
    keyring: () => deploymentKeyring(config),
    recovery: () => authorizedRecovery(config.dataDir),
    handedOver: (keyId) => {
      if (!config.digestNextSigningKey && !config.digestSigningKey) promoteNextKeyFile(config.dataDir, keyId);
    },
    recovered: (lostKeyId) => spendRecovery(config.dataDir, lostKeyId),
  };
}

/** How often a key that could not be loaded is tried again. */
const KEY_RETRY_MS = 10_000;
