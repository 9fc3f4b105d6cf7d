// /healthz (the process answers), /readyz (every dependency answers the way
// the real path uses it, and no alarm is raised), /metrics (Prometheus).
import { checkAll, type CheckResult } from '../core/dependencyChecks.js';
import type { App, AppContext } from './app.js';

export interface Alarm {
  name: string;
  message: string;
  since: string;
}

/** Readiness state shared by the roles of one process: alarms raised by the tailer and exporters degrade /readyz. */
export class HealthState {
  readonly #alarms = new Map<string, Alarm>();
  #cached: { at: number; checks: CheckResult[] } | undefined;
  #inflight: Promise<CheckResult[]> | undefined;

  raise(name: string, message: string): void {
    if (!this.#alarms.has(name)) this.#alarms.set(name, { name, message, since: new Date().toISOString() });
  }

  clear(name: string): void {
    this.#alarms.delete(name);
  }

  alarms(): Alarm[] {
    return [...this.#alarms.values()];
  }

  /** Dependency checks, cached for `maxAgeMs` so a busy probe does not hammer the dependencies. */
  async checks(run: () => Promise<CheckResult[]>, maxAgeMs = 2_000): Promise<CheckResult[]> {
    if (this.#cached && Date.now() - this.#cached.at < maxAgeMs) return this.#cached.checks;
    this.#inflight ??= run().then((checks) => {
      this.#cached = { at: Date.now(), checks };
      this.#inflight = undefined;
      return checks;
    });
    return this.#inflight;
  }
}

export async function healthRoutes(app: App, ctx: AppContext): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const checks = await ctx.health.checks(() => checkAll(ctx.config, ctx.store, { deep: false }));
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
