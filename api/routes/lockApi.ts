// The embedded lock API as one route plugin: it builds the LockService for
// the cluster it serves (the first configured one by default), registers the
// lock routes, and closes the service (and its etcd client) on app close.
// The process that writes a fail-open spool ships it (issue 11, defect 5):
// an API-only host has no tailer to do it. Shipping is idempotent by spool
// id, so a tailer in the same process shipping the same file changes nothing.
import type { AuditStore } from '../../core/clickhouse.js';
import type { EtcdCluster } from '../../core/config.js';
import { originSecret } from '../../core/originSecret.js';
import { asPlugin, type RoutePlugin } from '../types.js';
import { LockService, type LockServiceOptions } from '../../lock/service.js';
import type { GrantHighWaterSource } from '../../lock/sharedHighWater.js';
import { SpoolShipper } from '../../tailer/spoolShipper.js';
import { classRoutes } from './classes.js';
import { epochRoutes } from './epoch.js';
import { forceReleaseRoutes } from './forceReleases.js';
import { lockRoutes } from './locks.js';
import { sessionRoutes } from './sessions.js';

export interface LockApiOptions extends Partial<Omit<LockServiceOptions, 'logger' | 'metrics' | 'dataDir' | 'cluster' | 'highWaterSource'>> {
  /** The shared high-water over this app's audit store (roles/ wires the captured grants in); absent: none. */
  highWaterSource?: (store: AuditStore) => GrantHighWaterSource;
  /** The cluster to serve; default the first configured one. */
  cluster?: EtcdCluster;
  /** A service built elsewhere (then not closed by the app). */
  service?: LockService;
  /** Receives the service once built (tests, the simulator). */
  onService?: (service: LockService) => void;
  /** How often this process ships its own fail-open spool, ms (default 5000); 0: not at all. */
  spoolShipIntervalMs?: number;
}

export function lockApi(options: LockApiOptions = {}): RoutePlugin {
  return async function lockApi(app, { ctx }) {
    let service = options.service;
    if (!service) {
      const cluster = options.cluster ?? ctx.config.etcd.clusters[0];
      if (!cluster) throw new Error('lock API: no etcd cluster is configured');
      const owned = new LockService({
        ...options,
        cluster,
        dataDir: ctx.config.dataDir,
        originSecret: originSecret(ctx.config),
        logger: ctx.logger,
        metrics: ctx.metrics,
        highWaterSource: options.highWaterSource?.(ctx.store),
      });
      const interval = options.spoolShipIntervalMs ?? 5_000;
      const shipper = interval > 0 ? new SpoolShipper(ctx.store, cluster.name, ctx.config.dataDir, ctx.logger.child({ component: 'spool-shipper', cluster: cluster.name })) : undefined;
      shipper?.start(interval);
      app.addHook('onClose', async () => {
        await owned.close(); // flushes the spool first
        await shipper?.stop();
        await shipper?.shipOnce().catch(() => 0);
      });
      await owned.start();
      service = owned;
    }
    options.onService?.(service);
    const lock = service;
    for (const routes of [sessionRoutes, lockRoutes, classRoutes, forceReleaseRoutes, epochRoutes]) await app.register(asPlugin(routes(lock)), { ctx });
  };
}
