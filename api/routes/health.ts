// /healthz (the process answers), /readyz (every dependency answers the way
// the real path uses it: the process can serve), /metrics (Prometheus).
// A raised alarm is an alert (metrics, rules, sinks), listed for admins here,
// never a reason to take the process out of rotation: one write around the
// lock API would otherwise make every API process unready to a load balancer.
// Nothing for the unauthenticated beyond a status: which dependency failed,
// and where (host:port), is for admins; /metrics can require a token.
import { LockauditError } from '../../core/errors.js';
import { checkAll } from '../../platform/dependencyChecks.js';
import { PeerMetrics } from '../../platform/roleStatus.js';
import type { App, RouteOptions } from '../types.js';

export async function healthRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  // Under `lockaudit start` the other roles run as processes of their own: their metrics and alarms arrive here.
  const peers = new PeerMetrics(ctx.health);
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const checks = await ctx.health.checks(() => checkAll(ctx.config, ctx.store, { deep: false, logger: ctx.logger }));
    const alarms = ctx.health.allAlarms();
    const ready = checks.every((c) => c.ok);
    const status = ready ? 'ready' : 'unready';
    if (!request.identity?.roles.includes('admin')) return reply.status(ready ? 200 : 503).send({ status });
    return reply.status(ready ? 200 : 503).send({
      status,
      checks: checks.map(({ name, ok, detail }) => ({ name, ok, detail })),
      alarms,
      // The end-to-end canary, when it runs here: each stage's age; the first one behind is where the audit path stops.
      ...(ctx.health.canary() ? { canary: ctx.health.canary() } : {}),
    });
  });

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (ctx.config.api.metricsRequireToken && !request.identity) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_AUTH_REQUIRED',
        'a valid API token is required for /metrics (LOCKAUDIT_METRICS_REQUIRE_TOKEN); send Authorization: Bearer <token>',
      );
    }
    // Its series are labelled by namespace and class: every namespace's, so a token scoped to some reads none.
    if (request.identity?.scope)
      throw new LockauditError('LOCKAUDIT_ERR_AUTH_SCOPE', "/metrics labels every namespace's series: a token scoped to namespaces or clusters reads none");
    reply.header('content-type', ctx.metrics.contentType);
    return peers.metrics(ctx.metrics);
  });
}
