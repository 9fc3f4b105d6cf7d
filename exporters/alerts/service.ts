// The alert sinks as a worker-role background service: one delivery loop per
// configured webhook and etcd cluster; close() stops them and waits.
import type { BackgroundService } from '../../platform/jobs.js';
import { alertMetrics } from './alertMetrics.js';
import { WebhookDelivery } from './webhookDelivery.js';

export function alertService(): BackgroundService {
  return {
    name: 'alert-sinks',
    async start(runtime) {
      const abort = new AbortController();
      const metrics = alertMetrics(runtime.metrics);
      const loops = runtime.config.alerts.webhooks.flatMap((sink) =>
        runtime.config.etcd.clusters.map((c) => new WebhookDelivery({ store: runtime.store, log: runtime.logger, metrics, cluster: c.name, sink }).run(abort.signal)),
      );
      let closing: Promise<void> | undefined;
      return {
        name: 'alert-sinks',
        close: () =>
          (closing ??= (async () => {
            abort.abort();
            await Promise.allSettled(loops);
          })()),
      };
    },
  };
}
