// Metrics of the alert sinks, on the process registry. Labels are bounded:
// the sink's configured name and the cluster.
import { Counter, Gauge, type Registry } from 'prom-client';
import { oncePerRegistry } from '../../core/metrics.js';

export interface AlertMetrics {
  delivered: Counter<'sink' | 'cluster'>;
  failures: Counter<'sink' | 'cluster'>;
  deadLetters: Counter<'sink' | 'cluster'>;
  lagRevisions: Gauge<'sink' | 'cluster'>;
}

export const alertMetrics: (registry: Registry) => AlertMetrics = oncePerRegistry((registers) => {
  const labelNames = ['sink', 'cluster'] as const;
  return {
    delivered: new Counter({
      name: 'lockaudit_alert_events_delivered_total',
      help: 'Events a receiver acknowledged (duplicates after a retry count again).',
      labelNames,
      registers,
    }),
    failures: new Counter({
      name: 'lockaudit_alert_delivery_failures_total',
      help: 'Failed delivery attempts (network error, timeout, non-2xx); each is retried with backoff.',
      labelNames,
      registers,
    }),
    deadLetters: new Counter({
      name: 'lockaudit_alert_dead_letters_total',
      help: 'Events recorded in alert_dead_letters after maxAttempts failed deliveries.',
      labelNames,
      registers,
    }),
    lagRevisions: new Gauge({
      name: 'lockaudit_alert_lag_revisions',
      help: "Revisions between the tailer's checkpoint and the sink's position.",
      labelNames,
      registers,
    }),
  };
});
