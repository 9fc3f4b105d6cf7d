// What integration tests share: the config of the services scripts/test.sh
// started, and per-test isolation (own ClickHouse data dir, own key prefixes).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { AuditStore } from '../../core/clickhouse.js';
import { loadConfig, type Config } from '../../core/config.js';
import { migrate } from '../../core/migrations.js';

export function testConfig(overrides: NodeJS.ProcessEnv = {}): Config {
  return loadConfig({ env: { ...process.env, ...overrides } });
}

/** A short random id for key prefixes, bucket and queue names. */
export function uniqueId(prefix = 't'): string {
  return `${prefix}${randomBytes(5).toString('hex')}`;
}

export function tempDir(prefix = 'lockaudit-test-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * An embedded ClickHouse of this test file's own (chdb binds one data dir per
 * process), migrated. Close it in `after`.
 */
export async function tempStore(): Promise<{ store: AuditStore; close: () => Promise<void> }> {
  const tmp = tempDir('lockaudit-ch-');
  const store = new AuditStore({ mode: 'embedded', path: tmp.dir, database: 'lockaudit' });
  await migrate(store);
  return {
    store,
    close: async () => {
      await store.close();
      tmp.remove();
    },
  };
}
