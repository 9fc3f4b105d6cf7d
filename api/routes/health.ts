// /healthz (the process answers), /readyz (every dependency answers the way
// the real path uses it, and no alarm is raised), /metrics (Prometheus).
import { checkAll } from '../../platform/dependencyChecks.js';
import type { App, AppContext } from '../types.js';

export async function healthRoutes(app: App, ctx: AppContext): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const checks = await ctx.health.checks(() => checkAll(ctx.config, ctx.store, { deep: false, logger: ctx.logger }));
    const alarms = ctx.health.alarms();
    const ready = checks.every((c) => c.ok) && alarms.length === 0;
    return reply.status(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'degraded',
      checks: checks.map(({ name, ok, detail }) => ({ name, ok, detail })),
      alarms,
    });
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', ctx.metrics.contentType);
    return ctx.metrics.metrics();
  });
}
