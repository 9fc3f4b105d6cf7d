// The audit store for one CLI command: opened (and migrated, when the command writes or reads tables a migration
// adds), handed to the command, closed whatever happens.
import { AuditStore } from '../core/clickhouse.js';
import type { Config } from '../core/config.js';
import { migrate } from '../core/migrations.js';

export async function withStore<T>(config: Config, fn: (store: AuditStore) => Promise<T>, options: { migrate?: boolean } = {}): Promise<T> {
  const store = new AuditStore(config.clickhouse);
  try {
    if (options.migrate) await migrate(store);
    return await fn(store);
  } finally {
    await store.close();
  }
}
