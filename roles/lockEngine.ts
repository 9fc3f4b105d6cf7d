// The embedded lock engine of a process that serves the lock API: the
// LockService of one etcd cluster, chosen explicitly, and the shipper of its
// fail-open spool. The process that writes a spool ships it (issue 11,
// defect 5): an API-only host has no tailer to do it; shipping is idempotent
// by spool id, so a tailer in the same process shipping the same file changes
// nothing. Built here, in the roles' wiring, so the route plugin only
// registers routes and nothing outside the tailer reaches into tailer/.
import type { Config, EtcdCluster } from '../core/config.js';
import { LockauditError } from '../core/errors.js';
import { originSecret } from '../core/originSecret.js';
import { LockService, type LockServiceOptions } from '../lock/service.js';
import type { RoleHandle, Runtime } from '../platform/runtime.js';
import { SpoolShipper } from '../tailer/sink/spoolShipper.js';
import { storeHighWater } from './lockHighWater.js';
import { storeTwoPersonLog } from './twoPersonLog.js';

/** The configuration key that marks the cluster the lock API serves (on one entry of `etcd`). */
export const LOCK_CLUSTER_KEY = 'etcd[].lockApi';

/**
 * The etcd cluster the lock API serves: the only one configured, or the one
 * marked `lockApi: true`. Several clusters and none marked is ambiguous: a
 * start-up error naming the key, never a silent pick of the first.
 */
export function lockCluster(config: Pick<Config, 'etcd'>): EtcdCluster {
  const clusters = config.etcd.clusters;
  const names = (list: readonly EtcdCluster[]): string => list.map((c) => c.name).join(', ');
  const marked = clusters.filter((c) => c.lockApi === true);
  if (marked.length > 1)
    throw new LockauditError(
      'LOCKAUDIT_ERR_CONFIG_INVALID',
      `${LOCK_CLUSTER_KEY}: set on ${marked.length} clusters (${names(marked)}); the lock API serves one`,
    );
  const [chosen] = marked;
  if (chosen) return chosen;
  const [only, ...more] = clusters;
  if (!only) throw new LockauditError('LOCKAUDIT_ERR_CONFIG_INVALID', 'etcd: no etcd cluster is configured for the lock API');
  if (more.length > 0) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_CONFIG_INVALID',
      `${LOCK_CLUSTER_KEY}: ${clusters.length} etcd clusters are configured (${names(clusters)}) and none is marked for the lock API; set lockApi: true on one of them in the LOCKAUDIT_CONFIG file`,
    );
  }
  return only;
}

export interface LockEngineOptions extends Partial<
  Omit<LockServiceOptions, 'logger' | 'metrics' | 'dataDir' | 'cluster' | 'originSecret' | 'health' | 'twoPersonLog'>
> {
  /** The cluster to serve (see lockCluster()). */
  cluster: EtcdCluster;
  /** How often this process ships its own fail-open spool, ms (default 5000); 0: not at all. */
  spoolShipIntervalMs?: number;
}

export interface LockEngine extends RoleHandle {
  service: LockService;
}

/** Starts the lock service and its spool shipper; close() flushes the spool, stops the shipper and ships what is left. */
export async function startLockEngine(runtime: Runtime, options: LockEngineOptions): Promise<LockEngine> {
  const { cluster, spoolShipIntervalMs, ...serviceOptions } = options;
  const { config, logger, metrics, store } = runtime;
  // The shared high-water (the audit store's highest captured API grant): a new process, or one idle across a restore,
  // never grants below a token already issued (lock/sharedHighWater.ts).
  const secret = originSecret(config);
  const service = new LockService({
    highWaterSource: storeHighWater(store, secret, runtime.health),
    waiterLimits: { perKey: config.api.maxWaitersPerKey, total: config.api.maxWaiters },
    pendingRequestLimits: { total: config.api.maxPendingRequests, perKey: config.api.maxPendingRequestsPerKey },
    ...serviceOptions,
    cluster,
    dataDir: config.dataDir,
    originSecret: secret,
    logger,
    metrics,
    health: runtime.health,
    twoPersonLog: storeTwoPersonLog(store, cluster.name, logger),
  });
  const interval = spoolShipIntervalMs ?? 5_000;
  const shipper =
    interval > 0
      ? new SpoolShipper(store, cluster.name, config.dataDir, logger.child({ component: 'spool-shipper', cluster: cluster.name }), undefined, secret)
      : undefined;
  shipper?.start(interval);
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      await service.close(); // flushes the spool first
      await shipper?.stop();
      await shipper?.shipOnce().catch(() => 0);
    })());
  try {
    await service.start();
  } catch (err) {
    await close();
    throw err;
  }
  return { name: 'lock-engine', service, close };
}
