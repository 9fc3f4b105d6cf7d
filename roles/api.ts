// The api role: starts the lock engine for its cluster (roles/lockEngine.ts),
// builds the app around it and listens on config.host:config.port. The
// engine starts before the app and closes after it: requests drain first,
// then the spool is flushed and shipped.
import type { LockService } from '../lock/service.js';
import type { RoleHandle, Runtime } from '../platform/runtime.js';
import { buildApp, type App, type RoutePlugin } from '../api/app.js';
import { settlesWithin } from '../platform/deadline.js';
import { lockCluster, startLockEngine } from './lockEngine.js';
import { startCanary } from './canary/index.js';
import { canaryMetrics } from './canary/monitor.js';

export async function startApiRole(runtime: Runtime, routes: (lock: LockService) => readonly RoutePlugin[]): Promise<RoleHandle & { url: string }> {
  const cluster = lockCluster(runtime.config);
  const engine = await startLockEngine(runtime, { cluster });
  let app: App | undefined;
  try {
    app = await buildApp(runtime, routes(engine.service));
    const url = await app.listen({ host: runtime.config.host, port: runtime.config.port });
    runtime.logger.info({ url }, 'api listening');
    const listening = app;
    // Named in /metrics from the start, canary or not (deploy/prometheus alerts on them).
    canaryMetrics(runtime.metrics);
    const interval = runtime.config.api.canaryIntervalSeconds;
    const canary = interval > 0 ? startCanary(runtime, engine.service, { cluster: cluster.name, intervalMs: interval * 1000 }) : undefined;
    return {
      name: 'api',
      url,
      // fastify's close drains in-flight requests (preClose → onClose), for at most api.shutdownDrainMs (default half
      // the shutdown deadline): a long request (a report, an on-demand risk register on a loaded store) would
      // otherwise hold the whole shutdown past it (a CI run: "still closing api" after 20 s). Past that, its
      // connection is closed under it.
      close: async () => {
        try {
          await canary?.close();
          const drained = listening.close();
          const drainMs = runtime.config.api.shutdownDrainMs ?? Math.floor(runtime.config.shutdownTimeoutMs / 2);
          if (!(await settlesWithin(drained, drainMs))) {
            runtime.logger.warn({ drainMs }, 'requests still in flight at shutdown: closing their connections');
            listening.server.closeAllConnections();
            await drained;
          }
        } finally {
          await engine.close();
        }
      },
    };
  } catch (err) {
    await app?.close().catch(() => undefined);
    await engine.close();
    throw err;
  }
}
