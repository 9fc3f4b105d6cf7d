// A real audit store with one of its calls intercepted, for tests that stop
// or break the tailer at an exact point (its start-position checks, a
// restore's marks) without mocking ClickHouse: every other call goes through.
import type { AuditStore } from '../../core/clickhouse.js';

type Call = (query: string, ...rest: unknown[]) => Promise<unknown>;

/** `store` whose `rows` or `command` goes through `around(query, proceed)`. */
export function interceptStore(
  store: AuditStore,
  method: 'rows' | 'command',
  around: (query: string, proceed: () => Promise<unknown>) => Promise<unknown>,
): AuditStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === method) return async (query: string, ...rest: unknown[]) => around(query, () => (target[method] as Call)(query, ...rest));
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The store, with its first read of the gaps (a leader deciding where to start) held until `release()`; `reached` resolves when it begins. */
export function holdingGapsRead(store: AuditStore): { store: AuditStore; reached: Promise<void>; release: () => void } {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  const wrapped = interceptStore(store, 'rows', async (query, proceed) => {
    if (!held && query.includes('history_lost = 1')) {
      held = true;
      reach();
      await released;
    }
    return proceed();
  });
  return { store: wrapped, reached, release };
}
