// One Prometheus registry per process (no global default registry), with the
// process metrics under the lockaudit_ prefix. Labels stay bounded: cluster,
// namespace, class, reason — never a key or a token.
import { collectDefaultMetrics, Registry } from 'prom-client';

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'lockaudit_' });
  return registry;
}
