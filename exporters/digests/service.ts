// The digest worker of every configured cluster, as a background service of
// the worker role (beside the force archiver), signing with the deployment's
// digest key (core/digestKey.ts).
import { digestSigner } from '../../core/digestKey.js';
import { originSecret } from '../../core/originSecret.js';
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
      const signer = digestSigner(config);
      const metrics = digestMetrics(runtime.metrics);
      const secret = originSecret(config);
      const workers = config.etcd.clusters.map(
        (cluster) =>
          new DigestWorker({
            cluster: cluster.name,
            store: runtime.store,
            s3,
            bucket: config.s3.archiveBucket,
            historyBucket: config.s3.historyBucket,
            signer,
            logger: runtime.logger.child({ service: 'digests', cluster: cluster.name }),
            health: runtime.health,
            metrics,
            periodMs: config.digests.periodSeconds * 1000,
            settleMs: config.digests.settleSeconds * 1000,
            lookbackPeriods: config.digests.lookbackPeriods,
            alarmAfterPeriods: config.digests.alarmAfterPeriods,
            pollIntervalMs: config.digests.pollIntervalMs,
            clockToleranceMs: config.digests.clockToleranceSeconds * 1000,
            originSecret: secret,
            ...options,
          }),
      );
      for (const w of workers) w.start();
      runtime.logger.info(
        { clusters: workers.map((w) => w.cluster), keyId: signer.keyId, periodSeconds: config.digests.periodSeconds },
        'digest workers started',
      );
      let closing: Promise<void> | undefined;
      return { name: 'digest-worker', close: () => (closing ??= Promise.allSettled(workers.map((w) => w.close())).then(() => undefined)) };
    },
  };
}
