// The end-to-end canary of the api role (LOCKAUDIT_CANARY_INTERVAL_SECONDS):
// the loop acquires and releases a canary lock through the lock engine, and
// after each cycle the monitor reads how far the canary got (store, signed
// digest) and alarms at the first stage past its bound. /readyz lists the
// stages for admins.
import type { Logger } from '../../core/logger.js';
import { deploymentKeyring } from '../../core/digestKey.js';
import { createS3Client } from '../../core/s3.js';
import type { LockService } from '../../lock/service.js';
import type { RoleHandle, Runtime } from '../../platform/runtime.js';
import { CanaryLoop } from './loop.js';
import { canaryBounds, canaryMetrics, CanaryMonitor, type CanaryBounds } from './monitor.js';
import { CanaryFollower, type DigestSource } from './stages.js';

export interface CanaryOptions {
  /** The cluster's name as the tailer captures it (the lock engine's cluster). */
  cluster: string;
  intervalMs: number;
  /** Default: from the settings (monitor.ts canaryBounds). */
  bounds?: CanaryBounds;
  /** Default: the host's canary key (loop.ts canaryKey). */
  key?: string;
  logger?: Logger;
}

export function startCanary(runtime: Runtime, lock: LockService, options: CanaryOptions): RoleHandle {
  const { config } = runtime;
  // The sinks that subscribe to the canary are stages of it (their delivery is followed by their saved position).
  const sinks = config.alerts.webhooks.filter((w) => w.rules.some((r) => (r.kinds as readonly string[]).includes('canary')));
  const logger = (options.logger ?? runtime.logger).child({ component: 'canary', cluster: options.cluster });
  const bounds =
    options.bounds ??
    canaryBounds({
      intervalSeconds: options.intervalMs / 1000,
      digestPeriodSeconds: config.digests.periodSeconds,
      digestSettleSeconds: config.digests.settleSeconds,
      digestPollMs: config.digests.pollIntervalMs,
      sinks: sinks.map((s) => ({ name: s.name, pollMs: s.pollIntervalMs ?? 1_000 })),
    });
  const s3 = createS3Client(config.s3);
  let digestSource: DigestSource | undefined;
  let keyringReadAt = 0;
  const follower = new CanaryFollower({
    store: runtime.store,
    cluster: options.cluster,
    sinks: sinks.map((s) => s.name),
    digests: () => {
      // Looked for until found (the worker may make the deployment's key after this process started), then read again
      // each minute (a rotation adds a key).
      if (!digestSource || Date.now() - keyringReadAt > 60_000) {
        keyringReadAt = Date.now();
        const keyring = deploymentKeyring(config);
        if (keyring.size) digestSource = { s3, bucket: config.s3.archiveBucket, keyring };
      }
      return digestSource;
    },
  });
  const monitor = new CanaryMonitor({
    cluster: options.cluster,
    follower,
    grants: () => loop.grants(),
    bounds,
    health: runtime.health,
    metrics: canaryMetrics(runtime.metrics),
    logger,
  });
  // Not chained: a cycle whose stages are still being read is judged at once (monitor.ts), so nothing piles up.
  const observing = new Set<Promise<unknown>>();
  const loop = new CanaryLoop({
    lock,
    intervalMs: options.intervalMs,
    logger,
    // Enough of its grants for the slowest stage to catch up on (twice its bound).
    keep: Math.min(10_000, Math.ceil((2 * Math.max(...Object.values(bounds))) / options.intervalMs) + 10),
    ...(options.key ? { key: options.key } : {}),
    onCycle: (cycle) => {
      const judged = monitor
        .observe(cycle)
        .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'canary: not judged'))
        .finally(() => observing.delete(judged));
      observing.add(judged);
    },
  });
  loop.start();
  logger.info({ key: loop.key, intervalMs: options.intervalMs, bounds }, 'canary started');
  return {
    name: 'canary',
    close: async () => {
      await loop.close();
      // A judgement still reading waits at most a moment: its read has a timeout of its own, and nothing reads it now.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(observing), new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]).finally(() => clearTimeout(timer));
    },
  };
}
