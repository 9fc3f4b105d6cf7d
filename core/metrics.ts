// One Prometheus registry per process (no global default registry), with the
// process metrics under the lockaudit_ prefix. Labels stay bounded: cluster,
// namespace, class, reason — never a key or a token.
import { collectDefaultMetrics, Registry } from 'prom-client';

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'lockaudit_' });
  return registry;
}

/**
 * A metric set made once per registry: several clusters (or sinks) of one
 * process share the registry, and prom-client refuses a second metric of the
 * same name on it.
 */
export function oncePerRegistry<T>(create: (registers: Registry[]) => T): (registry: Registry) => T {
  const byRegistry = new WeakMap<Registry, T>();
  return (registry) => {
    const existing = byRegistry.get(registry);
    if (existing) return existing;
    const made = create([registry]);
    byRegistry.set(registry, made);
    return made;
  };
}
